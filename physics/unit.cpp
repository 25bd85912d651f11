// The run's units and the services the registry hands them (physics/unit.hpp).
#include "physics/unit.hpp"

#include <algorithm>

#include "base/error.hpp"

namespace tessera::physics {

Unit* Units::find(const std::string& name) const {
  for (const auto& u : units_)
    if (u->name() == name) return u.get();
  return nullptr;
}

Unit* Units::provider(const std::string& service) const {
  for (std::size_t n = 0; n < units_.size(); ++n)
    if (std::find(provides_[n].begin(), provides_[n].end(), service) != provides_[n].end())
      return units_[n].get();
  return nullptr;
}

const std::vector<std::string>& Units::provides(const Unit& u) const {
  static const std::vector<std::string> none;
  for (std::size_t n = 0; n < units_.size(); ++n)
    if (units_[n].get() == &u) return provides_[n];
  return none;
}

Unit* Services::provider_of(const std::string& service) const {
  const bool declared = std::any_of(needs_.begin(), needs_.end(),
                                    [&](const Need& n) { return n.service == service; });
  if (!declared)
    throw Error(unit_ + " asks for the service '" + service +
                "', which its registration does not name in Requirements::needs");
  return units_->provider(service);
}

void Services::not_of_type(const std::string& service, const Unit& u) const {
  throw Error(unit_ + ": the service '" + service + "' is provided by '" + u.name() +
              "', which is not of the type " + unit_ + " asks for");
}

}  // namespace tessera::physics

#pragma once
// How a unit registers itself (its name, factory, parameters and requirements), so that the
// driver builds a run's units from driver.operators by reading registrations instead of an
// if/else chain that names each unit (driver/units.cpp holds the list of registrations;
// `tessera units` prints it). Each unit defines its registration next to its code
// (`Hydro::registration()` in hydro.cpp).
//
// The rules the driver applies, in this order, with their one-line errors:
//   an empty driver.operators; a name listed twice; an unknown name (the known operators
//   listed); `alone` with any other operator; `excludes` an operator that is listed;
//   `after` an operator that is not listed before it.
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::physics {

/// Where a unit stands in a run.
enum class UnitRole {
  operator_unit,  ///< named in driver.operators, advanced each step in that order
  particles,      ///< appended after every operator when enabled(p) (the tracers)
  service         ///< called by the operators (composition, eos); added, after the
                  ///< operators, when any operator needs_services
};

/// What a unit needs of the others; the driver checks it before it builds the units.
struct Requirements {
  std::vector<std::string> after{};     ///< operators that must come before it
  std::vector<std::string> excludes{};  ///< operators it cannot run with
  bool alone = false;                   ///< the only operator of its run (pic)
  bool needs_services = true;           ///< it calls composition and the EOS
};

namespace detail {
template <class M>
struct member_of;
template <class R, class C>
struct member_of<R C::*> {
  using type = C;
};
/// Whether member pointer `m` names a member declared in T itself (T overrides the hook).
template <class T, class M>
constexpr bool declared_in(M) {
  return std::is_same_v<typename member_of<M>::type, T>;
}
}  // namespace detail

/// The hooks of physics::Unit that T overrides itself, read from T's declarations (a hook
/// T does not override names the base class's member). The per-layout templates
/// (`derived`, `total_densities`) are told by `derived_names()` and `derives`, and by
/// `total_names()` instead (`tessera units` adds the lists).
template <class T>
std::vector<std::string> own_hooks() {
  using detail::declared_in;
  std::vector<std::string> h;
  auto add = [&](bool own, const char* name) {
    if (own) h.emplace_back(name);
  };
  add(declared_in<T>(&T::bind), "bind");
  add(declared_in<T>(&T::initialise), "initialise");
  add(declared_in<T>(&T::restore_check), "restore_check");
  add(declared_in<T>(&T::after_restart), "after_restart");
  add(declared_in<T>(&T::checkpoint_scalars), "checkpoint_scalars");
  add(declared_in<T>(&T::restore_scalars), "restore_scalars");
  add(declared_in<T>(&T::output_strings), "output_strings");
  add(declared_in<T>(&T::max_dt), "max_dt");
  add(declared_in<T>(&T::advance), "advance");
  add(declared_in<T>(&T::refresh), "refresh");
  add(declared_in<T>(&T::reads), "reads");
  add(declared_in<T>(&T::refresh_writes), "refresh_writes");
  add(declared_in<T>(&T::recomputes), "recomputes");
  add(declared_in<T>(&T::derives), "derives");
  add(declared_in<T>(&T::before_regrid), "before_regrid");
  add(declared_in<T>(&T::after_regrid), "after_regrid");
  add(declared_in<T>(&T::check), "check");
  add(declared_in<T>(&T::tag_refinement), "tag_refinement");
  add(declared_in<T>(&T::memory_needs), "memory_needs");
  add(declared_in<T>(&T::summary), "summary");
  add(declared_in<T>(&T::history_names), "history_names");
  add(declared_in<T>(&T::history_values), "history_values");
  add(declared_in<T>(&T::particle_set), "particle_set");
  return h;
}

/// One unit's registration.
struct Registration {
  std::string name;  ///< the name in driver.operators and summary.json "units"
  UnitRole role = UnitRole::operator_unit;
  std::string doc;  ///< one line: what the unit is ("a prescribed velocity field")
  Requirements requires_;
  /// Declares the unit's parameters (null: none).
  std::function<void(base::Params&)> declare_params;
  /// Makes the unit from the run's parameters (nothing large allocated).
  std::function<std::unique_ptr<Unit>(const base::Params&)> make;
  /// For UnitRole::particles: whether the run has it (null: always).
  std::function<bool(const base::Params&)> enabled;
  /// The hooks the unit implements (own_hooks<T>()), for `tessera units` and DESIGN.md.
  std::vector<std::string> hooks;
};

/// The registration of unit T (a constructor from base::Params, a static declare_params):
/// its factory, parameters and the hooks it overrides filled in.
template <class T>
Registration registration_of(std::string name, UnitRole role, std::string doc,
                             Requirements req = {}) {
  Registration r;
  r.name = std::move(name);
  r.role = role;
  r.doc = std::move(doc);
  r.requires_ = std::move(req);
  r.declare_params = &T::declare_params;
  r.make = [](const base::Params& p) { return std::make_unique<T>(p); };
  r.hooks = own_hooks<T>();
  return r;
}

}  // namespace tessera::physics

#include "physics/composition/composition.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>
#include <utility>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/text.hpp"

namespace tessera::composition {

void Composition::declare_params(base::Params& p) {
  p.declare_string_list("composition.species", {},
                        "species carried as mass fractions (FLASH names: c12 o16 ne22 ...)");
  p.declare_string_list("composition.initial", {},
                        "initial mass fractions, one per species, for zones the problem "
                        "leaves without (default: equal shares)");
  p.declare_string_list("composition.scalars", {},
                        "passive mass scalars advected with the density (not normalised)");
}

Composition::Composition(const base::Params& p) {
  for (const auto& name : p.get_string_list("composition.species")) {
    const auto n = find_nuclide(name);
    if (!n) {
      // Nearest by element letters, then digits, then the whole name ("o61" -> "o16").
      auto letters = [](const std::string& x) {
        std::string l;
        for (char c : x)
          if (std::isalpha(static_cast<unsigned char>(c))) l += c;
        return l;
      };
      auto digits = [](const std::string& x) {  // sorted: swapped digits still match
        std::string l;
        for (char c : x)
          if (std::isdigit(static_cast<unsigned char>(c))) l += c;
        std::sort(l.begin(), l.end());
        return l;
      };
      std::string best;
      std::tuple<std::size_t, std::size_t, std::size_t> d{1000, 1000, 1000};
      const std::string n0 = to_lower(name);
      for (const auto& k : nuclides()) {
        const std::tuple<std::size_t, std::size_t, std::size_t> e{
            edit_distance(letters(n0), letters(k.name)), edit_distance(digits(n0), digits(k.name)),
            edit_distance(n0, k.name)};
        if (e < d) d = e, best = k.name;
      }
      throw Error("composition.species: unknown species '" + name + "' (did you mean '" + best +
                  "'?)");
    }
    for (const auto& s : species_)
      if (name == s.name) throw Error("composition.species: '" + name + "' is listed twice");
    species_.push_back(*n);
    inv_a_.push_back(1.0 / n->a);
    z_over_a_.push_back(n->z / n->a);
  }
  const auto& x0 = p.get_string_list("composition.initial");
  if (!x0.empty() && x0.size() != species_.size())
    throw Error("composition.initial lists " + std::to_string(x0.size()) + " mass fractions for " +
                std::to_string(species_.size()) + " species");
  for (std::size_t s = 0; s < species_.size(); ++s) {
    double x = 1.0 / double(species_.size());
    if (!x0.empty()) {
      try {
        std::size_t used = 0;
        x = std::stod(x0[s], &used);
        if (used != x0[s].size()) throw std::invalid_argument("trailing characters");
      } catch (const std::exception&) {
        throw Error("composition.initial: '" + x0[s] + "' is not a number");
      }
      if (!(x >= 0.0 && x <= 1.0))
        throw Error("composition.initial: " + x0[s] + " is not a mass fraction in [0, 1]");
    }
    initial_.push_back(x);
  }
  for (const auto& name : p.get_string_list("composition.scalars")) {
    if (name.empty() || name.size() > 4)
      throw Error("composition.scalars: '" + name + "' must have 1 to 4 characters");
    scalars_.push_back(name);
  }
}

physics::Declarations Composition::declarations() const {
  physics::Declarations d;
  for (const auto& s : species_)  // check(): each in [0, 1]
    d.variables.push_back(mesh::VarInfo{s.name, -1, mesh::VarKind::mass_scalar, true, true, name()}
                              .checked_by_owner());
  for (const auto& s : scalars_)
    d.variables.push_back({s, -1, mesh::VarKind::mass_scalar, true, true, name()});
  if (!species_.empty())
    d.derived = isumy_ >= 0 ? std::vector<std::string>{"abar", "zbar"}
                            : std::vector<std::string>{"abar", "zbar", "ye"};
  return d;
}

void Composition::bind(mesh::Mesh& m, const physics::Services& /*services*/,
                       const physics::RunContext& /*ctx*/) {
  idx_.clear();
  for (const auto& s : species_) idx_.push_back(m.var_index(s.name));
  idens_ = m.var_index("dens");
  if (!species_.empty() && idens_ < 0) throw Error("composition: no unit declares 'dens'");
}

double Composition::normalise(mesh::Mesh& m) {
  if (species_.empty()) return 0.0;
  double worst = 0.0;
  const auto& s = m.shape();
  const std::size_t ns = species_.size();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      double sum = 0.0;
      for (std::size_t q = 0; q < ns; ++q) sum += u(idx_[q], i, j, k);
      worst = std::max(worst, std::fabs(sum - 1.0));
      const double r = 1.0 / sum;
      for (std::size_t q = 0; q < ns; ++q) u(idx_[q], i, j, k) *= r;
    });
  });
  largest_ = std::max(largest_, worst);
  return worst;
}

void Composition::initialise(mesh::Mesh& m) {
  const auto& s = m.shape();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      double sum = 0.0;
      for (std::size_t q = 0; q < species_.size(); ++q) sum += u(idx_[q], i, j, k);
      if (sum == 0.0)
        for (std::size_t q = 0; q < species_.size(); ++q) u(idx_[q], i, j, k) = initial_[q];
      if (isumy_ >= 0 && u(isumy_, i, j, k) == 0.0) {
        double ya = 0.0, yz = 0.0, tot = 0.0;
        for (std::size_t q = 0; q < species_.size(); ++q) tot += u(idx_[q], i, j, k);
        for (std::size_t q = 0; q < species_.size(); ++q) {
          ya += u(idx_[q], i, j, k) / tot * inv_a_[q];
          yz += u(idx_[q], i, j, k) / tot * z_over_a_[q];
        }
        u(isumy_, i, j, k) = ya;
        u(iye_, i, j, k) = yz;
      }
    });
  });
  normalise(m);
}

physics::BadZone Composition::check(mesh::Mesh& m) const {
  physics::BadZone bad;
  if (species_.empty()) return bad;
  const auto& s = m.shape();
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
    if (bad.node >= 0) return;
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      if (bad.node >= 0) return;
      for (std::size_t q = 0; q < species_.size(); ++q) {
        const double x = u(idx_[q], i, j, k);
        if (!(x >= -1e-10 && x <= 1.0 + 1e-10)) {
          bad = {id,         i - s.g(0), j - s.g(1),
                 k - s.g(2), x,          "mass fraction " + std::string(species_[q].name),
                 false};
          return;
        }
      }
    });
  });
  return bad;
}

template <class View>
void Composition::derived_impl(const std::string& name, const View& u, const mesh::BlockShape& s,
                               double* out, bool with_guards) const {
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = with_guards ? 0 : s.g(a);
    hi[a] = with_guards ? s.n(a) : s.g(a) + s.ni(a);
  }
  const int which = name == "abar" ? 0 : (name == "zbar" ? 1 : 2);
  std::size_t c = 0;
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j)
      for (int i = lo[0]; i < hi[0]; ++i, ++c) {
        double abar, zbar;
        abar_zbar(u, i, j, k, abar, zbar, false);  // a snapshot or unk between operators
        out[c] = which == 0 ? abar : (which == 1 ? zbar : zbar / abar);
      }
}

nlohmann::json Composition::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  double largest = largest_;
  MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE, MPI_MAX, comm);
  nlohmann::json j;
  j["species"] = nlohmann::json::array();
  for (const auto& s : species_) j["species"].push_back({{"name", s.name}, {"A", s.a}, {"Z", s.z}});
  j["scalars"] = scalars_;
  j["largest_renormalisation"] = largest;
  return j;
}

physics::Registration Composition::registration() {
  return physics::registration_of<Composition>(
      "composition", physics::UnitRole::service,
      "mass fractions of the species: abar, zbar, ye per zone", {}, {"composition"});
}

}  // namespace tessera::composition

#include "driver/units.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "base/params.hpp"
#include "physics/burn/burn.hpp"
#include "physics/composition/composition.hpp"
#include "physics/diffusion/diffusion.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/flame/flame.hpp"
#include "physics/flow/flow.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/levelset/levelset.hpp"
#include "physics/m1/m1.hpp"
#include "physics/particles/tracers.hpp"
#include "physics/pic/pic_unit.hpp"
#include "physics/scalar/scalar.hpp"

namespace tessera::driver {

namespace {

std::vector<physics::Registration>& registrations() {
  // Operators in the order `known:` lists them, then the particles, then the services;
  // units a program adds (add_unit) after them.
  static std::vector<physics::Registration> r = {
      hydro::Hydro::registration(),       flow::Flow::registration(),
      gravity::Gravity::registration(),   flame::Flame::registration(),
      burn::Burn::registration(),         pic::Pic::registration(),
      scalar::Scalar::registration(),     diffusion::Diffusion::registration(),
      levelset::LevelSet::registration(), m1::M1::registration(),
      tracers::Tracers::registration(),   composition::Composition::registration(),
      eos::EosUnit::registration()};
  return r;
}

}  // namespace

const std::vector<physics::Registration>& registry() {
  return registrations();
}

void add_unit(physics::Registration r) {
  if (find_registration(r.name) != nullptr)
    throw Error("driver::add_unit: a unit named '" + r.name + "' is registered already");
  registrations().push_back(std::move(r));
}

const physics::Registration* find_registration(const std::string& name) {
  for (const auto& r : registry())
    if (r.name == name) return &r;
  return nullptr;
}

void declare_unit_params(base::Params& p) {
  std::string known;
  for (const auto& r : registry())
    if (r.role == physics::UnitRole::operator_unit)
      known += std::string(known.empty() ? "" : ", ") + r.name;
  p.declare_string_list(
      "driver.operators", {"hydro"},
      "physics operators applied each step, in this order (known: " + known +
          "; burn after flame; flow: a prescribed velocity field, no hydro; "
          "pic: particle-in-cell, alone, without EOS; particles.tracers adds 'particles' after "
          "them all)");
  for (const auto& r : registry())
    if (r.declare_params) r.declare_params(p);
}

void check_operators(const std::vector<std::string>& names) {
  if (names.empty()) throw Error("driver.operators is empty: name at least one operator (hydro)");
  auto listed = [&](const std::string& n, std::size_t upto) {
    return std::find(names.begin(), names.begin() + long(upto), n) != names.begin() + long(upto);
  };
  for (std::size_t n = 0; n < names.size(); ++n) {
    if (listed(names[n], n)) throw Error("driver.operators lists '" + names[n] + "' twice");
    const physics::Registration* r = find_registration(names[n]);
    if (r == nullptr || r->role != physics::UnitRole::operator_unit) {
      std::string known;
      for (const auto& k : registry())
        if (k.role == physics::UnitRole::operator_unit)
          known += std::string(known.empty() ? "" : ", ") + k.name;
      throw Error("driver.operators: unknown operator '" + names[n] + "' (known: " + known + ")");
    }
    const auto& q = r->requires_;
    if (q.alone && names.size() > 1)
      throw Error("driver.operators: '" + r->name + "' runs alone (driver.operators = [\"" +
                  r->name + "\"]); it does not couple to hydro or the other operators");
    for (const auto& x : q.excludes)
      if (listed(x, names.size()))
        throw Error("driver.operators: '" + r->name + "' (" + r->doc + ") and '" + x +
                    "' exclude each other");
    for (const auto& a : q.after)
      if (!listed(a, n))
        throw Error("driver.operators: '" + r->name + "' needs '" + a + "' before it");
  }
  // Services: a required one provided by an operator must be listed (a service unit is
  // added when needed); no service may have two providers in one run.
  auto providers = [&](const std::string& service) {
    std::vector<std::string> by;
    for (const auto& k : registry())
      if (std::find(k.provides.begin(), k.provides.end(), service) != k.provides.end() &&
          (k.role != physics::UnitRole::operator_unit || listed(k.name, names.size())))
        by.push_back(k.name);
    return by;
  };
  for (const auto& n : names)
    for (const auto& need : find_registration(n)->requires_.needs) {
      const auto by = providers(need.service);
      if (by.empty() && !need.optional)
        throw Error("driver.operators: '" + n + "' needs the service '" + need.service + "' (" +
                    need.why + "), which no unit of this run provides");
      if (by.size() > 1)
        throw Error("driver.operators: the service '" + need.service + "' has two providers, '" +
                    by[0] + "' and '" + by[1] + "'");
    }
}

namespace {

/// Which service units a run has: those some active unit needs (operators, particles, and
/// the services so added, until nothing changes), in registry order.
std::vector<const physics::Registration*> needed_services(
    const std::vector<const physics::Registration*>& active) {
  std::vector<const physics::Registration*> all = active, out;
  bool grew = true;
  while (grew) {
    grew = false;
    for (const auto& r : registry()) {
      if (r.role != physics::UnitRole::service ||
          std::find(out.begin(), out.end(), &r) != out.end())
        continue;
      const bool needed = std::any_of(all.begin(), all.end(), [&](const auto* a) {
        return std::any_of(
            a->requires_.needs.begin(), a->requires_.needs.end(), [&](const physics::Need& n) {
              return std::find(r.provides.begin(), r.provides.end(), n.service) != r.provides.end();
            });
      });
      if (needed) {
        out.push_back(&r);
        all.push_back(&r);
        grew = true;
      }
    }
  }
  std::vector<const physics::Registration*> ordered;
  for (const auto& r : registry())
    if (std::find(out.begin(), out.end(), &r) != out.end()) ordered.push_back(&r);
  return ordered;
}

/// The registrations of a run's units in unit order: operators, enabled particles, then the
/// services they need.
std::vector<const physics::Registration*> active_registrations(const base::Params& p) {
  const auto& names = p.get_string_list("driver.operators");
  check_operators(names);
  std::vector<const physics::Registration*> out;
  for (const auto& n : names) out.push_back(find_registration(n));
  for (const auto& r : registry())
    if (r.role == physics::UnitRole::particles && (!r.enabled || r.enabled(p))) out.push_back(&r);
  for (const auto* r : needed_services(out)) out.push_back(r);
  return out;
}

}  // namespace

std::vector<std::string> active_unit_names(const base::Params& p) {
  std::vector<std::string> out;
  for (const auto* r : active_registrations(p)) out.push_back(r->name);
  return out;
}

physics::Units make_units(const base::Params& p, std::vector<physics::Unit*>* operators) {
  // Particles move after the fluid (the mesh then holds t^{n+1}); services the units call
  // come last (a particle-in-cell run has no fluid: none).
  physics::Units units;
  for (const auto* r : active_registrations(p)) {
    units.add(r->make(p), r->provides);
    if (operators && r->role != physics::UnitRole::service)
      operators->push_back(units.all().back().get());
  }
  return units;
}

physics::Services services_for(const physics::Units& units, const physics::Unit& u) {
  const physics::Registration* r = find_registration(u.name());
  return {units, u.name(), r != nullptr ? r->requires_.needs : std::vector<physics::Need>{}};
}

std::vector<mesh::VarInfo> unk_variables(const physics::Units& units) {
  std::vector<mesh::VarInfo> vars;
  std::vector<std::string> recomputed;  // derived variables some active unit keeps current
  for (const auto& u : units.all()) {
    auto d = u->declarations();
    for (auto& v : d.variables) vars.push_back(std::move(v));
    for (auto& n : d.recomputes) recomputed.push_back(std::move(n));
  }
  // A derived variable nothing recomputes after a restart or a regrid (the gamma law's EOS
  // state with the prescribed flow alone) is kept as the independents are.
  for (auto& v : vars)
    if (v.role == mesh::VarRole::derived &&
        std::find(recomputed.begin(), recomputed.end(), v.name) == recomputed.end())
      v.role = mesh::VarRole::independent;
  std::stable_partition(vars.begin(), vars.end(),
                        [](const mesh::VarInfo& v) { return v.guard_fill; });
  return vars;
}

int unk_nguard(const physics::Units& units) {
  int ng = 1;
  for (const auto& u : units.all()) ng = std::max(ng, u->declarations().nguard);
  return ng;
}

int unk_nflux(const physics::Units& units, const std::vector<mesh::VarInfo>& vars) {
  // What the flux register sees: no scratch.
  const auto scalars = std::count_if(vars.begin(), vars.end(), [](const mesh::VarInfo& v) {
    return v.role != mesh::VarRole::scratch && v.kind == mesh::VarKind::mass_scalar;
  });
  int n = 0;
  for (const auto& u : units.all()) {
    const auto d = u->declarations();
    n = std::max(n, d.flux_vars + (d.flux_mass_scalars ? int(scalars) : 0));
  }
  return n;
}

memory::Declared declared(const base::Params& p, const physics::Units& units) {
  memory::Declared d;
  auto vars = unk_variables(units);
  // Scratch variables are mapped apart from unk (Mesh::scratch_vars): an arena of their own.
  const auto nscratch = std::count_if(vars.begin(), vars.end(), [](const mesh::VarInfo& v) {
    return v.role == mesh::VarRole::scratch;
  });
  std::erase_if(vars, [](const mesh::VarInfo& v) { return v.role == mesh::VarRole::scratch; });
  for (const auto& v : vars) d.unk_vars.push_back(v.name);
  for (const auto& u : units.all())
    for (const auto& n : u->declarations().derived) d.derived_vars.push_back(n);
  d.nguard = unk_nguard(units);
  d.nflux = unk_nflux(units, vars);
  mesh::BlockShape s;
  s.ndim = static_cast<int>(p.get_int("mesh.ndim"));
  s.nx = static_cast<int>(p.get_int("mesh.nxb"));
  s.ng = d.nguard;
  s.nvar = static_cast<int>(vars.size());
  const long maxblocks = p.get_int("mesh.maxblocks");
  if (nscratch > 0) {
    mesh::BlockShape ss = s;
    ss.nvar = static_cast<int>(nscratch);
    d.arenas.push_back({"scratch_vars", "scratch", 0.0, double(ss.doubles()) * sizeof(double),
                        std::to_string(nscratch) + " scratch variables x block with guards"});
  }
  for (const auto& u : units.all())
    for (const auto& a : u->memory_needs(vars, s, maxblocks))
      d.arenas.push_back({a.name, a.config, a.bytes, a.bytes_per_slot, a.formula, a.bytes_per_block,
                          a.phase, a.multi_rank, a.bytes_shared});
  return d;
}

memory::Declared declared(const base::Params& p) {
  return declared(p, make_units(p));
}

}  // namespace tessera::driver

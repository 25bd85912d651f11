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
#include "physics/pic/pic_unit.hpp"
#include "physics/scalar/scalar.hpp"
#include "physics/tracers/tracers.hpp"

namespace tessera::driver {

const std::vector<physics::Registration>& registry() {
  // Operators in the order `known:` lists them, then the particles, then the services.
  static const std::vector<physics::Registration> r = {
      hydro::Hydro::registration(),       flow::Flow::registration(),
      gravity::Gravity::registration(),   flame::Flame::registration(),
      burn::Burn::registration(),         pic::Pic::registration(),
      scalar::Scalar::registration(),     diffusion::Diffusion::registration(),
      levelset::LevelSet::registration(), m1::M1::registration(),
      tracers::Tracers::registration(),   composition::Composition::registration(),
      eos::EosUnit::registration()};
  return r;
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
}

std::vector<std::string> active_unit_names(const base::Params& p) {
  const auto& names = p.get_string_list("driver.operators");
  check_operators(names);
  std::vector<std::string> out(names.begin(), names.end());
  bool services = false;
  for (const auto& n : names) services |= find_registration(n)->requires_.needs_services;
  for (const auto role : {physics::UnitRole::particles, physics::UnitRole::service})
    for (const auto& r : registry())
      if (r.role == role &&
          (role == physics::UnitRole::particles ? !r.enabled || r.enabled(p) : services))
        out.push_back(r.name);
  return out;
}

physics::Units make_units(const base::Params& p, std::vector<physics::Unit*>* operators) {
  physics::Units units;
  const auto& names = p.get_string_list("driver.operators");
  check_operators(names);
  bool services = false;
  for (const auto& n : names) {
    const physics::Registration* r = find_registration(n);
    units.add(r->make(p));
    services |= r->requires_.needs_services;
    if (operators) operators->push_back(units.all().back().get());
  }
  // Particles move after the fluid (the mesh then holds t^{n+1}); services every operator
  // may call come last (a particle-in-cell run has no fluid: none).
  for (const auto role : {physics::UnitRole::particles, physics::UnitRole::service})
    for (const auto& r : registry()) {
      if (r.role != role) continue;
      if (role == physics::UnitRole::particles && r.enabled && !r.enabled(p)) continue;
      if (role == physics::UnitRole::service && !services) continue;
      units.add(r.make(p));
      if (operators && role == physics::UnitRole::particles)
        operators->push_back(units.all().back().get());
    }
  return units;
}

std::vector<mesh::VarInfo> unk_variables(const physics::Units& units) {
  std::vector<mesh::VarInfo> vars;
  std::vector<std::string> recomputed;  // derived variables some active unit keeps current
  for (const auto& u : units.all()) {
    for (auto& v : u->variables()) vars.push_back(v);
    for (auto& n : u->recomputes()) recomputed.push_back(n);
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
  for (const auto& u : units.all()) ng = std::max(ng, u->nguard());
  return ng;
}

int unk_nflux(const physics::Units& units, const std::vector<mesh::VarInfo>& vars) {
  std::vector<mesh::VarInfo> unk = vars;  // what the flux register sees: no scratch
  std::erase_if(unk, [](const mesh::VarInfo& v) { return v.role == mesh::VarRole::scratch; });
  int n = 0;
  for (const auto& u : units.all()) n = std::max(n, u->nflux(unk));
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
    for (const auto& n : u->derived_names()) d.derived_vars.push_back(n);
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

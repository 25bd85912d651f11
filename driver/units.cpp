#include "driver/units.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "base/params.hpp"
#include "physics/burn/burn.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/flame/flame.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/pic/pic_unit.hpp"
#include "physics/tracers/flow.hpp"
#include "physics/tracers/tracers.hpp"

namespace tessera::driver {

namespace {
const char* const kOperators[] = {"hydro", "flow", "gravity", "flame", "burn", "pic"};
}

void declare_unit_params(base::Params& p) {
  p.declare_string_list(
      "driver.operators", {"hydro"},
      "physics operators applied each step, in this order (known: hydro, flow, gravity, "
      "flame, burn, pic; burn after flame; flow: a prescribed velocity field, no hydro; "
      "pic: particle-in-cell, alone, without EOS; particles.tracers adds 'particles' after "
      "them all)");
  hydro::Hydro::declare_params(p);
  gravity::Gravity::declare_params(p);
  flame::Flame::declare_params(p);
  burn::Burn::declare_params(p);
  tracers::Tracers::declare_params(p);
  pic::Pic::declare_params(p);
  eos::EosUnit::declare_params(p);
  composition::Composition::declare_params(p);
}

physics::Units make_units(const base::Params& p, std::vector<physics::Unit*>* operators) {
  physics::Units units;
  const auto& names = p.get_string_list("driver.operators");
  if (names.empty()) throw Error("driver.operators is empty: name at least one operator (hydro)");
  for (std::size_t n = 0; n < names.size(); ++n) {
    if (std::find(names.begin(), names.begin() + long(n), names[n]) != names.begin() + long(n))
      throw Error("driver.operators lists '" + names[n] + "' twice");
    if (names[n] == "pic") {
      if (names.size() > 1)
        throw Error(
            "driver.operators: 'pic' runs alone (driver.operators = [\"pic\"]); it does not "
            "couple to hydro or the other operators");
      units.add(std::make_unique<pic::Pic>(p));
    } else if (names[n] == "hydro") {
      units.add(std::make_unique<hydro::Hydro>(p));
    } else if (names[n] == "flow") {
      if (std::find(names.begin(), names.end(), "hydro") != names.end())
        throw Error(
            "driver.operators: 'flow' (a prescribed velocity) and 'hydro' exclude each other");
      units.add(std::make_unique<tracers::Flow>());
    } else if (names[n] == "gravity") {
      if (n == 0) throw Error("driver.operators: 'gravity' needs 'hydro' before it");
      units.add(std::make_unique<gravity::Gravity>(p));
    } else if (names[n] == "flame") {
      units.add(std::make_unique<flame::Flame>(p));
    } else if (names[n] == "burn") {
      // It turns the flame's increment of this step into energy: the flame comes first.
      if (std::find(names.begin(), names.begin() + long(n), "flame") == names.begin() + long(n))
        throw Error("driver.operators: 'burn' needs 'flame' before it");
      units.add(std::make_unique<burn::Burn>(p));
    } else {
      std::string known;
      for (const char* k : kOperators) known += std::string(known.empty() ? "" : ", ") + k;
      throw Error("driver.operators: unknown operator '" + names[n] + "' (known: " + known + ")");
    }
    if (operators) operators->push_back(units.all().back().get());
  }
  // Tracers move after the fluid (the mesh then holds t^{n+1}).
  if (p.get_bool("particles.tracers")) {
    units.add(std::make_unique<tracers::Tracers>(p));
    if (operators) operators->push_back(units.all().back().get());
  }
  // Services every operator may call (a particle-in-cell run has no fluid: none).
  if (names.size() == 1 && names[0] == "pic") return units;
  units.add(std::make_unique<composition::Composition>(p));
  units.add(std::make_unique<eos::EosUnit>(p));
  return units;
}

std::vector<mesh::VarInfo> unk_variables(const physics::Units& units) {
  std::vector<mesh::VarInfo> vars;
  for (const auto& u : units.all())
    for (auto& v : u->variables()) vars.push_back(v);
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
  int n = 0;
  for (const auto& u : units.all()) n = std::max(n, u->nflux(vars));
  return n;
}

memory::Declared declared(const base::Params& p, const physics::Units& units) {
  memory::Declared d;
  const auto vars = unk_variables(units);
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
  for (const auto& u : units.all())
    for (const auto& a : u->memory_needs(vars, s, maxblocks))
      d.arenas.push_back({a.name, a.config, a.bytes, a.bytes_per_slot, a.formula});
  return d;
}

memory::Declared declared(const base::Params& p) {
  return declared(p, make_units(p));
}

}  // namespace tessera::driver

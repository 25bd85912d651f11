#pragma once
// Which physics units a run has and what they declare, in one place: the operators of
// driver.operators in that order, then the particles (if enabled), then the service units
// the others need (composition, eos), all from the units' registrations; and the services
// each unit is handed at bind.
// `unk` is the union of their variables; the planner reads the same declarations.
#include <string>
#include <vector>

#include "memory/planner.hpp"
#include "mesh/mesh.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::driver {

/// Every registered unit (physics/registry.hpp), in the order they are listed: the
/// operators, the particles, the services.
const std::vector<physics::Registration>& registry();
/// Registers a unit a program adds to Tessera's own (its `main`, before any run or
/// command: tessera_guide adds the example unit of docs/writing-a-unit.md). Throws
/// tessera::Error for a name registered already.
void add_unit(physics::Registration r);
/// The registration of unit `name`, or null.
const physics::Registration* find_registration(const std::string& name);
/// Throws the one-line tessera::Error of the first rule driver.operators `names` breaks
/// (registry.hpp lists the rules).
void check_operators(const std::vector<std::string>& names);

/// The names of the units a run of parameters p has (operators, particles if enabled,
/// services if an operator calls them), from the registrations alone (none is made).
/// Throws as make_units for a bad driver.operators.
std::vector<std::string> active_unit_names(const base::Params& p);

/// driver.operators and every unit's parameters.
void declare_unit_params(base::Params& p);

/// The active units, constructed from the parameters (nothing large allocated). Throws
/// tessera::Error naming an unknown or repeated operator. `operators` receives the
/// operator units in driver.operators order.
physics::Units make_units(const base::Params& p, std::vector<physics::Unit*>* operators = nullptr);

/// What bind hands unit `u` of `units`: the providers of the services its registration
/// needs (Requirements::needs).
physics::Services services_for(const physics::Units& units, const physics::Unit& u);

/// unk's variables: every unit's, in unit order, the guard-filled ones first (stable).
std::vector<mesh::VarInfo> unk_variables(const physics::Units& units);
/// The widest stencil of any unit.
int unk_nguard(const physics::Units& units);
/// The most flux variables any unit stores.
int unk_nflux(const physics::Units& units, const std::vector<mesh::VarInfo>& vars);

/// What the planner needs of the units of run p (units built from p).
memory::Declared declared(const base::Params& p);
memory::Declared declared(const base::Params& p, const physics::Units& units);

}  // namespace tessera::driver

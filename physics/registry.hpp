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
  std::vector<std::string> after;     ///< operators that must come before it
  std::vector<std::string> excludes;  ///< operators it cannot run with
  bool alone = false;                 ///< the only operator of its run (pic)
  bool needs_services = true;         ///< it calls composition and the EOS
};

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
  /// The hooks the unit implements, for `tessera units` and docs/DESIGN.md.
  std::vector<std::string> hooks;
};

}  // namespace tessera::physics

#pragma once
// A prescribed flow ("flow" in driver.operators): hydro's conserved variables, set by the
// problem and never evolved. Tracer integrator tests need a velocity field known exactly
// at every time (solid-body rotation, problems/tracers_rotation_2d.toml), which a fluid
// solution is not. It has no step of its own and no time-step limit.
#include <string>
#include <vector>

#include "physics/hydro/hydro.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::tracers {

class Flow final : public physics::Unit {
 public:
  std::string name() const override { return "flow"; }
  std::vector<mesh::VarInfo> variables() const override {
    return hydro::Hydro::conserved_variables(name());
  }
  /// The unit's registration (physics/registry.hpp).
  static physics::Registration registration() {
    physics::Registration r;
    r.name = "flow";
    r.doc = "a prescribed velocity";
    r.requires_.excludes = {"hydro"};
    r.make = [](const base::Params&) { return std::make_unique<Flow>(); };
    r.hooks = physics::own_hooks<Flow>();
    return r;
  }
};

}  // namespace tessera::tracers

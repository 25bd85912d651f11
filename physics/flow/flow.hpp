#pragma once
// A prescribed flow ("flow" in driver.operators): hydro's conserved variables, never
// evolved by a fluid solver. Tracer integrator tests and the level set's advection tests
// need a velocity field known exactly at every time, which a fluid solution is not. It has
// no time-step limit of its own.
//
// flow.field chooses the velocity:
//   problem          (default) the problem's cell values, unchanged (solid-body rotation:
//                    problems/tracers_rotation_2d.toml)
//   uniform          v = (flow.velx, flow.vely, flow.velz)
//   deforming_bubble Flash-X's DeformingBubble: u = sin^2(pi x) sin(2 pi y),
//                    v = -sin^2(pi y) sin(2 pi x), w = 0 (steady; 2-D and 3-D)
//   single_vortex    LeVeque's: u = -sin^2(pi x) sin(2 pi y) cos(pi t / T),
//                    v = sin^2(pi y) sin(2 pi x) cos(pi t / T), T = flow.period
//   enright          the 3-D deformation (Enright et al. 2002): u = 2 sin^2(pi x)
//                    sin(2 pi y) sin(2 pi z) c, v = -sin(2 pi x) sin^2(pi y) sin(2 pi z) c,
//                    w = -sin(2 pi x) sin(2 pi y) sin^2(pi z) c, c = cos(pi t / T)
// (verification.md §F). With an analytic field the unit writes the field's momenta at the
// zone centres into unk at t = 0 and after each step (at its clock), keeping the internal
// energy, so that plots, tracers and hydro-velocity readers see the field; units that want
// the field itself (the level set, at its Runge-Kutta stage times) call block_velocity(g, s, t, v).
#include <array>
#include <string>
#include <vector>

#include "physics/hydro/hydro.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::flow {

enum class Field { problem, uniform, deforming_bubble, single_vortex, enright };

class Flow final : public physics::Unit {
 public:
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp).
  static physics::Registration registration();
  explicit Flow(const base::Params& p);

  std::string name() const override { return "flow"; }
  /// Hydro's conserved variables, owned by the flow.
  physics::Declarations declarations() const override {
    return {.variables = hydro::Hydro::conserved_variables(name())};
  }
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  void initialise(mesh::Mesh& m) override;
  void advance(mesh::Mesh& m, double dt) override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;

  Field field() const { return field_; }
  const std::string& field_name() const { return field_name_; }
  /// Whether block_velocity is defined (every field but `problem`).
  bool analytic() const { return field_ != Field::problem; }
  /// The field's velocity at time t at every interior zone centre of a block of geometry g and
  /// shape s, into v[a * n + z] for axis a and zone z (x fastest, n = s.interior_cells()); each
  /// field is a product of one-dimensional factors, evaluated once per row and column.
  void block_velocity(const mesh::BlockGeom& g, const mesh::BlockShape& s, double t,
                      std::vector<double>& v) const;

 private:
  Field field_ = Field::problem;
  std::string field_name_;
  std::array<double, 3> uniform_{};
  double period_ = 2.0;
  double time_ = 0.0;
  int ndim_ = 3;
  /// The field's momenta at time t into every local leaf (the internal energy kept).
  void write_momenta(mesh::Mesh& m, double t) const;
};

}  // namespace tessera::flow

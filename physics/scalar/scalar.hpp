#pragma once
// The example unit of docs/writing-a-unit.md: a passive scalar `scal` that diffuses with a
// constant diffusivity D, explicit (forward Euler in time, the five/seven-point Laplacian
// in space: second order in space, first in time, stable for D dt sum_a 1/dx_a^2 <= 1/2).
// It shows each piece a unit has: a registration (name, factory, parameters,
// requirements), variables with roles (`scal` independent, linear prolongation, filled by
// the unit's own guard fill of its one variable; `slap`, the Laplacian of the step,
// scratch), max_dt, advance, its own refinement criterion (tag_refinement: refine where
// scal exceeds scalar.refine_above, derefine where it is below scalar.derefine_below), a
// Dirichlet condition from a function (the exact solution at the unit's clock) on the
// faces scalar.boundary names, a restart that resumes its clock (the run's context at
// bind), a check and a summary (the L1 error against the exact solution, leaf-ordered),
// and a value kept outside unk across a restart (file_records: the initial integral).
//
// The initial scalar is a Gaussian of amplitude A and width s0 at (x0, y0, z0); its exact
// solution in ndim dimensions (Crank 1975, The Mathematics of Diffusion, eq. 3.5 for the
// point source in free space) is
//   u(r, t) = A (s0^2 / (s0^2 + 2 D t))^(ndim / 2) exp(-|r - r0|^2 / (2 (s0^2 + 2 D t))).
// Limits: Cartesian geometry only; no flux correction at coarse-fine faces (the example
// does not conserve the scalar to round-off on an AMR mesh; a production unit stores its
// fluxes in the flux register as hydro does).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::scalar {

class Scalar final : public physics::Unit {
 public:
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Scalar(const base::Params& p);

  std::string name() const override { return "scalar"; }
  /// scal (checked) and its scratch slap; one guard zone.
  physics::Declarations declarations() const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  void initialise(mesh::Mesh& m) override;
  double max_dt(mesh::Mesh& m) const override;
  void advance(mesh::Mesh& m, double dt) override;
  bool tag_refinement(mesh::Mesh& m, std::vector<mesh::Flag>& votes) const override;
  physics::BadZone check(mesh::Mesh& m) const override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;
  /// "integral_start": the integral of scal on the initial mesh, which a restart must give
  /// back (the summary's "integral_start" is the first run's, not the restart's).
  physics::FileRecords file_records() const override;
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;

  /// The exact solution at position x and time t.
  double exact(const std::array<double, 3>& x, double t) const;

 private:
  double diffusivity_, cfl_, amplitude_, sigma0_;
  std::array<double, 3> centre_{};
  double refine_above_, derefine_below_;
  std::vector<std::string> dirichlet_faces_;  ///< "xl", "xr", ...: exact solution there
  int iscal_ = -1, ilap_ = -1;                ///< scal in unk, slap among the scratch
  double time_ = 0.0;                         ///< the unit's clock (the exact solution's t)
  int steps_ = 0;
  bool restarted_ = false;       ///< the run continues a checkpoint (RunContext)
  double integral_start_ = 0.0;  ///< kept across a restart (file_records)
  mesh::Mesh* mesh_ = nullptr;
  /// L1 error, integral of scal, volume: leaf-ordered sums (collective).
  std::array<double, 3> sums() const;
};

}  // namespace tessera::scalar

#pragma once
// The level-set unit ("levelset" in driver.operators): a signed distance phi (positive
// inside the interface, zero on it) advected by a velocity field and kept a distance by
// redistancing (verification.md §F).
//
//   advection     phi_t + u . grad phi = 0, Hamilton-Jacobi WENO5 (Jiang & Peng 2000: the
//                 upwind one-sided derivative of each axis from the five divided
//                 differences, weights of Jiang & Shu) and SSP-RK3 (Shu & Osher) with
//                 dt = levelset.cfl / max(sum_a |u_a| / dx_a). The velocity is the flow
//                 unit's analytic field at each stage's time when flow.field names one,
//                 otherwise unk's momenta over density (hydro's or the problem's) at the
//                 step's start.
//   redistancing  every levelset.redistance_every steps, levelset.redistance_iterations
//                 pseudo-steps of phi_tau = S(phi0) (1 - |grad phi|) (Sussman, Smereka &
//                 Osher 1994) with the Godunov Hamiltonian of the WENO5 derivatives and
//                 S(phi0) = phi0 / sqrt(phi0^2 + |grad phi0|^2 h^2) (0 where phi0 = 0); in
//                 the zones next to the interface (a sign change of phi0 to an axis
//                 neighbour) Russo & Smereka's (2000) sub-cell fix instead,
//                 phi_tau = -(sgn(phi0) |phi| - D) / h with D = phi0 / |grad phi0|, which
//                 keeps the zero contour where it was. |grad phi0| per axis by ENO2 (Min &
//                 Gibou 2007, Min 2010): toward the crossing on an axis that has one (the
//                 nearer where both neighbours are across), central on the others; the
//                 second-order one-sided difference from beyond the neighbour where a kink
//                 (a filament's ridge) lies between the zone and it, the central difference
//                 where phi0 is smooth. (The central difference everywhere straddled the
//                 ridge of a filament 2-4 zones wide, overestimated D there by up to 2x and
//                 pushed the contour outward at every redistancing: issue 48, item 7; a
//                 filament under 2 zones wide is not held.) SSP-RK2 in pseudo-time,
//                 dtau = levelset.redistance_cfl / sum_a (1 / dx_a) per block.
//   refinement    the unit's own tagging: refine a block where |phi| < levelset.band dx
//                 somewhere, derefine one where |phi| > 3 levelset.band dx everywhere.
//   diagnostics   with the smoothed Heaviside H of width eps = levelset.smoothing dx:
//                 area (volume in 3-D) A = int H(phi), interface length (area)
//                 int delta(phi) |grad phi|, the shape error (1 / L0) int |H(phi) - H(phi0)|
//                 against the initial shape phi0 (L0 its length: 2 pi R, 4 pi R^2 in 3-D;
//                 a ring's two sides), the largest distance of the zero contour from the
//                 initial one (zones next to the interface: |D - phi0| / dx, D the
//                 redistancing's estimate from phi), and | |grad phi| - 1 | in the band
//                 |phi| < levelset.band dx (largest and mean).
//
// Variables: phi (independent, unlimited linear prolongation, guard-filled by the unit's
// own fill of phi alone); scratch ls_base (phi at the step's or pseudo-step's start),
// ls_rhs (a stage's right side), ls_sgn (S(phi0)) and ls_dist (D, or a huge value away from
// the interface). Timer regions levelset/advect and levelset/redistance.
//
// The initial interface is a circle (2-D) or sphere (3-D) of radius levelset.radius about
// (levelset.x0, y0, z0): phi0 = R - |x - c| (Flash-X's DeformingBubble: R = 0.1 about
// (0.75, 0.75); the single vortex: R = 0.15 about (0.5, 0.75)), multiplied by
// 1 + levelset.distortion sin(2 pi x) sin(2 pi y) for the redistancing test (the zero
// contour stays the circle). With levelset.width w > 0 a ring (spherical shell) of width w
// about that circle instead, phi0 = w / 2 - |R - |x - c||: a closed filament for the
// thin-filament redistancing test. Cartesian geometry, 2-D and 3-D.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::flow {
class Flow;
}

namespace tessera::levelset {

class LevelSet final : public physics::Unit {
 public:
  static void declare_params(base::Params& p);
  static physics::Registration registration();
  explicit LevelSet(const base::Params& p);

  std::string name() const override { return "levelset"; }
  /// phi (checked) and its scratch; three guard zones (WENO5); the history columns
  /// levelset_area and levelset_length.
  physics::Declarations declarations() const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  void initialise(mesh::Mesh& m) override;
  double max_dt(mesh::Mesh& m) const override;
  void advance(mesh::Mesh& m, double dt) override;
  bool tag_refinement(mesh::Mesh& m, std::vector<mesh::Flag>& votes) const override;
  physics::BadZone check(mesh::Mesh& m) const override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;
  /// area_start, length_start and redistance_steps: a restart gives them back.
  physics::FileRecords file_records() const override;
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;

  /// `iterations` pseudo-steps of redistancing of every leaf (collective).
  void redistance(mesh::Mesh& m, int iterations);
  /// The initial signed distance at x (undistorted).
  double initial_distance(const std::array<double, 3>& x) const;

  /// The diagnostics of the header, leaf-ordered (collective; fills phi's guards); with
  /// full = false only the area and the length (history.csv's columns, every step).
  struct Measures {
    double area = 0, length = 0, shape_error = 0;
    double offset_max = 0;                           ///< zero contour vs the initial one, in zones
    double grad_error_max = 0, grad_error_mean = 0;  ///< | |grad phi| - 1 | in the band
    double band_zones = 0;                           ///< zones in the band (leaf sum)
  };
  Measures measure(mesh::Mesh& m, bool full = true) const;

 private:
  double cfl_, redistance_cfl_, band_, smoothing_, radius_, width_, distortion_;
  std::array<double, 3> centre_{};
  int redistance_every_, redistance_iterations_;
  int iphi_ = -1, ibase_ = -1, irhs_ = -1, isgn_ = -1, idist_ = -1;
  int idens_ = -1, imom_[3] = {-1, -1, -1};
  const flow::Flow* flow_ = nullptr;  ///< the analytic field, or null: unk's velocity
  double time_ = 0.0;
  int steps_ = 0;
  long redistance_steps_ = 0;
  bool restarted_ = false;
  double area_start_ = 0.0, length_start_ = 0.0;
  mesh::Mesh* mesh_ = nullptr;

  /// ls_base = phi on every local leaf's interior.
  void save_base(mesh::Mesh& m);
  double pseudo_dt(const mesh::BlockGeom& g) const;
  /// The velocity at the interior zone centres of a block at time t into v[a * n + z] (the
  /// flow's field, or unk's momenta over density).
  template <class View>
  void block_velocity(const View& u, const mesh::BlockGeom& g, double t,
                      std::vector<double>& v) const;
};

}  // namespace tessera::levelset

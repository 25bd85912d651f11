#pragma once
// Implicit (flux-limited) diffusion of one or more species (issue 21; verification.md §E):
//   dE_s/dt = div(D_s grad E_s)
// for each species s (radiation energy densities, groups, or any diffusing field), each
// an independent variable of unk with its own constant coefficient D_s (constant-D mode,
// diffusion.coefficient) or its own extinction coefficient chi_s (diffusion.opacity:
// D_s = c / (3 chi_s)). With a flux limiter the face coefficient is 3 lambda(R) D_s, R =
// |grad E| / (chi E) on the face (normal gradient, E the face average), lagged at t^n:
// none (lambda = 1/3), Levermore-Pomraning, Larsen (square root), Minerbo.
//
// Time: the theta method (theta = 1 backward Euler, 1/2 Crank-Nicolson),
//   (I - theta dt L) E^{n+1} = (I + (1 - theta) dt L) E^n  (+ boundary terms),
// solved every step by the matrix-free Krylov layer (solvers/krylov.hpp: BiCGSTAB or CG,
// Jacobi) on all species at once (a block-diagonal system, V2D's layout). L is the
// conservative finite-volume operator: face fluxes G = -D (E_R - E_L)/dx with D the
// harmonic mean of the two cells' coefficients; at a face between a fine and a coarse
// block the coarse cell takes the area average of the fine fluxes (the mesh's flux
// register), so the integral of E changes only through the domain's faces. Guard zones of
// the operands come from the mesh's fills (linear prolongation at fine/coarse faces).
// Boundaries (non-periodic faces): zero flux; Dirichlet with a value; Dirichlet with the
// exact solution of the pulse problem (G = -D (g - E_1) / (dx/2)); Marshak's incident-flux
// condition c E_b / 4 + F / 2 = c E_inc / 4 (G = -D (E_inc - E_1) / (dx/2 + 2 D / c)). Geometry:
// Cartesian 1-3-D and cylindrical r-z (axis 0 = r: areas and volumes from the mesh).
//
// The Gaussian pulse (problem.name = "diffusion_pulse", problems/pulse.hpp): E = E_bg +
// A (t0 / (t0 + t))^{d/2} exp(-|x - x0|^2 / (4 D (t0 + t))) for constant D, d the
// dimension (3 in r-z: a pulse on the axis is a spherical one), the problem's exact
// solution (RunContext::exact). The unit sets E from it and reports the L1 error against
// it (summary.json "diffusion").
#include <array>
#include <string>
#include <vector>

#include "physics/registry.hpp"
#include "physics/unit.hpp"
#include "solvers/krylov.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::eos {
class EosUnit;
}

namespace tessera::diffusion {

enum class Limiter { none, levermore_pomraning, larsen, minerbo };
/// lambda(R) of a limiter (lambda -> 1/3 as R -> 0, lambda R -> 1 as R -> infinity).
double lambda(Limiter l, double R);
/// The limiter named by diffusion.limiter (one-line error otherwise).
Limiter limiter_named(const std::string& name);

class Diffusion final : public physics::Unit {
 public:
  static void declare_params(base::Params& p);
  static physics::Registration registration();
  explicit Diffusion(const base::Params& p);

  std::string name() const override { return "diffusion"; }
  /// The species (checked) and the solve's scratch; one guard zone; a flux per species;
  /// E_total per species as totals (the volume integrals the run conserves with zero-flux
  /// faces).
  physics::Declarations declarations() const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  void initialise(mesh::Mesh& m) override;
  double max_dt(mesh::Mesh& m) const override;
  void advance(mesh::Mesh& m, double dt) override;
  physics::BadZone check(mesh::Mesh& m) const override;
  /// Refine where a species exceeds diffusion.refine_above, derefine where every one stays
  /// below diffusion.derefine_below (a band that follows the pulse).
  bool tag_refinement(mesh::Mesh& m, std::vector<mesh::Flag>& votes) const override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;
  /// "integral_start_<species>" (the integrals on the initial mesh) and, coupled,
  /// "gas_energy_start", given back on restart.
  physics::FileRecords file_records() const override;
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;
  void total_densities(const mesh::BlockView<mesh::Layout::var_major>& u, int i, int j, int k,
                       double* out) const override;
  void total_densities(const mesh::BlockView<mesh::Layout::zone_major>& u, int i, int j, int k,
                       double* out) const override;

  /// The pulse's exact E of species s at position x (x, y, z; r, z in r-z) and time t.
  double exact(int s, const std::array<double, 3>& x, double t) const;

 private:
  std::vector<std::string> species_;
  std::vector<double> d0_;   ///< D_s (the coefficient, or c / (3 chi_s))
  std::vector<double> chi_;  ///< chi_s = c / (3 D_s)
  Limiter limiter_ = Limiter::none;
  int limiter_iterations_ = 1;  ///< solves per step with a limiter (Picard on lambda)
  double theta_ = 1.0, dt_factor_ = 1.0, speed_ = 0.0, initial_ = 0.0, boundary_value_ = 0.0;
  std::string boundary_;  ///< zero_flux, dirichlet, exact, marshak
  /// [axis][side]: the physical faces where diffusion.boundary's value holds (those of
  /// diffusion.boundary_faces; none with zero flux, which every other face has).
  std::array<std::array<bool, 2>, 3> valued_{};
  double refine_above_ = 1e300, derefine_below_ = -1e300;
  bool pulse_ = false;                                      ///< problem.name = "diffusion_pulse"
  const physics::ExactSolution* pulse_solution_ = nullptr;  ///< the problem's (bind)
  solvers::Options sopt_;
  solvers::Krylov krylov_;
  mesh::Mesh* mesh_ = nullptr;
  std::vector<int> ivar_;  ///< the species in unk
  solvers::Field x_, b_, d_, y_, e0_;
  /// Gas coupling (diffusion.absorption, diffusion.emission_fraction): the coupled species
  /// (empty: none), kappa_a and the fraction f_s of a T^4 each species emits toward, a.
  /// Per zone at T^n, with A_s = dt c kappa_s (acoef_, this step's), eta = 4 a T^3 /
  /// (rho c_v) and D = 1 + eta sum_r A_r f_r: sig_ holds A_s (1 + eta sum_{r != s} A_r f_r)
  /// / D, the operator's local term (A_s / D for one species: Fleck's factor), and eh_
  /// eta / D, the species' cross term -A_s f_s (eta / D) sum_{r != s} A_r E_r (only with
  /// several coupled species: they share the gas).
  std::vector<double> kappa_a_, frac_, acoef_;
  /// This step's sum_r A_r f_r and, per species s, sum_{r != s} A_r f_r (zone-independent:
  /// formed once a step in couple_before).
  double af_sum_ = 0.0;
  std::vector<double> af_other_;
  double arad_ = 0.0;
  std::vector<int> coupled_;
  bool sig_on_ = false;  ///< sig_ holds this step's coupling
  solvers::Field sig_, eh_;
  /// eta and D of one zone at T^n (the gas's state in unk).
  template <class View>
  std::pair<double, double> coupling_terms(const View& u, int i, int j, int k) const;
  int idens_ = -1, ieint_ = -1, itemp_ = -1, ietot_ = -1, ipres_ = -1;
  int imom_[3] = {-1, -1, -1};
  const eos::EosUnit* eos_ = nullptr;
  /// Before the solve: sig_ (and eh_) and the right-hand side's emission A_s f_s a T^4 / D.
  void couple_before(mesh::Mesh& m, double dt);
  /// After: the gas energy change -sum_s (A_s / D) (f_s a T^4 - E_s^{n+1}) into etot, then
  /// the EOS (eint, temp, pres).
  void couple_after(mesh::Mesh& m, double dt);
  std::array<solvers::Field, 3> face_;  ///< face coefficients per axis (low face of a zone)
  double time_ = 0.0;
  int steps_ = 0;
  bool restarted_ = false;  ///< the run continues a checkpoint (RunContext)
  std::vector<double> integral_start_;
  double gas_start_ = 0.0;  ///< the coupled gas's internal energy on the initial mesh
  int ndim_eff_ = 1;        ///< the pulse's dimension d (3 in r-z)

  /// Face coefficients of every local leaf from E in unk (guard-filled).
  void face_coefficients(mesh::Mesh& m);
  /// Y = X + w div G(X) over the leaves, G with the boundary values at time bt (or the
  /// homogeneous conditions when !with_values); X's guard zones are filled here.
  void apply(const solvers::Field& X, const solvers::Field& Y, double w, bool with_values,
             double bt);
  /// The distance over which a physical face's gradient is taken: dx/2 to the face
  /// (Dirichlet), plus 2 D / c with Marshak's condition (c E_b / 4 + F / 2 = c E_inc / 4
  /// solved for the face value E_b gives F = -D (E_1 - E_inc) / (dx/2 + 2 D / c)).
  double boundary_distance(double D, double dx) const {
    return boundary_ == "marshak" ? 0.5 * dx + 2.0 * D / speed_ : 0.5 * dx;
  }
  /// The Jacobi diagonal of I + w div G.
  void diagonal(double w);
  /// The homogeneous I + w div G as matrix rows (the hypre backend; same-level
  /// neighbours: solvers::composite_rows probes the rows next to coarse-fine faces).
  void rows(double w, const solvers::RowSink& sink) const;
  /// Per species the volume integral of E, then per species the L1 error against the
  /// pulse, then the coupled gas's internal energy (leaf-ordered; 2 ns + 1 values).
  std::vector<double> sums() const;
};

}  // namespace tessera::diffusion

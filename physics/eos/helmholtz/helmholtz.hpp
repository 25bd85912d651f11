#pragma once
// The Helmholtz equation of state (Timmes & Swesty 2000): electrons and positrons from the
// tabulated free energy (entered with rho Y_e, Y_e = zbar / abar), ions as an ideal gas,
// black-body radiation and Coulomb corrections; modes dens_temp, dens_ei and dens_pres.
//
// References
//   Timmes, F. X. & Swesty, F. D. 2000, ApJS 126, 501: the method, the table interpolation,
//     the Maxwell-relation checks; Timmes' public helmeos code (cococubed.com, CC-BY 4.0):
//     the relativistic sound speed and the thermodynamic derivatives.
//   Yakovlev, D. G. & Shalybkov, D. A. 1989, Astrophys. Space Phys. Rev. 7, 311, eqs. 82,
//     85-87 (Gamma >= 1) and 102-104 (Gamma < 1): the Coulomb corrections.
//   Cox, J. P. & Giuli, R. T. 1968, ch. 9: chi_T, chi_rho, Gamma_1, c_p.
//   Flash-X physics/Eos/EosMain/Helmholtz and AMReX-Astro Microphysics EOS/helmholtz:
//     the Newton iteration in T (relative tolerance, clamped steps) for dens_ei and
//     dens_pres, and the CODATA-2006 constants (constants.hpp).
//
// The Coulomb taper (a departure from Timmes' code, which drops the whole correction where
// it would make the pressure or the energy non-positive, so that e(T) and p(T) jump there
// and two temperatures can share one energy). Here, with r = -(Coulomb part) / (the other
// parts) for the pressure and for the energy separately, the total is Timmes' where
// r <= r0 = 0.6 and x0 (1 - h(r)) above, 1 - h = w^2 / (r - r0 + w), w = 1 - r0:
// continuous with its first derivative at r0, h rising and below 1, so the total stays
// positive, rises in T (the Coulomb energy of a strongly coupled plasma grows with T) and,
// for the pressure, in rho: in a non-degenerate plasma p = n kT (1 + Z) (1 - r), r ~ rho^1/3,
// whose dp/drho turns negative at r = 3/4 (Timmes' own values between 3/4 and 1 have a
// negative compressibility), while x0 (1 - h) keeps dp/drho > 0 for any r0 < 3/4. The
// taper is algebraic, so that p keeps a fraction ~w^2 / r of the uncorrected pressure.
// Where r > r0 the correction's fits are far outside their range (they cancel most of the
// ideal-gas pressure of a cold, non-degenerate, fully ionised plasma); there p and e are
// no longer derivatives of one free energy (the Maxwell residuals are not round-off), and
// the entropy correction is scaled by the energy's factor h / r. Everywhere r <= r0 the
// numbers are Timmes' to the bit (the table's grid, 4 points a decade in rho Y_e and T,
// C/O, He and Fe: 1022 of its states are tapered; tests/unit/test_helmholtz.cpp).
//
// Two kernels compute the same numbers. apply() is the vectorised one: the pencil is cut in
// chunks of kChunk zones held as local structure-of-arrays scratch; a chunk's table cells
// are located (and their lines prefetched) one chunk ahead, the gathers of the 2 x 2 cell
// nodes are 4 x 4 transposes on x86 (a loop elsewhere), what depends on density alone is
// computed once per zone, and the Hermite polynomials and the physics are branch-free
// loops over the chunk that the compiler vectorises. The iterating modes run the Newton
// iteration first, over the whole pencil a chunk of lanes at a time, a lane taking the next
// zone (and its density terms, computed kChunk zones at a time ahead) as soon as its own
// has converged or failed, and then evaluate the zones at their temperatures in chunks as
// dens_temp does. apply_scalar() is the reference: one
// zone at a time, straightforward code; the tests require both to agree to 1e-12.
//
// Failures. A zone fails (Result::failed = its index, the first one) if its density,
// temperature (in dens_temp) or composition is not positive and finite, if rho Y_e or T
// leaves the table (1e-12 <= rho Y_e <= 1e15, 1e3 <= T <= 1e13: no extrapolation), if no
// T in the table gives the energy or pressure asked for (a jump of e(T) or p(T) across it:
// no_solution), or if the iteration does not converge in max_newton iterations (the
// bracket makes that unreachable for a continuous e(T); kept as a guard). Its outputs are
// then unspecified. The inversion is Newton in T safeguarded by a bracket and bisection
// in log T (kernels.hpp, invert_step), the same steps in both kernels.
//
// Inputs and outputs per mode (Pencil, cgs): dens_temp reads dens, temp and writes eint,
// pres; dens_ei reads dens, eint, temp (the initial guess) and writes temp, pres;
// dens_pres reads dens, pres, temp (guess) and writes temp, eint. All modes write gamc,
// game and cs (if not null). Null abar / zbar mean the default composition given at
// construction (50/50 C/O by mass unless told otherwise).
#include <cstddef>
#include <memory>
#include <string>

#include "physics/eos/eos.hpp"
#include "physics/eos/helmholtz/helm_table.hpp"

namespace tessera::eos::helmholtz {

/// Why a zone failed.
enum class Failure { none, bad_input, outside_table, no_convergence, no_solution };

/// One zone's full thermodynamic state (cgs; per gram where specific). Inputs: dens, abar,
/// zbar, and temp (dens_temp, else the initial guess), eint (dens_ei) or pres (dens_pres).
struct FullState {
  double dens = 0.0;  ///< g / cm^3
  double temp = 0.0;  ///< K
  double abar = 0.0;  ///< mean mass number
  double zbar = 0.0;  ///< mean charge number
  double ye = 0.0;    ///< zbar / abar

  double pres = 0.0;              ///< erg / cm^3
  double eint = 0.0;              ///< erg / g
  double entr = 0.0;              ///< erg / (g K)
  double dpdd = 0.0, dpdt = 0.0;  ///< dp/drho at T, dp/dT at rho
  double dedd = 0.0, dedt = 0.0;  ///< de/drho at T, de/dT at rho
  double dsdd = 0.0, dsdt = 0.0;  ///< ds/drho at T, ds/dT at rho
  double cv = 0.0;                ///< de/dT at rho, erg / (g K)
  double cp = 0.0;                ///< erg / (g K)
  double chit = 0.0;              ///< d ln p / d ln T at rho
  double chid = 0.0;              ///< d ln p / d ln rho at T
  double gamc = 0.0;              ///< Gamma_1 = d ln p / d ln rho at s
  double gam2 = 0.0;              ///< Gamma_2 (Cox & Giuli 9.105)
  double gam3 = 0.0;              ///< Gamma_3 (Cox & Giuli 9.93)
  double nabad = 0.0;             ///< adiabatic gradient (Gamma_2 - 1) / Gamma_2
  double game = 0.0;              ///< 1 + p / (rho eint)
  double cs = 0.0;                ///< relativistic adiabatic sound speed, cm / s
  double eta = 0.0;  ///< electron degeneracy parameter (chemical potential / kT, no rest mass)
  double xne = 0.0;  ///< electrons + positrons per cm^3 (Timmes' xnefer)

  /// The parts: electron-positron gas, ions, radiation, Coulomb (after coulomb_mult).
  double pele = 0.0, eele = 0.0, sele = 0.0;
  double pion = 0.0, eion = 0.0, sion = 0.0;
  double prad = 0.0, erad = 0.0, srad = 0.0;
  double pcoul = 0.0, ecoul = 0.0, scoul = 0.0;
  double plasma_gamma = 0.0;  ///< ion coupling parameter Gamma

  /// Maxwell-relation residuals (zero for perfect consistency): T ds/dT / de/dT - 1,
  /// (rho^2 de/drho + T dp/dT) / p - 1, -rho^2 ds/drho / dp/dT - 1.
  double dse = 0.0, dpe = 0.0, dsp = 0.0;

  bool coulomb_tapered = false;  ///< the Coulomb taper changed p or e here (see above)
  int iterations = 0;            ///< Newton iterations taken (0 in dens_temp)
  Failure failure = Failure::none;
};

/// A one-line description of a failure of state `s` ("" for none).
std::string describe_failure(const FullState& s, const HelmTable& table);

}  // namespace tessera::eos::helmholtz

namespace tessera::eos {

/// The Helmholtz EOS on a loaded table. Immutable; apply() is thread-safe.
class Helmholtz final : public Eos {
 public:
  /// Zones per chunk of the vector kernel.
  static constexpr int kChunk = 8;
  /// Newton: converged when a Newton step |dT| < newton_tol * T; at most max_newton
  /// iterations (bisection over the whole table to newton_tol takes about 31).
  static constexpr double newton_tol = 1e-8;
  static constexpr int max_newton = 100;
  /// Default composition: 50/50 C/O by mass (abar = 96/7, zbar = 48/7).
  static constexpr double default_abar = 96.0 / 7.0;
  static constexpr double default_zbar = 48.0 / 7.0;

  /// On a shared table; coulomb_mult scales the Coulomb corrections (0 off, 1 on); abar,
  /// zbar are used where a Pencil has none. Throws tessera::Error on bad arguments.
  Helmholtz(std::shared_ptr<const helmholtz::HelmTable> table, double coulomb_mult,
            double abar = default_abar, double zbar = default_zbar);
  /// Loads the table at `table_path` ("" = helmholtz::default_table_path).
  explicit Helmholtz(const std::string& table_path, double coulomb_mult = 1.0,
                     double abar = default_abar, double zbar = default_zbar);

  /// The vectorised kernel (see the file comment).
  Result apply(Mode mode, const Pencil& p) const override;
  /// The scalar reference kernel: the same results to round-off, one zone at a time.
  Result apply_scalar(Mode mode, const Pencil& p) const;
  /// One zone's full state (scalar kernel). Throws tessera::Error on a failure, naming it.
  helmholtz::FullState evaluate(Mode mode, const helmholtz::FullState& in) const;
  /// The same without throwing: failure recorded in the returned state.
  helmholtz::FullState evaluate_nothrow(Mode mode, const helmholtz::FullState& in) const;

  const char* name() const override { return "helmholtz"; }
  /// SHA-256 of the table file in use.
  const std::string& table_sha256() const { return table_->sha256(); }
  /// Path of the table file in use.
  const std::string& table_path() const { return table_->path(); }
  const helmholtz::HelmTable& table() const { return *table_; }
  double coulomb_mult() const { return coulomb_mult_; }
  double abar() const { return abar_; }
  double zbar() const { return zbar_; }

 private:
  std::shared_ptr<const helmholtz::HelmTable> table_;
  double coulomb_mult_;
  double abar_, zbar_;
};

}  // namespace tessera::eos

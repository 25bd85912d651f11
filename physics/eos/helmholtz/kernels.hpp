#pragma once
// The two kernels of the Helmholtz EOS (see helmholtz.hpp): declarations shared by
// helmholtz.cpp, scalar_kernel.cpp and vector_kernel.cpp.
#include <algorithm>
#include <cmath>

#include "physics/eos/eos.hpp"
#include "physics/eos/helmholtz/helm_table.hpp"
#include "physics/eos/helmholtz/helmholtz.hpp"

namespace tessera::eos::helmholtz::detail {

/// One zone in any mode: input checks, Newton in T for dens_ei / dens_pres, final state
/// (Steps 1-4 of Timmes' helmeos in scalar_kernel.cpp's eval_dens_temp). Sets s.failure
/// and s.iterations. Runs the copy of the SIMD target the vector kernel runs.
void solve_zone(const HelmTable& t, double coulomb_mult, Mode mode, FullState& s);

/// The Coulomb taper (helmholtz.hpp): h(r) = r up to r0, then 1 - w^2 / (r - r0 + w),
/// w = 1 - r0: continuous with its first derivative at r0, increasing, below 1. The
/// corrected total is x0 (1 - h(r)) for r = -x_coulomb / x0; omh = 1 - h (computed
/// without cancellation), dh = h'(r). Branch-free arithmetic, the same in both kernels.
constexpr double kCoulombTaperStart = 0.6;
[[gnu::always_inline]] inline void coulomb_taper(double r, double& omh, double& dh) {
  constexpr double r0 = kCoulombTaperStart, w = 1.0 - kCoulombTaperStart;
  const double u = std::max(r - r0, 0.0);
  const double q = w / (u + w);  // 1 at r0, falling
  omh = r <= r0 ? 1.0 - r : w * q;
  dh = r <= r0 ? 1.0 : q * q;
}

/// The state of one zone's inversion for T (dens_ei, dens_pres) between steps: the bracket
/// [lo, hi] that holds the root (the table's edges until evaluated) and the last two steps.
struct Bracket {
  double lo = 0.0, hi = 0.0;  ///< f(lo) < 0 < f(hi) where evaluated
  bool lo_eval = false, hi_eval = false;
  double step = HUGE_VAL, step_before = HUGE_VAL;  ///< |dT| of the last two steps
};

/// Where a zone's inversion stands after a step.
enum class InvertStatus { going, converged, outside_table, no_solution };

/// One step of the safeguarded Newton iteration in T (Press et al. 2007, Numerical Recipes
/// 3rd ed., §9.4, rtsafe) for f(T) = v(T) - want, v = e or p, increasing in T; shared by
/// both kernels so that they take the same decisions. f and dfdt are at `temp`; returns
/// the next T. Step 1: the sign of f moves one end of the bracket (an unevaluated end is
/// the table's edge; f > 0 at tmin or f < 0 at tmax puts the root outside the table).
/// Step 2: the Newton step, at most a factor 10 (FLASH), is taken if it stays inside the
/// bracket and is at most half the step before last; else an unevaluated table edge is
/// tried, else the bracket is bisected in log T. Converged when a Newton step is below
/// newton_tol * T or the residual below 1e-13 of `want` (> 0); a bracket shrunk to
/// round-off with a residual above the table's noise means e(T) (or p(T)) jumps across
/// `want`: there is no solution. Every decision is a comparison of values that
/// both kernels compute to round-off, and the bracket makes every path converge to the
/// same root, so the kernels fail on the same states: those outside the table or with
/// no solution.
inline double invert_step(double temp, double f, double want, double dfdt, double tmin, double tmax,
                          double tol, Bracket& b, InvertStatus& status) {
  status = InvertStatus::going;
  // A residual at the interpolation's round-off: e and p of a degenerate gas carry noise
  // of ~2e-14 of their value (cancellation in the biquintic sums), which near the root
  // moves T by up to 1e-7 relative, more than newton_tol: the bracket then collapses on
  // noise, and Newton steps never fall below the tolerance.
  constexpr double residual_tol = 1e-13, noise_tol = 1e-11;
  if (std::fabs(f) <= residual_tol * want) {
    status = InvertStatus::converged;
    return temp;
  }
  // Step 1: the bracket.
  if (f < 0.0) {
    b.lo = temp;
    b.lo_eval = true;
  } else {
    b.hi = temp;
    b.hi_eval = true;
  }
  if ((f > 0.0 && temp <= tmin) || (f < 0.0 && temp >= tmax)) {
    status = InvertStatus::outside_table;
    return temp;
  }
  // Step 2: Newton, or the table's edge, or bisection.
  double tn = temp - f / dfdt;
  const bool finite = dfdt > 0.0 && std::fabs(tn) <= 1e300;
  tn = finite ? std::min(std::max(tn, 0.1 * temp), 10.0 * temp) : temp;
  const double dn = std::fabs(tn - temp);
  const bool inside = finite && tn >= b.lo && tn <= b.hi;
  if (inside && dn < tol * temp) {
    status = InvertStatus::converged;
    return tn;
  }
  const bool newton = inside && tn > b.lo && tn < b.hi && dn <= 0.5 * b.step_before;
  if (!newton) {
    if (finite && tn < b.lo && !b.lo_eval) {
      tn = b.lo;
    } else if (finite && tn > b.hi && !b.hi_eval) {
      tn = b.hi;
    } else {
      if (b.hi <= b.lo * (1.0 + 4e-16)) {
        status =
            std::fabs(f) <= noise_tol * want ? InvertStatus::converged : InvertStatus::no_solution;
        return temp;
      }
      tn = std::sqrt(b.lo * b.hi);
    }
  }
  b.step_before = b.step;
  b.step = std::fabs(tn - temp);
  return tn;
}

/// The vectorised kernel over a pencil (abar, zbar: the default composition).
Result apply_vector(const HelmTable& t, double coulomb_mult, double abar, double zbar, Mode mode,
                    const Pencil& p);

}  // namespace tessera::eos::helmholtz::detail

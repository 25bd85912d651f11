#pragma once
// Per-zone reconstruction on uniform zones: limited slopes (PLM) and PPM face values.
//
// References
//   van Leer, B. 1977, J. Comput. Phys. 23, 276: the harmonic (van Leer) limiter and the
//     monotonised central (MC) limiter.
//   Roe, P. L. 1986, Ann. Rev. Fluid Mech. 18, 337: minmod.
//   Colella, P. & Woodward, P. R. 1984, J. Comput. Phys. 54, 174 (CW84): PPM interface
//     values (eqs. 1.6-1.8), monotonicity constraints (eq. 1.10), shock flattening
//     (Appendix, eqs. A.1-A.2).
//
// All functions take zone averages by value and are branch-free (ternaries, min/max),
// so that they vectorise when inlined into a loop over zones.
#include <algorithm>
#include <cmath>

namespace tessera::hydro {

/// Slope limiter for limited_slope().
enum class Limiter {
  minmod,    ///< min(|Δ-|, |Δ+|): most diffusive.
  van_leer,  ///< harmonic mean 2 Δ- Δ+ / (Δ- + Δ+).
  mc,        ///< monotonised central: min(2|Δ-|, 2|Δ+|, |Δ- + Δ+|/2).
};

/// Limited full-zone difference Δq of zone 0 from its neighbours' averages qm, qp: face
/// values are q0 ∓ Δq/2. Zero at extrema; odd (slope(-a,-b,-c) == -slope(a,b,c));
/// |Δq| <= 2 min(|q0 - qm|, |qp - q0|) (TVD); exact on linear data.
template <Limiter L>
inline double limited_slope(double qm, double q0, double qp) {
  const double dl = q0 - qm;
  const double dr = qp - q0;
  const bool monotone = dl * dr > 0.0;
  if constexpr (L == Limiter::minmod) {
    return monotone ? std::copysign(std::min(std::abs(dl), std::abs(dr)), dl) : 0.0;
  } else if constexpr (L == Limiter::van_leer) {
    return monotone ? 2.0 * dl * dr / (dl + dr) : 0.0;
  } else {
    const double lim =
        std::min(2.0 * std::min(std::abs(dl), std::abs(dr)), 0.5 * std::abs(dl + dr));
    return monotone ? std::copysign(lim, dl) : 0.0;
  }
}

/// PPM face values of zone 0 (CW84 §1) from five zone averages: q_left at its left face
/// (i-1/2), q_right at its right face (i+1/2). Fourth-order on smooth monotone data;
/// both faces lie within the ranges of their two adjacent zone averages; the parabola
/// they define with q0 is monotone in the zone; at an extremum both equal q0. No contact
/// steepening, no flattening (the caller blends with flattening_coefficient()).
inline void ppm_faces(double qmm, double qm, double q0, double qp, double qpp, double& q_left,
                      double& q_right) {
  // Step 1: limited slopes δ_m a of zones -1, 0, +1 (CW84 eqs. 1.7-1.8); on uniform
  // zones eq. 1.8 is the MC limiter applied to the central difference of eq. 1.7.
  const double dm = limited_slope<Limiter::mc>(qmm, qm, q0);
  const double d0 = limited_slope<Limiter::mc>(qm, q0, qp);
  const double dp = limited_slope<Limiter::mc>(q0, qp, qpp);

  // Step 2: interface values (CW84 eq. 1.6 on uniform zones),
  //   a_{j+1/2} = (a_j + a_{j+1})/2 - (δ_m a_{j+1} - δ_m a_j)/6,
  // the quartic-exact 7/12, -1/12 stencil where the slopes are not limited.
  constexpr double sixth = 1.0 / 6.0;
  const double al = 0.5 * (qm + q0) - sixth * (d0 - dm);
  const double ar = 0.5 * (q0 + qp) - sixth * (dp - d0);

  // Step 3: monotonicity constraints (CW84 eq. 1.10).
  // (a) q0 is a local extremum of (al, q0, ar): the parabola becomes the constant q0.
  const bool extremum = (ar - q0) * (q0 - al) <= 0.0;
  const double al1 = extremum ? q0 : al;
  const double ar1 = extremum ? q0 : ar;
  // (b) the parabola (Δa = ar - al, a6 = 6 (q0 - (al + ar)/2)) would overshoot inside
  // the zone: move the face nearer the overshoot so the extremum sits on the other
  // face. At most one of the two conditions holds; for (a) both are false.
  const double da = ar1 - al1;
  const double a6 = 6.0 * (q0 - 0.5 * (al1 + ar1));
  q_left = (da * a6 > da * da) ? 3.0 * q0 - 2.0 * ar1 : al1;
  q_right = (-da * da > da * a6) ? 3.0 * q0 - 2.0 * al1 : ar1;
}

/// CW84 shock-flattening parameters (Appendix): ε, ω(1), ω(2).
struct FlatteningParams {
  double epsilon = 0.33;  ///< minimum relative pressure jump |Δp|/min(p) for a shock
  double omega1 = 0.75;   ///< steepness Δ1p/Δ2p below which nothing is flattened
  double omega2 = 10.0;   ///< slope of the ramp from 0 to 1 above omega1
};

/// Unsmoothed CW84 flattening coefficient f̃ of zone i in [0, 1] (eqs. A.1-A.2) from
/// pressures p[i-2], p[i-1], p[i+1], p[i+2] and velocities u[i-1], u[i+1]:
///   f̃ = min(1, ω2 max(0, (p[i+1]-p[i-1])/(p[i+2]-p[i-2]) - ω1)) if the zone is in a
///   shock (|p[i+1]-p[i-1]| > ε min(p[i+1], p[i-1]) and u[i+1] < u[i-1]), else 0.
/// 0 leaves the PPM faces alone, 1 flattens them to the zone average:
/// q_face <- f q0 + (1 - f) q_face. CW84 use f_i = max(f̃_i, f̃_{i-σ}), σ = sign of
/// p[i+1]-p[i-1]; that neighbour maximum is the caller's job.
inline double flattening_coefficient(double pmm, double pm, double pp, double ppp, double um,
                                     double up, const FlatteningParams& prm = {}) {
  const double dp1 = pp - pm;
  const double dp2 = ppp - pmm;
  const bool shock = (std::abs(dp1) > prm.epsilon * std::min(pp, pm)) && (up < um);
  // dp2 == 0 with dp1 != 0 (a one-zone spike) counts as maximally steep; the guard
  // also keeps 0/0 out of the unselected lane.
  const double denom = dp2 != 0.0 ? dp2 : (dp1 != 0.0 ? dp1 : 1.0);
  const double ramp = std::min(1.0, prm.omega2 * std::max(0.0, dp1 / denom - prm.omega1));
  return shock ? ramp : 0.0;
}

}  // namespace tessera::hydro

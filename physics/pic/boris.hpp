#pragma once
// Relativistic Boris push and the position update, per particle, SI units.
//
// References
//   Boris, J. P. 1970, Proc. 4th Conf. Num. Sim. Plasmas (NRL), 3: the split
//     electric half-kick / magnetic rotation / electric half-kick.
//   Birdsall, C. K. & Langdon, A. B. 1991, Plasma Physics via Computer Simulation (IOP),
//     §4-3 and §15-4: the rotation with t = q B dt / (2 m gamma) and s = 2 t / (1 + t^2),
//     which conserves |u| exactly and turns by 2 arctan(omega_c dt / 2) per step.
//   Vay, J.-L. 2008, Phys. Plasmas 15, 056701, eqs. 1-4: the relativistic form in
//     u = gamma v (gamma evaluated on u^-), as WarpX's UpdateMomentumBoris.
//
// Time levels: u at n-1/2 -> n+1/2 with E, B at n (gathered at x^n); then x^n -> x^{n+1}
// with u^{n+1/2}. Known limitation (Vay 2008): in strong fields with E + v x B ~ 0 and
// gamma >> 1 the relativistic Boris push drifts at the wrong E x B velocity; Vay's or
// Higuera-Cary's pusher is the remedy.
#include <array>
#include <cmath>

#include "physics/pic/constants.hpp"

namespace tessera::pic {

using Vec3 = std::array<double, 3>;

/// gamma = sqrt(1 + |u|^2 / c^2) for u = gamma v (m/s).
inline double lorentz_gamma(const Vec3& u) {
  constexpr double inv_c2 = 1.0 / (constants::c * constants::c);
  return std::sqrt(1.0 + (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) * inv_c2);
}

/// u^{n-1/2} -> u^{n+1/2} in E (V/m) and B (T) at time n, for charge/mass q_over_m (C/kg).
inline void boris_push(Vec3& u, const Vec3& E, const Vec3& B, double q_over_m, double dt) {
  const double h = 0.5 * q_over_m * dt;
  // Step 1: first electric half-kick, u^- = u + (q dt / 2m) E.
  const double um0 = u[0] + h * E[0], um1 = u[1] + h * E[1], um2 = u[2] + h * E[2];
  // Step 2: rotation vector t = (q dt / 2 m gamma^-) B and s = 2 t / (1 + t^2).
  const double f = h / lorentz_gamma({um0, um1, um2});
  const double t0 = f * B[0], t1 = f * B[1], t2 = f * B[2];
  const double sf = 2.0 / (1.0 + t0 * t0 + t1 * t1 + t2 * t2);
  const double s0 = sf * t0, s1 = sf * t1, s2 = sf * t2;
  // Step 3: u' = u^- + u^- x t, then u^+ = u^- + u' x s (|u^+| = |u^-| exactly).
  const double up0 = um0 + (um1 * t2 - um2 * t1);
  const double up1 = um1 + (um2 * t0 - um0 * t2);
  const double up2 = um2 + (um0 * t1 - um1 * t0);
  const double uq0 = um0 + (up1 * s2 - up2 * s1);
  const double uq1 = um1 + (up2 * s0 - up0 * s2);
  const double uq2 = um2 + (up0 * s1 - up1 * s0);
  // Step 4: second electric half-kick.
  u = {uq0 + h * E[0], uq1 + h * E[1], uq2 + h * E[2]};
}

/// x^n -> x^{n+1} = x^n + dt u^{n+1/2} / gamma (all three components, also in 1-D/2-D).
inline void push_position(Vec3& x, const Vec3& u, double dt) {
  const double f = dt / lorentz_gamma(u);
  x = {x[0] + f * u[0], x[1] + f * u[1], x[2] + f * u[2]};
}

}  // namespace tessera::pic

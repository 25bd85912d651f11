#pragma once
// Finite-difference time-domain Maxwell solver on the Yee lattice, SI units.
//
// References
//   Yee, K. S. 1966, IEEE Trans. Antennas Propag. 14, 302: the staggered lattice.
//   Taflove, A. & Hagness, S. C. 2005, Computational Electrodynamics, 3rd ed. (Artech
//     House): §4.7 the stability bound c dt <= (sum_i 1/dx_i^2)^(-1/2), §4.6 the numerical
//     dispersion relation [sin(w dt/2)/(c dt)]^2 = sum_i [sin(k_i dx_i/2)/dx_i]^2.
//   WarpX documentation, "Theory: Particle-in-Cell method" (BLAST-WarpX/warpx,
//     Docs/source/theory): B advanced in two half steps so that E and B are known at the
//     particles' integer time level.
//
// One PIC step (the integration's job; these kernels are its field parts):
//   fill guards of E, B;  gather + push + deposit J^{n+1/2}; sum J guard deposits;
//   advance_b(dt/2): B^{n+1/2} = B^n - dt/2 curl E^n;           fill guards of B;
//   advance_e(dt):   E^{n+1} = E^n + dt (c^2 curl B^{n+1/2} - J/eps0); fill guards of E;
//   advance_b(dt/2): B^{n+1} = B^{n+1/2} - dt/2 curl E^{n+1}.
// Two half steps of B are the leapfrog B^{n+1/2} = B^{n-1/2} - dt curl E^n exactly (up to
// round-off), so the scheme's dispersion and stability are Yee's.
//
// Staggering as in fields.hpp. advance_b reads E at index +1 along active axes and
// advance_e reads B at index -1, so over a box [lo, hi) the guard width must be >= 1 and
// the guards filled first. Along inactive axes the derivative is zero (template D).
#include <cmath>

#include "physics/pic/constants.hpp"
#include "physics/pic/fields.hpp"

namespace tessera::pic::yee {

/// The largest stable time step: c dt <= (sum over active axes 1/dx_a^2)^(-1/2).
template <int D>
double max_dt(const Grid& g) {
  double s = 0;
  for (int a = 0; a < D; ++a) s += 1.0 / (g.dx[a] * g.dx[a]);
  return 1.0 / (constants::c * std::sqrt(s));
}

/// Angular frequency of a vacuum plane wave with wave vector k on the Yee lattice:
/// sin(w dt/2) = c dt sqrt(sum_a [sin(k_a dx_a/2)/dx_a]^2) (active axes); NaN if dt
/// exceeds the stability bound for that k (the argument of asin exceeds 1).
template <int D>
double dispersion_omega(const std::array<double, 3>& k, const Grid& g, double dt) {
  double s = 0;
  for (int a = 0; a < D; ++a) {
    const double t = std::sin(0.5 * k[a] * g.dx[a]) / g.dx[a];
    s += t * t;
  }
  return 2.0 / dt * std::asin(constants::c * dt * std::sqrt(s));
}

/// Faraday's law over box b: B -= dt_b curl E. Call with dt_b = dt/2, twice per step.
template <int D>
void advance_b(const EMFields& f, const Box& b, const Grid& g, double dt_b) {
  const double cx = D > 0 ? dt_b / g.dx[0] : 0.0;
  const double cy = D > 1 ? dt_b / g.dx[1] : 0.0;
  const double cz = D > 2 ? dt_b / g.dx[2] : 0.0;
  constexpr int ox = 1, oy = D > 1 ? 1 : 0, oz = D > 2 ? 1 : 0;  // forward offsets
  for (int k = b.lo[2]; k < b.hi[2]; ++k)
    for (int j = b.lo[1]; j < b.hi[1]; ++j)
      for (int i = b.lo[0]; i < b.hi[0]; ++i) {
        const double ex = f.ex(i, j, k), ey = f.ey(i, j, k), ez = f.ez(i, j, k);
        // dEz/dy - dEy/dz at (i, j+1/2, k+1/2)
        f.bx(i, j, k) -= cy * (f.ez(i, j + oy, k) - ez) - cz * (f.ey(i, j, k + oz) - ey);
        // dEx/dz - dEz/dx at (i+1/2, j, k+1/2)
        f.by(i, j, k) -= cz * (f.ex(i, j, k + oz) - ex) - cx * (f.ez(i + ox, j, k) - ez);
        // dEy/dx - dEx/dy at (i+1/2, j+1/2, k)
        f.bz(i, j, k) -= cx * (f.ey(i + ox, j, k) - ey) - cy * (f.ex(i, j + oy, k) - ex);
      }
}

/// Ampere's law over box b: E += dt (c^2 curl B - J/eps0), J staggered as E (A/m^2).
template <int D>
void advance_e(const EMFields& f, const Currents& J, const Box& b, const Grid& g, double dt) {
  const double c2 = constants::c * constants::c;
  const double cx = D > 0 ? c2 * dt / g.dx[0] : 0.0;
  const double cy = D > 1 ? c2 * dt / g.dx[1] : 0.0;
  const double cz = D > 2 ? c2 * dt / g.dx[2] : 0.0;
  const double cj = dt / constants::eps0;
  constexpr int ox = 1, oy = D > 1 ? 1 : 0, oz = D > 2 ? 1 : 0;  // backward offsets
  for (int k = b.lo[2]; k < b.hi[2]; ++k)
    for (int j = b.lo[1]; j < b.hi[1]; ++j)
      for (int i = b.lo[0]; i < b.hi[0]; ++i) {
        const double bx = f.bx(i, j, k), by = f.by(i, j, k), bz = f.bz(i, j, k);
        // dBz/dy - dBy/dz at (i+1/2, j, k)
        f.ex(i, j, k) +=
            cy * (bz - f.bz(i, j - oy, k)) - cz * (by - f.by(i, j, k - oz)) - cj * J.jx(i, j, k);
        // dBx/dz - dBz/dx at (i, j+1/2, k)
        f.ey(i, j, k) +=
            cz * (bx - f.bx(i, j, k - oz)) - cx * (bz - f.bz(i - ox, j, k)) - cj * J.jy(i, j, k);
        // dBy/dx - dBx/dy at (i, j, k+1/2)
        f.ez(i, j, k) +=
            cx * (by - f.by(i - ox, j, k)) - cy * (bx - f.bx(i, j - oy, k)) - cj * J.jz(i, j, k);
      }
}

}  // namespace tessera::pic::yee

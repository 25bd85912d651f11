#pragma once
// A vacuum electromagnetic pulse as an initial condition on the Yee lattice, for the tests
// of the absorbing boundary (absorbing.hpp): E polarised along z, moving in the x-y plane
// along (cos theta, sin theta), uniform along z, derived from a vector potential A = Az z
// so that both discrete divergences vanish to round-off:
//   Az = (A0 sigma / c) exp(-xi^2 / (2 sigma^2) - eta^2 / (2 w^2)),
//   xi = (x - xc) cos theta + (y - yc) sin theta,  eta = -(x - xc) sin theta + (y - yc) cos theta,
//   Ez = c dAz/dxi  (= -dAz/dt for a pulse moving along +xi),
//   B  = curl(Az z) = (dAz/dy, -dAz/dx, 0), by differences of Az between the nodes at the
//        ends of each face (the Yee curl of a node field: div B = 0 to round-off).
// w = 0 stands for an infinite width (a plane pulse, the only choice in 1-D where theta must
// be 0). A plane pulse (and, up to terms of order sigma/w, a finite one) is the forward
// wave B = (1/c) k x E; a finite width also sends a small part of the energy backward.
// Peak |Ez| = A0 exp(-1/2) (at xi = -+sigma, eta = 0).
#include <cmath>

#include "physics/pic/constants.hpp"
#include "physics/pic/fields.hpp"

namespace tessera::pic {

/// A Gaussian vacuum pulse (header): amplitude A0 (V/m), length sigma and width w (m; w =
/// 0: infinite), direction theta (rad) in the x-y plane, centre (xc, yc) (m).
struct Pulse {
  double amplitude = 0, sigma = 1, width = 0, angle = 0;
  double xc = 0, yc = 0;
};

/// Az (T m) at (x, y).
inline double pulse_az(const Pulse& p, double x, double y) {
  const double ct = std::cos(p.angle), st = std::sin(p.angle);
  const double xi = (x - p.xc) * ct + (y - p.yc) * st;
  const double eta = -(x - p.xc) * st + (y - p.yc) * ct;
  double a = -0.5 * xi * xi / (p.sigma * p.sigma);
  if (p.width > 0) a -= 0.5 * eta * eta / (p.width * p.width);
  return p.amplitude * p.sigma / constants::c * std::exp(a);
}

/// Ez = c dAz/dxi (V/m) at (x, y).
inline double pulse_ez(const Pulse& p, double x, double y) {
  const double xi = (x - p.xc) * std::cos(p.angle) + (y - p.yc) * std::sin(p.angle);
  return -constants::c * xi / (p.sigma * p.sigma) * pulse_az(p, x, y);
}

/// Set E and B of pulse p over box b of a block array on grid g (D active axes; Ex = Ey =
/// Bz = 0), the positions as fields.hpp staggers them.
template <int D>
void set_pulse(const EMFields& f, const Box& b, const Grid& g, const Pulse& p) {
  for (int k = b.lo[2]; k < b.hi[2]; ++k)
    for (int j = b.lo[1]; j < b.hi[1]; ++j)
      for (int i = b.lo[0]; i < b.hi[0]; ++i) {
        const double x = g.x0[0] + i * g.dx[0];
        const double y = D > 1 ? g.x0[1] + j * g.dx[1] : p.yc;
        const double az = pulse_az(p, x, y);
        f.ex(i, j, k) = 0.0;
        f.ey(i, j, k) = 0.0;
        f.ez(i, j, k) = pulse_ez(p, x, y);
        // Bx at (i, j+1/2): dAz/dy; By at (i+1/2, j): -dAz/dx; Bz = 0.
        f.bx(i, j, k) = D > 1 ? (pulse_az(p, x, y + g.dx[1]) - az) / g.dx[1] : 0.0;
        f.by(i, j, k) = -(pulse_az(p, x + g.dx[0], y) - az) / g.dx[0];
        f.bz(i, j, k) = 0.0;
      }
}

}  // namespace tessera::pic

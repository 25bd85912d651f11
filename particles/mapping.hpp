#pragma once
// Mesh-to-particle interpolation (FLASH's Particles/ParticlesMapping): the value of a zone
// field at a point, from the cell centres around it in one block's array (guard zones
// included, so a point up to a zone outside the interior is served by the same block).
//   cic        cloud-in-cell: linear in each axis through the 2 nearest centres
//              (Birdsall & Langdon 1991, §8.4); 2^d zones.
//   quadratic  Lagrange through the nearest centre and its two neighbours per axis
//              (triangular-shaped cloud's support with exact quadratics); 3^d zones.
// Both reproduce a linear field exactly, which FLASH's integrator tests rely on.
// Header-only, per point; indices are a block's array indices (first interior zone g).
#include <cmath>
#include <string>

#include "mesh/block_view.hpp"

namespace tessera::particles {

enum class Mapping { cic, quadratic };

/// "cic" | "quadratic"; throws tessera::Error otherwise.
Mapping parse_mapping(const std::string& s);

/// One axis of a stencil: the first array index, how many zones, their weights.
struct Stencil1 {
  int i0 = 0, n = 1;
  double w[3] = {1, 0, 0};
};

/// The stencil along one axis for coordinate x in a block whose interior starts at `lo`
/// with zone width dx and g guard zones (array index of the first interior zone).
inline Stencil1 stencil(Mapping m, double x, double lo, double dx, int g) {
  const double s = (x - lo) / dx;  // zones from the interior's lower face
  Stencil1 st;
  if (m == Mapping::cic) {
    const double c = s - 0.5;  // from the first interior centre
    const int i = static_cast<int>(std::floor(c));
    const double f = c - i;
    st.i0 = g + i, st.n = 2, st.w[0] = 1 - f, st.w[1] = f;
    return st;
  }
  const int i = static_cast<int>(std::floor(s));  // the nearest centre is i + 0.5
  const double d = s - (i + 0.5);                 // in [-1/2, 1/2)
  st.i0 = g + i - 1, st.n = 3;
  st.w[0] = 0.5 * d * (d - 1), st.w[1] = 1 - d * d, st.w[2] = 0.5 * d * (d + 1);
  return st;
}

/// True if the stencil lies inside an array of n zones along its axis.
inline bool fits(const Stencil1& s, int n) {
  return s.i0 >= 0 && s.i0 + s.n <= n;
}

/// sum over the stencil of w * f(i, j, k).
template <class F>
double interpolate(const Stencil1& sx, const Stencil1& sy, const Stencil1& sz, F&& f) {
  double v = 0;
  for (int c = 0; c < sz.n; ++c) {
    double vy = 0;
    for (int b = 0; b < sy.n; ++b) {
      double vx = 0;
      for (int a = 0; a < sx.n; ++a) vx += sx.w[a] * f(sx.i0 + a, sy.i0 + b, sz.i0 + c);
      vy += sy.w[b] * vx;
    }
    v += sz.w[c] * vy;
  }
  return v;
}

}  // namespace tessera::particles

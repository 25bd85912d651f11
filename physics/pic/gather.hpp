#pragma once
// Field gather: E and B from the Yee lattice at a particle's position, SI units.
//
// References
//   Lewis, H. R. 1970, J. Comput. Phys. 6, 136 and Birdsall & Langdon 1991, §10-4: the
//     energy-conserving interpolation, one order lower along the staggered axes.
//   WarpX, Source/Particles/Gather/FieldGather.H (doGatherShapeN, galerkin_interpolation):
//     "energy-conserving" uses order p along a component's nodal axes and p - 1 along its
//     staggered ones (Ex: p-1 in x, p in y and z; Bx: p in x, p-1 in y and z);
//     "momentum-conserving" uses order p along every axis, at each component's own
//     (staggered or nodal) position.
//
// The energy-conserving choice is the one whose gather matches the Esirkepov deposit's
// transverse shapes, so that the field does work on the particles at the rate J.E the
// deposit reports (no finite-grid heating to leading order). Shapes: shape.hpp, staggering:
// fields.hpp. The guards of E and B must be filled before gathering near a block face.
#include "physics/pic/boris.hpp"
#include "physics/pic/fields.hpp"
#include "physics/pic/shape.hpp"

namespace tessera::pic {

enum class GatherScheme { energy_conserving, momentum_conserving };

namespace detail {

/// sum over the stencil of wx wy wz f(i, j, k).
template <int PX, int PY, int PZ>
double interpolate(const Field& f, const Shape<PX>& sx, const Shape<PY>& sy, const Shape<PZ>& sz) {
  double v = 0;
  for (int k = 0; k <= PZ; ++k) {
    double vy = 0;
    for (int j = 0; j <= PY; ++j) {
      double vx = 0;
      for (int i = 0; i <= PX; ++i) vx += sx.w[i] * f(sx.first + i, sy.first + j, sz.first + k);
      vy += sy.w[j] * vx;
    }
    v += sz.w[k] * vy;
  }
  return v;
}

/// Order Q at coordinate s (staggered by half a cell if Stag) on an active axis; the
/// single point 0 with weight 1 on an inactive one.
template <int Q, bool Active, bool Stag>
constexpr Shape<Active ? Q : 0> axis_shape(double s) {
  if constexpr (!Active)
    return Shape<0>{0, {1.0}};
  else if constexpr (Stag)
    return shape_staggered<Q>(s);
  else
    return shape<Q>(s);
}

}  // namespace detail

/// E (V/m) and B (T) at position x (m) with shapes of order P (1-3).
template <int D, int P, GatherScheme S = GatherScheme::energy_conserving>
void gather(const EMFields& f, const Grid& g, const Vec3& x, Vec3& E, Vec3& B) {
  static_assert(D >= 1 && D <= 3 && P >= 1 && P <= 3);
  constexpr bool ay = D > 1, az = D > 2;
  // Order along staggered axes: p - 1 (energy-conserving) or p (momentum-conserving).
  constexpr int Q = S == GatherScheme::energy_conserving ? P - 1 : P;
  const double s0 = g.cells(0, x[0]);
  const double s1 = ay ? g.cells(1, x[1]) : 0.0;
  const double s2 = az ? g.cells(2, x[2]) : 0.0;
  // Step 1: nodal (order P) and staggered (order Q) shapes per axis. Along an inactive
  // axis nothing is staggered and both are the single point 0.
  const auto nx = detail::axis_shape<P, true, false>(s0);
  const auto ny = detail::axis_shape<P, ay, false>(s1);
  const auto nz = detail::axis_shape<P, az, false>(s2);
  const auto hx = detail::axis_shape<Q, true, true>(s0);
  const auto hy = detail::axis_shape<Q, ay, true>(s1);
  const auto hz = detail::axis_shape<Q, az, true>(s2);
  // Step 2: E is staggered along its own axis (edges), B along the other two (faces).
  E[0] = detail::interpolate(f.ex, hx, ny, nz);
  E[1] = detail::interpolate(f.ey, nx, hy, nz);
  E[2] = detail::interpolate(f.ez, nx, ny, hz);
  B[0] = detail::interpolate(f.bx, nx, hy, hz);
  B[1] = detail::interpolate(f.by, hx, ny, hz);
  B[2] = detail::interpolate(f.bz, hx, hy, nz);
}

/// Software prefetch of the six field components at the cell holding x: issued by the
/// gather for the particle k places ahead when fields may sit in slow memory (tiered
/// placements static_prefetch and dynamic; k from memory::TierRuntime::prefetch_distance).
/// Touches no value; x must lie in the block array.
template <int D>
inline void prefetch_fields(const EMFields& f, const Grid& g, const Vec3& x) {
  int c[3] = {0, 0, 0};
  for (int a = 0; a < D; ++a) c[a] = static_cast<int>(g.cells(a, x[a]));
  for (const Field* q : {&f.ex, &f.ey, &f.ez, &f.bx, &f.by, &f.bz})
    __builtin_prefetch(&(*q)(c[0], c[1], c[2]));
}

}  // namespace tessera::pic

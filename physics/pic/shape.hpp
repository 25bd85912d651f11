#pragma once
// B-spline shape factors of order 0-3 on a uniform grid, the particle shapes of PIC.
//
// References
//   Hockney, R. W. & Eastwood, J. W. 1988, Computer Simulation Using Particles (IOP),
//     §5-3: NGP (order 0), CIC (1), TSC (2) and the cubic B-spline (3) as assignment
//     functions W_p = W_0 * ... * W_0 (p+1 convolutions of the top hat).
//   Esirkepov, T. Zh. 2001, Comput. Phys. Commun. 135, 144: the same shapes in the
//     charge-conserving current deposition (esirkepov.hpp).
//
// A shape of order p covers p+1 points. The coordinate s is a position in cells from array
// index 0 (Grid::cells): node-centred quantities live at integer s, half-cell-staggered
// ones at s = i + 1/2, so the staggered weights of index i are the node weights at s - 1/2.
// Odd orders start at floor(s) (and floor(s) - 1), even orders are centred on the nearest
// point round(s). The weights sum to 1 to round-off and are constexpr so a caller with a
// fixed offset can tabulate them.
namespace tessera::pic {

/// Weights w[0..P] on the points first, first+1, ..., first+P.
template <int P>
struct Shape {
  static_assert(P >= 0 && P <= 3, "shape orders 0-3");
  static constexpr int order = P;
  static constexpr int n = P + 1;
  int first = 0;
  double w[P + 1] = {};
};

namespace detail {
/// floor(s) as an int, constexpr (std::floor is constexpr only from C++23).
constexpr int floor_int(double s) {
  const int i = static_cast<int>(s);
  return i > s ? i - 1 : i;
}
}  // namespace detail

/// B-spline of order P for a node-centred quantity at coordinate s (cells from index 0).
template <int P>
constexpr Shape<P> shape(double s) {
  Shape<P> r;
  if constexpr (P == 0) {
    // NGP: the nearest point.
    r.first = detail::floor_int(s + 0.5);
    r.w[0] = 1.0;
  } else if constexpr (P == 1) {
    // CIC: linear, on floor(s) and floor(s) + 1.
    r.first = detail::floor_int(s);
    const double f = s - r.first;
    r.w[0] = 1.0 - f;
    r.w[1] = f;
  } else if constexpr (P == 2) {
    // TSC: quadratic B-spline centred on the nearest point n, d = s - n in [-1/2, 1/2).
    const int nearest = detail::floor_int(s + 0.5);
    const double d = s - nearest;
    r.first = nearest - 1;
    r.w[0] = 0.5 * (0.5 - d) * (0.5 - d);
    r.w[1] = 0.75 - d * d;
    r.w[2] = 0.5 * (0.5 + d) * (0.5 + d);
  } else {
    // Cubic B-spline on floor(s) - 1 .. floor(s) + 2, f = s - floor(s) in [0, 1).
    const int i = detail::floor_int(s);
    const double f = s - i;
    const double g = 1.0 - f;
    r.first = i - 1;
    r.w[0] = g * g * g / 6.0;
    r.w[1] = (4.0 - 6.0 * f * f + 3.0 * f * f * f) / 6.0;
    r.w[2] = (4.0 - 6.0 * g * g + 3.0 * g * g * g) / 6.0;
    r.w[3] = f * f * f / 6.0;
  }
  return r;
}

/// The same B-spline for a quantity staggered half a cell up (index i at s = i + 1/2).
template <int P>
constexpr Shape<P> shape_staggered(double s) {
  return shape<P>(s - 0.5);
}

}  // namespace tessera::pic

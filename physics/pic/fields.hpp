#pragma once
// Field storage the PIC kernels work on: one strided array per field component over a
// block array with guard zones, indexed by array indices (guards counted, the first
// interior cell is g along an active axis, as mesh::BlockView), inactive axes of extent 1
// and index 0.
//
// Yee staggering, stored in cell-indexed arrays. Array index (i, j, k) names the node
// x_i = x0 + i dx (the lower corner of cell i), and a component sits half a cell up along
// the axes it is staggered on:
//   Ex(i,j,k) at (i+1/2, j,     k    )   Bx(i,j,k) at (i,     j+1/2, k+1/2)
//   Ey(i,j,k) at (i,     j+1/2, k    )   By(i,j,k) at (i+1/2, j,     k+1/2)
//   Ez(i,j,k) at (i,     j,     k+1/2)   Bz(i,j,k) at (i+1/2, j+1/2, k    )
//   J as E (edges);  rho at nodes (i, j, k).
// Along an inactive axis there is no staggering (the half-cell offset is dropped). A block
// owns indices [g, g + n) on each active axis: the node or edge at g + n is index g of the
// neighbour above, so interior indices tile the domain once.
#include <array>
#include <cstddef>

#include "mesh/block_view.hpp"

namespace tessera::pic {

/// Non-owning view of one field component: element (i, j, k) is p[i si + j sj + k sk].
/// Cheap to copy; no bounds checks (kernels state what range of indices they touch).
struct Field {
  double* p = nullptr;
  std::ptrdiff_t si = 1, sj = 0, sk = 0;  ///< strides in doubles
  double& operator()(int i, int j, int k) const { return p[i * si + j * sj + k * sk]; }
};

/// Variable v of a block's unk as a Field, for either layout (zone-major is strided in i).
template <mesh::Layout L>
Field field_of(const mesh::BlockView<L>& u, int v) {
  const std::ptrdiff_t si = L == mesh::Layout::var_major ? 1 : u.nvar;
  return Field{&u(v, 0, 0, 0), si, si * u.sj, si * u.sk};
}

/// The six electromagnetic field components on the Yee lattice (fields.hpp header).
struct EMFields {
  Field ex, ey, ez, bx, by, bz;
};

/// The three current-density components, staggered as E.
struct Currents {
  Field jx, jy, jz;
};

/// Placement of a block array in space: x0 is the position of node (0, 0, 0) (the block's
/// lower corner minus g cells on active axes), dx the cell size. On inactive axes dx is the
/// extent that turns a macro-particle weight into a density (1 m: weights per m^2 in 1-D).
struct Grid {
  std::array<double, 3> x0{0, 0, 0};
  std::array<double, 3> dx{1, 1, 1};
  /// Position along axis a in cells from node 0 (the shape functions' coordinate).
  double cells(int a, double x) const { return (x - x0[a]) / dx[a]; }
  double volume() const { return dx[0] * dx[1] * dx[2]; }
};

/// A range of array indices [lo, hi) per axis; inactive axes [0, 1).
struct Box {
  std::array<int, 3> lo{0, 0, 0};
  std::array<int, 3> hi{1, 1, 1};
};

/// The interior cells of a block of shape s ([g, g + n) on active axes).
inline Box interior(const mesh::BlockShape& s) {
  Box b;
  for (int a = 0; a < 3; ++a) b.lo[a] = s.g(a), b.hi[a] = s.g(a) + s.ni(a);
  return b;
}

}  // namespace tessera::pic

#pragma once
// The view every kernel takes: one block's cells (interior + guards) for all variables.
// Layout is a template parameter so kernels are written once and instantiated for both:
//   var-major  [var][k][j][i]  (default): unit stride along x, what the hydro loops
//                               vectorise on;
//   zone-major [k][j][i][var]  (PARAMESH's unk(nvar,i,j,k,blk)): the variables of one
//                               zone together, for the layout studies.
// The layout is chosen at run time (mesh.layout); Mesh::with_layout is the one switch
// that hands a kernel the compile-time tag. A kernel indexes u(v, i, j, k) or walks x-rows
// with u.row(v, j, k); it never computes an offset itself.
#include <cstddef>
#include <string>
#include <type_traits>

namespace tessera::mesh {

enum class Layout { var_major, zone_major };

/// Compile-time layout handed to a kernel by with_layout(); `decltype(tag)::value` is L.
template <Layout L>
using LayoutTag = std::integral_constant<Layout, L>;

/// "var_major" / "zone_major".
const char* layout_name(Layout l);
/// Inverse of layout_name; throws tessera::Error on anything else.
Layout parse_layout(const std::string& s);

/// Call f(LayoutTag<L>{}) for the runtime layout l: the single runtime dispatch point.
/// f is instantiated for both layouts, so both must return the same type.
template <class F>
decltype(auto) with_layout(Layout l, F&& f) {
  if (l == Layout::zone_major) return f(LayoutTag<Layout::zone_major>{});
  return f(LayoutTag<Layout::var_major>{});
}

/// Extents of a block array including guards (1 for inactive axes).
struct BlockShape {
  int ndim = 3;
  int nx = 16;  ///< interior zones per active axis
  int ng = 2;   ///< guard zones per side on active axes
  int nvar = 1;
  int n(int axis) const { return axis < ndim ? nx + 2 * ng : 1; }
  int g(int axis) const { return axis < ndim ? ng : 0; }   ///< guard width on axis
  int ni(int axis) const { return axis < ndim ? nx : 1; }  ///< interior cells on axis
  std::size_t cells() const { return std::size_t(n(0)) * n(1) * n(2); }
  std::size_t interior_cells() const { return std::size_t(ni(0)) * ni(1) * ni(2); }
  std::size_t doubles() const { return cells() * nvar; }
};

/// f(i, j, k) for every interior zone of a block array of shape s (array indices, guards
/// counted: the first interior zone is (g(0), g(1), g(2))), k outermost, x fastest.
template <class F>
void for_each_zone(const BlockShape& s, F&& f) {
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
      for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) f(i, j, k);
}

/// An x-row of one variable in zone-major storage: element i is nvar doubles after
/// element i-1. Loads and stores through it are strided (gathers/scatters once
/// vectorised), which is the cost of the zone-major layout in x-sweeping kernels.
struct StridedRow {
  double* p;
  int stride;
  double& operator[](std::ptrdiff_t i) const { return p[i * stride]; }
  /// The row from element i on.
  StridedRow operator+(std::ptrdiff_t i) const { return StridedRow{p + i * stride, stride}; }
};

/// One variable over a whole block array, indexed by cell number
/// c = i + n0 (j + n1 k). FieldView<var_major> also describes any contiguous
/// one-variable array over the block (a derived-variable scratch, say).
template <Layout L>
struct FieldView {
  const double* p = nullptr;
  int nvar = 1;
  double operator[](std::ptrdiff_t c) const {
    if constexpr (L == Layout::var_major)
      return p[c];
    else
      return p[c * nvar];
  }
};

/// Non-owning view of one block's `unk` (all variables, guards included). Cheap to copy.
/// Not thread-safe beyond what the underlying storage is.
template <Layout L = Layout::var_major>
struct BlockView {
  static constexpr Layout layout = L;
  /// What row() returns: a plain pointer (unit stride) for var-major.
  using Row = std::conditional_t<L == Layout::var_major, double*, StridedRow>;

  double* p = nullptr;
  int sj = 0, sk = 0;  ///< strides in cells
  std::size_t sv = 0;  ///< cells per variable (var-major variable stride)
  int nvar = 0;
  BlockView() = default;
  BlockView(double* base, const BlockShape& s)
      : p(base), sj(s.n(0)), sk(s.n(0) * s.n(1)), sv(s.cells()), nvar(s.nvar) {}

  /// Offset in doubles of (v, i, j, k) from the block's first double.
  std::size_t offset(int v, int i, int j, int k) const {
    const std::size_t c = std::size_t(k) * sk + std::size_t(j) * sj + i;
    if constexpr (L == Layout::var_major)
      return v * sv + c;
    else
      return c * nvar + v;
  }
  double& operator()(int v, int i, int j, int k) const { return p[offset(v, i, j, k)]; }
  /// The x-row (j, k) of variable v, indexed by i from 0 (the first guard cell).
  Row row(int v, int j, int k) const {
    if constexpr (L == Layout::var_major)
      return p + offset(v, 0, j, k);
    else
      return StridedRow{p + offset(v, 0, j, k), nvar};
  }
  /// Variable v over the whole block array.
  FieldView<L> field(int v) const { return FieldView<L>{p + offset(v, 0, 0, 0), nvar}; }
};

}  // namespace tessera::mesh

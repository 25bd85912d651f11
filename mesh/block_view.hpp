#pragma once
// The view every kernel takes: one block's cells (interior + guards) for all variables.
// Layout is a template parameter so kernels are written once; var-major
// [var][k][j][i] keeps unit stride along x, which is what the hydro loops vectorise.
#include <array>
#include <cstddef>

namespace tessera::mesh {

enum class Layout { var_major, zone_major };

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

template <Layout L = Layout::var_major>
struct BlockView {
  double* p = nullptr;
  int sj = 0, sk = 0;  ///< strides in cells
  std::size_t sv = 0;  ///< var stride (var-major) in doubles
  int nvar = 0;
  BlockView() = default;
  BlockView(double* base, const BlockShape& s)
      : p(base), sj(s.n(0)), sk(s.n(0) * s.n(1)), sv(s.cells()), nvar(s.nvar) {}
  double& operator()(int v, int i, int j, int k) const {
    if constexpr (L == Layout::var_major)
      return p[v * sv + std::size_t(k) * sk + std::size_t(j) * sj + i];
    else
      return p[(std::size_t(k) * sk + std::size_t(j) * sj + i) * nvar + v];
  }
  /// Pointer to the x-row (j, k) of variable v (var-major only: unit stride).
  double* row(int v, int j, int k) const {
    static_assert(L == Layout::var_major);
    return p + v * sv + std::size_t(k) * sk + std::size_t(j) * sj;
  }
};

}  // namespace tessera::mesh

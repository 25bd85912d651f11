#pragma once
// Löhner's error estimator as FLASH uses it to mark blocks (Löhner 1987; FLASH's
// gr_estimateBlkError): the largest, over the block's interior cells, of
//   E = sqrt( sum_ab (d2u/dx_a dx_b)^2 /
//             sum_ab [ (|du/dx_a|_{+b/2} + |du/dx_a|_{-b/2}) / dx_b
//                      + filter * |d2u|_{ab, average of |u|} ]^2 )
// in undivided differences (uniform spacing inside a block cancels). E lies in [0, 1];
// a smooth field gives small values, a jump gives values near 1.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "mesh/block_view.hpp"

namespace tessera::mesh {

/// Both maxima of one pass: over the interior cells, and over the interior widened by
/// `ext` guard layers on each active axis (clamped to ng - 1; equal to the first for 0).
struct LohnerErrors {
  double interior = 0.0;
  double widened = 0.0;
};

namespace detail {

/// The squared error E^2 = num / den of the cells [i0, i1) of the row at cell c0 (0 where
/// den = 0) into r; ND active axes, so the (a, b) loops unroll and the cell loop has no
/// branch.
template <int ND, class Field>
void lohner_row(const Field& q, const long st[3], long c0, int i0, int i1, double filter,
                double* __restrict r) {
  for (int i = i0; i < i1; ++i) {
    const long c = c0 + i;
    double num = 0.0, den = 0.0;
#pragma GCC unroll 3
    for (int a = 0; a < ND; ++a)
#pragma GCC unroll 3
      for (int b = 0; b < ND; ++b) {
        const long sa = st[a], sb = st[b];
        double d2, d1, sm;
        if (a == b) {
          d2 = q[c + sa] - 2.0 * q[c] + q[c - sa];
          d1 = std::fabs(q[c + sa] - q[c]) + std::fabs(q[c] - q[c - sa]);
          sm = std::fabs(q[c + sa]) + 2.0 * std::fabs(q[c]) + std::fabs(q[c - sa]);
        } else {
          d2 = 0.25 * (q[c + sa + sb] - q[c + sa - sb] - q[c - sa + sb] + q[c - sa - sb]);
          d1 = 0.25 * (std::fabs(q[c + sa + sb] - q[c - sa + sb]) +
                       std::fabs(q[c + sa - sb] - q[c - sa - sb]));
          sm = 0.25 * (std::fabs(q[c + sa + sb]) + std::fabs(q[c + sa - sb]) +
                       std::fabs(q[c - sa + sb]) + std::fabs(q[c - sa - sb]));
        }
        num += d2 * d2;
        const double dd = d1 + filter * sm;
        den += dd * dd;
      }
    // Branch-free (the loop vectorises): 0 where den = 0.
    const bool some = den > 0.0;
    r[i] = (some ? num : 0.0) / (some ? den : 1.0);
  }
}

template <int ND, class Field>
LohnerErrors lohner_errors_nd(const Field& q, const BlockShape& s, double filter, int ext,
                              double stop_above) {
  const long st[3] = {1, s.n(0), long(s.n(0)) * s.n(1)};
  ext = std::clamp(ext, 0, std::max(s.ng - 1, 0));
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    const int e = a < ND ? ext : 0;
    lo[a] = s.g(a) - e;
    hi[a] = s.g(a) + s.ni(a) + e;
  }
  // Quiet rows: x-rows (j, k) of the whole array whose cells all hold one value. A cell
  // whose stencil (the rows j-1..j+1, k-1..k+1 on active axes) lies in quiet rows of one
  // value has no differences: E^2 = 0 (or NaN for an infinite value), which leaves a
  // maximum that starts at 0 unchanged, so such a row is skipped with the same result.
  // An ambient medium at rest keeps its exact initial value until a wave arrives.
  const int n0 = s.n(0), n1 = s.n(1);
  thread_local std::vector<unsigned char> quiet;  // one flag per row
  quiet.resize(std::size_t(n1) * s.n(2));
  for (int k = 0; k < s.n(2); ++k)
    for (int j = 0; j < n1; ++j) {
      const long c0 = j * st[1] + k * st[2];
      const double q0 = q[c0];
      int i = 1;  // a row with structure usually stops at once
      while (i < n0 && q[c0 + i] == q0) ++i;
      quiet[j + n1 * k] = i == n0;
    }
  auto quiet_stencil = [&](int j, int k) {
    const double q0 = q[j * st[1] + k * st[2]];
    for (int dk = (ND > 2 ? -1 : 0); dk <= (ND > 2 ? 1 : 0); ++dk)
      for (int dj = (ND > 1 ? -1 : 0); dj <= (ND > 1 ? 1 : 0); ++dj)
        if (!quiet[(j + dj) + n1 * (k + dk)] || !(q[(j + dj) * st[1] + (k + dk) * st[2]] == q0))
          return false;
    return true;
  };
  // Maxima of E^2 (sqrt is monotonic and correctly rounded: sqrt of the largest E^2 is the
  // largest E, to the bit), one sqrt per block.
  double r[256];  // one row (n(0) <= 64 + 2 * 4 guard zones)
  double wide = 0.0, inner = 0.0;
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j) {
      if (quiet_stencil(j, k)) continue;
      const bool row_inside =
          (k >= s.g(2) && k < s.g(2) + s.ni(2)) && (j >= s.g(1) && j < s.g(1) + s.ni(1));
      lohner_row<ND>(q, st, j * st[1] + k * st[2], lo[0], hi[0], filter, r);
      for (int i = lo[0]; i < hi[0]; ++i) wide = std::max(wide, r[i]);
      if (row_inside) {
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) inner = std::max(inner, r[i]);
        // The caller only asks whether the interior's largest error passes stop_above:
        // once it does, the rest of the block cannot change the answer.
        if (std::sqrt(inner) > stop_above) return {std::sqrt(inner), std::sqrt(wide)};
      }
    }
  return {std::sqrt(inner), std::sqrt(wide)};
}

}  // namespace detail

/// q: one variable over the whole block array (guards filled, at least ext + 1 layers),
/// indexed by cell number: a FieldView of either layout, or a contiguous array. With
/// `stop_above`, the scan may stop once the interior's error passes it: `interior` is then
/// some value above it (not the largest) and `widened` a partial maximum, for a caller
/// that refines on interior > stop_above and looks no further (refinement marking).
template <class Field>
LohnerErrors lohner_errors(const Field& q, const BlockShape& s, double filter, int ext,
                           double stop_above = std::numeric_limits<double>::infinity()) {
  switch (s.ndim) {
    case 1:
      return detail::lohner_errors_nd<1>(q, s, filter, ext, stop_above);
    case 2:
      return detail::lohner_errors_nd<2>(q, s, filter, ext, stop_above);
    default:
      return detail::lohner_errors_nd<3>(q, s, filter, ext, stop_above);
  }
}

/// The largest error over the block's interior cells.
template <class Field>
double lohner_error(const Field& q, const BlockShape& s, double filter) {
  return lohner_errors(q, s, filter, 0).interior;
}

}  // namespace tessera::mesh

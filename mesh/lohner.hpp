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

#include "mesh/block_view.hpp"

namespace tessera::mesh {

/// Both maxima of one pass: over the interior cells, and over the interior widened by
/// `ext` guard layers on each active axis (clamped to ng - 1; equal to the first for 0).
struct LohnerErrors {
  double interior = 0.0;
  double widened = 0.0;
};

/// q: one variable over the whole block array (guards filled, at least ext + 1 layers),
/// indexed by cell number: a FieldView of either layout, or a contiguous array.
template <class Field>
LohnerErrors lohner_errors(const Field& q, const BlockShape& s, double filter, int ext) {
  const int nd = s.ndim;
  const long st[3] = {1, s.n(0), long(s.n(0)) * s.n(1)};
  ext = std::clamp(ext, 0, std::max(s.ng - 1, 0));
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    const int e = a < nd ? ext : 0;
    lo[a] = s.g(a) - e;
    hi[a] = s.g(a) + s.ni(a) + e;
  }
  LohnerErrors out;
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j) {
      const bool row_inside =
          (k >= s.g(2) && k < s.g(2) + s.ni(2)) && (j >= s.g(1) && j < s.g(1) + s.ni(1));
      for (int i = lo[0]; i < hi[0]; ++i) {
        const long c = i + j * st[1] + k * st[2];
        double num = 0.0, den = 0.0;
        for (int a = 0; a < nd; ++a)
          for (int b = 0; b < nd; ++b) {
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
        if (den > 0.0) {
          const double e = std::sqrt(num / den);
          out.widened = std::max(out.widened, e);
          if (row_inside && i >= s.g(0) && i < s.g(0) + s.ni(0))
            out.interior = std::max(out.interior, e);
        }
      }
    }
  return out;
}

/// The largest error over the block's interior cells.
template <class Field>
double lohner_error(const Field& q, const BlockShape& s, double filter) {
  return lohner_errors(q, s, filter, 0).interior;
}

}  // namespace tessera::mesh

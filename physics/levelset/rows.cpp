// The level set's WENO5 row kernels (rows.hpp). The file is compiled once per Highway
// target (foreach_target.h, as the Helmholtz kernels): each copy sits under that target's
// `#pragma GCC target`, so GCC vectorises the same branch-free loops for SSE4, AVX2 or
// AVX-512 (NEON or SVE on Arm), and HWY_DYNAMIC_DISPATCH runs the best one the processor
// has (or the one perf.simd / TESSERA_SIMD forces). Plain C++ on doubles, built without
// fused multiply-add contraction (CMakeLists.txt, as levelset.cpp): every target computes
// the same IEEE operations in the same order per zone, so every target gives the same bits
// (tests/unit/test_levelset_rows.cpp on every target, also under make test-arm on SVE2,
// SVE, NEON and scalar; tests/python/test_levelset.py forces each x86 target in whole runs).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/levelset/rows.cpp"
#include "physics/levelset/rows.hpp"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

HWY_BEFORE_NAMESPACE();
namespace tessera::levelset {
namespace HWY_NAMESPACE {
namespace {

inline double sq(double a) {
  return a * a;
}

/// Jiang & Peng's WENO5 one-sided derivative from five divided differences v1..v5, ordered
/// from the upwind side (Jiang & Shu's smoothness indicators and optimal weights 0.1, 0.6,
/// 0.3; epsilon relative to the differences, so the weights do not depend on phi's scale,
/// and at least 1e-40: the weights are products of four (eps + s)'s, which with 1e-99
/// underflowed to 0 / 0 where the five differences are all 0, phi flat along the row).
inline double weno5(double v1, double v2, double v3, double v4, double v5) {
  const double s1 = 13.0 / 12.0 * sq(v1 - 2 * v2 + v3) + 0.25 * sq(v1 - 4 * v2 + 3 * v3);
  const double s2 = 13.0 / 12.0 * sq(v2 - 2 * v3 + v4) + 0.25 * sq(v2 - v4);
  const double s3 = 13.0 / 12.0 * sq(v3 - 2 * v4 + v5) + 0.25 * sq(3 * v3 - 4 * v4 + v5);
  const double eps =
      1e-6 * std::max(std::max(std::max(v1 * v1, v2 * v2), std::max(v3 * v3, v4 * v4)), v5 * v5) +
      1e-40;
  // The weights gamma_k / (eps + s_k)^2 normalised, with one division: each multiplied by
  // the product of the three (eps + s)^2.
  const double q1 = sq(eps + s1), q2 = sq(eps + s2), q3 = sq(eps + s3);
  const double a1 = 0.1 * q2 * q3, a2 = 0.6 * q1 * q3, a3 = 0.3 * q1 * q2;
  const double p1 = v1 / 3.0 - 7.0 / 6.0 * v2 + 11.0 / 6.0 * v3;
  const double p2 = -v2 / 6.0 + 5.0 / 6.0 * v3 + v4 / 3.0;
  const double p3 = v3 / 3.0 + 5.0 / 6.0 * v4 - v5 / 6.0;
  return (a1 * p1 + a2 * p2 + a3 * p3) / (a1 + a2 + a3);
}

/// The six divided differences around q along stride st: m3 = (q[-2] - q[-3]) / dx, m2,
/// m1 = (q[0] - q[-1]) / dx, p0 = (q[1] - q[0]) / dx, p1, p2 (1 / dx = idx).
struct Differences {
  double m3, m2, m1, p0, p1, p2;
};
inline Differences differences(const double* q, long st, double idx) {
  return {(q[-2 * st] - q[-3 * st]) * idx, (q[-st] - q[-2 * st]) * idx,
          (q[0] - q[-st]) * idx,           (q[st] - q[0]) * idx,
          (q[2 * st] - q[st]) * idx,       (q[3 * st] - q[2 * st]) * idx};
}

}  // namespace

// The loops have no branch: the compiler vectorises them.
void OneSidedRow(const double* __restrict p, long c0, long st, int n, double idx,
                 double* __restrict dm, double* __restrict dp) {
  const double* r = p + c0;
  for (int i = 0; i < n; ++i) {
    const Differences d = differences(r + i, st, idx);
    dm[i] = weno5(d.m3, d.m2, d.m1, d.p0, d.p1);
    dp[i] = weno5(d.p2, d.p1, d.p0, d.m1, d.m2);
  }
}

// The five differences chosen before the one weno5.
void UpwindRow(const double* __restrict p, long c0, long st, int n, double idx,
               const double* __restrict v, double* __restrict acc) {
  const double* r = p + c0;
  for (int i = 0; i < n; ++i) {
    const Differences d = differences(r + i, st, idx);
    const bool back = v[i] > 0;
    acc[i] -= v[i] * weno5(back ? d.m3 : d.p2, back ? d.m2 : d.p1, back ? d.m1 : d.p0,
                           back ? d.p0 : d.m1, back ? d.p1 : d.m2);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::levelset
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::levelset {

HWY_EXPORT(OneSidedRow);
HWY_EXPORT(UpwindRow);

void one_sided_row(const double* p, long c0, long st, int n, double idx, double* dm, double* dp) {
  HWY_DYNAMIC_DISPATCH(OneSidedRow)(p, c0, st, n, idx, dm, dp);
}

void upwind_row(const double* p, long c0, long st, int n, double idx, const double* v,
                double* acc) {
  HWY_DYNAMIC_DISPATCH(UpwindRow)(p, c0, st, n, idx, v, acc);
}

}  // namespace tessera::levelset
#endif  // HWY_ONCE

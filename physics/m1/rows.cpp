// M1's plane kernel (rows.hpp). The file is compiled once per Highway target
// (foreach_target.h, as the level set's rows): each copy sits under that target's
// `#pragma GCC target`, so GCC vectorises the same branch-free loops over the plane's
// lines for SSE4, AVX2 or AVX-512 (NEON or SVE on Arm), and HWY_DYNAMIC_DISPATCH runs the
// best one the processor has (or the one perf.simd / TESSERA_SIMD forces). Built without
// fused multiply-add contraction (CMakeLists.txt): every target computes the same IEEE
// operations in the same order per face, so every target gives the same bits
// (tests/unit/test_m1_rows.cpp on every target; test_m1.py's runs).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/m1/rows.cpp"
#include "physics/m1/rows.hpp"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

HWY_BEFORE_NAMESPACE();
namespace tessera::m1 {
namespace HWY_NAMESPACE {

void PlaneFluxes(const Plane& P, double* const f[4]) {
  const int nl = P.nl, g0 = P.g0, n = P.n, a = P.axis;
  const long ss = P.ss;
  const double c = P.c;
  double* sl[4];    // the current cell row's slopes
  double* plus[4];  // the previous cell row's state at its upper face
  double* ul[4];
  double* ur[4];
  double* fl[4];
  double* fr[4];
  for (int q = 0; q < 4; ++q) {
    sl[q] = P.scratch + std::size_t(q) * nl;
    plus[q] = P.scratch + std::size_t(4 + q) * nl;
    ul[q] = P.scratch + std::size_t(8 + q) * nl;
    ur[q] = P.scratch + std::size_t(12 + q) * nl;
    fl[q] = P.scratch + std::size_t(16 + q) * nl;
    fr[q] = P.scratch + std::size_t(20 + q) * nl;
  }
  double* ok = P.scratch + std::size_t(24) * nl;
  double* eps = P.scratch + std::size_t(25) * nl;
  // Cell rows g0 - 1 .. g0 + n: their slopes, limited; face s - 1/2 once row s is known.
  for (int s = g0 - 1; s <= g0 + n; ++s) {
    const double* x[4];
    for (int q = 0; q < 4; ++q) {
      x[q] = P.u[q] + s * ss;
      const double* __restrict xc = x[q];
      const double* __restrict xm = x[q] - ss;
      const double* __restrict xp = x[q] + ss;
      double* __restrict d = sl[q];
      if (P.mc) {
        for (int l = 0; l < nl; ++l) {
          const double lft = xc[l] - xm[l], rgt = xp[l] - xc[l];
          const double m = std::min(std::min(2.0 * std::fabs(lft), 2.0 * std::fabs(rgt)),
                                    0.5 * std::fabs(lft + rgt));
          d[l] = lft * rgt > 0.0 ? std::copysign(m, lft) : 0.0;
        }
      } else {
        for (int l = 0; l < nl; ++l) d[l] = 0.5 * (xp[l] - xm[l]);
      }
    }
    // Realizable face states: a branch-free test of both faces of every cell (|F|^2 <=
    // (cE)^2, E >= 0), then the bisection on the slopes' scale for the few that fail
    // (the realizable set is convex: Olbrant et al.).
    int bad = 0;  // an int OR: GCC vectorises no in-order double sum
    for (int l = 0; l < nl; ++l) {
      // The lower face (side -0.5), then the upper one (+0.5).
      const double e0 = x[0][l] + -0.5 * sl[0][l];
      const double x0 = x[1][l] + -0.5 * sl[1][l], y0 = x[2][l] + -0.5 * sl[2][l],
                   z0 = x[3][l] + -0.5 * sl[3][l];
      const double e1 = x[0][l] + 0.5 * sl[0][l];
      const double x1 = x[1][l] + 0.5 * sl[1][l], y1 = x[2][l] + 0.5 * sl[2][l],
                   z1 = x[3][l] + 0.5 * sl[3][l];
      const bool g0k = (e0 >= 0.0) & (x0 * x0 + y0 * y0 + z0 * z0 <= c * c * e0 * e0);
      const bool g1k = (e1 >= 0.0) & (x1 * x1 + y1 * y1 + z1 * z1 <= c * c * e1 * e1);
      ok[l] = (g0k & g1k) ? 1.0 : 0.0;
      bad |= (g0k & g1k) ? 0 : 1;
    }
    const bool any_bad = bad != 0;
    if (any_bad)
      for (int l = 0; l < nl; ++l) {
        if (ok[l] != 0.0) continue;
        auto faces_ok = [&](double t) {
          for (double side : {-0.5, 0.5}) {
            const double e = x[0][l] + side * t * sl[0][l];
            double f2 = 0.0;
            for (int q = 1; q < 4; ++q) {
              const double v = x[q][l] + side * t * sl[q][l];
              f2 += v * v;
            }
            if (!(e >= 0.0 && std::sqrt(f2) <= c * e)) return false;
          }
          return true;
        };
        if (faces_ok(1.0)) continue;
        double lo = 0.0, hi = 1.0;
        if (!faces_ok(0.0)) hi = 0.0;
        for (int it = 0; it < 30 && hi > 0.0; ++it) {
          const double mid = 0.5 * (lo + hi);
          (faces_ok(mid) ? lo : hi) = mid;
        }
        for (int q = 0; q < 4; ++q) sl[q][l] *= lo;
      }
    if (s >= g0) {
      // Face s - 1/2: the previous row's upper state and this row's lower one.
      for (int q = 0; q < 4; ++q) {
        const double* __restrict xc = x[q];
        const double* __restrict d = sl[q];
        const double* __restrict pp = plus[q];
        double* __restrict l0 = ul[q];
        double* __restrict r0 = ur[q];
        for (int l = 0; l < nl; ++l) {
          l0[l] = pp[l];
          r0[l] = xc[l] - 0.5 * d[l];
        }
      }
      row_flux(P.closure, c, ul, fl, a, 0, nl);
      row_flux(P.closure, c, ur, fr, a, 0, nl);
      if (P.chi != nullptr) {
        const double* __restrict cm = P.chi + (s - 1) * ss;
        const double* __restrict cc = P.chi + s * ss;
        for (int l = 0; l < nl; ++l) {
          const double chi = 0.5 * (cm[l] + cc[l]);
          eps[l] = chi * P.dx > 1.0 ? 1.0 / (chi * P.dx) : 1.0;
        }
      } else {
        for (int l = 0; l < nl; ++l) eps[l] = 1.0;
      }
      for (int q = 0; q < 4; ++q) {
        double* __restrict h = f[q] + std::size_t(s - g0) * nl;
        const double* __restrict lf = fl[q];
        const double* __restrict rf = fr[q];
        const double* __restrict l0 = ul[q];
        const double* __restrict r0 = ur[q];
        for (int l = 0; l < nl; ++l)
          h[l] = 0.5 * (lf[l] + rf[l]) - 0.5 * eps[l] * c * (r0[l] - l0[l]);
      }
    }
    for (int q = 0; q < 4; ++q) {
      const double* __restrict xc = x[q];
      const double* __restrict d = sl[q];
      double* __restrict pp = plus[q];
      for (int l = 0; l < nl; ++l) pp[l] = xc[l] + 0.5 * d[l];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::m1
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::m1 {

HWY_EXPORT(PlaneFluxes);

void plane_fluxes(const Plane& p, double* const f[4]) {
  HWY_DYNAMIC_DISPATCH(PlaneFluxes)(p, f);
}

}  // namespace tessera::m1
#endif  // HWY_ONCE

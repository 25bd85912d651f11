#pragma once
// The hydro row kernels in plain C++: the reference that the Highway kernels
// (kernels_simd.hpp, the same operations on vectors of zones) are tested against, and what
// runs with perf.simd = "scalar" (the compiler may vectorise them for the build's -march).
// Layout-free: on one x-row of the primitive array W ([nr+2][N], the row starting at cell
// rb) and on row buffers [nr][n0] indexed by i; zones [i0, i1). Used by hydro.cpp's block
// update (BlockUpdate::run), where the steps are numbered.
#include <cmath>
#include <cstddef>

#include "physics/hydro/reconstruct.hpp"
#include "physics/hydro/riemann.hpp"

namespace tessera::hydro {

/// One row of faces for the Riemann kernels (ref::riemann, simd::riemann): left and right
/// primitive states (rho, vn, vt1, vt2, p), each side's Gamma1 and 1/(game - 1) arrays
/// (unused when uniform: ugc, uge), and the fluxes (mass, normal and transverse momenta,
/// energy).
struct RiemannRow {
  int n = 0;
  const double *ld, *lu, *lt1, *lt2, *lp;
  const double *rd, *ru, *rt1, *rt2, *rp;
  double *fd, *fn, *ft1, *ft2, *fe;
  const double *lgc = nullptr, *lge = nullptr, *rgc = nullptr, *rge = nullptr;
  double ugc = 0, uge = 0;
};

}  // namespace tessera::hydro

namespace tessera::hydro::ref {

// Step 2: limited slopes dW along the axis of stride st (limiters: reconstruct.hpp).
// The five flow channels in a loop of constant trip count (the compiler fuses and unrolls
// it: a runtime count cost ~25 % in this kernel), the mass scalars after.
template <Limiter LIM>
inline void slopes_row(const double* __restrict W, std::size_t N, std::size_t rb, std::ptrdiff_t st,
                       int i0, int i1, double* __restrict d, int n0, int nr) {
  for (int v = 0; v < 5; ++v) {
    const double* __restrict q = W + v * N + rb;
    double* __restrict dv = d + v * n0;
    for (int i = i0; i < i1; ++i) dv[i] = limited_slope<LIM>(q[i - st], q[i], q[i + st]);
  }
  for (int v = 5; v < nr; ++v) {
    const double* __restrict q = W + v * N + rb;
    double* __restrict dv = d + v * n0;
    for (int i = i0; i < i1; ++i) dv[i] = limited_slope<LIM>(q[i - st], q[i], q[i + st]);
  }
}

// Step 3: the MUSCL-Hancock half step (Toro 2009, §14.4; Colella 1990)
//   W^{n+1/2} = W - dt/2 sum_a A_a(W) dW_a/dx_a,
// with f[a] = dt / (2 dx_a) and the slopes sl[a] ([3][nr][n0]); the result goes to H.
// ND active axes; one loop, the sums kept in registers (per zone: 0, then + axis 0, + axis
// 1, + axis 2, in that order). rho c^2 = gamc p per zone. Mass scalars X follow
// dX/dt + v . grad X = 0 (channels 5..nr-1).
// UG: a uniform Gamma1 ugc instead of W's channel.
template <int ND, bool UG>
inline void hancock_row(const double* __restrict W, std::size_t N, std::size_t rb,
                        const double* __restrict sl, int i0, int i1, int n0, const double f[3],
                        int nr, double ugc, double* H) {
  const double* __restrict gcw = W + std::size_t(nr) * N + rb;
  const double* __restrict r = W + rb;
  const double* __restrict vx = W + N + rb;
  const double* __restrict vy = W + 2 * N + rb;
  const double* __restrict vz = W + 3 * N + rb;
  const double* __restrict p = W + 4 * N + rb;
  // Slopes: a<axis><variable> (variables r, x, y, z, p).
  const std::size_t R = std::size_t(nr) * n0;
  const double* __restrict a0r = sl + 0 * n0;
  const double* __restrict a0x = sl + 1 * n0;
  const double* __restrict a0y = sl + 2 * n0;
  const double* __restrict a0z = sl + 3 * n0;
  const double* __restrict a0p = sl + 4 * n0;
  const double* __restrict a1r = sl + 1 * R + 0 * n0;
  const double* __restrict a1x = sl + 1 * R + 1 * n0;
  const double* __restrict a1y = sl + 1 * R + 2 * n0;
  const double* __restrict a1z = sl + 1 * R + 3 * n0;
  const double* __restrict a1p = sl + 1 * R + 4 * n0;
  const double* __restrict a2r = sl + 2 * R + 0 * n0;
  const double* __restrict a2x = sl + 2 * R + 1 * n0;
  const double* __restrict a2y = sl + 2 * R + 2 * n0;
  const double* __restrict a2z = sl + 2 * R + 3 * n0;
  const double* __restrict a2p = sl + 2 * R + 4 * n0;
  double* __restrict h_r = H;
  double* __restrict h_x = H + n0;
  double* __restrict h_y = H + 2 * n0;
  double* __restrict h_z = H + 3 * n0;
  double* __restrict h_p = H + 4 * n0;
  const double f0 = f[0], f1 = f[1], f2 = f[2];
  for (int i = i0; i < i1; ++i) {
    const double gc = UG ? ugc : gcw[i];
    const double ir = 1.0 / r[i];  // one division for the nd pressure-gradient terms
    double hr = 0.0, hx = 0.0, hy = 0.0, hz = 0.0, hp = 0.0;
    // Axis a adds A_a(W) dW_a; its pressure gradient enters only the velocity along a.
    hr += f0 * (vx[i] * a0r[i] + r[i] * a0x[i]);
    hx += f0 * (vx[i] * a0x[i] + a0p[i] * ir);
    hy += f0 * (vx[i] * a0y[i] + 0.0);
    hz += f0 * (vx[i] * a0z[i] + 0.0);
    hp += f0 * (vx[i] * a0p[i] + gc * p[i] * a0x[i]);
    if constexpr (ND > 1) {
      hr += f1 * (vy[i] * a1r[i] + r[i] * a1y[i]);
      hx += f1 * (vy[i] * a1x[i] + 0.0);
      hy += f1 * (vy[i] * a1y[i] + a1p[i] * ir);
      hz += f1 * (vy[i] * a1z[i] + 0.0);
      hp += f1 * (vy[i] * a1p[i] + gc * p[i] * a1y[i]);
    }
    if constexpr (ND > 2) {
      hr += f2 * (vz[i] * a2r[i] + r[i] * a2z[i]);
      hx += f2 * (vz[i] * a2x[i] + 0.0);
      hy += f2 * (vz[i] * a2y[i] + 0.0);
      hz += f2 * (vz[i] * a2z[i] + a2p[i] * ir);
      hp += f2 * (vz[i] * a2p[i] + gc * p[i] * a2z[i]);
    }
    h_r[i] = r[i] - hr;
    h_x[i] = vx[i] - hx;
    h_y[i] = vy[i] - hy;
    h_z[i] = vz[i] - hz;
    h_p[i] = p[i] - hp;
  }
  for (int q = 5; q < nr; ++q) {
    const double* __restrict x = W + std::size_t(q) * N + rb;
    const double* __restrict s0 = sl + q * n0;
    const double* __restrict s1 = sl + R + q * n0;
    const double* __restrict s2 = sl + 2 * R + q * n0;
    double* __restrict h = H + q * n0;
    for (int i = i0; i < i1; ++i) {
      double hq = f0 * (vx[i] * s0[i]);
      if constexpr (ND > 1) hq += f1 * (vy[i] * s1[i]);
      if constexpr (ND > 2) hq += f2 * (vz[i] * s2[i]);
      h[i] = x[i] - hq;
    }
  }
}

// Step 4a (PLM): the states at each zone's low face (lo) and high face (hi) along one
// axis, B -/+ dW/2, where B is the half-step state or W itself (variable stride bs).
inline void plm_states_row(const double* __restrict B, std::size_t bs, const double* __restrict d,
                           int i0, int i1, int n0, int nr, double* __restrict lo,
                           double* __restrict hi) {
  for (int v = 0; v < 5; ++v) {
    const double* __restrict b = B + v * bs;
    const double* __restrict dv = d + v * n0;
    double* __restrict m = lo + v * n0;
    double* __restrict p = hi + v * n0;
    for (int i = i0; i < i1; ++i) {
      m[i] = b[i] - 0.5 * dv[i];
      p[i] = b[i] + 0.5 * dv[i];
    }
  }
  for (int v = 5; v < nr; ++v) {
    const double* __restrict b = B + v * bs;
    const double* __restrict dv = d + v * n0;
    double* __restrict m = lo + v * n0;
    double* __restrict p = hi + v * n0;
    for (int i = i0; i < i1; ++i) {
      m[i] = b[i] - 0.5 * dv[i];
      p[i] = b[i] + 0.5 * dv[i];
    }
  }
}

// Step 4a (PPM): the CW84 parabola's edge values (ppm_faces) of channels [0, nr) of W
// ([nr][N], the row from cell rb) along the axis of stride st, zones [i0, i1), into lo and
// hi ([nr][n0]).
inline void ppm_states_row(const double* __restrict W, std::size_t N, std::size_t rb,
                           std::ptrdiff_t st, int i0, int i1, int n0, int nr, double* __restrict lo,
                           double* __restrict hi) {
  for (int v = 0; v < 5; ++v) {
    const double* __restrict q = W + v * N + rb;
    double* __restrict m = lo + v * n0;
    double* __restrict p = hi + v * n0;
    for (int i = i0; i < i1; ++i)
      ppm_faces(q[i - 2 * st], q[i - st], q[i], q[i + st], q[i + 2 * st], m[i], p[i]);
  }
  for (int v = 5; v < nr; ++v) {
    const double* __restrict q = W + v * N + rb;
    double* __restrict m = lo + v * n0;
    double* __restrict p = hi + v * n0;
    for (int i = i0; i < i1; ++i)
      ppm_faces(q[i - 2 * st], q[i - st], q[i], q[i + st], q[i + 2 * st], m[i], p[i]);
  }
}

// Step 4b: first order on a side whose density or pressure is not positive: the state s
// becomes the zone average w. GCC 12 vectorises this loop only out of line, with
// restrict-qualified parameters and the loads hoisted (otherwise "no vectype").
[[gnu::noinline]] inline void fallback_row(double* __restrict s0, double* __restrict s1,
                                           double* __restrict s2, double* __restrict s3,
                                           double* __restrict s4, const double* __restrict w0,
                                           const double* __restrict w1, const double* __restrict w2,
                                           const double* __restrict w3, const double* __restrict w4,
                                           int i0, int i1, double smalld, double smallp) {
  for (int i = i0; i < i1; ++i) {
    const double a0 = s0[i], a1 = s1[i], a2 = s2[i], a3 = s3[i], a4 = s4[i];
    const double b0 = w0[i], b1 = w1[i], b2 = w2[i], b3 = w3[i], b4 = w4[i];
    const bool ok = a0 > smalld && a4 > smallp;
    s0[i] = ok ? a0 : b0;
    s1[i] = ok ? a1 : b1;
    s2[i] = ok ? a2 : b2;
    s3[i] = ok ? a3 : b3;
    s4[i] = ok ? a4 : b4;
  }
}

// Step 4b for mass scalars (before fallback_row, which rewrites the density and pressure
// it tests): X falls back where the rest of the state does.
inline void fallback_scalar_row(double* __restrict sx, const double* __restrict wx,
                                const double* __restrict s0, const double* __restrict s4, int i0,
                                int i1, double smalld, double smallp) {
  for (int i = i0; i < i1; ++i) {
    const bool ok = s0[i] > smalld && s4[i] > smallp;
    sx[i] = ok ? sx[i] : wx[i];
  }
}

// Step 5: fluxes through n faces from left states l and right states r (rho, vn, vt1,
// vt2, p) into f, with each side's zone Gamma1 (lgc, rgc: c^2 = gamc p / rho) and energy
// factor (lge, rge = 1 / (game - 1): rho eps = p lge). Branch-free per face (riemann.hpp),
// so the loop vectorises. The sound speeds and Roe weights take one division
// (face_speeds), HLLC's two more quotients one more.
// UG: a uniform Gamma1 ugc and energy factor uge for both sides instead of the arrays.
template <bool HLLC, bool UG>
inline void riemann_faces(int n, const double* __restrict ld, const double* __restrict lu,
                          const double* __restrict lt1, const double* __restrict lt2,
                          const double* __restrict lp, const double* __restrict rd,
                          const double* __restrict ru, const double* __restrict rt1,
                          const double* __restrict rt2, const double* __restrict rp,
                          double* __restrict fd, double* __restrict fn, double* __restrict ft1,
                          double* __restrict ft2, double* __restrict fe,
                          const double* __restrict lgc, const double* __restrict lge,
                          const double* __restrict rgc, const double* __restrict rge, double ugc,
                          double uge) {
  for (int t = 0; t < n; ++t) {
    const double lg = UG ? ugc : lgc[t], rg = UG ? ugc : rgc[t];
    const double le = UG ? uge : lge[t], re = UG ? uge : rge[t];
    double cl, cr;
    RoeWeights w;
    face_speeds(ld[t], rd[t], lg * lp[t], rg * rp[t], cl, cr, w);
    const FaceState L{ld[t], lu[t], lt1[t], lt2[t], lp[t], lp[t] * le, cl};
    const FaceState R{rd[t], ru[t], rt1[t], rt2[t], rp[t], rp[t] * re, cr};
    const SignalSpeeds s = signal_speeds(L, R, w);
    const Flux x = HLLC ? hllc_from_speeds(L, R, s) : hlle_from_speeds(L, R, s);
    fd[t] = x.d;
    fn[t] = x.mn;
    ft1[t] = x.mt1;
    ft2[t] = x.mt2;
    fe[t] = x.e;
  }
}

/// riemann_faces for a RiemannRow: HLLC (hllc) or HLLE, uniform gamma or the arrays.
inline void riemann(bool hllc, bool uniform, const RiemannRow& r) {
  auto solve = hllc ? (uniform ? riemann_faces<true, true> : riemann_faces<true, false>)
                    : (uniform ? riemann_faces<false, true> : riemann_faces<false, false>);
  solve(r.n, r.ld, r.lu, r.lt1, r.lt2, r.lp, r.rd, r.ru, r.rt1, r.rt2, r.rp, r.fd, r.fn, r.ft1,
        r.ft2, r.fe, r.lgc, r.lge, r.rgc, r.rge, r.ugc, r.uge);
}

}  // namespace tessera::hydro::ref

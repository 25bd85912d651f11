#pragma once
// The hydro unit's block update (physics/hydro/step.cpp's, included by it alone): the
// primitives of a block and the unsplit MUSCL-Hancock / PPM update of a block row by row
// with its boundary and mass fluxes (the time-step rate and the state check:
// rate_kernels.hpp). References: Toro (2009) §14.4, §10.4, §10.3; Colella (1990);
// Colella & Woodward (1984).
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <new>
#include <type_traits>

#include "mesh/mesh.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/hydro/kernels_ref.hpp"
#include "physics/hydro/kernels_simd.hpp"
#include "physics/hydro/reconstruct.hpp"
#include "physics/hydro/riemann.hpp"
#include "physics/hydro/scratch.hpp"

namespace tessera::hydro::detail {
// Internal linkage, as when these lived in hydro.cpp's anonymous namespace: the header is
// step.cpp's alone (the same code generation, the same bits and speed).
namespace {

using mesh::BlockShape;
using mesh::BlockView;
using mesh::Layout;
using ref::fallback_row;
using ref::fallback_scalar_row;
using ref::hancock_row;
using ref::plm_states_row;
using ref::ppm_states_row;
using ref::slopes_row;

// Where a block's boundary fluxes go (FluxRegister::face: [v][t2][t1] per face).
struct BoundaryFluxes {
  double* face[6];
  std::size_t per_var;  // doubles per variable on one face
};

// Where a block's interior face mass fluxes go (the gravity unit's flux energy source), or
// nowhere (f null). Runge-Kutta stages add w F (the stage's weight in the step's
// effective flux); a single stage sets them (w = 1). The boundary faces come from the
// flux register after correction (Hydro::store_boundary_mass_fluxes).
struct MassFluxOut {
  double* f = nullptr;
  const gravity::FaceLayout* layout = nullptr;
  double w = 1.0;
  bool add = false;
  // n faces of axis a from face (i, j, k) on, consecutive along x (interior numbering).
  void put(int a, int i, int j, int k, const double* __restrict F, int n) const {
    double* __restrict d = f + layout->index(a, i, j, k);
    if (add)
      for (int t = 0; t < n; ++t) d[t] += w * F[t];
    else
      for (int t = 0; t < n; ++t) d[t] = w * F[t];
  }
};

// ---- Per-block kernels. Each takes a view and never knows the layout: it indexes
// u(v, i, j, k) or walks rows with u.row(v, j, k). Cells are numbered
// c = i + n0 (j + n1 k) in both layouts, so row(v, 0, 0)[c] walks a whole block. The
// arithmetic between reading unk and writing it back runs on layout-free scratch
// (primitives W, half-step states H, row buffers), so both layouts execute the same
// floating-point operations in the same order and give the same bits.
// Cost of zone-major here: step 1 loads each variable with stride nvar (gathers) and the
// update read-modify-writes strided rows, ~15-25 % more time in the flux pass than
// var-major on sedov_3d_uniform 128^3 (Xeon, AVX-512 CPU, GCC 12); its guard fill is
// ~1/3 cheaper (an x-row of all variables is contiguous), so the step is ~10 % slower.

// Step 1: primitives (rho, v, p, X, gamc, 1/(game-1)) on the whole block array, guards
// included. An EOS whose Gamma1 and game vary (Helmholtz) runs once per zone per stage
// (after it): p, gamc and game come from its state in unk, which guard fills carry to the
// guard zones. A uniform-gamma EOS (the gamma law) is cheaper to evaluate than to move:
// p = (game - 1) rho e here. Mass scalars are rho*X in unk during advance(). The energy
// gamma is kept as 1/(game-1), rho eps per unit p, so the Riemann solvers multiply.
// The Highway kernel simd::primitives computes it (the same operations in the same order),
// the loops below are the reference (perf.simd = "scalar"). The uniform-gamma part
// (restrict-qualified parameters: GCC 12 vectorises the loop only so).
template <class Row>
void primitives_uniform(std::size_t N, Row d, Row mx, Row my, Row mz, Row e, double* __restrict wr,
                        double* __restrict wx, double* __restrict wy, double* __restrict wz,
                        double* __restrict wp, double gm1, double smalld, double smallp) {
  for (std::size_t c = 0; c < N; ++c) {
    const double r = std::max(d[c], smalld);
    const double ir = 1.0 / r;
    const double vx = mx[c] * ir, vy = my[c] * ir, vz = mz[c] * ir;
    wr[c] = r;
    wx[c] = vx;
    wy[c] = vy;
    wz[c] = vz;
    const double ein = e[c] * ir - 0.5 * (vx * vx + vy * vy + vz * vz);
    wp[c] = std::max(gm1 * r * ein, smallp);
  }
}

template <Layout L>
void primitives(const BlockView<L>& u, const BlockShape& s, const Indices& at, double smalld,
                double smallp, Hydro::Scratch& S) {
  const std::size_t N = s.cells();
  const int nr = S.nr;
  const auto d = u.row(DENS, 0, 0), mx = u.row(MOMX, 0, 0), my = u.row(MOMY, 0, 0),
             mz = u.row(MOMZ, 0, 0), e = u.row(ETOT, 0, 0);
  double* __restrict W = S.w;
  double* __restrict wr = W;
  double* __restrict wx = W + N;
  double* __restrict wy = W + 2 * N;
  double* __restrict wz = W + 3 * N;
  double* __restrict wp = W + 4 * N;
  double* __restrict wgc = W + std::size_t(nr) * N;
  double* __restrict wge = W + std::size_t(nr + 1) * N;
  if (!tessera::simd::reference()) {
    // The Highway kernel (kernels_simd.hpp) on contiguous arrays: unk's own rows in a
    // var-major block; in a zone-major one each variable gathered into the channel it
    // becomes (the kernel works in place), so both layouts do the same arithmetic.
    auto flat = [&](auto row, double* dst) -> const double* {
      if constexpr (L == Layout::var_major) {
        (void)dst;
        return row;
      } else {
        for (std::size_t c = 0; c < N; ++c) dst[c] = row[c];
        return dst;
      }
    };
    simd::PrimitivesRow a;
    a.n = N;
    a.d = flat(d, wr);
    a.mx = flat(mx, wx);
    a.my = flat(my, wy);
    a.mz = flat(mz, wz);
    a.wr = wr;
    a.wx = wx;
    a.wy = wy;
    a.wz = wz;
    a.wp = wp;
    a.uniform = at.uniform;
    a.smalld = smalld;
    a.smallp = smallp;
    if (at.uniform) {
      a.e = flat(e, wp);
      a.gm1 = at.ugame - 1.0;
    } else {
      a.pres = flat(u.row(at.pres, 0, 0), wp);
      a.gamc = flat(u.row(at.gamc, 0, 0), wgc);
      a.game = flat(u.row(at.game, 0, 0), wge);
      a.wgc = wgc;
      a.wge = wge;
    }
    simd::primitives(a);
    for (std::size_t q = 0; q < at.scalars.size(); ++q) {
      double* wq = W + (5 + q) * N;
      simd::divide(N, flat(u.row(at.scalars[q], 0, 0), wq), wr, wq);
    }
    return;
  }
  if (at.uniform) {
    // p = (game - 1) rho e (game's definition), the values the EOS gives bit for bit;
    // gamc and 1/(game-1) are the kernels' constants (no channels).
    primitives_uniform(N, d, mx, my, mz, e, wr, wx, wy, wz, wp, at.ugame - 1.0, smalld, smallp);
  } else {
    // Any other EOS: rho and v from the conserved variables, p, gamc and game from the
    // EOS state in unk, guard zones included (guard-filled, refreshed after every stage).
    const auto pr = u.row(at.pres, 0, 0), gc = u.row(at.gamc, 0, 0), ge = u.row(at.game, 0, 0);
    for (std::size_t c = 0; c < N; ++c) {
      const double r = std::max(d[c], smalld);
      const double ir = 1.0 / r;
      wr[c] = r;
      wx[c] = mx[c] * ir;
      wy[c] = my[c] * ir;
      wz[c] = mz[c] * ir;
      wp[c] = std::max(double(pr[c]), smallp);
      wgc[c] = gc[c];
      wge[c] = 1.0 / (ge[c] - 1.0);
    }
  }
  for (std::size_t q = 0; q < at.scalars.size(); ++q) {
    const auto x = u.row(at.scalars[q], 0, 0);
    double* __restrict wq = W + (5 + q) * N;
    for (std::size_t c = 0; c < N; ++c) wq[c] = x[c] / wr[c];
  }
}

// Step 4c for mass scalars: face values clamped to the range of the zone and its face
// neighbours along every active axis (the Hancock half step's transverse terms can carry
// a face value past it, and then X past 1 in a 2-D flow); with face values inside that
// range a zone at the range's edge cannot leave it.
void bound_scalar_row(const double* __restrict x, const std::ptrdiff_t st[3], int nd, int i0,
                      int i1, double* __restrict lo, double* __restrict hi) {
  for (int i = i0; i < i1; ++i) {
    double m = x[i], M = x[i];
    for (int a = 0; a < nd; ++a) {
      m = std::min(m, std::min(x[i - st[a]], x[i + st[a]]));
      M = std::max(M, std::max(x[i - st[a]], x[i + st[a]]));
    }
    lo[i] = std::min(std::max(lo[i], m), M);
    hi[i] = std::min(std::max(hi[i], m), M);
  }
}

// Step 5b: the mass-scalar flux rho X v = F_rho X of the upwind side (so X stays within
// the bounds of its neighbours).
void scalar_faces(int n, const double* __restrict fd, const double* __restrict xl,
                  const double* __restrict xr, double* __restrict fx) {
  for (int t = 0; t < n; ++t) fx[t] = fd[t] * (fd[t] >= 0.0 ? xl[t] : xr[t]);
}

// Step 6: the conservative update of one row of u, q[t] += c (F[t] - F[t+1]) for the
// faces along x, q[t] += c F[t] (lower face) or -= (upper face) across rows. One body per
// row type: a plain pointer (var-major) or a strided row (zone-major).
template <class Row>
void add_divergence(Row q, const double* __restrict F, int n, double c) {
  for (int t = 0; t < n; ++t) q[t] += c * (F[t] - F[t + 1]);
}
inline void add_divergence(double* __restrict q, const double* __restrict F, int n, double c) {
  for (int t = 0; t < n; ++t) q[t] += c * (F[t] - F[t + 1]);
}
// Step 6 in curvilinear geometry along r: q[t] += dt (A- F[t] - A+ F[t+1]) / V with the
// factors lo = dt A-/V, hi = dt A+/V per zone; for the radial momentum the geometric
// pressure source p (A+ - A-) / V joins in the form lo (F - p) - hi (F' - p), so a
// uniform pressure at rest stays at rest to round-off (verification.md §I).
template <class Row>
void add_divergence_geo(Row q, const double* __restrict F, int n, const double* __restrict lo,
                        const double* __restrict hi, const double* __restrict p) {
  if (p == nullptr)
    for (int t = 0; t < n; ++t) q[t] += lo[t] * F[t] - hi[t] * F[t + 1];
  else
    for (int t = 0; t < n; ++t) q[t] += lo[t] * (F[t] - p[t]) - hi[t] * (F[t + 1] - p[t]);
}

// Step 3b in curvilinear geometry: the primitive equations' geometric terms in the
// half step, d rho/dt = -alpha rho u_r / r and d p/dt = -alpha gamc p u_r / r (u_r: vx),
// with gs[i] = alpha dr / r_i so that f0 gs = dt alpha / (2 r).
void hancock_geometry_row(const double* __restrict W, std::size_t N, std::size_t rb, int nr,
                          const double* __restrict gs, int i0, int i1, double f0, double* H, int n0,
                          bool uniform, double ugc) {
  const double* __restrict r = W + rb;
  const double* __restrict vx = W + N + rb;
  const double* __restrict p = W + 4 * N + rb;
  const double* __restrict gc = W + std::size_t(nr) * N + rb;
  double* __restrict h_r = H;
  double* __restrict h_p = H + 4 * n0;
  for (int i = i0; i < i1; ++i) {
    h_r[i] -= f0 * gs[i] * r[i] * vx[i];
    h_p[i] -= f0 * gs[i] * (uniform ? ugc : gc[i]) * p[i] * vx[i];
  }
}

// Step 3c with gravity (hydro.gravity_coupling predictor or balanced): the half step's
// velocity along axis a gets dt/2 g_a (h: that channel of H, g: the field of the row), so
// that in hydrostatic equilibrium the face states are at rest and no mass moves.
void hancock_gravity_row(const double* __restrict g, double half_dt, int i0, int i1,
                         double* __restrict h) {
  for (int i = i0; i < i1; ++i) h[i] += half_dt * g[i];
}

// Step 2b with gravity (balanced): the pressure slope about the zone's own hydrostatic
// profile (after Käppeli & Mishra 2014, J. Comput. Phys. 259, 199, with a linear local
// equilibrium p_0 + rho_0 g_0 (x - x_0)): the neighbours' departures from that line are
// limited, slope dp = limited(p_-1 + h, p_0, p_+1 - h) + h with h = rho_0 g_0 dx. In a
// discrete equilibrium, p_+1 - p_0 = dx (rho_0 g_0 + rho_+1 g_+1) / 2, the two states at
// a face have the same pressure and the Riemann problem is a resting contact, and the
// face pressures differ across the zone by dx rho_0 g_0, the gravity operator's source.
// The zone's own density (not a face mean) keeps the extrapolation of a fluff zone next to
// the star's edge at the fluff's weight.
template <Limiter LIM>
void hse_pressure_row(const double* __restrict rho, const double* __restrict p,
                      const double* __restrict g, std::ptrdiff_t st, double dx, int i0, int i1,
                      double* __restrict dp) {
  for (int i = i0; i < i1; ++i) {
    const double h = dx * rho[i] * g[i];
    dp[i] = limited_slope<LIM>(p[i - st] + h, p[i], p[i + st] - h) + h;
  }
}

template <class Row>
void add_flux(Row q, const double* __restrict F, int n, double c) {
  for (int t = 0; t < n; ++t) q[t] += c * F[t];
}
inline void add_flux(double* __restrict q, const double* __restrict F, int n, double c) {
  for (int t = 0; t < n; ++t) q[t] += c * F[t];
}
template <class Row>
void sub_flux(Row q, const double* __restrict F, int n, double c) {
  for (int t = 0; t < n; ++t) q[t] -= c * F[t];
}
inline void sub_flux(double* __restrict q, const double* __restrict F, int n, double c) {
  for (int t = 0; t < n; ++t) q[t] -= c * F[t];
}

struct NoRowHook {
  void operator()(int, int) const {}
};

// One block in one pass over its zone rows (k, j ascending), each row in L1, in the steps
// run() names: the primitives of the block (step 1); per row, slopes along every axis and
// the half step (steps 2-3: half_step), face states for an axis (step 4: states), the
// Riemann fluxes through the row's x-faces (step 5: riemann) and their difference into
// the row (step 6: update; x_faces), then through the y-faces below it (against the
// high-face states kept from row j-1) and the z-faces below it (against those kept from
// plane k-1), each applied to the rows on both sides at once (across). So W is read once,
// no half-step array is stored, and u stays in cache. A zone receives, in this order: its
// x-flux difference, its lower y and z fluxes (while its row is processed), its upper y
// flux (row j+1), its upper z flux (plane k+1). The block's boundary fluxes go to `out`.
// done(j, k) is called for every interior row as soon as its update is complete (its upper
// y and z faces done), while it is still in cache.
// NRC: the number of reconstructed channels if known at compile time (5: no mass
// scalars, so every per-channel loop has a constant trip count and the row kernels inline
// as before composition existed: ~4 % of a 3-D step), 0 for S.nr.
template <int NRC, Layout L>
struct BlockUpdate {
  const BlockView<L>& u;
  const BlockShape& s;
  const mesh::BlockGeom& bg;
  const Options& opt;
  const Indices& at;
  const double dt;
  const bool predictor;
  Hydro::Scratch& S;
  const BoundaryFluxes& out;
  const MassFluxOut& mo;
  const double* G;  // gravity's field [nd][N], null without
  const int nd = s.ndim, ng = s.ng, nx = s.nx;
  const int n0 = s.n(0), n1 = s.n(1);
  const std::size_t N = s.cells();
  // Reconstructed channels (rho, vx, vy, vz, p, scalars): a constant where NRC is, so that
  // each member function's per-channel loops have a constant trip count (a local of each,
  // NR; a data member would be a load the compiler cannot fold).
  static constexpr int NR = NRC;
  const int nr_ = NRC > 0 ? NRC : S.nr;
  const double smallp = opt.smallp, smalld = opt.smalld;
  const double* W = S.w;
  const double* Wgc = W + std::size_t(nr_) * N;      // Gamma1 per cell
  const double* Wge = W + std::size_t(nr_ + 1) * N;  // 1 / (game - 1) per cell
  const double ugc = at.ugamc, uge = at.uniform ? 1.0 / (at.ugame - 1.0) : 0.0;
  const std::size_t R = std::size_t(nr_) * n0;  // one row buffer, [nr][n0]
  const std::ptrdiff_t stride[3] = {1, n0, std::ptrdiff_t(n0) * n1};
  const double f[3] = {0.5 * dt / bg.dx[0], 0.5 * dt / bg.dx[1], 0.5 * dt / bg.dx[2]};
  const double c_dt[3] = {dt / bg.dx[0], dt / bg.dx[1], dt / bg.dx[2]};
  const bool ppm = opt.recon == Recon::ppm;
  // The Highway row kernels (kernels_simd.hpp), or the C++ reference ones (TESSERA_SIMD
  // or perf.simd = "scalar").
  const bool ref = tessera::simd::reference();
  const bool curved = bg.geometry != mesh::Geometry::cartesian;
  const bool balanced = G != nullptr && opt.gravity == GravityCoupling::balanced;
  // Curvilinear radial factors of this block (zone i of the row at index i).
  double* glo = S.geo;
  double* ghi = S.geo + n0;
  double* gsrc = S.geo + 2 * n0;
  const int t2n = nd > 1 ? nx : 1;  // length of a face row of the flux register
  double* sl = S.slope;
  double* H = S.half;
  double* lo = S.lo;
  double* hi_x = S.hi;
  double* Fv[64];  // the fluxes of each channel
  int uv[64];      // unk variable of each channel / flux-register slot

  BlockUpdate(const BlockView<L>& u_, const BlockShape& s_, const mesh::BlockGeom& bg_,
              const Options& opt_, const Indices& at_, double dt_, bool predictor_,
              Hydro::Scratch& S_, const BoundaryFluxes& out_, const MassFluxOut& mo_,
              const double* G_)
      : u(u_),
        s(s_),
        bg(bg_),
        opt(opt_),
        at(at_),
        dt(dt_),
        predictor(predictor_),
        S(S_),
        out(out_),
        mo(mo_),
        G(G_) {
    for (int v = 0; v < nr_; ++v) uv[v] = at.flux[v];
    for (int v = 0; v < nr_; ++v) Fv[v] = S.flux + std::size_t(v) * S.fn;
    if (curved) radial_factors();
  }

  void radial_factors() {
    const double alpha = mesh::geometry::alpha(bg.geometry);
    for (int i = 0; i < n0; ++i) {
      const double r0 = bg.lo[0] + (i - ng) * bg.dx[0], r1 = r0 + bg.dx[0];
      const double vol = mesh::geometry::shell_volume(bg.geometry, r0, r1);
      glo[i] = dt * mesh::geometry::radial_area(bg.geometry, r0) / vol;
      ghi[i] = dt * mesh::geometry::radial_area(bg.geometry, r1) / vol;
      gsrc[i] = alpha * bg.dx[0] / (0.5 * (r0 + r1));
    }
    // A reflecting wall at the outer radius: the guard zones beyond it hold the mirror
    // images of the zones inside, and their half step must be the mirror image too, so
    // the geometric term is the mirror zone's with the sign of the mirrored u_r (their
    // own radius would give states either side of the wall that are not mirror images,
    // and mass would cross it). At the axis (r = 0) the guard zones' negative radii do
    // this by themselves.
    if (std::fabs(bg.lo[0] + nx * bg.dx[0] - at.rwall) < 0.5 * bg.dx[0])
      for (int i = ng + nx; i < n0; ++i) gsrc[i] = -gsrc[2 * (ng + nx) - 1 - i];
  }

  // Step 5: Riemann fluxes through n faces along axis a: left states from `left` (the high
  // faces of the zones below, whose cells start at cell number cl), right states from
  // `right` (the low faces of the zones above, from cell cr); the cells give gamc and game.
  void riemann(int n, const double* left, const double* right, int a, std::size_t cl,
               std::size_t cr) {
    const int nr = NRC > 0 ? NR : nr_;
    const int vn = 1 + a, vt1 = a == 0 ? 2 : 1, vt2 = a == 2 ? 2 : 3;
    RiemannRow r;
    r.n = n;
    r.ld = left, r.lu = left + vn * n0, r.lt1 = left + vt1 * n0, r.lt2 = left + vt2 * n0;
    r.lp = left + 4 * n0;
    r.rd = right, r.ru = right + vn * n0, r.rt1 = right + vt1 * n0, r.rt2 = right + vt2 * n0;
    r.rp = right + 4 * n0;
    r.fd = Fv[0], r.fn = Fv[vn], r.ft1 = Fv[vt1], r.ft2 = Fv[vt2], r.fe = Fv[4];
    r.lgc = Wgc + cl, r.lge = Wge + cl, r.rgc = Wgc + cr, r.rge = Wge + cr;
    r.ugc = ugc, r.uge = uge;
    (ref ? ref::riemann : simd::riemann)(opt.riemann == Riemann::hllc, at.uniform, r);
    for (int q = 5; q < nr; ++q) scalar_faces(n, Fv[0], left + q * n0, right + q * n0, Fv[q]);
  }

  // Step 2: limited slopes of the row starting at cell rb along stride st, zones [i0, i1).
  void slopes(std::size_t rb, std::ptrdiff_t st, int i0, int i1, double* d) {
    const int nr = NRC > 0 ? NR : nr_;
    if (!ref) return simd::slopes(opt.limiter, W, N, rb, st, i0, i1, d, n0, nr);
    switch (opt.limiter) {
      case 0:
        return slopes_row<Limiter::minmod>(W, N, rb, st, i0, i1, d, n0, nr);
      case 1:
        return slopes_row<Limiter::van_leer>(W, N, rb, st, i0, i1, d, n0, nr);
      default:
        return slopes_row<Limiter::mc>(W, N, rb, st, i0, i1, d, n0, nr);
    }
  }

  // Step 2 with gravity balanced: the pressure slope of hydrostatic equilibrium along a.
  void hse_slopes(std::size_t rb, int a, int i0, int i1) {
    double* dp = S.slope + a * R + 4 * n0;
    const double* g = G + std::size_t(a) * N + rb;
    switch (opt.limiter) {
      case 0:
        return hse_pressure_row<Limiter::minmod>(W + rb, W + 4 * N + rb, g, stride[a], bg.dx[a], i0,
                                                 i1, dp);
      case 1:
        return hse_pressure_row<Limiter::van_leer>(W + rb, W + 4 * N + rb, g, stride[a], bg.dx[a],
                                                   i0, i1, dp);
      default:
        return hse_pressure_row<Limiter::mc>(W + rb, W + 4 * N + rb, g, stride[a], bg.dx[a], i0, i1,
                                             dp);
    }
  }

  // Step 4's positivity fallback of the reference kernels.
  void fallback(std::size_t rb, int i0, int i1, double* st) {
    const int nr = NRC > 0 ? NR : nr_;
    for (int q = 5; q < nr; ++q)
      fallback_scalar_row(st + q * n0, W + q * N + rb, st, st + 4 * n0, i0, i1, smalld, smallp);
    (ref ? fallback_row : simd::fallback)(st, st + n0, st + 2 * n0, st + 3 * n0, st + 4 * n0,
                                          W + rb, W + N + rb, W + 2 * N + rb, W + 3 * N + rb,
                                          W + 4 * N + rb, i0, i1, smalld, smallp);
  }

  // Step 6 on the interior zones of row (j, k), every channel: kind 0 the x-flux
  // difference, 1 adds and 2 subtracts a y or z flux (add_divergence, add_flux, sub_flux).
  // The Highway kernel takes contiguous rows: var-major's own, zone-major's copied through
  // a row buffer (S.row), so that both layouts run the same arithmetic.
  void update(int kind, int j, int k, double c) {
    const int nr = NRC > 0 ? NR : nr_;
    if (ref) {
      for (int v = 0; v < nr; ++v) {
        const auto q = u.row(uv[v], j, k) + ng;
        if (kind == 0)
          add_divergence(q, Fv[v], nx, c);
        else if (kind == 1)
          add_flux(q, Fv[v], nx, c);
        else
          sub_flux(q, Fv[v], nx, c);
      }
    } else if constexpr (L == Layout::var_major) {
      double* q[64];
      for (int v = 0; v < nr; ++v) q[v] = u.row(uv[v], j, k) + ng;
      simd::update_rows(kind, nr, q, Fv, nx, c);
    } else {
      double* buf = S.row;
      for (int v = 0; v < nr; ++v) {
        const auto q = u.row(uv[v], j, k) + ng;
        for (int t = 0; t < nx; ++t) buf[t] = q[t];
        simd::update_rows(kind, 1, &buf, Fv + v, nx, c);
        for (int t = 0; t < nx; ++t) q[t] = buf[t];
      }
    }
  }

  // What the face states of a row start from: the primitives W (cell stride N), or the
  // half step's H (stride n0).
  struct Base {
    const double* B;
    std::size_t bs;
  };

  // Steps 2-3 for the row starting at cell rb, zones [i0, i1): slopes along every active
  // axis and (PLM with the predictor) the half step, with its geometric and gravity terms.
  Base half_step(std::size_t rb, int i0, int i1) {
    const int nr = NRC > 0 ? NR : nr_;
    Base b{W + rb, N};
    if (ppm) return b;
    for (int a = 0; a < nd; ++a) slopes(rb, stride[a], i0, i1, sl + a * R);
    if (balanced)
      for (int a = 0; a < nd; ++a) hse_slopes(rb, a, i0, i1);
    if (!predictor) return b;
    if (!ref) {
      simd::hancock(nd, at.uniform, W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
    } else if (at.uniform) {
      if (nd == 3)
        hancock_row<3, true>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
      else if (nd == 2)
        hancock_row<2, true>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
      else
        hancock_row<1, true>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
    } else {
      if (nd == 3)
        hancock_row<3, false>(W, N, rb, sl, i0, i1, n0, f, nr, 0.0, H);
      else if (nd == 2)
        hancock_row<2, false>(W, N, rb, sl, i0, i1, n0, f, nr, 0.0, H);
      else
        hancock_row<1, false>(W, N, rb, sl, i0, i1, n0, f, nr, 0.0, H);
    }
    if (curved) hancock_geometry_row(W, N, rb, nr, gsrc, i0, i1, f[0], H, n0, at.uniform, ugc);
    if (G != nullptr)
      for (int a = 0; a < nd; ++a)
        hancock_gravity_row(G + std::size_t(a) * N + rb, 0.5 * dt, i0, i1, H + (1 + a) * n0);
    return {H, std::size_t(n0)};
  }

  // Step 4: face states along axis a of the row at rb, zones [a0, a1), into lo and `hi`
  // (kept for the faces above where the next row or plane needs them).
  void states(std::size_t rb, const Base& b, int a, int a0, int a1, double* hi) {
    const int nr = NRC > 0 ? NR : nr_;
    // The faces need zones [ng - 1, ng + nx + 1) only: PLM's slopes cover the whole x-row
    // for the half step's transverse terms, PPM has no half step.
    if (ppm) a0 = std::max(a0, ng - 1), a1 = std::min(a1, ng + nx + 1);
    if (!ref && ppm) {
      simd::ppm_faces(W, N, rb, stride[a], a0, a1, n0, nr, smalld, smallp, sl, lo, hi);
    } else if (!ref) {
      simd::plm_faces(b.B, b.bs, sl + a * R, W + rb, N, a0, a1, n0, nr, smalld, smallp, lo, hi);
    } else {
      if (ppm)
        ppm_states_row(W, N, rb, stride[a], a0, a1, n0, nr, lo, hi);
      else
        plm_states_row(b.B, b.bs, sl + a * R, a0, a1, n0, nr, lo, hi);
      fallback(rb, a0, a1, lo);
      fallback(rb, a0, a1, hi);
    }
    const int b0 = std::max(a0, ng - 1), b1 = std::min(a1, ng + nx + 1);
    for (int q = 5; q < nr; ++q)
      bound_scalar_row(W + std::size_t(q) * N + rb, stride, nd, b0, b1, lo + q * n0, hi + q * n0);
  }

  // Steps 4-6 along x for row (j, k): states, fluxes, the flux difference into the row
  // (with the geometric terms in curvilinear geometry), the block's x boundary fluxes and
  // the interior mass fluxes.
  void x_faces(int j, int k, std::size_t rb, const Base& b, int i0, int i1) {
    const int nr = NRC > 0 ? NR : nr_;
    states(rb, b, 0, i0, i1, hi_x);
    riemann(nx + 1, hi_x + (ng - 1), lo + ng, 0, rb + (ng - 1), rb + ng);
    const std::size_t fo =
        std::size_t(nd > 2 ? k - ng : 0) * t2n + std::size_t(nd > 1 ? j - ng : 0);
    if (curved)
      for (int v = 0; v < nr; ++v)
        add_divergence_geo(u.row(uv[v], j, k) + ng, Fv[v], nx, glo + ng, ghi + ng,
                           v == 1 ? b.B + 4 * b.bs + ng : nullptr);
    else
      update(0, j, k, c_dt[0]);
    for (int v = 0; v < nr; ++v) {
      out.face[0][v * out.per_var + fo] = Fv[v][0];
      out.face[1][v * out.per_var + fo] = Fv[v][nx];
    }
    if (mo.f && nx > 1) mo.put(0, 1, nd > 1 ? j - ng : 0, nd > 2 ? k - ng : 0, Fv[0] + 1, nx - 1);
  }

  // Steps 4-6 along y or z (a = 1, 2) for row (j, k): the faces between row m-1 and row m
  // (m = j or k), against the high-face states kept from the row or plane below.
  void across(int a, int m, int j, int k, std::size_t rb, const Base& b, double* hi_prev,
              double* hi_now) {
    const int nr = NRC > 0 ? NR : nr_;
    states(rb, b, a, ng, ng + nx, hi_now);
    if (m < ng) return;
    const std::size_t below = rb + ng - std::size_t(stride[a]);
    riemann(nx, hi_prev + ng, lo + ng, a, below, rb + ng);
    const int jl = a == 1 ? j - 1 : j, kl = a == 2 ? k - 1 : k;
    const int other = a == 1 ? (nd > 2 ? k - ng : 0) : j - ng;  // flux register t2
    if (m > ng) update(2, jl, kl, c_dt[a]);
    if (m < ng + nx) update(1, j, k, c_dt[a]);
    for (int v = 0; v < nr; ++v) {
      if (m == ng || m == ng + nx) {
        double* dst =
            out.face[2 * a + (m == ng ? 0 : 1)] + v * out.per_var + std::size_t(other) * nx;
        for (int t = 0; t < nx; ++t) dst[t] = Fv[v][t];
      }
    }
    if (mo.f && m > ng && m < ng + nx)
      mo.put(a, 0, a == 1 ? m - ng : j - ng, a == 2 ? m - ng : (nd > 2 ? k - ng : 0), Fv[0], nx);
  }

  // Rows j in [ng-1, ng+nx] on active axes: the guard rows next to the interior give the
  // states below the first faces. The rows with both j and k in the guards are not needed.
  bool inside(int a, int m) const { return a >= nd || (m >= ng && m < ng + nx); }

  template <class RowDone>
  void run(RowDone done) {
    // Step 1: primitives everywhere (guards included).
    {
      TESSERA_REGION("primitives");
      primitives(u, s, at, smalld, smallp, S);
    }
    TESSERA_REGION("fluxes");
    const int k0 = nd > 2 ? ng - 1 : 0, k1 = nd > 2 ? ng + nx + 1 : 1;
    const int j0 = nd > 1 ? ng - 1 : 0, j1 = nd > 1 ? ng + nx + 1 : 1;
    for (int k = k0; k < k1; ++k)
      for (int j = j0; j < j1; ++j) {
        const bool do_x = inside(1, j) && inside(2, k);
        const bool do_y = nd > 1 && inside(2, k);
        const bool do_z = nd > 2 && inside(1, j);
        if (!do_x && !do_y && !do_z) continue;
        const std::size_t rb = (std::size_t(k) * n1 + j) * n0;
        // Zones [i0, i1) of the row: those the faces need; in 2-D and 3-D the whole row
        // (n0, a multiple of 4 for the usual block sizes, so the vector loops have no
        // remainder; the end zones get unused values from the neighbouring rows).
        const int i0 = nd > 1 ? 0 : ng - 1, i1 = nd > 1 ? n0 : ng + nx + 1;
        const Base b = half_step(rb, i0, i1);
        if (do_x) x_faces(j, k, rb, b, i0, i1);
        // High-face states kept: y by row parity, z by plane parity and row.
        if (do_y) across(1, j, j, k, rb, b, S.hi_y + ((j - 1) & 1) * R, S.hi_y + (j & 1) * R);
        if (do_z) {
          double* plane[2] = {S.hi_z, S.hi_z + std::size_t(n1) * R};
          across(2, k, j, k, rb, b, plane[(k - 1) & 1] + j * R, plane[k & 1] + j * R);
        }
        // The last update a row gets is its upper z face (3-D) or upper y face (2-D).
        auto interior = [&](int m) { return m >= ng && m < ng + nx; };
        if (nd == 3 && interior(j) && interior(k - 1)) done(j, k - 1);
        if (nd == 2 && interior(j - 1)) done(j - 1, k);
      }
    if (nd == 1) done(0, 0);
  }
};

template <Layout L, class RowDone = NoRowHook>
void update_block(const BlockView<L>& u, const BlockShape& s, const mesh::BlockGeom& bg,
                  const Options& opt, const Indices& at, double dt, bool predictor,
                  Hydro::Scratch& S, const BoundaryFluxes& out, const MassFluxOut& mo = {},
                  const double* G = nullptr, RowDone done = {}) {
  if (S.nr == 5)
    BlockUpdate<5, L>(u, s, bg, opt, at, dt, predictor, S, out, mo, G).run(done);
  else
    BlockUpdate<0, L>(u, s, bg, opt, at, dt, predictor, S, out, mo, G).run(done);
}

}  // namespace
}  // namespace tessera::hydro::detail

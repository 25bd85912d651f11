// Unsplit hydrodynamics on one block at a time. References:
//   Toro, "Riemann Solvers and Numerical Methods for Fluid Dynamics", 3rd ed. (2009),
//     §14.4 (MUSCL-Hancock), §10.4 (HLLC), §10.3 (HLLE);
//   Colella, J. Comput. Phys. 87 (1990) 171 (unsplit primitive-variable predictor);
//   Colella & Woodward, J. Comput. Phys. 54 (1984) 174 (PPM);
//   Shu & Osher, J. Comput. Phys. 77 (1988) 439 (SSP Runge-Kutta).
#include "physics/hydro/hydro.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <type_traits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/flux_register.hpp"
#include "perf/timers.hpp"
#include "physics/hydro/reconstruct.hpp"
#include "physics/hydro/riemann.hpp"

namespace tessera::hydro {

// Work arrays of one block update, carved from one arena ("scratch", 64-byte aligned
// pieces: with n0 a multiple of 4 every x-row of W and of the row buffers then starts on
// a 32-byte boundary, so no AVX load splits a cache line). Sized once for the mesh's
// block shape; no allocation in a step.
struct Hydro::Scratch {
  memory::ArenaConfig cfg;
  memory::Arena arena;
  double* w = nullptr;      // primitives [5][N]: rho, vx, vy, vz, p
  double* slope = nullptr;  // this row's limited slopes [3 axes][5][n0]
  double* half = nullptr;   // this row's Hancock half-step state [5][n0]
  double* lo = nullptr;     // this row's low-face states along one axis [5][n0]
  double* hi = nullptr;     // this row's high-face states along x [5][n0]
  double* hi_y = nullptr;   // high-face states along y of rows j-1 and j [2][5][n0]
  double* hi_z = nullptr;   // high-face states along z of planes k-1 and k [2][n1][5][n0]
  double* flux = nullptr;   // fluxes through one row of faces [5][fn]
  double* row = nullptr;    // one row of interior zones (time-step rate) [n0]
  std::size_t n = 0;
  int fn = 0;  // flux row stride: n0 + 1 faces, rounded up to a multiple of 4
  void resize(std::size_t cells, int n0, int n1) {
    if (n == cells && arena.data()) return;
    n = cells;
    fn = (n0 + 1 + 3) / 4 * 4;
    const std::size_t r = 5 * std::size_t(n0);
    const std::size_t sizes[] = {
        5 * cells,           3 * r,          r, r, r, 2 * r, 2 * std::size_t(n1) * r,
        5 * std::size_t(fn), std::size_t(n0)};
    double** parts[] = {&w, &slope, &half, &lo, &hi, &hi_y, &hi_z, &flux, &row};
    std::size_t total = 0;
    for (std::size_t sz : sizes) total += (sz + 7) / 8 * 8;         // 8 doubles = 64 bytes
    arena = memory::Arena("scratch", total * sizeof(double), cfg);  // zero-filled
    double* p = static_cast<double*>(arena.data());
    for (std::size_t i = 0; i < std::size(sizes); ++i) {
      *parts[i] = p;
      p += (sizes[i] + 7) / 8 * 8;
    }
  }
};

void Hydro::declare_params(base::Params& p) {
  p.declare_string("hydro.reconstruction", "plm", {"plm", "ppm"}, "spatial reconstruction");
  p.declare_string("hydro.limiter", "mc", {"minmod", "van_leer", "mc"}, "PLM slope limiter");
  p.declare_string("hydro.riemann", "hllc", {"hllc", "hlle"}, "Riemann solver");
  p.declare_string("hydro.integrator", "auto", {"auto", "hancock", "rk2", "rk3"},
                   "time integration (auto: hancock for plm, rk3 for ppm)");
  p.declare_real("hydro.cfl", 0.8, 0.01, 1.0,
                 "Courant number: dt = cfl / max(sum over axes of (|u|+c)/dx)");
  p.declare_real("hydro.gamma", 1.4, 1.0001, 10.0, "adiabatic index of the gamma-law gas");
  p.declare_real("hydro.mu", 1.0, 1e-6, 1e6, "mean molecular weight (for temperature)");
  p.declare_real("hydro.smallp", 1e-30, 0.0, 1e300, "pressure floor for reconstructed states");
  p.declare_real("hydro.smalld", 1e-30, 0.0, 1e300, "density floor for reconstructed states");
}

Hydro::Hydro(const base::Params& p)
    : eos_(p.get_real("hydro.gamma"), p.get_real("hydro.mu")), scratch_(new Scratch) {
  opt_.recon = p.get_string("hydro.reconstruction") == "ppm" ? Recon::ppm : Recon::plm;
  const auto& lim = p.get_string("hydro.limiter");
  opt_.limiter = lim == "minmod" ? 0 : (lim == "van_leer" ? 1 : 2);
  opt_.riemann = p.get_string("hydro.riemann") == "hlle" ? Riemann::hlle : Riemann::hllc;
  const auto& integ = p.get_string("hydro.integrator");
  if (integ == "auto")
    opt_.integrator = opt_.recon == Recon::ppm ? Integrator::rk3 : Integrator::hancock;
  else
    opt_.integrator = integ == "hancock" ? Integrator::hancock
                                         : (integ == "rk2" ? Integrator::rk2 : Integrator::rk3);
  if (opt_.integrator == Integrator::hancock && opt_.recon == Recon::ppm)
    throw Error(
        "hydro.integrator = \"hancock\" needs hydro.reconstruction = \"plm\" (use rk2 or rk3 with "
        "ppm)");
  opt_.cfl = p.get_real("hydro.cfl");
  opt_.gamma = p.get_real("hydro.gamma");
  opt_.mu = p.get_real("hydro.mu");
  opt_.smallp = p.get_real("hydro.smallp");
  opt_.smalld = p.get_real("hydro.smalld");
}

Hydro::~Hydro() = default;

int Hydro::stages() const {
  switch (opt_.integrator) {
    case Integrator::hancock:
      return 1;
    case Integrator::rk2:
      return 2;
    default:
      return 3;
  }
}

std::vector<mesh::VarInfo> Hydro::variables() {
  return {{"dens", -1}, {"momx", 0}, {"momy", 1}, {"momz", 2}, {"etot", -1}};
}

const std::vector<std::string>& Hydro::derived_names() {
  static const std::vector<std::string> names{"velx", "vely", "velz", "pres", "ener",
                                              "eint", "temp", "gamc", "game"};
  return names;
}

namespace {

using mesh::BlockShape;
using mesh::BlockView;
using mesh::Layout;

// Where a block's boundary fluxes go (FluxRegister::face: [v][t2][t1] per face).
struct BoundaryFluxes {
  double* face[6];
  std::size_t per_var;  // doubles per variable on one face
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

// Largest sum over axes of (|u_a| + c) / dx_a over the block's interior.
template <Layout L>
double max_rate(const BlockView<L>& u, const BlockShape& s, const double idx[3], double g,
                double smallp, double* buf) {
  double m[4] = {0.0, 0.0, 0.0, 0.0};  // independent maxima: max is exact in any order
  const int n = s.ni(0);
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
      const int o = s.g(0);
      const auto d = u.row(DENS, j, k), mx = u.row(MOMX, j, k), my = u.row(MOMY, j, k),
                 mz = u.row(MOMZ, j, k), e = u.row(ETOT, j, k);
      for (int i = 0; i < n; ++i) {
        const double r = 1.0 / d[o + i];
        const double vx = mx[o + i] * r, vy = my[o + i] * r, vz = mz[o + i] * r;
        const double p = std::max(
            (g - 1.0) * (e[o + i] - 0.5 * d[o + i] * (vx * vx + vy * vy + vz * vz)), smallp);
        const double c = std::sqrt(g * p * r);
        buf[i] = (std::fabs(vx) + c) * idx[0] + (std::fabs(vy) + c) * idx[1] +
                 (std::fabs(vz) + c) * idx[2];
      }
      int i = 0;
      for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; ++l) m[l] = std::max(m[l], buf[i + l]);
      for (; i < n; ++i) m[0] = std::max(m[0], buf[i]);
    }
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

// Step 1: primitives (rho, v, p) on the whole block array, guards included.
template <Layout L>
void primitives(const BlockView<L>& u, std::size_t N, double gm1, double smalld, double smallp,
                double* __restrict W) {
  const auto d = u.row(DENS, 0, 0), mx = u.row(MOMX, 0, 0), my = u.row(MOMY, 0, 0),
             mz = u.row(MOMZ, 0, 0), e = u.row(ETOT, 0, 0);
  double* __restrict wr = W;
  double* __restrict wx = W + N;
  double* __restrict wy = W + 2 * N;
  double* __restrict wz = W + 3 * N;
  double* __restrict wp = W + 4 * N;
  for (std::size_t c = 0; c < N; ++c) {
    const double r = std::max(d[c], smalld);
    const double ir = 1.0 / r;
    const double vx = mx[c] * ir, vy = my[c] * ir, vz = mz[c] * ir;
    wr[c] = r;
    wx[c] = vx;
    wy[c] = vy;
    wz[c] = vz;
    wp[c] = std::max(gm1 * (e[c] - 0.5 * r * (vx * vx + vy * vy + vz * vz)), smallp);
  }
}

// ---- Row kernels: layout-free, on one x-row of the primitive array W ([5][N], the row
// starting at cell rb) and on row buffers [5][n0] indexed by i. Cells [i0, i1).

// Step 2: limited slopes dW along the axis of stride st (limiters: reconstruct.hpp).
template <Limiter LIM>
void slopes_row(const double* __restrict W, std::size_t N, std::size_t rb, std::ptrdiff_t st,
                int i0, int i1, double* __restrict d, int n0) {
  for (int v = 0; v < 5; ++v) {
    const double* __restrict q = W + v * N + rb;
    double* __restrict dv = d + v * n0;
    for (int i = i0; i < i1; ++i) dv[i] = limited_slope<LIM>(q[i - st], q[i], q[i + st]);
  }
}

// Step 3: the MUSCL-Hancock half step (Toro 2009, §14.4; Colella 1990)
//   W^{n+1/2} = W - dt/2 sum_a A_a(W) dW_a/dx_a,
// with f[a] = dt / (2 dx_a) and the slopes sl[a] ([3][5][n0]); the result goes to H.
// ND active axes; one loop, the sums kept in registers (per zone: 0, then + axis 0, + axis
// 1, + axis 2, in that order).
template <int ND>
void hancock_row(const double* __restrict W, std::size_t N, std::size_t rb,
                 const double* __restrict sl, int i0, int i1, int n0, const double f[3], double g,
                 double* H) {
  const double* __restrict r = W + rb;
  const double* __restrict vx = W + N + rb;
  const double* __restrict vy = W + 2 * N + rb;
  const double* __restrict vz = W + 3 * N + rb;
  const double* __restrict p = W + 4 * N + rb;
  // Slopes: a<axis><variable> (variables r, x, y, z, p).
  const double* __restrict a0r = sl + 0 * n0;
  const double* __restrict a0x = sl + 1 * n0;
  const double* __restrict a0y = sl + 2 * n0;
  const double* __restrict a0z = sl + 3 * n0;
  const double* __restrict a0p = sl + 4 * n0;
  const double* __restrict a1r = sl + 5 * n0;
  const double* __restrict a1x = sl + 6 * n0;
  const double* __restrict a1y = sl + 7 * n0;
  const double* __restrict a1z = sl + 8 * n0;
  const double* __restrict a1p = sl + 9 * n0;
  const double* __restrict a2r = sl + 10 * n0;
  const double* __restrict a2x = sl + 11 * n0;
  const double* __restrict a2y = sl + 12 * n0;
  const double* __restrict a2z = sl + 13 * n0;
  const double* __restrict a2p = sl + 14 * n0;
  double* __restrict h_r = H;
  double* __restrict h_x = H + n0;
  double* __restrict h_y = H + 2 * n0;
  double* __restrict h_z = H + 3 * n0;
  double* __restrict h_p = H + 4 * n0;
  const double f0 = f[0], f1 = f[1], f2 = f[2];
  for (int i = i0; i < i1; ++i) {
    double hr = 0.0, hx = 0.0, hy = 0.0, hz = 0.0, hp = 0.0;
    // Axis a adds A_a(W) dW_a; its pressure gradient enters only the velocity along a.
    hr += f0 * (vx[i] * a0r[i] + r[i] * a0x[i]);
    hx += f0 * (vx[i] * a0x[i] + a0p[i] / r[i]);
    hy += f0 * (vx[i] * a0y[i] + 0.0);
    hz += f0 * (vx[i] * a0z[i] + 0.0);
    hp += f0 * (vx[i] * a0p[i] + g * p[i] * a0x[i]);
    if constexpr (ND > 1) {
      hr += f1 * (vy[i] * a1r[i] + r[i] * a1y[i]);
      hx += f1 * (vy[i] * a1x[i] + 0.0);
      hy += f1 * (vy[i] * a1y[i] + a1p[i] / r[i]);
      hz += f1 * (vy[i] * a1z[i] + 0.0);
      hp += f1 * (vy[i] * a1p[i] + g * p[i] * a1y[i]);
    }
    if constexpr (ND > 2) {
      hr += f2 * (vz[i] * a2r[i] + r[i] * a2z[i]);
      hx += f2 * (vz[i] * a2x[i] + 0.0);
      hy += f2 * (vz[i] * a2y[i] + 0.0);
      hz += f2 * (vz[i] * a2z[i] + a2p[i] / r[i]);
      hp += f2 * (vz[i] * a2p[i] + g * p[i] * a2z[i]);
    }
    h_r[i] = r[i] - hr;
    h_x[i] = vx[i] - hx;
    h_y[i] = vy[i] - hy;
    h_z[i] = vz[i] - hz;
    h_p[i] = p[i] - hp;
  }
}

// Step 4a (PLM): the states at each zone's low face (lo) and high face (hi) along one
// axis, B -/+ dW/2, where B is the half-step state or W itself (variable stride bs).
void plm_states_row(const double* __restrict B, std::size_t bs, const double* __restrict d, int i0,
                    int i1, int n0, double* __restrict lo, double* __restrict hi) {
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
}

// Step 4a (PPM): the CW84 parabola's edge values along the axis of stride st.
void ppm_states_row(const double* __restrict W, std::size_t N, std::size_t rb, std::ptrdiff_t st,
                    int i0, int i1, int n0, double* __restrict lo, double* __restrict hi) {
  for (int v = 0; v < 5; ++v) {
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
[[gnu::noinline]] void fallback_row(double* __restrict s0, double* __restrict s1,
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

// Step 5: fluxes through n faces from left states l and right states r (rho, vn, vt1,
// vt2, p) into f. Branch-free per face (riemann.hpp), so the loop vectorises.
template <bool HLLC>
void riemann_faces(int n, const double* __restrict ld, const double* __restrict lu,
                   const double* __restrict lt1, const double* __restrict lt2,
                   const double* __restrict lp, const double* __restrict rd,
                   const double* __restrict ru, const double* __restrict rt1,
                   const double* __restrict rt2, const double* __restrict rp, double* __restrict fd,
                   double* __restrict fn, double* __restrict ft1, double* __restrict ft2,
                   double* __restrict fe, double g, double igm1) {
  for (int t = 0; t < n; ++t) {
    const FaceState L{
        ld[t], lu[t], lt1[t], lt2[t], lp[t], lp[t] * igm1, std::sqrt(g * lp[t] / ld[t])};
    const FaceState R{
        rd[t], ru[t], rt1[t], rt2[t], rp[t], rp[t] * igm1, std::sqrt(g * rp[t] / rd[t])};
    const Flux x = HLLC ? hllc(L, R) : hlle(L, R);
    fd[t] = x.d;
    fn[t] = x.mn;
    ft1[t] = x.mt1;
    ft2[t] = x.mt2;
    fe[t] = x.e;
  }
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

// One block in one pass over its zone rows (k, j ascending), each row in L1: slopes along
// every axis, the half step, face states for every axis, then the Riemann fluxes through
// the row's x-faces, through the y-faces below it (against the high-face states kept from
// row j-1) and the z-faces below it (against those kept from plane k-1), each applied to
// the rows on both sides at once. So W is read once, no half-step array is stored, and u
// stays in cache. A zone receives, in this order: its x-flux difference, its lower y and
// z fluxes (while its row is processed), its upper y flux (row j+1), its upper z flux
// (plane k+1). The block's boundary fluxes go to `out`.
template <Layout L>
void update_block(const BlockView<L>& u, const BlockShape& s, const mesh::BlockGeom& bg,
                  const Options& opt, double dt, bool predictor, Hydro::Scratch& S,
                  const BoundaryFluxes& out) {
  const int nd = s.ndim, ng = s.ng, nx = s.nx;
  const int n0 = s.n(0), n1 = s.n(1);
  const std::size_t N = s.cells();
  S.resize(N, n0, n1);
  const double g = opt.gamma, gm1 = g - 1.0, igm1 = 1.0 / gm1;
  const double smallp = opt.smallp, smalld = opt.smalld;
  const double* W = S.w;
  const std::size_t R = 5 * std::size_t(n0);  // one row buffer, [5][n0]
  const std::ptrdiff_t stride[3] = {1, n0, std::ptrdiff_t(n0) * n1};
  const double f[3] = {0.5 * dt / bg.dx[0], 0.5 * dt / bg.dx[1], 0.5 * dt / bg.dx[2]};
  const double c_dt[3] = {dt / bg.dx[0], dt / bg.dx[1], dt / bg.dx[2]};
  const bool ppm = opt.recon == Recon::ppm;

  // Step 1: primitives everywhere (guards included).
  {
    TESSERA_REGION("primitives");
    primitives(u, N, gm1, smalld, smallp, S.w);
  }
  TESSERA_REGION("fluxes");

  double* F = S.flux;
  const std::size_t FN = S.fn;
  double* Fv[5] = {F, F + FN, F + 2 * FN, F + 3 * FN, F + 4 * FN};
  // Riemann fluxes through n faces along axis a: left states from `left` (the high faces
  // of the zones below), right states from `right` (the low faces of the zones above).
  auto riemann = [&](int n, const double* left, const double* right, int a) {
    const int vn = 1 + a, vt1 = a == 0 ? 2 : 1, vt2 = a == 2 ? 2 : 3;
    auto solve = opt.riemann == Riemann::hllc ? riemann_faces<true> : riemann_faces<false>;
    solve(n, left, left + vn * n0, left + vt1 * n0, left + vt2 * n0, left + 4 * n0, right,
          right + vn * n0, right + vt1 * n0, right + vt2 * n0, right + 4 * n0, Fv[0], Fv[vn],
          Fv[vt1], Fv[vt2], Fv[4], g, igm1);
  };
  auto slopes = [&](std::size_t rb, std::ptrdiff_t st, int i0, int i1, double* d) {
    switch (opt.limiter) {
      case 0:
        return slopes_row<Limiter::minmod>(W, N, rb, st, i0, i1, d, n0);
      case 1:
        return slopes_row<Limiter::van_leer>(W, N, rb, st, i0, i1, d, n0);
      default:
        return slopes_row<Limiter::mc>(W, N, rb, st, i0, i1, d, n0);
    }
  };
  auto fallback = [&](std::size_t rb, int i0, int i1, double* st) {
    fallback_row(st, st + n0, st + 2 * n0, st + 3 * n0, st + 4 * n0, W + rb, W + N + rb,
                 W + 2 * N + rb, W + 3 * N + rb, W + 4 * N + rb, i0, i1, smalld, smallp);
  };

  // Rows j in [ng-1, ng+nx] on active axes: the guard rows next to the interior give the
  // states below the first faces. The rows with both j and k in the guards are not needed.
  auto inside = [&](int a, int m) { return a >= nd || (m >= ng && m < ng + nx); };
  const int k0 = nd > 2 ? ng - 1 : 0, k1 = nd > 2 ? ng + nx + 1 : 1;
  const int j0 = nd > 1 ? ng - 1 : 0, j1 = nd > 1 ? ng + nx + 1 : 1;
  const int t2n = nd > 1 ? nx : 1;  // length of a face row of the flux register
  double* sl = S.slope;
  double* H = S.half;
  double* lo = S.lo;
  double* hi_x = S.hi;
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
      // Steps 2-3: slopes along every active axis and the half step of this row.
      const double* B = W + rb;
      std::size_t bs = N;
      if (!ppm) {
        for (int a = 0; a < nd; ++a) slopes(rb, stride[a], i0, i1, sl + a * R);
        if (predictor) {
          if (nd == 3)
            hancock_row<3>(W, N, rb, sl, i0, i1, n0, f, g, H);
          else if (nd == 2)
            hancock_row<2>(W, N, rb, sl, i0, i1, n0, f, g, H);
          else
            hancock_row<1>(W, N, rb, sl, i0, i1, n0, f, g, H);
          B = H;
          bs = n0;
        }
      }
      // Steps 4-6 per axis: face states of this row into lo and `hi` (kept for the faces
      // above where the next row or plane needs them), fluxes, update.
      auto states = [&](int a, int a0, int a1, double* hi) {
        if (ppm)
          ppm_states_row(W, N, rb, stride[a], a0, a1, n0, lo, hi);
        else
          plm_states_row(B, bs, sl + a * R, a0, a1, n0, lo, hi);
        fallback(rb, a0, a1, lo);
        fallback(rb, a0, a1, hi);
      };
      if (do_x) {
        states(0, i0, i1, hi_x);
        riemann(nx + 1, hi_x + (ng - 1), lo + ng, 0);
        const std::size_t fo =
            std::size_t(nd > 2 ? k - ng : 0) * t2n + std::size_t(nd > 1 ? j - ng : 0);
        for (int v = 0; v < 5; ++v) {
          add_divergence(u.row(v, j, k) + ng, Fv[v], nx, c_dt[0]);
          out.face[0][v * out.per_var + fo] = Fv[v][0];
          out.face[1][v * out.per_var + fo] = Fv[v][nx];
        }
      }
      // y and z: faces between row m-1 and row m along axis a (m = j or k).
      auto across = [&](int a, int m, double* hi_prev, double* hi_now) {
        states(a, ng, ng + nx, hi_now);
        if (m < ng) return;
        riemann(nx, hi_prev + ng, lo + ng, a);
        const int jl = a == 1 ? j - 1 : j, kl = a == 2 ? k - 1 : k;
        const int other = a == 1 ? (nd > 2 ? k - ng : 0) : j - ng;  // flux register t2
        for (int v = 0; v < 5; ++v) {
          if (m > ng) sub_flux(u.row(v, jl, kl) + ng, Fv[v], nx, c_dt[a]);
          if (m < ng + nx) add_flux(u.row(v, j, k) + ng, Fv[v], nx, c_dt[a]);
          if (m == ng || m == ng + nx) {
            double* dst =
                out.face[2 * a + (m == ng ? 0 : 1)] + v * out.per_var + std::size_t(other) * nx;
            for (int t = 0; t < nx; ++t) dst[t] = Fv[v][t];
          }
        }
      };
      // High-face states kept: y by row parity, z by plane parity and row.
      if (do_y) across(1, j, S.hi_y + ((j - 1) & 1) * R, S.hi_y + (j & 1) * R);
      if (do_z) {
        double* plane[2] = {S.hi_z, S.hi_z + std::size_t(n1) * R};
        across(2, k, plane[(k - 1) & 1] + j * R, plane[k & 1] + j * R);
      }
    }
}

// First zone of the block's interior (k, j, i order) with a NaN or non-positive density
// or a non-finite pressure or energy; node < 0 if none. A vectorised pass per row finds
// the rows to look at.
template <Layout L>
BadZone check_block(const BlockView<L>& u, const BlockShape& s, double gm1) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
      const auto d = u.row(DENS, j, k), mx = u.row(MOMX, j, k), my = u.row(MOMY, j, k),
                 mz = u.row(MOMZ, j, k), e = u.row(ETOT, j, k);
      bool bad = false;
      for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
        const double ke = 0.5 * (mx[i] * mx[i] + my[i] * my[i] + mz[i] * mz[i]) / d[i];
        const double p = gm1 * (e[i] - ke);
        bad |= !(d[i] > 0.0) | !(std::fabs(p) < inf) | !(std::fabs(e[i]) < inf);
      }
      if (!bad) continue;
      for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
        if (!(d[i] > 0.0)) return {0, i - s.g(0), j - s.g(1), k - s.g(2), d[i], "density"};
        const double ke = 0.5 * (mx[i] * mx[i] + my[i] * my[i] + mz[i] * mz[i]) / d[i];
        const double p = gm1 * (e[i] - ke);
        if (!std::isfinite(p) || !std::isfinite(e[i]))
          return {0, i - s.g(0), j - s.g(1), k - s.g(2), p, "pressure"};
      }
    }
  return {};
}

}  // namespace

double Hydro::max_dt(mesh::Mesh& m) const {
  const auto& s = m.shape();
  const int nd = s.ndim;
  scratch_->resize(s.cells(), s.n(0), s.n(1));
  double* buf = scratch_->row;
  double rate = 0.0;  // max over zones of sum_a (|u_a| + c) / dx_a
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto bg = m.geom(id);
      const double idx[3] = {1.0 / bg.dx[0], nd > 1 ? 1.0 / bg.dx[1] : 0.0,
                             nd > 2 ? 1.0 / bg.dx[2] : 0.0};
      rate = std::max(rate, max_rate(m.view(id, tag), s, idx, opt_.gamma, opt_.smallp, buf));
    }
  });
  return rate > 0.0 ? opt_.cfl / rate : std::numeric_limits<double>::max();
}

void Hydro::allocate(const mesh::Mesh& m, const memory::ArenaConfig& cfg) {
  const auto& s = m.shape();
  scratch_->cfg = cfg;
  scratch_->arena = memory::Arena();
  scratch_->resize(s.cells(), s.n(0), s.n(1));
  if (opt_.integrator != Integrator::hancock)
    u0_ = memory::Arena("rk_stage",
                        std::size_t(m.storage().maxblocks()) * s.doubles() * sizeof(double), cfg);
}

void Hydro::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("hydro");
  const auto& s = m.shape();
  const std::size_t per = s.doubles();
  auto& fr = m.flux_register();
  auto sweep = [&](bool predictor) {
    m.fill_guards();
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const int slot = m.slot(id);
        BoundaryFluxes out{{}, fr.face_size() / s.nvar};
        for (int f = 0; f < 6; ++f) out.face[f] = fr.face(slot, f);
        update_block(m.view(id, tag), s, m.geom(id), opt_, dt, predictor, *scratch_, out);
      }
    });
    fr.correct(m.storage(), m.tree(), m.comm(), dt);
  };
  if (opt_.integrator == Integrator::hancock) {
    sweep(true);
    return;
  }
  // SSP Runge-Kutta: U^(s) = a_s U^n + b_s (U^(s-1) + dt L(U^(s-1))). Whole-block copies
  // and blends, so layout-free.
  static const double rk2[2][2] = {{0.0, 1.0}, {0.5, 0.5}};
  static const double rk3[3][2] = {{0.0, 1.0}, {0.75, 0.25}, {1.0 / 3.0, 2.0 / 3.0}};
  const int ns = stages();
  const auto& leaves = m.local_leaves();
  if (u0_.data() == nullptr) allocate(m, scratch_->cfg);  // maxblocks slots: every leaf fits
  double* const u0 = static_cast<double*>(u0_.data());
  for (std::size_t b = 0; b < leaves.size(); ++b) {
    const double* src = m.storage().data(m.slot(leaves[b]));
    std::copy(src, src + per, u0 + b * per);
  }
  for (int st = 0; st < ns; ++st) {
    const double a = ns == 2 ? rk2[st][0] : rk3[st][0];
    const double b = ns == 2 ? rk2[st][1] : rk3[st][1];
    sweep(false);
    if (st == 0) continue;
    for (std::size_t bl = 0; bl < leaves.size(); ++bl) {
      double* q = m.storage().data(m.slot(leaves[bl]));
      const double* q0 = u0 + bl * per;
      for (std::size_t c = 0; c < per; ++c) q[c] = a * q0[c] + b * q[c];
    }
  }
}

BadZone Hydro::check(mesh::Mesh& m) const {
  return m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      BadZone z = check_block(m.view(id, tag), m.shape(), opt_.gamma - 1.0);
      if (z.what[0] != '\0') {
        z.node = id;
        return z;
      }
    }
    return BadZone{};
  });
}

template <mesh::Layout L>
bool Hydro::derived(const std::string& name, const mesh::BlockView<L>& u, const mesh::BlockShape& s,
                    double* out, bool with_guards) const {
  const auto& names = derived_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return false;
  enum Which { velx, vely, velz, pres, ener, eint, temp, gamc, game };
  const auto which = static_cast<Which>(it - names.begin());
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = with_guards ? 0 : s.g(a);
    hi[a] = with_guards ? s.n(a) : s.g(a) + s.ni(a);
  }
  std::size_t c = 0;
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j)
      for (int i = lo[0]; i < hi[0]; ++i, ++c) {
        eos::State st{};
        st.dens = u(DENS, i, j, k);
        const double v[3] = {u(MOMX, i, j, k) / st.dens, u(MOMY, i, j, k) / st.dens,
                             u(MOMZ, i, j, k) / st.dens};
        const double e = u(ETOT, i, j, k) / st.dens;
        st.eint = e - 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        switch (which) {
          case velx:
          case vely:
          case velz:
            out[c] = v[which - velx];
            break;
          case ener:
            out[c] = e;
            break;
          case eint:
            out[c] = st.eint;
            break;
          case gamc:
          case game:
            out[c] = opt_.gamma;
            break;
          case pres:
          case temp:
            eos_.apply(eos::Mode::dens_ei, &st, 1);
            out[c] = which == pres ? st.pres : st.temp;
            break;
        }
      }
  return true;
}

template bool Hydro::derived(const std::string&, const mesh::BlockView<mesh::Layout::var_major>&,
                             const mesh::BlockShape&, double*, bool) const;
template bool Hydro::derived(const std::string&, const mesh::BlockView<mesh::Layout::zone_major>&,
                             const mesh::BlockShape&, double*, bool) const;

}  // namespace tessera::hydro

// The vectorised kernel of the Helmholtz EOS (see helmholtz.hpp for the sources and the
// design). The pencil is processed in chunks of W zones held in local structure-of-arrays
// scratch. The lane loops of Steps 1 and 3-6 and of gamc/cs are branch-free and vectorise
// (checked with -fopt-info-vec; GCC 12, -O3 -march=native: 256-bit vectors). The gather
// (Step 2) is a scalar loop over the 8 lanes except on x86 with 256-bit vectors or more,
// where 4 x 4 transposes move the first 16 of each row's 18 values and the dP/drho values
// (AVX2: dens_temp 103 -> 89 ns per zone, docs/memory.md; the scalar stores were its
// limit). What depends on density alone (DensityTerms) is computed once per zone, and a
// chunk is located and its table lines prefetched one chunk ahead (random states' cells
// miss the cache). The Newton step (invert_step, shared with the scalar kernel) is scalar
// per lane; the iterating modes run the Newton iteration first, refilling a lane with the
// next zone (and its density terms, computed for the next W zones at a time) as soon as its own is
// done (newton), each step computing only the outputs it reads, then evaluate the zones in chunks
// as dens_temp does. The physics is the scalar kernel's (scalar_kernel.cpp), with the sums in the
// same order, without what apply() does not return (entropy, eta, n), and with its divisions
// shared where the scalar kernel repeats them (Step 6, DensityTerms): the two agree to round-off.
//
// The file is compiled once per Highway target (foreach_target.h, as the hydro kernels):
// each copy sits under that target's `#pragma GCC target`, so GCC vectorises the same
// lane loops for SSE4, AVX2 or AVX-512 (and NEON or SVE on Arm), and HWY_DYNAMIC_DISPATCH
// runs the best one the processor has (or the one perf.simd / TESSERA_SIMD forces). A
// build without -march=native (portable) therefore still gets AVX2 or AVX-512 code here.
// The code is plain C++ on doubles, not Highway vectors: it is the compiler's
// vectorisation per target, which is what made the kernel fast under -march=native. In a
// native build (-march=native or TESSERA_ARCH) GCC's target pragma adds to the command
// line's instructions rather than replacing them, so every copy is the native code and
// forcing a lower target changes no number here (it does for the Highway hydro kernels):
// only the gather's code path differs (transposed on AVX2 and AVX-512, scalar below).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/eos/helmholtz/vector_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "physics/eos/helmholtz/constants.hpp"
#include "physics/eos/helmholtz/hermite.hpp"
#include "physics/eos/helmholtz/kernels.hpp"
#include "physics/eos/helmholtz/vector_math.hpp"

HWY_BEFORE_NAMESPACE();
namespace tessera::eos::helmholtz::detail {
namespace HWY_NAMESPACE {

namespace {

constexpr int W = Helmholtz::kChunk;
static_assert(W % 4 == 0, "the AVX2 gather transposes 4 lanes at a time");

/// One chunk's zones, structure of arrays.
struct Lanes {
  alignas(64) double dens[W], temp[W], abar[W], zbar[W];
  alignas(64) double pres[W], eint[W], dpdd[W], dpdt[W], dedt[W];
  /// Lane l holds no zone (past the pencil's end, a failed or a finished zone): a state
  /// inside the table that it computes harmlessly and that is never written back.
  void idle(int l) {
    dens[l] = 1.0;
    temp[l] = 1e7;
    abar[l] = 1.0;
    zbar[l] = 1.0;
  }
};

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
namespace hn = hwy::HWY_NAMESPACE;
/// Four lanes' rows of `count` (a multiple of 4) values, lane r's at row[r], transposed into
/// out[k * W + r] (k < count, r < 4): 4 x 4 blocks of whole-vector stores in place of 16
/// scalar loads and stores each (the stores were the gather's limit on AVX2). Each block is
/// 8 half-vector loads paired into 4 vectors (vinsertf128, which any ALU port runs) and 4
/// in-lane interleaves: half the shuffle-port work of 4 interleaves and 4 lane-crossing
/// permutes.
HWY_INLINE void transpose_rows(const double* const row[4], int count, double* out) {
  const hn::Full256<double> d4;
  const hn::Half<decltype(d4)> d2;
  for (int k = 0; k < count; k += 4) {
    for (int h = 0; h < 4; h += 2) {  // values k + h, k + h + 1
      // [a_k a_k+1 | c_k c_k+1] and [b_k b_k+1 | e_k e_k+1], rows a, b, c, e
      const auto ac = hn::Combine(d4, hn::LoadU(d2, row[2] + k + h), hn::LoadU(d2, row[0] + k + h));
      const auto be = hn::Combine(d4, hn::LoadU(d2, row[3] + k + h), hn::LoadU(d2, row[1] + k + h));
      hn::Store(hn::InterleaveLower(d4, ac, be), d4, out + (k + h) * W);
      hn::Store(hn::InterleaveUpper(d4, ac, be), d4, out + (k + h + 1) * W);
    }
  }
}
#endif

constexpr double inv_ln10 = 0.43429448190325182765;

/// Step 1 of a chunk: each lane's Y_e, rho Y_e and table cell (cell corner (i, j) as
/// doubles, for the interpolation, and as a node index, for the gather). The density's
/// part (locate_density) stays fixed while Newton iterates in T; locate_temp does the rest.
struct Cells {
  alignas(64) double din[W], ye[W], jcell[W], icell[W];
  std::size_t node[W];

  void locate(const HelmTable& t, const Lanes& z) {
    locate_density(t, z);
    locate_temp(t, z);
  }
  void locate_density(const HelmTable& t, const Lanes& z) {
    const double dlo = HelmTable::dens_log_lo, dsi = t.dens_step_inv();
    constexpr double ilast = HelmTable::imax - 2;
    for (int l = 0; l < W; ++l) {
      ye[l] = z.zbar[l] / z.abar[l];
      din[l] = ye[l] * z.dens[l];
      const double if_ = vfloor((vlog(din[l]) * inv_ln10 - dlo) * dsi);
      icell[l] = std::min(std::max(if_, 0.0), ilast);
    }
  }
  void locate_temp(const HelmTable& t, const Lanes& z) {
    const double tlo = HelmTable::temp_log_lo, tsi = t.temp_step_inv();
    constexpr double jlast = HelmTable::jmax - 2;
    for (int l = 0; l < W; ++l) {
      const double jf = vfloor((vlog(z.temp[l]) * inv_ln10 - tlo) * tsi);
      jcell[l] = std::min(std::max(jf, 0.0), jlast);
    }
    for (int l = 0; l < W; ++l)
      node[l] =
          static_cast<std::size_t>(jcell[l]) * HelmTable::imax + static_cast<std::size_t>(icell[l]);
  }

  /// Asks the cache for every line the gather of these cells will read (the free-energy
  /// rows and, with_dpdd, the dP/drho values, which only the full evaluation reads): issued
  /// a chunk ahead, the misses of random states' cells overlap the evaluation before.
  void prefetch(const HelmTable& t, bool with_dpdd) const {
    constexpr std::size_t frow = std::size_t(HelmTable::imax) * HelmTable::nf;
    constexpr std::size_t crow = std::size_t(HelmTable::imax) * HelmTable::nc;
    for (int l = 0; l < W; ++l) {
      // A row of 18 doubles (144 bytes) spans at most 4 lines, of 16 (dP/drho) at most 3:
      // its first value, those 64 and 128 bytes on and its last one touch each of them.
      const double* f0 = t.f_data() + node[l] * HelmTable::nf;
      const double* c0 = t.c_data() + node[l] * HelmTable::nc;
      for (const double* r : {f0, f0 + frow}) {
        __builtin_prefetch(r);
        __builtin_prefetch(r + 8);
        __builtin_prefetch(r + 16);
        __builtin_prefetch(r + 17);
      }
      if (!with_dpdd) continue;
      for (const double* r : {c0, c0 + crow}) {
        __builtin_prefetch(r);
        __builtin_prefetch(r + 8);
        __builtin_prefetch(r + 15);
      }
    }
  }
};

/// Lane l's quintic Hermite weights at x in [0, 1] of a cell of width h (h2 = h^2, hi =
/// 1/h): w[node * 3 + derivative order] for the near node (0) and the far one (1, at 1 - x),
/// and dw, their derivatives along the axis. The density's and the temperature's alike.
HWY_INLINE void quintic_weights(int l, double x, double h, double h2, double hi, double (&w)[6][W],
                                double (&dw)[6][W]) {
  const double mx = 1.0 - x;
  w[0][l] = psi0(x);
  w[1][l] = psi1(x) * h;
  w[2][l] = psi2(x) * h2;
  w[3][l] = psi0(mx);
  w[4][l] = -psi1(mx) * h;
  w[5][l] = psi2(mx) * h2;
  dw[0][l] = dpsi0(x) * hi;
  dw[1][l] = dpsi1(x);
  dw[2][l] = dpsi2(x) * h;
  dw[3][l] = -dpsi0(mx) * hi;
  dw[4][l] = dpsi1(mx);
  dw[5][l] = -dpsi2(mx) * h;
}

/// dst[l] = src[l] for l < m <= W. A whole chunk (m = W) as fixed-size vector moves: GCC
/// makes a copy of run-time length a `rep movsq` or a memmove call, tens of cycles each,
/// and about 60 % of ApplyVector's own perf samples in dens_temp fell on those copies.
HWY_INLINE void copy_lanes(double* HWY_RESTRICT dst, const double* HWY_RESTRICT src, int m) {
  if (m == W) {
    for (int l = 0; l < W; ++l) dst[l] = src[l];
  } else {
    for (int l = 0; l < m; ++l) dst[l] = src[l];
  }
}

/// What depends on density (and composition) alone: the density's Hermite weights (Steps
/// 2-3) and the ions' and the Coulomb term's density factors (Step 6). Computed once per
/// zone, also where Newton iterates in T (newton computes it for the next W zones ahead and
/// copies a zone's lane in on refill); the same expressions in every mode, so the same bits.
struct DensityTerms {
  alignas(64) double xd[W], dd[W], sd[6][W], dsd[6][W];
  alignas(64) double deni[W], ytot1[W], xni[W], dxnidd[W], inv_lami[W], lamidd[W];

  // Out of line, as eval_lanes: called once per chunk, and it keeps the callers small
  // (see vector_math.hpp on what GCC's inliner did when they grew).
  HWY_NOINLINE void compute(const HelmTable& t, const Lanes& z, const Cells& c) {
    constexpr double avo = avogadro;
    alignas(64) double d0[W], dd2[W], ddi[W];
    for (int l = 0; l < W; ++l) {
      const int iat = static_cast<int>(c.icell[l]);
      d0[l] = t.d_nodes()[iat];
      dd[l] = t.dd()[iat];
      dd2[l] = t.dd2()[iat];
      ddi[l] = t.ddi()[iat];
    }
    for (int l = 0; l < W; ++l) {
      xd[l] = std::max((c.din[l] - d0[l]) * ddi[l], 0.0);
      quintic_weights(l, xd[l], dd[l], dd2[l], ddi[l], sd, dsd);  // dsd: the pressure's
    }
    for (int l = 0; l < W; ++l) {
      const double rho = z.dens[l], abar = z.abar[l];
      deni[l] = 1.0 / rho;
      ytot1[l] = 1.0 / abar;
      xni[l] = avo * ytot1[l] * rho;
      dxnidd[l] = avo * ytot1[l];
      const double s_n = 4.0 / 3.0 * pi * xni[l];
      const double log_s = vlog(s_n);
      inv_lami[l] = vexp(log_s * (1.0 / 3.0));  // cbrt
      const double lami = 1.0 / inv_lami[l];
      // The scalar kernel's -lami / 3 dsdd / s_n, with dsdd / s_n = dxnidd / xni = 1 / rho:
      // 1 division where it has 3.
      lamidd[l] = -lami * (1.0 / 3.0) * deni[l];
    }
  }

  /// Lane `to` takes lane `from` of `o`.
  void copy_lane(int to, const DensityTerms& o, int from) {
    xd[to] = o.xd[from];
    dd[to] = o.dd[from];
    for (int k = 0; k < 6; ++k) {
      sd[k][to] = o.sd[k][from];
      dsd[k][to] = o.dsd[k][from];
    }
    deni[to] = o.deni[from];
    ytot1[to] = o.ytot1[from];
    xni[to] = o.xni[from];
    dxnidd[to] = o.dxnidd[from];
    inv_lami[to] = o.inv_lami[from];
    lamidd[to] = o.lamidd[from];
  }
};

/// A chunk of lanes with its cells and density terms: what eval_lanes reads.
struct Slots {
  Lanes z;
  Cells c;
  DensityTerms d;

  void locate_and_compute(const HelmTable& t, bool with_dpdd) {
    c.locate(t, z);
    c.prefetch(t, with_dpdd);
    d.compute(t, z, c);
  }
  /// Lane `to` takes lane `from` of `o`: its inputs and what depends on density alone
  /// (Newton's locate_temp redoes the rest each step).
  void take(int to, const Slots& o, int from) {
    z.dens[to] = o.z.dens[from];
    z.temp[to] = o.z.temp[from];
    z.abar[to] = o.z.abar[from];
    z.zbar[to] = o.z.zbar[from];
    c.ye[to] = o.c.ye[from];
    c.din[to] = o.c.din[from];
    c.icell[to] = o.c.icell[from];
    d.copy_lane(to, o.d, from);
  }
};

/// What eval_lanes computes: p, e, dp/dT, de/dT and dp/drho (kAll); e and de/dT (a Newton
/// step of dens_ei); p and dp/dT (of dens_pres).
enum Outputs { kAll, kEnergy, kPressure };

/// The outputs `What` of every lane at (dens, temp), whose cells `cells` holds
/// (Cells::locate) and density terms `dens`: Steps 2-6 of the scalar kernel, lane-parallel. Every
/// lane must hold a valid state inside the table. What a Newton step does not read is not computed
/// (the compiler drops it: the sums and weights that only p's or only e's terms take); what is
/// computed is computed as for kAll. Out of line (called once per chunk or Newton step), so
/// that GCC's inlining of the math inside does not depend on how large the callers grow;
/// z, cells and dens are distinct objects (restrict: no alias checks in the lane loops).
template <Outputs What>
HWY_NOINLINE void eval_lanes(const HelmTable& t, double coulomb_mult, Lanes& HWY_RESTRICT z,
                             const Cells& HWY_RESTRICT cells,
                             const DensityTerms& HWY_RESTRICT dens) {
  constexpr bool Full = What == kAll;
  constexpr bool kP = What != kEnergy, kE = What != kPressure;
  constexpr double kerg = k_boltzmann;
  constexpr double avo = avogadro;
  const double* const din = cells.din;
  const double* const ye = cells.ye;
  const double* const jcell = cells.jcell;
  const std::size_t* const node = cells.node;

  // Step 2: gather the 2 x 2 nodes' data and the cell geometry (rows of a cell are two
  // contiguous runs of 18 values).
  alignas(64) double fv[4 * 9][W];
  alignas(64) double cv[16][W];
  alignas(64) double t0[W], dt[W], dt2[W], dti[W], dt2i[W];
  const double* fdata = t.f_data();
  const double* cdata = t.c_data();
  constexpr std::size_t frow = std::size_t(HelmTable::imax) * HelmTable::nf;  // j -> j + 1
  constexpr std::size_t crow = std::size_t(HelmTable::imax) * HelmTable::nc;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  // Four lanes at a time: the first 16 of each row's 18 values by 4 x 4 transposes.
  constexpr int kTransposed = 16;
  for (int l0 = 0; l0 < W; l0 += 4) {
    const double* r0[4];
    const double* r1[4];
    for (int r = 0; r < 4; ++r) {
      r0[r] = fdata + node[l0 + r] * HelmTable::nf;
      r1[r] = r0[r] + frow;
    }
    transpose_rows(r0, kTransposed, &fv[0][l0]);
    transpose_rows(r1, kTransposed, &fv[18][l0]);
    if constexpr (Full) {
      // The 4 dP/drho values of the 4 nodes: (i, j), (i + 1, j), (i, j + 1), (i + 1, j + 1).
      for (int corner = 0; corner < 4; ++corner) {
        const double* c[4];
        for (int r = 0; r < 4; ++r)
          c[r] = cdata + node[l0 + r] * HelmTable::nc + (corner / 2) * crow +
                 (corner % 2) * HelmTable::nc;
        transpose_rows(c, 4, &cv[4 * corner][l0]);
      }
    }
  }
#else
  constexpr int kTransposed = 0;
#endif
  for (int l = 0; l < W; ++l) {
    const int jat = static_cast<int>(jcell[l]);
    const double* r0 = fdata + node[l] * HelmTable::nf;
    const double* r1 = r0 + frow;
    for (int k = kTransposed; k < 18; ++k) {
      fv[k][l] = r0[k];
      fv[18 + k][l] = r1[k];
    }
    if constexpr (Full && kTransposed == 0) {  // else the transposes moved them
      const double* c0 = cdata + node[l] * HelmTable::nc;
      const double* c1 = c0 + crow;
      for (int k = 0; k < 4; ++k) {
        cv[k][l] = c0[k];
        cv[4 + k][l] = c0[HelmTable::nc + k];
        cv[8 + k][l] = c1[k];
        cv[12 + k][l] = c1[HelmTable::nc + k];
      }
    }
    t0[l] = t.t_nodes()[jat];
    dt[l] = t.dt()[jat];
    dt2[l] = t.dt2()[jat];
    dti[l] = t.dti()[jat];
    dt2i[l] = t.dt2i()[jat];
  }

  // Step 3: Hermite weights [node * 3 + derivative order][lane]; the density's are in
  // `dens`.
  const auto& sd = dens.sd;
  const auto& dsd = dens.dsd;
  const double* const xd = dens.xd;
  const double* const dd = dens.dd;
  alignas(64) double st[6][W], dst[6][W], ddst[6][W];
  alignas(64) double xt[W];
  for (int l = 0; l < W; ++l) {
    xt[l] = std::max((z.temp[l] - t0[l]) * dti[l], 0.0);
    const double mxt = 1.0 - xt[l];
    quintic_weights(l, xt[l], dt[l], dt2[l], dti[l], st, dst);
    if constexpr (kE) {  // d2/dT2: de/dT's
      ddst[0][l] = ddpsi0(xt[l]) * dt2i[l];
      ddst[1][l] = ddpsi1(xt[l]) * dti[l];
      ddst[2][l] = ddpsi2(xt[l]);
      ddst[3][l] = ddpsi0(mxt) * dt2i[l];
      ddst[4][l] = -ddpsi1(mxt) * dti[l];
      ddst[5][l] = ddpsi2(mxt);
    }
  }

  // Step 4: the biquintic sums, temperature first: g_v[a p][l] = sum over the T node b and
  // order q of F_{pq}(a, b) times the T weight (v = value, d/dT, d2/dT2).
  alignas(64) double g0[6][W], g1[6][W], g2[6][W];
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) {
      const int ap = 3 * a + p;
      for (int l = 0; l < W; ++l) {
        double s0 = 0.0, s1 = 0.0, s2 = 0.0;
#pragma GCC unroll 6
        for (int bq = 0; bq < 6; ++bq) {
          const int b = bq / 3, q = bq % 3;
          // node (a, b) is fv[(2 b + a) * 9 + ...]
          const double v = fv[(2 * b + a) * 9 + f_index[p][q]][l];
          s0 += v * st[bq][l];
          s1 += v * dst[bq][l];
          if constexpr (kE) s2 += v * ddst[bq][l];
        }
        g0[ap][l] = s0;
        g1[ap][l] = s1;
        if constexpr (kE) g2[ap][l] = s2;
      }
    }
  alignas(64) double free[W], df_d[W], df_t[W], df_dt[W], df_tt[W];
  for (int l = 0; l < W; ++l) {
    double f = 0.0, fd = 0.0, ft = 0.0, fdt = 0.0, ftt = 0.0;
#pragma GCC unroll 6
    for (int ap = 0; ap < 6; ++ap) {
      if constexpr (kE) {
        f += g0[ap][l] * sd[ap][l];
        ft += g1[ap][l] * sd[ap][l];
        ftt += g2[ap][l] * sd[ap][l];
      }
      if constexpr (kP) {
        fd += g0[ap][l] * dsd[ap][l];
        fdt += g1[ap][l] * dsd[ap][l];
      }
    }
    free[l] = f;
    df_d[l] = fd;
    df_t[l] = ft;
    df_dt[l] = fdt;
    df_tt[l] = ftt;
  }

  // Step 5 (Full): bicubic dP/drho.
  alignas(64) double dpdf[W];
  if constexpr (Full) {
    for (int l = 0; l < W; ++l) {
      const double mxd = 1.0 - xd[l], mxt = 1.0 - xt[l];
      const double cd[4] = {cpsi0(xd[l]), cpsi1(xd[l]) * dd[l], cpsi0(mxd), -cpsi1(mxd) * dd[l]};
      const double ct[4] = {cpsi0(xt[l]), cpsi1(xt[l]) * dt[l], cpsi0(mxt), -cpsi1(mxt) * dt[l]};
      double s = 0.0;
#pragma GCC unroll 16
      for (int k = 0; k < 16; ++k) {
        const int node = k / 4, slot = k % 4;  // node = 2 b + a; slot = file order
        const int a = node % 2, b = node / 2;
        const int p = (slot == 1 || slot == 3) ? 1 : 0;  // _d or _dt
        const int q = (slot >= 2) ? 1 : 0;               // _t or _dt
        s += cv[k][l] * cd[2 * a + p] * ct[2 * b + q];
      }
      dpdf[l] = s;
    }
  }

  // Step 6: the physics of the scalar kernel, with its divisions shared: the scalar kernel
  // divides 14 times per zone (1/T, 1/kT, c1/xs, 1/Gamma three times, by 3 four times, the
  // two ratios to p0 and e0 and the two tapers), this one 7 times (1/T, 1/Gamma, 1/xs, the
  // ratios, the tapers): 7 divisions of 4 lanes less per zone and Newton step, some 14
  // cycles of the divider on AVX2 by the processors' published throughputs (estimated, not
  // measured; dens_temp's measured speed-up is in docs/memory.md). The same terms and sums; the
  // products that replace the quotients round differently, so the two agree to round-off rather
  // than to the bit (tests/unit/test_helmholtz.cpp: 1e-12). Each output's expression is the same in
  // every mode (eval_lanes<What> leaves out what it does not return, nothing else).
  constexpr double a1 = -0.898004, b1 = 0.96786, c1 = 0.220703, d1 = -0.86097;
  constexpr double a2 = 0.29561, b2 = 1.9885, c2 = 0.288675;
  constexpr double esqu = electron_charge * electron_charge;
  constexpr double third = 1.0 / 3.0;
  for (int l = 0; l < W; ++l) {
    const double rho = z.dens[l], temp = z.temp[l], zbar = z.zbar[l];
    const double deni = dens.deni[l], tempi = 1.0 / temp, ytot1 = dens.ytot1[l];
    const double kt = kerg * temp;
    // radiation
    const double prad = a_radiation / 3.0 * temp * temp * temp * temp;
    const double dpraddd = 0.0, dpraddt = 4.0 * prad * tempi;
    const double erad = 3.0 * prad * deni;
    const double deraddt = 3.0 * dpraddt * deni;
    // ions
    const double xni = dens.xni[l], dxnidd = dens.dxnidd[l];
    const double pion = xni * kt, dpiondd = dxnidd * kt, dpiondt = xni * kerg;
    const double eion = 1.5 * pion * deni;
    const double deiondt = 1.5 * dpiondt * deni;
    // electrons and positrons
    const double dl = din[l], y = ye[l];
    const double pele = dl * dl * df_d[l];
    const double dpepdt = dl * dl * df_dt[l];
    const double dpepdd = Full ? std::max(y * dpdf[l], 0.0) : 0.0;
    const double sele = -df_t[l] * y;
    const double dsepdt = -df_tt[l] * y;
    const double eele = y * free[l] + temp * sele;
    const double deepdt = temp * dsepdt;
    // Coulomb: both branches, then a select (no branch).
    const double inv_lami = dens.inv_lami[l], lamidd = dens.lamidd[l];
    const double plasg = zbar * zbar * (esqu / kerg) * tempi * inv_lami;
    const double plasgi = 1.0 / plasg;
    const double plasgdd = -plasg * inv_lami * lamidd;
    const double plasgdt = -plasg * tempi;
    // strong coupling (Gamma >= 1)
    const double sq = std::sqrt(plasg);
    const double xs = std::sqrt(sq), xsi = 1.0 / xs;
    const double ys = avo * ytot1 * kerg;
    const double ecoul_s = ys * temp * (a1 * plasg + b1 * xs + c1 * xsi + d1);
    const double pcoul_s = rho * ecoul_s * third;
    const double ys2 = avo * ytot1 * kt * (a1 + 0.25 * plasgi * (b1 * xs - c1 * xsi));
    const double decouldd_s = ys2 * plasgdd;
    const double decouldt_s = ys2 * plasgdt + ecoul_s * tempi;
    const double dpcouldd_s = ecoul_s * third + rho * third * decouldd_s;
    const double dpcouldt_s = rho * third * decouldt_s;
    // weak coupling (Gamma < 1)
    const double xw = plasg * sq;
    const double yw = vexp(b2 * vlog(plasg));
    const double zw = c2 * xw - a2 * yw * third;
    const double pcoul_w = -pion * zw;
    const double ecoul_w = 3.0 * pcoul_w * deni;
    const double sw = 1.5 * c2 * sq - a2 * b2 * yw * third * plasgi;
    const double dpcouldd_w = -dpiondd * zw - pion * sw * plasgdd;
    const double dpcouldt_w = -dpiondt * zw - pion * sw * plasgdt;
    const double decouldt_w = 3.0 * deni * dpcouldt_w;
    const bool strong = plasg >= 1.0;
    const double pcoul = strong ? pcoul_s : pcoul_w;
    const double ecoul = strong ? ecoul_s : ecoul_w;
    const double dpcouldd = strong ? dpcouldd_s : dpcouldd_w;
    const double dpcouldt = strong ? dpcouldt_s : dpcouldt_w;
    const double decouldt = strong ? decouldt_s : decouldt_w;
    // The Coulomb taper (helmholtz.hpp), both forms then a select.
    const double cm = coulomb_mult;
    const double p0 = prad + pion + pele, e0 = erad + eion + eele;
    const double rp = p0 > 0.0 ? -(cm * pcoul) / p0 : 0.0;
    const double re = e0 > 0.0 ? -(cm * ecoul) / e0 : 0.0;
    double op, dhp, oe, dhe;  // 1 - h and h' for the pressure and the energy
    coulomb_taper(rp, op, dhp);
    coulomb_taper(re, oe, dhe);
    const bool tp = rp > kCoulombTaperStart, te = re > kCoulombTaperStart;
    const double bp = op + dhp * rp, be = oe + dhe * re;
    // totals (Timmes' sums where untapered)
    if constexpr (kP) {
      z.pres[l] = tp ? p0 * op : prad + pion + pele + cm * pcoul;
      z.dpdt[l] = tp ? (dpraddt + dpiondt + dpepdt) * bp + dhp * cm * dpcouldt
                     : dpraddt + dpiondt + dpepdt + cm * dpcouldt;
    }
    if constexpr (kE) {
      z.eint[l] = te ? e0 * oe : erad + eion + eele + cm * ecoul;
      z.dedt[l] = te ? (deraddt + deiondt + deepdt) * be + dhe * cm * decouldt
                     : deraddt + deiondt + deepdt + cm * decouldt;
    }
    if constexpr (Full)
      z.dpdd[l] = tp ? (dpraddd + dpiondd + dpepdd) * bp + dhp * cm * dpcouldd
                     : dpraddd + dpiondd + dpepdd + cm * dpcouldd;
  }
}

/// A lane's inputs are usable: positive, finite, inside the table (rho Y_e; and T when
/// it is an input). Returns false for a failing lane.
bool valid_lane(const HelmTable& t, double dens, double temp, double abar, double zbar,
                bool temp_is_input) {
  auto positive = [](double v) { return v > 0.0 && std::isfinite(v); };
  if (!positive(dens) || !positive(abar) || !positive(zbar) || !positive(temp)) return false;
  const double din = zbar / abar * dens;
  if (din < t.dens_min() || din > t.dens_max()) return false;
  if (temp_is_input && (temp < t.temp_min() || temp > t.temp_max())) return false;
  return true;
}

/// The safeguarded Newton iteration in T (invert_step) of every zone of the pencil, W lanes
/// at a time, a lane taking the next zone as soon as its own is done (converged, failed or
/// out of iterations): a chunk no longer waits for its slowest zone (a zone took 3.5
/// iterations on average, a chunk of 8 as many as its slowest). Each zone's steps are
/// what they were (lanes never mix), so the temperatures are the same bits, as long as
/// GCC's vectorised lane loops treat every lane alike (whole vectors, no scalar peel: W
/// is a multiple of every vector length; tests/unit/test_helmholtz.cpp checks each zone of
/// a pencil against the zone alone on every target). Writes the
/// final T, the iterations and whether the zone failed (bad input included).
void newton(const HelmTable& t, double coulomb_mult, double abar_default, double zbar_default,
            bool by_e, const Pencil& p, double* solved, int* iterations, unsigned char* bad) {
  const std::size_t n = p.n;
  const double tmin = t.temp_min(), tmax = t.temp_max();
  Slots lanes;  // the zones being iterated
  Lanes& z = lanes.z;
  alignas(64) double want[W];
  std::ptrdiff_t zone[W];  // the zone a lane holds, -1: none (Lanes::idle)
  int iters[W];
  Bracket br[W];
  // The next W zones of the pencil, from `ahead` on: loaded, checked, their density terms
  // computed (vectorised) and their first table lines prefetched before a lane takes them.
  Slots ahead_slots;
  Lanes& az = ahead_slots.z;
  bool aok[W];
  std::size_t ahead = 0;
  auto look_ahead = [&](std::size_t from) {
    ahead = from;
    for (int s = 0; s < W; ++s) {
      const std::size_t i = from + s;
      aok[s] = false;
      az.idle(s);
      if (i >= n) continue;
      const double rho = p.dens[i], temp = p.temp[i];
      const double abar = p.abar ? p.abar[i] : abar_default;
      const double zbar = p.zbar ? p.zbar[i] : zbar_default;
      const double w = by_e ? p.eint[i] : p.pres[i];
      if (!valid_lane(t, rho, temp, abar, zbar, false) || !(w > 0.0 && std::isfinite(w))) continue;
      aok[s] = true;
      az.dens[s] = rho;
      az.temp[s] = std::min(std::max(temp, tmin), tmax);
      az.abar[s] = abar;
      az.zbar[s] = zbar;
    }
    ahead_slots.locate_and_compute(t, false);  // a Newton step reads no dP/drho
  };
  // An idle lane holds the idle state (Lanes::idle) with its density terms (a lane never
  // mixes two zones' terms): computed once per thread and table, not per call (a hydro
  // sweep calls this per pencil of a few tens of zones). They depend on the table's grid
  // alone, the same for every table (HelmTable::standard_grid).
  thread_local const HelmTable* idle_for = nullptr;
  thread_local Slots idle_state;
  if (idle_for != &t) {
    for (int l = 0; l < W; ++l) idle_state.z.idle(l);
    idle_state.locate_and_compute(t, false);
    idle_for = &t;
  }
  auto idle = [&](int l) {
    zone[l] = -1;
    lanes.take(l, idle_state, 0);
    want[l] = 1e15;
  };
  for (int l = 0; l < W; ++l) idle(l);
  std::size_t next = 0;
  if (n > 0) look_ahead(0);
  for (;;) {
    bool any = false;
    for (int l = 0; l < W; ++l) {
      while (zone[l] < 0 && next < n) {
        if (next >= ahead + W) look_ahead(next);
        const std::size_t i = next++;
        const int s = static_cast<int>(i - ahead);
        iterations[i] = 0;
        if (!aok[s]) {
          bad[i] = 1;
          solved[i] = p.temp[i];
          continue;
        }
        zone[l] = static_cast<std::ptrdiff_t>(i);
        lanes.take(l, ahead_slots, s);
        want[l] = by_e ? p.eint[i] : p.pres[i];
        iters[l] = 0;
        br[l] = Bracket{};
        br[l].lo = tmin;
        br[l].hi = tmax;
      }
      any = any || zone[l] >= 0;
    }
    if (!any) break;
    lanes.c.locate_temp(t, z);
    if (by_e)
      eval_lanes<kEnergy>(t, coulomb_mult, z, lanes.c, lanes.d);
    else
      eval_lanes<kPressure>(t, coulomb_mult, z, lanes.c, lanes.d);
    const double* v = by_e ? z.eint : z.pres;
    const double* dvdt = by_e ? z.dedt : z.dpdt;
    for (int l = 0; l < W; ++l) {
      if (zone[l] < 0) continue;
      InvertStatus status;
      z.temp[l] = invert_step(z.temp[l], v[l] - want[l], want[l], dvdt[l], tmin, tmax,
                              Helmholtz::newton_tol, br[l], status);
      ++iters[l];
      const bool going = status == InvertStatus::going;
      if (going && iters[l] < Helmholtz::max_newton) continue;
      const auto i = static_cast<std::size_t>(zone[l]);
      solved[i] = z.temp[l];
      iterations[i] = iters[l];
      bad[i] = going || status == InvertStatus::outside_table ||
               status == InvertStatus::no_solution;  // going: out of iterations
      idle(l);
    }
  }
}

}  // namespace

Result ApplyVector(const HelmTable& t, double coulomb_mult, double abar_default,
                   double zbar_default, Mode mode, const Pencil& p) {
  Result res;
  const std::size_t n = p.n;
  const double tmin = t.temp_min(), tmax = t.temp_max();
  const bool iterate = mode != Mode::dens_temp;
  const bool by_e = mode == Mode::dens_ei;
  // Iterating modes: T of every zone first (newton), then the zones as for dens_temp.
  // Kept per thread: a hydro sweep calls this once per pencil of a few tens of zones.
  thread_local std::vector<double> solved;
  thread_local std::vector<int> newton_iterations;
  thread_local std::vector<unsigned char> newton_bad;
  if (iterate) {
    solved.resize(n);
    newton_iterations.resize(n);
    newton_bad.resize(n);
    newton(t, coulomb_mult, abar_default, zbar_default, by_e, p, solved.data(),
           newton_iterations.data(), newton_bad.data());
  }
  long iterations = 0;  // accumulated in registers, not in `res` (memory) lane by lane
  int max_iterations = 0;
  // A chunk is loaded and located (Step 1) one ahead of its evaluation, and its table
  // lines prefetched, so that their misses overlap the evaluation of the chunk before.
  struct Chunk : Slots {
    alignas(64) int iters[W];
    bool failed[W];
    bool any_failed;
    int m;
  };
  Chunk chunks[2];
  const double* temp_in = iterate ? solved.data() : p.temp;
  auto load = [&](std::size_t base, Chunk& c) {
    Lanes& z = c.z;
    c.m = static_cast<int>(std::min<std::size_t>(W, n - base));
    const int m = c.m;
    // Lanes past the end and failing lanes are idle (Lanes::idle).
    copy_lanes(z.dens, p.dens + base, m);
    copy_lanes(z.temp, temp_in + base, m);
    if (p.abar)
      copy_lanes(z.abar, p.abar + base, m);
    else
      std::fill(z.abar, z.abar + m, abar_default);
    if (p.zbar)
      copy_lanes(z.zbar, p.zbar + base, m);
    else
      std::fill(z.zbar, z.zbar + m, zbar_default);
    c.any_failed = false;
    for (int l = 0; l < W; ++l) {
      c.iters[l] = 0;
      c.failed[l] = false;
    }
    for (int l = 0; l < m; ++l) {
      const std::size_t i = base + l;
      const bool ok = iterate ? !newton_bad[i]
                              : valid_lane(t, z.dens[l], z.temp[l], z.abar[l], z.zbar[l], true);
      if (iterate) c.iters[l] = newton_iterations[i];
      if (!ok) {
        c.failed[l] = c.any_failed = true;
        z.idle(l);
      }
    }
    for (int l = m; l < W; ++l) z.idle(l);
    for (int l = 0; l < W; ++l) z.temp[l] = std::min(std::max(z.temp[l], tmin), tmax);
    c.locate_and_compute(t, true);
  };
  if (n > 0) load(0, chunks[0]);
  for (std::size_t base = 0, k = 0; base < n; base += W, k ^= 1) {
    if (base + W < n) load(base + W, chunks[k ^ 1]);
    Chunk& c = chunks[k];
    Lanes& z = c.z;
    const int m = c.m;
    const int* const iters = c.iters;
    const bool* const failed = c.failed;
    const bool any_failed = c.any_failed;
    eval_lanes<kAll>(t, coulomb_mult, z, c.c, c.d);
    // gamc, game, cs (Cox & Giuli ch. 9; relativistic sound speed, C&G 14.29).
    alignas(64) double gamc[W], game[W], cs[W];
    for (int l = 0; l < W; ++l) {
      const double rho = z.dens[l], temp = z.temp[l], pres = z.pres[l];
      const double chit = temp / pres * z.dpdt[l];
      const double chid = z.dpdd[l] * rho / pres;
      const double x = pres / rho * chit / (temp * z.dedt[l]);
      gamc[l] = chit * x + chid;
      game[l] = 1.0 + pres / (rho * z.eint[l]);
      const double zrel = 1.0 + (z.eint[l] + c_light * c_light) * rho / pres;
      cs[l] = c_light * std::sqrt(gamc[l] / zrel);
    }
    // Write back the lanes that did not fail: output by output, whole runs where no lane
    // failed (the common chunk), lane by lane otherwise.
    for (int l = 0; l < m; ++l) {
      iterations += iters[l];
      max_iterations = std::max(max_iterations, iters[l]);
    }
    if (any_failed && res.failed < 0)
      res.failed =
          static_cast<std::ptrdiff_t>(base + (std::find(failed, failed + m, true) - failed));
    auto put = [&](double* out, const double* v) {
      if (!any_failed) {
        copy_lanes(out + base, v, m);
        return;
      }
      for (int l = 0; l < m; ++l)
        if (!failed[l]) out[base + l] = v[l];
    };
    if (mode != Mode::dens_ei) put(p.eint, z.eint);
    if (mode != Mode::dens_pres) put(p.pres, z.pres);
    if (mode != Mode::dens_temp) put(p.temp, z.temp);
    put(p.gamc, gamc);
    put(p.game, game);
    if (p.cs != nullptr) put(p.cs, cs);
  }
  res.iterations = iterations;
  res.max_iterations = max_iterations;
  return res;
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::eos::helmholtz::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::eos::helmholtz::detail {

HWY_EXPORT(ApplyVector);

Result apply_vector(const HelmTable& t, double coulomb_mult, double abar_default,
                    double zbar_default, Mode mode, const Pencil& p) {
  return HWY_DYNAMIC_DISPATCH(ApplyVector)(t, coulomb_mult, abar_default, zbar_default, mode, p);
}

}  // namespace tessera::eos::helmholtz::detail
#endif

// The PIC current deposit with Google Highway (kernels_simd.hpp: simd::deposit), compiled
// once per target (foreach_target.h) with the pieces of physics/pic/kernels_simd-inl.h.
//
// Esirkepov's deposit (esirkepov.hpp) on vectors of consecutive particles of one species
// segment: the windows (S0, DS and the prefix sums of DS) and every per-particle
// coefficient are computed on vectors into a buffer, a batch of vectors at a time; then
// each particle's current, rows along x, is added to the sums of its run (consecutive
// particles whose windows start at the same point; the particles sorted by cell make them
// long: pic.sort = "cell"), and a run's sums go into J when the next run starts (RunSums).
// J's sums are runs in the particles' order; a particle's contribution does not depend on
// its lane (the padded partial vector runs through the same compiled code: TESSERA_ONE_COPY).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/pic/deposit_simd.cpp"
#include <hwy/aligned_allocator.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>
#include <utility>

#include "physics/pic/kernels_simd-inl.h"
#include "physics/pic/kernels_simd.hpp"

HWY_BEFORE_NAMESPACE();
namespace tessera::pic::simd {
namespace HWY_NAMESPACE {

// detail::MoveWindow<P, Active>: the old shape S0 and DS = S1 - S0 on the common window of
// N = P + 2 points from min(first_old, first_new); along an inactive axis S0 = 1, DS = 0 at 0.
// w(d, 0) is the first point, s0(m) = w(1 + m), ds(m) = w(1 + n + m).
template <int P, bool Active>
struct WindowV {
  static constexpr int n = Active ? P + 2 : 1;
  Vs<1 + 2 * n> w;
  HWY_INLINE V first(DF d) const { return w(d, 0); }
  HWY_INLINE V s0(DF d, int m) const { return w(d, 1 + m); }
  HWY_INLINE V ds(DF d, int m) const { return w(d, 1 + n + m); }
  WindowV(DF d, V so, V sn) {
    if constexpr (!Active) {
      w.set(d, 0, hn::Zero(d));
      w.set(d, 1, hn::Set(d, 1.0));
      w.set(d, 2, hn::Zero(d));
    } else {
      ShapeV<P> a, b;
      ShapeOf<P>(d, so, a);
      ShapeOf<P>(d, sn, b);
      const V first = hn::Min(a(d, 0), b(d, 0));
      w.set(d, 0, first);
      // Offset 1 (the shape starts one point into the window) or 0.
      const auto ma = hn::Gt(a(d, 0), first);
      const auto mb = hn::Gt(b(d, 0), first);
      const V zero = hn::Zero(d);
      for (int m = 0; m < n; ++m) {
        const V a0 = m <= P ? a(d, 1 + m) : zero, a1 = m >= 1 ? a(d, m) : zero;
        const V b0 = m <= P ? b(d, 1 + m) : zero, b1 = m >= 1 ? b(d, m) : zero;
        const V s = hn::IfThenElse(ma, a1, a0);
        w.set(d, 1 + m, s);
        w.set(d, 1 + n + m, hn::Sub(hn::IfThenElse(mb, b1, b0), s));
      }
    }
  }
};

// detail::transverse: S0_b S0_c + (DS_b S0_c + S0_b DS_c) / 2 + DS_b DS_c / 3.
// On any tag: vectors of particles (DF) in the window phase, 4 x points of one particle
// (D4) in the rows.
template <class D>
HWY_INLINE hn::Vec<D> Transverse(D d, hn::Vec<D> s0b, hn::Vec<D> dsb, hn::Vec<D> s0c,
                                 hn::Vec<D> dsc) {
  return hn::Add(hn::Add(hn::Mul(s0b, s0c),
                         hn::Mul(hn::Set(d, 0.5), hn::Add(hn::Mul(dsb, s0c), hn::Mul(s0b, dsc)))),
                 hn::Mul(hn::Mul(hn::Set(d, 1.0 / 3.0), dsb), dsc));
}

// One particle's deposit as deposit_current<D, P> computes it, from a vector's buffer: the
// coefficients of its rows of J along x, and the x rows themselves. Per particle (lane) the
// buffer holds, each a row of L lanes: the window's first point (3); cx t(y_j, z_k) for J_x
// (nz ny, t = detail::transverse); cy pre_y[j] for J_y (ny - 1; one, cy, along an inactive
// y); cz pre_z[k] for J_z (nz - 1; one along an inactive z); S0 and DS of y (2 ny) and of z
// (2 nz), the transverse factor's other axis. pre[m] = DS[0] + ... + DS[m] (Esirkepov's
// prefix sums); an inactive axis has the single point 0 with S0 = 1 and DS = 0. The x rows
// (S0, DS and pre of x) follow, interleaved by particle (StoreInterleaved4: a particle's 4
// points adjacent, zeros past the window), so that a particle's row is a load of what a
// whole-vector store wrote (a row assembled from scalar stores stalls the load that reads
// it). Every per-particle coefficient is computed on vectors of particles.
template <int D, int P>
struct ParticleRows {
  static constexpr int nx = P + 2, ny = D > 1 ? P + 2 : 1, nz = D > 2 ? P + 2 : 1;
  static constexpr int groups = (nx + 3) / 4;  // of 4 x points
  static constexpr int ncy = D > 1 ? ny - 1 : 1, ncz = D > 2 ? nz - 1 : 1;
  static constexpr int kCX = 3, kCY = kCX + nz * ny, kCZ = kCY + ncy, kBY = kCZ + ncz,
                       kBZ = kBY + 2 * ny, rows = kBZ + 2 * nz;
  static constexpr int x_doubles_per_lane = 3 * groups * 4;
  const double* b = nullptr;  // the buffer, at lane l
  std::size_t L = 0;
  HWY_INLINE ParticleRows(const double* buf, std::size_t lanes, std::size_t l)
      : b(buf + l), L(lanes) {}
  HWY_INLINE double at(int row) const { return b[std::size_t(row) * L]; }
  HWY_INLINE std::ptrdiff_t first(int a) const { return std::ptrdiff_t(at(a)); }
};

// J(row[0..R)) -= val(i0) chunk by chunk (4-lane vectors along x; kUnit: x is J's
// unit-stride axis, var-major). A last partial chunk inside the window (NX points) is
// subtracted whole with its lanes past R zero (x - (+0) is x, to the bit); one reaching past
// the window, or a strided row, is subtracted point by point.
template <int R, int NX, bool kUnit, class D4, class F>
HWY_INLINE void SubRow(D4 d4, double* HWY_RESTRICT row, std::ptrdiff_t si, const F& val) {
  const std::size_t N = hn::Lanes(d4);
  std::size_t i0 = 0;
  if constexpr (kUnit) {
    for (; i0 + N <= std::size_t(R); i0 += N)
      hn::StoreU(hn::Sub(hn::LoadU(d4, row + i0), val(i0)), d4, row + i0);
    if (i0 < std::size_t(R)) {
      const auto v = hn::IfThenElseZero(hn::FirstN(d4, std::size_t(R) - i0), val(i0));
      if (i0 + N <= std::size_t(NX)) {
        hn::StoreU(hn::Sub(hn::LoadU(d4, row + i0), v), d4, row + i0);
      } else {
        HWY_ALIGN double t[4];
        hn::Store(v, d4, t);
        for (std::size_t i = i0; i < std::size_t(R); ++i) row[i] -= t[i - i0];
      }
    }
  } else {
    for (; i0 < std::size_t(R); i0 += N) {
      HWY_ALIGN double t[4];
      hn::Store(val(i0), d4, t);
      for (std::size_t i = i0; i < std::size_t(R) && i < i0 + N; ++i)
        row[std::ptrdiff_t(i) * si] -= t[i - i0];
    }
  }
}

// The current of a run of consecutive particles whose windows start at the same point,
// summed before it goes into J: rows along x of 4 * groups values (ParticleRows), J_x's
// (k, j) at jx[k * ny + j], J_y's at jy[k * (ny - 1) + j] (a single row along an inactive
// y), J_z's at jz[k * ny + j] (j along an inactive z). A run's values are added in the
// particles' order, and the run is subtracted from J when the next starts: J's sums are
// runs in the particles' order, the same on any rank count (the particles' order is
// canonical). Particles sorted by cell (pic.sort) make the runs long; any order is right.
template <int D, int P>
struct RunSums {
  using Rows = ParticleRows<D, P>;
  static constexpr int nx = Rows::nx, ny = Rows::ny, nz = Rows::nz, W = 4 * Rows::groups;
  static constexpr int rx = nz * ny, ry = D > 1 ? nz *(ny - 1) : 1, rz = D > 2 ? (nz - 1) * ny : ny;
  HWY_ALIGN double jx[rx][W] = {}, jy[ry][W] = {}, jz[rz][W] = {};
  std::ptrdiff_t first[3] = {0, 0, 0};
  bool open = false;  // a run is being summed
};

// G rows of 4-lane vectors, in registers where the target allows (SVE's sizeless vectors
// cannot be array elements: memory there).
using D4 = hn::CappedTag<double, 4>;
#if HWY_HAVE_SCALABLE
template <int G>
struct Rows4 {
  HWY_ALIGN double m[G][4];
  HWY_INLINE auto get(D4 d4, int g) const { return hn::Load(d4, m[g]); }
  HWY_INLINE void set(D4 d4, int g, hn::Vec<D4> v) { hn::Store(v, d4, m[g]); }
};
#else
template <int G>
struct Rows4 {
  hn::Vec<D4> m[G];
  HWY_INLINE Rows4() {}
  HWY_INLINE auto get(D4, int g) const { return m[g]; }
  HWY_INLINE void set(D4, int g, hn::Vec<D4> v) { m[g] = v; }
};
#endif

// deposit_current<D, P> Steps 2-4 for the particles l in [l0, l1) of a vector's buffer, all
// of the open run, added to its sums particle after particle: J_x's rows (the prefix of DS_x
// times cx t(y_j, z_k)), J_y's and J_z's (the transverse factor of x and the other axis
// times cy pre_y[j] or cz pre_z[k], or the velocity's coefficient along an inactive axis,
// stored negated). The rows go in passes of up to 8, held in registers across the
// particles (memory on SVE: Rows4); a row's sum is the same sequence of additions as one
// particle at a time.
template <int D, int P>
HWY_INLINE void AddRun(RunSums<D, P>& r, const double* HWY_RESTRICT b, std::size_t L,
                       std::size_t l0, std::size_t l1) {
  using Rows = ParticleRows<D, P>;
  constexpr int ny = Rows::ny, nz = Rows::nz, W = RunSums<D, P>::W;
  const D4 d4;
  const std::size_t N = hn::Lanes(d4);
  const double* HWY_RESTRICT xr = b + std::size_t(Rows::rows) * L;
  auto coef = [&](int row, std::size_t l) { return hn::Set(d4, b[std::size_t(row) * L + l]); };
  auto at = [&](int row, std::size_t l) { return b[std::size_t(row) * L + l]; };
  for (std::size_t i0 = 0; i0 < std::size_t(W); i0 += N) {
    // x points [i0, i0 + N) of S0 (what = 0), DS (1) or pre (2) of particle l.
    auto xrow = [&](int what, std::size_t l) {
      return hn::LoadU(d4,
                       xr + (std::size_t(what * Rows::groups) + i0 / 4) * 4 * L + 4 * l + i0 % 4);
    };
    // G rows: sums[g] (row g of the pass) += f(l, g) for each particle.
    auto pass = [&]<int G>(double* const* sums, const auto& add) {
      Rows4<G> acc;
      for (int g = 0; g < G; ++g) acc.set(d4, g, hn::Load(d4, sums[g] + i0));
      for (std::size_t l = l0; l < l1; ++l) add(l, acc);
      for (int g = 0; g < G; ++g) hn::Store(acc.get(d4, g), d4, sums[g] + i0);
    };
    // J_x: rows q = k ny + j, 8 a pass.
    [&]<int... Ps>(std::integer_sequence<int, Ps...>) {
      (
          [&]<int Q0>() {
            constexpr int G = nz * ny - Q0 < 8 ? nz * ny - Q0 : 8;
            double* sums[G];
            for (int g = 0; g < G; ++g) sums[g] = r.jx[Q0 + g];
            pass.template operator()<G>(sums, [&](std::size_t l, Rows4<G>& acc) {
              const auto pre = xrow(2, l);
              for (int g = 0; g < G; ++g)
                acc.set(d4, g, hn::Add(acc.get(d4, g), hn::Mul(coef(Rows::kCX + Q0 + g, l), pre)));
            });
          }.template operator()<8 * Ps>(),
          ...);
    }
    (std::make_integer_sequence<int, (nz * ny + 7) / 8>());
    // Rows per point m of another axis (the transverse factor of x and that point, S0 and DS
    // at buffer rows kB + 2 m), R rows n each with the coefficient at row kC + n, the run's
    // sums at sum_of(m, n); two points a pass.
    auto by_points = [&]<int M, int R>(int kB, int kC, const auto& sum_of) {
      [&]<int... Ms>(std::integer_sequence<int, Ms...>) {
        (
            [&]<int M0>() {
              constexpr int NM = M - M0 < 2 ? M - M0 : 2;
              double* sums[NM * R];
              for (int mm = 0; mm < NM; ++mm)
                for (int n = 0; n < R; ++n) sums[mm * R + n] = sum_of(M0 + mm, n);
              pass.template operator()<NM * R>(sums, [&](std::size_t l, Rows4<NM * R>& acc) {
                const auto s0 = xrow(0, l), ds = xrow(1, l);
                for (int mm = 0; mm < NM; ++mm) {
                  const int c = kB + 2 * (M0 + mm);
                  const auto t =
                      Transverse(d4, s0, ds, hn::Set(d4, at(c, l)), hn::Set(d4, at(c + 1, l)));
                  for (int n = 0; n < R; ++n)
                    acc.set(d4, mm * R + n,
                            hn::Add(acc.get(d4, mm * R + n), hn::Mul(coef(kC + n, l), t)));
                }
              });
            }.template operator()<2 * Ms>(),
            ...);
      }
      (std::make_integer_sequence<int, (M + 1) / 2>());
    };
    // J_y: per z point k, rows j < ny - 1 (one row, cy, along an inactive y).
    if constexpr (D > 1) {
      by_points.template operator()<nz, ny - 1>(
          Rows::kBZ, Rows::kCY, [&](int k, int j) { return r.jy[k * (ny - 1) + j]; });
    } else {
      double* sums[1] = {r.jy[0]};
      pass.template operator()<1>(sums, [&](std::size_t l, Rows4<1>& acc) {
        const auto t = Transverse(d4, xrow(0, l), xrow(1, l), hn::Set(d4, 1.0), hn::Zero(d4));
        acc.set(d4, 0, hn::Add(acc.get(d4, 0), hn::Mul(coef(Rows::kCY, l), t)));
      });
    }
    // J_z: per y point j, rows k < nz - 1 (one, cz, along an inactive z).
    by_points.template operator()<ny, (D > 2 ? nz - 1 : 1)>(
        Rows::kBY, Rows::kCZ, [&](int j, int k) { return r.jz[k * ny + j]; });
  }
}

// J -= the run's sums (the window's points only), and the sums back to zero.
template <int D, int P, bool kUnit>
HWY_INLINE void FlushRun(const Currents& J, RunSums<D, P>& r) {
  using R = RunSums<D, P>;
  constexpr int nx = R::nx, ny = R::ny, nz = R::nz, W = R::W;
  const hn::CappedTag<double, 4> d4;
  const std::size_t N = hn::Lanes(d4);
  const std::ptrdiff_t si = kUnit ? 1 : J.jx.si, sj = J.jx.sj, sk = J.jx.sk;
  const std::ptrdiff_t o = r.first[0] * si + r.first[1] * sj + r.first[2] * sk;
  auto flush = [&]<int Rn>(double* HWY_RESTRICT to, double* HWY_RESTRICT row) {
    SubRow<Rn, nx, kUnit>(d4, to, si, [&](std::size_t i0) { return hn::Load(d4, row + i0); });
    for (std::size_t i0 = 0; i0 < std::size_t(W); i0 += N) hn::Store(hn::Zero(d4), d4, row + i0);
  };
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      flush.template operator()<nx - 1>(J.jx.p + o + j * sj + k * sk, r.jx[k * ny + j]);
  if constexpr (D > 1) {
    for (int k = 0; k < nz; ++k)
      for (int j = 0; j < ny - 1; ++j)
        flush.template operator()<nx>(J.jy.p + o + j * sj + k * sk, r.jy[k * (ny - 1) + j]);
  } else {
    flush.template operator()<nx>(J.jy.p + o, r.jy[0]);
  }
  if constexpr (D > 2) {
    for (int k = 0; k < nz - 1; ++k)
      for (int j = 0; j < ny; ++j)
        flush.template operator()<nx>(J.jz.p + o + j * sj + k * sk, r.jz[k * ny + j]);
  } else {
    for (int j = 0; j < ny; ++j) flush.template operator()<nx>(J.jz.p + o + j * sj, r.jz[j]);
  }
  r.open = false;
}

template <int D, int P>
void DepositT(const Currents& J, const Grid& g, std::size_t n, const double* xo,
              const double* const x[3], const double* const u[3], const double* w, double q,
              double dt) {
  const DF d;
  using Rows = ParticleRows<D, P>;
  constexpr int nx = Rows::nx, ny = Rows::ny, nz = Rows::nz;
  const std::size_t L = hn::Lanes(d);
  // The windows of a batch of kBatch vectors of particles, [row][lane] (ParticleRows'
  // rows, LB lanes a row): a run's particles are added a batch's part of it at a time.
  constexpr std::size_t kBatch = 4;
  const std::size_t LB = kBatch * L;
  auto buf = hwy::AllocateAligned<double>(std::size_t(Rows::rows + Rows::x_doubles_per_lane) * LB);
  double* b = buf.get();
  const double inv_vol = 1.0 / g.volume();
  const bool unit = J.jx.si == 1;  // the three components share their strides (one block view)
  RunSums<D, P> run;
  auto flush = [&](RunSums<D, P>& r) {
    if (unit)
      FlushRun<D, P, true>(J, r);
    else
      FlushRun<D, P, false>(J, r);
  };
  // nvec vectors of particles from lane r of rows xo (components `stride` apart), xv, uv
  // and wv; the last vector holds `last` particles.
  auto vectors = [&](const double* o, const double* const xv[3], const double* const uv[3],
                     const double* wv, std::size_t stride, std::size_t r, std::size_t nvec,
                     std::size_t last) TESSERA_ONE_COPY {
    const V vq = hn::Set(d, q), vinv = hn::Set(d, inv_vol), vdt = hn::Set(d, dt);
    for (std::size_t v = 0; v < nvec; ++v, r += L) {
      const std::size_t count = v + 1 < nvec ? L : last;
      const std::size_t lane0 = (v % kBatch) * L;  // the vector's first lane in the batch
      // Step 1: S0 and DS per axis on a common window.
      const WindowV<P, true> wx(d, Cells(d, g, 0, hn::LoadU(d, o + r)),
                                Cells(d, g, 0, hn::LoadU(d, xv[0] + r)));
      const WindowV<P, (D > 1)> wy(
          d, D > 1 ? Cells(d, g, 1, hn::LoadU(d, o + stride + r)) : hn::Zero(d),
          D > 1 ? Cells(d, g, 1, hn::LoadU(d, xv[1] + r)) : hn::Zero(d));
      const WindowV<P, (D > 2)> wz(
          d, D > 2 ? Cells(d, g, 2, hn::LoadU(d, o + 2 * stride + r)) : hn::Zero(d),
          D > 2 ? Cells(d, g, 2, hn::LoadU(d, xv[2] + r)) : hn::Zero(d));
      auto put = [&](int row, V a) { hn::Store(a, d, b + std::size_t(row) * LB + lane0); };
      put(0, wx.first(d));
      put(1, wy.first(d));
      put(2, wz.first(d));
      const V qw = hn::Mul(vq, hn::LoadU(d, wv + r));
      // The coefficients: q w dx_a / (V dt) along an active axis; -q w v_a / V along an
      // inactive one (v = u / gamma; J + a is J - (-a), to the bit).
      auto active = [&](int a) {
        return hn::Div(hn::Mul(hn::Mul(qw, hn::Set(d, g.dx[a])), vinv), vdt);
      };
      const V cx = active(0);
      V cy = hn::Zero(d), cz = hn::Zero(d);
      if constexpr (D < 3) {
        const V u0 = hn::LoadU(d, uv[0] + r), u1 = hn::LoadU(d, uv[1] + r);
        const V u2 = hn::LoadU(d, uv[2] + r);
        const V ig = hn::Div(hn::Set(d, 1.0), Gamma(d, u0, u1, u2));
        if constexpr (D < 2) cy = hn::Neg(hn::Mul(hn::Mul(qw, hn::Mul(u1, ig)), vinv));
        cz = hn::Neg(hn::Mul(hn::Mul(qw, hn::Mul(u2, ig)), vinv));
      }
      if constexpr (D > 1) cy = active(1);
      if constexpr (D > 2) cz = active(2);
      for (int k = 0; k < nz; ++k)
        for (int j = 0; j < ny; ++j)
          put(Rows::kCX + k * ny + j,
              hn::Mul(cx, Transverse(d, wy.s0(d, j), wy.ds(d, j), wz.s0(d, k), wz.ds(d, k))));
      // cy pre_y[j] and cz pre_z[k] (prefix sums along an active axis), or cy, cz.
      auto prefixed = [&](int row, const auto& wa, int na, V c, bool is_active) {
        if (!is_active) {
          put(row, c);
          return;
        }
        V pre = hn::Zero(d);
        for (int m = 0; m + 1 < na; ++m) {
          pre = m == 0 ? wa.ds(d, 0) : hn::Add(pre, wa.ds(d, m));
          put(row + m, hn::Mul(c, pre));
        }
      };
      prefixed(Rows::kCY, wy, ny, cy, D > 1);
      prefixed(Rows::kCZ, wz, nz, cz, D > 2);
      for (int j = 0; j < ny; ++j) {
        put(Rows::kBY + 2 * j, wy.s0(d, j));
        put(Rows::kBY + 2 * j + 1, wy.ds(d, j));
      }
      for (int k = 0; k < nz; ++k) {
        put(Rows::kBZ + 2 * k, wz.s0(d, k));
        put(Rows::kBZ + 2 * k + 1, wz.ds(d, k));
      }
      // The x rows, interleaved by particle (ParticleRows); pre[m] for m < nx - 1.
      {
        Vs<4 * Rows::groups> s0, ds, pre;
        for (int m = 0; m < 4 * Rows::groups; ++m) {
          s0.set(d, m, m < nx ? wx.s0(d, m) : hn::Zero(d));
          ds.set(d, m, m < nx ? wx.ds(d, m) : hn::Zero(d));
          pre.set(d, m,
                  m == 0       ? wx.ds(d, 0)
                  : m < nx - 1 ? hn::Add(pre(d, m - 1), wx.ds(d, m))
                               : hn::Zero(d));
        }
        double* xr = b + std::size_t(Rows::rows) * LB;
        auto interleave = [&](const auto& rows, int what) {
          for (int gr = 0; gr < Rows::groups; ++gr)
            hn::StoreInterleaved4(rows(d, 4 * gr), rows(d, 4 * gr + 1), rows(d, 4 * gr + 2),
                                  rows(d, 4 * gr + 3), d,
                                  xr + std::size_t(what * Rows::groups + gr) * 4 * LB + 4 * lane0);
        };
        interleave(s0, 0);
        interleave(ds, 1);
        interleave(pre, 2);
      }
      // Steps 2-4, at the batch's end: into the run's sums, particle after particle (the
      // order of the arrays), the lanes of one run at a time.
      if (v % kBatch != kBatch - 1 && v + 1 < nvec) continue;
      const std::size_t filled = lane0 + count;
      for (std::size_t l0 = 0; l0 < filled;) {
        const Rows p(b, LB, l0);
        if (run.open && (p.first(0) != run.first[0] || p.first(1) != run.first[1] ||
                         p.first(2) != run.first[2]))
          flush(run);
        if (!run.open) {
          for (int a = 0; a < 3; ++a) run.first[a] = p.first(a);
          run.open = true;
        }
        std::size_t l1 = l0 + 1;
        while (l1 < filled && Rows(b, LB, l1).first(0) == run.first[0] &&
               Rows(b, LB, l1).first(1) == run.first[1] && Rows(b, LB, l1).first(2) == run.first[2])
          ++l1;
        AddRun<D, P>(run, b, LB, l0, l1);
        l0 = l1;
      }
    }
  };
  vectors(xo, x, u, w, n, 0, n / L, L);
  if (const std::size_t count = n % L; count > 0) {
    const std::size_t p = n - count;
    // The partial vector's copy: rows x_old (3), x (3), u (3), w of L lanes each.
    HWY_ALIGN double t[10 * kMaxLanes];
    Pad(xo, n, D, p, count, L, t);  // only active axes' positions are read
    for (int c = 0; c < D; ++c) Pad(x[c], 0, 1, p, count, L, t + (3 + c) * L);
    if constexpr (D < 3)  // u is read in 1-D and 2-D only
      for (int c = 0; c < 3; ++c) Pad(u[c], 0, 1, p, count, L, t + (6 + c) * L);
    Pad(w, 0, 1, p, count, L, t + 9 * L);
    const double* tx[3] = {t + 3 * L, t + 4 * L, t + 5 * L};
    const double* tu[3] = {t + 6 * L, t + 7 * L, t + 8 * L};
    vectors(t, tx, tu, t + 9 * L, L, 0, 1, count);
  }
  if (run.open) flush(run);
}

void Deposit(int D, int P, const Currents& J, const Grid& g, std::size_t n, const double* xo,
             const double* const x[3], const double* const u[3], const double* w, double q,
             double dt) {
  WithDP(D, P, [&]<int DD, int PP>() { DepositT<DD, PP>(J, g, n, xo, x, u, w, q, dt); });
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::pic::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::pic::simd {

HWY_EXPORT(Deposit);

void deposit(int D, int P, const Currents& J, const Grid& g, std::size_t n, const double* xo,
             const double* const x[3], const double* const u[3], const double* w, double q,
             double dt) {
  HWY_DYNAMIC_DISPATCH(Deposit)(D, P, J, g, n, xo, x, u, w, q, dt);
}

}  // namespace tessera::pic::simd
#endif  // HWY_ONCE

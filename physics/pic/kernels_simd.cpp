// The PIC particle kernels with Google Highway (kernels_simd.hpp): the gather, the push and
// the bins of the particles' sort; the deposit is physics/pic/deposit_simd.cpp, the pieces
// they share physics/pic/kernels_simd-inl.h. This file is compiled once per target
// (foreach_target.h); HWY_DYNAMIC_DISPATCH picks the copy at run time.
//
// A vector holds consecutive particles of one species segment. The per-particle numerics
// are those of shape.hpp, gather.hpp and boris.hpp written on vectors (Highway's Add, Mul,
// Floor, IfThenElse in place of the operators, floor_int and the ternaries: on SVE a
// vector is a sizeless type that takes no operators), term by term in the reference's
// order. A shape's first index is kept as a double (an integer, exact).
//
// The last vector of a segment is a partial one. It runs through the same code as whole
// vectors, on a copy of its particles padded to a whole vector with its first particle (a
// real position: nothing the padding computes is out of range), and only its own lanes are
// copied back; the code is one compiled copy (TESSERA_ONE_COPY, kernels_simd-inl.h). A
// particle's bits therefore do not depend on where in a vector it falls (a separate
// partial-vector path, or a second inlined copy, would not promise that: the compiler
// fuses multiplies and adds per copy of the code).
//
// The gather computes the shapes in vectors and, by runs (particles whose shapes start at the
// same points: pic.sort = "cell"), broadcasts each stencil value to a vector of a run's
// particles; per lane (GatherT), it sums each particle's stencil from the shapes.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/pic/kernels_simd.cpp"
#include "physics/pic/kernels_simd.hpp"

#include <hwy/aligned_allocator.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "physics/pic/gather.hpp"
#include "physics/pic/kernels_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::pic::simd {
namespace HWY_NAMESPACE {

// detail::interpolate for particle l of a vector: sum over the stencil of wx wy wz f. A
// shape is stored as gather's buffer holds it, [0] the first point and [1 + m] the weight of
// point m, each row of L lanes; kUnit: x is f's unit-stride axis (var-major).
template <int PX, int PY, int PZ, bool kUnit>
HWY_INLINE double InterpolateLane(const Field& f, const double* HWY_RESTRICT sx,
                                  const double* HWY_RESTRICT sy, const double* HWY_RESTRICT sz,
                                  std::size_t L, std::size_t l) {
  const std::ptrdiff_t si = kUnit ? 1 : f.si;
  const double* HWY_RESTRICT o = f.p + std::ptrdiff_t(sx[l]) * si + std::ptrdiff_t(sy[l]) * f.sj +
                                 std::ptrdiff_t(sz[l]) * f.sk;
  double v = 0;
  for (int k = 0; k <= PZ; ++k) {
    double vy = 0;
    for (int j = 0; j <= PY; ++j) {
      const double* HWY_RESTRICT row = o + j * f.sj + k * f.sk;
      double vx = 0;
      for (int i = 0; i <= PX; ++i) vx += sx[(1 + i) * L + l] * row[i * si];
      vy += sy[(1 + j) * L + l] * vx;
    }
    v += sz[(1 + k) * L + l] * vy;
  }
  return v;
}

// Step 2 of the gather for particles l in [0, count) of a vector, from the shapes in sh
// (GatherT's buffer): E staggered along its own axis, B along the other two, into e[c * n +
// l]. L is the target's lane count, a compile-time constant on fixed-size targets: passed
// in as a run-time value it made the row offsets multiplications, and the gather 20 %
// slower (38.6 against 32 ns per particle on AVX3).
template <int D, int P, bool kEnergy, bool kUnit>
HWY_NOINLINE void StencilSums(const EMFields& f, const double* sh, std::size_t count,
                              double* HWY_RESTRICT e, std::size_t n) {
  const std::size_t L = hn::Lanes(DF());  // a constant where vectors have a fixed size
  constexpr bool ay = D > 1, az = D > 2;
  constexpr int Q = kEnergy ? P - 1 : P;
  constexpr int PY = ay ? P : 0, PZ = az ? P : 0, QY = ay ? Q : 0, QZ = az ? Q : 0;
  const double* snx = sh;
  const double* sny = sh + 5 * L;
  const double* snz = sh + 10 * L;
  const double* shx = sh + 15 * L;
  const double* shy = sh + 20 * L;
  const double* shz = sh + 25 * L;
  for (std::size_t l = 0; l < count; ++l, ++e) {
    e[0] = InterpolateLane<Q, PY, PZ, kUnit>(f.ex, shx, sny, snz, L, l);
    e[n] = InterpolateLane<P, QY, PZ, kUnit>(f.ey, snx, shy, snz, L, l);
    e[2 * n] = InterpolateLane<P, PY, QZ, kUnit>(f.ez, snx, sny, shz, L, l);
    e[3 * n] = InterpolateLane<P, QY, QZ, kUnit>(f.bx, snx, shy, shz, L, l);
    e[4 * n] = InterpolateLane<Q, PY, QZ, kUnit>(f.by, shx, sny, shz, L, l);
    e[5 * n] = InterpolateLane<Q, QY, PZ, kUnit>(f.bz, shx, shy, snz, L, l);
  }
}

// The vector part of the gather is the shapes (cells, floors, weights: the arithmetic); the
// stencil sums are per particle, from the shapes stored in a buffer, because their reads are
// rows of 2 to 4 adjacent values at each particle's own place (Highway's GatherIndex of
// those was measured slower than the reference on AVX2 and SSE4).
template <int D, int P, bool kEnergy, bool kUnit>
void GatherT(const EMFields& f, const Grid& g, std::size_t n, const double* const x[3], long ahead,
             double* eb) {
  const DF d;
  constexpr bool ay = D > 1, az = D > 2;
  constexpr int Q = kEnergy ? P - 1 : P;
  const std::size_t L = hn::Lanes(d);
  // Six shapes of up to 5 rows of L lanes: nodal x y z at rows 0, 5, 10, staggered 15, 20, 25.
  auto buf = hwy::AllocateAligned<double>(30 * L);
  double* sh = buf.get();
  double* snx = sh;
  double* sny = sh + 5 * L;
  double* snz = sh + 10 * L;
  double* shx = sh + 15 * L;
  double* shy = sh + 20 * L;
  double* shz = sh + 25 * L;
  auto keep = [&](const auto& r, double* to, int rows) {
    for (int m = 0; m < rows; ++m) hn::Store(r(d, m), d, to + std::size_t(m) * L);
  };
  // nvec vectors of particles from p, their positions at lanes q.. of the rows xs; the last
  // vector holds `last` particles.
  auto vectors = [&](const double* const xs[3], std::size_t q, std::size_t p, std::size_t nvec,
                     std::size_t last) TESSERA_ONE_COPY {
    for (std::size_t v = 0; v < nvec; ++v, q += L, p += L) {
      const std::size_t count = v + 1 < nvec ? L : last;
      if (ahead > 0)
        for (std::size_t l = 0; l < count; ++l) {
          const std::size_t r = p + l + std::size_t(ahead);
          if (r < n) prefetch_fields<D>(f, g, {x[0][r], x[1][r], x[2][r]});
        }
      const V s0 = Cells(d, g, 0, hn::LoadU(d, xs[0] + q));
      const V s1 = ay ? Cells(d, g, 1, hn::LoadU(d, xs[1] + q)) : hn::Zero(d);
      const V s2 = az ? Cells(d, g, 2, hn::LoadU(d, xs[2] + q)) : hn::Zero(d);
      // Step 1: nodal (order P) and staggered (order Q) shapes per axis, kept in the buffer.
      auto shapes = [&]<int OX, int OY, int OZ, bool kStag>(double* bx, double* by, double* bz) {
        ShapeV<OX> sx;
        ShapeV<(ay ? OY : 0)> sy;
        ShapeV<(az ? OZ : 0)> sz;
        AxisShape<OX, true, kStag>(d, s0, sx);
        AxisShape<OY, ay, kStag>(d, s1, sy);
        AxisShape<OZ, az, kStag>(d, s2, sz);
        keep(sx, bx, OX + 2);
        keep(sy, by, (ay ? OY : 0) + 2);
        keep(sz, bz, (az ? OZ : 0) + 2);
      };
      shapes.template operator()<P, P, P, false>(snx, sny, snz);
      shapes.template operator()<Q, Q, Q, true>(shx, shy, shz);
      // Step 2: E staggered along its own axis, B along the other two.
      StencilSums<D, P, kEnergy, kUnit>(f, sh, count, eb + p, n);
    }
  };
  vectors(x, 0, 0, n / L, L);
  if (const std::size_t count = n % L; count > 0) {
    const std::size_t p = n - count;
    HWY_ALIGN double pad[3 * kMaxLanes];
    for (int a = 0; a < (az ? 3 : ay ? 2 : 1); ++a) Pad(x[a], 0, 1, p, count, L, pad + a * L);
    const double* xs[3] = {pad, pad + L, pad + 2 * L};
    vectors(xs, 0, p, 1, count);
  }
}

// The gather by runs: consecutive particles whose shapes (nodal, order P, and staggered,
// order Q) start at the same points share every stencil value, so a vector holds particles
// of one run and each value is broadcast to its lanes: the sums of detail::interpolate, in
// its order, on vectors. A run's partial last vector is padded with that vector's first particle.
// The runs are long when the particles are sorted by cell (pic.sort = "cell"); a particle's bits do
// not depend on its run or lane.
template <int D, int P, bool kEnergy, bool kUnit>
void GatherRunsT(const EMFields& f, const Grid& g, std::size_t n, const double* const x[3],
                 long ahead, double* eb) {
  const DF d;
  constexpr bool ay = D > 1, az = D > 2;
  constexpr int Q = kEnergy ? P - 1 : P;
  constexpr int PY = ay ? P : 0, PZ = az ? P : 0, QY = ay ? Q : 0, QZ = az ? Q : 0;
  const std::size_t L = hn::Lanes(d);
  // One vector of a run: particles [p, p + count) from lane q of the rows xs, all with the
  // key k; E and B into eb[c * n + p + lane].
  auto vector = [&](const double* const xs[3], std::size_t q, std::size_t p, std::size_t count,
                    const std::array<int, 6>& k) TESSERA_ONE_COPY {
    const V s0 = Cells(d, g, 0, hn::LoadU(d, xs[0] + q));
    const V s1 = ay ? Cells(d, g, 1, hn::LoadU(d, xs[1] + q)) : hn::Zero(d);
    const V s2 = az ? Cells(d, g, 2, hn::LoadU(d, xs[2] + q)) : hn::Zero(d);
    ShapeV<P> nx;
    ShapeV<PY> ny;
    ShapeV<PZ> nz;
    ShapeV<Q> hx;
    ShapeV<QY> hy;
    ShapeV<QZ> hz;
    AxisShape<P, true, false>(d, s0, nx);
    AxisShape<P, ay, false>(d, s1, ny);
    AxisShape<P, az, false>(d, s2, nz);
    AxisShape<Q, true, true>(d, s0, hx);
    AxisShape<Q, ay, true>(d, s1, hy);
    AxisShape<Q, az, true>(d, s2, hz);
    // detail::interpolate with the stencil at (fx, fy, fz), values broadcast.
    auto sum = [&](const Field& fl, const auto& wx, const auto& wy, const auto& wz, int fx, int fy,
                   int fz) {
      constexpr int NX = std::remove_cvref_t<decltype(wx)>::order_plus_one;
      constexpr int NY = std::remove_cvref_t<decltype(wy)>::order_plus_one;
      constexpr int NZ = std::remove_cvref_t<decltype(wz)>::order_plus_one;
      const std::ptrdiff_t si = kUnit ? 1 : fl.si;
      const double* HWY_RESTRICT o = fl.p + fx * si + fy * fl.sj + fz * fl.sk;
      V v = hn::Zero(d);
      for (int kk = 0; kk < NZ; ++kk) {
        V vy = hn::Zero(d);
        for (int j = 0; j < NY; ++j) {
          const double* HWY_RESTRICT row = o + j * fl.sj + kk * fl.sk;
          V vx = hn::Zero(d);
          for (int i = 0; i < NX; ++i)
            vx = hn::Add(vx, hn::Mul(wx(d, 1 + i), hn::Set(d, row[i * si])));
          vy = hn::Add(vy, hn::Mul(wy(d, 1 + j), vx));
        }
        v = hn::Add(v, hn::Mul(wz(d, 1 + kk), vy));
      }
      return v;
    };
    // Component c into eb (its `count` lanes); one at a time (SVE's sizeless vectors
    // cannot be an array).
    auto out = [&](int c, V e) {
      if (count == L) {
        hn::StoreU(e, d, eb + std::size_t(c) * n + p);
      } else {
        HWY_ALIGN double t[kMaxLanes];
        hn::Store(e, d, t);
        for (std::size_t l = 0; l < count; ++l) eb[std::size_t(c) * n + p + l] = t[l];
      }
    };
    out(0, sum(f.ex, hx, ny, nz, k[1], k[2], k[4]));
    out(1, sum(f.ey, nx, hy, nz, k[0], k[3], k[4]));
    out(2, sum(f.ez, nx, ny, hz, k[0], k[2], k[5]));
    out(3, sum(f.bx, nx, hy, hz, k[0], k[3], k[5]));
    out(4, sum(f.by, hx, ny, hz, k[1], k[2], k[5]));
    out(5, sum(f.bz, hx, hy, nz, k[1], k[3], k[4]));
  };
  // Keys (the nodal and staggered shapes' first points per axis: Shape<P> and Shape<Q> on
  // vectors, so that a run's key is what its lanes compute) of a chunk of particles at a
  // time, then the chunk's runs (a run ends with its chunk: runs group work only, a
  // particle's bits do not depend on them).
  constexpr std::size_t kChunk = 16 * kMaxLanes;
  HWY_ALIGN double keys[6][kChunk];
  for (std::size_t c0 = 0; c0 < n; c0 += kChunk) {
    const std::size_t cn = std::min(kChunk, n - c0);
    for (std::size_t v = 0; v < cn; v += L) {
      const std::size_t count = std::min(L, cn - v), p = c0 + v;
      HWY_ALIGN double pad[3 * kMaxLanes];
      for (int a = 0; a < D; ++a) {
        V s;
        if (count == L) {
          s = Cells(d, g, a, hn::LoadU(d, x[a] + p));
        } else {
          Pad(x[a], 0, 1, p, count, L, pad);
          s = Cells(d, g, a, hn::Load(d, pad));
        }
        {
          ShapeV<P> nr;
          ShapeOf<P>(d, s, nr);
          hn::Store(nr(d, 0), d, pad + L);
          for (std::size_t l = 0; l < count; ++l) keys[2 * a][v + l] = pad[L + l];
        }
        {
          ShapeV<Q> hr;
          AxisShape<Q, true, true>(d, s, hr);
          hn::Store(hr(d, 0), d, pad + L);
          for (std::size_t l = 0; l < count; ++l) keys[2 * a + 1][v + l] = pad[L + l];
        }
      }
      for (int r = 2 * D; r < 6; ++r)
        for (std::size_t l = 0; l < count; ++l) keys[r][v + l] = 0.0;
    }
    auto same = [&](std::size_t i, std::size_t j) {
      for (int r = 0; r < 2 * D; ++r)
        if (keys[r][i] != keys[r][j]) return false;
      return true;
    };
    for (std::size_t b = 0; b < cn;) {
      std::size_t e = b + 1;
      while (e < cn && same(b, e)) ++e;
      std::array<int, 6> kb{};
      for (int r = 0; r < 6; ++r) kb[std::size_t(r)] = int(keys[r][b]);
      for (std::size_t q = b; q < e; q += L) {
        const std::size_t count = std::min(L, e - q), p = c0 + q;
        if (ahead > 0)
          for (std::size_t l = 0; l < count; ++l) {
            const std::size_t r = p + l + std::size_t(ahead);
            if (r < n) prefetch_fields<D>(f, g, {x[0][r], x[1][r], x[2][r]});
          }
        if (count == L) {
          vector(x, p, p, L, kb);
        } else {
          HWY_ALIGN double pad[3 * kMaxLanes];
          for (int a = 0; a < D; ++a) Pad(x[a], 0, 1, p, count, L, pad + a * L);
          const double* xs[3] = {pad, pad + L, pad + 2 * L};
          vector(xs, 0, p, count, kb);
        }
      }
      b = e;
    }
  }
}

void Gather(int D, int P, bool energy, bool runs, const EMFields& f, const Grid& g, std::size_t n,
            const double* const x[3], long ahead, double* eb) {
  const bool unit = f.ex.si == 1;  // the six share their strides (one block view)
  WithDP(D, P, [&]<int DD, int PP>() {
    // One of the four (scheme, layout) instances of GatherRunsT or GatherT.
    auto with = [&]<bool kEnergy, bool kUnit>() {
      if (runs)
        GatherRunsT<DD, PP, kEnergy, kUnit>(f, g, n, x, ahead, eb);
      else
        GatherT<DD, PP, kEnergy, kUnit>(f, g, n, x, ahead, eb);
    };
    if (energy && unit)
      with.template operator()<true, true>();
    else if (energy)
      with.template operator()<true, false>();
    else if (unit)
      with.template operator()<false, true>();
    else
      with.template operator()<false, false>();
  });
}

void Push(std::size_t n, double* const u[3], double* const x[3], const double* eb, double qm,
          double dt, double* xo) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  const double hs = 0.5 * qm * dt;
  // nvec vectors of particles from lane q of arrays whose components are `stride` apart (eb,
  // xo) or separate (u, x).
  auto vectors = [&](double* const uv[3], double* const xv[3], const double* e, double* o,
                     std::size_t stride, std::size_t q, std::size_t nvec) TESSERA_ONE_COPY {
    const V h = hn::Set(d, hs), vdt = hn::Set(d, dt);
    for (std::size_t v = 0; v < nvec; ++v, q += L) {
      const V e0 = hn::LoadU(d, e + q), e1 = hn::LoadU(d, e + stride + q);
      const V e2 = hn::LoadU(d, e + 2 * stride + q), b0 = hn::LoadU(d, e + 3 * stride + q);
      const V b1 = hn::LoadU(d, e + 4 * stride + q), b2 = hn::LoadU(d, e + 5 * stride + q);
      // boris_push, Steps 1-4.
      const V um0 = hn::Add(hn::LoadU(d, uv[0] + q), hn::Mul(h, e0));
      const V um1 = hn::Add(hn::LoadU(d, uv[1] + q), hn::Mul(h, e1));
      const V um2 = hn::Add(hn::LoadU(d, uv[2] + q), hn::Mul(h, e2));
      const V fr = hn::Div(h, Gamma(d, um0, um1, um2));
      const V t0 = hn::Mul(fr, b0), t1 = hn::Mul(fr, b1), t2 = hn::Mul(fr, b2);
      const V tt = hn::Add(hn::Add(hn::Add(hn::Set(d, 1.0), hn::Mul(t0, t0)), hn::Mul(t1, t1)),
                           hn::Mul(t2, t2));
      const V sf = hn::Div(hn::Set(d, 2.0), tt);
      const V s0 = hn::Mul(sf, t0), s1 = hn::Mul(sf, t1), s2 = hn::Mul(sf, t2);
      const V up0 = hn::Add(um0, hn::Sub(hn::Mul(um1, t2), hn::Mul(um2, t1)));
      const V up1 = hn::Add(um1, hn::Sub(hn::Mul(um2, t0), hn::Mul(um0, t2)));
      const V up2 = hn::Add(um2, hn::Sub(hn::Mul(um0, t1), hn::Mul(um1, t0)));
      const V uq0 = hn::Add(um0, hn::Sub(hn::Mul(up1, s2), hn::Mul(up2, s1)));
      const V uq1 = hn::Add(um1, hn::Sub(hn::Mul(up2, s0), hn::Mul(up0, s2)));
      const V uq2 = hn::Add(um2, hn::Sub(hn::Mul(up0, s1), hn::Mul(up1, s0)));
      const V u0 = hn::Add(uq0, hn::Mul(h, e0));
      const V u1 = hn::Add(uq1, hn::Mul(h, e1));
      const V u2 = hn::Add(uq2, hn::Mul(h, e2));
      // push_position.
      const V fx = hn::Div(vdt, Gamma(d, u0, u1, u2));
      const V x0 = hn::LoadU(d, xv[0] + q), x1 = hn::LoadU(d, xv[1] + q);
      const V x2 = hn::LoadU(d, xv[2] + q);
      hn::StoreU(x0, d, o + q);
      hn::StoreU(x1, d, o + stride + q);
      hn::StoreU(x2, d, o + 2 * stride + q);
      hn::StoreU(u0, d, uv[0] + q);
      hn::StoreU(u1, d, uv[1] + q);
      hn::StoreU(u2, d, uv[2] + q);
      hn::StoreU(hn::Add(x0, hn::Mul(fx, u0)), d, xv[0] + q);
      hn::StoreU(hn::Add(x1, hn::Mul(fx, u1)), d, xv[1] + q);
      hn::StoreU(hn::Add(x2, hn::Mul(fx, u2)), d, xv[2] + q);
    }
  };
  vectors(u, x, eb, xo, n, 0, n / L);
  if (const std::size_t count = n % L; count > 0) {
    const std::size_t p = n - count;
    // The partial vector's copy: rows u0-2, x0-2, E and B (6), x_old (3) of L lanes each.
    HWY_ALIGN double t[15 * kMaxLanes];
    double* tu[3] = {t, t + L, t + 2 * L};
    double* tx[3] = {t + 3 * L, t + 4 * L, t + 5 * L};
    for (int c = 0; c < 3; ++c) {
      Pad(u[c], 0, 1, p, count, L, tu[c]);
      Pad(x[c], 0, 1, p, count, L, tx[c]);
    }
    Pad(eb, n, 6, p, count, L, t + 6 * L);
    vectors(tu, tx, t + 6 * L, t + 12 * L, L, 0, 1);
    for (int c = 0; c < 3; ++c) {
      Unpad(tu[c], L, 1, count, u[c], 0, p);
      Unpad(tx[c], L, 1, count, x[c], 0, p);
    }
    Unpad(t + 12 * L, L, 3, count, xo, n, p);
  }
}

// bins(): per particle (type - 1) cells (type clamped to [1, ntypes]) + the grid point floor((x -
// x0) inv + shift) per active axis, clamped to [0, ext), x fastest; on vectors, the last partial
// one padded with the first particle and run through the same compiled code (a particle's bin, an
// integer from a rounded product, must not depend on its place in the array: it orders the
// particles, and the array's order before the sort differs between rank counts).
void Bins(int D, std::size_t n, const double* const x[3], const double* type, int ntypes,
          const double* x0, const double* inv, double shift, const int* ext, std::int32_t* out) {
  const DF d;
  const std::size_t L = hn::Lanes(d);
  const double cells = double(ext[0]) * ext[1] * ext[2];
  auto vectors = [&](const double* const xs[3], const double* ts, std::size_t q, std::size_t nvec,
                     double* to) TESSERA_ONE_COPY {
    for (std::size_t v = 0; v < nvec; ++v, q += L) {
      V at = hn::Zero(d);
      for (int a = D - 1; a >= 0; --a) {
        const V s = hn::Add(
            hn::Mul(hn::Sub(hn::LoadU(d, xs[a] + q), hn::Set(d, x0[a])), hn::Set(d, inv[a])),
            hn::Set(d, shift));
        const V c = hn::Min(hn::Max(hn::Floor(s), hn::Zero(d)), hn::Set(d, double(ext[a] - 1)));
        at = hn::Add(hn::Mul(at, hn::Set(d, double(ext[a]))), c);
      }
      const V species =
          hn::Min(hn::Max(hn::Sub(hn::LoadU(d, ts + q), hn::Set(d, 1.0)), hn::Zero(d)),
                  hn::Set(d, double(ntypes - 1)));
      at = hn::Add(at, hn::Mul(species, hn::Set(d, cells)));
      hn::StoreU(at, d, to + v * L);
    }
  };
  HWY_ALIGN double t[kMaxLanes];
  const std::size_t whole = n / L;
  for (std::size_t v = 0; v < whole; ++v) {
    vectors(x, type, v * L, 1, t);
    for (std::size_t l = 0; l < L; ++l) out[v * L + l] = std::int32_t(t[l]);
  }
  if (const std::size_t count = n % L; count > 0) {
    const std::size_t p = n - count;
    HWY_ALIGN double pad[4 * kMaxLanes];
    for (int a = 0; a < D; ++a) Pad(x[a], 0, 1, p, count, L, pad + a * L);
    Pad(type, 0, 1, p, count, L, pad + 3 * L);
    const double* xs[3] = {pad, pad + L, pad + 2 * L};
    vectors(xs, pad + 3 * L, 0, 1, t);
    for (std::size_t l = 0; l < count; ++l) out[p + l] = std::int32_t(t[l]);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::pic::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::pic::simd {

HWY_EXPORT(Gather);
HWY_EXPORT(Push);
HWY_EXPORT(Bins);

void bins(int D, std::size_t n, const double* const x[3], const double* type, int ntypes,
          const double* x0, const double* inv, double shift, const int* ext, std::int32_t* out) {
  HWY_DYNAMIC_DISPATCH(Bins)(D, n, x, type, ntypes, x0, inv, shift, ext, out);
}

void gather(int D, int P, bool energy, bool runs, const EMFields& f, const Grid& g, std::size_t n,
            const double* const x[3], long ahead, double* eb) {
  HWY_DYNAMIC_DISPATCH(Gather)(D, P, energy, runs, f, g, n, x, ahead, eb);
}
void push(std::size_t n, double* const u[3], double* const x[3], const double* eb, double qm,
          double dt, double* xo) {
  HWY_DYNAMIC_DISPATCH(Push)(n, u, x, eb, qm, dt, xo);
}

}  // namespace tessera::pic::simd
#endif  // HWY_ONCE

// The PIC particle kernels with Google Highway (kernels_simd.hpp). This file is compiled
// once per target (foreach_target.h); HWY_DYNAMIC_DISPATCH picks the copy at run time.
//
// A vector holds consecutive particles of one species segment. The per-particle numerics
// are those of shape.hpp, gather.hpp, boris.hpp and esirkepov.hpp written on vectors
// (Highway's Add, Mul, Floor, IfThenElse in place of the operators, floor_int and the
// ternaries: on SVE a vector is a sizeless type that takes no operators), term by term in
// the reference's order. A shape's first index is kept as a double (an integer, exact).
//
// The last vector of a segment is a partial one. It runs through the same code as whole
// vectors, on a copy of its particles padded to a whole vector with its first particle (a
// real position: nothing the padding computes is out of range), and only its own lanes are
// copied back or deposited; the code is one compiled copy (TESSERA_ONE_COPY below). A
// particle's bits therefore do not depend on where in a vector it falls (a separate
// partial-vector path, or a second inlined copy, would not promise that: the compiler
// fuses multiplies and adds per copy of the code).
//
// The gather computes the shapes in vectors and, by runs (particles whose shapes start at the
// same points: pic.sort = "cell"), broadcasts each stencil value to a vector of a run's
// particles; per lane (GatherT), it sums each particle's stencil from the shapes. The
// deposit computes a vector of particles' windows (Esirkepov's S0, DS and the prefix sums
// of DS) into a buffer, then adds each particle's current, rows along x, to the sums of its
// run (consecutive particles whose windows start at the same point), which go into J when
// the next run starts (RunSums).
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

#include "physics/pic/constants.hpp"
#include "physics/pic/gather.hpp"

HWY_BEFORE_NAMESPACE();
namespace tessera::pic::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<double>;
using V = hn::Vec<DF>;

// A kernel's body is one lambda over a run of vectors, called for the whole vectors and
// again for the padded partial one, and compiled once: out of line, neither inlined nor
// cloned (GCC's noipa; other compilers get noinline only). The compiler fuses multiplies
// and adds per copy of the code, so a second copy (inlined at the second call, say) can
// give a particle other bits there: seen on NEON with the body inlined into both calls.
// The guarantee rests on GCC (a loop split inside the body, say, would be a second copy
// too): tests/unit/test_pic_simd.cpp checks n particles at once against one at a time, to
// the bit, on every target, and make test-arm on NEON and SVE.
#if defined(__GNUC__) && !defined(__clang__)
#define TESSERA_ONE_COPY __attribute__((noipa))
#else
#define TESSERA_ONE_COPY __attribute__((noinline))
#endif

// The most lanes a vector of doubles has on any target (the padded copies' row size bound).
constexpr std::size_t kMaxLanes = HWY_MAX_BYTES / sizeof(double);

// The partial last vector's particles [p, p + count) of `rows` arrays (row r at a + r *
// stride) into rows of L lanes at `to`, each padded with the row's particle p; and back.
HWY_INLINE void Pad(const double* a, std::size_t stride, int rows, std::size_t p, std::size_t count,
                    std::size_t L, double* to) {
  for (int r = 0; r < rows; ++r)
    for (std::size_t l = 0; l < L; ++l)
      to[std::size_t(r) * L + l] = a[std::size_t(r) * stride + p + (l < count ? l : 0)];
}
HWY_INLINE void Unpad(const double* from, std::size_t L, int rows, std::size_t count, double* a,
                      std::size_t stride, std::size_t p) {
  for (int r = 0; r < rows; ++r)
    for (std::size_t l = 0; l < count; ++l)
      a[std::size_t(r) * stride + p + l] = from[std::size_t(r) * L + l];
}

// A small array of vectors. SVE's vectors are sizeless types, which cannot be elements
// of an array or members of a struct: there the array is memory (a vector per row of
// HWY_MAX_BYTES), which the loads and stores of L1 serve; elsewhere it holds the vectors.
#if HWY_HAVE_SCALABLE
template <int N>
struct Vs {
  HWY_ALIGN double m[N][kMaxLanes];
  HWY_INLINE V operator()(DF d, int i) const { return hn::Load(d, m[i]); }
  HWY_INLINE void set(DF d, int i, V v) { hn::Store(v, d, m[i]); }
};
#else
template <int N>
struct Vs {
  V m[N];
  // Declared here, so that it is compiled for the target (an implicit one is not: GCC then
  // refuses to inline the vectors' constructors into it on NEON).
  HWY_INLINE Vs() {}
  HWY_INLINE V operator()(DF, int i) const { return m[i]; }
  HWY_INLINE void set(DF, int i, V v) { m[i] = v; }
};
#endif

// Shape<P> (shape.hpp) on vectors: [0] the first point, [1 + m] the weight of point m.
template <int P>
struct ShapeV : Vs<P + 2> {
  static constexpr int order_plus_one = P + 1;  // points
  HWY_INLINE ShapeV() {}
};

// shape<P>(s) into r, term by term (floor_int is Floor: exact for the array's indices).
template <int P>
HWY_INLINE void ShapeOf(DF d, V s, ShapeV<P>& r) {
  const V half = hn::Set(d, 0.5), one = hn::Set(d, 1.0);
  if constexpr (P == 0) {
    r.set(d, 0, hn::Floor(hn::Add(s, half)));
    r.set(d, 1, one);
  } else if constexpr (P == 1) {
    const V first = hn::Floor(s);
    const V f = hn::Sub(s, first);
    r.set(d, 0, first);
    r.set(d, 1, hn::Sub(one, f));
    r.set(d, 2, f);
  } else if constexpr (P == 2) {
    const V nearest = hn::Floor(hn::Add(s, half));
    const V dd = hn::Sub(s, nearest);
    r.set(d, 0, hn::Sub(nearest, one));
    const V a = hn::Sub(half, dd), b = hn::Add(half, dd);
    r.set(d, 1, hn::Mul(hn::Mul(half, a), a));
    r.set(d, 2, hn::Sub(hn::Set(d, 0.75), hn::Mul(dd, dd)));
    r.set(d, 3, hn::Mul(hn::Mul(half, b), b));
  } else {
    const V i = hn::Floor(s);
    const V f = hn::Sub(s, i);
    const V g = hn::Sub(one, f);
    const V four = hn::Set(d, 4.0), six = hn::Set(d, 6.0), three = hn::Set(d, 3.0);
    r.set(d, 0, hn::Sub(i, one));
    r.set(d, 1, hn::Div(hn::Mul(hn::Mul(g, g), g), six));
    r.set(d, 2,
          hn::Div(hn::Add(hn::Sub(four, hn::Mul(hn::Mul(six, f), f)),
                          hn::Mul(hn::Mul(hn::Mul(three, f), f), f)),
                  six));
    r.set(d, 3,
          hn::Div(hn::Add(hn::Sub(four, hn::Mul(hn::Mul(six, g), g)),
                          hn::Mul(hn::Mul(hn::Mul(three, g), g), g)),
                  six));
    r.set(d, 4, hn::Div(hn::Mul(hn::Mul(f, f), f), six));
  }
}

// detail::axis_shape<Q, Active, Stag>(s) into r: order Q (staggered: at s - 1/2), or the
// single point 0 of weight 1 along an inactive axis.
template <int Q, bool Active, bool Stag>
HWY_INLINE void AxisShape(DF d, V s, ShapeV<Active ? Q : 0>& r) {
  if constexpr (!Active) {
    r.set(d, 0, hn::Zero(d));
    r.set(d, 1, hn::Set(d, 1.0));
  } else if constexpr (Stag) {
    ShapeOf<Q>(d, hn::Sub(s, hn::Set(d, 0.5)), r);
  } else {
    ShapeOf<Q>(d, s, r);
  }
}

// Grid::cells: (x - x0) / dx.
HWY_INLINE V Cells(DF d, const Grid& g, int a, V x) {
  return hn::Div(hn::Sub(x, hn::Set(d, g.x0[a])), hn::Set(d, g.dx[a]));
}

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

// f.template operator()<D, P>() for a run's dimension (1-3) and shape order (1-3).
template <class F>
HWY_INLINE void WithDP(int D, int P, F&& f) {
  auto with_p = [&]<int DD>() {
    if (P == 1)
      f.template operator()<DD, 1>();
    else if (P == 2)
      f.template operator()<DD, 2>();
    else
      f.template operator()<DD, 3>();
  };
  if (D == 1)
    with_p.template operator()<1>();
  else if (D == 2)
    with_p.template operator()<2>();
  else
    with_p.template operator()<3>();
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

// lorentz_gamma: sqrt(1 + |u|^2 / c^2).
HWY_INLINE V Gamma(DF d, V u0, V u1, V u2) {
  constexpr double inv_c2 = 1.0 / (constants::c * constants::c);
  const V uu = hn::Add(hn::Add(hn::Mul(u0, u0), hn::Mul(u1, u1)), hn::Mul(u2, u2));
  return hn::Sqrt(hn::Add(hn::Set(d, 1.0), hn::Mul(uu, hn::Set(d, inv_c2))));
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
HWY_INLINE V Transverse(DF d, V s0b, V dsb, V s0c, V dsc) {
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

// detail::transverse of x (S0, DS: 4-lane vectors of x points) and the point (s0b, dsb) of
// another axis.
HWY_INLINE hn::Vec<D4> TransverseX(D4 d4, hn::Vec<D4> s0, hn::Vec<D4> ds, double s0b, double dsb) {
  const auto a = hn::Set(d4, s0b), b = hn::Set(d4, dsb);
  return hn::Add(
      hn::Add(hn::Mul(s0, a), hn::Mul(hn::Set(d4, 0.5), hn::Add(hn::Mul(ds, a), hn::Mul(s0, b)))),
      hn::Mul(hn::Mul(hn::Set(d4, 1.0 / 3.0), ds), b));
}

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
                  const auto t = TransverseX(d4, s0, ds, at(c, l), at(c + 1, l));
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
        const auto t = TransverseX(d4, xrow(0, l), xrow(1, l), 1.0, 0.0);
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
HWY_EXPORT(Deposit);
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
void deposit(int D, int P, const Currents& J, const Grid& g, std::size_t n, const double* xo,
             const double* const x[3], const double* const u[3], const double* w, double q,
             double dt) {
  HWY_DYNAMIC_DISPATCH(Deposit)(D, P, J, g, n, xo, x, u, w, q, dt);
}

}  // namespace tessera::pic::simd
#endif  // HWY_ONCE

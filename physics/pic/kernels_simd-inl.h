// The PIC particle kernels' shared pieces, compiled once per target by each file that
// includes them under foreach_target.h (physics/pic/kernels_simd.cpp: the gather, the push
// and the bins; physics/pic/deposit_simd.cpp: the deposit): the one-copy rule, the padded
// partial vector, small arrays of vectors, the B-spline shapes on vectors, Grid::cells,
// the (D, P) dispatch and the Lorentz factor. Highway's per-target header idiom: the guard
// toggles with HWY_TARGET_TOGGLE, so each target's pass includes it again.
#if defined(TESSERA_PIC_KERNELS_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TESSERA_PIC_KERNELS_SIMD_INL_H_
#undef TESSERA_PIC_KERNELS_SIMD_INL_H_
#else
#define TESSERA_PIC_KERNELS_SIMD_INL_H_
#endif

#include <hwy/highway.h>

#include <cstddef>

#include "physics/pic/constants.hpp"
#include "physics/pic/fields.hpp"

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
#ifndef TESSERA_ONE_COPY
#if defined(__GNUC__) && !defined(__clang__)
#define TESSERA_ONE_COPY __attribute__((noipa))
#else
#define TESSERA_ONE_COPY __attribute__((noinline))
#endif
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

// lorentz_gamma: sqrt(1 + |u|^2 / c^2).
HWY_INLINE V Gamma(DF d, V u0, V u1, V u2) {
  constexpr double inv_c2 = 1.0 / (constants::c * constants::c);
  const V uu = hn::Add(hn::Add(hn::Mul(u0, u0), hn::Mul(u1, u1)), hn::Mul(u2, u2));
  return hn::Sqrt(hn::Add(hn::Set(d, 1.0), hn::Mul(uu, hn::Set(d, inv_c2))));
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::pic::simd
HWY_AFTER_NAMESPACE();

#endif  // TESSERA_PIC_KERNELS_SIMD_INL_H_

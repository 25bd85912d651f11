// The hydro row kernels with Google Highway (kernels_simd.hpp). This file is compiled once
// per target (foreach_target.h); HWY_DYNAMIC_DISPATCH picks the copy at run time.
//
// The per-zone numerics are those of reconstruct.hpp and riemann.hpp, written on a vector
// V of zones instead of one double: Highway's functions (Add, Mul, Min, IfThenElse...) in
// place of the operators and ternaries, because on SVE a vector is a sizeless type that
// takes no operators. Operations and their order are the reference's, term by term, so
// that the two differ only where a multiply and an add are fused.
//
// Every row is processed in whole vectors, the last one overlapping the one before it
// (ForRow; a row shorter than a vector, and the in-place fallback, use one partial vector
// whose lanes past the row are loaded as zeros and never stored: Ld and St below): no
// scalar remainder loop, so every zone gets the same instructions. The lanes past the row may
// compute 0/0; nothing traps on it and nothing of it is stored. The slopes, the half step and
// the face states end a row with a narrower vector instead where one holds the zones left
// (ForRowNarrowTail), the Riemann solvers start it with one (RiemannRowT): the same
// instructions on fewer lanes.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/hydro/kernels_simd.cpp"
#include "physics/hydro/kernels_simd.hpp"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>
#include <limits>
#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace tessera::hydro::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using D = hn::ScalableTag<double>;
using V = hn::Vec<D>;

// Load and store the lanes of a row from p on: a whole vector (kFull) or the first `count`
// lanes of the row's last one. The last one uses Highway's masked load and store where they
// neither fault nor need alignment (AVX-512, SVE: HWY_MEM_OPS_MIGHT_FAULT 0); elsewhere
// (SSE4's masked load is an aligned load of the whole vector; AVX2, NEON) it goes through a
// zero-filled aligned buffer, so nothing past the row is read or written.
template <bool kFull, class DD>
HWY_INLINE hn::Vec<DD> Ld(DD d, int count, const double* HWY_RESTRICT p) {
  if constexpr (kFull) {
    (void)count;
    return hn::LoadU(d, p);
  } else {
#if !HWY_MEM_OPS_MIGHT_FAULT
    return hn::MaskedLoad(hn::FirstN(d, std::size_t(count)), d, p);
#else
    HWY_ALIGN double buf[HWY_MAX_BYTES / sizeof(double)] = {};
    for (int l = 0; l < count; ++l) buf[l] = p[l];
    return hn::Load(d, buf);
#endif
  }
}
template <bool kFull, class DD>
HWY_INLINE void St(DD d, int count, hn::Vec<DD> v, double* HWY_RESTRICT p) {
  if constexpr (kFull) {
    (void)count;
    hn::StoreU(v, d, p);
  } else {
#if !HWY_MEM_OPS_MIGHT_FAULT
    hn::BlendedStore(v, hn::FirstN(d, std::size_t(count)), d, p);
#else
    HWY_ALIGN double buf[HWY_MAX_BYTES / sizeof(double)];
    hn::Store(v, d, buf);
    for (int l = 0; l < count; ++l) p[l] = buf[l];
#endif
  }
}

// body(full, i, count) for the vectors of zones [i0, i1), for kernels whose outputs are
// not their inputs: whole vectors (`full` std::true_type), the last one ending at i1 and
// overlapping the one before (its zones are computed twice, to the same bits: every lane
// does the same arithmetic); a row shorter than a vector is one partial vector of `count`
// lanes (std::false_type). No lane past the row is read or written.
template <class Body>
HWY_INLINE void ForRow(D d, int i0, int i1, Body&& body) {
  const int n = int(hn::Lanes(d));
  if (i1 - i0 < n) {
    if (i1 > i0) body(std::false_type(), i0, i1 - i0);
    return;
  }
  int i = i0;
  for (; i + n <= i1; i += n) body(std::true_type(), i, n);
  if (i < i1) body(std::true_type(), i1 - n, n);
}

// ForRow for a kernel that updates its inputs in place (a zone must not be done twice):
// whole vectors, then one partial vector of the `count` zones left.
template <class Body>
HWY_INLINE void ForRowInPlace(D d, int i0, int i1, Body&& body) {
  const int n = int(hn::Lanes(d));
  int i = i0;
  for (; i + n <= i1; i += n) body(std::true_type(), i, n);
  if (i < i1) body(std::false_type(), i, i1 - i);
}

// f(tag, width) with the narrowest tag of at least two lanes that holds `count` zones and
// is narrower than D (CappedTag: 2 or 4 lanes), else with D itself: the vector for the zones
// a row's whole vectors leave (ForRowNarrowTail, RiemannRowT). On SVE the capped tags are
// predicated whole vectors: no saving, the same results.
template <class F>
HWY_INLINE void WithNarrowTag(D d, int count, F&& f) {
  const int n = int(hn::Lanes(d));
  const hn::CappedTag<double, 2> d2;
  const hn::CappedTag<double, 4> d4;
  if (count <= 2 && int(hn::Lanes(d2)) < n)
    f(d2, 2);
  else if (count <= 4 && int(hn::Lanes(d4)) < n)
    f(d4, 4);
  else
    f(d, n);
}

// ForRow for bodies written for any tag, body(dd, full, i, count): whole vectors of D, then
// the zones they leave by one vector ending at i1 (WithNarrowTag: 2 or 4 lanes where one
// holds them, else a whole vector overlapping the one before, as ForRow). On AVX-512 a 2-D
// or 3-D row of 20 zones (16 and two guard zones either side) is two vectors of 8 and one
// of 4 instead of three of 8. Every width runs the same code, so a zone's bits do not
// depend on the vector it fell in.
template <class Body>
HWY_INLINE void ForRowNarrowTail(D d, int i0, int i1, Body&& body) {
  const int n = int(hn::Lanes(d));
  if (i1 - i0 < n) {
    if (i1 > i0) body(d, std::false_type(), i0, i1 - i0);
    return;
  }
  int i = i0;
  for (; i + n <= i1; i += n) body(d, std::true_type(), i, n);
  if (i < i1)
    WithNarrowTag(d, i1 - i, [&](auto dd, int w) { body(dd, std::true_type(), i1 - w, w); });
}

// ---- Riemann solvers (riemann.hpp: signal_speeds, hllc, hlle, total_energy,
// physical_flux), on vectors of faces.

// The Riemann solvers run on one vector of faces or on two in lockstep (Pair). A face's
// chain of dependent operations is long (three square roots and a division in series before
// HLLC's division; perf puts the samples on the instruction after that division); two
// independent chains
// in one instruction stream keep the divider and the FMA units busy where one leaves them
// waiting. On this AVX-512 VM the Riemann kernel's share of a sedov_3d_uniform step fell
// from 3.1-3.6 times that of the slopes to 1.8 (perf samples; AVX2 code of the native
// build 2.44-2.57 -> 2.29-2.46), and llvm-mca's Zen 2 model of the portable build's loops
// gives 220 -> 189 cycles per vector for AVX2 and 208 -> 166 for SSE4. Every target with
// sized vectors uses pairs; SVE cannot (a sizeless vector cannot be a struct member). pk
// holds the operations for both: Highway's for one vector, the same operation on each of
// the two for a Pair; the per-face formulas are written once, on pk.
template <class DD>
struct Pair {
  DD d;
};
template <class DD>
struct PairV {
  hn::Vec<DD> a, b;
};
template <class DD>
struct PairM {
  hn::Mask<DD> a, b;
};

namespace pk {
template <class DD>
HWY_INLINE hn::Vec<DD> Set(DD d, double x) {
  return hn::Set(d, x);
}
template <class DD>
HWY_INLINE PairV<DD> Set(Pair<DD> p, double x) {
  const hn::Vec<DD> v = hn::Set(p.d, x);
  return {v, v};
}
template <bool kFull, class DD>
HWY_INLINE hn::Vec<DD> Load(DD d, int count, const double* HWY_RESTRICT p) {
  return Ld<kFull>(d, count, p);
}
template <bool kFull, class DD>
HWY_INLINE PairV<DD> Load(Pair<DD> q, int /*count: whole vectors*/, const double* HWY_RESTRICT p) {
  static_assert(kFull, "a Pair is two whole vectors");
  return {hn::LoadU(q.d, p), hn::LoadU(q.d, p + hn::Lanes(q.d))};
}
template <bool kFull, class DD>
HWY_INLINE void Store(DD d, int count, hn::Vec<DD> v, double* HWY_RESTRICT p) {
  St<kFull>(d, count, v, p);
}
template <bool kFull, class DD>
HWY_INLINE void Store(Pair<DD> q, int /*count*/, PairV<DD> v, double* HWY_RESTRICT p) {
  static_assert(kFull, "a Pair is two whole vectors");
  hn::StoreU(v.a, q.d, p);
  hn::StoreU(v.b, q.d, p + hn::Lanes(q.d));
}
#define TESSERA_PK_BINARY(OP)                         \
  template <class V>                                  \
  HWY_INLINE V OP(V x, V y) {                         \
    return hn::OP(x, y);                              \
  }                                                   \
  template <class DD>                                 \
  HWY_INLINE PairV<DD> OP(PairV<DD> x, PairV<DD> y) { \
    return {hn::OP(x.a, y.a), hn::OP(x.b, y.b)};      \
  }
TESSERA_PK_BINARY(Add)
TESSERA_PK_BINARY(Sub)
TESSERA_PK_BINARY(Mul)
TESSERA_PK_BINARY(Div)
TESSERA_PK_BINARY(Min)
TESSERA_PK_BINARY(Max)
#undef TESSERA_PK_BINARY
template <class V>
HWY_INLINE V Sqrt(V x) {
  return hn::Sqrt(x);
}
template <class DD>
HWY_INLINE PairV<DD> Sqrt(PairV<DD> x) {
  return {hn::Sqrt(x.a), hn::Sqrt(x.b)};
}
template <class V>
HWY_INLINE auto Le(V x, V y) {
  return hn::Le(x, y);
}
template <class DD>
HWY_INLINE PairM<DD> Le(PairV<DD> x, PairV<DD> y) {
  return {hn::Le(x.a, y.a), hn::Le(x.b, y.b)};
}
template <class M, class V>
HWY_INLINE V IfThenElse(M m, V x, V y) {
  return hn::IfThenElse(m, x, y);
}
template <class DD>
HWY_INLINE PairV<DD> IfThenElse(PairM<DD> m, PairV<DD> x, PairV<DD> y) {
  return {hn::IfThenElse(m.a, x.a, y.a), hn::IfThenElse(m.b, x.b, y.b)};
}
}  // namespace pk

// E = rhoe + d (un^2 + ut1^2 + ut2^2) / 2 (total_energy).
template <class T, class VV>
HWY_INLINE VV TotalEnergy(T d, VV rho, VV un, VV ut1, VV ut2, VV rhoe) {
  const VV half = pk::Set(d, 0.5);
  const VV q = pk::Add(pk::Add(pk::Mul(un, un), pk::Mul(ut1, ut1)), pk::Mul(ut2, ut2));
  return pk::Add(rhoe, pk::Mul(pk::Mul(half, rho), q));
}

// The faces [t, t + width) of the row (kFull), or the first m of them, where the tag T is
// the row's D, a narrower one (the faces left after the whole vectors), or a Pair of D.
template <bool kHllc, bool kUniform, bool kFull, class T>
HWY_INLINE void RiemannFaces(T d, int m, int t, const RiemannRow& a) {
  using V = decltype(pk::Set(d, 0.0));
  const V zero = pk::Set(d, 0.0), half = pk::Set(d, 0.5), one = pk::Set(d, 1.0);
  const V ld = pk::Load<kFull>(d, m, a.ld + t), lu = pk::Load<kFull>(d, m, a.lu + t);
  const V lt1 = pk::Load<kFull>(d, m, a.lt1 + t), lt2 = pk::Load<kFull>(d, m, a.lt2 + t);
  const V lp = pk::Load<kFull>(d, m, a.lp + t);
  const V rd = pk::Load<kFull>(d, m, a.rd + t), ru = pk::Load<kFull>(d, m, a.ru + t);
  const V rt1 = pk::Load<kFull>(d, m, a.rt1 + t), rt2 = pk::Load<kFull>(d, m, a.rt2 + t);
  const V rp = pk::Load<kFull>(d, m, a.rp + t);
  const V lg = kUniform ? pk::Set(d, a.ugc) : pk::Load<kFull>(d, m, a.lgc + t);
  const V rg = kUniform ? pk::Set(d, a.ugc) : pk::Load<kFull>(d, m, a.rgc + t);
  const V le = kUniform ? pk::Set(d, a.uge) : pk::Load<kFull>(d, m, a.lge + t);
  const V re = kUniform ? pk::Set(d, a.uge) : pk::Load<kFull>(d, m, a.rge + t);
  const V lrhoe = pk::Mul(lp, le), rrhoe = pk::Mul(rp, re);
  // face_speeds: the sound speeds and Roe weights from one division.
  const V sw = pk::Sqrt(pk::Mul(ld, rd));
  const V mw = pk::Add(ld, sw);
  const V q = pk::Div(one, pk::Mul(pk::Mul(ld, rd), mw));
  const V lc = pk::Sqrt(pk::Mul(pk::Mul(lg, lp), pk::Mul(pk::Mul(rd, mw), q)));
  const V rc = pk::Sqrt(pk::Mul(pk::Mul(rg, rp), pk::Mul(pk::Mul(ld, mw), q)));
  const V inv_m = pk::Mul(pk::Mul(ld, rd), q);

  // signal_speeds: Einfeldt / Davis bounds.
  const V u_avg = pk::Mul(pk::Add(pk::Mul(ld, lu), pk::Mul(sw, ru)), inv_m);
  const V du = pk::Sub(ru, lu);
  const V eta2 = pk::Mul(pk::Mul(pk::Mul(pk::Mul(half, sw), ld), inv_m), inv_m);
  const V c2 = pk::Mul(pk::Add(pk::Mul(pk::Mul(ld, lc), lc), pk::Mul(pk::Mul(sw, rc), rc)), inv_m);
  const V c_avg = pk::Sqrt(pk::Add(c2, pk::Mul(pk::Mul(eta2, du), du)));
  const V s_l = pk::Min(pk::Min(pk::Sub(lu, lc), pk::Sub(ru, rc)), pk::Sub(u_avg, c_avg));
  const V s_r = pk::Max(pk::Max(pk::Add(lu, lc), pk::Add(ru, rc)), pk::Add(u_avg, c_avg));

  if constexpr (kHllc) {
    // Step 2: A = aL - aR and the numerators n_K of S* - u_K (riemann.hpp, hllc).
    const V al = pk::Mul(ld, pk::Sub(s_l, lu));
    const V ar = pk::Mul(rd, pk::Sub(s_r, ru));
    const V dp = pk::Sub(rp, lp);
    const V av = pk::Sub(al, ar);
    const V n_l = pk::Sub(dp, pk::Mul(ar, du));
    const V n_r = pk::Sub(dp, pk::Mul(al, du));
    // Step 3: the side K of the contact the face lies on: (uL + uR) A + n_L + n_R <= 0.
    const auto left = pk::Le(pk::Add(pk::Mul(pk::Add(lu, ru), av), pk::Add(n_l, n_r)), zero);
    const V kd = pk::IfThenElse(left, ld, rd), kun = pk::IfThenElse(left, lu, ru);
    const V kt1 = pk::IfThenElse(left, lt1, rt1), kt2 = pk::IfThenElse(left, lt2, rt2);
    const V kp = pk::IfThenElse(left, lp, rp), krhoe = pk::IfThenElse(left, lrhoe, rrhoe);
    const V sk = pk::IfThenElse(left, s_l, s_r);
    const V sk_face = pk::IfThenElse(left, pk::Min(s_l, zero), pk::Max(s_r, zero));
    const V n_k = pk::IfThenElse(left, n_l, n_r);
    // Step 4: U*_K - U_K, 1/A and 1/(S_K - S*) from one division.
    const V sku = pk::Sub(sk, kun);
    const V x = pk::Sub(pk::Mul(sku, av), n_k);
    const V qb = pk::Div(one, pk::Mul(av, x));
    const V ds = pk::Mul(n_k, pk::Mul(x, qb));
    const V inv_b = pk::Mul(pk::Mul(av, av), qb);
    const V sstar_k = pk::Add(kun, ds);
    const V d_star = pk::Mul(pk::Mul(kd, sku), inv_b);
    const V dd = pk::Mul(pk::Mul(kd, ds), inv_b);
    const V e_k = TotalEnergy(d, kd, kun, kt1, kt2, krhoe);
    const V dmn = pk::Add(pk::Mul(d_star, ds), pk::Mul(kun, dd));
    const V de = pk::Mul(ds, pk::Add(pk::Mul(pk::Add(e_k, kp), inv_b), pk::Mul(d_star, sstar_k)));
    // Step 5: F*_K = F_K + S_K (U*_K - U_K).
    const V mk = pk::Mul(kd, kun);
    pk::Store<kFull>(d, m, pk::Add(mk, pk::Mul(sk_face, dd)), a.fd + t);
    pk::Store<kFull>(d, m, pk::Add(pk::Add(pk::Mul(mk, kun), kp), pk::Mul(sk_face, dmn)), a.fn + t);
    pk::Store<kFull>(d, m, pk::Add(pk::Mul(mk, kt1), pk::Mul(sk_face, pk::Mul(kt1, dd))),
                     a.ft1 + t);
    pk::Store<kFull>(d, m, pk::Add(pk::Mul(mk, kt2), pk::Mul(sk_face, pk::Mul(kt2, dd))),
                     a.ft2 + t);
    pk::Store<kFull>(d, m, pk::Add(pk::Mul(pk::Add(e_k, kp), kun), pk::Mul(sk_face, de)), a.fe + t);
  } else {
    // HLLE: F = F_L + b- [b+ dU - dF] / (b+ - b-).
    const V bm = pk::Min(s_l, zero), bp = pk::Max(s_r, zero);
    const V mnl = pk::Mul(ld, lu), mnr = pk::Mul(rd, ru);
    const V el = TotalEnergy(d, ld, lu, lt1, lt2, lrhoe);
    const V er = TotalEnergy(d, rd, ru, rt1, rt2, rrhoe);
    // Physical fluxes (physical_flux).
    const V fl_d = mnl, fr_d = mnr;
    const V fl_mn = pk::Add(pk::Mul(mnl, lu), lp), fr_mn = pk::Add(pk::Mul(mnr, ru), rp);
    const V fl_t1 = pk::Mul(mnl, lt1), fr_t1 = pk::Mul(mnr, rt1);
    const V fl_t2 = pk::Mul(mnl, lt2), fr_t2 = pk::Mul(mnr, rt2);
    const V fl_e = pk::Mul(pk::Add(el, lp), lu), fr_e = pk::Mul(pk::Add(er, rp), ru);
    const V w = pk::Div(bm, pk::Sub(bp, bm));
    auto hll = [&](V fl, V fr, V ul, V ur) {
      return pk::Add(fl, pk::Mul(w, pk::Sub(pk::Mul(bp, pk::Sub(ur, ul)), pk::Sub(fr, fl))));
    };
    pk::Store<kFull>(d, m, hll(fl_d, fr_d, ld, rd), a.fd + t);
    pk::Store<kFull>(d, m, hll(fl_mn, fr_mn, mnl, mnr), a.fn + t);
    pk::Store<kFull>(d, m, hll(fl_t1, fr_t1, pk::Mul(ld, lt1), pk::Mul(rd, rt1)), a.ft1 + t);
    pk::Store<kFull>(d, m, hll(fl_t2, fr_t2, pk::Mul(ld, lt2), pk::Mul(rd, rt2)), a.ft2 + t);
    pk::Store<kFull>(d, m, hll(fl_e, fr_e, el, er), a.fe + t);
  }
}

// The faces are done in whole vectors, except the first r = a.n mod Lanes(d): those by one
// vector of the narrowest width of at least two lanes that holds them (CappedTag), issued
// first so that its long chain of square roots and divisions overlaps the whole vectors that
// follow. On AVX2 the 17 faces of an x-row of a 16-zone block are one vector of 2 and four
// of 4, instead of a fifth of 4 overlapping the fourth; on AVX-512 one of 2 and two of 8,
// instead of three of 8. Square roots and divisions cost per lane whatever the width; with an
// overlapping vector last, a row of 17 faces took 1.5-1.8x the time of a row of 16
// (tessera_kernel_bench on this project's AVX-512 VM, noisy).
// Every width runs the same code (RiemannFaces). The whole vectors go two at a time (Pair)
// where vectors have a size.
// A row shorter than a vector is one partial vector.
template <bool kHllc, bool kUniform>
HWY_NOINLINE void RiemannRowT(const RiemannRow& row) {
  const D d;
  const RiemannRow a = row;  // a local copy: its pointers stay in registers
  const int n = int(hn::Lanes(d));
  if (a.n < n) {
    if (a.n > 0) RiemannFaces<kHllc, kUniform, false>(d, a.n, 0, a);
    return;
  }
  const int r = a.n % n;
  if (r > 0)
    WithNarrowTag(d, r, [&](auto dd, int w) { RiemannFaces<kHllc, kUniform, true>(dd, w, 0, a); });
  int t = r;
#if !HWY_HAVE_SCALABLE
  for (; t + 2 * n <= a.n; t += 2 * n) RiemannFaces<kHllc, kUniform, true>(Pair<D>{d}, n, t, a);
#endif
  for (; t < a.n; t += n) RiemannFaces<kHllc, kUniform, true>(d, n, t, a);
}

void Riemann(bool hllc, bool uniform, const RiemannRow& a) {
  if (hllc)
    uniform ? RiemannRowT<true, true>(a) : RiemannRowT<true, false>(a);
  else
    uniform ? RiemannRowT<false, true>(a) : RiemannRowT<false, false>(a);
}

// ---- Reconstruction (reconstruct.hpp: limited_slope).

template <int kLimiter, class DD, class VV = hn::Vec<DD>>
HWY_INLINE VV LimitedSlope(DD d, VV qm, VV q0, VV qp) {
  const VV dl = hn::Sub(q0, qm), dr = hn::Sub(qp, q0);
  const auto monotone = hn::Gt(hn::Mul(dl, dr), hn::Zero(d));
  if constexpr (kLimiter == 0) {  // minmod
    return hn::IfThenElseZero(monotone, hn::CopySign(hn::Min(hn::Abs(dl), hn::Abs(dr)), dl));
  } else if constexpr (kLimiter == 1) {  // van Leer
    return hn::IfThenElseZero(monotone,
                              hn::Div(hn::Mul(hn::Mul(hn::Set(d, 2.0), dl), dr), hn::Add(dl, dr)));
  } else {  // MC
    const VV lim = hn::Min(hn::Mul(hn::Set(d, 2.0), hn::Min(hn::Abs(dl), hn::Abs(dr))),
                           hn::Mul(hn::Set(d, 0.5), hn::Abs(hn::Add(dl, dr))));
    return hn::IfThenElseZero(monotone, hn::CopySign(lim, dl));
  }
}

// kNr: the channel count when known at compile time (5: no mass scalars; the channel
// loops then unroll), 0 for nr.
template <int kLimiter, int kNr>
HWY_NOINLINE void SlopesT(const double* HWY_RESTRICT W, std::size_t N, std::size_t rb,
                          std::ptrdiff_t st, int i0, int i1, double* HWY_RESTRICT out, int n0,
                          int nr_) {
  const D d;
  const int nr = kNr > 0 ? kNr : nr_;
  for (int v = 0; v < nr; ++v) {
    const double* HWY_RESTRICT q = W + std::size_t(v) * N + rb;
    double* HWY_RESTRICT dv = out + std::size_t(v) * n0;
    ForRowNarrowTail(d, i0, i1, [&](auto dd, auto full, int i, auto m) {
      constexpr bool F = decltype(full)::value;
      const auto s = LimitedSlope<kLimiter>(dd, Ld<F>(dd, m, q + i - st), Ld<F>(dd, m, q + i),
                                            Ld<F>(dd, m, q + i + st));
      St<F>(dd, m, s, dv + i);
    });
  }
}

void Slopes(int limiter, const double* W, std::size_t N, std::size_t rb, std::ptrdiff_t st, int i0,
            int i1, double* out, int n0, int nr) {
  if (nr == 5) {
    if (limiter == 0) return SlopesT<0, 5>(W, N, rb, st, i0, i1, out, n0, nr);
    if (limiter == 1) return SlopesT<1, 5>(W, N, rb, st, i0, i1, out, n0, nr);
    return SlopesT<2, 5>(W, N, rb, st, i0, i1, out, n0, nr);
  }
  if (limiter == 0) return SlopesT<0, 0>(W, N, rb, st, i0, i1, out, n0, nr);
  if (limiter == 1) return SlopesT<1, 0>(W, N, rb, st, i0, i1, out, n0, nr);
  return SlopesT<2, 0>(W, N, rb, st, i0, i1, out, n0, nr);
}

// ---- The MUSCL-Hancock half step (hydro.cpp: hancock_row).

template <int kNd, bool kUniform>
HWY_NOINLINE void HancockT(const double* HWY_RESTRICT W, std::size_t N, std::size_t rb,
                           const double* HWY_RESTRICT sl, int i0, int i1, int n0, const double f[3],
                           int nr, double ugc, double* HWY_RESTRICT H) {
  const D d;
  const double* HWY_RESTRICT gcw = W + std::size_t(nr) * N + rb;
  const double* HWY_RESTRICT r = W + rb;
  const double* HWY_RESTRICT vx = W + N + rb;
  const double* HWY_RESTRICT vy = W + 2 * N + rb;
  const double* HWY_RESTRICT vz = W + 3 * N + rb;
  const double* HWY_RESTRICT p = W + 4 * N + rb;
  const std::size_t R = std::size_t(nr) * n0;
  ForRowNarrowTail(d, i0, i1, [&](auto dd, auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    using V = hn::Vec<decltype(dd)>;
    const V f0 = hn::Set(dd, f[0]), f1 = hn::Set(dd, f[1]), f2 = hn::Set(dd, f[2]);
    // Slopes a<axis><variable> at zone i: sl[axis][variable][i].
    auto s = [&](int a, int v) { return Ld<F>(dd, m, sl + a * R + std::size_t(v) * n0 + i); };
    const V ri = Ld<F>(dd, m, r + i), xi = Ld<F>(dd, m, vx + i), yi = Ld<F>(dd, m, vy + i);
    const V zi = Ld<F>(dd, m, vz + i), pi = Ld<F>(dd, m, p + i);
    const V gc = kUniform ? hn::Set(dd, ugc) : Ld<F>(dd, m, gcw + i);
    const V gp = hn::Mul(gc, pi);
    const V ir = hn::Div(hn::Set(dd, 1.0), ri);
    const V zero = hn::Zero(dd);
    // Axis 0 (the reference adds each axis's term to 0.0 first: the same bits).
    V hr = hn::Mul(f0, hn::Add(hn::Mul(xi, s(0, 0)), hn::Mul(ri, s(0, 1))));
    V hx = hn::Mul(f0, hn::Add(hn::Mul(xi, s(0, 1)), hn::Mul(s(0, 4), ir)));
    V hy = hn::Mul(f0, hn::Add(hn::Mul(xi, s(0, 2)), zero));
    V hz = hn::Mul(f0, hn::Add(hn::Mul(xi, s(0, 3)), zero));
    V hp = hn::Mul(f0, hn::Add(hn::Mul(xi, s(0, 4)), hn::Mul(gp, s(0, 1))));
    if constexpr (kNd > 1) {
      hr = hn::Add(hr, hn::Mul(f1, hn::Add(hn::Mul(yi, s(1, 0)), hn::Mul(ri, s(1, 2)))));
      hx = hn::Add(hx, hn::Mul(f1, hn::Add(hn::Mul(yi, s(1, 1)), zero)));
      hy = hn::Add(hy, hn::Mul(f1, hn::Add(hn::Mul(yi, s(1, 2)), hn::Mul(s(1, 4), ir))));
      hz = hn::Add(hz, hn::Mul(f1, hn::Add(hn::Mul(yi, s(1, 3)), zero)));
      hp = hn::Add(hp, hn::Mul(f1, hn::Add(hn::Mul(yi, s(1, 4)), hn::Mul(gp, s(1, 2)))));
    }
    if constexpr (kNd > 2) {
      hr = hn::Add(hr, hn::Mul(f2, hn::Add(hn::Mul(zi, s(2, 0)), hn::Mul(ri, s(2, 3)))));
      hx = hn::Add(hx, hn::Mul(f2, hn::Add(hn::Mul(zi, s(2, 1)), zero)));
      hy = hn::Add(hy, hn::Mul(f2, hn::Add(hn::Mul(zi, s(2, 2)), zero)));
      hz = hn::Add(hz, hn::Mul(f2, hn::Add(hn::Mul(zi, s(2, 3)), hn::Mul(s(2, 4), ir))));
      hp = hn::Add(hp, hn::Mul(f2, hn::Add(hn::Mul(zi, s(2, 4)), hn::Mul(gp, s(2, 3)))));
    }
    St<F>(dd, m, hn::Sub(ri, hr), H + i);
    St<F>(dd, m, hn::Sub(xi, hx), H + n0 + i);
    St<F>(dd, m, hn::Sub(yi, hy), H + 2 * n0 + i);
    St<F>(dd, m, hn::Sub(zi, hz), H + 3 * n0 + i);
    St<F>(dd, m, hn::Sub(pi, hp), H + 4 * n0 + i);
  });
  // Mass scalars: dX/dt + v . grad X = 0.
  const V f0 = hn::Set(d, f[0]), f1 = hn::Set(d, f[1]), f2 = hn::Set(d, f[2]);
  for (int q = 5; q < nr; ++q) {
    const double* HWY_RESTRICT x = W + std::size_t(q) * N + rb;
    double* HWY_RESTRICT h = H + std::size_t(q) * n0;
    ForRow(d, i0, i1, [&](auto full, int i, auto m) {
      constexpr bool F = decltype(full)::value;
      V hq = hn::Mul(f0, hn::Mul(Ld<F>(d, m, vx + i), Ld<F>(d, m, sl + q * n0 + i)));
      if constexpr (kNd > 1)
        hq = hn::Add(hq,
                     hn::Mul(f1, hn::Mul(Ld<F>(d, m, vy + i), Ld<F>(d, m, sl + R + q * n0 + i))));
      if constexpr (kNd > 2)
        hq = hn::Add(
            hq, hn::Mul(f2, hn::Mul(Ld<F>(d, m, vz + i), Ld<F>(d, m, sl + 2 * R + q * n0 + i))));
      St<F>(d, m, hn::Sub(Ld<F>(d, m, x + i), hq), h + i);
    });
  }
}

void Hancock(int nd, bool uniform, const double* W, std::size_t N, std::size_t rb, const double* sl,
             int i0, int i1, int n0, const double f[3], int nr, double ugc, double* H) {
  if (uniform) {
    if (nd == 3) return HancockT<3, true>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
    if (nd == 2) return HancockT<2, true>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
    return HancockT<1, true>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
  }
  if (nd == 3) return HancockT<3, false>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
  if (nd == 2) return HancockT<2, false>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
  return HancockT<1, false>(W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
}

// ---- Face states and the positivity fallback (plm_states_row, fallback_scalar_row,
// fallback_row).

// PLM face states of every channel, then the fallback of both faces to the zone average W
// where a face's density or pressure is not positive (plm_states_row, fallback_scalar_row
// and fallback_row in one pass, channel by channel as they run).
template <int kNr>
HWY_NOINLINE void PlmFacesT(const double* HWY_RESTRICT B, std::size_t bs,
                            const double* HWY_RESTRICT dsl, const double* HWY_RESTRICT W,
                            std::size_t N, int i0, int i1, int n0, int nr_, double smalld,
                            double smallp, double* HWY_RESTRICT lo, double* HWY_RESTRICT hi) {
  const D d;
  const int nr = kNr > 0 ? kNr : nr_;
  ForRowNarrowTail(d, i0, i1, [&](auto dd, auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    using V = hn::Vec<decltype(dd)>;
    const V half = hn::Set(dd, 0.5), sd = hn::Set(dd, smalld), sp = hn::Set(dd, smallp);
    auto face = [&](int v, V sign) {
      return hn::MulAdd(sign, hn::Mul(half, Ld<F>(dd, m, dsl + std::size_t(v) * n0 + i)),
                        Ld<F>(dd, m, B + std::size_t(v) * bs + i));
    };
    // b -/+ d/2: a multiply by -1 or +1 and an add are exact, so fusing them is too.
    const V minus = hn::Set(dd, -1.0), plus = hn::Set(dd, 1.0);
    const auto ok_lo = hn::And(hn::Gt(face(0, minus), sd), hn::Gt(face(4, minus), sp));
    const auto ok_hi = hn::And(hn::Gt(face(0, plus), sd), hn::Gt(face(4, plus), sp));
    for (int v = 0; v < nr; ++v) {
      const V w = Ld<F>(dd, m, W + std::size_t(v) * N + i);
      St<F>(dd, m, hn::IfThenElse(ok_lo, face(v, minus), w), lo + std::size_t(v) * n0 + i);
      St<F>(dd, m, hn::IfThenElse(ok_hi, face(v, plus), w), hi + std::size_t(v) * n0 + i);
    }
  });
}

void PlmFaces(const double* B, std::size_t bs, const double* dsl, const double* W, std::size_t N,
              int i0, int i1, int n0, int nr, double smalld, double smallp, double* lo,
              double* hi) {
  if (nr == 5) return PlmFacesT<5>(B, bs, dsl, W, N, i0, i1, n0, nr, smalld, smallp, lo, hi);
  PlmFacesT<0>(B, bs, dsl, W, N, i0, i1, n0, nr, smalld, smallp, lo, hi);
}

// ---- PPM face states (reconstruct.hpp: ppm_faces; kernels_ref.hpp: ppm_states_row), then
// the positivity fallback as in PlmFacesT.

// The CW84 edge values of one vector of zones (ppm_faces, step for step) from the zone
// averages qm, q0, qp and the MC slopes dm, d0, dp of zones -1, 0, +1.
template <class DD, class VV = hn::Vec<DD>>
HWY_INLINE void PpmEdges(DD d, VV qm, VV q0, VV qp, VV dm, VV d0, VV dp, VV& q_left, VV& q_right) {
  const VV half = hn::Set(d, 0.5), sixth = hn::Set(d, 1.0 / 6.0);
  const VV al = hn::Sub(hn::Mul(half, hn::Add(qm, q0)), hn::Mul(sixth, hn::Sub(d0, dm)));
  const VV ar = hn::Sub(hn::Mul(half, hn::Add(q0, qp)), hn::Mul(sixth, hn::Sub(dp, d0)));
  const auto extremum = hn::Le(hn::Mul(hn::Sub(ar, q0), hn::Sub(q0, al)), hn::Zero(d));
  const VV al1 = hn::IfThenElse(extremum, q0, al);
  const VV ar1 = hn::IfThenElse(extremum, q0, ar);
  const VV da = hn::Sub(ar1, al1);
  const VV a6 = hn::Mul(hn::Set(d, 6.0), hn::Sub(q0, hn::Mul(half, hn::Add(al1, ar1))));
  const VV three = hn::Set(d, 3.0), two = hn::Set(d, 2.0);
  q_left = hn::IfThenElse(hn::Gt(hn::Mul(da, a6), hn::Mul(da, da)),
                          hn::Sub(hn::Mul(three, q0), hn::Mul(two, ar1)), al1);
  q_right = hn::IfThenElse(hn::Gt(hn::Mul(hn::Neg(da), da), hn::Mul(da, a6)),
                           hn::Sub(hn::Mul(three, q0), hn::Mul(two, al1)), ar1);
}

// Every channel's PPM faces along stride st, then both faces back to the zone average where
// the face's density or pressure is not positive (ppm_states_row, fallback_scalar_row and
// fallback_row in one pass), density and pressure first: theirs decide the fallback. Along x
// (st = 1) the MC slopes of zones [i0 - 1, i1 + 1) go first into ds ([nr] rows of n0 + 2,
// zone i at i + 1), each computed once: ppm_faces computes a zone's slope three times, as
// dm, d0 and dp of its neighbours (the same bits). Along y and z the neighbours' slopes are
// those of other rows, computed in place.
template <int kNr>
HWY_NOINLINE void PpmFacesT(const double* HWY_RESTRICT W, std::size_t N, std::size_t rb,
                            std::ptrdiff_t st, int i0, int i1, int n0, int nr_, double smalld,
                            double smallp, double* HWY_RESTRICT ds, double* HWY_RESTRICT lo,
                            double* HWY_RESTRICT hi) {
  const D d;
  const int nr = kNr > 0 ? kNr : nr_;
  const std::size_t ns = std::size_t(n0) + 2;
  const bool along_x = st == 1;
  if (along_x)
    for (int v = 0; v < nr; ++v) {
      const double* HWY_RESTRICT q = W + std::size_t(v) * N + rb;
      double* HWY_RESTRICT dv = ds + std::size_t(v) * ns + 1;
      ForRowNarrowTail(d, i0 - 1, i1 + 1, [&](auto dd, auto full, int i, auto m) {
        constexpr bool F = decltype(full)::value;
        St<F>(dd, m,
              LimitedSlope<2>(dd, Ld<F>(dd, m, q + i - 1), Ld<F>(dd, m, q + i),
                              Ld<F>(dd, m, q + i + 1)),
              dv + i);
      });
    }
  ForRowNarrowTail(d, i0, i1, [&](auto dd, auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    using VV = hn::Vec<decltype(dd)>;
    auto edges = [&](int v, VV& l, VV& r) {
      const double* HWY_RESTRICT q = W + std::size_t(v) * N + rb + i;
      const VV qm = Ld<F>(dd, m, q - st), q0 = Ld<F>(dd, m, q), qp = Ld<F>(dd, m, q + st);
      if (along_x) {
        const double* HWY_RESTRICT s = ds + std::size_t(v) * ns + 1 + i;
        PpmEdges(dd, qm, q0, qp, Ld<F>(dd, m, s - 1), Ld<F>(dd, m, s), Ld<F>(dd, m, s + 1), l, r);
      } else {
        const VV qmm = Ld<F>(dd, m, q - 2 * st), qpp = Ld<F>(dd, m, q + 2 * st);
        PpmEdges(dd, qm, q0, qp, LimitedSlope<2>(dd, qmm, qm, q0), LimitedSlope<2>(dd, qm, q0, qp),
                 LimitedSlope<2>(dd, q0, qp, qpp), l, r);
      }
    };
    VV l0, r0, l4, r4;
    edges(0, l0, r0);
    edges(4, l4, r4);
    const VV sd = hn::Set(dd, smalld), sp = hn::Set(dd, smallp);
    const auto ok_lo = hn::And(hn::Gt(l0, sd), hn::Gt(l4, sp));
    const auto ok_hi = hn::And(hn::Gt(r0, sd), hn::Gt(r4, sp));
    auto put = [&](int v, VV l, VV r) {
      const VV w = Ld<F>(dd, m, W + std::size_t(v) * N + rb + i);
      St<F>(dd, m, hn::IfThenElse(ok_lo, l, w), lo + std::size_t(v) * n0 + i);
      St<F>(dd, m, hn::IfThenElse(ok_hi, r, w), hi + std::size_t(v) * n0 + i);
    };
    put(0, l0, r0);
    put(4, l4, r4);
    for (int v = 1; v < nr; ++v) {
      if (v == 4) continue;
      VV l, r;
      edges(v, l, r);
      put(v, l, r);
    }
  });
}

void PpmFaces(const double* W, std::size_t N, std::size_t rb, std::ptrdiff_t st, int i0, int i1,
              int n0, int nr, double smalld, double smallp, double* ds, double* lo, double* hi) {
  if (nr == 5) return PpmFacesT<5>(W, N, rb, st, i0, i1, n0, nr, smalld, smallp, ds, lo, hi);
  PpmFacesT<0>(W, N, rb, st, i0, i1, n0, nr, smalld, smallp, ds, lo, hi);
}

// ---- The time-step rate (hydro.cpp: max_rate) of one row.

template <bool kUniform>
HWY_NOINLINE double MaxRateT(const MaxRateRow& row) {
  const D d;
  const MaxRateRow a = row;
  const V sp = hn::Set(d, a.smallp), one = hn::Set(d, 1.0), half = hn::Set(d, 0.5);
  const V gm1 = hn::Set(d, a.gm1), ugc = hn::Set(d, a.ugc);
  const V x1 = hn::Set(d, a.idx[1]), x2 = hn::Set(d, a.idx[2]);
  const V inf = hn::Set(d, std::numeric_limits<double>::infinity());
  V best = hn::Zero(d);
  auto bad = hn::FirstN(d, 0);  // check_row's test, where asked for (a.bad)
  ForRow(d, 0, a.n, [&](auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    const V rho = Ld<F>(d, m, a.d + i);
    const V r = hn::Div(one, rho);
    const V mx = Ld<F>(d, m, a.mx + i), my = Ld<F>(d, m, a.my + i), mz = Ld<F>(d, m, a.mz + i);
    const V vx = hn::Mul(mx, r), vy = hn::Mul(my, r);
    const V vz = hn::Mul(mz, r);
    const V e = Ld<F>(d, m, a.e + i);
    V p = hn::Zero(d), g = ugc;
    auto ok = hn::And(hn::Gt(rho, hn::Zero(d)), hn::Lt(hn::Abs(e), inf));
    if constexpr (kUniform) {
      const V q = hn::Add(hn::Add(hn::Mul(vx, vx), hn::Mul(vy, vy)), hn::Mul(vz, vz));
      const V ein = hn::Sub(hn::Mul(e, r), hn::Mul(half, q));
      p = hn::Max(hn::Mul(hn::Mul(gm1, rho), ein), sp);
      ok = hn::And(ok, hn::And(hn::Lt(hn::Abs(mx), inf),
                               hn::And(hn::Lt(hn::Abs(my), inf), hn::Lt(hn::Abs(mz), inf))));
    } else {
      const V pr = Ld<F>(d, m, a.pres + i);
      p = hn::Max(pr, sp);
      g = Ld<F>(d, m, a.gamc + i);
      ok = hn::And(ok, hn::Lt(hn::Abs(pr), inf));
    }
    if constexpr (F)
      bad = hn::Or(bad, hn::Not(ok));
    else
      bad = hn::Or(bad, hn::AndNot(ok, hn::FirstN(d, std::size_t(m))));
    const V c = hn::Sqrt(hn::Mul(hn::Mul(g, p), r));
    const V x0 = a.rad ? Ld<F>(d, m, a.rad + i) : hn::Set(d, a.idx[0]);
    const V rate =
        hn::Add(hn::Add(hn::Mul(hn::Add(hn::Abs(vx), c), x0), hn::Mul(hn::Add(hn::Abs(vy), c), x1)),
                hn::Mul(hn::Add(hn::Abs(vz), c), x2));
    // As std::max(best, rate) in the reference: a NaN rate does not replace the maximum.
    // A row shorter than a vector: its lanes past the row (0/0) are kept out.
    if constexpr (F)
      best = hn::IfThenElse(hn::Lt(best, rate), rate, best);
    else
      best = hn::IfThenElse(hn::And(hn::FirstN(d, std::size_t(m)), hn::Lt(best, rate)), rate, best);
  });
  if (a.bad != nullptr) *a.bad = !hn::AllFalse(d, bad);
  return hn::GetLane(hn::MaxOfLanes(d, best));
}

double MaxRate(const MaxRateRow& a) {
  return a.uniform ? MaxRateT<true>(a) : MaxRateT<false>(a);
}

// ---- The conservative update of rows (hydro.cpp, step 6: add_divergence, add_flux,
// sub_flux): q_v[t] += c (F_v[t] - F_v[t+1]) (kKind 0), += c F_v[t] (1), -= c F_v[t] (2),
// in place, so whole vectors then one partial one. MulAdd and NegMulAdd are what GCC
// contracts the reference's statements to where the target has FMA: the same bits.
template <int kKind>
HWY_NOINLINE void UpdateRowsT(int nv, double* const* q, const double* const* F, int n, double c) {
  const D d;
  const V cv = hn::Set(d, c);
  for (int v = 0; v < nv; ++v) {
    double* HWY_RESTRICT qv = q[v];
    const double* HWY_RESTRICT f = F[v];
    ForRowInPlace(d, 0, n, [&](auto full, int i, auto m) {
      constexpr bool Fu = decltype(full)::value;
      const V x = Ld<Fu>(d, m, qv + i);
      if constexpr (kKind == 0)
        St<Fu>(d, m, hn::MulAdd(cv, hn::Sub(Ld<Fu>(d, m, f + i), Ld<Fu>(d, m, f + i + 1)), x),
               qv + i);
      else if constexpr (kKind == 1)
        St<Fu>(d, m, hn::MulAdd(cv, Ld<Fu>(d, m, f + i), x), qv + i);
      else
        St<Fu>(d, m, hn::NegMulAdd(cv, Ld<Fu>(d, m, f + i), x), qv + i);
    });
  }
}

void UpdateRows(int kind, int nv, double* const* q, const double* const* F, int n, double c) {
  if (kind == 0) return UpdateRowsT<0>(nv, q, F, n, c);
  if (kind == 1) return UpdateRowsT<1>(nv, q, F, n, c);
  UpdateRowsT<2>(nv, q, F, n, c);
}

// ---- Primitives of n zones (hydro.cpp, step 1: primitives_uniform and the EOS-state
// branch). std::max(a, b) is a < b ? b : a, so a NaN in a stays (Highway's Max would give b).
// The outputs may be the inputs (zone-major blocks are gathered into W first): every vector
// is loaded before it is stored, whole vectors then a partial one.
HWY_INLINE V MaxOf(V a, V b) {
  return hn::IfThenElse(hn::Lt(a, b), b, a);
}

template <bool kUniform>
HWY_NOINLINE void PrimitivesT(const PrimitivesRow& a) {
  const D d;
  const V sd = hn::Set(d, a.smalld), sp = hn::Set(d, a.smallp), one = hn::Set(d, 1.0);
  const V half = hn::Set(d, 0.5), gm1 = hn::Set(d, a.gm1);
  // The arrays in locals: the stores could alias the struct, so its fields would be read
  // again in every iteration.
  const double *dn = a.d, *px = a.mx, *py = a.my, *pz = a.mz, *en = a.e;
  const double *pr_in = a.pres, *gc_in = a.gamc, *ge_in = a.game;
  double *wr = a.wr, *wx = a.wx, *wy = a.wy, *wz = a.wz, *wp = a.wp, *wgc = a.wgc, *wge = a.wge;
  ForRowInPlace(d, 0, int(a.n), [&](auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    const V r = MaxOf(Ld<F>(d, m, dn + i), sd);
    const V mx = Ld<F>(d, m, px + i), my = Ld<F>(d, m, py + i), mz = Ld<F>(d, m, pz + i);
    const V ir = hn::Div(one, r);
    const V vx = hn::Mul(mx, ir), vy = hn::Mul(my, ir), vz = hn::Mul(mz, ir);
    if constexpr (kUniform) {
      const V e = Ld<F>(d, m, en + i);
      const V v2 = hn::Add(hn::Add(hn::Mul(vx, vx), hn::Mul(vy, vy)), hn::Mul(vz, vz));
      const V ein = hn::Sub(hn::Mul(e, ir), hn::Mul(half, v2));
      St<F>(d, m, MaxOf(hn::Mul(hn::Mul(gm1, r), ein), sp), wp + i);
    } else {
      const V pr = Ld<F>(d, m, pr_in + i), gc = Ld<F>(d, m, gc_in + i);
      const V ge = Ld<F>(d, m, ge_in + i);
      St<F>(d, m, MaxOf(pr, sp), wp + i);
      St<F>(d, m, gc, wgc + i);
      St<F>(d, m, hn::Div(one, hn::Sub(ge, one)), wge + i);
    }
    St<F>(d, m, r, wr + i);
    St<F>(d, m, vx, wx + i);
    St<F>(d, m, vy, wy + i);
    St<F>(d, m, vz, wz + i);
  });
}

void Primitives(const PrimitivesRow& a) {
  return a.uniform ? PrimitivesT<true>(a) : PrimitivesT<false>(a);
}

void Divide(std::size_t n, const double* num, const double* den, double* out) {
  const D d;
  ForRowInPlace(d, 0, int(n), [&](auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    St<F>(d, m, hn::Div(Ld<F>(d, m, num + i), Ld<F>(d, m, den + i)), out + i);
  });
}

void Fallback(double* s0, double* s1, double* s2, double* s3, double* s4, const double* w0,
              const double* w1, const double* w2, const double* w3, const double* w4, int i0,
              int i1, double smalld, double smallp) {
  const D d;
  const V sd = hn::Set(d, smalld), sp = hn::Set(d, smallp);
  ForRowInPlace(d, i0, i1, [&](auto full, int i, auto m) {
    constexpr bool F = decltype(full)::value;
    const V a0 = Ld<F>(d, m, s0 + i), a4 = Ld<F>(d, m, s4 + i);
    const auto ok = hn::And(hn::Gt(a0, sd), hn::Gt(a4, sp));
    St<F>(d, m, hn::IfThenElse(ok, a0, Ld<F>(d, m, w0 + i)), s0 + i);
    St<F>(d, m, hn::IfThenElse(ok, Ld<F>(d, m, s1 + i), Ld<F>(d, m, w1 + i)), s1 + i);
    St<F>(d, m, hn::IfThenElse(ok, Ld<F>(d, m, s2 + i), Ld<F>(d, m, w2 + i)), s2 + i);
    St<F>(d, m, hn::IfThenElse(ok, Ld<F>(d, m, s3 + i), Ld<F>(d, m, w3 + i)), s3 + i);
    St<F>(d, m, hn::IfThenElse(ok, a4, Ld<F>(d, m, w4 + i)), s4 + i);
  });
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::hydro::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::hydro::simd {

HWY_EXPORT(Riemann);
HWY_EXPORT(Slopes);
HWY_EXPORT(Hancock);
HWY_EXPORT(Fallback);
HWY_EXPORT(PlmFaces);
HWY_EXPORT(PpmFaces);
HWY_EXPORT(MaxRate);
HWY_EXPORT(UpdateRows);
HWY_EXPORT(Primitives);
HWY_EXPORT(Divide);

void riemann(bool hllc, bool uniform, const RiemannRow& r) {
  HWY_DYNAMIC_DISPATCH(Riemann)(hllc, uniform, r);
}
void slopes(int limiter, const double* W, std::size_t N, std::size_t rb, std::ptrdiff_t st, int i0,
            int i1, double* d, int n0, int nr) {
  HWY_DYNAMIC_DISPATCH(Slopes)(limiter, W, N, rb, st, i0, i1, d, n0, nr);
}
void hancock(int nd, bool uniform, const double* W, std::size_t N, std::size_t rb, const double* sl,
             int i0, int i1, int n0, const double f[3], int nr, double ugc, double* H) {
  HWY_DYNAMIC_DISPATCH(Hancock)(nd, uniform, W, N, rb, sl, i0, i1, n0, f, nr, ugc, H);
}
void plm_faces(const double* B, std::size_t bs, const double* d, const double* W, std::size_t N,
               int i0, int i1, int n0, int nr, double smalld, double smallp, double* lo,
               double* hi) {
  HWY_DYNAMIC_DISPATCH(PlmFaces)(B, bs, d, W, N, i0, i1, n0, nr, smalld, smallp, lo, hi);
}
void ppm_faces(const double* W, std::size_t N, std::size_t rb, std::ptrdiff_t st, int i0, int i1,
               int n0, int nr, double smalld, double smallp, double* ds, double* lo, double* hi) {
  HWY_DYNAMIC_DISPATCH(PpmFaces)(W, N, rb, st, i0, i1, n0, nr, smalld, smallp, ds, lo, hi);
}
double max_rate(const MaxRateRow& a) {
  return HWY_DYNAMIC_DISPATCH(MaxRate)(a);
}
void update_rows(int kind, int nv, double* const* q, const double* const* F, int n, double c) {
  HWY_DYNAMIC_DISPATCH(UpdateRows)(kind, nv, q, F, n, c);
}
void primitives(const PrimitivesRow& r) {
  HWY_DYNAMIC_DISPATCH(Primitives)(r);
}
void divide(std::size_t n, const double* num, const double* den, double* out) {
  HWY_DYNAMIC_DISPATCH(Divide)(n, num, den, out);
}
void fallback(double* s0, double* s1, double* s2, double* s3, double* s4, const double* w0,
              const double* w1, const double* w2, const double* w3, const double* w4, int i0,
              int i1, double smalld, double smallp) {
  HWY_DYNAMIC_DISPATCH(Fallback)(s0, s1, s2, s3, s4, w0, w1, w2, w3, w4, i0, i1, smalld, smallp);
}

}  // namespace tessera::hydro::simd
#endif  // HWY_ONCE

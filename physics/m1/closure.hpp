#pragma once
// The M1 closure's flux of a zone and of a row, safe at the ends of the double range (issue 48).
//
// The flux along axis a of the moments (E, F) is (F_a, c^2 P_{xa}, c^2 P_{ya}, c^2 P_{za})
// with P = E [(1 - chi)/2 I + (3 chi - 1)/2 n n], n = F / |F| (Levermore 1984; Minerbo
// 1978). The direction term n_a n_b = F_a F_b / |F|^2 is what goes wrong in floating
// point: where |F|^2 underflows (|F| below about 1.5e-154, so that |F|^2 is subnormal or
// zero), 1 / |F|^2 overflows to inf and, where chi = 1/3 (f = 0), (3 chi - 1)/2 * inf is
// NaN (and where |F|^2 overflows, above about 1.3e154, the direction is lost). The fast
// form (the row loop's, vectorised) is used where |F|^2 is a normal double, which keeps
// 1 / |F|^2 finite; elsewhere `zone_flux_scaled` scales F by its largest component first
// (|F| / max|F_i| lies in [1, sqrt 3]), which loses nothing for any finite F.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>

namespace tessera::m1 {

enum class Closure { minerbo, levermore, eddington };

/// The Eddington factor chi(f) of a closure, f = |F| / (cE) in [0, 1] (inline: the flux
/// loop calls it with a constant closure).
inline __attribute__((always_inline)) double eddington_factor(Closure c, double f) {
  f = f < 0.0 ? 0.0 : (f > 1.0 ? 1.0 : f);
  if (c == Closure::levermore)
    return (3.0 + 4.0 * f * f) / (5.0 + 2.0 * std::sqrt(4.0 - 3.0 * f * f));
  if (c == Closure::eddington) return 1.0 / 3.0;
  return 1.0 / 3.0 + 0.4 * f * f * (1.0 - f / 3.0 + f * f);
}

/// True where the fast form's |F|^2 is not a normal double (it underflowed or overflowed)
/// but F is not zero: such a zone takes `zone_flux_scaled`.
inline __attribute__((always_inline)) bool needs_scaled_flux(double fx, double fy, double fz) {
  // Bitwise & and | (no short circuit): the row loop stays branch-free and vectorises.
  const double nf2 = fx * fx + fy * fy + fz * fz;
  const bool normal = (nf2 >= DBL_MIN) & (nf2 <= DBL_MAX);
  const bool nonzero = (fx != 0.0) | (fy != 0.0) | (fz != 0.0);
  return nonzero && !normal;
}

/// The flux along axis a (0-2) of one zone's moments for |F| of any finite size, with the
/// Eddington factor chi_of(f), f = |F| / (cE) clipped to [0, 1]; zero pressure where E <= 0.
/// out: (F_a, c^2 P_{0a}, c^2 P_{1a}, c^2 P_{2a}). Every output is finite for finite inputs
/// whose c^2 E is finite.
template <class ChiOf>
inline std::array<double, 4> zone_flux_scaled(double e, double fx, double fy, double fz, int a,
                                              double c, ChiOf chi_of) {
  const double f3[3] = {fx, fy, fz};
  const double m = std::max({std::fabs(fx), std::fabs(fy), std::fabs(fz)});
  double u[3] = {0.0, 0.0, 0.0};
  if (m > 0.0)
    for (int q = 0; q < 3; ++q) u[q] = f3[q] / m;              // |u_q| <= 1, the largest is 1
  const double un2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];  // in [1, 3], or 0
  const bool pos = e > 0.0;
  const double es = pos ? e : 1.0;
  // f = m sqrt(un2) / (c E): divided before the multiplication, so that neither overflows.
  const double f = m > 0.0 ? std::min(m / (c * es) * std::sqrt(un2), 1.0) : 0.0;
  const double chi = chi_of(f);
  const double iso = 0.5 * (1.0 - chi), dir = 0.5 * (3.0 * chi - 1.0);
  const double k = pos ? c * c * e : 0.0;
  const double dn = un2 > 0.0 ? dir * u[a] / un2 : 0.0;
  std::array<double, 4> out;
  out[0] = f3[a];
  for (int b = 0; b < 3; ++b) out[std::size_t(1 + b)] = k * ((a == b ? iso : 0.0) + dn * u[b]);
  return out;
}

// Always inlined: physics/m1/rows.cpp calls row_flux from code compiled for each SIMD
// target, where it vectorises with that target's instructions (out of line it would run
// the portable build's).
#define TESSERA_M1_INLINE __attribute__((always_inline))

/// row_flux with the Eddington factor chi_of: the arrays as restrict parameters (a lambda
/// capturing them loses the qualifier, and GCC 12 then gives up on the alias checks).
template <class ChiOf>
inline TESSERA_M1_INLINE void row_flux_with(ChiOf chi_of, double c, const double* __restrict e,
                                            const double* __restrict fx,
                                            const double* __restrict fy,
                                            const double* __restrict fz, double* __restrict o0,
                                            double* __restrict o1, double* __restrict o2,
                                            double* __restrict o3, int a, int i0, int i1) {
  const double c2 = c * c;
  const double* __restrict fa = a == 0 ? fx : (a == 1 ? fy : fz);
  // The isotropic part on the diagonal, as a factor 1 or 0 (iso is finite and >= 0 where
  // this form is kept, so 0 * iso is the 0 a selection would give, to the bit): GCC 12
  // vectorises no selection on the loop-invariant int a among doubles.
  const double d0 = a == 0 ? 1.0 : 0.0, d1 = a == 1 ? 1.0 : 0.0, d2 = a == 2 ? 1.0 : 0.0;
  int odd = 0;  // a zone whose |F|^2 is not a normal double but F is not zero (an int: GCC
                // 12 vectorises no reduction of a bool)
  for (int i = i0; i < i1; ++i) {
    const double nf2 = fx[i] * fx[i] + fy[i] * fy[i] + fz[i] * fz[i];
    odd |= needs_scaled_flux(fx[i], fy[i], fz[i]) ? 1 : 0;
    const double nf = std::sqrt(nf2);
    const bool pos = e[i] > 0.0;
    const double es = pos ? e[i] : 1.0;
    const double f = std::min(nf / (c * es), 1.0);
    const double chi = chi_of(f);
    const double iso = 0.5 * (1.0 - chi), dir = 0.5 * (3.0 * chi - 1.0);
    const double inv2 = nf2 >= DBL_MIN ? 1.0 / nf2 : 0.0;  // finite (above)
    const double k = pos ? c2 * e[i] : 0.0;
    const double dn = dir * fa[i] * inv2;
    o0[i] = fa[i];
    o1[i] = k * (d0 * iso + dn * fx[i]);
    o2[i] = k * (d1 * iso + dn * fy[i]);
    o3[i] = k * (d2 * iso + dn * fz[i]);
  }
  // Zones whose |F|^2 is not a normal double (rare): the scaled form, in a second pass
  // only for the rows that hold one.
  if (!odd) return;
  for (int i = i0; i < i1; ++i)
    if (needs_scaled_flux(fx[i], fy[i], fz[i])) {
      const auto o = zone_flux_scaled(e[i], fx[i], fy[i], fz[i], a, c, chi_of);
      o0[i] = o[0];
      o1[i] = o[1];
      o2[i] = o[2];
      o3[i] = o[3];
    }
}

/// The closure's flux along axis a of the states u (E, Fx, Fy, Fz arrays) at i0..i1-1 into
/// out (F_a, c^2 P_{0a}, c^2 P_{1a}, c^2 P_{2a}); zero pressure where E <= 0. Finite for
/// every finite state with c^2 E finite (|F| from 0 through the subnormals up).
inline TESSERA_M1_INLINE void row_flux(Closure closure, double c, const double* const u[4],
                                       double* const out[4], int a, int i0, int i1) {
  // The closure fixed per call, so that the loop inlines its one formula.
  switch (closure) {
    case Closure::levermore:
      row_flux_with([](double f)
                        TESSERA_M1_INLINE { return eddington_factor(Closure::levermore, f); },
                    c, u[0], u[1], u[2], u[3], out[0], out[1], out[2], out[3], a, i0, i1);
      break;
    case Closure::eddington:
      row_flux_with([](double f)
                        TESSERA_M1_INLINE { return eddington_factor(Closure::eddington, f); },
                    c, u[0], u[1], u[2], u[3], out[0], out[1], out[2], out[3], a, i0, i1);
      break;
    case Closure::minerbo:
      row_flux_with([](double f)
                        TESSERA_M1_INLINE { return eddington_factor(Closure::minerbo, f); },
                    c, u[0], u[1], u[2], u[3], out[0], out[1], out[2], out[3], a, i0, i1);
      break;
  }
}

}  // namespace tessera::m1

#pragma once
// exp and log without branches or library calls, so that GCC vectorises the zone loops of
// the Helmholtz vector kernel that call them (glibc's vector libm is used only under
// -ffast-math, which Tessera does not use).
//
// References
//   Muller, J.-M. 2016, "Elementary Functions", 3rd ed. (Birkhauser), ch. 11: range
//     reduction by a multiple of ln 2 (Cody & Waite 1980, two-word ln 2), then a polynomial.
//   Hart, J. F. et al. 1968, "Computer Approximations": log via atanh of (m-1)/(m+1).
// Accuracy (measured against glibc on 1e7 random arguments): exp within 1 ulp on
// [-708, 709], log within 2 ulp on [1e-304, 1e304]. Arguments outside those
// ranges are not supported (the kernel never passes them: it clamps first).
//
// Always inlined: a call in a lane loop keeps GCC from vectorising it, and GCC 12 stopped
// inlining them once vector_kernel.cpp grew past its unit-growth limits (with every
// Highway target in the file): eval_lanes's Step 6 became a scalar loop with branches
// and calls, dens_temp 94 against 76 ns per zone.
#include <bit>
#include <cstdint>

namespace tessera::eos::helmholtz::detail {

/// e^x for x in [-708, 709].
[[gnu::always_inline]] inline double vexp(double x) {
  constexpr double log2e = 1.4426950408889634;
  constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 significant bits
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52: rounds to an integer
  const double kd = x * log2e + shifter;
  const double n = kd - shifter;
  const double r = (x - n * ln2_hi) - n * ln2_lo;  // |r| <= ln2 / 2
  // Taylor series to r^13: error < 2e-17 on |r| <= 0.347.
  double p = 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^n from the integer in kd's low mantissa bits.
  const std::int64_t ni = std::bit_cast<std::int64_t>(kd) - std::bit_cast<std::int64_t>(shifter);
  const double scale = std::bit_cast<double>((ni + 1023) << 52);
  return p * scale;
}

/// floor(x) for |x| < 2^51 (GCC does not vectorise std::floor without -fno-trapping-math):
/// round to nearest by adding and removing 1.5 * 2^52, then step down if that rounded up.
[[gnu::always_inline]] inline double vfloor(double x) {
  constexpr double shifter = 6755399441055744.0;
  const double r = (x + shifter) - shifter;
  return r > x ? r - 1.0 : r;
}

/// Natural log of a normal positive x.
[[gnu::always_inline]] inline double vlog(double x) {
  constexpr double ln2_hi = 6.93147180369123816490e-01;
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  constexpr double sqrt2 = 1.4142135623730951;
  const std::int64_t bits = std::bit_cast<std::int64_t>(x);
  std::int64_t e = ((bits >> 52) & 0x7ff) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffLL) | 0x3ff0000000000000LL);
  // m in [1, 2); move to [sqrt(1/2), sqrt(2)).
  const bool big = m > sqrt2;
  m = big ? 0.5 * m : m;
  e = big ? e + 1 : e;
  // e as a double without a conversion instruction: 1.5 * 2^52 + e.
  constexpr double shifter = 6755399441055744.0;
  const double ed = std::bit_cast<double>(std::bit_cast<std::int64_t>(shifter) + e) - shifter;
  // log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716: series to s^21.
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double p = 1.0 / 21.0;
  p = p * s2 + 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  const double logm = 2.0 * s + 2.0 * s * s2 * p;
  return (ed * ln2_hi + logm) + ed * ln2_lo;
}

}  // namespace tessera::eos::helmholtz::detail

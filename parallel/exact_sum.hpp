#pragma once
// Sums of doubles that do not depend on the order or the grouping of the additions: an
// exact fixed-point accumulator over the whole double range (Kulisch's long accumulator:
// every double is an integer multiple of 2^-1074 below 2^1024), kept as 32-bit digits in
// 64-bit words so that carries can wait, and reduced over ranks by an MPI user-defined
// operation (issue 46). The state after any additions, in any order, on any number of
// ranks, is the exact sum; value() rounds it once, to nearest (ties to even). The payload
// of a reduction is ExactSum::kBytes per quantity, whatever the number of blocks. NaN and
// infinities are summed apart (a NaN or +inf and -inf give NaN, as a plain sum would).
// Compare Demmel & Nguyen, "Parallel Reproducible Summation" (IEEE TC 2015), whose binned
// sums need less memory but round; this one is exact, and (1e16, 1, -1e16, 1) gives 2.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace tessera::parallel {

class ExactSum {
 public:
  /// 32-bit digits from 2^-1074 up: 2098 bits of range, and room for the carries of
  /// 2^100 additions of the largest double.
  static constexpr int kDigits = 70;
  /// Bytes a rank contributes to a reduction, per quantity.
  static constexpr int kBytes = (kDigits + 1) * 8;

  /// Adds x exactly.
  void add(double x);
  /// Adds another accumulator's sum exactly.
  void add(const ExactSum& o);
  /// The sum, rounded once to the nearest double (ties to even).
  double value() const;

 private:
  friend struct ExactSumWire;
  std::array<std::int64_t, kDigits> d_{};  ///< digit i weighs 2^(32 i - 1074)
  double special_ = 0.0;                   ///< the NaN and infinities added
  std::int64_t pending_ = 0;               ///< additions since the carries were last made
  void normalise();                        ///< digits to [0, 2^32), the top one signed
};

/// The exact sums over the ranks of comm of n quantities (parts[q] this rank's
/// accumulator of quantity q), rounded once: the same bits on any number of ranks and in
/// any order. One MPI_Allreduce of n * ExactSum::kBytes bytes.
std::vector<double> exact_allreduce(MPI_Comm comm, const std::vector<ExactSum>& parts);

/// Reproducible sums of many quantities in a small payload, for reductions of thousands of
/// quantities (gravity's multipole moments) where ExactSum's 568 bytes each would weigh.
/// Two reductions: the largest binary exponent of each quantity's partials over all ranks
/// (MPI_MAX of an int), then every partial rounded to the grid 2^s of its quantity, with s
/// set so that max_terms partials of that size fit in 126 bits, and the integers summed
/// exactly (MPI_SUM-like of a 128-bit integer). The grid depends only on the global maximum,
/// so the result is the same bits on any rank count and in any order (Demmel & Nguyen's
/// pre-rounding, "Fast Reproducible Floating-Point Summation", ARITH 2013, with one 126-bit
/// window in place of their folds). It is the exact sum of the rounded partials, rounded
/// once: within 2^-66 of the largest partial plus half an ulp of the sum for up to 2^30
/// terms. Payload WindowedSums::kBytes per quantity; NaN or infinities give NaN.
struct WindowedSums {
  static constexpr int kBytes = 4 + 16;
  struct Acc;  ///< one quantity's 128-bit integer
  /// visit(emit) calls emit(q, x) for every partial x of quantity q < n on this rank; it is
  /// called twice and must give the same partials both times. max_terms bounds, the same on
  /// every rank, the partials of any one quantity over all ranks.
  template <class Visit>
  static std::vector<double> allreduce(MPI_Comm comm, std::size_t n, long max_terms, Visit&& visit);

 private:
  static constexpr int kNone = INT_MIN;       ///< a quantity with no nonzero partial
  static constexpr int kNonFinite = INT_MAX;  ///< a quantity with a NaN or an infinity
  static std::vector<int> exponents(MPI_Comm comm, std::vector<int> local);
  static std::vector<int> shifts(const std::vector<int>& e, long max_terms);
  static std::vector<double> finish(MPI_Comm comm, const std::vector<int>& e,
                                    const std::vector<int>& s, std::vector<Acc>& acc);
  static void add(Acc& a, double x, int s);  ///< adds x / 2^s rounded to an integer
};

/// 128-bit two's complement accumulator of one quantity (the integer of partials / 2^s).
struct WindowedSums::Acc {
  std::uint64_t lo = 0, hi = 0;
};

template <class Visit>
std::vector<double> WindowedSums::allreduce(MPI_Comm comm, std::size_t n, long max_terms,
                                            Visit&& visit) {
  // The largest magnitude of each quantity (NaN and infinities flagged), its exponent once.
  std::vector<double> big(n, 0.0);
  visit([&](std::size_t q, double x) {
    const double a = std::abs(x);
    big[q] = a > big[q] ? a : (a == a ? big[q] : std::numeric_limits<double>::infinity());
  });
  std::vector<int> e(n, kNone);
  for (std::size_t q = 0; q < n; ++q)
    if (!std::isfinite(big[q]))
      e[q] = kNonFinite;
    else if (big[q] > 0.0)
      std::frexp(big[q], &e[q]);  // |x| < 2^e
  e = exponents(comm, std::move(e));
  const std::vector<int> s = shifts(e, max_terms);
  std::vector<Acc> acc(n);
  visit([&](std::size_t q, double x) {
    if (x != 0.0 && e[q] != kNonFinite) add(acc[q], x, s[q]);
  });
  return finish(comm, e, s, acc);
}

}  // namespace tessera::parallel

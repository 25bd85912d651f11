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

#include <array>
#include <cstdint>
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

}  // namespace tessera::parallel

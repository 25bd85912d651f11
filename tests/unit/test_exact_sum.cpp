// Specification of the exact sums every sum over leaves goes through (parallel/exact_sum.hpp,
// issue 46): any order and grouping of the additions gives the same bits, the result is
// the exact sum rounded once, and a reduction over ranks is the same.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "parallel/exact_sum.hpp"

namespace tessera::parallel {
namespace {

double sum_of(const std::vector<double>& x) {
  ExactSum s;
  for (double v : x) s.add(v);
  return s.value();
}

// Given (1e16, 1, -1e16, 1), then the sum is 2 (a plain left-to-right sum gives 1).
TEST(ExactSum, GivenCancellation_ThenTheSumIsExact) {
  EXPECT_EQ(sum_of({1e16, 1.0, -1e16, 1.0}), 2.0);
  EXPECT_EQ(sum_of({1e308, 1e308, -1e308, -1e308, 1e-320}), 1e-320);
  EXPECT_EQ(sum_of({}), 0.0);
  EXPECT_EQ(sum_of({-3.5, 1.25}), -2.25);
  EXPECT_EQ(sum_of({std::numeric_limits<double>::denorm_min(),
                    std::numeric_limits<double>::denorm_min()}),
            2 * std::numeric_limits<double>::denorm_min());
}

// Given sums that fall between two doubles, then they round to nearest, ties to even.
TEST(ExactSum, GivenATie_ThenItRoundsToEven) {
  const double big = std::ldexp(1.0, 53);
  EXPECT_EQ(sum_of({big, 1.0}), big);                                  // tie: even
  EXPECT_EQ(sum_of({big, 3.0}), big + 4.0);                            // tie: even
  EXPECT_EQ(sum_of({big, 1.0, std::ldexp(1.0, -60)}), big + 2.0);      // above the tie
  EXPECT_EQ(sum_of({-big, -1.0, -std::ldexp(1.0, -60)}), -big - 2.0);  // and below
  EXPECT_EQ(sum_of({std::numeric_limits<double>::max(), std::numeric_limits<double>::max()}),
            std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(sum_of({1.0, std::numeric_limits<double>::quiet_NaN()})));
  EXPECT_TRUE(std::isnan(
      sum_of({std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()})));
}

// Given 10^4 random partials over 600 orders of magnitude with both signs, when they are
// added in random orders and in random groups whose accumulators are then added, then every
// result has the same bits, and it is within half an ulp of the sum done in long double
// where that sum is exact enough to say.
TEST(ExactSum, GivenRandomOrdersAndGroupings_ThenTheBitsAreTheSame) {
  std::mt19937_64 rng(46);
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  std::uniform_int_distribution<int> ex(-300, 300);
  std::vector<double> x(10000);
  for (auto& v : x) v = std::ldexp(mant(rng), ex(rng));
  const double ref = sum_of(x);
  for (int trial = 0; trial < 20; ++trial) {
    std::shuffle(x.begin(), x.end(), rng);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(sum_of(x)), std::bit_cast<std::uint64_t>(ref));
    // Groups of random sizes, each its own accumulator, added together in reverse.
    std::vector<ExactSum> groups;
    for (std::size_t i = 0; i < x.size();) {
      const std::size_t n = 1 + rng() % 700;
      ExactSum g;
      for (std::size_t j = i; j < std::min(x.size(), i + n); ++j) g.add(x[j]);
      groups.push_back(g);
      i += n;
    }
    ExactSum all;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) all.add(*it);
    EXPECT_EQ(std::bit_cast<std::uint64_t>(all.value()), std::bit_cast<std::uint64_t>(ref));
  }
  // Small integers times a power of two: every plain sum is exact, so is this.
  std::vector<double> y(5000);
  double plain = 0;
  for (auto& v : y) v = std::ldexp(double(int(rng() % 2001) - 1000), -20), plain += v;
  EXPECT_EQ(sum_of(y), plain);
}

// Given each rank's accumulators of the same values split by rank, then the reduction gives
// what one accumulator of all the values gives (and the same on every rank).
TEST(ExactSum, GivenARankSplit_ThenTheReductionIsTheWholeSum) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(3000);
  for (auto& v : x) v = std::ldexp(u(rng), int(rng() % 200) - 100);
  std::vector<ExactSum> mine(2);
  ExactSum whole0, whole1;
  for (std::size_t i = 0; i < x.size(); ++i) {
    whole0.add(x[i]);
    whole1.add(-2 * x[i]);
    if (int(i % std::size_t(size)) == rank) mine[0].add(x[i]), mine[1].add(-2 * x[i]);
  }
  const auto r = exact_allreduce(MPI_COMM_WORLD, mine);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], whole0.value());
  EXPECT_EQ(r[1], whole1.value());
  EXPECT_EQ(r[1], -2 * r[0]);  // exact: scaling by -2 commutes with rounding
}

// Given 40 quantities of 300 partials each (spanning 2^-60 to 2^60 with both signs; one
// of them (1e16, 1, -1e16, 1) and the rest zeros; one all zeros; one with a NaN), when
// WindowedSums reduces them over the ranks split two ways, and over this rank alone with
// every partial in a shuffled order, then every result has the same bits, the
// cancellation gives 2, and each is within 2^-100 of its largest partial plus half an ulp
// of the exact sum.
TEST(ExactSum, GivenWindowedSumsOfManyQuantities_ThenTheSplitAndOrderDoNotMatter) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  constexpr std::size_t nq = 40, nt = 300;
  std::mt19937_64 rng(4646);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(nq * nt, 0.0);  // x[q * nt + t]
  for (std::size_t q = 3; q < nq; ++q)
    for (std::size_t t = 0; t < nt; ++t) x[q * nt + t] = std::ldexp(u(rng), int(rng() % 121) - 60);
  const double c[4] = {1e16, 1.0, -1e16, 1.0};
  for (int t = 0; t < 4; ++t) x[std::size_t(t)] = c[t];
  x[2 * nt + 17] = std::numeric_limits<double>::quiet_NaN();
  auto reduce = [&](MPI_Comm comm, auto&& mine, std::vector<std::size_t> order) {
    return WindowedSums::allreduce(comm, nq, long(nt), [&](auto&& emit) {
      for (std::size_t i : order)
        if (mine(i)) emit(i / nt, x[i]);
    });
  };
  std::vector<std::size_t> order(x.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto s = std::size_t(size), r = std::size_t(rank);
  const auto by_turns = reduce(
      MPI_COMM_WORLD, [&](std::size_t i) { return i % s == r; }, order);
  std::reverse(order.begin(), order.end());
  const auto by_chunks = reduce(
      MPI_COMM_WORLD, [&](std::size_t i) { return (i % nt) * s / nt == r; }, order);
  std::shuffle(order.begin(), order.end(), rng);
  const auto alone = reduce(
      MPI_COMM_SELF, [](std::size_t) { return true; }, order);
  ASSERT_EQ(by_turns.size(), nq);
  EXPECT_EQ(by_turns[0], 2.0);
  EXPECT_EQ(by_turns[1], 0.0);
  EXPECT_TRUE(std::isnan(by_turns[2]));
  for (std::size_t q = 0; q < nq; ++q) {
    if (q == 2) continue;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(by_turns[q]), std::bit_cast<std::uint64_t>(alone[q]));
    EXPECT_EQ(std::bit_cast<std::uint64_t>(by_chunks[q]), std::bit_cast<std::uint64_t>(alone[q]));
    ExactSum e;
    double big = 0.0;
    for (std::size_t t = 0; t < nt; ++t)
      e.add(x[q * nt + t]), big = std::max(big, std::abs(x[q * nt + t]));
    const double ex = e.value();
    const double half_ulp = 0.5 * (std::nextafter(std::abs(ex), 1e300) - std::abs(ex));
    EXPECT_LE(std::abs(alone[q] - ex), std::ldexp(big, -100) + half_ulp) << q;
  }
}

}  // namespace
}  // namespace tessera::parallel

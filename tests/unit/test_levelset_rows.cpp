// The level set's WENO5 row kernels (physics/levelset/rows.hpp), compiled per instruction
// set and dispatched: on a cubic every candidate stencil is exact, so both one-sided
// derivatives are the cubic's derivative to round-off whatever the weights; the upwind
// row takes one_sided_row's value on the side the velocity comes from, the same bits;
// every target this build runs gives the same bits (no fused multiply-adds in this code),
// rows of lengths that are no multiple of a vector length, and nothing written past n; a
// flat row gives 0, not 0 / 0.
// Needs no MPI or HDF5 (tools/arm/test_arm.sh builds it for aarch64 too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "physics/levelset/rows.hpp"
#include "tests/unit/simd_targets.hpp"

namespace {

namespace ls = tessera::levelset;
using tessera::test::ForceGuard;
using tessera::test::highway_targets;

constexpr double kCanary = -12345.0;

// A row of n contiguous zones, differenced along an axis of stride st (1: the row's own
// axis; else st >= n, another axis of a block copy) with three neighbours each side: zone
// i's m-th neighbour, element c0 + i + m st, holds f at x = (m + 0.5) dx + i h, where
// h = dx along the row's own axis and an unrelated shift along another.
struct Row {
  std::vector<double> p;
  long c0 = 0, st = 1;
  int n = 0;
  template <class F>
  Row(int n_, long st_, double dx, F f) : c0(3 * st_), st(st_), n(n_) {
    p.assign(std::size_t(n + 6 * st), std::nan(""));
    for (int i = 0; i < n; ++i)
      for (int m = -3; m <= 3; ++m) p[std::size_t(c0 + i + m * st)] = f(x(i, m, dx));
  }
  double x(int i, int m, double dx) const {
    return (m + 0.5) * dx + i * (st == 1 ? dx : 0.37 * dx);
  }
};

struct Out {
  std::vector<double> dm, dp, acc;
};

Out run(const Row& r, double idx, const std::vector<double>& v) {
  Out o{std::vector<double>(std::size_t(r.n) + 8, kCanary),
        std::vector<double>(std::size_t(r.n) + 8, kCanary),
        std::vector<double>(std::size_t(r.n) + 8, kCanary)};
  ls::one_sided_row(r.p.data(), r.c0, r.st, r.n, idx, o.dm.data(), o.dp.data());
  for (int i = 0; i < r.n; ++i) o.acc[std::size_t(i)] = 0.0;
  ls::upwind_row(r.p.data(), r.c0, r.st, r.n, idx, v.data(), o.acc.data());
  return o;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST(LevelSetRows, GivenACubic_BothOneSidedDerivativesAreItsDerivative) {
  ForceGuard guard;
  const double dx = 0.03;
  auto f = [](double x) { return 0.7 - 1.3 * x + 2.1 * x * x - 0.9 * x * x * x; };
  auto df = [](double x) { return -1.3 + 4.2 * x - 2.7 * x * x; };
  for (const auto& t : highway_targets()) {
    tessera::simd::force(t);
    for (int n : {1, 3, 13, 16, 21})
      for (long st : {1L, 23L}) {
        const Row r(n, st, dx, f);
        const Out o = run(r, 1.0 / dx, std::vector<double>(std::size_t(n), 1.0));
        for (int i = 0; i < n; ++i) {
          // Jiang & Peng's one-sided derivatives approximate dphi/dx at the zone itself;
          // each candidate is the derivative of a cubic through four of the points.
          const double want = df(r.x(i, 0, dx));
          EXPECT_NEAR(o.dm[std::size_t(i)], want, 1e-11) << t << " n " << n << " i " << i;
          EXPECT_NEAR(o.dp[std::size_t(i)], want, 1e-11) << t << " n " << n << " i " << i;
        }
        for (std::size_t i = std::size_t(n); i < o.dm.size(); ++i) {
          ASSERT_EQ(o.dm[i], kCanary) << t << ": wrote past the row";
          ASSERT_EQ(o.dp[i], kCanary) << t << ": wrote past the row";
          ASSERT_EQ(o.acc[i], kCanary) << t << ": wrote past the row";
        }
      }
  }
}

TEST(LevelSetRows, GivenRoughData_TheUpwindRowTakesTheOneSidedValueOfItsSideOnEveryTarget) {
  ForceGuard guard;
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int n = 19;
  const long st = 3;
  const double dx = 0.01;
  // A kinked, noisy row (WENO's weights far from optimal) and velocities of both signs.
  const Row r(n, st, dx, [&](double x) { return std::fabs(x - 0.07) + 0.01 * u(rng); });
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = u(rng);
  v[4] = 0.0;  // v = 0 takes the forward side and adds nothing
  Out first;
  std::string first_target;
  for (const auto& t : highway_targets()) {
    tessera::simd::force(t);
    const Out o = run(r, 1.0 / dx, v);
    for (int i = 0; i < n; ++i) {
      const double d = v[std::size_t(i)] > 0 ? o.dm[std::size_t(i)] : o.dp[std::size_t(i)];
      const double want = 0.0 - v[std::size_t(i)] * d;
      EXPECT_EQ(std::memcmp(&o.acc[std::size_t(i)], &want, sizeof want), 0)
          << t << " zone " << i << ": " << o.acc[std::size_t(i)] << " against " << want;
    }
    if (first_target.empty()) {
      first = o;
      first_target = t;
      continue;
    }
    EXPECT_TRUE(same_bits(o.dm, first.dm)) << t << " against " << first_target;
    EXPECT_TRUE(same_bits(o.dp, first.dp)) << t << " against " << first_target;
    EXPECT_TRUE(same_bits(o.acc, first.acc)) << t << " against " << first_target;
  }
}

TEST(LevelSetRows, GivenAFlatRow_TheDerivativesAreZeroNotNaN) {
  // phi constant along the row (a capsule's distance beside its straight side, a plane
  // interface along a grid line): all five differences 0. The weights' epsilon floor was
  // 1e-99, and the products of four (eps + s)'s underflowed to 0 / 0.
  ForceGuard guard;
  for (const auto& t : highway_targets()) {
    tessera::simd::force(t);
    for (const double level : {0.0, -0.3, 1e-30}) {
      const Row r(13, 1, 0.01, [&](double) { return level; });
      const Out o = run(r, 100.0, std::vector<double>(13, 0.5));
      for (int i = 0; i < 13; ++i) {
        EXPECT_EQ(o.dm[std::size_t(i)], 0.0) << t << " level " << level << " zone " << i;
        EXPECT_EQ(o.dp[std::size_t(i)], 0.0) << t << " level " << level << " zone " << i;
        EXPECT_EQ(o.acc[std::size_t(i)], 0.0) << t << " level " << level << " zone " << i;
      }
    }
  }
}

}  // namespace

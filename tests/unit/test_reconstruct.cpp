// Specifications for slope limiters, PPM face values and CW84 shock flattening
// (physics/hydro/reconstruct.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "physics/hydro/reconstruct.hpp"

namespace {

using tessera::hydro::flattening_coefficient;
using tessera::hydro::limited_slope;
using tessera::hydro::Limiter;
using tessera::hydro::ppm_faces;

constexpr double kEps = 1e-15;

template <Limiter L>
void expect_limiter_properties(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-10.0, 10.0);
  for (int n = 0; n < 20000; ++n) {
    const double a = u(rng), b = u(rng), c = u(rng);
    const double s = limited_slope<L>(a, b, c);
    // Odd symmetry, exactly.
    EXPECT_EQ(limited_slope<L>(-a, -b, -c), -s);
    // TVD: never more than twice the smaller one-sided difference.
    const double bound = 2.0 * std::min(std::abs(b - a), std::abs(c - b));
    EXPECT_LE(std::abs(s), bound * (1.0 + kEps));
    // Zero at extrema, same sign as the data otherwise.
    if ((b - a) * (c - b) <= 0.0) {
      EXPECT_EQ(s, 0.0);
    } else {
      EXPECT_GT(s * (c - a), 0.0);
    }
  }
}

TEST(Limiters, GivenRandomTriples_AreOddTvdAndZeroAtExtrema) {
  std::mt19937_64 rng(20240601);
  expect_limiter_properties<Limiter::minmod>(rng);
  expect_limiter_properties<Limiter::van_leer>(rng);
  expect_limiter_properties<Limiter::mc>(rng);
}

TEST(Limiters, GivenAnExtremumOrAPlateau_ReturnZero) {
  EXPECT_EQ(limited_slope<Limiter::minmod>(1.0, 2.0, 1.5), 0.0);
  EXPECT_EQ(limited_slope<Limiter::van_leer>(1.0, 2.0, 1.5), 0.0);
  EXPECT_EQ(limited_slope<Limiter::mc>(1.0, 2.0, 1.5), 0.0);
  EXPECT_EQ(limited_slope<Limiter::minmod>(3.0, -2.0, 0.0), 0.0);
  EXPECT_EQ(limited_slope<Limiter::van_leer>(3.0, -2.0, 0.0), 0.0);
  EXPECT_EQ(limited_slope<Limiter::mc>(3.0, -2.0, 0.0), 0.0);
  EXPECT_EQ(limited_slope<Limiter::mc>(1.0, 1.0, 5.0), 0.0);
  EXPECT_EQ(limited_slope<Limiter::van_leer>(1.0, 5.0, 5.0), 0.0);
}

TEST(Limiters, GivenLinearData_ReturnTheExactDifference) {
  EXPECT_EQ(limited_slope<Limiter::minmod>(1.0, 1.25, 1.5), 0.25);
  EXPECT_EQ(limited_slope<Limiter::van_leer>(1.0, 1.25, 1.5), 0.25);
  EXPECT_EQ(limited_slope<Limiter::mc>(1.0, 1.25, 1.5), 0.25);
}

TEST(Limiters, GivenMonotoneData_OrderMinmodBelowVanLeerBelowMc) {
  // Smooth monotone data (exp) and random monotone triples: minmod is the most
  // restrictive, MC the least, all with the sign of the data.
  std::vector<std::array<double, 3>> triples;
  for (int i = 0; i < 50; ++i) {
    const double h = 0.05 * (i + 1), x = 0.1 * i;
    triples.push_back({std::exp(x - h), std::exp(x), std::exp(x + h)});
  }
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> step(1e-3, 5.0);
  for (int i = 0; i < 5000; ++i) {
    const double a = step(rng), b = a + step(rng), c = b + step(rng);
    triples.push_back({a, b, c});
    triples.push_back({-a, -b, -c});
  }
  for (const auto& t : triples) {
    const double mm = limited_slope<Limiter::minmod>(t[0], t[1], t[2]);
    const double vl = limited_slope<Limiter::van_leer>(t[0], t[1], t[2]);
    const double mc = limited_slope<Limiter::mc>(t[0], t[1], t[2]);
    EXPECT_GT(mm * vl, 0.0);
    EXPECT_GT(vl * mc, 0.0);
    EXPECT_LE(std::abs(mm), std::abs(vl) * (1.0 + kEps));
    EXPECT_LE(std::abs(vl), std::abs(mc) * (1.0 + kEps));
  }
}

// Zone averages of f on zones of width h centred on x_i = x0 + i h, from the primitive F.
template <class Prim>
std::vector<double> zone_averages(Prim big_f, double x0, double h, int n) {
  std::vector<double> q(n);
  for (int i = 0; i < n; ++i) {
    const double x = x0 + i * h;
    q[i] = (big_f(x + 0.5 * h) - big_f(x - 0.5 * h)) / h;
  }
  return q;
}

TEST(Ppm, GivenLinearData_ReturnsTheExactFaceValues) {
  // Dyadic data so that the exact answer is representable.
  const double q[5] = {2.0, 2.25, 2.5, 2.75, 3.0};
  double l, r;
  ppm_faces(q[0], q[1], q[2], q[3], q[4], l, r);
  EXPECT_EQ(l, 2.375);
  EXPECT_EQ(r, 2.625);
  ppm_faces(-q[0], -q[1], -q[2], -q[3], -q[4], l, r);
  EXPECT_EQ(l, -2.375);
  EXPECT_EQ(r, -2.625);
}

TEST(Ppm, GivenZoneAveragesOfAMonotoneParabola_ReturnsItsFaceValues) {
  // Interface values are exact for polynomials up to cubic on unlimited data.
  const double h = 0.5;
  const auto q = zone_averages([](double x) { return x * x * x / 3.0; }, 3.0, h, 5);
  double l, r;
  ppm_faces(q[0], q[1], q[2], q[3], q[4], l, r);
  const double xc = 3.0 + 2.0 * h;
  EXPECT_NEAR(l, (xc - 0.5 * h) * (xc - 0.5 * h), 1e-13);
  EXPECT_NEAR(r, (xc + 0.5 * h) * (xc + 0.5 * h), 1e-13);
}

TEST(Ppm, GivenSmoothMonotoneData_FaceValuesConvergeAtFourthOrder) {
  // f = exp(x); face error at the right face of the zone centred at x = 0.3 (plus the
  // mirrored left face), for h = 0.1 / 2^k.
  std::vector<double> err;
  for (int k = 0; k < 5; ++k) {
    const double h = 0.1 / (1 << k);
    const double xc = 0.3;
    const auto q = zone_averages([](double x) { return std::exp(x); }, xc - 2.0 * h, h, 5);
    double l, r;
    ppm_faces(q[0], q[1], q[2], q[3], q[4], l, r);
    err.push_back(std::abs(r - std::exp(xc + 0.5 * h)) + std::abs(l - std::exp(xc - 0.5 * h)));
  }
  for (std::size_t k = 1; k < err.size(); ++k) {
    const double rate = std::log2(err[k - 1] / err[k]);
    EXPECT_GE(rate, 3.9) << "refinement " << k << ": errors " << err[k - 1] << ", " << err[k];
  }
}

TEST(Ppm, GivenMonotoneDataWithJumps_FacesLieBetweenNeighboursAndTheParabolaIsMonotone) {
  std::mt19937_64 rng(1984);
  std::uniform_real_distribution<double> small(0.0, 0.01), big(0.0, 10.0), coin(0.0, 1.0);
  for (int n = 0; n < 20000; ++n) {
    double q[5];
    q[0] = big(rng) - 5.0;
    for (int i = 1; i < 5; ++i) q[i] = q[i - 1] + (coin(rng) < 0.3 ? big(rng) : small(rng));
    const double sign = coin(rng) < 0.5 ? 1.0 : -1.0;
    for (double& v : q) v *= sign;
    double l, r;
    ppm_faces(q[0], q[1], q[2], q[3], q[4], l, r);
    const double tol = 1e-14 * (std::abs(q[1]) + std::abs(q[2]) + std::abs(q[3]));
    EXPECT_GE(l, std::min(q[1], q[2]) - tol);
    EXPECT_LE(l, std::max(q[1], q[2]) + tol);
    EXPECT_GE(r, std::min(q[2], q[3]) - tol);
    EXPECT_LE(r, std::max(q[2], q[3]) + tol);
    // The parabola through (l, q0, r) has no extremum inside the zone: |a6| <= |Δa|.
    const double a6 = 6.0 * (q[2] - 0.5 * (l + r));
    EXPECT_LE(std::abs(a6), std::abs(r - l) + 10.0 * tol);
  }
}

TEST(Ppm, GivenALocalExtremum_FlattensTheParabolaToTheZoneAverage) {
  double l, r;
  ppm_faces(0.0, 1.0, 3.0, 2.0, 0.5, l, r);  // maximum
  EXPECT_EQ(l, 3.0);
  EXPECT_EQ(r, 3.0);
  ppm_faces(1.0, 0.5, -0.25, 0.0, 1.0, l, r);  // minimum
  EXPECT_EQ(l, -0.25);
  EXPECT_EQ(r, -0.25);
  // Smooth extremum (cos at its peak) is flattened too: PPM clips smooth extrema.
  const double h = 0.1;
  const auto q = zone_averages([](double x) { return std::sin(x); }, -2.0 * h, h, 5);
  ppm_faces(q[0], q[1], q[2], q[3], q[4], l, r);
  EXPECT_EQ(l, q[2]);
  EXPECT_EQ(r, q[2]);
}

TEST(Flattening, GivenSmoothFlowOrAWeakJump_IsZero) {
  // Smooth compression: small pressure differences.
  EXPECT_EQ(flattening_coefficient(1.0, 1.01, 1.03, 1.04, 0.1, -0.1), 0.0);
  // A 20% jump, below the CW84 threshold ε = 0.33.
  EXPECT_EQ(flattening_coefficient(1.0, 1.0, 1.2, 1.2, 0.1, -0.1), 0.0);
}

TEST(Flattening, GivenAnExpansion_IsZeroWhateverThePressureJump) {
  EXPECT_EQ(flattening_coefficient(1.0, 1.0, 10.0, 10.0, -0.1, 0.1), 0.0);
}

TEST(Flattening, GivenAStrongShockResolvedInOneZone_IsOne) {
  // p jumps by 10 between zones i-1 and i+1 and is flat beyond: Δ1p/Δ2p = 1.
  EXPECT_EQ(flattening_coefficient(1.0, 1.0, 10.0, 10.0, 1.0, 0.0), 1.0);
  EXPECT_EQ(flattening_coefficient(10.0, 10.0, 1.0, 1.0, 0.0, -1.0), 1.0);
}

TEST(Flattening, GivenAShockSpreadOverManyZones_RampsBetweenZeroAndOne) {
  // Linear pressure ramp over the five points: Δ1p/Δ2p = 1/2 < ω1 = 0.75: no flattening.
  EXPECT_EQ(flattening_coefficient(1.0, 2.0, 4.0, 5.0, 1.0, 0.0), 0.0);
  // Δ1p/Δ2p = 0.8: f = ω2 (0.8 - 0.75) = 0.5.
  EXPECT_NEAR(flattening_coefficient(0.0, 0.5, 4.5, 5.0, 1.0, 0.0), 0.5, 1e-14);
  // A one-zone spike (Δ2p = 0) is treated as maximally steep, never as NaN.
  EXPECT_EQ(flattening_coefficient(1.0, 1.0, 2.0, 1.0, 1.0, 0.0), 1.0);
}

}  // namespace

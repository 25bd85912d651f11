// Specifications for the multipole gravity numerics (physics/gravity/solid_harmonics.hpp,
// multipole.hpp): the solid-harmonic recursions against their closed forms (C++17's
// std::assoc_legendre has no Condon-Shortley sign, as ours), the addition theorem, and
// the potential of point masses and rings from binned moments.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "physics/gravity/multipole.hpp"
#include "physics/gravity/solid_harmonics.hpp"

namespace {

using tessera::gravity::Expansion;
using tessera::gravity::irregular_harmonics;
using tessera::gravity::lm_index;
using tessera::gravity::n_lm;
using tessera::gravity::RadialBins;
using tessera::gravity::regular_harmonics;

double factorial(int n) {
  return std::tgamma(n + 1.0);
}

TEST(GravityHarmonics, RecursionsMatchTheClosedFormsUpToL12) {
  // Given random points, when R_lm and I_lm come from the recursions, then they equal
  // r^l P_l^m(cos th) e^{im ph}/(l+m)! and (l-m)! P_l^m(cos th) e^{im ph}/r^(l+1).
  constexpr int L = 12;
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> rc(n_lm(L)), rs(n_lm(L)), ic(n_lm(L)), is(n_lm(L));
  for (int t = 0; t < 50; ++t) {
    const double x = d(gen), y = d(gen), z = d(gen);
    const double r = std::sqrt(x * x + y * y + z * z), mu = z / r, ph = std::atan2(y, x);
    regular_harmonics(x, y, z, L, L, rc.data(), rs.data());
    irregular_harmonics(x, y, z, L, L, ic.data(), is.data());
    for (int l = 0; l <= L; ++l)
      for (int m = 0; m <= l; ++m) {
        const double p = std::assoc_legendre(unsigned(l), unsigned(m), mu);
        const double reg = std::pow(r, l) * p / factorial(l + m);
        const double irr = factorial(l - m) * p / std::pow(r, l + 1);
        const int a = lm_index(l, m);
        const double tol_r = 1e-10 * (std::abs(reg) + std::pow(r, l) / factorial(l + m));
        const double tol_i = 1e-10 * (std::abs(irr) + factorial(l + m) / std::pow(r, l + 1));
        EXPECT_NEAR(rc[a], reg * std::cos(m * ph), tol_r) << l << " " << m;
        EXPECT_NEAR(rs[a], reg * std::sin(m * ph), tol_r) << l << " " << m;
        EXPECT_NEAR(ic[a], irr * std::cos(m * ph), tol_i) << l << " " << m;
        EXPECT_NEAR(is[a], irr * std::sin(m * ph), tol_i) << l << " " << m;
      }
  }
}

TEST(GravityHarmonics, AxisymmetricCallFillsOnlyTheLegendreTerms) {
  // Given mmax = 0, then the m = 0 entries equal the full call's (to round-off: the
  // compiler may contract the two differently) and m > 0 is untouched.
  constexpr int L = 8;
  std::vector<double> a(n_lm(L), -7.0), b(n_lm(L), -7.0), c(n_lm(L)), e(n_lm(L));
  regular_harmonics(0.3, -0.2, 0.5, L, 0, a.data(), b.data());
  regular_harmonics(0.3, -0.2, 0.5, L, L, c.data(), e.data());
  for (int l = 0; l <= L; ++l) {
    EXPECT_NEAR(a[lm_index(l, 0)], c[lm_index(l, 0)], 1e-14 * std::abs(c[lm_index(l, 0)]));
    for (int m = 1; m <= l; ++m) EXPECT_EQ(a[lm_index(l, m)], -7.0);
  }
}

TEST(GravityHarmonics, AdditionTheoremGivesTheInverseDistance) {
  // Given |x'| = 0.3 |x|, when the series is summed to l = 40, then it is 1/|x - x'| to
  // round-off ((0.3)^41 is far below it).
  constexpr int L = 40;
  std::vector<double> rc(n_lm(L)), rs(n_lm(L)), ic(n_lm(L)), is(n_lm(L));
  const double xp[3] = {0.12, -0.21, 0.09}, x[3] = {-0.5, 0.6, 0.7};
  const double scale = 0.3 * std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]) /
                       std::sqrt(xp[0] * xp[0] + xp[1] * xp[1] + xp[2] * xp[2]);
  const double q[3] = {xp[0] * scale, xp[1] * scale, xp[2] * scale};
  regular_harmonics(q[0], q[1], q[2], L, L, rc.data(), rs.data());
  irregular_harmonics(x[0], x[1], x[2], L, L, ic.data(), is.data());
  double s = 0.0;
  for (int l = 0; l <= L; ++l)
    for (int m = 0; m <= l; ++m) {
      const int a = lm_index(l, m);
      s += (m == 0 ? 1.0 : 2.0) * (rc[a] * ic[a] + rs[a] * is[a]);
    }
  const double d = std::hypot(x[0] - q[0], x[1] - q[1], x[2] - q[2]);
  EXPECT_NEAR(s, 1.0 / d, 1e-14 / d);
}

TEST(GravityBins, EdgesAreContinuousAndBinsHoldTheirRadii) {
  // Given 16 uniform bins of width 0.01 reaching r = 1, then widths grow from 0.01 at the
  // join, every bin's interior radii map back to it, and the fraction runs from 0 to 1.
  const RadialBins b(0.01, 16, 1.0);
  EXPECT_NEAR(b.edge(17) - b.edge(16), 0.01 * (1.0 + 1.0 / 16) - 0.0, 1e-15 + 0.01 / 16);
  EXPECT_GE(b.edge(b.count), 1.0);
  for (int q = 0; q < b.count; ++q) {
    const double lo = b.edge(q), hi = b.edge(q + 1);
    EXPECT_GT(hi, lo);
    EXPECT_EQ(b.bin(lo + 0.25 * (hi - lo)), q);
    EXPECT_EQ(b.bin(lo + 0.75 * (hi - lo)), q);
    EXPECT_NEAR(b.fraction(lo + 0.5 * (hi - lo), q), 0.5, 1e-9);
  }
}

TEST(GravityMoments, PointMassAtTheCentreIsExactlyItsMonopole) {
  // Given one mass 3 at the centre, then the sum anywhere outside it is 3/r.
  Expansion e(8, 8, RadialBins(0.01, 200, 2.0));
  e.add_mass(3.0, 0.0, 0.0, 0.0);
  e.finish();
  for (double r : {0.05, 0.3, 1.7}) EXPECT_NEAR(e.sum(0.6 * r, -0.8 * r, 0.0), 3.0 / r, 1e-13 / r);
}

TEST(GravityMoments, OffCentrePointMassConvergesWithL) {
  // Given a mass at |x'| = 0.2, when the potential is taken at |x| = 0.8 (and at 0.05, inside
  // it), then the error of the l_max = 8 expansion is below (r</r>)^9 / (r> - r<) and
  // l_max = 20 is at round-off; moments of the mass equal m R_lm(x') and m I_lm(x').
  const double xp[3] = {0.1, 0.1, std::sqrt(0.04 - 0.02)};
  for (int L : {8, 20}) {
    Expansion e(L, L, RadialBins(0.01, 200, 2.0));
    e.add_mass(2.0, xp[0], xp[1], xp[2]);
    e.finish();
    const int q = e.bins().bin(0.2);
    std::vector<double> rc(n_lm(L)), rs(n_lm(L)), ic(n_lm(L)), is(n_lm(L));
    regular_harmonics(xp[0], xp[1], xp[2], L, L, rc.data(), rs.data());
    irregular_harmonics(xp[0], xp[1], xp[2], L, L, ic.data(), is.data());
    const double* row = e.row(q);
    const int n = n_lm(L);
    double big_r = 0.0, big_i = 0.0;  // round-off is relative to the largest of each kind
    for (int a = 0; a < n; ++a) {
      big_r = std::max({big_r, std::abs(rc[a]), std::abs(rs[a])});
      big_i = std::max({big_i, std::abs(ic[a]), std::abs(is[a])});
    }
    for (int a = 0; a < n; ++a) {
      EXPECT_NEAR(row[a], 2.0 * rc[a], 1e-13 * big_r);
      EXPECT_NEAR(row[n + a], 2.0 * rs[a], 1e-13 * big_r);
      EXPECT_NEAR(row[2 * n + a], 2.0 * ic[a], 1e-13 * big_i);
      EXPECT_NEAR(row[3 * n + a], 2.0 * is[a], 1e-13 * big_i);
    }
    for (double r : {0.8, 0.05}) {
      const double p[3] = {r * 0.36, -r * 0.48, r * 0.8};
      const double exact = 2.0 / std::hypot(p[0] - xp[0], p[1] - xp[1], p[2] - xp[2]);
      const double lo = std::min(r, 0.2), hi = std::max(r, 0.2);
      const double bound = L == 8 ? 2.0 * std::pow(lo / hi, 9) / (hi - lo) : 1e-12 * exact;
      EXPECT_NEAR(e.sum(p[0], p[1], p[2]), exact, bound) << "l_max " << L << ", r " << r;
    }
  }
}

TEST(GravityMoments, RingIsTheAzimuthalAverageOfPointMasses) {
  // Given a ring of mass 1 at cylindrical radius 0.3, z = 0.1 in the axisymmetric (m = 0)
  // expansion, then its potential equals the average of 720 point masses around it.
  constexpr int L = 30;
  Expansion ring(L, 0, RadialBins(0.005, 400, 2.0));
  ring.add_mass(1.0, 0.3, 0.0, 0.1);
  ring.finish();
  for (const auto& p : {std::array<double, 2>{0.9, -0.2}, std::array<double, 2>{0.05, 0.02}}) {
    double avg = 0.0;
    const int n = 720;
    for (int t = 0; t < n; ++t) {
      const double ph = 2 * std::numbers::pi * (t + 0.5) / n;
      avg += 1.0 / std::hypot(p[0] - 0.3 * std::cos(ph), 0.3 * std::sin(ph), p[1] - 0.1) / n;
    }
    EXPECT_NEAR(ring.sum(p[0], 0.0, p[1]), avg, 1e-9 * avg);
  }
}

TEST(GravityMoments, EquatorialMirrorEqualsTheMassAndItsImage) {
  // Given a ring above the plane z = 0 mirrored, then the sum equals the ring plus its
  // image below the plane.
  constexpr int L = 30;
  Expansion m(L, 0, RadialBins(0.005, 400, 2.0)), both(L, 0, RadialBins(0.005, 400, 2.0));
  m.add_mass(1.0, 0.2, 0.0, 0.15);
  m.mirror_equator();
  m.finish();
  both.add_mass(1.0, 0.2, 0.0, 0.15);
  both.add_mass(1.0, 0.2, 0.0, -0.15);
  both.finish();
  EXPECT_NEAR(m.sum(0.7, 0.0, 0.4), both.sum(0.7, 0.0, 0.4), 1e-13);
}

}  // namespace

namespace {

TEST(GravityMoments, PotentialAtTheCentreIsTheExteriorMonopole) {
  // Given masses off the centre, then the sum at the centre itself is sum m / r'.
  Expansion e(8, 8, RadialBins(0.01, 200, 2.0));
  e.add_mass(2.0, 0.3, 0.0, 0.0);
  e.add_mass(1.0, 0.0, 0.004, -0.003);  // in bin 0
  e.finish();
  EXPECT_NEAR(e.sum(0.0, 0.0, 0.0), 2.0 / 0.3 + 1.0 / 0.005, 1e-12);
}

}  // namespace

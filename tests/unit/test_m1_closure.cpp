// The M1 closure's row flux (physics/m1/closure.hpp) at the ends of the double range (issue
// 48): given |F| from 1e-320 (subnormal) to 1e-150 and E from 0 to 1, in every direction,
// with every closure, then every flux is finite, the pressure is symmetric (P_ab = P_ba)
// and its trace is E (c = 1); where |F|^2 underflows the pressure is the one the same state
// scaled by 2^600 gives, scaled back (P is linear in (E, F) at fixed f). The row kernel is
// plain C++ compiled for the build's baseline (no Highway target of its own yet), so "every
// target" is the one it has.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "physics/m1/closure.hpp"

namespace {

namespace m1 = tessera::m1;

struct Rows {
  std::vector<double> v[4], o[4];
  explicit Rows(std::size_t n) {
    for (auto& x : v) x.assign(n, 0.0);
    for (auto& x : o) x.assign(n, -7.0);
  }
  void flux(m1::Closure cl, double c, int a) {
    const double* u[4] = {v[0].data(), v[1].data(), v[2].data(), v[3].data()};
    double* out[4] = {o[0].data(), o[1].data(), o[2].data(), o[3].data()};
    m1::row_flux(cl, c, u, out, a, 0, int(v[0].size()));
  }
};

// States: |F| on a log grid from 1e-320 to 1e-150, E in {0, 1e-320, 1e-300, 1e-200, 1e-160,
// 1e-150, 1e-3, 1}, directions along an axis, diagonal, and skew.
Rows states(std::vector<std::array<double, 4>>* list) {
  const double es[] = {0.0, 1e-320, 1e-300, 1e-200, 1e-160, 1e-150, 1e-3, 1.0};
  const double dirs[][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, -1}, {1, 1, 0}, {0.3, -0.8, 0.52}};
  for (double e : es)
    for (int p = -320; p <= -150; p += 5)
      for (const auto& d : dirs) {
        const double nd = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        const double nf = std::pow(10.0, p);
        list->push_back({e, nf * (d[0] / nd), nf * (d[1] / nd), nf * (d[2] / nd)});
      }
  Rows r(list->size());
  for (std::size_t i = 0; i < list->size(); ++i)
    for (int q = 0; q < 4; ++q) r.v[q][i] = (*list)[i][std::size_t(q)];
  return r;
}

TEST(M1Closure, GivenFluxesFromSubnormalTo1em150ThenEveryRowFluxIsFiniteAndThePressureConsistent) {
  std::vector<std::array<double, 4>> list;
  Rows r = states(&list);
  for (auto cl : {m1::Closure::minerbo, m1::Closure::levermore, m1::Closure::eddington}) {
    // P's rows along the three axes: P[a][b] = out_a[1 + b] / c^2.
    std::vector<std::array<double, 9>> P(list.size());
    for (int a = 0; a < 3; ++a) {
      r.flux(cl, 1.0, a);
      for (std::size_t i = 0; i < list.size(); ++i) {
        for (int q = 0; q < 4; ++q)
          ASSERT_TRUE(std::isfinite(r.o[q][i]))
              << "closure " << int(cl) << " axis " << a << " E " << list[i][0] << " F ("
              << list[i][1] << ", " << list[i][2] << ", " << list[i][3] << ") out " << q;
        EXPECT_EQ(r.o[0][i], list[i][std::size_t(1 + a)]);
        for (int b = 0; b < 3; ++b) P[i][std::size_t(3 * a + b)] = r.o[1 + b][i];
      }
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      const double e = list[i][0];
      const auto& p = P[i];
      const double tol = std::max(1e-14 * e, 1e-321);  // a few subnormal steps
      // The trace of P is E: (3 (1 - chi) + (3 chi - 1)) / 2 = 1.
      EXPECT_NEAR(p[0] + p[4] + p[8], e, tol) << "E " << e << " |F| " << list[i][1];
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < a; ++b)
          EXPECT_NEAR(p[std::size_t(3 * a + b)], p[std::size_t(3 * b + a)], tol);
    }
  }
}

TEST(M1Closure, GivenAnUnderflowingFluxThenThePressureIsTheScaledStatesScaledBack) {
  // At fixed f the closure's P is linear in (E, F): a state with E and F scaled by 2^600
  // (exact) takes the fast form and must give 2^600 times the tiny state's P.
  const double s = std::ldexp(1.0, 600);
  const double e = 3e-170;
  const double f[3] = {1e-170, -2e-170, 0.5e-170};  // f = |F| / E = 0.764
  for (auto cl : {m1::Closure::minerbo, m1::Closure::levermore}) {
    for (int a = 0; a < 3; ++a) {
      Rows tiny(1), big(1);
      tiny.v[0][0] = e;
      big.v[0][0] = e * s;
      for (int q = 0; q < 3; ++q) {
        tiny.v[1 + q][0] = f[q];
        big.v[1 + q][0] = f[q] * s;
      }
      ASSERT_TRUE(m1::needs_scaled_flux(f[0], f[1], f[2]));
      ASSERT_FALSE(m1::needs_scaled_flux(f[0] * s, f[1] * s, f[2] * s));
      tiny.flux(cl, 1.0, a);
      big.flux(cl, 1.0, a);
      for (int q = 1; q < 4; ++q)
        EXPECT_NEAR(tiny.o[q][0] * s, big.o[q][0], 1e-14 * e * s) << "axis " << a << " q " << q;
      // The direction term is there: P_aa differs from the isotropic E (1 - chi) / 2.
      const double chi = m1::eddington_factor(cl, std::sqrt(5.25) / 3.0);
      EXPECT_GT(std::fabs(tiny.o[1 + a][0] - 0.5 * (1.0 - chi) * e), 1e-3 * e);
    }
  }
}

TEST(M1Closure, GivenNormalFluxesThenTheRowTakesTheFastFormUnchanged) {
  // The guard of the fast form changes nothing where |F|^2 is normal: the row's value is
  // the plain formula's, bit for bit (what the verification runs were made with).
  const double e = 0.7, fx = 0.2, fy = -0.3, fz = 0.1;
  Rows r(1);
  r.v[0][0] = e;
  r.v[1][0] = fx;
  r.v[2][0] = fy;
  r.v[3][0] = fz;
  r.flux(m1::Closure::minerbo, 1.0, 0);
  const double nf2 = fx * fx + fy * fy + fz * fz;
  const double f = std::min(std::sqrt(nf2) / e, 1.0);
  const double chi = m1::eddington_factor(m1::Closure::minerbo, f);
  const double iso = 0.5 * (1.0 - chi), dir = 0.5 * (3.0 * chi - 1.0);
  const double dn = dir * fx * (1.0 / nf2);
  EXPECT_EQ(r.o[1][0], e * (iso + dn * fx));
  EXPECT_EQ(r.o[2][0], e * (0.0 + dn * fy));
}

}  // namespace

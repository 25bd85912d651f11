// Specifications of the flame and burn numerics (physics/flame/, physics/burn/): the
// speed fits of verification.md J, the quench ramp, the ADR steps on known profiles and
// the travelling front of the discretisation (verification.md D).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "physics/burn/burn.hpp"
#include "physics/flame/adr.hpp"
#include "physics/flame/flame.hpp"
#include "physics/flame/flame_speed.hpp"

using namespace tessera;

TEST(FlameSpeed, LaminarCOFitGives39And79KmPerSecondAt1e9And2e9) {
  EXPECT_NEAR(flame::laminar_speed_co(1e9), 3.9e6, 0.05e6);
  EXPECT_NEAR(flame::laminar_speed_co(2e9), 7.9e6, 0.05e6);
  EXPECT_LT(flame::laminar_speed_co(1e8), flame::laminar_speed_co(1e9));
}

TEST(FlameSpeed, QuenchRampsSmoothlyFromZeroAt1e6ToOneAt1e7) {
  EXPECT_EQ(flame::quench_factor(5e5), 0.0);
  EXPECT_EQ(flame::quench_factor(1e6), 0.0);
  EXPECT_EQ(flame::quench_factor(1e7), 1.0);
  EXPECT_EQ(flame::quench_factor(3e8), 1.0);
  EXPECT_DOUBLE_EQ(flame::quench_factor(5.5e6), 0.5);  // x = 1/2
  const double x = 0.25;
  EXPECT_DOUBLE_EQ(flame::quench_factor(1e6 + x * 9e6), 3 * x * x - 2 * x * x * x);
  // Flat at both ends: one-sided slopes vanish.
  EXPECT_LT(flame::quench_factor(1e6 + 1e3) / 1e3, 1e-8);
  EXPECT_LT((1.0 - flame::quench_factor(1e7 - 1e3)) / 1e3, 1e-8);
}

TEST(FlameSpeed, BuoyancyCompensationIsTheLargerOfLaminarAndHalfRootAgmDelta) {
  flame::SpeedOptions o;
  o.model = flame::SpeedModel::constant;
  o.speed = 1e5;
  o.buoyancy = true;
  o.atwood = 0.1;
  o.gravity = 1e9;
  o.quench = false;
  const double dx = 1e5;
  const double sb = 0.5 * std::sqrt(0.1 * 1e9 * 0.06 * dx);  // 1.22e6 cm/s
  EXPECT_DOUBLE_EQ(flame::buoyant_speed(0.1, 1e9, dx), sb);
  EXPECT_DOUBLE_EQ(o.speed_at(1e9, dx), sb);
  o.speed = 2e6;
  EXPECT_DOUBLE_EQ(o.speed_at(1e9, dx), 2e6);
  o.quench = true;
  EXPECT_DOUBLE_EQ(o.speed_at(5.5e6, dx), 1e6);
  EXPECT_EQ(o.speed_at(1e5, dx), 0.0);
}

TEST(FlameAdr, CoefficientsAreFlashXs) {
  const flame::AdrModel m;
  EXPECT_DOUBLE_EQ(m.inv_tau(8e6, 1e4), 8e6 * 4 / (3.2 * 1e4));
  EXPECT_DOUBLE_EQ(m.kappa(8e6, 1e4), 8e6 * 3.2 * 1e4 / 16);
  EXPECT_DOUBLE_EQ(m.reaction(m.eps0), 0.0);
  EXPECT_DOUBLE_EQ(m.reaction(1 + m.eps1), 0.0);
  EXPECT_DOUBLE_EQ(m.reaction(0.5), 1.309 * (0.5 - 1e-3) * (0.5 + 1e-3));
  // One reaction step of a known phi.
  EXPECT_DOUBLE_EQ(m.react(0.5, 8e6, 1e4, 1e-5),
                   0.5 + 1e-5 * m.inv_tau(8e6, 1e4) * m.reaction(0.5));
  EXPECT_EQ(flame::clip01(-1e-3), 0.0);
  EXPECT_EQ(flame::clip01(1.001), 1.0);
}

TEST(FlameAdr, FivePointStencilsAreExactForQuarticAndCubicProfiles) {
  // f = x^4 - 2x^3 + x at x = 0.3 + k h: f'' = 12x^2 - 12x exactly for a quartic
  // (fourth order: the error is h^4 f^(6) = 0).
  const double h = 0.1, x0 = 0.3;
  std::vector<double> f(5);
  for (int k = 0; k < 5; ++k) {
    const double x = x0 + (k - 2) * h;
    f[k] = x * x * x * x - 2 * x * x * x + x;
  }
  EXPECT_NEAR(flame::d2_5pt(f.data() + 2, 1) / (h * h), 12 * x0 * x0 - 12 * x0, 1e-10);
  EXPECT_NEAR(flame::d1_5pt(f.data() + 2, 1) / h, 4 * x0 * x0 * x0 - 6 * x0 * x0 + 1, 1e-10);
}

namespace {
/// The Flame unit's Steps 1-3 on a 1-D row (zone width 1, speed 1), two edge zones
/// held at 1 (burned, left) and 0 (fuel, right).
struct Front {
  std::vector<double> phi, r;
  flame::AdrModel m;
  explicit Front(int n, double x0) : phi(n), r(n) {
    for (int i = 0; i < n; ++i) phi[i] = 0.5 * (1 - std::tanh((i + 0.5 - x0) / (0.5 * m.b)));
  }
  void step(double dt) {
    const int n = int(phi.size());
    for (int i = 0; i < n; ++i) r[i] = m.react(phi[i], 1.0, 1.0, dt);
    for (int i = 2; i < n - 2; ++i)
      phi[i] = flame::clip01(r[i] + dt * m.kappa(1.0, 1.0) * flame::d2_5pt(r.data() + i, 1));
    phi[0] = phi[1] = 1.0;
    phi[n - 1] = phi[n - 2] = 0.0;
  }
  double burned() const {
    double b = 0;
    for (double p : phi) b += p;
    return b;
  }
  double crossing(double level) const {
    for (std::size_t i = 0; i + 1 < phi.size(); ++i)
      if (phi[i] >= level && phi[i + 1] < level)
        return i + 0.5 + (phi[i] - level) / (phi[i] - phi[i + 1]);
    return -1;
  }
};
}  // namespace

TEST(FlameAdr, TheDiscreteFrontMovesAtTheModelSpeedWithAWidthOf2p6Zones) {
  // verification.md D ("ours"): 0.997 s at s dt / dx = 0.01, 0.980 s at 0.05; width
  // (0.12 -> 0.88) 2.6 dx.
  for (double c : {0.01, 0.05}) {
    Front f(300, 30.0);
    const double dt = c;
    const int settle = int(20.0 / dt), run = int(100.0 / dt);
    for (int n = 0; n < settle; ++n) f.step(dt);
    const double b0 = f.burned();
    for (int n = 0; n < run; ++n) f.step(dt);
    const double v = (f.burned() - b0) / 100.0;
    const double width = f.crossing(0.12) - f.crossing(0.88);
    std::printf("s dt/dx = %.2f: front speed %.4f s, width %.3f dx\n", c, v, width);
    EXPECT_NEAR(v, c == 0.01 ? 0.997 : 0.980, 0.004) << "s dt/dx = " << c;
    EXPECT_NEAR(width, 2.6, 0.15) << "s dt/dx = " << c;
  }
}

TEST(FlameAdr, ReactionOnlyStepKeepsFuelAndAshFixedAndRaisesTheMiddle) {
  const flame::AdrModel m;
  EXPECT_EQ(flame::clip01(m.react(0.0, 1.0, 1.0, 0.1)), 0.0);  // below eps0: no ignition
  EXPECT_EQ(flame::clip01(m.react(1.0, 1.0, 1.0, 0.1)), 1.0);
  EXPECT_GT(m.react(0.5, 1.0, 1.0, 0.1), 0.5);
}

TEST(BurnStage1, FuelConsumedFollowsTheFlameIncrementOfTheUnburnedPart) {
  // Uniform fuel X = 0.5: burned fraction phi leaves X (1 - phi); a step dphi consumes
  // X_u dphi, i.e. X (dphi / (1 - phi_before)).
  const double xu = 0.5, phi0 = 0.3, dphi = 0.2;
  const double x = xu * (1 - phi0);
  EXPECT_DOUBLE_EQ(burn::fuel_consumed(x, phi0 + dphi, dphi), xu * dphi);
  EXPECT_EQ(burn::fuel_consumed(x, phi0, 0.0), 0.0);
  EXPECT_EQ(burn::fuel_consumed(x, phi0 - 0.1, -0.1), 0.0);   // no unburning
  EXPECT_EQ(burn::fuel_consumed(0.0, 0.9, 0.1), 0.0);         // no fuel, no energy
  EXPECT_DOUBLE_EQ(burn::fuel_consumed(0.2, 1.0, 1.0), 0.2);  // all of it, never more
}

// Specifications for the EOS interface and the gamma-law EOS (physics/eos/).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "physics/eos/eos.hpp"
#include "physics/eos/gamma_law.hpp"

namespace {

using tessera::eos::Eos;
using tessera::eos::GammaLaw;
using tessera::eos::Mode;
namespace cgs = tessera::eos::cgs;

double rel(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

using Zones = tessera::eos::PencilArrays;

// States spanning ISM to stellar-interior densities and energies, in cgs.
Zones sample_states() {
  Zones z(12);
  std::size_t i = 0;
  for (double dens : {1e-24, 1e-10, 1.0, 1e6}) {
    for (double eint : {1e8, 1e12, 1e17}) {
      z.dens[i] = dens;
      z.eint[i] = eint;
      ++i;
    }
  }
  return z;
}

TEST(GammaLaw, GivenDensAndEint_ThenDensPresThenDensTemp_RecoversEveryVariable) {
  for (const double gamma : {5.0 / 3.0, 1.4, 4.0 / 3.0, 1.001}) {
    const GammaLaw eos(gamma, 0.6);
    Zones ref = sample_states();
    eos.apply(Mode::dens_ei, ref.pencil());

    Zones by_pres = sample_states();
    by_pres.eint.assign(by_pres.eint.size(), 0.0);
    by_pres.pres = ref.pres;
    eos.apply(Mode::dens_pres, by_pres.pencil());

    Zones by_temp = sample_states();
    by_temp.eint.assign(by_temp.eint.size(), 0.0);
    by_temp.temp = by_pres.temp;
    eos.apply(Mode::dens_temp, by_temp.pencil());

    for (std::size_t i = 0; i < ref.dens.size(); ++i) {
      for (const Zones* s : {&by_pres, &by_temp}) {
        EXPECT_LT(rel(s->eint[i], ref.eint[i]), 1e-13);
        EXPECT_LT(rel(s->pres[i], ref.pres[i]), 1e-13);
        EXPECT_LT(rel(s->temp[i], ref.temp[i]), 1e-13);
        EXPECT_LT(rel(s->cs[i], ref.cs[i]), 1e-13);
      }
    }
  }
}

TEST(GammaLaw, GivenDensAndTemp_ObeysTheIdealGasLaw) {
  // p = n k_B T with n = ρ / (μ m_u); e = p / ((γ-1) ρ); cs^2 = γ p / ρ.
  const double gamma = 5.0 / 3.0, mu = 0.6;
  const GammaLaw eos(gamma, mu);
  Zones s(1);
  s.dens[0] = 1e-24;
  s.temp[0] = 1e4;
  eos.apply(Mode::dens_temp, s.pencil());
  const double n = s.dens[0] / (mu * cgs::atomic_mass_unit);
  EXPECT_LT(rel(s.pres[0], n * cgs::k_boltzmann * s.temp[0]), 1e-14);
  EXPECT_LT(rel(s.eint[0], s.pres[0] / ((gamma - 1.0) * s.dens[0])), 1e-14);
  EXPECT_LT(rel(s.cs[0], std::sqrt(gamma * s.pres[0] / s.dens[0])), 1e-14);
  EXPECT_EQ(s.gamc[0], gamma);
  EXPECT_EQ(s.game[0], gamma);
  // Ionised hydrogen-helium gas at 10^4 K: cs ~ 15 km/s.
  EXPECT_NEAR(s.cs[0] / 1e5, 15.2, 0.1);
}

TEST(GammaLaw, GivenAnyMode_LeavesCompositionUntouchedAndReportsNoIteration) {
  const GammaLaw eos(1.4, 1.0);
  Zones s(1);
  s.dens[0] = 1.0;
  s.pres[0] = 1.0;
  s.abar[0] = 4.0;
  s.zbar[0] = 2.0;
  const tessera::eos::Result r = eos.apply(Mode::dens_pres, s.pencil());
  EXPECT_EQ(s.abar[0], 4.0);
  EXPECT_EQ(s.zbar[0], 2.0);
  EXPECT_EQ(r.iterations, 0);
  EXPECT_EQ(r.failed, -1);
}

TEST(GammaLaw, GivenNoSoundSpeedArray_FillsTheRest) {
  const GammaLaw eos(1.4, 1.0);
  Zones s(1);
  s.dens[0] = 2.0;
  s.eint[0] = 3.0;
  tessera::eos::Pencil p = s.pencil();
  p.cs = nullptr;
  eos.apply(Mode::dens_ei, p);
  EXPECT_DOUBLE_EQ(s.pres[0], 0.4 * 6.0);
}

TEST(GammaLaw, StaticHelpersAgreeWithApply) {
  const double gamma = 1.4;
  const GammaLaw eos(gamma, 1.0);
  Zones s(1);
  s.dens[0] = 2.0;
  s.eint[0] = 3.0;
  eos.apply(Mode::dens_ei, s.pencil());
  EXPECT_DOUBLE_EQ(GammaLaw::pressure(s.dens[0] * s.eint[0], gamma), s.pres[0]);
  EXPECT_DOUBLE_EQ(GammaLaw::rhoe(s.pres[0], gamma), s.dens[0] * s.eint[0]);
  EXPECT_DOUBLE_EQ(GammaLaw::sound_speed(s.dens[0], s.pres[0], gamma), s.cs[0]);
}

TEST(Eos, GivenAGammaLawThroughTheBaseInterface_DispatchesAndNamesItself) {
  const std::unique_ptr<Eos> eos = std::make_unique<GammaLaw>(5.0 / 3.0, 1.0);
  EXPECT_EQ(std::string(eos->name()), "gamma");
  Zones s(1);
  s.dens[0] = 1.0;
  s.pres[0] = 1.0;
  eos->apply(Mode::dens_pres, s.pencil());
  EXPECT_DOUBLE_EQ(s.eint[0], 1.5);
}

TEST(GammaLaw, GivenAnUnphysicalGammaOrMu_RefusesToConstruct) {
  EXPECT_THROW(GammaLaw(1.0, 1.0), tessera::Error);
  EXPECT_THROW(GammaLaw(0.5, 1.0), tessera::Error);
  EXPECT_THROW(GammaLaw(std::nan(""), 1.0), tessera::Error);
  EXPECT_THROW(GammaLaw(1.4, 0.0), tessera::Error);
}

}  // namespace

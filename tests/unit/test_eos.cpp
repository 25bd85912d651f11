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
using tessera::eos::State;
namespace cgs = tessera::eos::cgs;

double rel(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

// States spanning ISM to stellar-interior densities and energies, in cgs.
std::vector<State> sample_states() {
  std::vector<State> s;
  for (double dens : {1e-24, 1e-10, 1.0, 1e6}) {
    for (double eint : {1e8, 1e12, 1e17}) {
      State st{};
      st.dens = dens;
      st.eint = eint;
      s.push_back(st);
    }
  }
  return s;
}

TEST(GammaLaw, GivenDensAndEint_ThenDensPresThenDensTemp_RecoversEveryVariable) {
  for (const double gamma : {5.0 / 3.0, 1.4, 4.0 / 3.0, 1.001}) {
    const GammaLaw eos(gamma, 0.6);
    std::vector<State> ref = sample_states();
    eos.apply(Mode::dens_ei, ref.data(), ref.size());

    std::vector<State> by_pres = sample_states();
    for (std::size_t i = 0; i < ref.size(); ++i) {
      by_pres[i].eint = 0.0;
      by_pres[i].pres = ref[i].pres;
    }
    eos.apply(Mode::dens_pres, by_pres.data(), by_pres.size());

    std::vector<State> by_temp = sample_states();
    for (std::size_t i = 0; i < ref.size(); ++i) {
      by_temp[i].eint = 0.0;
      by_temp[i].temp = by_pres[i].temp;
    }
    eos.apply(Mode::dens_temp, by_temp.data(), by_temp.size());

    for (std::size_t i = 0; i < ref.size(); ++i) {
      for (const State* s : {&by_pres[i], &by_temp[i]}) {
        EXPECT_LT(rel(s->eint, ref[i].eint), 1e-13);
        EXPECT_LT(rel(s->pres, ref[i].pres), 1e-13);
        EXPECT_LT(rel(s->temp, ref[i].temp), 1e-13);
        EXPECT_LT(rel(s->cs, ref[i].cs), 1e-13);
      }
    }
  }
}

TEST(GammaLaw, GivenDensAndTemp_ObeysTheIdealGasLaw) {
  // p = n k_B T with n = ρ / (μ m_u); e = p / ((γ-1) ρ); cs^2 = γ p / ρ.
  const double gamma = 5.0 / 3.0, mu = 0.6;
  const GammaLaw eos(gamma, mu);
  State s{};
  s.dens = 1e-24;
  s.temp = 1e4;
  eos.apply(Mode::dens_temp, &s, 1);
  const double n = s.dens / (mu * cgs::atomic_mass_unit);
  EXPECT_LT(rel(s.pres, n * cgs::k_boltzmann * s.temp), 1e-14);
  EXPECT_LT(rel(s.eint, s.pres / ((gamma - 1.0) * s.dens)), 1e-14);
  EXPECT_LT(rel(s.cs, std::sqrt(gamma * s.pres / s.dens)), 1e-14);
  EXPECT_EQ(s.gamc, gamma);
  EXPECT_EQ(s.game, gamma);
  // Ionised hydrogen-helium gas at 10^4 K: cs ~ 15 km/s.
  EXPECT_NEAR(s.cs / 1e5, 15.2, 0.1);
}

TEST(GammaLaw, GivenAnyMode_LeavesCompositionUntouched) {
  const GammaLaw eos(1.4, 1.0);
  State s{};
  s.dens = 1.0;
  s.pres = 1.0;
  s.abar = 4.0;
  s.zbar = 2.0;
  eos.apply(Mode::dens_pres, &s, 1);
  EXPECT_EQ(s.abar, 4.0);
  EXPECT_EQ(s.zbar, 2.0);
}

TEST(GammaLaw, StaticHelpersAgreeWithApply) {
  const double gamma = 1.4;
  const GammaLaw eos(gamma, 1.0);
  State s{};
  s.dens = 2.0;
  s.eint = 3.0;
  eos.apply(Mode::dens_ei, &s, 1);
  EXPECT_DOUBLE_EQ(GammaLaw::pressure(s.dens * s.eint, gamma), s.pres);
  EXPECT_DOUBLE_EQ(GammaLaw::rhoe(s.pres, gamma), s.dens * s.eint);
  EXPECT_DOUBLE_EQ(GammaLaw::sound_speed(s.dens, s.pres, gamma), s.cs);
}

TEST(Eos, GivenAGammaLawThroughTheBaseInterface_DispatchesAndNamesItself) {
  const std::unique_ptr<Eos> eos = std::make_unique<GammaLaw>(5.0 / 3.0, 1.0);
  EXPECT_EQ(std::string(eos->name()), "gamma_law");
  State s{};
  s.dens = 1.0;
  s.pres = 1.0;
  eos->apply(Mode::dens_pres, &s, 1);
  EXPECT_DOUBLE_EQ(s.eint, 1.5);
}

TEST(GammaLaw, GivenAnUnphysicalGammaOrMu_RefusesToConstruct) {
  EXPECT_THROW(GammaLaw(1.0, 1.0), tessera::Error);
  EXPECT_THROW(GammaLaw(0.5, 1.0), tessera::Error);
  EXPECT_THROW(GammaLaw(std::nan(""), 1.0), tessera::Error);
  EXPECT_THROW(GammaLaw(1.4, 0.0), tessera::Error);
}

}  // namespace

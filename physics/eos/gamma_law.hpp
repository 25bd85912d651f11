#pragma once
// Ideal gas with constant adiabatic index γ and mean molecular weight μ:
//   p = (γ - 1) ρ e,   T = p μ m_u / (ρ k_B),   cs^2 = γ p / ρ,   gamc = game = γ.
// The static helpers are the per-zone forms for hot loops that know they run a gamma
// law; the virtual apply() is the general vector interface (eos.hpp).
#include <cmath>
#include <cstddef>
#include <string>

#include "base/error.hpp"
#include "physics/eos/eos.hpp"

namespace tessera::eos {

/// Gamma-law EOS. abar and zbar are ignored: μ is fixed at construction.
class GammaLaw final : public Eos {
 public:
  /// Throws tessera::Error unless gamma > 1 and mu > 0.
  GammaLaw(double gamma, double mu) : gamma_(gamma), mu_(mu) {
    if (!(gamma > 1.0)) throw Error("gamma_law: gamma must be > 1, got " + std::to_string(gamma));
    if (!(mu > 0.0)) throw Error("gamma_law: mu must be > 0, got " + std::to_string(mu));
    temp_per_eint_ = (gamma - 1.0) * mu * cgs::atomic_mass_unit / cgs::k_boltzmann;
  }

  double gamma() const { return gamma_; }
  double mu() const { return mu_; }

  /// Pressure from internal energy density rho*e.
  static constexpr double pressure(double rhoe, double gamma) { return (gamma - 1.0) * rhoe; }
  /// Internal energy density rho*e from pressure.
  static constexpr double rhoe(double pres, double gamma) { return pres / (gamma - 1.0); }
  /// Adiabatic sound speed sqrt(γ p / ρ).
  static double sound_speed(double dens, double pres, double gamma) {
    return std::sqrt(gamma * pres / dens);
  }

  void apply(Mode mode, State* states, std::size_t n) const override {
    const double g = gamma_;
    const double gm1 = g - 1.0;
    // T = (γ-1) μ m_u e / k_B: temperature and specific energy are proportional.
    const double t_per_e = temp_per_eint_;
    switch (mode) {
      case Mode::dens_ei:
        for (std::size_t i = 0; i < n; ++i) {
          State& s = states[i];
          s.pres = gm1 * s.dens * s.eint;
          s.temp = t_per_e * s.eint;
          finish(s, g);
        }
        break;
      case Mode::dens_temp:
        for (std::size_t i = 0; i < n; ++i) {
          State& s = states[i];
          s.eint = s.temp / t_per_e;
          s.pres = gm1 * s.dens * s.eint;
          finish(s, g);
        }
        break;
      case Mode::dens_pres:
        for (std::size_t i = 0; i < n; ++i) {
          State& s = states[i];
          s.eint = s.pres / (gm1 * s.dens);
          s.temp = t_per_e * s.eint;
          finish(s, g);
        }
        break;
    }
  }

  const char* name() const override { return "gamma_law"; }

 private:
  static void finish(State& s, double g) {
    s.gamc = g;
    s.game = g;
    s.cs = std::sqrt(g * s.pres / s.dens);
  }

  double gamma_;
  double mu_;
  double temp_per_eint_;
};

}  // namespace tessera::eos

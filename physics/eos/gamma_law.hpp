#pragma once
// Ideal gas with constant adiabatic index γ and mean molecular weight μ:
//   p = (γ - 1) ρ e,   T = p μ m_u / (ρ k_B),   cs^2 = γ p / ρ,   gamc = game = γ.
// The static helpers are the per-zone forms for tests and exact solutions; hydro calls
// the pencil interface (eos.hpp) like every other EOS.
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

  Result apply(Mode mode, const Pencil& p) const override {
    const double g = gamma_;
    const double gm1 = g - 1.0;
    // T = (γ-1) μ m_u e / k_B: temperature and specific energy are proportional.
    const double t_per_e = temp_per_eint_;
    const std::size_t n = p.n;
    double* __restrict dens = p.dens;
    double* __restrict eint = p.eint;
    double* __restrict pres = p.pres;
    double* __restrict temp = p.temp;
    double* __restrict gamc = p.gamc;
    double* __restrict game = p.game;
    // One loop per mode, every output written in it (short pencils: one pass).
    switch (mode) {
      case Mode::dens_ei:
        for (std::size_t i = 0; i < n; ++i) {
          pres[i] = gm1 * dens[i] * eint[i];
          temp[i] = t_per_e * eint[i];
          gamc[i] = g;
          game[i] = g;
        }
        break;
      case Mode::dens_temp:
        for (std::size_t i = 0; i < n; ++i) {
          eint[i] = temp[i] / t_per_e;
          pres[i] = gm1 * dens[i] * eint[i];
          gamc[i] = g;
          game[i] = g;
        }
        break;
      case Mode::dens_pres:
        for (std::size_t i = 0; i < n; ++i) {
          eint[i] = pres[i] / (gm1 * dens[i]);
          temp[i] = t_per_e * eint[i];
          gamc[i] = g;
          game[i] = g;
        }
        break;
    }
    if (p.cs != nullptr)
      for (std::size_t i = 0; i < n; ++i) p.cs[i] = std::sqrt(g * pres[i] / dens[i]);
    return {};
  }

  const char* name() const override { return "gamma"; }
  bool uses_composition() const override { return false; }
  bool uniform_gamma(double& gamc, double& game) const override {
    gamc = game = gamma_;
    return true;
  }

 private:
  double gamma_;
  double mu_;
  double temp_per_eint_;
};

}  // namespace tessera::eos

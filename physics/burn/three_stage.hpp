#pragma once
// The three-stage parametric burn of FLASH's Type Ia model (Townsley et al. 2007, ApJ 668,
// 1118; Calder et al. 2007, ApJ 656, 313; verification.md §N), one zone at a time.
//
// Progress variables, kept ordered 1 >= phfa >= phaq >= phqn >= 0:
//   phfa  fuel consumed (carbon burned to the stage-1 ash, 12C + 12C -> 24Mg), advanced by
//         the flame (its increment) and by the thermal 12C + 12C rate,
//   phaq  ash relaxed to nuclear statistical quasi-equilibrium (the Si group),
//         dphaq/dt = (phfa - phaq) / tau_nsqe,
//   phqn  relaxed to NSE, dphqn/dt = (phaq - phqn)^2 / tau_nse,
// with tau_nsqe = exp(a_nsqe / T9 - b_nsqe) s and tau_nse = exp(a_nse / T9 - b_nse) s at
// T9, the temperature of the NSE final state (FLASH4's constants by default).
//
// The NSE final state is the isochoric one (the table at (Ye, rho, e - qbar)), inside the
// flame front (phfa < 1) the isobaric one (Ye, P, h - qbar), as FLASH's model takes it.
//
// The zone's matter is (1 - phfa) fuel, (phfa - phaq) stage-1 ash and the relaxed part;
// the mean binding energy qbar (MeV per nucleon) and the ion abundance yion = 1 / abar are
// (1 - phfa) q_f + (phfa - phaq) q_a + qn and the same for yion, the relaxed part's qn and
// yn relaxing on tau_nsqe towards phaq q_si28 + phqn (qbar_nse - q_si28) (and 1/28 +
// phqn (1/abar_nse - 1/28) per phaq). The NSE final state (T, qbar_nse, abar_nse, dYe/dt,
// eps_nu) comes from the NSE table at the zone's (Ye, rho, e - N_A MeV qbar), which
// isochoric burning conserves. Ye falls in the NSE part: dYe/dt = phqn Ydot_nse.
//
// Energy (erg/g, into eint): N_A MeV dqbar - phqn Ydot N_A (m_p + m_e - m_n) c^2 dt (the
// rest mass of captured electrons) - phqn eps_nu dt (the neutrinos, counted apart).
//
// Integration over a step dt with the NSE state of the step's start: phaq and phqn exactly
// (exponential and the quadratic's closed form), qn and yn exponentially, Ye explicitly.
// Each update keeps the order of the progress variables by construction.
#include <algorithm>
#include <cmath>

#include "physics/burn/nse_table.hpp"

namespace tessera::burn {

/// The fuel of one zone and its stage-1 ash (from the zone's species).
struct FuelProps {
  double qf = 0.0;   ///< binding energy per nucleon of the fuel, MeV
  double yif = 0.0;  ///< ion abundance of the fuel, 1/abar
  double qa = 0.0;   ///< of the stage-1 ash
  double yia = 0.0;
  double xc = 0.0;  ///< carbon mass fraction of the fuel (thermal burn)
  double ye = 0.0;  ///< the fuel's Ye
};

/// The fuel of n species with mass fractions x(q) (any positive sum: normalised here), mass
/// and charge numbers a, z and binding energies per nucleon bind (MeV); species `fuel`
/// burns, nucleon for nucleon, into the stage-1 ash of mass number ash_a and binding
/// ash_bind. The burn unit (per zone) and `tessera nse --burn` both call it.
template <class X>
inline FuelProps fuel_of(int n, X&& x, const double* a, const double* z, const double* bind,
                         int fuel, double ash_a, double ash_bind) {
  FuelProps f;
  double tot = 0.0;
  for (int q = 0; q < n; ++q) tot += x(q);
  for (int q = 0; q < n; ++q) {
    const double xq = x(q) / tot;
    f.qf += xq * bind[q];
    f.yif += xq / a[q];
    f.ye += xq * z[q] / a[q];
  }
  f.xc = x(fuel) / tot;
  f.qa = f.qf + f.xc * (ash_bind - bind[fuel]);
  f.yia = f.yif + f.xc * (1.0 / ash_a - 1.0 / a[fuel]);
  return f;
}

/// The model's constants (burn.* parameters).
struct StageParams {
  double a_nsqe = 182.06, b_nsqe = 46.054;  ///< tau_nsqe = exp(a / T9 - b) s
  double a_nse = 201.0, b_nse = 46.77;      ///< tau_nse
  double q_si = 236.537 / 28.0;             ///< binding per nucleon of the QSE group (28Si)
  double yi_si = 1.0 / 28.0;
  bool thermal_carbon = true;  ///< the 12C + 12C burn ahead of the flame
};

/// (m_p + m_e - m_n) c^2 N_A in erg per mole: the energy an electron capture on a proton
/// takes from the gas per unit decrease of Ye (CODATA 2018 masses: -0.78233 MeV).
inline constexpr double capture_energy_per_ye =
    (938.27208816 + 0.51099895 - 939.56542052) * mev_per_nucleon_erg;

/// The 12C + 12C rate N_A <sigma v> (cm^3/mol/s), Caughlan & Fowler 1988, unscreened.
inline double c12c12_rate(double temp) {
  const double t9 = temp * 1e-9;
  if (!(t9 > 0.05)) return 0.0;
  const double t9a = t9 / (1.0 + 0.0396 * t9);
  return 4.27e26 * std::pow(t9a, 5.0 / 6.0) / std::pow(t9, 1.5) *
         std::exp(-84.165 / std::cbrt(t9a) - 2.12e-3 * t9 * t9 * t9);
}

/// One zone's burn state (specific quantities).
struct ZoneBurn {
  double phfa = 0.0, phaq = 0.0, phqn = 0.0;
  double ye = 0.5, qbar = 0.0, yion = 0.0;
};

/// What a step did to a zone.
struct StepResult {
  double de = 0.0;   ///< nuclear energy into the gas (erg/g), neutrino loss not included
  double dnu = 0.0;  ///< neutrino loss (erg/g, > 0)
  double nse_temp = 0.0;
  int out_of_table = 0;
};

/// Stage 1: fuel fraction dfa (of the whole, 0 <= dfa <= 1 - phfa) burned to ash.
/// Returns the energy (erg/g).
inline double stage_one(ZoneBurn& z, const FuelProps& f, double dfa) {
  if (!(dfa > 0.0)) return 0.0;
  dfa = std::min(dfa, 1.0 - z.phfa);
  z.phfa += dfa;
  z.qbar += dfa * (f.qa - f.qf);
  z.yion += dfa * (f.yia - f.yif);
  return mev_per_nucleon_erg * dfa * (f.qa - f.qf);
}

/// The thermal 12C + 12C burn at (rho, T) over dt: the fraction of the whole burned
/// (d(1 - phfa)/dt = -k (1 - phfa)^2 with k = X_C rho N_A<sv> / 12, integrated exactly).
inline double thermal_fraction(const ZoneBurn& z, const FuelProps& f, double dens, double temp,
                               double dt) {
  const double left = 1.0 - z.phfa;
  if (!(left > 0.0) || !(f.xc > 0.0)) return 0.0;
  const double k = f.xc * dens * c12c12_rate(temp) / 12.0;
  if (!(k > 0.0)) return 0.0;
  return left - left / (1.0 + k * left * dt);
}

/// Stages 2 and 3 and neutronisation over dt, eint the zone's specific internal energy
/// (erg/g) at the step's start. The NSE final state is the isochoric one at (Ye, rho,
/// e - qbar), or with `pres` > 0 the isobaric one at (Ye, P, e + P/rho - qbar): matter
/// burning inside the flame front, at about the pressure around it.
inline StepResult relax(ZoneBurn& z, const FuelProps& f, const StageParams& p,
                        const NseTable& table, double dens, double eint, double dt,
                        double pres = 0.0) {
  StepResult r;
  if (!(z.phfa > 0.0)) return r;
  const double q0 = z.qbar;
  const NseState nse =
      pres > 0.0
          ? table.lookup_isobaric(z.ye, pres, eint + pres / dens - mev_per_nucleon_erg * z.qbar)
          : table.lookup(z.ye, dens, eint - mev_per_nucleon_erg * z.qbar);
  r.nse_temp = nse.temp;
  r.out_of_table = nse.out_of_table;
  const double t9 = nse.temp * 1e-9;
  const double tau_nsqe = std::exp(p.a_nsqe / t9 - p.b_nsqe);
  const double tau_nse = std::exp(p.a_nse / t9 - p.b_nse);
  const double decay = std::exp(-dt / tau_nsqe);
  // The relaxed part before the step.
  double qn = z.qbar - (1.0 - z.phfa) * f.qf - (z.phfa - z.phaq) * f.qa;
  double yn = z.yion - (1.0 - z.phfa) * f.yif - (z.phfa - z.phaq) * f.yia;
  const double phaq = z.phfa - (z.phfa - z.phaq) * decay;
  // Matter entering the relaxed part brings its stage-1 binding and ions.
  qn += (phaq - z.phaq) * f.qa;
  yn += (phaq - z.phaq) * f.yia;
  const double d = std::max(0.0, phaq - z.phqn);
  const double phqn = phaq - d / (1.0 + d * dt / tau_nse);
  const double qt = phaq * p.q_si + phqn * (nse.qbar - p.q_si);
  const double yt = phaq * p.yi_si + phqn * (nse.yion - p.yi_si);
  qn = qt + (qn - qt) * decay;
  yn = yt + (yn - yt) * decay;
  z.phaq = phaq;
  z.phqn = std::min(phqn, phaq);
  z.qbar = (1.0 - z.phfa) * f.qf + (z.phfa - z.phaq) * f.qa + qn;
  z.yion = (1.0 - z.phfa) * f.yif + (z.phfa - z.phaq) * f.yia + yn;
  const double dye = dt * z.phqn * nse.ydot;
  z.ye += dye;
  r.de = mev_per_nucleon_erg * (z.qbar - q0) - dye * capture_energy_per_ye;
  r.dnu = dt * z.phqn * nse.enu;
  return r;
}

}  // namespace tessera::burn

#pragma once
// Physical constants and the table grid of the Helmholtz EOS, cgs.
//
// References
//   Mohr, P. J., Taylor, B. N. & Newell, D. B. 2008, Rev. Mod. Phys. 80, 633 (CODATA 2006):
//     h, N_A, k_B, m_u, m_e, e.
//   Timmes, F. X. & Swesty, F. D. 2000, ApJS 126, 501: the table grid (541 x 201 nodes,
//     log10(rho Y_e) = -12..15, log10 T = 3..13, step 0.05) and sigma_SB = 5.67051e-5.
//   AMReX-Astro Microphysics EOS/helmholtz/actual_eos_data.H: the same constant set, so that
//     results can be compared with theirs (and with Timmes' code) to ~1e-10.
//
// These deliberately differ from the CODATA 2018 set in physics/eos/eos.hpp.
#include <cmath>

namespace tessera::eos::helmholtz {

inline constexpr double pi = 3.14159265358979323846;
inline constexpr double h_planck = 6.6260689633e-27;           ///< erg s
inline constexpr double avogadro = 6.0221417930e23;            ///< 1 / mol
inline constexpr double k_boltzmann = 1.380650424e-16;         ///< erg / K
inline constexpr double atomic_mass_unit = 1.66053878283e-24;  ///< g
inline constexpr double c_light = 2.99792458e10;               ///< cm / s
inline constexpr double electron_mass = 9.10938215e-28;        ///< g
inline constexpr double electron_charge = 4.8032042712e-10;    ///< esu
inline constexpr double stefan_boltzmann = 5.67051e-5;         ///< erg / (cm^2 s K^4), Timmes'
inline constexpr double a_radiation = 4.0 * stefan_boltzmann / c_light;  ///< erg / (cm^3 K^4)
/// Electron rest energy m_e c^2, erg.
inline constexpr double electron_rest_energy = electron_mass * c_light * c_light;

/// The standard table grid (Timmes' helm_table.dat): node (i, j) is at
/// log10(rho Y_e) = dens_log_lo + i * dens_log_step, log10 T = temp_log_lo + j * temp_log_step.
struct Grid {
  int imax = 541;  ///< density nodes
  int jmax = 201;  ///< temperature nodes
  double dens_log_lo = -12.0;
  double dens_log_hi = 15.0;
  double temp_log_lo = 3.0;
  double temp_log_hi = 13.0;
  /// log10 spacing in density, computed as Timmes does: (hi - lo) / (imax - 1).
  double dens_log_step() const { return (dens_log_hi - dens_log_lo) / (imax - 1); }
  /// log10 spacing in temperature.
  double temp_log_step() const { return (temp_log_hi - temp_log_lo) / (jmax - 1); }
  /// Density rho Y_e of node i and temperature of node j: 10^(lo + i * step), the exponent
  /// rounded once (std::fma), so that the generator and the reader agree to the bit
  /// whatever the compiler contracts.
  double dens_node(int i) const {
    return std::pow(10.0, std::fma(static_cast<double>(i), dens_log_step(), dens_log_lo));
  }
  double temp_node(int j) const {
    return std::pow(10.0, std::fma(static_cast<double>(j), temp_log_step(), temp_log_lo));
  }
};

/// The grid of Timmes' helm_table.dat, which Tessera generates and reads.
inline constexpr Grid standard_grid{};

}  // namespace tessera::eos::helmholtz

#pragma once
// Physical constants of the PIC unit, SI (CODATA 2018: Tiesinga et al. 2021, Rev. Mod.
// Phys. 93, 025010), as WarpX uses them. base/constants.hpp is cgs, hence a separate set.
namespace tessera::pic::constants {

inline constexpr double c = 299792458.0;          ///< speed of light, m/s (exact)
inline constexpr double eps0 = 8.8541878128e-12;  ///< vacuum permittivity, F/m
inline constexpr double mu0 = 1.25663706212e-6;   ///< vacuum permeability, N/A^2
inline constexpr double q_e = 1.602176634e-19;    ///< elementary charge, C (exact)
inline constexpr double m_e = 9.1093837015e-31;   ///< electron mass, kg
inline constexpr double m_p = 1.67262192369e-27;  ///< proton mass, kg
inline constexpr double k_b = 1.380649e-23;       ///< Boltzmann constant, J/K (exact)
inline constexpr double pi = 3.14159265358979323846;

}  // namespace tessera::pic::constants

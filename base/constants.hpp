#pragma once
// Physical constants shared by the physics units and problems, cgs (CODATA 2018). The
// EOS keeps its own set (physics/eos/eos.hpp; Helmholtz: CODATA 2006 as Timmes' code).
namespace tessera::constants {

inline constexpr double newton_g = 6.67430e-8;    ///< cm^3 g^-1 s^-2
inline constexpr double solar_mass = 1.98841e33;  ///< g (IAU 2015 nominal GM / G)
inline constexpr double pi = 3.14159265358979323846;

}  // namespace tessera::constants

#pragma once
// Flame speeds of the Type Ia deflagration model, per zone, header-only:
//   - laminar speed of C/O fuel (X(12C) = 0.5): the fit
//     s = exp(-43.0 + 4.534 ln rho - 0.08333 (ln rho)^2) cm/s to Timmes & Woosley (1992),
//     as Flash-X's FlameSpeed/LaminarOnly uses it (39 km/s at 1e9, 79 km/s at 2e9 g/cm^3);
//   - buoyancy compensation (Khokhlov 1995; Townsley et al. 2007, eq. 5):
//     s = max(s_lam, 0.5 sqrt(A g m Delta)) with m = 0.06, A the Atwood number of fuel
//     and ash, g the magnitude of the gravitational acceleration, Delta the zone width;
//   - quenching at low density: s = 0 below rho0 = 1e6, times 3x^2 - 2x^3 with
//     x = (rho - rho0) / (rho1 - rho0) up to rho1 = 1e7 g/cm^3 (Flash-X fl_fsQuench).
#include <algorithm>
#include <cmath>

namespace tessera::flame {

/// Laminar flame speed of 50/50 C/O fuel at density rho (g/cm^3), cm/s. The fit is meant
/// for rho in about [1e7, 1e10]; below that the quench factor switches the flame off.
inline double laminar_speed_co(double rho) {
  const double l = std::log(rho);
  return std::exp(-43.0 + 4.534 * l - 0.08333 * l * l);
}

/// Smooth switch-off of the flame below rho1: 0 at rho <= rho0, 1 at rho >= rho1,
/// 3x^2 - 2x^3 in between (x = (rho - rho0) / (rho1 - rho0)). Requires rho1 > rho0.
inline double quench_factor(double rho, double rho0 = 1e6, double rho1 = 1e7) {
  if (rho <= rho0) return 0.0;
  if (rho >= rho1) return 1.0;
  const double x = (rho - rho0) / (rho1 - rho0);
  return x * x * (3.0 - 2.0 * x);
}

/// Buoyancy-compensating speed 0.5 sqrt(A g m Delta) (cm/s) for Atwood number A, gravity
/// magnitude g (cm/s^2), zone width Delta (cm) and m (0.06 in Townsley et al. 2007).
inline double buoyant_speed(double atwood, double g, double delta, double m = 0.06) {
  return 0.5 * std::sqrt(std::max(0.0, atwood * g * m * delta));
}

}  // namespace tessera::flame

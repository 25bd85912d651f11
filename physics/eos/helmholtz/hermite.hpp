#pragma once
// Hermite basis functions of the Helmholtz table interpolation (Timmes & Swesty 2000, ApJS
// 126, 501, §2.3): quintic (value, first and second derivative given at both ends of the
// cell, C2 across cells) for the free energy, cubic (value and first derivative, C1) for
// dP/drho, eta and n. z in [0, 1] is the position in the cell; the basis of the far node
// is the same polynomial at 1 - z. Branch-free and inlinable, so loops over zones vectorise.

namespace tessera::eos::helmholtz::detail {

/// Quintic psi0 = 1 - 10 z^3 + 15 z^4 - 6 z^5 and its first two derivatives.
constexpr double psi0(double z) {
  return z * z * z * (z * (-6.0 * z + 15.0) - 10.0) + 1.0;
}
constexpr double dpsi0(double z) {
  return z * z * (z * (-30.0 * z + 60.0) - 30.0);
}
constexpr double ddpsi0(double z) {
  return z * (z * (-120.0 * z + 180.0) - 60.0);
}
/// Quintic psi1 = z - 6 z^3 + 8 z^4 - 3 z^5 and its first two derivatives.
constexpr double psi1(double z) {
  return z * (z * z * (z * (-3.0 * z + 8.0) - 6.0) + 1.0);
}
constexpr double dpsi1(double z) {
  return z * z * (z * (-15.0 * z + 32.0) - 18.0) + 1.0;
}
constexpr double ddpsi1(double z) {
  return z * (z * (-60.0 * z + 96.0) - 36.0);
}
/// Quintic psi2 = (z^2 - 3 z^3 + 3 z^4 - z^5) / 2 and its first two derivatives.
constexpr double psi2(double z) {
  return 0.5 * z * z * (z * (z * (-z + 3.0) - 3.0) + 1.0);
}
constexpr double dpsi2(double z) {
  return 0.5 * z * (z * (z * (-5.0 * z + 12.0) - 9.0) + 2.0);
}
constexpr double ddpsi2(double z) {
  return 0.5 * (z * (z * (-20.0 * z + 36.0) - 18.0) + 2.0);
}
/// Cubic psi0 = 1 - 3 z^2 + 2 z^3 and psi1 = z - 2 z^2 + z^3.
constexpr double cpsi0(double z) {
  return z * z * (2.0 * z - 3.0) + 1.0;
}
constexpr double cpsi1(double z) {
  return z * (z * (z - 2.0) + 1.0);
}

/// Index in a node's 9 free-energy values (file order F, F_d, F_t, F_dd, F_tt, F_dt, F_ddt,
/// F_dtt, F_ddtt) of d^(p+q) F / d rho^p d T^q, p, q <= 2.
inline constexpr int f_index[3][3] = {{0, 2, 4}, {1, 5, 7}, {3, 6, 8}};
/// Index in a 4-value group (value, _d, _t, _dt) of d^(p+q) / d rho^p d T^q, p, q <= 1.
inline constexpr int c_index[2][2] = {{0, 2}, {1, 3}};

}  // namespace tessera::eos::helmholtz::detail

#pragma once
// The advection-diffusion-reaction (ADR) flame of Khokhlov (1995) as Flash-X builds it
// (physics/sourceTerms/Flame/FlameMain, RDSplit5point Flame_step; Vladimirova, Weirs &
// Ryzhik 2006 for the sharpened KPP reaction), header-only per-zone numerics:
//
//   d phi/dt + u . grad phi = kappa lap(phi) + R(phi) / tau,
//   R(phi) = f_kpp (phi - eps0)(1 + eps1 - phi)           ("sharpened KPP", sKPP)
//   1/tau  = s 4 / (b Delta),   kappa = s b Delta / 16,
//
// with f_kpp = 1.309, b = 3.2, eps0 = eps1 = 1e-3, so that the front moves at the speed s
// with a width of a few zones Delta whatever s is. Hydro advects phi; the flame operator
// does, per step, Step 1 explicit reaction phi1 = phi + dt R(phi)/tau, Step 2 explicit
// diffusion phi2 = phi1 + dt kappa lap4(phi1) with the fourth-order five-point Laplacian
// (-f[-2] + 16 f[-1] - 30 f[0] + 16 f[1] - f[2]) / (12 Delta^2) on each active axis (plus
// the fourth-order (c/r) d phi/dr term in cylindrical (c = 1) and spherical (c = 2)
// radius), Step 3 clip to [0, 1].
//
// Stability of the explicit steps: the Laplacian's largest eigenvalue is 16/(3 Delta^2)
// per axis, so diffusion needs dt kappa 16 d / (3 Delta^2) <= 2, i.e. s dt / Delta <=
// 6 / (b d) (0.625 in 3-D); the reaction needs dt / tau <= 2 / f_kpp, i.e. s dt / Delta
// <= b / (2 f_kpp) = 1.22. A flame Courant number s dt / Delta <= 0.5 satisfies both in
// any dimension; accuracy wants less (front speed 0.997 s at 0.01, 0.980 s at 0.05).
#include <algorithm>

namespace tessera::flame {

/// Coefficients of the model (Flash-X defaults).
struct AdrModel {
  double f_kpp = 1.309;  ///< sKPP normalisation that makes the front move at s
  double b = 3.2;        ///< front width parameter (width ~ b Delta)
  double eps0 = 1e-3;    ///< sKPP: no reaction below phi = eps0 (a sharp leading edge)
  double eps1 = 1e-3;    ///< sKPP: the reaction ends at 1 + eps1 (reaches 1 in finite time)

  /// 1/tau of speed s (cm/s) at zone width delta (cm), 1/s.
  double inv_tau(double s, double delta) const { return 4.0 * s / (b * delta); }
  /// kappa of speed s at zone width delta, cm^2/s.
  double kappa(double s, double delta) const { return s * b * delta / 16.0; }
  /// R(phi) (dimensionless).
  double reaction(double phi) const { return f_kpp * (phi - eps0) * (1.0 + eps1 - phi); }
  /// Step 1 for one zone: phi + dt R(phi) / tau.
  double react(double phi, double s, double delta, double dt) const {
    return phi + dt * inv_tau(s, delta) * reaction(phi);
  }
};

/// The five-point fourth-order second derivative of f at 0 (f points at the centre,
/// stride between neighbours), times dx^2.
template <class Ptr>
inline double d2_5pt(Ptr f, long stride) {
  return (-f[-2 * stride] + 16.0 * f[-stride] - 30.0 * f[0] + 16.0 * f[stride] - f[2 * stride]) *
         (1.0 / 12.0);
}

/// The five-point fourth-order first derivative of f at 0, times dx.
template <class Ptr>
inline double d1_5pt(Ptr f, long stride) {
  return (f[-2 * stride] - 8.0 * f[-stride] + 8.0 * f[stride] - f[2 * stride]) * (1.0 / 12.0);
}

/// Step 3: phi clipped to [0, 1].
inline double clip01(double phi) {
  return std::clamp(phi, 0.0, 1.0);
}

}  // namespace tessera::flame

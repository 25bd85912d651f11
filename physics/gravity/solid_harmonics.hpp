#pragma once
// Regular and irregular solid harmonics by recursion in Cartesian coordinates (no
// trigonometric functions, no Legendre polynomials of cos(theta)), in the normalisation
// of Couch, Graziani & Flocke (2013, ApJ 778, 181, §2) that keeps the terms of the
// expansion of the inverse distance free of factorials:
//
//   R_lm(x) = r^l P_l^m(cos th) e^{i m ph} / (l+m)!,   I_lm(x) = (l-m)! P_l^m(cos th)
//   e^{i m ph} / r^(l+1)  (P_l^m without the Condon-Shortley sign), so that for r' < r
//
//   1 / |x - x'| = sum_l [ R_l0(x') I_l0(x) + 2 sum_{m=1..l} ( Rc_lm(x') Ic_lm(x)
//                                                              + Rs_lm(x') Is_lm(x) ) ]
//
// with c / s the real and imaginary parts. Recursions (from the three-term recurrence
// of the associated Legendre functions, times r^l/(l+m)! or (l-m)!/r^(l+1)):
//   R_00 = 1,       R_mm = (x + i y) / (2m) R_{m-1,m-1},
//   R_lm = [(2l-1) z R_{l-1,m} - r^2 R_{l-2,m}] / ((l-m)(l+m));
//   I_00 = 1 / r,   I_mm = (2m-1) (x + i y) / r^2 I_{m-1,m-1},
//   I_lm = [(2l-1) z I_{l-1,m} - (l+m-1)(l-m-1) I_{l-2,m}] / r^2.
// Both are stable upward in l. Overflow and underflow are kept away by the caller, which
// scales coordinates by a length of the order of the domain (multipole.hpp), so |x| <= 1
// for every mass and r^l, 1/r^(l+1) stay far inside the double range for l <= 40.
// Storage: index lm_index(l, m) = l (l+1) / 2 + m for 0 <= m <= l <= lmax; only m <= mmax
// is computed (mmax = 0: axisymmetric, the Legendre terms), the rest is left untouched.
#include <cmath>

namespace tessera::gravity {

/// Number of (l, m) pairs with 0 <= m <= l <= lmax.
constexpr int n_lm(int lmax) {
  return (lmax + 1) * (lmax + 2) / 2;
}
/// Index of (l, m) in the harmonic arrays.
constexpr int lm_index(int l, int m) {
  return l * (l + 1) / 2 + m;
}

/// Regular solid harmonics of (x, y, z) for l <= lmax, m <= min(l, mmax): real parts in
/// rc, imaginary parts in rs (arrays of n_lm(lmax)).
inline void regular_harmonics(double x, double y, double z, int lmax, int mmax, double* rc,
                              double* rs) {
  const double r2 = x * x + y * y + z * z;
  double cm = 1.0, sm = 0.0;  // R_mm
  for (int m = 0; m <= mmax && m <= lmax; ++m) {
    if (m > 0) {
      const double c = (x * cm - y * sm) / (2.0 * m), s = (x * sm + y * cm) / (2.0 * m);
      cm = c, sm = s;
    }
    int at = lm_index(m, m);
    rc[at] = cm, rs[at] = sm;
    if (m + 1 > lmax) continue;
    // l = m + 1: the recursion with R_{m-1,m} = 0.
    double c2 = cm, s2 = sm;          // R_{l-2,m}
    double c1 = z * cm, s1 = z * sm;  // R_{l-1,m}
    at = lm_index(m + 1, m);
    rc[at] = c1, rs[at] = s1;
    for (int l = m + 2; l <= lmax; ++l) {
      const double a = (2.0 * l - 1.0) * z, d = 1.0 / (double(l - m) * double(l + m));
      const double c = (a * c1 - r2 * c2) * d, s = (a * s1 - r2 * s2) * d;
      at = lm_index(l, m);
      rc[at] = c, rs[at] = s;
      c2 = c1, s2 = s1, c1 = c, s1 = s;
    }
  }
}

/// Irregular solid harmonics of (x, y, z) != 0 for l <= lmax, m <= min(l, mmax): real
/// parts in ic, imaginary parts in is.
inline void irregular_harmonics(double x, double y, double z, int lmax, int mmax, double* ic,
                                double* is) {
  const double r2 = x * x + y * y + z * z, ir2 = 1.0 / r2;
  double cm = std::sqrt(ir2), sm = 0.0;  // I_mm
  for (int m = 0; m <= mmax && m <= lmax; ++m) {
    if (m > 0) {
      const double f = (2.0 * m - 1.0) * ir2;
      const double c = f * (x * cm - y * sm), s = f * (x * sm + y * cm);
      cm = c, sm = s;
    }
    int at = lm_index(m, m);
    ic[at] = cm, is[at] = sm;
    if (m + 1 > lmax) continue;
    double c2 = cm, s2 = sm;
    const double a1 = (2.0 * m + 1.0) * z * ir2;
    double c1 = a1 * cm, s1 = a1 * sm;
    at = lm_index(m + 1, m);
    ic[at] = c1, is[at] = s1;
    for (int l = m + 2; l <= lmax; ++l) {
      const double a = (2.0 * l - 1.0) * z, b = double(l + m - 1) * double(l - m - 1);
      const double c = (a * c1 - b * c2) * ir2, s = (a * s1 - b * s2) * ir2;
      at = lm_index(l, m);
      ic[at] = c, is[at] = s;
      c2 = c1, s2 = s1, c1 = c, s1 = s;
    }
  }
}

}  // namespace tessera::gravity

#pragma once
// Truncated bivariate Taylor polynomials ("jets") of total degree 3, for the table
// generator: the electron-positron gas is evaluated as a function of its natural variables
// (a degeneracy variable and T), each quantity carried as the Taylor polynomial of all its
// partial derivatives to third order; the change of variables to (rho, T) is then series
// reversion and composition, exact to that order (Griewank & Walther 2008, "Evaluating
// Derivatives", 2nd ed., SIAM, ch. 13: univariate and multivariate Taylor arithmetic).
#include <array>
#include <cmath>

namespace tessera::eos::helmholtz::detail {

/// sum over a + b <= 3 of c[idx(a, b)] x^a y^b. Coefficients are Taylor coefficients
/// (the partial derivative divided by a! b!).
struct Jet {
  static constexpr int order = 3;
  static constexpr int size = 10;
  std::array<double, size> c{};

  /// Position of the x^a y^b coefficient: ordered by total degree, then by b.
  static constexpr int idx(int a, int b) { return (a + b) * (a + b + 1) / 2 + b; }
  /// The coefficient of x^a y^b.
  double operator()(int a, int b) const { return c[idx(a, b)]; }
  double& at(int a, int b) { return c[idx(a, b)]; }
  /// The partial derivative d^(a+b) / dx^a dy^b at the origin.
  double derivative(int a, int b) const {
    constexpr double fact[4] = {1.0, 1.0, 2.0, 6.0};
    return c[idx(a, b)] * fact[a] * fact[b];
  }

  /// The constant c0.
  static Jet constant(double c0) {
    Jet j;
    j.c[0] = c0;
    return j;
  }
  /// c0 + x.
  static Jet var_x(double c0 = 0.0) {
    Jet j;
    j.c[0] = c0;
    j.at(1, 0) = 1.0;
    return j;
  }
  /// c0 + y.
  static Jet var_y(double c0 = 0.0) {
    Jet j;
    j.c[0] = c0;
    j.at(0, 1) = 1.0;
    return j;
  }
  /// s0 + s1 y + s2 y^2 + s3 y^3.
  static Jet poly_y(double s0, double s1, double s2, double s3) {
    Jet j;
    j.c[0] = s0;
    j.at(0, 1) = s1;
    j.at(0, 2) = s2;
    j.at(0, 3) = s3;
    return j;
  }

  Jet& operator+=(const Jet& o) {
    for (int k = 0; k < size; ++k) c[k] += o.c[k];
    return *this;
  }
  Jet& operator-=(const Jet& o) {
    for (int k = 0; k < size; ++k) c[k] -= o.c[k];
    return *this;
  }
  Jet& operator*=(double s) {
    for (auto& v : c) v *= s;
    return *this;
  }
};

inline Jet operator+(Jet a, const Jet& b) {
  return a += b;
}
inline Jet operator-(Jet a, const Jet& b) {
  return a -= b;
}
inline Jet operator*(Jet a, double s) {
  return a *= s;
}
inline Jet operator*(double s, Jet a) {
  return a *= s;
}
inline Jet operator-(Jet a) {
  return a *= -1.0;
}

/// Truncated product.
inline Jet operator*(const Jet& p, const Jet& q) {
  Jet r;
  for (int a1 = 0; a1 <= 3; ++a1)
    for (int b1 = 0; a1 + b1 <= 3; ++b1) {
      const double pv = p(a1, b1);
      if (pv == 0.0) continue;
      for (int a2 = 0; a1 + b1 + a2 <= 3; ++a2)
        for (int b2 = 0; a1 + b1 + a2 + b2 <= 3; ++b2) r.at(a1 + a2, b1 + b2) += pv * q(a2, b2);
    }
  return r;
}

/// f(c0 + h) for f with Taylor coefficients d[k] = f^(k)(c0) / k!, h = j - c0.
inline Jet apply_series(const Jet& j, const double (&d)[4]) {
  Jet h = j;
  h.c[0] = 0.0;
  const Jet h2 = h * h;
  const Jet h3 = h2 * h;
  Jet r = h * d[1] + h2 * d[2] + h3 * d[3];
  r.c[0] += d[0];
  return r;
}

/// 1 / j (j's constant must be non-zero).
inline Jet reciprocal(const Jet& j) {
  const double c0 = j.c[0];
  const double i = 1.0 / c0;
  const double d[4] = {i, -i * i, i * i * i, -i * i * i * i};
  return apply_series(j, d);
}

/// j^alpha for a positive constant term.
inline Jet power(const Jet& j, double alpha) {
  const double c0 = j.c[0];
  const double p = std::pow(c0, alpha);
  const double d[4] = {p, alpha * p / c0, alpha * (alpha - 1.0) / 2.0 * p / (c0 * c0),
                       alpha * (alpha - 1.0) * (alpha - 2.0) / 6.0 * p / (c0 * c0 * c0)};
  return apply_series(j, d);
}

/// f(u, v) where f is a jet in its own variables (x, y) about the origin and u, v are jets
/// with zero constant terms: the composition, truncated at degree 3.
inline Jet compose(const Jet& f, const Jet& u, const Jet& v) {
  std::array<Jet, 4> up, vp;
  up[0] = Jet::constant(1.0);
  vp[0] = Jet::constant(1.0);
  for (int k = 1; k <= 3; ++k) {
    up[k] = up[k - 1] * u;
    vp[k] = vp[k - 1] * v;
  }
  Jet r;
  for (int a = 0; a <= 3; ++a)
    for (int b = 0; a + b <= 3; ++b) {
      const double fv = f(a, b);
      if (fv == 0.0) continue;
      r += (up[a] * vp[b]) * fv;
    }
  return r;
}

/// Series reversion in the first variable: given R(x, y) with R(0, 0) = 0 and
/// dR/dx(0, 0) != 0, the jet X(r, y) with X(0, 0) = 0 and R(X(r, y), y) = r.
inline Jet invert_x(const Jet& big_r) {
  const double a = big_r(1, 0);
  Jet rest = big_r;
  rest.c[0] = 0.0;
  rest.at(1, 0) = 0.0;  // R = a x + rest(x, y)
  const Jet r = Jet::var_x();
  const Jet y = Jet::var_y();
  Jet x = r * (1.0 / a);
  // Each pass fixes one more order: X = (r - rest(X, y)) / a.
  for (int pass = 0; pass < 3; ++pass) x = (r - compose(rest, x, y)) * (1.0 / a);
  return x;
}

}  // namespace tessera::eos::helmholtz::detail

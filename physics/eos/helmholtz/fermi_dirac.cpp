// Generalised Fermi-Dirac integrals by panel quadrature (see fermi_dirac.hpp for the
// references and the choice of panels).
#include "physics/eos/helmholtz/fermi_dirac.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tessera::eos::helmholtz::detail {

namespace {

constexpr int n_gl = 20;
constexpr int n_lag = 24;
constexpr double fermi_halfwidth = 40.0;  // Fermi region: edge -+ 40 (exp(-40) = 4e-18)
constexpr double fermi_panel = 4.0;       // widest panel in the Fermi region
constexpr double growth = 4.0;            // geometric panels grow by this factor

struct GaussLegendre {
  std::array<double, n_gl> x{}, w{};
  GaussLegendre() {
    // Newton on P_n in long double (Press et al. 2007, Numerical Recipes 3rd ed., §4.6).
    const long double pi_l = 3.141592653589793238462643383279502884L;
    for (int i = 0; i < n_gl; ++i) {
      long double z = std::cos(pi_l * (i + 0.75L) / (n_gl + 0.5L));
      long double pp = 0.0L;
      for (int it = 0; it < 100; ++it) {
        long double p1 = 1.0L, p2 = 0.0L;
        for (int j = 1; j <= n_gl; ++j) {
          const long double p3 = p2;
          p2 = p1;
          p1 = ((2.0L * j - 1.0L) * z * p2 - (j - 1.0L) * p3) / j;
        }
        pp = n_gl * (z * p1 - p2) / (z * z - 1.0L);
        const long double dz = p1 / pp;
        z -= dz;
        if (std::fabs(dz) < 1e-20L) break;
      }
      x[i] = static_cast<double>(-z);
      w[i] = static_cast<double>(2.0L / ((1.0L - z * z) * pp * pp));
    }
  }
};

struct GaussLaguerre {
  std::array<double, n_lag> x{}, w{};
  GaussLaguerre() {
    // Newton on L_n in long double with the asymptotic starting values of Numerical
    // Recipes §4.6; the stored weights are w_k exp(x_k).
    std::array<long double, n_lag> z_all{};
    long double z = 0.0L;
    for (int i = 0; i < n_lag; ++i) {
      if (i == 0) {
        z = 3.0L / (1.0L + 2.4L * n_lag);
      } else if (i == 1) {
        z += 15.0L / (1.0L + 2.5L * n_lag);
      } else {
        const long double ai = i - 1;
        z += ((1.0L + 2.55L * ai) / (1.9L * ai)) * (z - z_all[i - 2]);
      }
      long double pp = 0.0L, p2 = 0.0L;
      for (int it = 0; it < 200; ++it) {
        long double p1 = 1.0L;
        p2 = 0.0L;
        for (int j = 1; j <= n_lag; ++j) {
          const long double p3 = p2;
          p2 = p1;
          p1 = ((2.0L * j - 1.0L - z) * p2 - (j - 1.0L) * p3) / j;
        }
        pp = n_lag * (p1 - p2) / z;
        const long double dz = p1 / pp;
        z -= dz;
        if (std::fabs(dz) < 1e-19L * z) break;
      }
      z_all[i] = z;
      x[i] = static_cast<double>(z);
      w[i] = static_cast<double>(-1.0L / (pp * n_lag * p2) * std::exp(z));
    }
  }
};

const GaussLegendre& gl() {
  static const GaussLegendre rule;
  return rule;
}
const GaussLaguerre& lag() {
  static const GaussLaguerre rule;
  return rule;
}

/// Append the n_gl nodes of [a, b] in x.
void add_panel(double a, double b, std::array<QuadNode, max_quad_nodes>& out, std::size_t& k) {
  if (k + n_gl + n_lag > out.size()) throw std::length_error("fermi_dirac: too many panels");
  const auto& r = gl();
  const double half = 0.5 * (b - a), mid = 0.5 * (a + b);
  for (int i = 0; i < n_gl; ++i) out[k++] = {mid + half * r.x[i], half * r.w[i]};
}

/// Append the nodes of [0, x0] in t = sqrt(x): int f dx = int 2 t f(t^2) dt.
void add_sqrt_panel(double x0, std::array<QuadNode, max_quad_nodes>& out, std::size_t& k) {
  const auto& r = gl();
  const double t0 = std::sqrt(x0);
  const double half = 0.5 * t0;
  for (int i = 0; i < n_gl; ++i) {
    const double t = half + half * r.x[i];
    out[k++] = {t * t, half * r.w[i] * 2.0 * t};
  }
}

}  // namespace

const std::array<double, 20>& gauss_legendre_x() {
  return gl().x;
}
const std::array<double, 20>& gauss_legendre_w() {
  return gl().w;
}
const std::array<double, 24>& gauss_laguerre_x() {
  return lag().x;
}
const std::array<double, 24>& gauss_laguerre_w_exp() {
  return lag().w;
}

std::size_t build_quadrature(double edge, double beta, std::array<QuadNode, max_quad_nodes>& out) {
  std::size_t k = 0;
  const double lo = std::max(0.0, edge - fermi_halfwidth);
  const double hi = std::max(0.0, edge) + fermi_halfwidth;
  // Step 1: the panel at the origin, in sqrt(x); no wider than the distance 2/beta to the
  // branch point of (1 + beta x / 2)^(1/2).
  const double x0 = std::min({1.0, 2.0 / beta, hi});
  add_sqrt_panel(x0, out, k);
  // Steps 2 and 3: geometric growth up to lo, then panels of width <= 4 up to hi.
  double cur = x0;
  while (cur < hi) {
    double next;
    if (cur < lo) {
      next = std::min(growth * cur, lo);
    } else {
      next = std::min({growth * cur, cur + fermi_panel, hi});
    }
    add_panel(cur, next, out, k);
    cur = next;
  }
  // Step 4: the tail beyond hi.
  const auto& r = lag();
  for (int i = 0; i < n_lag; ++i) out[k++] = {hi + r.x[i], r.w[i]};
  return k;
}

void fermi_taylor(double y, double (&phi)[4], double& g) {
  // e = exp(-|y|) <= 1: f and g from the same e; g - f = tanh(y / 2) from expm1 near 0.
  const double ay = std::fabs(y);
  const double e = std::exp(-ay);
  const double em1 = ay < 0.5 ? std::expm1(-ay) : e - 1.0;  // e - 1, in (-1, 0]
  const double inv = 1.0 / (1.0 + e);
  double f, gmf;
  if (y >= 0.0) {
    f = e * inv;
    g = inv;
    gmf = -em1 * inv;
  } else {
    f = inv;
    g = e * inv;
    gmf = em1 * inv;
  }
  const double fg = f * g;
  phi[0] = f;
  phi[1] = -fg;                                // f'
  phi[2] = 0.5 * fg * gmf;                     // f'' / 2 = f g (g - f) / 2
  phi[3] = fg * (2.0 * fg - gmf * gmf) / 6.0;  // f''' / 6
}

void fd_integrals(double beta, double eta_minus, double eta_plus, bool pair_form, int level,
                  FdIntegrals& out) {
  out = FdIntegrals{};
  std::array<QuadNode, max_quad_nodes> nodes;
  // Electrons always carry the upper Fermi edge: eta+ = -eta- - 2/beta < eta- for n_net > 0.
  const std::size_t nn = build_quadrature(std::max(eta_minus, eta_plus), beta, nodes);
  for (std::size_t k = 0; k < nn; ++k) {
    const double x = nodes[k].x;
    const double w = nodes[k].w;
    const double sx = std::sqrt(x);
    const double s = std::sqrt(1.0 + 0.5 * beta * x);
    const double bx = 1.0 + beta * x;
    double pm[4], pp[4], gm, gp;
    fermi_taylor(x - eta_minus, pm, gm);
    fermi_taylor(x - eta_plus, pp, gp);
    if (level == 0) {
      const double wn = w * sx * bx * s;
      out.a[0][0][0][0] += wn * pm[0];
      out.a[0][0][0][1] += wn * pm[1];
      out.a[1][0][0][0] += wn * pp[0];
      out.a[1][0][0][1] += wn * pp[1];
      if (pair_form) out.q[0][0][0] += wn * gm * pp[0];
      continue;
    }
    // Taylor coefficients in beta of (1 + beta x / 2)^(1/2) and ^(3/2).
    const double is = 1.0 / s;
    const double d[4] = {s, 0.25 * x * is, -x * x * is * is * is / 32.0,
                         x * x * x * is * is * is * is * is / 128.0};
    const double e[4] = {s * s * s, 0.75 * x * s, 3.0 / 32.0 * x * x * is,
                         -x * x * x * is * is * is / 128.0};
    double wn[4], wp[4];
    wn[0] = w * sx * bx * d[0];
    for (int i = 1; i < 4; ++i) wn[i] = w * sx * (bx * d[i] + x * d[i - 1]);
    for (int i = 0; i < 4; ++i) wp[i] = w * x * sx * e[i];
    for (int i = 0; i < 4; ++i)
      for (int m = 0; i + m < 4; ++m) {
        out.a[0][0][i][m] += wn[i] * pm[m];
        out.a[0][1][i][m] += wp[i] * pm[m];
        out.a[1][0][i][m] += wn[i] * pp[m];
        out.a[1][1][i][m] += wp[i] * pp[m];
      }
    if (pair_form) {
      const double gcoef[4] = {gm, -pm[1], -pm[2], -pm[3]};  // Taylor coefficients of 1 - f
      for (int i = 0; i < 4; ++i)
        for (int p = 0; i + p < 4; ++p) {
          const double wg = wn[i] * gcoef[p];
          for (int r = 0; i + p + r < 4; ++r) out.q[i][p][r] += wg * pp[r];
        }
    }
  }
}

}  // namespace tessera::eos::helmholtz::detail

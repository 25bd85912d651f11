#pragma once
// Generalised Fermi-Dirac integrals with their derivatives, by quadrature, for the
// Helmholtz table generator (table_generator.cpp).
//
// References
//   Timmes, F. X. & Arnett, D. 1999, ApJS 125, 277: the electron-positron gas in terms of
//     F_k(eta, beta) = int_0^inf x^k (1 + beta x / 2)^(1/2) / (exp(x - eta) + 1) dx.
//   Aparicio, J. M. 1998, ApJS 117, 627 and Gong, Z., Zejda, L., Daeppen, W. & Aparicio,
//     J. M. 2001, Comput. Phys. Commun. 136, 294: splitting the range at the Fermi edge
//     x = eta, Gauss-Legendre on the pieces and Gauss-Laguerre on the tail.
//   Trefethen, L. N. 2008, SIAM Review 50, 67: Gauss quadrature converges like rho^(-2n)
//     with rho the Bernstein ellipse through the nearest singularity; this sets the panels.
//
// Panels. The integrands are x^(1/2) or x^(3/2) times (1 + beta x / 2)^(1/2 or 3/2) (branch
// points at x = 0 and x = -2 / beta) times Fermi factors (poles at x = eta +- i pi (2k+1)).
//   Step 1: [0, x0], x0 = min(1, 2 / beta), in t = sqrt(x), which removes the x^(1/2) branch.
//   Step 2: panels growing by 4x up to the Fermi region (each sees the branch points at
//     relative distance >= 5/3 of its half-width: rho >= 3, 20 nodes give ~1e-19).
//   Step 3: the Fermi region [eta - 40, eta + 40] in panels of width <= 4 (poles at distance
//     pi: rho >= 3.4, 20 nodes give ~1e-21). Beyond eta - 40 the Fermi factor differs from 1
//     by < 5e-18, so the step-2 panels see a smooth integrand.
//   Step 4: [eta + 40, inf) by 24-point Gauss-Laguerre (the integrand is ~exp(eta - x)).
// Derivatives with respect to eta and beta are integrated from the differentiated
// integrands (the Fermi factor's derivatives are polynomials in f and 1 - f, computed
// without cancellation), never by differencing.
#include <array>
#include <cstddef>

namespace tessera::eos::helmholtz::detail {

/// One quadrature node on [0, inf): abscissa x and weight w.
struct QuadNode {
  double x;
  double w;
};

/// Enough for the widest Fermi region and the longest geometric run (~900 used at most).
inline constexpr std::size_t max_quad_nodes = 1600;

/// Quadrature nodes on [0, inf) for integrands with a Fermi edge at x = edge and a factor
/// (1 + beta x / 2)^(1/2); returns how many were written to out.
std::size_t build_quadrature(double edge, double beta, std::array<QuadNode, max_quad_nodes>& out);

/// The Fermi function f(y) = 1 / (exp(y) + 1), its Taylor coefficients
/// phi[m] = f^(m)(y) / m! for m = 0..3, and g = 1 - f, without cancellation.
void fermi_taylor(double y, double (&phi)[4], double& g);

/// Integrals of the electron-positron gas at one (eta-, eta+, beta), from which the
/// generator builds n, P and their derivatives. The weights are
///   w_n(x, beta) = x^(1/2) (1 + beta x) (1 + beta x / 2)^(1/2)   [F_1/2 + beta F_3/2]
///   w_p(x, beta) = x^(3/2) (1 + beta x / 2)^(3/2)             [F_3/2 + beta/2 F_5/2]
/// and W_i(x) their Taylor coefficients in beta.
struct FdIntegrals {
  /// a[s][t][i][m] = int W_{t,i}(x) phi_m(x - eta_s) dx, species s (0 = e-, 1 = e+),
  /// weight t (0 = number, 1 = pressure), i + m <= 3.
  double a[2][2][4][4] = {};
  /// q[i][p][r] = int W_{n,i}(x) G_p(x - eta-) F_r(x - eta+) dx, i + p + r <= 3, with G the
  /// Taylor coefficients of g = 1 - f and F those of f: the pair-difference integrand
  /// f(a) - f(b) = expm1(b - a) g(a) f(b) without cancellation when eta- ~ eta+.
  double q[4][4][4] = {};
};

/// Integrate at (eta_minus, eta_plus, beta). level 0 fills only a[s][0][0][0..1] (and
/// q[0][0][0] if pair_form): what the eta solve needs. level 1 fills everything.
void fd_integrals(double beta, double eta_minus, double eta_plus, bool pair_form, int level,
                  FdIntegrals& out);

/// Gauss-Legendre nodes and weights on [-1, 1], n = 20.
const std::array<double, 20>& gauss_legendre_x();
const std::array<double, 20>& gauss_legendre_w();
/// Gauss-Laguerre nodes on [0, inf) and weights multiplied by exp(x): n = 24, so that
/// sum W_k f(x_k) ~ int_0^inf f(x) dx for f ~ exp(-x) * smooth.
const std::array<double, 24>& gauss_laguerre_x();
const std::array<double, 24>& gauss_laguerre_w_exp();

}  // namespace tessera::eos::helmholtz::detail

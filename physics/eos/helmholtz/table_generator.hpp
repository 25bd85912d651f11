#pragma once
// Generation of the Helmholtz free-energy table of the electron-positron gas from first
// principles, in the format of Timmes' helm_table.dat.
//
// References
//   Timmes, F. X. & Arnett, D. 1999, ApJS 125, 277: the electron-positron gas (arbitrary
//     degeneracy and relativity, pairs in equilibrium, charge neutrality n- - n+ = rho Y_e
//     N_A), positrons with eta+ = -eta - 2/beta carrying 2 m_e c^2 per pair.
//   Timmes, F. X. & Swesty, F. D. 2000, ApJS 126, 501: the table (free energy F(rho, T) of
//     the gas at Y_e = 1 per gram, with its derivatives for biquintic Hermite interpolation;
//     dP/drho, eta and n- for bicubic interpolation).
//   Cox, J. P. & Giuli, R. T. 1968, "Principles of Stellar Structure", ch. 24: the Fermi
//     gas thermodynamics; Sommerfeld expansion of the degenerate gas.
//   Landau, L. D. & Lifshitz, E. M. 1980, "Statistical Physics", §56-58: Sommerfeld
//     expansion, int phi f = int_0^mu phi + sum_j 2 (1 - 2^(1-2j)) zeta(2j) (kT)^2j
//     phi^(2j-1)(mu).
//
// Method. With x the kinetic energy / kT, beta = kT / (m_e c^2), psi = eta + 1/beta:
//   n- - n+ = C_n beta^(3/2) int w_n [f(x - eta-) - f(x - eta+)] dx,  C_n = 8 pi sqrt2 (m_e c/h)^3,
//   P       = C_p beta^(5/2) int w_p [f(x - eta-) + f(x - eta+)] dx,  C_p = 16 pi sqrt2/3 m_e c^2
//   (m_e c/h)^3, F       = -P / rho + k T N_A eta            (per gram at Y_e = 1, rest mass of the
//                                                electrons excluded, 2 m_e c^2 per pair),
// and F's derivatives follow from F_rho = P / rho^2, F_T = -s.
// Step 1 (regime): the T = 0 Fermi energy gives eta_F. eta_F > 50: Sommerfeld regime
//   (12 terms: the first omitted is < 1e-18 of the leading one, < 1e-15 of the thermal
//   part; the missing exp(-eta) terms are < 2e-22; positrons < exp(-100)). Else quadrature, with
//   the unknown psi when kT > m_e c^2 / 60 (pairs possible) and eta when colder.
// Step 2 (eta): safeguarded Newton on ln(n- - n+) = ln(rho N_A) to full precision. Where
//   pairs dominate (psi < 20), n- - n+ is integrated as expm1(2 psi) (1 - f(a)) f(b), which
//   has no cancellation even when n- - n+ is 1e-30 of n- + n+.
// Step 3 (jets): n- - n+, P and n+ as third-order Taylor polynomials in (X, T) with X the
//   unknown of step 2, from the integrals of fermi_dirac.hpp; P's X-derivatives from
//   Gibbs-Duhem, dP/dX = k T (n- - n+), so that they keep full precision in the pair regime.
// Step 4: reversion of rho(X, T) to X(rho, T) and composition (jet.hpp): F, P / rho^2, eta,
//   n+ as jets in (rho, T); every table column is one of their Taylor coefficients,
//   including F_rho rho T T = d^3 (P / rho^2) / d rho d T^2, and n- + n+ = rho N_A + 2 n+.
//   Nothing is differenced.
// Accuracy (measured by the unit tests: finite differences of neighbouring nodes, and the
//   two methods where both apply): F and its derivatives to ~1e-12 relative or better,
//   except that by quadrature at 10 < eta < 50 a degenerate gas's thermal derivatives lose
//   to cancellation ~eta^2 x 1e-16 (F_T, F_TT: <= 3e-13) and ~eta^4 x 1e-16 in the third
//   derivatives F_rho T T, F_rho rho T T (<= 1e-9).
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "physics/eos/helmholtz/constants.hpp"

namespace tessera::eos::helmholtz {

/// The 21 numbers the table holds for one (rho Y_e, T) node, each group in file order.
struct NodeRecord {
  /// F, F_d, F_t, F_dd, F_tt, F_dt, F_ddt, F_dtt, F_ddtt (erg/g and its derivatives).
  std::array<double, 9> f{};
  /// dP/drho, and its _d, _t, _dt derivatives.
  std::array<double, 4> dpdf{};
  /// eta (electron chemical potential without rest mass, / kT), _d, _t, _dt.
  std::array<double, 4> ef{};
  /// n- + n+ (electrons and positrons per cm^3, as Timmes' table), _d, _t, _dt.
  std::array<double, 4> xf{};
};

/// Which method computed a node (for tests and diagnostics).
enum class NodeRegime { sommerfeld, quadrature_hot, quadrature_cold };

/// The electron-positron gas at one node: the record plus the solved state.
struct NodeState {
  NodeRecord record;
  NodeRegime regime = NodeRegime::quadrature_cold;
  double eta = 0.0;       ///< electron degeneracy parameter
  double n_minus = 0.0;   ///< electrons per cm^3
  double n_plus = 0.0;    ///< positrons per cm^3
  double pressure = 0.0;  ///< erg / cm^3
  int newton_iterations = 0;
};

/// The gas at density rho (g/cm^3, Y_e = 1, so n- - n+ = rho N_A) and temperature temp (K).
/// Pure function of its arguments: the same bits for the same inputs, on any thread.
NodeState compute_node(double rho, double temp);
/// The same with the method forced (for tests: the methods agree where both apply).
NodeState compute_node(double rho, double temp, NodeRegime regime);

/// Nodes of `grid` in table order (temperature outer, density inner), computed on
/// `threads` threads (rows are shared out dynamically; the result does not depend on it).
/// `progress`, if set, is called with the number of rows done (from any thread).
std::vector<NodeRecord> generate_table(const Grid& grid, int threads,
                                       const std::function<void(int)>& progress = {});

/// The table as Timmes' ASCII helm_table.dat: four blocks of grid.imax * grid.jmax lines
/// (F and 8 derivatives; dP/drho; eta; n-, each with 3 derivatives), 17 significant digits.
std::string format_table(const std::vector<NodeRecord>& nodes);

}  // namespace tessera::eos::helmholtz

// Generation of the Helmholtz table (see table_generator.hpp for the method and sources).
#include "physics/eos/helmholtz/table_generator.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <optional>
#include <thread>

#include "physics/eos/helmholtz/fermi_dirac.hpp"
#include "physics/eos/helmholtz/jet.hpp"

namespace tessera::eos::helmholtz {

namespace {

using detail::Jet;

constexpr double mc2 = electron_rest_energy;
constexpr double kb = k_boltzmann;
/// (m_e c / h)^3, cm^-3.
const double mch3 = std::pow(electron_mass * c_light / h_planck, 3);
const double sqrt2 = std::sqrt(2.0);
/// n = C_n beta^(3/2) int w_n f;  P = C_p beta^(5/2) int w_p f.
const double c_n = 8.0 * pi * sqrt2 * mch3;
const double c_p = 16.0 * pi * sqrt2 / 3.0 * mc2 * mch3;
/// T = 0 electron gas: n = C_G (u^2 + 2u)^(3/2), u = kinetic Fermi energy / m_e c^2.
const double c_g = 8.0 * pi / 3.0 * mch3;

constexpr double sommerfeld_eta = 50.0;  // Sommerfeld regime above this eta_F
constexpr double hot_inv_beta = 60.0;    // psi as the unknown when 1/beta <= this
constexpr double pair_psi = 20.0;        // pair form of n- - n+ when psi < this

/// Sommerfeld coefficients 2 (1 - 2^(1-2j)) zeta(2j), j = 1..12.
constexpr int n_sommerfeld = 12;
const std::array<double, n_sommerfeld + 1>& sommerfeld_c() {
  static const std::array<double, n_sommerfeld + 1> c = [] {
    // zeta(2j) = (-1)^(j+1) B_2j (2 pi)^2j / (2 (2j)!), Bernoulli numbers B_2..B_24.
    const double bern[n_sommerfeld + 1] = {0.0,
                                           1.0 / 6.0,
                                           -1.0 / 30.0,
                                           1.0 / 42.0,
                                           -1.0 / 30.0,
                                           5.0 / 66.0,
                                           -691.0 / 2730.0,
                                           7.0 / 6.0,
                                           -3617.0 / 510.0,
                                           43867.0 / 798.0,
                                           -174611.0 / 330.0,
                                           854513.0 / 138.0,
                                           -236364091.0 / 2730.0};
    std::array<double, n_sommerfeld + 1> out{};
    double fact = 1.0;  // (2j)!
    for (int j = 1; j <= n_sommerfeld; ++j) {
      fact *= (2.0 * j - 1.0) * (2.0 * j);
      const double zeta = std::fabs(bern[j]) * std::pow(2.0 * pi, 2.0 * j) / (2.0 * fact);
      out[j] = 2.0 * (1.0 - std::pow(2.0, 1.0 - 2.0 * j)) * zeta;
    }
    return out;
  }();
  return c;
}

/// Taylor coefficients w[k], k = 0..kmax, of G(u0 + d) = (q0 + q1 d + d^2)^(3/2), by the
/// power-series recurrence w_k = sum_j ((3/2 + 1) j - k) q_j w_{k-j} / (k q0).
template <std::size_t N>
void g_series(double u0, std::array<double, N>& w) {
  const double q0 = u0 * (u0 + 2.0), q1 = 2.0 * u0 + 2.0, q2 = 1.0;
  w[0] = q0 * std::sqrt(q0);
  for (int k = 1; k < static_cast<int>(N); ++k) {
    double s = (2.5 * 1 - k) * q1 * w[k - 1];
    if (k >= 2) s += (2.5 * 2 - k) * q2 * w[k - 2];
    w[k] = s / (k * q0);
  }
}

/// H(u) = int_0^u (v^2 + 2v)^(3/2) dv by Gauss-Legendre in t = sqrt(v) on panels
/// [0, 1], [1, 2], [2, 4], ... (integrand 2 t^4 (t^2 + 2)^(3/2), singular at t = +-i sqrt2).
double h_integral(double u) {
  const auto& gx = detail::gauss_legendre_x();
  const auto& gw = detail::gauss_legendre_w();
  const double tmax = std::sqrt(u);
  double sum = 0.0, a = 0.0;
  while (a < tmax) {
    const double b = std::min(tmax, a == 0.0 ? 1.0 : 2.0 * a);
    const double half = 0.5 * (b - a), mid = 0.5 * (a + b);
    for (std::size_t i = 0; i < gx.size(); ++i) {
      const double t = mid + half * gx[i];
      const double t2 = t * t;
      const double r = t2 + 2.0;
      sum += half * gw[i] * 2.0 * t2 * t2 * r * std::sqrt(r);
    }
    a = b;
  }
  return sum;
}

/// Jets of the gas's natural description, about the solved state, in (X, tau) with
/// tau = dT / T0 relative: n- - n+, n+, P and eta; X is psi, eta or u.
struct NaturalJets {
  Jet n_net, n_plus, pres, eta;
  Jet kt_eta_na;  ///< k T eta N_A, each regime's best-conditioned form
};

/// The gas in the Sommerfeld regime, X = u (kinetic chemical potential / m_e c^2).
NaturalJets sommerfeld_jets(double n_target, double beta, double u_start, int& iterations) {
  const auto& cj = sommerfeld_c();
  constexpr int kmax = 2 * n_sommerfeld + 4;  // G^(2j + l)(u) for l <= 3
  std::array<double, kmax + 1> w{};
  std::array<double, kmax + 1> fact{};
  fact[0] = 1.0;
  for (int k = 1; k <= kmax; ++k) fact[k] = fact[k - 1] * k;
  const double b2 = beta * beta;
  // Newton on n(u) = C_G [G(u) + sum_j c_j beta^2j G^(2j)(u)].
  double u = u_start;
  for (iterations = 1; iterations <= 100; ++iterations) {
    g_series(u, w);
    double n = w[0], dn = w[1];
    double b2j = 1.0;
    for (int j = 1; j <= n_sommerfeld; ++j) {
      b2j *= b2;
      n += cj[j] * b2j * w[2 * j] * fact[2 * j];
      dn += cj[j] * b2j * w[2 * j + 1] * fact[2 * j + 1];
    }
    const double du = (n - n_target / c_g) / dn;
    u -= du;
    if (std::fabs(du) <= 1e-16 * u) break;
  }
  g_series(u, w);
  const double h0 = h_integral(u);
  NaturalJets out;
  // (beta (1 + tau))^2j as a jet in tau.
  Jet n_jet, p_jet;
  for (int l = 0; l <= 3; ++l) n_jet.at(l, 0) = w[l];
  p_jet.c[0] = h0;
  for (int l = 1; l <= 3; ++l) p_jet.at(l, 0) = w[l - 1] / l;
  double b2j = 1.0;
  for (int j = 1; j <= n_sommerfeld; ++j) {
    b2j *= b2;
    const double m = 2.0 * j;
    const Jet bt =
        Jet::poly_y(1.0, m, m * (m - 1.0) / 2.0, m * (m - 1.0) * (m - 2.0) / 6.0) * (cj[j] * b2j);
    Jet gn, gp;  // G^(2j)(u0 + X) and G^(2j-1)(u0 + X)
    for (int l = 0; l <= 3; ++l) {
      gn.at(l, 0) = w[2 * j + l] * fact[2 * j + l] / fact[l];
      gp.at(l, 0) = w[2 * j - 1 + l] * fact[2 * j - 1 + l] / fact[l];
    }
    n_jet += bt * gn;
    p_jet += bt * gp;
  }
  out.n_net = n_jet * c_g;
  out.n_net.c[0] = n_target;  // solved to rounding; the reversion needs R(0, 0) = 0
  out.pres = p_jet * (mc2 * c_g);
  // eta = u / beta = (u0 + X) / (beta0 (1 + tau)); k T eta N_A = m_e c^2 u N_A exactly
  // (as T eta its T-derivative would be a difference of nearly equal terms).
  out.eta = Jet::var_x(u) * detail::reciprocal(Jet::var_y(1.0)) * (1.0 / beta);
  out.kt_eta_na = Jet::var_x(u) * (mc2 * avogadro);
  return out;
}

/// Safeguarded Newton on r(X) = ln n_net(X) - ln n_target, which is increasing and concave
/// in X: from below, Newton is monotone; from above it overshoots, so there a positive X
/// (psi) takes the Newton step in ln X instead (monotone from above where r is convex in
/// ln X, exact where n_net ~ X), and a signed X (eta) falls back into the bracket.
/// Converged when |r| <= 4e-15 (the quadrature's own precision) or the step is below
/// 1e-15 of X (of max(1, |X|) for eta).
template <class Eval>
double solve_log_newton(Eval eval, double x, bool positive, int& iterations) {
  double lo = positive ? 0.0 : -HUGE_VAL, hi = HUGE_VAL;
  for (iterations = 1; iterations <= 100; ++iterations) {
    double dlog;  // d ln n / dX
    const double r = eval(x, dlog);
    if (std::fabs(r) <= 4e-15) break;
    if (r > 0.0) {
      hi = std::min(hi, x);
    } else {
      lo = std::max(lo, x);
    }
    double next = (positive && r > 0.0) ? x * std::exp(-r / (x * dlog)) : x - r / dlog;
    if (!(next >= lo && next <= hi)) {
      if (std::isfinite(hi) && std::isfinite(lo)) {
        next = (positive && lo > 0.0) ? std::sqrt(lo * hi) : 0.5 * (lo + hi);
      } else if (std::isfinite(hi)) {
        next = positive ? 1e-3 * hi : hi - std::max(1.0, std::fabs(hi));
      } else {
        next = positive ? 1e3 * std::max(lo, 1e-300) : lo + std::max(1.0, std::fabs(lo));
      }
    }
    const double step = next - x;
    x = next;
    const double scale = positive ? std::fabs(x) : std::max(1.0, std::fabs(x));
    if (std::fabs(step) <= 1e-15 * scale) break;
  }
  return x;
}

/// Species jets sum_{i,m} a[i][m] (beta0 tau)^i (-d eta_s)^m, i + m <= 3.
Jet species_jet(const double (&a)[4][4], double beta, const Jet& deta) {
  Jet f;
  double bi = 1.0;
  for (int i = 0; i < 4; ++i) {
    for (int m = 0; i + m < 4; ++m) f.at(i, m) = a[i][m] * bi;
    bi *= beta;
  }
  return detail::compose(f, Jet::var_y(), -deta);
}

/// eta- and eta+ from X (psi when hot, eta when cold).
void species_etas(bool hot, double x, double inv_beta, double& em, double& ep) {
  if (hot) {
    em = x - inv_beta;
    ep = -x - inv_beta;
  } else {
    em = x;
    ep = -x - 2.0 * inv_beta;
  }
}

/// Step 2: X such that n- - n+ = n_target (hot: X = psi, else X = eta).
double solve_quadrature(double n_target, double beta, bool hot, double guess, int& iterations) {
  const double ib = 1.0 / beta;
  const double cnb = c_n * beta * std::sqrt(beta);
  detail::FdIntegrals fd;
  // ln(n_net / n_target) and d ln n_net / dX from level-0 integrals.
  auto eval = [&](double x, double& dlog) {
    double em, ep;
    species_etas(hot, x, ib, em, ep);
    const bool pf = hot && x < pair_psi;
    detail::fd_integrals(beta, em, ep, pf, 0, fd);
    const double net =
        pf ? std::expm1(2.0 * x) * fd.q[0][0][0] : fd.a[0][0][0][0] - fd.a[1][0][0][0];
    const double dnet = -(fd.a[0][0][0][1] + fd.a[1][0][0][1]);  // both species add
    dlog = dnet / net;
    return std::log(cnb * net / n_target);
  };
  double start = guess;
  if (hot) {
    // Pairs: n_net ~ D0 sinh(psi) for nondegenerate pairs, D0 = dn_net/dpsi at psi = 0.
    detail::fd_integrals(beta, -ib, -ib, false, 0, fd);
    const double d0 = -cnb * (fd.a[0][0][0][1] + fd.a[1][0][0][1]);
    start = std::max(std::asinh(n_target / d0), guess);
  }
  return solve_log_newton(eval, start, hot, iterations);
}

/// Step 3 by quadrature at the solved X0.
NaturalJets quadrature_jets(double n_target, double temp, double beta, bool hot, double x0) {
  const double ib = 1.0 / beta;
  const double cnb = c_n * beta * std::sqrt(beta);
  detail::FdIntegrals fd;
  double em, ep;
  species_etas(hot, x0, ib, em, ep);
  const bool pf = hot && x0 < pair_psi;
  detail::fd_integrals(beta, em, ep, pf, 1, fd);

  // d eta_s as jets in (X, tau): 1/beta = (1/beta0)(1 - tau + tau^2 - tau^3).
  const Jet dinv = Jet::poly_y(0.0, -ib, ib, -ib);  // d(1/beta)
  Jet dem, dep;
  if (hot) {
    dem = Jet::var_x() - dinv;
    dep = -Jet::var_x() - dinv;
  } else {
    dem = Jet::var_x();
    dep = -Jet::var_x() - 2.0 * dinv;
  }
  const Jet tau = Jet::var_y(1.0);
  const Jet pref_n = detail::power(tau, 1.5) * cnb;
  const Jet pref_p = detail::power(tau, 2.5) * (c_p * beta * beta * std::sqrt(beta));
  const Jet nm = pref_n * species_jet(fd.a[0][0], beta, dem);
  const Jet np = pref_n * species_jet(fd.a[1][0], beta, dep);
  const Jet pm = pref_p * species_jet(fd.a[0][1], beta, dem);
  const Jet pp = pref_p * species_jet(fd.a[1][1], beta, dep);

  NaturalJets out;
  out.n_plus = np;
  if (pf) {
    // n- - n+ = pref_n expm1(2 psi) sum q[i][p][r] (beta0 tau)^i (dc - X)^p (dc + X)^r
    // with dc = d(1/beta): a = x - eta- moves by dc - X, b = x - eta+ by dc + X.
    const Jet u = dinv - Jet::var_x();
    const Jet v = dinv + Jet::var_x();
    const Jet bt = Jet::var_y() * beta;
    std::array<Jet, 4> bp, upow, vpow;
    bp[0] = upow[0] = vpow[0] = Jet::constant(1.0);
    for (int k = 1; k < 4; ++k) {
      bp[k] = bp[k - 1] * bt;
      upow[k] = upow[k - 1] * u;
      vpow[k] = vpow[k - 1] * v;
    }
    Jet core;
    for (int i = 0; i < 4; ++i)
      for (int p = 0; i + p < 4; ++p)
        for (int r = 0; i + p + r < 4; ++r) core += (bp[i] * upow[p] * vpow[r]) * fd.q[i][p][r];
    const double e2 = std::exp(2.0 * x0);
    Jet ex;
    ex.c[0] = std::expm1(2.0 * x0);
    ex.at(1, 0) = 2.0 * e2;
    ex.at(2, 0) = 2.0 * e2;
    ex.at(3, 0) = 4.0 / 3.0 * e2;
    out.n_net = pref_n * ex * core;
  } else {
    out.n_net = nm - np;
  }
  // P: the pure-tau coefficients from the species (a sum, no cancellation); the rest from
  // Gibbs-Duhem dP/dX = k T (n- - n+), exact for both choices of X.
  const Jet sum = pm + pp;
  const Jet dpdx = out.n_net * (Jet::var_y(1.0) * (kb * temp));  // k T0 (1 + tau) n_net
  Jet pres;
  for (int b = 0; b <= 3; ++b) pres.at(0, b) = sum(0, b);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; a + 1 + b <= 3; ++b) pres.at(a + 1, b) = dpdx(a, b) / (a + 1);
  out.pres = pres;
  out.n_net.c[0] = n_target;
  // eta jet.
  const Jet kt = Jet::var_y(1.0) * (kb * temp);
  if (hot) {
    out.eta = Jet::var_x(x0) - Jet::poly_y(ib, -ib, ib, -ib);
    out.eta.c[0] = x0 - ib;
    out.kt_eta_na = (kt * Jet::var_x(x0) - Jet::constant(mc2)) * avogadro;  // kT psi - m c^2
  } else {
    out.eta = Jet::var_x(x0);
    out.kt_eta_na = kt * Jet::var_x(x0) * avogadro;
  }
  return out;
}

/// Steps 1-4; `forced` overrides the choice of method.
NodeState compute_node_impl(double rho, double temp, std::optional<NodeRegime> forced) {
  NodeState st;
  const double beta = kb * temp / mc2;
  const double n_target = rho * avogadro;
  // Step 1: the T = 0 Fermi momentum x_F = p_F / m_e c and kinetic energy u_F.
  const double xf = std::cbrt(n_target / c_g);
  const double uf = xf * xf / (std::sqrt(1.0 + xf * xf) + 1.0);
  const double eta_f = uf / beta;
  NaturalJets nj;
  int iterations = 0;
  NodeRegime regime;
  if (forced) {
    regime = *forced;
  } else if (eta_f > sommerfeld_eta) {
    regime = NodeRegime::sommerfeld;
  } else {
    regime = 1.0 / beta <= hot_inv_beta ? NodeRegime::quadrature_hot : NodeRegime::quadrature_cold;
  }
  if (regime == NodeRegime::sommerfeld) {
    nj = sommerfeld_jets(n_target, beta, uf, iterations);
  } else {
    // Starting guess: the larger of the Boltzmann and the degenerate eta.
    const double nq = c_n * beta * std::sqrt(beta) * std::sqrt(pi) / 2.0;
    const double eta_guess = std::max(std::log(n_target / nq), eta_f);
    bool hot = regime == NodeRegime::quadrature_hot;
    double x0 =
        solve_quadrature(n_target, beta, hot, hot ? eta_f + 1.0 / beta : eta_guess, iterations);
    if (hot && !forced && x0 >= pair_psi) {
      // Pairs are negligible (n+ / n- < exp(-40)): eta is the better-conditioned variable
      // (with psi, T-derivatives at fixed psi are 1/beta times larger and cancel).
      int more = 0;
      regime = NodeRegime::quadrature_cold;
      hot = false;
      x0 = solve_quadrature(n_target, beta, false, x0 - 1.0 / beta, more);
      iterations += more;
    }
    nj = quadrature_jets(n_target, temp, beta, hot, x0);
  }
  st.regime = regime;
  st.newton_iterations = iterations;

  // Step 4: X(r, tau) with rho = rho0 (1 + r), then everything in (r, tau).
  Jet big_r = nj.n_net * (1.0 / n_target);
  big_r.c[0] = 0.0;
  const Jet x_of = detail::invert_x(big_r);
  const Jet tau = Jet::var_y();
  const Jet pres = detail::compose(nj.pres, x_of, tau);
  const Jet eta = detail::compose(nj.eta, x_of, tau);
  const Jet mu = detail::compose(nj.kt_eta_na, x_of, tau);
  // n- + n+ = rho N_A + 2 n+: exact in its density part, and n+'s derivatives carry no
  // cancellation against the much larger n-.
  const Jet nsum = Jet::var_x(1.0) * n_target + 2.0 * detail::compose(nj.n_plus, x_of, tau);
  const Jet rho_j = Jet::var_x(1.0) * rho;
  const Jet inv_rho = detail::reciprocal(rho_j);
  const Jet fd = pres * (inv_rho * inv_rho);  // F_rho = P / rho^2
  const Jet f = mu - pres * inv_rho;          // F = -P/rho + kT N_A eta

  const double ir = 1.0 / rho, it = 1.0 / temp;
  NodeRecord& r = st.record;
  r.f = {f.c[0],
         fd.c[0],
         f.derivative(0, 1) * it,
         fd.derivative(1, 0) * ir,
         f.derivative(0, 2) * it * it,
         fd.derivative(0, 1) * it,
         fd.derivative(1, 1) * ir * it,
         fd.derivative(0, 2) * it * it,
         fd.derivative(1, 2) * ir * it * it};
  r.dpdf = {pres.derivative(1, 0) * ir, pres.derivative(2, 0) * ir * ir,
            pres.derivative(1, 1) * ir * it, pres.derivative(2, 1) * ir * ir * it};
  r.ef = {eta.c[0], eta.derivative(1, 0) * ir, eta.derivative(0, 1) * it,
          eta.derivative(1, 1) * ir * it};
  r.xf = {nsum.c[0], nsum.derivative(1, 0) * ir, nsum.derivative(0, 1) * it,
          nsum.derivative(1, 1) * ir * it};
  st.eta = eta.c[0];
  st.n_plus = nj.n_plus.c[0];
  st.n_minus = n_target + st.n_plus;
  st.pressure = pres.c[0];
  return st;
}

}  // namespace

NodeState compute_node(double rho, double temp) {
  return compute_node_impl(rho, temp, {});
}

NodeState compute_node(double rho, double temp, NodeRegime regime) {
  return compute_node_impl(rho, temp, regime);
}

std::vector<NodeRecord> generate_table(const Grid& grid, int threads,
                                       const std::function<void(int)>& progress) {
  std::vector<NodeRecord> out(static_cast<std::size_t>(grid.imax) * grid.jmax);
  std::atomic<int> next_row{0}, rows_done{0};
  auto worker = [&] {
    for (;;) {
      const int j = next_row.fetch_add(1);
      if (j >= grid.jmax) return;
      const double temp = grid.temp_node(j);
      for (int i = 0; i < grid.imax; ++i) {
        const double rho = grid.dens_node(i);
        out[static_cast<std::size_t>(j) * grid.imax + i] = compute_node(rho, temp).record;
      }
      const int done = rows_done.fetch_add(1) + 1;
      if (progress) progress(done);
    }
  };
  threads = std::max(1, threads);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  return out;
}

namespace {

/// Append v as Fortran's 1pe25.16 would print it (17 significant digits, 'E', at least
/// two exponent digits), right-aligned in 25 characters.
void append_number(std::string& s, double v) {
  char buf[40];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, 16);
  std::size_t len = static_cast<std::size_t>(res.ptr - buf);
  for (std::size_t k = 0; k < len; ++k)
    if (buf[k] == 'e') buf[k] = 'E';
  if (len < 25) s.append(25 - len, ' ');
  s.append(buf, len);
}

}  // namespace

std::string format_table(const std::vector<NodeRecord>& nodes) {
  std::string s;
  s.reserve(nodes.size() * (9 + 12) * 25 + nodes.size() * 4);
  for (const auto& n : nodes) {
    for (double v : n.f) append_number(s, v);
    s += '\n';
  }
  for (const auto& n : nodes) {
    for (double v : n.dpdf) append_number(s, v);
    s += '\n';
  }
  for (const auto& n : nodes) {
    for (double v : n.ef) append_number(s, v);
    s += '\n';
  }
  for (const auto& n : nodes) {
    for (double v : n.xf) append_number(s, v);
    s += '\n';
  }
  return s;
}

}  // namespace tessera::eos::helmholtz

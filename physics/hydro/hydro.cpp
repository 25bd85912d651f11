// Unsplit hydrodynamics on one block at a time. References:
//   Toro, "Riemann Solvers and Numerical Methods for Fluid Dynamics", 3rd ed. (2009),
//     §14.4 (MUSCL-Hancock), §10.4 (HLLC), §10.3 (HLLE);
//   Colella, J. Comput. Phys. 87 (1990) 171 (unsplit primitive-variable predictor);
//   Colella & Woodward, J. Comput. Phys. 54 (1984) 174 (PPM);
//   Shu & Osher, J. Comput. Phys. 77 (1988) 439 (SSP Runge-Kutta).
#include "physics/hydro/hydro.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/flux_register.hpp"
#include "perf/timers.hpp"
#include "physics/hydro/reconstruct.hpp"
#include "physics/hydro/riemann.hpp"

namespace tessera::hydro {

struct Hydro::Scratch {
  std::vector<double> w;     // primitives [5][N]: rho, vx, vy, vz, p
  std::vector<double> dw;    // slopes [3][5][N]
  std::vector<double> wh;    // Hancock half-step primitives [5][N]
  std::vector<double> frow;  // fluxes along one row [5][n0+1]
  std::size_t n = 0;
  void resize(std::size_t cells, int n0) {
    if (n == cells) return;
    n = cells;
    w.assign(5 * cells, 0.0);
    dw.assign(15 * cells, 0.0);
    wh.assign(5 * cells, 0.0);
    frow.assign(5 * (n0 + 1), 0.0);
  }
};

void Hydro::declare_params(base::Params& p) {
  p.declare_string("hydro.reconstruction", "plm", {"plm", "ppm"}, "spatial reconstruction");
  p.declare_string("hydro.limiter", "mc", {"minmod", "van_leer", "mc"}, "PLM slope limiter");
  p.declare_string("hydro.riemann", "hllc", {"hllc", "hlle"}, "Riemann solver");
  p.declare_string("hydro.integrator", "auto", {"auto", "hancock", "rk2", "rk3"},
                   "time integration (auto: hancock for plm, rk3 for ppm)");
  p.declare_real("hydro.cfl", 0.8, 0.01, 1.0,
                 "Courant number: dt = cfl / max(sum over axes of (|u|+c)/dx)");
  p.declare_real("hydro.gamma", 1.4, 1.0001, 10.0, "adiabatic index of the gamma-law gas");
  p.declare_real("hydro.mu", 1.0, 1e-6, 1e6, "mean molecular weight (for temperature)");
  p.declare_real("hydro.smallp", 1e-30, 0.0, 1e300, "pressure floor for reconstructed states");
  p.declare_real("hydro.smalld", 1e-30, 0.0, 1e300, "density floor for reconstructed states");
}

Hydro::Hydro(const base::Params& p)
    : eos_(p.get_real("hydro.gamma"), p.get_real("hydro.mu")), scratch_(new Scratch) {
  opt_.recon = p.get_string("hydro.reconstruction") == "ppm" ? Recon::ppm : Recon::plm;
  const auto& lim = p.get_string("hydro.limiter");
  opt_.limiter = lim == "minmod" ? 0 : (lim == "van_leer" ? 1 : 2);
  opt_.riemann = p.get_string("hydro.riemann") == "hlle" ? Riemann::hlle : Riemann::hllc;
  const auto& integ = p.get_string("hydro.integrator");
  if (integ == "auto")
    opt_.integrator = opt_.recon == Recon::ppm ? Integrator::rk3 : Integrator::hancock;
  else
    opt_.integrator = integ == "hancock" ? Integrator::hancock
                                         : (integ == "rk2" ? Integrator::rk2 : Integrator::rk3);
  if (opt_.integrator == Integrator::hancock && opt_.recon == Recon::ppm)
    throw Error(
        "hydro.integrator = \"hancock\" needs hydro.reconstruction = \"plm\" (use rk2 or rk3 with "
        "ppm)");
  opt_.cfl = p.get_real("hydro.cfl");
  opt_.gamma = p.get_real("hydro.gamma");
  opt_.mu = p.get_real("hydro.mu");
  opt_.smallp = p.get_real("hydro.smallp");
  opt_.smalld = p.get_real("hydro.smalld");
}

Hydro::~Hydro() = default;

int Hydro::stages() const {
  switch (opt_.integrator) {
    case Integrator::hancock:
      return 1;
    case Integrator::rk2:
      return 2;
    default:
      return 3;
  }
}

std::vector<mesh::VarInfo> Hydro::variables() {
  return {{"dens", -1}, {"momx", 0}, {"momy", 1}, {"momz", 2}, {"etot", -1}};
}

const std::vector<std::string>& Hydro::derived_names() {
  static const std::vector<std::string> names{"velx", "vely", "velz", "pres", "ener",
                                              "eint", "temp", "gamc", "game"};
  return names;
}

double Hydro::max_dt(mesh::Mesh& m) const {
  const auto& s = m.shape();
  const int nd = s.ndim;
  const double g = opt_.gamma;
  double rate = 0.0;  // max over zones of sum_a (|u_a| + c) / dx_a
  for (int id : m.local_leaves()) {
    const auto bg = m.geom(id);
    auto u = m.view(id);
    const double idx[3] = {1.0 / bg.dx[0], nd > 1 ? 1.0 / bg.dx[1] : 0.0,
                           nd > 2 ? 1.0 / bg.dx[2] : 0.0};
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
        const double* d = u.row(DENS, j, k);
        const double* mx = u.row(MOMX, j, k);
        const double* my = u.row(MOMY, j, k);
        const double* mz = u.row(MOMZ, j, k);
        const double* e = u.row(ETOT, j, k);
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const double r = 1.0 / d[i];
          const double vx = mx[i] * r, vy = my[i] * r, vz = mz[i] * r;
          const double p = std::max((g - 1.0) * (e[i] - 0.5 * d[i] * (vx * vx + vy * vy + vz * vz)),
                                    opt_.smallp);
          const double c = std::sqrt(g * p * r);
          const double q = (std::fabs(vx) + c) * idx[0] + (std::fabs(vy) + c) * idx[1] +
                           (std::fabs(vz) + c) * idx[2];
          rate = std::max(rate, q);
        }
      }
  }
  return rate > 0.0 ? opt_.cfl / rate : std::numeric_limits<double>::max();
}

namespace {

template <Limiter L>
void slopes(const double* w, double* dw, std::size_t N, std::size_t st, int n0, int n1, int n2,
            int axis) {
  // Slopes on every cell that has both neighbours along `axis`.
  const int lo[3] = {axis == 0 ? 1 : 0, axis == 1 ? 1 : 0, axis == 2 ? 1 : 0};
  const int hi[3] = {axis == 0 ? n0 - 1 : n0, axis == 1 ? n1 - 1 : n1, axis == 2 ? n2 - 1 : n2};
  for (int v = 0; v < 5; ++v) {
    const double* q = w + v * N;
    double* s = dw + v * N;
    for (int k = lo[2]; k < hi[2]; ++k)
      for (int j = lo[1]; j < hi[1]; ++j) {
        const std::size_t base = (std::size_t(k) * n1 + j) * n0;
        for (int i = lo[0]; i < hi[0]; ++i) {
          const std::size_t c = base + i;
          s[c] = limited_slope<L>(q[c - st], q[c], q[c + st]);
        }
      }
  }
}

}  // namespace

void Hydro::block_update(mesh::Mesh& m, int node, double dt, bool predictor) {
  const auto& s = m.shape();
  const int nd = s.ndim, ng = s.ng, nx = s.nx;
  const int n0 = s.n(0), n1 = s.n(1), n2 = s.n(2);
  const std::size_t N = s.cells();
  Scratch& S = *scratch_;
  S.resize(N, n0);
  auto u = m.view(node);
  const auto bg = m.geom(node);
  const double g = opt_.gamma, gm1 = g - 1.0, igm1 = 1.0 / gm1;
  const double smallp = opt_.smallp, smalld = opt_.smalld;
  double* W = S.w.data();

  // Step 1: primitives everywhere (guards included).
  {
    const double* d = &u(DENS, 0, 0, 0);
    const double* mx = &u(MOMX, 0, 0, 0);
    const double* my = &u(MOMY, 0, 0, 0);
    const double* mz = &u(MOMZ, 0, 0, 0);
    const double* e = &u(ETOT, 0, 0, 0);
    double* wr = W;
    double* wx = W + N;
    double* wy = W + 2 * N;
    double* wz = W + 3 * N;
    double* wp = W + 4 * N;
    for (std::size_t c = 0; c < N; ++c) {
      const double r = std::max(d[c], smalld);
      const double ir = 1.0 / r;
      const double vx = mx[c] * ir, vy = my[c] * ir, vz = mz[c] * ir;
      wr[c] = r;
      wx[c] = vx;
      wy[c] = vy;
      wz[c] = vz;
      wp[c] = std::max(gm1 * (e[c] - 0.5 * r * (vx * vx + vy * vy + vz * vz)), smallp);
    }
  }
  const std::size_t stride[3] = {1, std::size_t(n0), std::size_t(n0) * n1};

  // Step 2: limited slopes along each axis (PLM).
  if (opt_.recon == Recon::plm) {
    TESSERA_REGION("slopes");
    for (int a = 0; a < nd; ++a) {
      double* dw = S.dw.data() + std::size_t(a) * 5 * N;
      switch (opt_.limiter) {
        case 0:
          slopes<Limiter::minmod>(W, dw, N, stride[a], n0, n1, n2, a);
          break;
        case 1:
          slopes<Limiter::van_leer>(W, dw, N, stride[a], n0, n1, n2, a);
          break;
        default:
          slopes<Limiter::mc>(W, dw, N, stride[a], n0, n1, n2, a);
          break;
      }
    }
  }

  // Step 3: MUSCL-Hancock predictor, W^{n+1/2} = W - dt/2 sum_a A_a(W) dW_a/dx_a.
  const double* base = W;
  if (predictor) {
    TESSERA_REGION("predictor");
    double* H = S.wh.data();
    const int lo[3] = {1, nd > 1 ? 1 : 0, nd > 2 ? 1 : 0};
    const int hi[3] = {n0 - 1, nd > 1 ? n1 - 1 : 1, nd > 2 ? n2 - 1 : 1};
    for (int k = lo[2]; k < hi[2]; ++k)
      for (int j = lo[1]; j < hi[1]; ++j) {
        const std::size_t b0 = (std::size_t(k) * n1 + j) * n0;
        for (int i = lo[0]; i < hi[0]; ++i) {
          const std::size_t c = b0 + i;
          const double r = W[c], vx = W[N + c], vy = W[2 * N + c], vz = W[3 * N + c],
                       p = W[4 * N + c];
          const double v[3] = {vx, vy, vz};
          double hr = 0, hx = 0, hy = 0, hz = 0, hp = 0;
          for (int a = 0; a < nd; ++a) {
            const double* dw = S.dw.data() + std::size_t(a) * 5 * N;
            const double f = 0.5 * dt / bg.dx[a];
            const double dr = dw[c], dx_ = dw[N + c], dy = dw[2 * N + c], dz = dw[3 * N + c],
                         dp = dw[4 * N + c];
            const double dn = a == 0 ? dx_ : (a == 1 ? dy : dz);
            hr += f * (v[a] * dr + r * dn);
            hx += f * (v[a] * dx_ + (a == 0 ? dp / r : 0.0));
            hy += f * (v[a] * dy + (a == 1 ? dp / r : 0.0));
            hz += f * (v[a] * dz + (a == 2 ? dp / r : 0.0));
            hp += f * (v[a] * dp + g * p * dn);
          }
          H[c] = r - hr;
          H[N + c] = vx - hx;
          H[2 * N + c] = vy - hy;
          H[3 * N + c] = vz - hz;
          H[4 * N + c] = p - hp;
        }
      }
    base = H;
  }

  // Step 4: per axis, face states, Riemann fluxes, conservative update.
  auto* fr = &m.flux_register();
  const int slot = m.slot(node);
  const bool use_hllc = opt_.riemann == Riemann::hllc;
  const bool ppm = opt_.recon == Recon::ppm;
  for (int a = 0; a < nd; ++a) {
    TESSERA_REGION("riemann");
    const std::size_t st = stride[a];
    const double* dw = S.dw.data() + std::size_t(a) * 5 * N;
    const double c_dt = dt / bg.dx[a];
    const int vn = 1 + a, vt1 = a == 0 ? 2 : 1, vt2 = a == 2 ? 2 : 3;
    // Faces between cells m-1 and m along a; a row runs along x (the face index along x
    // for a = 0, the cell index along x otherwise) so the inner loop has unit stride.
    const int rlo = a == 0 ? ng : ng, rhi = a == 0 ? ng + nx + 1 : ng + nx;
    const int nrow = rhi - rlo;
    // Outer loops: over the two other coordinates (face index along a included).
    const int flo1 = ng, fhi1 = nd > 1 ? (a == 1 ? ng + nx + 1 : ng + nx) : 1;
    const int flo2 = nd > 2 ? ng : 0, fhi2 = nd > 2 ? (a == 2 ? ng + nx + 1 : ng + nx) : 1;
    const int jlo = nd > 1 ? flo1 : 0;
    double* F = S.frow.data();
    const std::size_t FN = std::size_t(n0) + 1;
    for (int k = flo2; k < fhi2; ++k)
      for (int j = jlo; j < fhi1; ++j) {
        const std::size_t rowbase = (std::size_t(k) * n1 + j) * n0;
        // Face states: L from cell cL = cR - st, R from cell cR (PLM: half-step state
        // plus/minus half the slope; PPM: parabola edge values).
        auto riemann_row = [&](auto ppm_tag, auto hllc_tag) {
          constexpr bool kPPM = decltype(ppm_tag)::value;
          constexpr bool kHLLC = decltype(hllc_tag)::value;
          const double* Wv[5] = {W, W + N, W + 2 * N, W + 3 * N, W + 4 * N};
          const double* Bv[5] = {base, base + N, base + 2 * N, base + 3 * N, base + 4 * N};
          const double* Dv[5] = {dw, dw + N, dw + 2 * N, dw + 3 * N, dw + 4 * N};
          double* Fd = F;
          double* Fn = F + vn * FN;
          double* Ft1 = F + vt1 * FN;
          double* Ft2 = F + vt2 * FN;
          double* Fe = F + 4 * FN;
#pragma GCC ivdep
          for (int t = 0; t < nrow; ++t) {
            const std::size_t cR = rowbase + rlo + t, cL = cR - st;
            double l[5], r[5];
            for (int v = 0; v < 5; ++v) {
              if constexpr (kPPM) {
                const double* q = Wv[v];
                double tmp;
                ppm_faces(q[cL - 2 * st], q[cL - st], q[cL], q[cR], q[cR + st], tmp, l[v]);
                ppm_faces(q[cL - st], q[cL], q[cR], q[cR + st], q[cR + 2 * st], r[v], tmp);
              } else {
                l[v] = Bv[v][cL] + 0.5 * Dv[v][cL];
                r[v] = Bv[v][cR] - 0.5 * Dv[v][cR];
              }
            }
            // Positivity fallback: first order on a side whose state is unphysical.
            const bool okl = l[0] > smalld && l[4] > smallp;
            const bool okr = r[0] > smalld && r[4] > smallp;
            for (int v = 0; v < 5; ++v) {
              l[v] = okl ? l[v] : Wv[v][cL];
              r[v] = okr ? r[v] : Wv[v][cR];
            }
            const FaceState L{
                l[0], l[vn], l[vt1], l[vt2], l[4], l[4] * igm1, std::sqrt(g * l[4] / l[0])};
            const FaceState R{
                r[0], r[vn], r[vt1], r[vt2], r[4], r[4] * igm1, std::sqrt(g * r[4] / r[0])};
            const Flux f = kHLLC ? hllc(L, R) : hlle(L, R);
            Fd[t] = f.d;
            Fn[t] = f.mn;
            Ft1[t] = f.mt1;
            Ft2[t] = f.mt2;
            Fe[t] = f.e;
          }
        };
        if (ppm) {
          if (use_hllc)
            riemann_row(std::true_type{}, std::true_type{});
          else
            riemann_row(std::true_type{}, std::false_type{});
        } else {
          if (use_hllc)
            riemann_row(std::false_type{}, std::true_type{});
          else
            riemann_row(std::false_type{}, std::false_type{});
        }
        // Conservative update and the boundary fluxes for flux correction.
        if (a == 0) {
          for (int v = 0; v < 5; ++v) {
            double* q = u.row(v, j, k);
            const double* Fv = F + v * FN;
            for (int t = 0; t < nx; ++t) q[ng + t] += c_dt * (Fv[t] - Fv[t + 1]);
            const std::size_t fo = std::size_t(v) * (fr->face_size() / 5) +
                                   std::size_t(nd > 2 ? k - ng : 0) * (nd > 1 ? nx : 1) +
                                   (nd > 1 ? j - ng : 0);
            fr->face(slot, 0)[fo] = Fv[0];
            fr->face(slot, 1)[fo] = Fv[nx];
          }
        } else {
          const int m_ = a == 1 ? j : k;  // face index along a
          const int jl = a == 1 ? j - 1 : j, kl = a == 2 ? k - 1 : k;
          for (int v = 0; v < 5; ++v) {
            const double* Fv = F + v * FN;
            if (m_ > ng) {
              double* q = u.row(v, jl, kl) + ng;
              for (int t = 0; t < nx; ++t) q[t] -= c_dt * Fv[t];
            }
            if (m_ < ng + nx) {
              double* q = u.row(v, j, k) + ng;
              for (int t = 0; t < nx; ++t) q[t] += c_dt * Fv[t];
            }
            if (m_ == ng || m_ == ng + nx) {
              const int other = a == 1 ? (nd > 2 ? k - ng : 0) : j - ng;  // t2 index
              double* out = fr->face(slot, 2 * a + (m_ == ng ? 0 : 1)) +
                            std::size_t(v) * (fr->face_size() / 5) + std::size_t(other) * nx;
              for (int t = 0; t < nx; ++t) out[t] = Fv[t];
            }
          }
        }
      }
  }
}

void Hydro::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("hydro");
  const auto& s = m.shape();
  const std::size_t per = s.doubles();
  if (opt_.integrator == Integrator::hancock) {
    m.fill_guards();
    for (int id : m.local_leaves()) block_update(m, id, dt, true);
    m.flux_register().correct(m.storage(), m.tree(), m.comm(), dt);
    return;
  }
  // SSP Runge-Kutta: U^(s) = a_s U^n + b_s (U^(s-1) + dt L(U^(s-1))).
  static const double rk2[2][2] = {{0.0, 1.0}, {0.5, 0.5}};
  static const double rk3[3][2] = {{0.0, 1.0}, {0.75, 0.25}, {1.0 / 3.0, 2.0 / 3.0}};
  const int ns = stages();
  const auto& leaves = m.local_leaves();
  u0_.resize(leaves.size() * per);
  for (std::size_t b = 0; b < leaves.size(); ++b) {
    const double* src = m.storage().data(m.slot(leaves[b]));
    std::copy(src, src + per, u0_.data() + b * per);
  }
  for (int st = 0; st < ns; ++st) {
    const double a = ns == 2 ? rk2[st][0] : rk3[st][0];
    const double b = ns == 2 ? rk2[st][1] : rk3[st][1];
    m.fill_guards();
    for (int id : leaves) block_update(m, id, dt, false);
    m.flux_register().correct(m.storage(), m.tree(), m.comm(), dt);
    if (st == 0) continue;
    for (std::size_t bl = 0; bl < leaves.size(); ++bl) {
      double* q = m.storage().data(m.slot(leaves[bl]));
      const double* q0 = u0_.data() + bl * per;
      for (std::size_t c = 0; c < per; ++c) q[c] = a * q0[c] + b * q[c];
    }
  }
}

BadZone Hydro::check(mesh::Mesh& m) const {
  const auto& s = m.shape();
  const double gm1 = opt_.gamma - 1.0;
  for (int id : m.local_leaves()) {
    auto u = m.view(id);
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const double d = u(DENS, i, j, k);
          if (!(d > 0.0)) return {id, i - s.g(0), j - s.g(1), k - s.g(2), d, "density"};
          const double ke =
              0.5 *
              (u(MOMX, i, j, k) * u(MOMX, i, j, k) + u(MOMY, i, j, k) * u(MOMY, i, j, k) +
               u(MOMZ, i, j, k) * u(MOMZ, i, j, k)) /
              d;
          const double p = gm1 * (u(ETOT, i, j, k) - ke);
          if (!std::isfinite(p) || !std::isfinite(u(ETOT, i, j, k)))
            return {id, i - s.g(0), j - s.g(1), k - s.g(2), p, "pressure"};
        }
  }
  return {};
}

bool Hydro::derived(const std::string& name, const mesh::BlockView<>& u, const mesh::BlockShape& s,
                    double* out, bool with_guards) const {
  const auto& names = derived_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return false;
  enum Which { velx, vely, velz, pres, ener, eint, temp, gamc, game };
  const auto which = static_cast<Which>(it - names.begin());
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = with_guards ? 0 : s.g(a);
    hi[a] = with_guards ? s.n(a) : s.g(a) + s.ni(a);
  }
  std::size_t c = 0;
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j)
      for (int i = lo[0]; i < hi[0]; ++i, ++c) {
        eos::State st{};
        st.dens = u(DENS, i, j, k);
        const double v[3] = {u(MOMX, i, j, k) / st.dens, u(MOMY, i, j, k) / st.dens,
                             u(MOMZ, i, j, k) / st.dens};
        const double e = u(ETOT, i, j, k) / st.dens;
        st.eint = e - 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        switch (which) {
          case velx:
          case vely:
          case velz:
            out[c] = v[which - velx];
            break;
          case ener:
            out[c] = e;
            break;
          case eint:
            out[c] = st.eint;
            break;
          case gamc:
          case game:
            out[c] = opt_.gamma;
            break;
          case pres:
          case temp:
            eos_.apply(eos::Mode::dens_ei, &st, 1);
            out[c] = which == pres ? st.pres : st.temp;
            break;
        }
      }
  return true;
}

}  // namespace tessera::hydro

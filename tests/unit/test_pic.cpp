// Specifications for the PIC kernels (physics/pic/): the Yee solver, the Boris push, the
// Esirkepov deposit, the gathers, the loading, the species table, the vacuum pulse and
// Mur's absorbing boundary, each alone and together in a periodic 1-, 2- or 3-D PIC loop. Bounds
// are those of verification.md §G (and WarpX's CI bars).
//
// The harness is mesh-free but does what the mesh integration will do: one block array
// per field component with guard zones, guards filled by periodic copies before the
// field updates and the gather, and guard deposits of J and rho folded back (summed into
// the interior cells they wrap to, then zeroed).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <map>
#include <vector>

#include "physics/pic/absorbing.hpp"
#include "physics/pic/boris.hpp"
#include "physics/pic/constants.hpp"
#include "physics/pic/esirkepov.hpp"
#include "physics/pic/fields.hpp"
#include "physics/pic/gather.hpp"
#include "physics/pic/pulse.hpp"
#include "physics/pic/shape.hpp"
#include "physics/pic/species.hpp"
#include "physics/pic/yee.hpp"

namespace {

namespace pic = tessera::pic;
namespace cst = tessera::pic::constants;
using pic::Vec3;

// Component numbers in the harness.
enum Comp { EX, EY, EZ, BX, BY, BZ, JX, JY, JZ, RHO, NCOMP };

/// A periodic box of n cells per active axis held in one block array with g guard zones,
/// the interior starting at x = 0.
template <int D>
struct Periodic {
  std::array<int, 3> n{1, 1, 1}, gw{0, 0, 0}, ext{1, 1, 1};
  pic::Grid grid;
  pic::Box box;
  std::vector<double> c[NCOMP];

  Periodic(std::array<int, 3> cells, std::array<double, 3> dx, int g) {
    for (int a = 0; a < 3; ++a) {
      const bool on = a < D;
      n[a] = on ? cells[a] : 1;
      gw[a] = on ? g : 0;
      ext[a] = n[a] + 2 * gw[a];
      grid.dx[a] = dx[a];
      grid.x0[a] = on ? -g * dx[a] : 0.0;
      box.lo[a] = gw[a];
      box.hi[a] = gw[a] + n[a];
    }
    for (auto& v : c) v.assign(std::size_t(ext[0]) * ext[1] * ext[2], 0.0);
  }
  double length(int a) const { return n[a] * grid.dx[a]; }
  /// Domain cell numbering of this one-block domain (array index g is cell 0).
  pic::CellNumbering numbering() const { return {{-gw[0], -gw[1], -gw[2]}, {n[0], n[1], n[2]}}; }
  std::size_t at(int i, int j, int k) const {
    return i + std::size_t(ext[0]) * (j + std::size_t(ext[1]) * k);
  }
  double& operator()(int q, int i, int j, int k) { return c[q][at(i, j, k)]; }
  pic::Field f(int q) {
    return pic::Field{c[q].data(), 1, ext[0], std::ptrdiff_t(ext[0]) * ext[1]};
  }
  pic::EMFields em() { return {f(EX), f(EY), f(EZ), f(BX), f(BY), f(BZ)}; }
  pic::Currents cur() { return {f(JX), f(JY), f(JZ)}; }
  /// The interior index an array index wraps to.
  int wrap(int i, int a) const { return gw[a] + (((i - gw[a]) % n[a]) + n[a]) % n[a]; }
  template <class F>
  void for_all(F&& fn) const {
    for (int k = 0; k < ext[2]; ++k)
      for (int j = 0; j < ext[1]; ++j)
        for (int i = 0; i < ext[0]; ++i) fn(i, j, k);
  }
  bool guard(int i, int j, int k) const {
    return i < box.lo[0] || i >= box.hi[0] || j < box.lo[1] || j >= box.hi[1] || k < box.lo[2] ||
           k >= box.hi[2];
  }
  /// Guard fill: every guard cell gets the interior value it is periodic with.
  void fill(int q) {
    for_all([&](int i, int j, int k) {
      if (guard(i, j, k)) (*this)(q, i, j, k) = (*this)(q, wrap(i, 0), wrap(j, 1), wrap(k, 2));
    });
  }
  /// Guard fold: every guard deposit is added to the interior cell it wraps to, then zeroed.
  void fold(int q) {
    for_all([&](int i, int j, int k) {
      if (!guard(i, j, k)) return;
      (*this)(q, wrap(i, 0), wrap(j, 1), wrap(k, 2)) += (*this)(q, i, j, k);
      (*this)(q, i, j, k) = 0.0;
    });
  }
  void zero(int q) { std::fill(c[q].begin(), c[q].end(), 0.0); }
  /// Positions wrapped into [0, L) along active axes.
  void wrap_position(Vec3& x) const {
    for (int a = 0; a < D; ++a) {
      const double L = length(a);
      if (x[a] >= L) x[a] -= L;
      if (x[a] < 0) x[a] += L;
    }
  }
  template <class F>
  void for_interior(F&& fn) const {
    for (int k = box.lo[2]; k < box.hi[2]; ++k)
      for (int j = box.lo[1]; j < box.hi[1]; ++j)
        for (int i = box.lo[0]; i < box.hi[0]; ++i) fn(i, j, k);
  }
  double max_abs(int q) const {
    double m = 0;
    for_interior([&](int i, int j, int k) { m = std::max(m, std::abs(c[q][at(i, j, k)])); });
    return m;
  }
  /// Discrete div of the edge field (EX, EY, EZ or JX, JY, JZ from q0) at node (i, j, k):
  /// backward differences along active axes, as the Yee lattice defines it.
  double div(int q0, int i, int j, int k) {
    double d = ((*this)(q0, i, j, k) - (*this)(q0, i - 1, j, k)) / grid.dx[0];
    if (D > 1) d += ((*this)(q0 + 1, i, j, k) - (*this)(q0 + 1, i, j - 1, k)) / grid.dx[1];
    if (D > 2) d += ((*this)(q0 + 2, i, j, k) - (*this)(q0 + 2, i, j, k - 1)) / grid.dx[2];
    return d;
  }
  /// The field step around a deposited J: B half step, E full step, B half step.
  void advance_fields(double dt) {
    for (int q : {EX, EY, EZ}) fill(q);
    pic::yee::advance_b<D>(em(), box, grid, 0.5 * dt);
    for (int q : {BX, BY, BZ}) fill(q);
    pic::yee::advance_e<D>(em(), cur(), box, grid, dt);
    for (int q : {EX, EY, EZ}) fill(q);
    pic::yee::advance_b<D>(em(), box, grid, 0.5 * dt);
  }
  /// Field energy (J per unit inactive length/area): sum of eps0 E^2/2 + B^2/(2 mu0).
  double field_energy() const {
    double e = 0, b = 0;
    for_interior([&](int i, int j, int k) {
      const std::size_t p = at(i, j, k);
      e += c[EX][p] * c[EX][p] + c[EY][p] * c[EY][p] + c[EZ][p] * c[EZ][p];
      b += c[BX][p] * c[BX][p] + c[BY][p] * c[BY][p] + c[BZ][p] * c[BZ][p];
    });
    return (0.5 * cst::eps0 * e + 0.5 / cst::mu0 * b) * grid.volume();
  }
  /// E with discrete div E = rho_net / eps0 (rho_net = RHO minus its mean, a neutralising
  /// background), B = 0: each axis takes what the previous ones' averages leave, so every
  /// line integral closes periodically.
  void solve_gauss() {
    double mean = 0;
    for_interior([&](int i, int j, int k) { mean += (*this)(RHO, i, j, k); });
    mean /= double(n[0]) * n[1] * n[2];
    std::vector<double> r(c[RHO].size(), 0.0), ax(c[RHO].size(), 0.0);
    for_interior(
        [&](int i, int j, int k) { r[at(i, j, k)] = ((*this)(RHO, i, j, k) - mean) / cst::eps0; });
    for (int a = 0; a < D; ++a) {
      // ax = mean of r along axis a (broadcast); E_a integrates r - ax along a.
      std::fill(ax.begin(), ax.end(), 0.0);
      for_interior([&](int i, int j, int k) {
        int idx[3] = {i, j, k};
        idx[a] = box.lo[a];
        ax[at(idx[0], idx[1], idx[2])] += r[at(i, j, k)] / n[a];
      });
      for_interior([&](int i, int j, int k) {
        int idx[3] = {i, j, k};
        if (idx[a] != box.lo[a]) return;
        double run = 0;
        for (int m = 0; m < n[a]; ++m) {
          idx[a] = box.lo[a] + m;
          const std::size_t p = at(idx[0], idx[1], idx[2]);
          run += grid.dx[a] * (r[p] - ax[at(i, j, k)]);
          c[EX + a][p] = run;
        }
        for (int m = 0; m < n[a]; ++m) {
          idx[a] = box.lo[a] + m;
          r[at(idx[0], idx[1], idx[2])] = ax[at(i, j, k)];
        }
      });
    }
    for (int q : {EX, EY, EZ, BX, BY, BZ}) fill(q);
  }
};

struct Particle {
  Vec3 x, u;
};

struct Species {
  double q, m, w;  // charge (C), mass (kg), weight
  std::vector<Particle> p;
  double kinetic() const {
    double k = 0;
    for (const auto& s : p) k += (pic::lorentz_gamma(s.u) - 1.0) * m * cst::c * cst::c;
    return k * w;
  }
};

/// One PIC step: gather E^n, B^n, push u, move x, deposit J^{n+1/2}, fold J, advance E, B.
template <int D, int P, pic::GatherScheme S = pic::GatherScheme::energy_conserving>
void pic_step(Periodic<D>& h, std::vector<Species>& sp, double dt) {
  for (int q : {EX, EY, EZ, BX, BY, BZ}) h.fill(q);
  for (int q : {JX, JY, JZ}) h.zero(q);
  const pic::EMFields f = h.em();
  const pic::Currents J = h.cur();
  for (auto& s : sp) {
    const double qm = s.q / s.m, qw = s.q * s.w;
    for (auto& pt : s.p) {
      Vec3 E, B;
      pic::gather<D, P, S>(f, h.grid, pt.x, E, B);
      pic::boris_push(pt.u, E, B, qm, dt);
      const Vec3 x_old = pt.x;
      pic::push_position(pt.x, pt.u, dt);
      const double ig = 1.0 / pic::lorentz_gamma(pt.u);
      pic::deposit_current<D, P>(J, h.grid, x_old, pt.x, {pt.u[0] * ig, pt.u[1] * ig, pt.u[2] * ig},
                                 qw, dt);
      h.wrap_position(pt.x);
    }
  }
  for (int q : {JX, JY, JZ}) h.fold(q);
  h.advance_fields(dt);
}

template <int D, int P>
void deposit_all_rho(Periodic<D>& h, const std::vector<Species>& sp) {
  h.zero(RHO);
  for (const auto& s : sp)
    for (const auto& pt : s.p) pic::deposit_rho<D, P>(h.f(RHO), h.grid, pt.x, s.q * s.w);
  h.fold(RHO);
}

// ---------------------------------------------------------------------------------------
// Shapes

// Given a position s, the B-spline weights of orders 1-3 sum to 1 and have first moment s
// (s - 1/2 for the staggered variant): the charge and dipole the deposit relies on.
template <int P>
void check_shape_moments() {
  for (double s : {3.0, 3.25, 3.5, 3.999, 4.5 - 1e-12, 7.123}) {
    const pic::Shape<P> node = pic::shape<P>(s), stag = pic::shape_staggered<P>(s);
    double wn = 0, mn = 0, ws = 0, ms = 0;
    for (int i = 0; i <= P; ++i) {
      wn += node.w[i], mn += node.w[i] * (node.first + i);
      ws += stag.w[i], ms += stag.w[i] * (stag.first + i);
      EXPECT_GE(node.w[i], 0.0);
    }
    EXPECT_NEAR(wn, 1.0, 1e-14) << "P=" << P << " s=" << s;
    EXPECT_NEAR(ws, 1.0, 1e-14) << "P=" << P << " s=" << s;
    EXPECT_NEAR(mn, s, 1e-13) << "P=" << P << " s=" << s;
    EXPECT_NEAR(ms, s - 0.5, 1e-13) << "P=" << P << " s=" << s;
  }
}

TEST(PicShape, BSplinesOfOrders1To3AreCentredPartitionsOfUnity) {
  check_shape_moments<1>();
  check_shape_moments<2>();
  check_shape_moments<3>();
  // Order 0 (the energy-conserving gather's staggered shape at P = 1) is the nearest point.
  EXPECT_EQ(pic::shape<0>(3.49).first, 3);
  EXPECT_EQ(pic::shape<0>(3.51).first, 4);
  EXPECT_EQ(pic::shape_staggered<0>(3.99).first, 3);
  // The shapes are continuous where the first index jumps (the B-spline is C^{P-1}).
  const auto a = pic::shape<2>(4.5 - 1e-13), b = pic::shape<2>(4.5);
  EXPECT_NEAR(a.w[1], b.w[0], 1e-12);
  EXPECT_NEAR(a.w[2], b.w[1], 1e-12);
}

// ---------------------------------------------------------------------------------------
// Field views

// Given a block's unk in either layout, field_of(view, v) addresses the same doubles as
// BlockView's u(v, i, j, k) at every index, guards included: the kernels can run on the
// mesh's storage directly.
template <tessera::mesh::Layout L>
void check_field_of() {
  tessera::mesh::BlockShape s;
  s.ndim = 3, s.nx = 4, s.ng = 3, s.nvar = 5;
  std::vector<double> unk(s.doubles());
  const tessera::mesh::BlockView<L> u(unk.data(), s);
  for (std::size_t c = 0; c < unk.size(); ++c) unk[c] = double(c);
  for (int v = 0; v < s.nvar; ++v) {
    const pic::Field f = pic::field_of(u, v);
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) ASSERT_EQ(&f(i, j, k), &u(v, i, j, k));
  }
}

TEST(PicFields, FieldOfAddressesTheBlockViewInBothLayouts) {
  check_field_of<tessera::mesh::Layout::var_major>();
  check_field_of<tessera::mesh::Layout::zone_major>();
}

// ---------------------------------------------------------------------------------------
// Yee solver

/// Phase advance per step of the k-mode of Ez in a vacuum plane wave (k in the x-y plane,
/// E along z) against the Yee dispersion relation; returns {measured, predicted} omega.
template <int D>
std::array<double, 2> plane_wave_omega(std::array<int, 3> cells, std::array<double, 3> dx,
                                       std::array<int, 3> modes, double courant, int steps) {
  Periodic<D> h(cells, dx, 2);
  Vec3 k{0, 0, 0};
  for (int a = 0; a < D; ++a) k[a] = 2 * cst::pi * modes[a] / h.length(a);
  const double dt = courant * pic::yee::max_dt<D>(h.grid);
  const double w = pic::yee::dispersion_omega<D>(k, h.grid, dt);
  // The discrete eigenmode: B = (k~ x E) / w~ with k~_a = 2 sin(k_a dx_a/2)/dx_a and
  // w~ = 2 sin(w dt/2)/dt, set at t = -dt/2 and brought to t = 0 by a B half step.
  double kt[2] = {0, 0};
  for (int a = 0; a < D && a < 2; ++a) kt[a] = 2 * std::sin(0.5 * k[a] * dx[a]) / dx[a];
  const double wt = 2 * std::sin(0.5 * w * dt) / dt;
  auto phase = [&](double xi, double yj, double t) { return k[0] * xi + k[1] * yj - w * t; };
  const double dy = D > 1 ? dx[1] : 0.0;
  h.for_interior([&](int i, int j, int kk) {
    const double xi = (i - h.gw[0]) * dx[0], yj = D > 1 ? (j - h.gw[1]) * dx[1] : 0.0;
    h(EZ, i, j, kk) = std::sin(phase(xi, yj, 0));
    h(BX, i, j, kk) = kt[1] / wt * std::sin(phase(xi, yj + 0.5 * dy, -0.5 * dt));
    h(BY, i, j, kk) = -kt[0] / wt * std::sin(phase(xi + 0.5 * dx[0], yj, -0.5 * dt));
  });
  for (int q : {EZ, BX, BY}) h.fill(q);
  pic::yee::advance_b<D>(h.em(), h.box, h.grid, 0.5 * dt);
  auto project = [&] {
    std::complex<double> z = 0;
    h.for_interior([&](int i, int j, int kk) {
      const double xi = (i - h.gw[0]) * dx[0], yj = D > 1 ? (j - h.gw[1]) * dx[1] : 0.0;
      z += h(EZ, i, j, kk) * std::polar(1.0, -(k[0] * xi + k[1] * yj));
    });
    return z;
  };
  std::complex<double> z0 = project();
  double turned = 0;  // unwrapped phase change
  for (int n = 0; n < steps; ++n) {
    h.advance_fields(dt);
    const std::complex<double> z1 = project();
    turned += std::arg(z1 * std::conj(z0));
    z0 = z1;
  }
  return {-turned / (steps * dt), w};
}

// Given a vacuum plane wave with 8 cells per wavelength at Courant number 0.7, when the Yee
// solver advances it 200 steps, then its phase velocity is the discrete dispersion
// relation's to 1e-4 (verification.md §G) -- and differs from c by far more than that, so
// the test resolves the lattice's dispersion, not just the continuum's.
TEST(PicYee, VacuumPlaneWaveIn1DFollowsTheDiscreteDispersionRelation) {
  const auto [measured, predicted] =
      plane_wave_omega<1>({64, 1, 1}, {1e-6, 1, 1}, {8, 0, 0}, 0.7, 200);
  const double k = 2 * cst::pi * 8 / 64e-6;
  std::printf("[ 1-D: w/w_yee - 1 = %.2e, w_yee/(c k) - 1 = %.2e ]\n", measured / predicted - 1,
              predicted / (cst::c * k) - 1);
  EXPECT_LT(std::abs(measured / predicted - 1), 1e-4);
  EXPECT_GT(std::abs(predicted / (cst::c * k) - 1), 1e-2);
}

// The same in 2-D for an oblique wave (modes 3 and 2 on a 32 x 24 grid of unequal cells).
TEST(PicYee, ObliquePlaneWaveIn2DFollowsTheDiscreteDispersionRelation) {
  const auto [measured, predicted] =
      plane_wave_omega<2>({32, 24, 1}, {1e-6, 1.3e-6, 1}, {3, 2, 0}, 0.9, 200);
  EXPECT_LT(std::abs(measured / predicted - 1), 1e-4);
  const double kx = 2 * cst::pi * 3 / 32e-6, ky = 2 * cst::pi * 2 / (24 * 1.3e-6);
  std::printf("[ 2-D: w/w_yee - 1 = %.2e, w_yee/(c k) - 1 = %.2e ]\n", measured / predicted - 1,
              predicted / (cst::c * std::hypot(kx, ky)) - 1);
  EXPECT_GT(std::abs(predicted / (cst::c * std::hypot(kx, ky)) - 1), 1e-3);
}

// The CFL bound is (sum 1/dx_a^2)^(-1/2)/c over active axes only, and at it the dispersion
// relation reaches sin(w dt/2) = 1 for the grid Nyquist wave along the diagonal.
TEST(PicYee, CflBoundIsReachedByTheDiagonalNyquistWave) {
  pic::Grid g;
  g.dx = {1e-6, 2e-6, 3e-6};
  EXPECT_DOUBLE_EQ(pic::yee::max_dt<1>(g), 1e-6 / cst::c);
  EXPECT_NEAR(pic::yee::max_dt<3>(g) * cst::c, 1.0 / std::sqrt(1e12 + 1e12 / 4 + 1e12 / 9), 1e-20);
  const double dt = pic::yee::max_dt<3>(g);
  const Vec3 k{cst::pi / g.dx[0], cst::pi / g.dx[1], cst::pi / g.dx[2]};
  EXPECT_NEAR(pic::yee::dispersion_omega<3>(k, g, dt) * dt, cst::pi, 1e-6);
}

// ---------------------------------------------------------------------------------------
// Esirkepov deposition

/// Residual of the continuity equation for random particles each moving less than a cell
/// in a random direction: max |(rho1 - rho0)/dt + div J| / (max |rho| / dt).
template <int D, int P>
double continuity_residual() {
  Periodic<D> h({8, 8, 8}, {1e-6, 0.7e-6, 1.2e-6}, 4);
  const double dt = 1e-15, qw = -cst::q_e * 1e8;
  std::vector<double> rho0(h.c[RHO].size());
  for (int q : {JX, JY, JZ, RHO}) h.zero(q);
  std::uint64_t tag = 0;
  std::vector<std::array<Vec3, 2>> moves;
  for (int p = 0; p < 40; ++p, ++tag) {
    Vec3 x0{0, 0, 0}, x1{0, 0, 0};
    for (int a = 0; a < 3; ++a) {
      x0[a] = pic::uniform01(7, tag, a) * h.length(a);
      const double step = (2 * pic::uniform01(7, tag, 3 + a) - 1) * 0.999 * h.grid.dx[a];
      x1[a] = x0[a] + step;
    }
    moves.push_back({x0, x1});
  }
  for (const auto& m : moves) pic::deposit_rho<D, P>(h.f(RHO), h.grid, m[0], qw);
  h.fold(RHO);
  rho0 = h.c[RHO];
  h.zero(RHO);
  for (const auto& m : moves) {
    pic::deposit_rho<D, P>(h.f(RHO), h.grid, m[1], qw);
    Vec3 v;
    for (int a = 0; a < 3; ++a) v[a] = (m[1][a] - m[0][a]) / dt;
    pic::deposit_current<D, P>(h.cur(), h.grid, m[0], m[1], v, qw, dt);
  }
  for (int q : {JX, JY, JZ, RHO}) h.fold(q);
  for (int q : {JX, JY, JZ}) h.fill(q);
  double res = 0, rmax = 0;
  h.for_interior([&](int i, int j, int k) {
    const std::size_t p = h.at(i, j, k);
    res = std::max(res, std::abs((h.c[RHO][p] - rho0[p]) / dt + h.div(JX, i, j, k)));
    rmax = std::max({rmax, std::abs(h.c[RHO][p]), std::abs(rho0[p])});
  });
  EXPECT_GT(rmax, 0.0);
  return res / (rmax / dt);
}

// Given random particles moving less than a cell in random directions, when rho is
// deposited before and after and J by Esirkepov's scheme, then the discrete continuity
// equation holds to 1e-11 of max|rho|/dt (round-off; verification.md §G), for shape
// orders 1-3 in 1-, 2- and 3-D (inactive axes carry v-based currents that no divergence
// sees, so they must not spoil it either).
TEST(PicEsirkepov, DepositConservesChargeToRoundOffForOrders1To3In1D2D3D) {
  const double r[3][3] = {
      {continuity_residual<1, 1>(), continuity_residual<1, 2>(), continuity_residual<1, 3>()},
      {continuity_residual<2, 1>(), continuity_residual<2, 2>(), continuity_residual<2, 3>()},
      {continuity_residual<3, 1>(), continuity_residual<3, 2>(), continuity_residual<3, 3>()}};
  for (int d = 0; d < 3; ++d)
    for (int p = 0; p < 3; ++p) {
      EXPECT_LE(r[d][p], 1e-11) << "D=" << d + 1 << " P=" << p + 1;
      std::printf("[ continuity D=%d P=%d: %.2e ]\n", d + 1, p + 1, r[d][p]);
    }
}

/// Worst max|div E - rho_net/eps0| / max|rho/eps0| over `steps` D-dimensional PIC
/// steps (8 cells per axis), shape order P.
template <int D, int P>
double gauss_residual_after_steps(int steps) {
  Periodic<D> h({8, 8, 8}, {1e-6, 1e-6, 1e-6}, 4);
  pic::PlasmaLoad load;
  load.density = 1e25;
  load.per_axis = 2;
  load.random_positions = true;
  load.u_th = {0.05 * cst::c, 0.05 * cst::c, 0.05 * cst::c};
  Species e{-cst::q_e, cst::m_e, pic::macro_weight<D>(load, h.grid), {}};
  pic::load_uniform<D>(h.grid, h.box, h.numbering(), load, 11, 0,
                       [&](std::int64_t, const Vec3& x, const Vec3& u) {
                         e.p.push_back({x, u});
                       });
  std::vector<Species> sp{e};
  deposit_all_rho<D, P>(h, sp);
  h.solve_gauss();
  const double dt = 0.9 * pic::yee::max_dt<D>(h.grid);
  double worst = 0;
  for (int n = 0; n < steps; ++n) {
    pic_step<D, P>(h, sp, dt);
    deposit_all_rho<D, P>(h, sp);
    for (int q : {EX, EY, EZ}) h.fill(q);
    double mean = 0;
    h.for_interior([&](int i, int j, int k) { mean += h(RHO, i, j, k); });
    mean /= double(h.n[0]) * h.n[1] * h.n[2];
    double res = 0;
    h.for_interior([&](int i, int j, int k) {
      res = std::max(res, std::abs(h.div(EX, i, j, k) - (h(RHO, i, j, k) - mean) / cst::eps0));
    });
    worst = std::max(worst, res / (h.max_abs(RHO) / cst::eps0));
  }
  return worst;
}

// Given a thermal 3-D plasma with E solving div E = rho/eps0, when the full PIC loop
// (energy-conserving gather, Boris, Esirkepov, Yee) runs 40 steps, then Gauss's law still
// holds to 1e-11 of max |rho/eps0|, for each shape order (and in 2-D at order 2, where
// J_z comes from v_z): the deposit and the Yee update
// together conserve charge with no divergence cleaning.
TEST(PicEsirkepov, GaussLawHoldsToRoundOffThroughFortySteps2DAnd3D) {
  const double r[4] = {gauss_residual_after_steps<3, 1>(40), gauss_residual_after_steps<3, 2>(40),
                       gauss_residual_after_steps<3, 3>(40), gauss_residual_after_steps<2, 2>(40)};
  std::printf("[ Gauss residual 3-D P=1 %.2e, P=2 %.2e, P=3 %.2e; 2-D P=2 %.2e ]\n", r[0], r[1],
              r[2], r[3]);
  for (double x : r) EXPECT_LE(x, 1e-11);
}

// ---------------------------------------------------------------------------------------
// Gather

/// Max relative error of the 3-D gather of order P, scheme S, at random points, with each
/// component set to a linear function of its own (staggered) position; in the energy-
/// conserving case only of the coordinates along which the component is nodal (order p-1
/// < 1 does not reproduce a slope along the staggered axes).
template <int P, pic::GatherScheme S>
double gather_linear_error() {
  Periodic<3> h({6, 6, 6}, {1e-6, 2e-6, 1.5e-6}, 3);
  constexpr bool ec = S == pic::GatherScheme::energy_conserving;
  // Offsets (cells) of each component's position; slopes zeroed along staggered axes if ec.
  const double off[6][3] = {{.5, 0, 0},  {0, .5, 0},  {0, 0, .5},
                            {0, .5, .5}, {.5, 0, .5}, {.5, .5, 0}};
  const double slope[6][3] = {{1, 2, 3},  {-2, 1, 4}, {3, -1, 2},
                              {2, 2, -1}, {-1, 3, 1}, {1, -2, 2}};
  auto value = [&](int q, const Vec3& x) {
    double v = 1.0 + q;
    for (int a = 0; a < 3; ++a)
      if (!(ec && off[q][a] != 0)) v += slope[q][a] * x[a] / h.length(a);
    return v;
  };
  h.for_all([&](int i, int j, int k) {
    const int idx[3] = {i, j, k};
    for (int q = 0; q < 6; ++q) {
      Vec3 x;
      for (int a = 0; a < 3; ++a) x[a] = h.grid.x0[a] + (idx[a] + off[q][a]) * h.grid.dx[a];
      h(q, i, j, k) = value(q, x);
    }
  });
  double err = 0;
  for (std::uint64_t t = 0; t < 200; ++t) {
    Vec3 x;
    for (int a = 0; a < 3; ++a) x[a] = pic::uniform01(9, t, a) * h.length(a);
    Vec3 E, B;
    pic::gather<3, P, S>(h.em(), h.grid, x, E, B);
    for (int q = 0; q < 3; ++q) {
      err = std::max(err, std::abs(E[q] / value(q, x) - 1));
      err = std::max(err, std::abs(B[q] / value(3 + q, x) - 1));
    }
  }
  return err;
}

// Given fields linear in position on the Yee lattice, when they are gathered in 3-D at
// random points, then the momentum-conserving gather reproduces them to round-off for
// orders 1-3, and the energy-conserving one does so for fields linear along each
// component's nodal axes: this pins the staggering and the order of each shape.
TEST(PicGather, GatherReproducesLinearFieldsOnTheYeeLattice) {
  using pic::GatherScheme;
  EXPECT_LT((gather_linear_error<1, GatherScheme::momentum_conserving>()), 1e-13);
  EXPECT_LT((gather_linear_error<2, GatherScheme::momentum_conserving>()), 1e-13);
  EXPECT_LT((gather_linear_error<3, GatherScheme::momentum_conserving>()), 1e-13);
  EXPECT_LT((gather_linear_error<1, GatherScheme::energy_conserving>()), 1e-13);
  EXPECT_LT((gather_linear_error<2, GatherScheme::energy_conserving>()), 1e-13);
  EXPECT_LT((gather_linear_error<3, GatherScheme::energy_conserving>()), 1e-13);
}

// ---------------------------------------------------------------------------------------
// Loading

// Given a 2-D domain of 8 x 6 cells, when a thermal drifting load is made once as one block
// and once as two blocks of 4 x 6 (each with its own guard offset), then the same tags come
// out with the same momenta (bit for bit) and positions (to round-off in the blocks'
// origins), and the momenta have the drift
// and spread asked for (to the sampling error of 4800 particles, 5 sigma).
TEST(PicLoad, LoadingDependsOnlyOnSeedAndTagNotOnTheBlockSplit) {
  pic::PlasmaLoad load;
  load.density = 1e24;
  load.per_axis = 10;
  load.random_positions = true;
  load.u_drift = {1e6, 0, -2e6};
  load.u_th = {3e5, 3e5, 3e5};
  const int g = 2;
  std::map<std::int64_t, std::array<double, 6>> whole, split;
  auto grid = [&](int first_cell_x) {
    pic::Grid gr;
    gr.dx = {1e-6, 1e-6, 1};
    gr.x0 = {(first_cell_x - g) * 1e-6, -g * 1e-6, 0};
    return gr;
  };
  auto put = [](auto& m) {
    return [&m](std::int64_t t, const Vec3& x, const Vec3& u) {
      m[t] = {x[0], x[1], x[2], u[0], u[1], u[2]};
    };
  };
  pic::Box b;
  b.lo = {g, g, 0};
  b.hi = {g + 8, g + 6, 1};
  pic::load_uniform<2>(grid(0), b, {{-g, -g, 0}, {8, 6, 1}}, load, 42, 0, put(whole));
  b.hi[0] = g + 4;
  for (int blk = 0; blk < 2; ++blk)
    pic::load_uniform<2>(grid(4 * blk), b, {{4 * blk - g, -g, 0}, {8, 6, 1}}, load, 42, 0,
                         put(split));
  ASSERT_EQ(whole.size(), 4800u);
  ASSERT_EQ(split.size(), whole.size());
  double dx_err = 0;
  bool same_u = true;
  for (const auto& [t, v] : whole) {
    const auto it = split.find(t);
    ASSERT_NE(it, split.end()) << t;
    for (int a = 0; a < 3; ++a) dx_err = std::max(dx_err, std::abs(it->second[a] - v[a]) / 1e-6);
    for (int a = 3; a < 6; ++a) same_u = same_u && it->second[a] == v[a];
  }
  EXPECT_LT(dx_err, 1e-12);  // positions: to round-off of the blocks' origins
  EXPECT_TRUE(same_u);
  double mean[3] = {0, 0, 0}, var[3] = {0, 0, 0};
  for (const auto& [t, v] : whole)
    for (int a = 0; a < 3; ++a) mean[a] += v[3 + a] / 4800;
  for (const auto& [t, v] : whole)
    for (int a = 0; a < 3; ++a) var[a] += (v[3 + a] - mean[a]) * (v[3 + a] - mean[a]) / 4800;
  for (int a = 0; a < 3; ++a) {
    EXPECT_NEAR(mean[a], load.u_drift[a], 5 * load.u_th[a] / std::sqrt(4800.0)) << a;
    EXPECT_NEAR(std::sqrt(var[a]) / load.u_th[a], 1.0, 5 / std::sqrt(2 * 4800.0)) << a;
  }
}

// ---------------------------------------------------------------------------------------
// Boris push

// Given a relativistic electron (gamma = 2.3) in a uniform B, when it is pushed 1000 steps
// at omega_c dt = 0.3, then |u| is conserved to round-off and it turns by exactly
// 2 arctan(omega_c dt / 2) per step about B, counter-clockwise for a negative charge
// (verification.md §G: 1e-12).
TEST(PicBoris, GyrationInUniformBConservesSpeedAndTurnsByTheBorisAngle) {
  const Vec3 B{0, 0, 1.5};
  Vec3 u{2.0 * cst::c, 0.0, 0.5 * cst::c};
  const double gamma = pic::lorentz_gamma(u);
  const double wc = cst::q_e * B[2] / (cst::m_e * gamma);
  const double dt = 0.3 / wc;
  const double expected = 2 * std::atan(0.5 * wc * dt);
  const double u0 = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
  double worst_speed = 0, worst_angle = 0;
  for (int n = 0; n < 1000; ++n) {
    const Vec3 before = u;
    pic::boris_push(u, {0, 0, 0}, B, -cst::q_e / cst::m_e, dt);
    const double un = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    worst_speed = std::max(worst_speed, std::abs(un / u0 - 1));
    const double turn =
        std::atan2(before[0] * u[1] - before[1] * u[0], before[0] * u[0] + before[1] * u[1]);
    worst_angle = std::max(worst_angle, std::abs(turn - expected));
    EXPECT_EQ(u[2], 0.5 * cst::c);  // u parallel to B is untouched
  }
  std::printf("[ |u| drift %.2e, angle error %.2e rad ]\n", worst_speed, worst_angle);
  EXPECT_LE(worst_speed, 1e-13);
  EXPECT_LE(worst_angle, 1e-12);
}

// Given an electron starting at rest in crossed E = E_y, B = B_z with E/cB = 3e-5, when it
// is pushed over 50 gyrations at 40 steps per (Boris) gyration, then its mean velocity is
// the E x B drift E/B along x to 1e-6 (the gyration sums to zero over whole discrete
// periods; what is left is relativistic, ~ (v/c)^2), and it does not drift along E.
TEST(PicBoris, CrossedFieldsGiveTheExBDriftVelocity) {
  const Vec3 E{0, 1e4, 0}, B{0, 0, 1.0};
  const double vd = E[1] / B[2];
  const double wc = cst::q_e * B[2] / cst::m_e;
  const int per = 40;
  const double dt = 2 * std::tan(cst::pi / per) / wc;  // 2 arctan(wc dt/2) = 2 pi / per
  Vec3 u{0, 0, 0}, x{0, 0, 0};
  for (int n = 0; n < 50 * per; ++n) {
    pic::boris_push(u, E, B, -cst::q_e / cst::m_e, dt);
    pic::push_position(x, u, dt);
  }
  const double t = 50 * per * dt;
  std::printf("[ E x B drift: v/v_d - 1 = %.2e, y excursion %.2e m ]\n", x[0] / t / vd - 1, x[1]);
  EXPECT_LT(std::abs(x[0] / t / vd - 1), 1e-6);
  EXPECT_LT(std::abs(x[1]), 2 * vd / wc);  // bounded by the gyro-radius, no drift along E
}

// ---------------------------------------------------------------------------------------
// Plasma tests: the whole PIC loop

// Given cold electrons (2e24 m^-3, immobile ions) on 128 cells over 40 um in 1-D with a
// sinusoidal velocity perturbation u_x = eps c sin(kx), eps = 0.01, shape 1, Esirkepov, at
// c dt = dx (WarpX's test_1d_langmuir_multi, electrons only, along x), when 80 steps run,
// then the mode oscillates at the leapfrog-corrected plasma frequency sin(w dt/2) = w_p
// dt/2 to 1 % and Ex stays within 5 % of eps (m_e c w_p/e) sin(kx) sin(w_p t) (WarpX's bar).
TEST(PicPlasma, LangmuirOscillation1DAtThePlasmaFrequency) {
  const int cells = 128;
  const double L = 40e-6, dx = L / cells, n0 = 2e24, eps = 0.01;
  Periodic<1> h({cells, 1, 1}, {dx, 1, 1}, 3);
  const double dt = pic::yee::max_dt<1>(h.grid);
  const double k = 2 * cst::pi / L;
  const double wp = std::sqrt(n0 * cst::q_e * cst::q_e / (cst::eps0 * cst::m_e));
  pic::PlasmaLoad load;
  load.density = n0;
  load.per_axis = 16;
  Species e{-cst::q_e, cst::m_e, pic::macro_weight<1>(load, h.grid), {}};
  pic::load_uniform<1>(h.grid, h.box, h.numbering(), load, 1, 0,
                       [&](std::int64_t, const Vec3& x, Vec3 u) {
                         u[0] = eps * cst::c * std::sin(k * x[0]);
                         e.p.push_back({x, u});
                       });
  std::vector<Species> sp{e};
  std::vector<double> amp{0.0};  // sin(kx)-mode amplitude of Ex at t = n dt
  for (int n = 0; n < 80; ++n) {
    pic_step<1, 1>(h, sp, dt);
    double a = 0;
    h.for_interior([&](int i, int, int) { a += h(EX, i, 0, 0) * std::sin(k * (i - 2.5) * dx); });
    amp.push_back(a);
  }
  // Period from the second zero crossing of the amplitude (a(0) = 0 is the first).
  double t_period = 0;
  int crossings = 0;
  for (std::size_t n = 2; n < amp.size() && !t_period; ++n)
    if ((amp[n - 1] > 0) != (amp[n] > 0) && ++crossings == 2)
      t_period = dt * (n - 1 + amp[n - 1] / (amp[n - 1] - amp[n]));
  ASSERT_GT(t_period, 0.0);
  const double w = 2 * cst::pi / t_period;
  const double w_leapfrog = 2 / dt * std::asin(0.5 * wp * dt);
  // Field error at the last step against the cold-plasma solution.
  const double t = 80 * dt, e0 = eps * cst::m_e * cst::c * wp / cst::q_e;
  double err = 0, emax = 0;
  h.for_interior([&](int i, int, int) {
    const double exact = e0 * std::sin(k * (i - 2.5) * dx) * std::sin(wp * t);
    err = std::max(err, std::abs(h(EX, i, 0, 0) - exact));
    emax = std::max(emax, std::abs(exact));
  });
  std::printf("[ Langmuir: w/w_leapfrog - 1 = %.2e (w_p dt = %.3f), field error %.2e ]\n",
              w / w_leapfrog - 1, wp * dt, err / emax);
  EXPECT_LT(std::abs(w / w_leapfrog - 1), 0.01);
  EXPECT_LT(err / emax, 0.05);
}

/// |Fourier mode m of Ex| over the interior (1-D).
double ex_mode(Periodic<1>& h, int m) {
  std::complex<double> z = 0;
  h.for_interior([&](int i, int, int) {
    z += h(EX, i, 0, 0) * std::polar(1.0, -2 * cst::pi * m * (i - h.gw[0] + 0.5) / h.n[0]);
  });
  return std::abs(z);
}

// Given two cold electron beams at +-v0 = 0.05 c (each n/2, immobile ions, thermal spread
// 1 % of v0) in a 1-D box whose fundamental has k v0 = sqrt(3/8) w_p, seeded with a small
// velocity ripple, when the PIC loop runs to saturation, then the fundamental's field grows
// at the cold-beam maximum gamma_max = w_p / sqrt(8) to 10 % (verification.md §G).
TEST(PicPlasma, TwoStreamInstabilityGrowsAtTheColdBeamMaximumRate) {
  const int cells = 32;
  const double n0 = 1e24, v0 = 0.05 * cst::c;
  const double wp = std::sqrt(n0 * cst::q_e * cst::q_e / (cst::eps0 * cst::m_e));
  const double k = std::sqrt(3.0 / 8.0) * wp / v0, L = 2 * cst::pi / k;
  Periodic<1> h({cells, 1, 1}, {L / cells, 1, 1}, 3);
  const double dt = 0.95 * pic::yee::max_dt<1>(h.grid);
  const double u0 = v0 / std::sqrt(1 - (v0 / cst::c) * (v0 / cst::c));
  std::vector<Species> sp;
  for (int b = 0; b < 2; ++b) {
    pic::PlasmaLoad load;
    load.density = 0.5 * n0;
    load.per_axis = 64;
    load.u_drift = {b ? -u0 : u0, 0, 0};
    load.u_th = {0.01 * v0, 0, 0};
    Species e{-cst::q_e, cst::m_e, pic::macro_weight<1>(load, h.grid), {}};
    pic::load_uniform<1>(h.grid, h.box, h.numbering(), load, 3 + b, b * 1000000,
                         [&](std::int64_t, const Vec3& x, Vec3 u) {
                           u[0] += 1e-4 * v0 * std::sin(k * x[0]);
                           e.p.push_back({x, u});
                         });
    sp.push_back(std::move(e));
  }
  const int steps = int(40 / (wp * dt));
  std::vector<double> a(steps);
  for (int n = 0; n < steps; ++n) {
    pic_step<1, 2>(h, sp, dt);
    a[n] = ex_mode(h, 1);
  }
  // Linear phase: from w_p t = 10 (past the seed's transient) and |E1| above 1e-3 of its
  // saturated maximum, up to 1e-1 of it; least-squares slope of ln|E1|.
  const double sat = *std::max_element(a.begin(), a.end());
  int nb = 0, ne = 0;
  for (int n = 0; n < steps && !ne; ++n) {
    if (!nb && (n + 1) * dt * wp >= 10 && a[n] > 1e-3 * sat) nb = n;
    if (nb && a[n] > 0.1 * sat) ne = n;
  }
  ASSERT_GT(ne - nb, 100);
  double st = 0, sl = 0, stt = 0, stl = 0;
  for (int n = nb; n <= ne; ++n) {
    const double t = (n + 1) * dt * wp, l = std::log(a[n]);
    st += t, sl += l, stt += t * t, stl += t * l;
  }
  const double m = ne - nb + 1;
  const double growth = (m * stl - st * sl) / (m * stt - st * st);  // in units of w_p
  std::printf("[ two-stream: gamma/w_p = %.4f over w_p t in [%.1f, %.1f] (max %.4f) ]\n", growth,
              (nb + 1) * dt * wp, (ne + 1) * dt * wp, 1 / std::sqrt(8.0));
  EXPECT_LT(std::abs(growth * std::sqrt(8.0) - 1), 0.10);
}

/// Largest relative drift of total (field + kinetic) energy over `steps` steps of a 1-D
/// thermal electron plasma (immobile ions) at w_p dt = 0.2, shape order P, gather S.
template <int P, pic::GatherScheme S>
double thermal_energy_drift(double vth_over_c, int steps) {
  const int cells = 32;
  const double n0 = 1e25;
  const double wp = std::sqrt(n0 * cst::q_e * cst::q_e / (cst::eps0 * cst::m_e));
  const double dt = 0.2 / wp;
  Periodic<1> h({cells, 1, 1}, {cst::c * dt / 0.95, 1, 1}, 3);
  pic::PlasmaLoad load;
  load.density = n0;
  load.per_axis = 64;
  load.random_positions = true;
  const double uth = vth_over_c * cst::c;
  load.u_th = {uth, uth, uth};
  Species e{-cst::q_e, cst::m_e, pic::macro_weight<1>(load, h.grid), {}};
  pic::load_uniform<1>(h.grid, h.box, h.numbering(), load, 5, 0,
                       [&](std::int64_t, const Vec3& x, const Vec3& u) {
                         e.p.push_back({x, u});
                       });
  std::vector<Species> sp{e};
  deposit_all_rho<1, P>(h, sp);
  h.solve_gauss();
  // W^n = field energy at n + the mean of the kinetic energies at n - 1/2 and n + 1/2.
  double k_prev = sp[0].kinetic(), w0 = 0, drift = 0;
  for (int n = 0; n < steps; ++n) {
    const double field = h.field_energy();
    pic_step<1, P, S>(h, sp, dt);
    const double k_next = sp[0].kinetic();
    const double w = field + 0.5 * (k_prev + k_next);
    if (n == 0) w0 = w;
    drift = std::max(drift, std::abs(w / w0 - 1));
    k_prev = k_next;
  }
  return drift;
}

// Given a 1-D thermal plasma (v_th = 0.05 c, dx = 4.2 Debye lengths, 64 particles per cell),
// when it runs 500 steps at w_p dt = 0.2 with order-2 shapes and the energy-conserving
// gather, then total energy drifts by at most 0.3 % (WarpX's
// test_1d_energy_conserving_thermal_plasma bar; there electrostatic, here with Yee).
TEST(PicPlasma, ThermalPlasmaConservesEnergyWithTheEnergyConservingGather) {
  const double drift = thermal_energy_drift<2, pic::GatherScheme::energy_conserving>(0.05, 500);
  const double mc = thermal_energy_drift<2, pic::GatherScheme::momentum_conserving>(0.05, 500);
  std::printf("[ energy drift over 500 steps: energy-conserving %.2e, momentum-conserving %.2e ]\n",
              drift, mc);
  EXPECT_LT(drift, 3e-3);
  EXPECT_LT(drift, 0.2 * mc);  // the energy-conserving gather is what buys it
}

// ---------------------------------------------------------------------------------------
// Species table

// Given the built-in species, their charges and masses are CODATA's, an unknown name finds
// nothing, and the Langmuir response factor (q/m)/(-q_e/m_e) is 1, -1 and -m_e/m_p.
TEST(PicSpecies, TableHoldsElectronPositronProtonWithTheirResponseFactors) {
  const auto* e = pic::find_species("electron");
  const auto* p = pic::find_species("positron");
  const auto* h = pic::find_species("proton");
  ASSERT_TRUE(e && p && h);
  EXPECT_EQ(e->charge, -cst::q_e);
  EXPECT_EQ(p->charge, cst::q_e);
  EXPECT_EQ(h->mass, cst::m_p);
  EXPECT_EQ(pic::find_species("muon"), nullptr);
  EXPECT_EQ(pic::response_factor(*e), 1.0);  // exactly: one-species runs are unchanged
  EXPECT_EQ(pic::response_factor(*p), -1.0);
  EXPECT_NEAR(pic::response_factor(*h), -cst::m_e / cst::m_p, 1e-18);
}

// ---------------------------------------------------------------------------------------
// Vacuum pulse and Mur's absorbing boundary

// Given the pulse of pulse.hpp at 30 degrees on a 2-D lattice, then its discrete div E and
// div B vanish to round-off (E is along z; B is the Yee curl of the node field Az).
TEST(PicPulse, ObliquePulseIsDivergenceFreeOnTheYeeLattice) {
  const double dx = 1e-6;
  Periodic<2> h({64, 64, 1}, {dx, dx, 1}, 3);
  pic::Pulse p;
  p.amplitude = 1e9, p.sigma = 4 * dx, p.width = 12 * dx, p.angle = cst::pi / 6;
  p.xc = p.yc = 32 * dx;
  pic::set_pulse<2>(h.em(), h.box, h.grid, p);
  double divb = 0, bmax = 0;
  h.for_interior([&](int i, int j, int k) {
    if (i + 1 >= h.box.hi[0] || j + 1 >= h.box.hi[1]) return;
    // div B at the cell centre (i+1/2, j+1/2): Bx at (i, j+1/2), By at (i+1/2, j).
    const double d =
        (h(BX, i + 1, j, k) - h(BX, i, j, k)) / dx + (h(BY, i, j + 1, k) - h(BY, i, j, k)) / dx;
    divb = std::max(divb, std::abs(d));
    bmax = std::max({bmax, std::abs(h(BX, i, j, k)), std::abs(h(BY, i, j, k))});
  });
  EXPECT_GT(h.max_abs(EZ), 0.5 * p.amplitude);
  EXPECT_EQ(h.max_abs(EX) + h.max_abs(EY), 0.0);
  EXPECT_LT(divb * dx / bmax, 1e-12);
}

// Given Mur's coefficient, then it vanishes at c dt = dx (the update is then exact
// transport: the boundary node takes its neighbour's old value) and lies in (-1, 0) below.
TEST(PicAbsorbing, MurCoefficientVanishesAtTheMagicTimeStep) {
  const double dx = 2e-6;
  EXPECT_NEAR(pic::absorbing::mur_coefficient(dx / cst::c, dx), 0.0, 1e-15);
  const double k = pic::absorbing::mur_coefficient(0.5 * dx / cst::c, dx);
  EXPECT_NEAR(k, -1.0 / 3.0, 1e-15);
  EXPECT_EQ(pic::absorbing::mur_step(7.0, 3.0, 5.0, 0.0), 3.0);
  EXPECT_EQ(pic::absorbing::mur_step(7.0, 3.0, 5.0, k), 3.0 + k * (5.0 - 7.0));
}

/// The harness's guard fill at an outflow face (as Mesh::fill_guards): every guard cell
/// along x takes the nearest interior value.
void fill_outflow_x(Periodic<1>& h, int q) {
  h.for_all([&](int i, int j, int k) {
    if (i < h.box.lo[0]) h(q, i, j, k) = h(q, h.box.lo[0], j, k);
    if (i >= h.box.hi[0]) h(q, i, j, k) = h(q, h.box.hi[0] - 1, j, k);
  });
}

/// Field energy left, as a fraction of the initial, after a 1-D vacuum pulse (sigma = 8
/// cells, moving +x from the middle of 256 cells) has run `steps` steps at Courant number
/// cfl between two absorbing faces, in the step order of pic_unit.hpp. Polarisation Ez/By,
/// or Ey/Bz with `ey`.
double mur_pulse_energy_left(double cfl, bool ey, int steps) {
  namespace ab = pic::absorbing;
  const int n = 256, g = 3;
  const double dx = 1e-6;
  Periodic<1> h({n, 1, 1}, {dx, 1, 1}, g);
  pic::Pulse p;
  p.amplitude = 1e9, p.sigma = 8 * dx, p.xc = 128 * dx;
  pic::set_pulse<1>(h.em(), h.box, h.grid, p);
  if (ey)  // rotate about x: (Ez, By) -> (Ey, Bz) = (Ez, -By), the same wave along +x
    h.for_all([&](int i, int j, int k) {
      h(EY, i, j, k) = h(EZ, i, j, k), h(BZ, i, j, k) = -h(BY, i, j, k);
      h(EZ, i, j, k) = h(BY, i, j, k) = 0.0;
    });
  for (int q : {EX, EY, EZ, BX, BY, BZ}) fill_outflow_x(h, q);
  const double e0 = h.field_energy();
  const double dt = cfl * pic::yee::max_dt<1>(h.grid);
  pic::Box all, whole;
  all.hi[0] = h.ext[0] - 1, whole.hi[0] = h.ext[0];
  const ab::Face faces[2] = {{0, 0, g}, {0, 1, g + n}};
  const double k = ab::mur_coefficient(dt, dx);
  std::vector<double> state[2];
  for (int m = 0; m < steps; ++m) {
    pic::yee::advance_b<1>(h.em(), all, h.grid, 0.5 * dt);
    for (int f = 0; f < 2; ++f) {
      state[f].resize(ab::state_size(faces[f], whole));
      ab::mur_save(h.em(), faces[f], whole, state[f].data());
    }
    pic::yee::advance_e<1>(h.em(), h.cur(), h.box, h.grid, dt);
    for (int q : {EX, EY, EZ}) fill_outflow_x(h, q);
    for (int f = 0; f < 2; ++f) ab::mur_apply(h.em(), faces[f], whole, state[f].data(), k);
    pic::yee::advance_b<1>(h.em(), all, h.grid, 0.5 * dt);
  }
  return h.field_energy() / e0;
}

// Given a 1-D vacuum pulse leaving through an absorbing face, when it has gone (200 steps
// at c dt = 0.95 dx), then less than 1e-6 of its energy is left (measured 3.5e-8, the
// wave Mur reflects, still on its way back), for either tangential component; and at
// c dt = dx Mur's update is exact transport, so nothing at all comes back.
TEST(PicAbsorbing, VacuumPulseLeavesThroughMurFacesIn1D) {
  for (bool ey : {false, true}) {
    const double left = mur_pulse_energy_left(0.95, ey, 200);
    std::printf("[ Mur, c dt = 0.95 dx, %s: energy left %.2e ]\n", ey ? "Ey/Bz" : "Ez/By", left);
    EXPECT_LT(left, 1e-6);
  }
  EXPECT_LT(mur_pulse_energy_left(1.0, false, 200), 1e-20);
  // Before it reaches the face the pulse keeps its energy (the faces are not yet involved).
  EXPECT_NEAR(mur_pulse_energy_left(0.95, false, 40), 1.0, 1e-4);
}

}  // namespace

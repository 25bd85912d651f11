// The level-set unit: WENO5 advection, redistancing, narrow-band tagging, interface
// diagnostics (see levelset.hpp).
#include "physics/levelset/levelset.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/field_rules.hpp"
#include "physics/flow/flow.hpp"
#include "physics/levelset/rows.hpp"

namespace tessera::levelset {

namespace {

constexpr double kFar = std::numeric_limits<double>::max();  ///< ls_dist: not at the interface

inline double sq(double a) {
  return a * a;
}

// Redistancing's sub-cell distance (LevelSet::redistance; levelset.hpp). Russo & Smereka
// (2000, J. Comput. Phys. 163, 51) relax the zones next to the interface toward
// D = phi0 / |grad phi0|. |grad phi0| is taken per axis by ENO2 (Harten, Engquist, Osher &
// Chakravarthy 1987, J. Comput. Phys. 71, 231) the way Min & Gibou (2007, J. Comput. Phys.
// 225, 300) and Min (2010, J. Comput. Phys. 229, 2764) take the one-sided difference toward
// the interface, so that no stencil reaches across a kink of phi0 such as a filament's ridge.
// (Chopp 2001's local bicubic fit and Hartmann, Meinke & Schroeder's 2008 constrained
// reinitialisation are other ways of holding the interface with the data next to it.)

/// A kink of phi0 between a zone and a neighbour (a filament's ridge, where the slopes of its
/// two sides meet): the second difference centred at the zone more than kKink times the one
/// beyond the neighbour. Where phi0 is smooth both are O(dx^2) and equal to O(dx^3), and the
/// central difference is kept (second order; the parabola's form of it, equal to round-off).
constexpr double kKink = 2.0;

/// The second difference for the parabola from a zone toward a neighbour: the zone's own
/// (c: the central difference) unless a kink lies between them, then the one beyond the
/// neighbour (a second-order one-sided difference).
inline double eno_curvature(double c, double beyond) {
  return std::fabs(c) <= kKink * std::fabs(beyond) ? c : beyond;
}

/// The derivative at a zone (times dx) of that parabola through the zone and its neighbour
/// forward (backward). Toward a neighbour across the interface it is Min & Gibou's one-sided
/// difference, -phi0 / (theta dx) - theta dx phi0_xx / 2 with the crossing theta dx away. Never
/// under half the first difference d1 to the neighbour, nor of the other sign: a parabola that
/// flattens at the zone (a spike a zone wide) would make D infinite.
inline double at_least_half(double e, double d1) {
  return e / d1 >= 0.5 ? e : 0.5 * d1;
}
inline double eno_forward(double m1, double p0, double p1, double p2) {
  const double c = eno_curvature(m1 - 2 * p0 + p1, p0 - 2 * p1 + p2);
  return at_least_half((p1 - p0) - 0.5 * c, p1 - p0);
}
inline double eno_backward(double m2, double m1, double p0, double p1) {
  const double c = eno_curvature(m1 - 2 * p0 + p1, m2 - 2 * m1 + p0);
  return at_least_half((p0 - m1) + 0.5 * c, p0 - m1);
}

/// The derivative at a zone (times dx) along an axis without a crossing: the central
/// difference, or at a kink the second-order one-sided difference of the smoother side.
inline double eno_slope(double m2, double m1, double p0, double p1, double p2) {
  const double dl = std::fabs(m2 - 2 * m1 + p0), dc = std::fabs(m1 - 2 * p0 + p1),
               dr = std::fabs(p0 - 2 * p1 + p2);
  if (dc <= kKink * std::min(dl, dr)) return 0.5 * (p1 - m1);
  return dl <= dr ? 0.5 * (3 * p0 - 4 * m1 + m2) : 0.5 * (4 * p1 - 3 * p0 - p2);
}

/// phi0 along one axis of a zone: two and one zones back, one and two forward; the spacing.
struct AxisStencil {
  double m2, m1, p1, p2, dx;
};
inline AxisStencil axis_stencil(const double* q, long st, double dx) {
  return {q[-2 * st], q[-st], q[st], q[2 * st], dx};
}

/// S(phi0) = phi0 / sqrt(phi0^2 + |grad phi0|^2 h^2) (g2h2 = |grad phi0|^2 h^2): 0 where
/// phi0 = 0 (where the central gradient vanishes too, between symmetric neighbours, the
/// quotient was 0 / 0), sgn(phi0) where the sum underflows.
inline double smoothed_sign(double p0, double g2h2) {
  const double r2 = p0 * p0 + g2h2;
  return r2 > 0 ? p0 / std::sqrt(r2) : double((p0 > 0) - (p0 < 0));
}

/// A zone's redistancing data from phi0 (nd axes, h the smallest spacing): the sign S(phi0)
/// (central differences) and, next to the interface (an axis neighbour of the other sign),
/// the distance D = phi0 / |grad phi0| to the zero contour, else kFar. Per axis the gradient
/// is the one-sided difference toward the crossing (the nearer one where both neighbours are
/// across: a filament under two zones), on an axis without one eno_slope. Before, it was the
/// central difference of every axis (Russo & Smereka's largest difference only where that
/// was under half of it): in a filament 2 to 4 zones wide the zone next to one interface has
/// the ridge, and beyond it the other interface, within its stencil; the central difference
/// averaged the two sides' slopes, D came out up to twice the distance, and the relaxation
/// toward it moved the zero contour outward at every redistancing.
struct SubCell {
  double sign, dist;
};
inline SubCell subcell(double p0, const AxisStencil* ax, int nd, double h) {
  double gc2 = 0, g2 = 0;  // |grad phi0|^2: central; one-sided toward the interface
  bool interface = false;
  for (int a = 0; a < nd; ++a) {
    const AxisStencil& s = ax[a];
    gc2 += sq(0.5 * (s.p1 - s.m1) / s.dx);
    const bool back = p0 * s.m1 < 0, fwd = p0 * s.p1 < 0;
    const bool toward_back = back && (!fwd || p0 / (p0 - s.m1) <= p0 / (p0 - s.p1));
    const double d = toward_back ? eno_backward(s.m2, s.m1, p0, s.p1)
                     : fwd       ? eno_forward(s.m1, p0, s.p1, s.p2)
                                 : eno_slope(s.m2, s.m1, p0, s.p1, s.p2);
    interface = interface || back || fwd;
    g2 += sq(d / s.dx);
  }
  return {smoothed_sign(p0, gc2 * h * h), interface ? p0 / std::sqrt(g2) : kFar};
}

/// One block's phi with its guards, copied to a contiguous array (x fastest), and the
/// strides of its axes: the kernels read it whatever unk's layout.
struct BlockCopy {
  std::vector<double> p;
  long st[3] = {1, 1, 1};
  int nd = 3;
  template <class View>
  void load(const View& u, int var, const mesh::BlockShape& s) {
    nd = s.ndim;
    st[0] = 1;
    st[1] = s.n(0);
    st[2] = long(s.n(0)) * s.n(1);
    p.resize(s.cells());
    long c = 0;
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) p[std::size_t(c++)] = u(var, i, j, k);
  }
  long at(int i, int j, int k) const { return i + j * st[1] + k * st[2]; }
};

thread_local BlockCopy g_copy;

/// The smoothed Heaviside of width eps and its derivative.
inline double heaviside(double phi, double eps) {
  if (phi < -eps) return 0.0;
  if (phi > eps) return 1.0;
  return 0.5 * (1.0 + phi / eps + std::sin(std::numbers::pi * phi / eps) / std::numbers::pi);
}
inline double delta(double phi, double eps) {
  if (std::fabs(phi) > eps) return 0.0;
  return 0.5 * (1.0 + std::cos(std::numbers::pi * phi / eps)) / eps;
}

double min_dx(const mesh::BlockGeom& g, int nd) {
  double h = g.dx[0];
  for (int a = 1; a < nd; ++a) h = std::min(h, g.dx[a]);
  return h;
}

}  // namespace

void LevelSet::declare_params(base::Params& p) {
  p.declare_real("levelset.cfl", 0.5, 1e-6, 1.0,
                 "advection time step: dt = cfl / max over zones of sum_a |u_a| / dx_a");
  p.declare_int("levelset.redistance_every", 1, 0, 1000000,
                "steps between redistancings (0: never)");
  p.declare_int("levelset.redistance_iterations", 2, 0, 100000,
                "pseudo-time steps per redistancing (Flash-X: 2 every step)");
  p.declare_real("levelset.redistance_cfl", 0.5, 1e-6, 1.0,
                 "pseudo-time step of redistancing: dtau = cfl / sum_a (1 / dx_a), per block");
  p.declare_real("levelset.band", 4.0, 0.0, 1e6,
                 "narrow band in zones: refine a block where |phi| < band dx (0: no tagging), "
                 "derefine where |phi| > 3 band dx everywhere; | |grad phi| - 1 | is "
                 "reported in it");
  p.declare_real("levelset.smoothing", 1.5, 0.1, 100.0,
                 "half width of the smoothed Heaviside and delta in zones (diagnostics)");
  p.declare_real("levelset.radius", 0.15, 1e-300, 1e300,
                 "initial circle (sphere) radius R: phi = R - |x - c|, positive inside");
  p.declare_real("levelset.x0", 0.5, -1e300, 1e300, "initial centre x");
  p.declare_real("levelset.y0", 0.75, -1e300, 1e300, "initial centre y");
  p.declare_real("levelset.z0", 0.5, -1e300, 1e300, "initial centre z");
  p.declare_real("levelset.width", 0.0, 0.0, 1e300,
                 "initial shape: a ring (spherical shell) of this width about the circle "
                 "(sphere) of levelset.radius, phi = width / 2 - |R - |x - c||: a closed "
                 "filament (0: the disc or ball)");
  p.declare_real("levelset.distortion", 0.0, 0.0, 0.9,
                 "initial phi times 1 + distortion sin(2 pi x) sin(2 pi y) (the same zero "
                 "contour, |grad phi| != 1: the redistancing test)");
}

physics::Registration LevelSet::registration() {
  physics::Requirements req;
  req.needs = {{"velocity", true, "the prescribed flow's field (else hydro's velocity in unk)"}};
  return physics::registration_of<LevelSet>(
      "levelset", physics::UnitRole::operator_unit,
      "a level set advected by the flow's (or hydro's) velocity, WENO5 with redistancing", req);
}

LevelSet::LevelSet(const base::Params& p)
    : cfl_(p.get_real("levelset.cfl")),
      redistance_cfl_(p.get_real("levelset.redistance_cfl")),
      band_(p.get_real("levelset.band")),
      smoothing_(p.get_real("levelset.smoothing")),
      radius_(p.get_real("levelset.radius")),
      width_(p.get_real("levelset.width")),
      distortion_(p.get_real("levelset.distortion")),
      centre_{p.get_real("levelset.x0"), p.get_real("levelset.y0"), p.get_real("levelset.z0")},
      redistance_every_(static_cast<int>(p.get_int("levelset.redistance_every"))),
      redistance_iterations_(static_cast<int>(p.get_int("levelset.redistance_iterations"))) {}

physics::Declarations LevelSet::declarations() const {
  // phi: evolved, in checkpoints and plotfiles, unlimited linear prolongation (exact for a
  // distance that is linear across the coarse zone). The rest: scratch.
  auto scratch = [&](const char* n) {
    return mesh::VarInfo(n, -1, mesh::VarKind::auxiliary, false, false, name())
        .with_role(mesh::VarRole::scratch);
  };
  return {.variables = {mesh::VarInfo("phi", -1, mesh::VarKind::auxiliary, true, true, name())
                            .with_prolong(mesh::Prolong::linear)
                            .checked_by_owner(),
                        scratch("ls_base"), scratch("ls_sgn"), scratch("ls_dist")},
          .nguard = 3,
          .history = {"levelset_area", "levelset_length"}};
}

void LevelSet::bind(mesh::Mesh& m, const physics::Services& services,
                    const physics::RunContext& ctx) {
  if (m.geometry() != mesh::Geometry::cartesian)
    throw Error("levelset: Cartesian geometry only (mesh.geometry = \"cartesian\")");
  mesh_ = &m;
  time_ = ctx.start_time;
  steps_ = ctx.start_step;
  restarted_ = ctx.restarted;
  iphi_ = m.var_index("phi");
  ibase_ = m.scratch_index("ls_base");
  isgn_ = m.scratch_index("ls_sgn");
  idist_ = m.scratch_index("ls_dist");
  // An adaptive mesh that nothing would refine (issue 48: band 0 turned the level set's
  // tagging off silently and its gradient error was reported over an empty band).
  if (band_ <= 0 && m.lrefine_max() > m.lrefine_min() && ctx.params != nullptr) {
    bool any = false;
    for (int q = 1; q <= 4; ++q)
      any |= ctx.params->get_string(fmt::format("mesh.refine_var_{}", q)) != "none";
    if (!any)
      throw Error(fmt::format(
          "levelset.band = 0 turns the level set's refinement off and no mesh.refine_var_* is "
          "set: nothing would refine this adaptive mesh (mesh.lrefine_max = {} > lrefine_min = "
          "{}); set levelset.band > 0, or mesh.lrefine_max = mesh.lrefine_min",
          m.lrefine_max(), m.lrefine_min()));
  }
  const auto* f = services.get<flow::Flow>("velocity");
  flow_ = (f != nullptr && f->analytic()) ? f : nullptr;
  if (flow_ == nullptr) {
    idens_ = m.var_index("dens");
    imom_[0] = m.var_index("momx");
    imom_[1] = m.var_index("momy");
    imom_[2] = m.var_index("momz");
    if (idens_ < 0 || imom_[0] < 0)
      throw Error(
          "levelset: no velocity: add \"flow\" (flow.field names the field) or "
          "\"hydro\" to driver.operators");
  }
}

double LevelSet::initial_distance(const std::array<double, 3>& x) const {
  const int nd = mesh_ ? mesh_->ndim() : 3;
  double r2 = 0;
  for (int a = 0; a < nd; ++a) r2 += sq(x[a] - centre_[a]);
  const double disc = radius_ - std::sqrt(r2);
  return width_ > 0 ? 0.5 * width_ - std::fabs(disc) : disc;
}

void LevelSet::initialise(mesh::Mesh& m) {
  if (restarted_) return;  // the checkpoint's phi and clock
  const auto& s = m.shape();
  const bool two = m.ndim() >= 2;
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      const std::array<double, 3> x{g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))};
      const double f = 1.0 + distortion_ * std::sin(2 * std::numbers::pi * x[0]) *
                                 (two ? std::sin(2 * std::numbers::pi * x[1]) : 1.0);
      u(iphi_, i, j, k) = initial_distance(x) * f;
    });
  });
  const Measures q = measure(m);
  area_start_ = q.area;
  length_start_ = q.length;
}

template <class View>
void LevelSet::block_velocity(const View& u, const mesh::BlockGeom& g, double t,
                              std::vector<double>& v) const {
  const auto& s = mesh_->shape();
  if (flow_ != nullptr) {
    flow_->block_velocity(g, s, t, v);
    return;
  }
  const std::size_t n = s.interior_cells();
  v.assign(3 * n, 0.0);
  std::size_t z = 0;
  mesh::for_each_zone(s, [&](int i, int j, int k) {
    const double rho = u(idens_, i, j, k);
    for (int a = 0; a < mesh_->ndim(); ++a) v[std::size_t(a) * n + z] = u(imom_[a], i, j, k) / rho;
    ++z;
  });
}

namespace {
thread_local std::vector<double> g_vel, g_dm, g_dp, g_acc;
}  // namespace

double LevelSet::max_dt(mesh::Mesh& m) const {
  const auto& s = m.shape();
  const int nd = m.ndim();
  const std::size_t n = s.interior_cells();
  double rate = 0;  // max over zones of sum_a |u_a| / dx_a
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const mesh::BlockGeom g = m.geom(id);
      block_velocity(m.view(id, tag), g, time_, g_vel);
      for (std::size_t z = 0; z < n; ++z) {
        double r = 0;
        for (int a = 0; a < nd; ++a) r += std::fabs(g_vel[std::size_t(a) * n + z]) / g.dx[a];
        rate = std::max(rate, r);
      }
    }
  });
  return rate > 0 ? cfl_ / rate : std::numeric_limits<double>::max();
}

void LevelSet::save_base(mesh::Mesh& m) {
  const auto& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const auto w = m.scratch_view(id, tag);
      mesh::for_each_zone(s, [&](int i, int j, int k) { w(ibase_, i, j, k) = u(iphi_, i, j, k); });
    }
  });
}

double LevelSet::pseudo_dt(const mesh::BlockGeom& g) const {
  double inv = 0;
  for (int a = 0; a < mesh_->ndim(); ++a) inv += 1.0 / g.dx[a];
  return redistance_cfl_ / inv;
}

void LevelSet::advance(mesh::Mesh& m, double dt) {
  const auto& s = m.shape();
  const int nd = m.ndim(), nx = s.ni(0);
  const std::size_t n = s.interior_cells();
  const mesh::VarSet phi_set = m.var_set({"phi"});
  {
    TESSERA_REGION("levelset/advect");
    save_base(m);
    // SSP-RK3 (Shu & Osher): phi1 = phi^n + dt L(phi^n, t);
    // phi2 = 3/4 phi^n + 1/4 (phi1 + dt L(phi1, t + dt));
    // phi^n+1 = 1/3 phi^n + 2/3 (phi2 + dt L(phi2, t + dt / 2)).
    const double a[3] = {0.0, 0.75, 1.0 / 3.0}, b[3] = {1.0, 0.25, 2.0 / 3.0};
    const double ts[3] = {time_, time_ + dt, time_ + 0.5 * dt};
    g_acc.resize(std::size_t(nx));
    for (int stage = 0; stage < 3; ++stage) {
      m.fill_guards(phi_set);
      m.with_layout([&](auto tag) {
        for (int id : m.local_leaves()) {
          const auto u = m.view(id, tag);
          const auto w = m.scratch_view(id, tag);
          const mesh::BlockGeom g = m.geom(id);
          block_velocity(u, g, ts[stage], g_vel);
          auto& c = g_copy;
          c.load(u, iphi_, s);
          std::size_t z0 = 0;  // the row's first zone among the interior zones
          for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
            for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j, z0 += std::size_t(nx)) {
              const long c0 = c.at(s.g(0), j, k);
              std::fill(g_acc.begin(), g_acc.end(), 0.0);
              for (int ax = 0; ax < nd; ++ax)
                upwind_row(c.p.data(), c0, c.st[ax], nx, 1.0 / g.dx[ax],
                           g_vel.data() + std::size_t(ax) * n + z0, g_acc.data());
              for (int i = 0; i < nx; ++i) {
                const double next = c.p[std::size_t(c0 + i)] + dt * g_acc[std::size_t(i)];
                const int ii = s.g(0) + i;
                u(iphi_, ii, j, k) =
                    stage == 0 ? next : a[stage] * w(ibase_, ii, j, k) + b[stage] * next;
              }
            }
        }
      });
    }
  }
  time_ += dt;
  ++steps_;
  if (redistance_every_ > 0 && redistance_iterations_ > 0 && steps_ % redistance_every_ == 0)
    redistance(m, redistance_iterations_);
}

void LevelSet::redistance(mesh::Mesh& m, int iterations) {
  TESSERA_REGION("levelset/redistance");
  const auto& s = m.shape();
  const int nd = m.ndim(), nx = s.ni(0);
  const mesh::VarSet phi_set = m.var_set({"phi"});
  // phi0: the sign S(phi0) and, next to the interface, Russo & Smereka's distance D.
  m.fill_guards(phi_set);
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const auto w = m.scratch_view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      const double h = min_dx(g, nd);
      auto& c = g_copy;
      c.load(u, iphi_, s);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double* q = &c.p[std::size_t(c.at(i, j, k))];
        AxisStencil ax[3];
        for (int a = 0; a < nd; ++a) ax[a] = axis_stencil(q, c.st[a], g.dx[a]);
        const SubCell z = subcell(*q, ax, nd, h);
        w(isgn_, i, j, k) = z.sign;
        w(idist_, i, j, k) = z.dist;
      });
    }
  });
  // SSP-RK2 in pseudo-time: phi1 = phi + dtau L(phi); phi = 1/2 phi + 1/2 (phi1 + dtau L).
  g_dm.resize(std::size_t(nx));
  g_dp.resize(std::size_t(nx));
  g_acc.resize(std::size_t(2 * nx));
  for (int it = 0; it < iterations; ++it) {
    save_base(m);
    for (int stage = 0; stage < 2; ++stage) {
      m.fill_guards(phi_set);
      m.with_layout([&](auto tag) {
        for (int id : m.local_leaves()) {
          const auto u = m.view(id, tag);
          const auto w = m.scratch_view(id, tag);
          const mesh::BlockGeom g = m.geom(id);
          const double h = min_dx(g, nd), dtau = pseudo_dt(g);
          auto& c = g_copy;
          c.load(u, iphi_, s);
          double* gpos = g_acc.data();       // sum of the Godunov squares for S > 0
          double* gneg = g_acc.data() + nx;  // and for S < 0
          for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
            for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
              const long c0 = c.at(s.g(0), j, k);
              std::fill(g_acc.begin(), g_acc.end(), 0.0);
              for (int ax = 0; ax < nd; ++ax) {
                one_sided_row(c.p.data(), c0, c.st[ax], nx, 1.0 / g.dx[ax], g_dm.data(),
                              g_dp.data());
                for (int i = 0; i < nx; ++i) {
                  const double dm = g_dm[std::size_t(i)], dp = g_dp[std::size_t(i)];
                  gpos[i] += std::max(sq(std::max(dm, 0.0)), sq(std::min(dp, 0.0)));
                  gneg[i] += std::max(sq(std::min(dm, 0.0)), sq(std::max(dp, 0.0)));
                }
              }
              for (int i = 0; i < nx; ++i) {
                const int ii = s.g(0) + i;
                const double ph = c.p[std::size_t(c0 + i)];
                const double d = w(idist_, ii, j, k), sg = w(isgn_, ii, j, k);
                // Next to the interface Russo & Smereka relax toward the distance phi0 gave
                // (the Hamiltonian would move the zero contour); elsewhere Godunov.
                const double rhs = d != kFar ? -((sg > 0   ? 1.0
                                                  : sg < 0 ? -1.0
                                                           : 0.0) *
                                                     std::fabs(ph) -
                                                 d) /
                                                   h
                                             : sg * (1.0 - std::sqrt(sg > 0 ? gpos[i] : gneg[i]));
                const double next = ph + dtau * rhs;
                u(iphi_, ii, j, k) = stage == 0 ? next : 0.5 * w(ibase_, ii, j, k) + 0.5 * next;
              }
            }
        }
      });
    }
  }
  ++redistance_steps_;
}

bool LevelSet::tag_refinement(mesh::Mesh& m, std::vector<mesh::Flag>& votes) const {
  if (band_ <= 0) return false;
  const auto& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const double h = min_dx(m.geom(id), m.ndim());
      double lo = std::numeric_limits<double>::max();
      mesh::for_each_zone(
          s, [&](int i, int j, int k) { lo = std::min(lo, std::fabs(u(iphi_, i, j, k))); });
      votes[std::size_t(id)] = lo < band_ * h         ? mesh::Flag::refine
                               : lo > 3.0 * band_ * h ? mesh::Flag::derefine
                                                      : mesh::Flag::keep;
    }
  });
  return true;
}

physics::BadZone LevelSet::check(mesh::Mesh& m) const {
  return physics::first_non_finite(m, std::vector<int>{iphi_}, {"levelset phi"});
}

LevelSet::Measures LevelSet::measure(mesh::Mesh& m, bool full) const {
  m.fill_guards(m.var_set({"phi"}));
  const auto& s = m.shape();
  const int nd = m.ndim();
  double offset_max = 0, grad_max = 0;
  // area, length, |H - H0|, grad error sum, band zones
  const auto sums = m.leaf_sums(5, [&](int id, double* out) {
    const mesh::BlockGeom g = m.geom(id);
    const double h = min_dx(g, nd), eps = smoothing_ * h;
    double dv = 1.0;
    for (int a = 0; a < nd; ++a) dv *= g.dx[a];
    double area = 0, len = 0, shape = 0, gsum = 0, nband = 0;
    m.with_layout([&](auto tag) {
      const auto u = m.view(id, tag);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double ph = u(iphi_, i, j, k);
        area += heaviside(ph, eps);
        // The gradient where something reads it: the delta's support, the band, the zones
        // next to the interface (|phi| < dx + eps covers them all but the band).
        if (!full && std::fabs(ph) > eps) return;
        double g2 = 0;
        AxisStencil ax[3];
        const int o[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        for (int a = 0; a < nd; ++a) {
          auto at = [&](int n) {
            return u(iphi_, i + n * o[a][0], j + n * o[a][1], k + n * o[a][2]);
          };
          ax[a] = {at(-2), at(-1), at(1), at(2), g.dx[a]};
          g2 += sq(0.5 * (ax[a].p1 - ax[a].m1) / g.dx[a]);
        }
        const double gn = std::sqrt(g2);
        len += delta(ph, eps) * gn;
        if (!full) return;
        const std::array<double, 3> x{g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))};
        const double exact = initial_distance(x);
        shape += std::fabs(heaviside(ph, eps) - heaviside(exact, eps));
        // The zone's distance to the zero contour as the redistancing estimates it.
        const double d = subcell(ph, ax, nd, h).dist;
        if (d != kFar) offset_max = std::max(offset_max, std::fabs(d - exact) / h);
        if (std::fabs(ph) < band_ * h) {
          const double e = std::fabs(gn - 1.0);
          gsum += e;
          nband += 1;
          grad_max = std::max(grad_max, e);
        }
      });
    });
    out[0] = area * dv;
    out[1] = len * dv;
    out[2] = shape * dv;
    out[3] = gsum;
    out[4] = nband;
  });
  double mx[2] = {offset_max, grad_max};
  MPI_Allreduce(MPI_IN_PLACE, mx, 2, MPI_DOUBLE, MPI_MAX, m.comm());
  const double pi = std::numbers::pi;
  // The initial interface's length (area): a ring's (shell's) two sides.
  auto boundary = [&](double r) {
    return nd == 1 ? (r > 0 ? 2.0 : 0.0) : nd == 2 ? 2 * pi * r : 4 * pi * r * r;
  };
  const double l0 = width_ > 0 ? boundary(radius_ + 0.5 * width_) +
                                     boundary(std::max(radius_ - 0.5 * width_, 0.0))
                               : boundary(radius_);
  Measures q;
  q.area = sums[0];
  q.length = sums[1];
  q.shape_error = sums[2] / l0;
  q.offset_max = mx[0];
  q.grad_error_max = mx[1];
  q.grad_error_mean = sums[4] > 0 ? sums[3] / sums[4] : 0.0;
  q.band_zones = sums[4];
  return q;
}

physics::FileRecords LevelSet::file_records() const {
  return {.scalars = {{"area_start", area_start_},
                      {"length_start", length_start_},
                      {"redistance_steps", double(redistance_steps_)}}};
}

void LevelSet::restore(mesh::Mesh& /*m*/, const physics::CheckpointInfo& c) {
  const Measures q = measure(*mesh_);
  area_start_ = c.real_scalar("levelset_area_start").value_or(q.area);
  length_start_ = c.real_scalar("levelset_length_start").value_or(q.length);
  redistance_steps_ = static_cast<long>(c.real_scalar("levelset_redistance_steps").value_or(0));
}

nlohmann::json LevelSet::diagnostics(mesh::Mesh& m, physics::Diagnostic what) const {
  if (what == physics::Diagnostic::history_row) {
    const Measures q = measure(m, false);
    return {q.area, q.length};
  }
  const Measures q = measure(*mesh_);
  return {{"time", time_},
          {"steps", steps_},
          {"velocity", flow_ != nullptr ? "flow:" + flow_->field_name() : std::string("unk")},
          {"area_start", area_start_},
          {"area_end", q.area},
          {"area_change", (q.area - area_start_) / area_start_},
          {"length_start", length_start_},
          {"length_end", q.length},
          {"shape_error", q.shape_error},
          {"interface_offset_max", q.offset_max},
          // Over the band's zones: null where the band holds none (levelset.band = 0).
          {"gradient_error_max", q.band_zones > 0 ? nlohmann::json(q.grad_error_max) : nullptr},
          {"gradient_error_mean", q.band_zones > 0 ? nlohmann::json(q.grad_error_mean) : nullptr},
          {"band_zones", q.band_zones},
          {"redistance_steps", redistance_steps_}};
}

}  // namespace tessera::levelset

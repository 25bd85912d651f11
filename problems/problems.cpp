// Sedov (FLASH's set-up: Sedov 1959; sub-zone averaged energy deposit as in FLASH's
// Simulation_initBlock), Sod (Sod 1978; optionally rotated in the x-y plane) and a linear
// sound wave (exact cell averages) for convergence.
#include <mpi.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "physics/eos/eos.hpp"
#include "physics/hydro/hydro.hpp"
#include "problems/eos_state.hpp"
#include "problems/flame_problems.hpp"
#include "problems/gravity_problems.hpp"
#include "problems/problem.hpp"
#include "problems/pulse.hpp"
#include "problems/white_dwarf.hpp"

namespace tessera::problems {

using hydro::DENS;
using hydro::ETOT;
using hydro::MOMX;
using hydro::MOMY;
using hydro::MOMZ;

namespace {

template <class F>
void for_interior(const mesh::BlockShape& s, F&& f) {
  for (int k = 0; k < s.ni(2); ++k)
    for (int j = 0; j < s.ni(1); ++j)
      for (int i = 0; i < s.ni(0); ++i) f(i, j, k);
}

/// Internal energy density rho*e of (dens, temp) from the run's EOS (dens_temp).
double rhoe_at_temp(const eos::Eos& eos, double dens, double temp) {
  const ZoneState z = eos_state(eos, eos::Mode::dens_temp, dens, temp);
  return z.dens * z.eint;
}

/// Gamma1 of (dens, pres) from the run's EOS.
double gamc_of(const eos::Eos& eos, double dens, double pres) {
  return eos_state(eos, eos::Mode::dens_pres, dens, pres).gamc;
}

template <class View>
void set_state(const View& u, const mesh::BlockShape& s, int i, int j, int k, double d, double vx,
               double vy, double vz, double p, const eos::Eos& eos) {
  const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
  u(DENS, I, J, K) = d;
  u(MOMX, I, J, K) = d * vx;
  u(MOMY, I, J, K) = d * vy;
  u(MOMZ, I, J, K) = d * vz;
  u(ETOT, I, J, K) = rhoe_of(eos, d, p) + 0.5 * d * (vx * vx + vy * vy + vz * vz);
}

class Sedov final : public ProblemBase<Sedov> {
 public:
  Sedov(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        rho_(p.get_real("sedov.rho_ambient")),
        p_amb_(p.get_real("sedov.p_ambient")),
        e_(p.get_real("sedov.exp_energy")),
        r0_(p.get_real("sedov.r_init")),
        nsub_(static_cast<int>(p.get_int("sedov.nsubzones"))),
        ndim_(static_cast<int>(p.get_int("mesh.ndim"))) {
    ctr_[0] = p.get_real("sedov.xctr");
    ctr_[1] = p.get_real("sedov.yctr");
    ctr_[2] = p.get_real("sedov.zctr");
    const double pi = std::numbers::pi;
    // r-z (blast on the axis) and 1-D spherical deposit into a sphere, like 3-D.
    const auto& geo = p.get_string("mesh.geometry");
    radial_power_ = geo == "cylindrical" ? 1 : (geo == "spherical" ? 2 : 0);
    const int j = radial_power_ > 0 ? 3 : ndim_;
    const double vol =
        j == 1 ? 2.0 * r0_ : (j == 2 ? pi * r0_ * r0_ : 4.0 / 3.0 * pi * r0_ * r0_ * r0_);
    // The deposit's pressure: rho*e = E / V, p from the EOS (dens_ei).
    p_exp_ = eos_state(eos, eos::Mode::dens_ei, rho_, e_ / vol / rho_).pres;
    // What the sub-zone average below gives for a zone entirely outside r_init, summed
    // in the same order, so skipping those zones changes no bit.
    const int n = nsub_ * (ndim_ > 1 ? nsub_ : 1) * (ndim_ > 2 ? nsub_ : 1);
    double psum = 0.0;
    for (int q = 0; q < n; ++q) psum += p_amb_;
    p_far_ = psum * (1.0 / n);
  }
  std::string name() const override { return "sedov"; }

  // The deposit is the energy above the ambient rho e(p_ambient) of the zones that hold
  // some of it; its volume integral (zone volumes of the geometry; a full slab in 1-D,
  // per unit length in 2-D Cartesian) becomes exactly sedov.exp_energy. Summed per leaf
  // and added in canonical order: the same factor on any rank count.
  double normalise_deposit(mesh::Mesh& m) override {
    const double e_amb = rhoe_of(eos_, rho_, p_amb_);
    const auto& s = m.shape();
    const auto& t = m.tree();
    std::vector<double> mine(t.size(), 0.0), all(t.size(), 0.0);
    auto excess = [&](double etot) { return etot - e_amb; };
    auto held = [&](double etot) { return excess(etot) > 1e-12 * e_amb; };
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& g) {
      double sum = 0.0;
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double et = u(ETOT, i, j, k);
        if (held(et)) sum += excess(et) * g.volume(i - s.g(0));
      });
      mine[id] = sum;
    });
    MPI_Allreduce(mine.data(), all.data(), t.size(), MPI_DOUBLE, MPI_SUM, m.comm());
    double deposited = 0.0;
    for (int id = 0; id < t.size(); ++id) deposited += all[id];
    if (!(deposited > 0.0)) return 0.0;  // nothing deposited in the domain
    const double f = e_ / deposited;
    m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double et = u(ETOT, i, j, k);
        if (held(et)) u(ETOT, i, j, k) = e_amb + f * excess(et);
      });
    });
    return f;
  }

  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    const int ns[3] = {nsub_, ndim_ > 1 ? nsub_ : 1, ndim_ > 2 ? nsub_ : 1};
    const double wsub = 1.0 / (ns[0] * ns[1] * ns[2]);
    for_interior(s, [&](int i, int j, int k) {
      // A zone whose nearest point is outside r_init (with a margin for round-off in the
      // sub-zone positions) is ambient in every sub-zone.
      const int idx[3] = {i, j, k};
      double near2 = 0.0;
      for (int a = 0; a < ndim_; ++a) {
        const double c = g.lo[a] + (idx[a] + 0.5) * g.dx[a] - ctr_[a];
        const double d = std::max(std::abs(c) - 0.5 * g.dx[a], 0.0);
        near2 += d * d;
      }
      if (near2 > r0_ * r0_ * (1.0 + 1e-9)) {
        set_state(u, s, i, j, k, rho_, 0, 0, 0, radial_power_ ? p_amb_ : p_far_, eos_);
        return;
      }
      if (radial_power_ > 0) {
        // Curvilinear: sub-zones weigh by their volume (r or r^2 along axis 0).
        double psum = 0.0, wsum = 0.0;
        for (int b = 0; b < ns[1]; ++b)
          for (int a = 0; a < ns[0]; ++a) {
            const double r = g.lo[0] + (i + (a + 0.5) / ns[0]) * g.dx[0];
            const double x = r - ctr_[0];
            const double y =
                ndim_ > 1 ? g.lo[1] + (j + (b + 0.5) / ns[1]) * g.dx[1] - ctr_[1] : 0.0;
            const double w = radial_power_ == 1 ? r : r * r;
            psum += w * (std::sqrt(x * x + y * y) < r0_ ? p_exp_ : p_amb_);
            wsum += w;
          }
        set_state(u, s, i, j, k, rho_, 0, 0, 0, psum / wsum, eos_);
        return;
      }
      // Average the pressure over nsub^d sub-zones: p_exp inside r_init, ambient outside.
      double psum = 0.0;
      for (int c = 0; c < ns[2]; ++c)
        for (int b = 0; b < ns[1]; ++b)
          for (int a = 0; a < ns[0]; ++a) {
            const double x = g.lo[0] + (i + (a + 0.5) / ns[0]) * g.dx[0] - ctr_[0];
            const double y =
                ndim_ > 1 ? g.lo[1] + (j + (b + 0.5) / ns[1]) * g.dx[1] - ctr_[1] : 0.0;
            const double z =
                ndim_ > 2 ? g.lo[2] + (k + (c + 0.5) / ns[2]) * g.dx[2] - ctr_[2] : 0.0;
            const double r = std::sqrt(x * x + y * y + z * z);
            psum += r < r0_ ? p_exp_ : p_amb_;
          }
      set_state(u, s, i, j, k, rho_, 0, 0, 0, psum * wsub, eos_);
    });
  }

 private:
  const eos::Eos& eos_;
  double rho_, p_amb_, e_, r0_;
  int nsub_, ndim_;
  int radial_power_ = 0;  ///< sub-zone volume weight r^power (curvilinear geometry)
  double ctr_[3];
  double p_exp_, p_far_;
};

class Sod final : public ProblemBase<Sod> {
 public:
  Sod(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        dl_(p.get_real("sod.rho_left")),
        dr_(p.get_real("sod.rho_right")),
        pl_(p.get_real("sod.p_left")),
        pr_(p.get_real("sod.p_right")),
        ul_(p.get_real("sod.u_left")),
        ur_(p.get_real("sod.u_right")),
        posn_(p.get_real("sod.posn")),
        ndim_(static_cast<int>(p.get_int("mesh.ndim"))) {
    const double th = p.get_real("sod.angle") * std::numbers::pi / 180.0;
    nx_ = std::cos(th);
    ny_ = ndim_ > 1 ? std::sin(th) : 0.0;
    if (ndim_ == 1) nx_ = 1.0;
    yc_ = 0.5 * (p.get_real("mesh.ymin") + p.get_real("mesh.ymax"));
    // Given temperatures (> 0) take precedence over the pressures (dens_temp).
    const double tl = p.get_real("sod.temp_left"), tr = p.get_real("sod.temp_right");
    rhoe_l_ = tl > 0 ? rhoe_at_temp(eos, dl_, tl) : rhoe_of(eos, dl_, pl_);
    rhoe_r_ = tr > 0 ? rhoe_at_temp(eos, dr_, tr) : rhoe_of(eos, dr_, pr_);
  }
  std::string name() const override { return "sod"; }
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    // The interface is the plane through (posn, y-centre) normal to n = (cos a, sin a);
    // cells cut by it get volume-weighted averages (8 sub-samples per axis).
    constexpr int nsub = 8;
    const int ns[2] = {nsub, ndim_ > 1 ? nsub : 1};
    for_interior(s, [&](int i, int j, int k) {
      int left = 0;
      for (int b = 0; b < ns[1]; ++b)
        for (int a = 0; a < ns[0]; ++a) {
          const double x = g.lo[0] + (i + (a + 0.5) / ns[0]) * g.dx[0];
          const double y = ndim_ > 1 ? g.lo[1] + (j + (b + 0.5) / ns[1]) * g.dx[1] : yc_;
          left += ((x - posn_) * nx_ + (y - yc_) * ny_) < 0.0;
        }
      const double f = double(left) / (ns[0] * ns[1]);
      // Conserved averages: mix mass, momentum and energy by volume fraction.
      const double d = f * dl_ + (1 - f) * dr_;
      const double m = f * dl_ * ul_ + (1 - f) * dr_ * ur_;
      const double e =
          f * (rhoe_l_ + 0.5 * dl_ * ul_ * ul_) + (1 - f) * (rhoe_r_ + 0.5 * dr_ * ur_ * ur_);
      const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
      u(DENS, I, J, K) = d;
      u(MOMX, I, J, K) = m * nx_;
      u(MOMY, I, J, K) = m * ny_;
      u(MOMZ, I, J, K) = 0.0;
      u(ETOT, I, J, K) = e;
    });
  }

 private:
  const eos::Eos& eos_;
  double dl_, dr_, pl_, pr_, ul_, ur_, posn_;
  int ndim_;
  double nx_ = 1, ny_ = 0, yc_ = 0;
  double rhoe_l_ = 0, rhoe_r_ = 0;
};

class SoundWave final : public ProblemBase<SoundWave> {
 public:
  SoundWave(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        rho0_(p.get_real("sound_wave.rho0")),
        p0_(p.get_real("sound_wave.p0")),
        amp_(p.get_real("sound_wave.amplitude")),
        ndim_(static_cast<int>(p.get_int("mesh.ndim"))) {
    const char* n[3] = {"sound_wave.nx_waves", "sound_wave.ny_waves", "sound_wave.nz_waves"};
    const char* lo[3] = {"mesh.xmin", "mesh.ymin", "mesh.zmin"};
    const char* hi[3] = {"mesh.xmax", "mesh.ymax", "mesh.zmax"};
    double k2 = 0;
    for (int a = 0; a < 3; ++a) {
      k_[a] = a < ndim_ ? 2.0 * std::numbers::pi * p.get_int(n[a]) /
                              (p.get_real(hi[a]) - p.get_real(lo[a]))
                        : 0.0;
      k2 += k_[a] * k_[a];
    }
    if (k2 == 0)
      throw Error("sound_wave: at least one of nx_waves, ny_waves, nz_waves must be non-zero");
    c_ = std::sqrt(gamc_of(eos, rho0_, p0_) * p0_ / rho0_);
    for (int a = 0; a < 3; ++a) n_[a] = k_[a] / std::sqrt(k2);
  }
  std::string name() const override { return "sound_wave"; }
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    auto sinc = [](double x) { return x == 0.0 ? 1.0 : std::sin(x) / x; };
    double damp = 1.0;  // cell average of sin(k.x) = sin(k.x_c) prod sinc(k_a dx_a / 2)
    for (int a = 0; a < ndim_; ++a) damp *= sinc(0.5 * k_[a] * g.dx[a]);
    for_interior(s, [&](int i, int j, int k) {
      const double ph =
          k_[0] * g.x(i) + (ndim_ > 1 ? k_[1] * g.y(j) : 0.0) + (ndim_ > 2 ? k_[2] * g.z(k) : 0.0);
      const double w = amp_ * std::sin(ph) * damp;
      const double d = rho0_ * (1 + w);
      const double v = c_ * w;
      const double p = p0_ + c_ * c_ * rho0_ * w;
      set_state(u, s, i, j, k, d, v * n_[0], v * n_[1], v * n_[2], p, eos_);
    });
  }

 private:
  const eos::Eos& eos_;
  double rho0_, p0_, amp_;
  int ndim_;
  double k_[3]{}, n_[3]{}, c_ = 1;
};

// A uniform flow carrying a disc (2-D) or ball (3-D) or slab (1-D) of a mass scalar or
// species across a periodic box: the first mass scalar of unk is `inside` within radius r
// of the centre and `outside` elsewhere (cell averages by sub-sampling); with species,
// the second species takes the rest so that they sum to 1.
class Advection final : public ProblemBase<Advection> {
 public:
  Advection(const base::Params& p, const eos::Eos& eos)
      : rho_(p.get_real("advection.rho")),
        p0_(p.get_real("advection.p")),
        r_(p.get_real("advection.radius")),
        in_(p.get_real("advection.inside")),
        out_(p.get_real("advection.outside")),
        ndim_(static_cast<int>(p.get_int("mesh.ndim"))) {
    v_[0] = p.get_real("advection.velx");
    v_[1] = p.get_real("advection.vely");
    v_[2] = p.get_real("advection.velz");
    const char* lo[3] = {"mesh.xmin", "mesh.ymin", "mesh.zmin"};
    const char* hi[3] = {"mesh.xmax", "mesh.ymax", "mesh.zmax"};
    for (int a = 0; a < 3; ++a) ctr_[a] = 0.5 * (p.get_real(lo[a]) + p.get_real(hi[a]));
    rho_in_ = p.get_real("advection.rho_inside");
    if (rho_in_ <= 0) rho_in_ = rho_;
    rhoe_ = rhoe_of(eos, rho_, p0_);
    rhoe_in_ = rhoe_of(eos, rho_in_, p0_);
    const auto& species = p.get_string_list("composition.species");
    species_ = std::vector<std::string>(species.begin(), species.end());
  }
  std::string name() const override { return "advection"; }
  void bind(const mesh::Mesh& m) override {
    for (int v = 0; v < static_cast<int>(m.vars().size()); ++v)
      if (m.vars()[v].kind == mesh::VarKind::mass_scalar) scalars_.push_back(v);
    if (scalars_.empty())
      throw Error("advection: declare a mass scalar (composition.species or composition.scalars)");
    // The second mass scalar completes the first only if both are species.
    pair_ = species_.size() >= 2 && m.vars()[scalars_[0]].name == species_[0] &&
            m.vars()[scalars_[1]].name == species_[1];
  }
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    constexpr int nsub = 4;
    const int ns[3] = {nsub, ndim_ > 1 ? nsub : 1, ndim_ > 2 ? nsub : 1};
    for_interior(s, [&](int i, int j, int k) {
      int inside = 0;
      for (int c = 0; c < ns[2]; ++c)
        for (int b = 0; b < ns[1]; ++b)
          for (int a = 0; a < ns[0]; ++a) {
            const double x = g.lo[0] + (i + (a + 0.5) / ns[0]) * g.dx[0] - ctr_[0];
            const double y = ndim_ > 1 ? g.lo[1] + (j + (b + 0.5) / ns[1]) * g.dx[1] - ctr_[1] : 0;
            const double z = ndim_ > 2 ? g.lo[2] + (k + (c + 0.5) / ns[2]) * g.dx[2] - ctr_[2] : 0;
            inside += x * x + y * y + z * z < r_ * r_;
          }
      const double f = double(inside) / (ns[0] * ns[1] * ns[2]);
      const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
      // Volume fractions mix the two densities and the scalar's partial densities.
      const double d = f * rho_in_ + (1 - f) * rho_;
      u(DENS, I, J, K) = d;
      u(MOMX, I, J, K) = d * v_[0];
      u(MOMY, I, J, K) = d * v_[1];
      u(MOMZ, I, J, K) = d * v_[2];
      u(ETOT, I, J, K) = f * rhoe_in_ + (1 - f) * rhoe_ +
                         0.5 * d * (v_[0] * v_[0] + v_[1] * v_[1] + v_[2] * v_[2]);
      const double x = (f * rho_in_ * in_ + (1 - f) * rho_ * out_) / d;
      u(scalars_[0], I, J, K) = x;
      if (pair_) u(scalars_[1], I, J, K) = 1.0 - x;
    });
  }

 private:
  double rho_, p0_, r_, in_, out_;
  int ndim_;
  double v_[3]{}, ctr_[3]{}, rhoe_ = 0, rho_in_ = 0, rhoe_in_ = 0;
  std::vector<int> scalars_;
  std::vector<std::string> species_;
  bool pair_ = false;
};

/// Solid-body rotation about (xctr, yctr) in the x-y plane, v = omega (-(y - yc), x - xc),
/// uniform density and pressure: the prescribed flow of the tracer integrator test
/// (problems/tracers_rotation_2d.toml, driver.operators = ["flow"]). Cell values are the
/// field at the centre, which is the cell average of a linear field.
class Rotation final : public ProblemBase<Rotation> {
 public:
  Rotation(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        omega_(p.get_real("rotation.omega")),
        xc_(p.get_real("rotation.xctr")),
        yc_(p.get_real("rotation.yctr")),
        rho_(p.get_real("rotation.rho")),
        p_(p.get_real("rotation.p")) {}
  std::string name() const override { return "rotation"; }
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    for_interior(s, [&](int i, int j, int k) {
      const double vx = -omega_ * (g.y(j) - yc_), vy = omega_ * (g.x(i) - xc_);
      set_state(u, s, i, j, k, rho_, vx, vy, 0.0, p_, eos_);
    });
  }

 private:
  const eos::Eos& eos_;
  double omega_, xc_, yc_, rho_, p_;
};

/// The Gaussian diffusion pulse (problem.name = "diffusion_pulse", verification.md §E): a
/// fluid at rest (density pulse.rho, pressure pulse.p), which the diffusion unit does not
/// couple to, and the pulse (problems/pulse.hpp) as the exact solution the unit sets its
/// species from, takes its exact boundary values from and reports its error against.
class DiffusionPulse final : public ProblemBase<DiffusionPulse> {
 public:
  DiffusionPulse(const base::Params& p, const eos::Eos& eos)
      : eos_(eos), rho_(p.get_real("pulse.rho")), p_(p.get_real("pulse.p")), pulse_(p) {}
  std::string name() const override { return "diffusion_pulse"; }
  const physics::ExactSolution* exact_solution() const override { return &pulse_; }
  template <class View>
  void init(const View& u, const mesh::BlockGeom&, const mesh::BlockShape& s) const {
    for_interior(
        s, [&](int i, int j, int k) { set_state(u, s, i, j, k, rho_, 0.0, 0.0, 0.0, p_, eos_); });
  }

 private:
  const eos::Eos& eos_;
  double rho_, p_;
  GaussianPulse pulse_;
};

/// A fluid at rest (density and pressure 1) for a run whose velocity the flow unit sets
/// (problem.name = "prescribed_flow", flow.field names the field): the level-set problems.
class PrescribedFlow final : public ProblemBase<PrescribedFlow> {
 public:
  explicit PrescribedFlow(const eos::Eos& eos) : eos_(eos) {}
  std::string name() const override { return "prescribed_flow"; }
  template <class View>
  void init(const View& u, const mesh::BlockGeom&, const mesh::BlockShape& s) const {
    for_interior(
        s, [&](int i, int j, int k) { set_state(u, s, i, j, k, 1.0, 0.0, 0.0, 0.0, 1.0, eos_); });
  }

 private:
  const eos::Eos& eos_;
};

/// The moments of the M1 unit (owner "m1"), four per species and group (E, Fx, Fy, Fz), in
/// unk order; an Error if the run has none.
std::vector<int> m1_moments(const mesh::Mesh& m, const std::string& problem) {
  std::vector<int> v;
  for (int i = 0; i < static_cast<int>(m.vars().size()); ++i)
    if (m.vars()[std::size_t(i)].owner == "m1") v.push_back(i);
  if (v.empty() || v.size() % 4 != 0)
    throw Error("problem.name = \"" + problem +
                "\" sets the M1 moments: add \"m1\" to "
                "driver.operators");
  return v;
}

/// Thornado's streaming sine wave (problem.name = "streaming_sine_wave", verification.md
/// §L): every species and group E = ssw.mean + ssw.amplitude sin(2 pi x / L), L the domain's
/// length along x, F = (1 - 1e-12) c E along x (free streaming, f = 1); with ssw.direction =
/// "diagonal" (2-D, a square domain) the wave runs along (1, 1) / sqrt(2):
/// E = mean + amplitude sin(2 pi (x + y) / L), which returns at t = L / (sqrt(2) c).
/// A fluid at rest (density and pressure 1) under it.
class StreamingSineWave final : public ProblemBase<StreamingSineWave> {
 public:
  StreamingSineWave(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        mean_(p.get_real("ssw.mean")),
        amp_(p.get_real("ssw.amplitude")),
        c_(p.get_real("m1.speed")),
        diagonal_(p.get_string("ssw.direction") == "diagonal"),
        x0_(p.get_real("mesh.xmin")),
        len_(p.get_real("mesh.xmax") - p.get_real("mesh.xmin")),
        y0_(p.get_real("mesh.ymin")) {}
  std::string name() const override { return "streaming_sine_wave"; }
  void bind(const mesh::Mesh& m) override {
    v_ = m1_moments(m, name());
    if (diagonal_ && m.ndim() != 2) throw Error("ssw.direction = \"diagonal\" needs mesh.ndim = 2");
  }
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    const double k = 2 * std::numbers::pi / len_;
    const double n[3] = {diagonal_ ? std::sqrt(0.5) : 1.0, diagonal_ ? std::sqrt(0.5) : 0.0, 0.0};
    for_interior(s, [&](int i, int j, int kk) {
      set_state(u, s, i, j, kk, 1.0, 0.0, 0.0, 0.0, 1.0, eos_);
      const double phase = (g.x(i) - x0_) + (diagonal_ ? g.y(j) - y0_ : 0.0);
      const double e = mean_ + amp_ * std::sin(k * phase);
      const int I = i + s.g(0), J = j + s.g(1), K = kk + s.g(2);
      for (std::size_t q = 0; q < v_.size(); q += 4) {
        u(v_[q], I, J, K) = e;
        for (int a = 0; a < 3; ++a)
          u(v_[q + 1 + std::size_t(a)], I, J, K) = (1.0 - 1e-12) * c_ * e * n[a];
      }
    });
  }

 private:
  const eos::Eos& eos_;
  double mean_, amp_, c_;
  bool diagonal_;
  double x0_, len_, y0_;
  std::vector<int> v_;
};

/// A radiation pulse at rest (problem.name = "radiation_pulse"): every species and group
/// E = pulse.background + pulse.amplitude exp(-|x - x0|^2 / (4 D pulse.t0)), D = c / (3 (kappa_a
/// + kappa_s)) of the first group, F = 0, in a fluid of density pulse.rho and pressure
/// pulse.p: the M1 unit's diffusion-limit test (the diffusion unit's pulse at t = 0), a
/// uniform radiation field (amplitude 0: the collision box), or vacuum (both 0: the shadow
/// test's beam fills it).
class RadiationPulse final : public ProblemBase<RadiationPulse> {
 public:
  RadiationPulse(const base::Params& p, const eos::Eos& eos)
      : eos_(eos), rho_(p.get_real("pulse.rho")), p_(p.get_real("pulse.p")), pulse_(p) {
    const auto ka = p.get_number_list("m1.kappa_a"), ks = p.get_number_list("m1.kappa_s");
    const double chi = (ka.empty() ? 0.0 : ka[0]) + (ks.empty() ? 0.0 : ks[0]);
    d_ = chi > 0 ? p.get_real("m1.speed") / (3 * chi) : 0.0;
    if (pulse_.amplitude != 0.0 && d_ <= 0.0)
      throw Error("radiation_pulse: a pulse needs an opacity (m1.kappa_a or m1.kappa_s > 0)");
  }
  std::string name() const override { return "radiation_pulse"; }
  void bind(const mesh::Mesh& m) override {
    v_ = m1_moments(m, name());
    nd_ = m.ndim();
  }
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    for_interior(s, [&](int i, int j, int k) {
      set_state(u, s, i, j, k, rho_, 0.0, 0.0, 0.0, p_, eos_);
      // The pulse at t = 0 (no amplitude: no opacity needed, D = 0).
      const double e = pulse_.amplitude != 0.0
                           ? pulse_.diffusing({g.x(i), g.y(j), g.z(k)}, 0.0, d_, nd_, nd_)
                           : pulse_.background + 0.0;
      const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
      for (std::size_t q = 0; q < v_.size(); q += 4) {
        u(v_[q], I, J, K) = e;
        for (int a = 1; a < 4; ++a) u(v_[q + std::size_t(a)], I, J, K) = 0.0;
      }
    });
  }

 private:
  const eos::Eos& eos_;
  double rho_, p_;
  GaussianPulse pulse_;
  double d_ = 0;
  int nd_ = 3;
  std::vector<int> v_;
};

}  // namespace

GaussianPulse::GaussianPulse(const base::Params& p)
    : t0(p.get_real("pulse.t0")),
      amplitude(p.get_real("pulse.amplitude")),
      background(p.get_real("pulse.background")),
      x0{p.get_real("pulse.x0"), p.get_real("pulse.y0"), p.get_real("pulse.z0")},
      period(p.get_real("pulse.period")) {
  if (period > 0.0 && p.get_string("mesh.geometry") != "cartesian")
    throw Error("pulse.period = " + std::to_string(period) +
                ": a lattice of pulses needs mesh.geometry = \"cartesian\"");
}

void declare_params(base::Params& p) {
  p.declare_string("problem.name", "sedov",
                   {"sedov", "sod", "sound_wave", "advection", "white_dwarf", "maclaurin",
                    "flame_1d", "rotation", "diffusion_pulse", "prescribed_flow",
                    "streaming_sine_wave", "radiation_pulse", "pic"},
                   "problem set-up (pic: zeroes unk; the pic unit loads the plasma, only with "
                   "driver.operators = [\"pic\"])");
  p.declare_real("pulse.t0", 0.002, 1e-300, 1e300,
                 "the Gaussian pulse's age at t = 0: E = E_bg + A (t0 / (t0 + t))^(d/2) "
                 "exp(-r^2 / (4 D (t0 + t)))");
  p.declare_real("pulse.amplitude", 1.0, -1e300, 1e300, "the pulse's peak A at t = 0");
  p.declare_real("pulse.background", 0.0, -1e300, 1e300, "the background E_bg");
  p.declare_real("pulse.x0", 0.0, -1e300, 1e300, "the pulse's centre x (r in r-z: 0)");
  p.declare_real("pulse.y0", 0.0, -1e300, 1e300, "the pulse's centre y (z in r-z)");
  p.declare_real("pulse.z0", 0.0, -1e300, 1e300, "the pulse's centre z");
  p.declare_real("pulse.period", 0.0, 0.0, 1e300,
                 "0: one pulse; L > 0: a lattice of pulses L apart along every axis (a "
                 "periodic box of whole periods repeats the problem: weak scaling)");
  p.declare_real("pulse.rho", 1.0, 1e-300, 1e300, "density of the fluid at rest");
  p.declare_real("pulse.p", 1.0, 1e-300, 1e300, "pressure of the fluid at rest");
  p.declare_real("ssw.mean", 0.5, -1e300, 1e300, "the streaming sine wave's mean E");
  p.declare_real("ssw.amplitude", 0.49, -1e300, 1e300, "the streaming sine wave's amplitude");
  p.declare_string("ssw.direction", "x", {"x", "diagonal"},
                   "the wave's direction: along x, or along (1, 1) / sqrt(2) (2-D, square)");
  p.declare_real("rotation.omega", 2 * std::numbers::pi, -1e300, 1e300,
                 "angular velocity of the solid-body rotation (rad/s)");
  p.declare_real("rotation.xctr", 0.5, -1e300, 1e300, "rotation axis, x");
  p.declare_real("rotation.yctr", 0.5, -1e300, 1e300, "rotation axis, y");
  p.declare_real("rotation.rho", 1.0, 1e-300, 1e300, "density of the rotating flow");
  p.declare_real("rotation.p", 1.0, 1e-300, 1e300, "pressure of the rotating flow");
  declare_white_dwarf_params(p);
  declare_flame_params(p);
  p.declare_real("advection.rho", 1.0, 1e-300, 1e300, "density of the uniform flow");
  p.declare_real("advection.p", 1.0, 1e-300, 1e300, "pressure of the uniform flow");
  p.declare_real("advection.velx", 1.0, -1e300, 1e300, "flow velocity x");
  p.declare_real("advection.vely", 0.5, -1e300, 1e300, "flow velocity y");
  p.declare_real("advection.velz", 0.25, -1e300, 1e300, "flow velocity z");
  p.declare_real("advection.radius", 0.25, 0.0, 1e300, "radius of the scalar blob");
  p.declare_real("advection.rho_inside", 0.0, 0.0, 1e300,
                 "density inside the blob (0: advection.rho; same pressure)");
  p.declare_real("advection.inside", 1.0, 0.0, 1.0, "first mass scalar inside the blob");
  p.declare_real("advection.outside", 0.0, 0.0, 1.0, "first mass scalar outside the blob");
  p.declare_real("sedov.rho_ambient", 1.0, 1e-300, 1e300, "ambient density (g/cm^3)");
  p.declare_real("sedov.p_ambient", 1e-5, 1e-300, 1e300, "ambient pressure (erg/cm^3)");
  p.declare_real("sedov.exp_energy", 1.0, 1e-300, 1e300, "explosion energy (erg)");
  p.declare_real("sedov.r_init", 0.013671875, 1e-300, 1e300, "radius of the energy deposit (cm)");
  p.declare_real("sedov.xctr", 0.5, -1e300, 1e300, "explosion centre x (cm)");
  p.declare_real("sedov.yctr", 0.5, -1e300, 1e300, "explosion centre y (cm)");
  p.declare_real("sedov.zctr", 0.5, -1e300, 1e300, "explosion centre z (cm)");
  p.declare_int("sedov.nsubzones", 7, 1, 64, "sub-zones per axis for the deposit average");
  p.declare_real("sod.rho_left", 1.0, 1e-300, 1e300, "density left of the interface");
  p.declare_real("sod.rho_right", 0.125, 1e-300, 1e300, "density right of the interface");
  p.declare_real("sod.p_left", 1.0, 1e-300, 1e300, "pressure left of the interface");
  p.declare_real("sod.p_right", 0.1, 1e-300, 1e300, "pressure right of the interface");
  p.declare_real("sod.u_left", 0.0, -1e300, 1e300, "velocity along the normal, left");
  p.declare_real("sod.u_right", 0.0, -1e300, 1e300, "velocity along the normal, right");
  p.declare_real("sod.posn", 0.5, -1e300, 1e300, "interface position on x at the y-centre");
  p.declare_real("sod.temp_left", 0.0, 0.0, 1e13,
                 "temperature left of the interface (K; > 0: used instead of p_left)");
  p.declare_real("sod.temp_right", 0.0, 0.0, 1e13,
                 "temperature right of the interface (K; > 0: used instead of p_right)");
  p.declare_real("sod.angle", 0.0, -360.0, 360.0,
                 "angle of the interface normal to x (degrees, 2-D)");
  p.declare_real("sound_wave.rho0", 1.0, 1e-300, 1e300, "background density");
  p.declare_real("sound_wave.p0", 1.0 / 1.4, 1e-300, 1e300, "background pressure");
  p.declare_real("sound_wave.amplitude", 1e-6, 0.0, 0.5, "relative density amplitude");
  p.declare_int("sound_wave.nx_waves", 1, -64, 64, "wavelengths across the domain along x");
  p.declare_int("sound_wave.ny_waves", 0, -64, 64, "wavelengths across the domain along y");
  p.declare_int("sound_wave.nz_waves", 0, -64, 64, "wavelengths across the domain along z");
  declare_gravity_problem_params(p);
}

namespace {
/// problem.name = "pic": unk zeroed; the pic unit loads the plasma in its initialise.
class PicProblem final : public ProblemBase<PicProblem> {
 public:
  std::string name() const override { return "pic"; }
  template <class View>
  void init(const View& u, const mesh::BlockGeom&, const mesh::BlockShape& s) const {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      for (int v = 0; v < s.nvar; ++v) u(v, i, j, k) = 0.0;
    });
  }
};
}  // namespace

std::unique_ptr<Problem> make_without_eos(const base::Params& p) {
  const auto& n = p.get_string("problem.name");
  if (n == "pic") return std::make_unique<PicProblem>();
  throw Error("problem.name = \"" + n +
              "\" needs a fluid and its EOS; a run without one (driver.operators = "
              "[\"pic\"]) takes problem.name = \"pic\"");
}

std::unique_ptr<Problem> make(const base::Params& p, const eos::Eos& eos) {
  const auto& n = p.get_string("problem.name");
  if (n == "pic") throw Error("problem.name = \"pic\" needs driver.operators = [\"pic\"] (alone)");
  if (n == "sedov") return std::make_unique<Sedov>(p, eos);
  if (n == "sod") return std::make_unique<Sod>(p, eos);
  if (n == "advection") return std::make_unique<Advection>(p, eos);
  if (n == "white_dwarf") return make_white_dwarf(p, eos);
  if (n == "maclaurin") return make_maclaurin(p, eos);
  if (n == "flame_1d") return make_flame_1d(p, eos);
  if (n == "rotation") return std::make_unique<Rotation>(p, eos);
  if (n == "diffusion_pulse") return std::make_unique<DiffusionPulse>(p, eos);
  if (n == "prescribed_flow") return std::make_unique<PrescribedFlow>(eos);
  if (n == "streaming_sine_wave") return std::make_unique<StreamingSineWave>(p, eos);
  if (n == "radiation_pulse") return std::make_unique<RadiationPulse>(p, eos);
  return std::make_unique<SoundWave>(p, eos);
}

}  // namespace tessera::problems

// The flame operator: ADR front (adr.hpp) with per-zone speeds (flame_speed.hpp). See
// flame.hpp for the contract; the numerics and their sources are in the two headers.
#include "physics/flame/flame.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/flame/flame_speed.hpp"

namespace tessera::flame {

double SpeedOptions::speed_at(double rho, double delta) const {
  return speed_at(rho, delta, gravity);
}

double SpeedOptions::speed_at(double rho, double delta, double g) const {
  double s = model == SpeedModel::constant ? speed : laminar_speed_co(rho);
  if (buoyancy) s = std::max(s, buoyant_speed(atwood, g, delta, m));
  if (quench) s *= quench_factor(rho, quench_rho0, quench_rho1);
  return s;
}

void Flame::declare_params(base::Params& p) {
  p.declare_string("flame.speed_model", "laminar_co", {"constant", "laminar_co"},
                   "flame speed: constant (flame.speed) or the laminar C/O fit of the density");
  p.declare_real("flame.speed", 8e6, 0.0, 1e10, "flame speed of the constant model (cm/s)");
  p.declare_bool("flame.buoyancy", false,
                 "buoyancy compensation s = max(s, 0.5 sqrt(A g m dx)) (g: flame.gravity_accel or "
                 "the gravity operator's local field)");
  p.declare_real("flame.atwood", 0.1, 0.0, 1.0,
                 "Atwood number A of fuel and ash for the buoyancy compensation (constant)");
  p.declare_real("flame.buoyancy_m", 0.06, 0.0, 10.0, "factor m of the buoyancy compensation");
  p.declare_real("flame.gravity_accel", 0.0, 0.0, 1e20,
                 "|g| (cm/s^2) for the buoyancy compensation; 0 with the gravity operator: "
                 "each zone's |g| from the gravity unit (gacx, gacy, gacz)");
  p.declare_bool("flame.quench", true, "switch the flame off at low density (3x^2 - 2x^3 ramp)");
  p.declare_real("flame.quench_dens_min", 1e6, 0.0, 1e20,
                 "density (g/cm^3) below which the flame speed is 0");
  p.declare_real("flame.quench_dens_max", 1e7, 0.0, 1e20,
                 "density (g/cm^3) above which the flame speed is not reduced");
  p.declare_bool("flame.expansion_correction", true,
                 "local speed s rho_u / rho (rho_u from the burn unit) so that the front moves "
                 "at s relative to the fuel");
  p.declare_real("flame.courant", 0.05, 1e-6, 0.5,
                 "largest flame Courant number s dt / dx (<= 0.5 keeps the explicit steps "
                 "stable; 0.01: front speed 0.997 s, 0.05: 0.980 s)");
}

Flame::Flame(const base::Params& p) {
  speed_.model = p.get_string("flame.speed_model") == "constant" ? SpeedModel::constant
                                                                 : SpeedModel::laminar_co;
  speed_.speed = p.get_real("flame.speed");
  speed_.buoyancy = p.get_bool("flame.buoyancy");
  speed_.atwood = p.get_real("flame.atwood");
  speed_.m = p.get_real("flame.buoyancy_m");
  speed_.gravity = p.get_real("flame.gravity_accel");
  speed_.quench = p.get_bool("flame.quench");
  speed_.quench_rho0 = p.get_real("flame.quench_dens_min");
  speed_.quench_rho1 = p.get_real("flame.quench_dens_max");
  if (speed_.quench && !(speed_.quench_rho1 > speed_.quench_rho0))
    throw Error("flame.quench_dens_max must be above flame.quench_dens_min");
  courant_ = p.get_real("flame.courant");
  expansion_ = p.get_bool("flame.expansion_correction");
}

physics::Declarations Flame::declarations() const {
  using mesh::VarKind;
  return {.variables = {mesh::VarInfo{"flam", -1, VarKind::mass_scalar, true, true, name()}
                            .checked_by_owner(),  // check(): in [0, 1]
                        {"fdph", -1, VarKind::auxiliary, false, false, name()},
                        {"fspd", -1, VarKind::auxiliary, false, true, name()}},
          .nguard = 2,
          .totals = {"burned_mass"}};
}

void Flame::bind(mesh::Mesh& m, const physics::Services& /*services*/,
                 const physics::RunContext& /*ctx*/) {
  idens_ = m.var_index("dens");
  iflam_ = m.var_index("flam");
  ifdph_ = m.var_index("fdph");
  ifspd_ = m.var_index("fspd");
  // Buoyancy with the local field: the gravity unit's gacx, gacy, gacz, unless |g| is given.
  local_g_ = speed_.buoyancy && !(speed_.gravity > 0.0);
  for (int a = 0; a < 3; ++a) igac_[a] = m.var_index(std::string("gac") + "xyz"[a]);
  if (local_g_ && igac_[0] < 0)
    throw Error("flame.buoyancy needs flame.gravity_accel > 0 or the gravity operator");
  gabs_.assign(m.shape().cells(), speed_.gravity);
  if (idens_ < 0) throw Error("flame: no unit declares 'dens' (the flame needs hydro)");
  phi1_.assign(m.shape().cells(), 0.0);
  spd_.assign(m.shape().cells(), 0.0);
  ratio_.assign(m.shape().cells(), 1.0);
}

void Flame::initialise(mesh::Mesh& m) {
  const auto& s = m.shape();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      u(ifdph_, i, j, k) = 0.0;
      u(ifspd_, i, j, k) = 0.0;  // max_dt of step 1: the speed without expansion
    });
  });
}

double Flame::max_dt(mesh::Mesh& m) const {
  const auto& s = m.shape();
  double rate = 0.0;  // max over zones of s / Delta
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    double dmin = g.dx[0];
    for (int a = 1; a < s.ndim; ++a) dmin = std::min(dmin, g.dx[a]);
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      // fspd: the last step's speed, expansion included (10 % margin for the front's
      // move since); kept in unk, so a restart takes the same dt.
      const double sp =
          std::max(speed_.speed_at(u(idens_, i, j, k), g.dx[0]), 1.1 * u(ifspd_, i, j, k));
      rate = std::max(rate, sp / dmin);
    });
  });
  return rate > 0.0 ? courant_ / rate : std::numeric_limits<double>::max();
}

template <class View>
void Flame::local_gravity(const View& u, const mesh::BlockShape& s) {
  // gac* are guard-filled: the fill at the start of advance() brought the guard zones.
  const std::size_t n = s.cells();
  for (std::size_t c = 0; c < n; ++c) {
    double g2 = 0.0;
    for (int a = 0; a < s.ndim; ++a) {
      const double ga = u.row(igac_[a], 0, 0)[c];
      g2 += ga * ga;
    }
    gabs_[c] = std::sqrt(g2);
  }
}

void Flame::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("flame");
  const auto& s = m.shape();
  m.fill_guards();  // flam and dens in the guard zones (every guard-filled variable)
  const int n0 = s.n(0), n1 = s.n(1), n2 = s.n(2);
  double worst = 0.0;
  const bool expand = expansion_ && fuel_density_ != nullptr;
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    // Flash-X uses the zone width along x for the front's coefficients.
    const double delta = g.dx[0];
    if (expand)
      for (int k = 0; k < n2; ++k)
        for (int j = 0; j < n1; ++j)
          fuel_density_->ratio_row(u, s, j, k, ratio_.data() + (std::size_t(k) * n1 + j) * n0);
    if (local_g_) local_gravity(u, s);
    // Step 1: reaction on the whole block array, guard zones included, so that the
    // diffusion of Step 2 sees the reacted field on its whole stencil.
    for (int k = 0; k < n2; ++k)
      for (int j = 0; j < n1; ++j)
        for (int i = 0; i < n0; ++i) {
          const std::size_t c = (std::size_t(k) * n1 + j) * n0 + i;
          // Speed of the matter's unburned density, times rho_u / rho (expansion).
          const double r = expand ? ratio_[c] : 1.0;
          const double sp = speed_.speed_at(r * u(idens_, i, j, k), delta, gabs_[c]) * r;
          spd_[c] = sp;
          phi1_[c] = model_.react(u(iflam_, i, j, k), sp, delta, dt);
        }
    // Step 2: diffusion with the five-point fourth-order Laplacian, then Step 3: clip.
    const long stride[3] = {1, long(n0), long(n0) * n1};
    const double inv_dx2[3] = {1.0 / (g.dx[0] * g.dx[0]), 1.0 / (g.dx[1] * g.dx[1]),
                               1.0 / (g.dx[2] * g.dx[2])};
    const double curv = g.geometry == mesh::Geometry::cylindrical
                            ? 1.0
                            : (g.geometry == mesh::Geometry::spherical ? 2.0 : 0.0);
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      const std::size_t c = (std::size_t(k) * n1 + j) * n0 + i;
      const double* f = phi1_.data() + c;
      double lap = 0.0;
      for (int a = 0; a < s.ndim; ++a) lap += d2_5pt(f, stride[a]) * inv_dx2[a];
      if (curv > 0.0) lap += curv / g.x(i - s.g(0)) * d1_5pt(f, 1) / g.dx[0];
      const double phi = f[0] + dt * model_.kappa(spd_[c], delta) * lap;
      const double clipped = clip01(phi);
      worst = std::max(worst, std::fabs(phi - clipped));
      u(ifspd_, i, j, k) = spd_[c];
      u(ifdph_, i, j, k) = clipped - u(iflam_, i, j, k);
      u(iflam_, i, j, k) = clipped;
    });
  });
  largest_clip_ = std::max(largest_clip_, worst);
  ++steps_;
}

physics::BadZone Flame::check(mesh::Mesh& m) const {
  physics::BadZone bad;
  const auto& s = m.shape();
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
    if (bad.bad()) return;
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      const double phi = u(iflam_, i, j, k);
      // Hydro's upwinded advection keeps phi within [0, 1] up to round-off.
      if (!bad.bad() && !(phi >= -1e-10 && phi <= 1.0 + 1e-10)) {
        bad.node = id;
        bad.i = i - s.g(0);
        bad.j = j - s.g(1);
        bad.k = k - s.g(2);
        bad.value = phi;
        bad.what = "flame progress variable flam";
      }
    });
  });
  return bad;
}

nlohmann::json Flame::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  double clip = largest_clip_;
  MPI_Allreduce(MPI_IN_PLACE, &clip, 1, MPI_DOUBLE, MPI_MAX, comm);
  nlohmann::json j{
      {"speed_model", speed_.model == SpeedModel::constant ? "constant" : "laminar_co"},
      {"courant", courant_},
      {"expansion_correction", expansion_ && fuel_density_ != nullptr},
      {"steps", steps_},
      {"largest_clip", clip}};
  if (speed_.model == SpeedModel::constant) j["speed"] = speed_.speed;
  if (speed_.buoyancy) {
    j["atwood"] = speed_.atwood;
    if (local_g_)
      j["gravity_accel"] = "local |g| (gac*)";
    else
      j["gravity_accel"] = speed_.gravity;
  }
  return j;
}

physics::Registration Flame::registration() {
  return physics::registration_of<Flame>("flame", physics::UnitRole::operator_unit,
                                         "ADR flame front (reaction, five-point diffusion)", {},
                                         {"flame"});
}

}  // namespace tessera::flame

// The white dwarf of the Type Ia "EOS" test (verification.md §J): see white_dwarf.hpp.
#include "problems/white_dwarf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "base/constants.hpp"
#include "base/error.hpp"
#include "base/params.hpp"
#include "physics/eos/eos.hpp"
#include "physics/flame/adr.hpp"
#include "physics/hydro/hydro.hpp"
#include "problems/eos_state.hpp"

namespace tessera::problems {

namespace {

using constants::newton_g;
using constants::pi;

/// Pressure of (dens, temp) from the EOS.
double pressure_of(const eos::Eos& eos, double dens, double temp, long* calls) {
  const double p = eos_state(eos, eos::Mode::dens_temp, dens, temp).pres;
  if (!(p > 0))
    throw Error(
        fmt::format("white dwarf: pressure {} at dens = {:.6e}, temp = {:.6e}", p, dens, temp));
  if (calls) ++*calls;
  return p;
}

}  // namespace

double StarTemperature::operator()(double rho) const {
  if (rho >= rho_iso) return temp_c;
  return std::max(temp_fluff, temp_c * std::pow(rho / rho_iso, 2.0 / 3.0));
}

double density_of_pressure(const eos::Eos& eos, double pres, const StarTemperature& temp,
                           double guess, long* calls) {
  // f(x) = ln p(e^x, T(e^x)) - ln pres rises with x = ln rho: bracket, then Illinois.
  const double lp = std::log(pres);
  auto f = [&](double x) {
    const double d = std::exp(x);
    return std::log(pressure_of(eos, d, temp(d), calls)) - lp;
  };
  double a = std::log(guess), fa = f(a);
  if (fa == 0) return guess;
  double step = fa > 0 ? -0.05 : 0.05;
  double b = a + step, fb = f(b);
  for (int n = 0; fa * fb > 0; ++n) {
    if (n > 400) throw Error(fmt::format("white dwarf: no density has pressure {:.6e}", pres));
    a = b, fa = fb;
    step *= 1.6;
    b = a + step;
    fb = f(b);
  }
  // Converged on ln rho (where radiation dominates, p hardly depends on rho: a small
  // pressure residual would not pin the density).
  int side = 0;
  double prev = a;
  for (int it = 0; it < 200; ++it) {
    const double c = (a * fb - b * fa) / (fb - fa);
    const double fc = f(c);
    if (fc == 0 || std::fabs(c - prev) < 1e-13 || std::fabs(b - a) < 1e-13) return std::exp(c);
    prev = c;
    if (fc * fb > 0) {
      b = c, fb = fc;
      if (side == -1) fa *= 0.5;
      side = -1;
    } else {
      a = c, fa = fc;
      if (side == 1) fb *= 0.5;
      side = 1;
    }
  }
  return std::exp(0.5 * (a + b));
}

double StarProfile::density_at(double x) const {
  if (x >= r.back()) return 0.0;
  const auto it = std::upper_bound(r.begin(), r.end(), x);
  const std::size_t i = std::size_t(it - r.begin());  // r[i-1] <= x < r[i]
  const double w = (x - r[i - 1]) / (r[i] - r[i - 1]);
  return (1 - w) * dens[i - 1] + w * dens[i];
}

StarProfile build_star(const eos::Eos& eos, double rho_c, const StarTemperature& temp_c,
                       double rho_edge, double dr) {
  if (!(rho_edge < rho_c)) throw Error("white dwarf: wd.rho_fluff must be below wd.rho_c");
  StarProfile s;
  s.temp = temp_c;
  const double p_c = pressure_of(eos, rho_c, temp_c(rho_c), &s.eos_calls);
  const double p_edge = pressure_of(eos, rho_edge, temp_c(rho_edge), &s.eos_calls);
  s.r.push_back(0);
  s.dens.push_back(rho_c);
  s.pres.push_back(p_c);
  s.mass.push_back(0);
  // The first step from the centre by the series m = 4/3 pi rho_c r^3,
  // p = p_c - 2/3 pi G rho_c^2 r^2 (the ODE is singular at r = 0).
  double r = std::min(dr, 1e-3 * std::sqrt(p_c / (newton_g * rho_c * rho_c)));
  double p = p_c - 2.0 / 3.0 * pi * newton_g * rho_c * rho_c * r * r;
  double m = 4.0 / 3.0 * pi * rho_c * r * r * r;
  double rho = density_of_pressure(eos, p, temp_c, rho_c, &s.eos_calls);
  auto rhs = [&](double rr, double pp, double mm, double guess, double& dp, double& dm,
                 double& dens) {
    dens = pp > p_edge ? density_of_pressure(eos, pp, temp_c, guess, &s.eos_calls) : 0.0;
    dp = -newton_g * mm * dens / (rr * rr);
    dm = 4 * pi * rr * rr * dens;
  };
  double dlnrho_dr = 0;
  while (true) {
    s.r.push_back(r);
    s.dens.push_back(rho);
    s.pres.push_back(p);
    s.mass.push_back(m);
    if (s.r.size() > 2000000) throw Error("white dwarf: more than 2e6 integration steps");
    double dp1, dm1, d1;
    rhs(r, p, m, rho, dp1, dm1, d1);
    // A tenth of the pressure scale height and a twentieth of the density's (from the
    // last step: where radiation dominates the density falls much faster), at most dr.
    double h = std::min(dr, 0.1 * p / std::max(std::fabs(dp1), 1e-300));
    if (dlnrho_dr > 0) h = std::min(h, 0.05 / dlnrho_dr);
    double dp2, dm2, d2, dp3, dm3, d3, dp4, dm4, d4;
    rhs(r + 0.5 * h, p + 0.5 * h * dp1, m + 0.5 * h * dm1, rho, dp2, dm2, d2);
    rhs(r + 0.5 * h, p + 0.5 * h * dp2, m + 0.5 * h * dm2, rho, dp3, dm3, d3);
    rhs(r + h, p + h * dp3, m + h * dm3, rho, dp4, dm4, d4);
    const double pn = p + h / 6 * (dp1 + 2 * dp2 + 2 * dp3 + dp4);
    const double mn = m + h / 6 * (dm1 + 2 * dm2 + 2 * dm3 + dm4);
    if (!(pn > p_edge) || d2 == 0 || d3 == 0 || d4 == 0) {
      // The surface: where the pressure reaches the fluff's (linear in the last step).
      const double frac = std::clamp((p - p_edge) / std::max(p - pn, 1e-300), 0.0, 1.0);
      s.radius = r + frac * h;
      s.total_mass = m + frac * (mn - m);
      s.r.push_back(s.radius);
      s.dens.push_back(rho_edge);
      s.pres.push_back(p_edge);
      s.mass.push_back(s.total_mass);
      break;
    }
    r += h;
    p = pn;
    m = mn;
    const double rho_new = density_of_pressure(eos, p, temp_c, rho, &s.eos_calls);
    dlnrho_dr = std::fabs(std::log(rho / rho_new)) / h;
    rho = rho_new;
  }
  return s;
}

namespace {

using hydro::DENS;
using hydro::ETOT;
using hydro::MOMX;
using hydro::MOMY;
using hydro::MOMZ;

class WhiteDwarf final : public ProblemBase<WhiteDwarf> {
 public:
  WhiteDwarf(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        rho_fluff_(p.get_real("wd.rho_fluff")),
        temp_fluff_(p.get_real("wd.temp_fluff")),
        nsub_(static_cast<int>(p.get_int("wd.nsubzones"))),
        ndim_(static_cast<int>(p.get_int("mesh.ndim"))),
        ignite_(p.get_bool("wd.ignite")),
        ign_radius_(p.get_real("wd.ign_radius")),
        ign_dist_(p.get_real("wd.ign_dist")) {
    ctr_[0] = p.get_real("wd.xctr");
    ctr_[1] = p.get_real("wd.yctr");
    ctr_[2] = p.get_real("wd.zctr");
    StarTemperature t;
    t.temp_c = p.get_real("wd.temp_c");
    t.rho_iso = p.get_real("wd.rho_isothermal");
    t.temp_fluff = temp_fluff_;
    star_ = build_star(eos, p.get_real("wd.rho_c"), t, rho_fluff_, p.get_real("wd.dr"));
    if (ignite_) {
      // The bubble is ash: a fraction flam of the fuel (burn.fuel) became ash (burn.ash)
      // at constant density, releasing flam q X_fuel (burn.q_fuel) per gram, as the burn
      // unit would have (an overpressured matchhead that expands).
      const auto& sp = p.get_string_list("composition.species");
      const auto& x0 = p.get_string_list("composition.initial");
      names_.assign(sp.begin(), sp.end());
      for (std::size_t q = 0; q < sp.size(); ++q) {
        xu_.push_back(q < x0.size() ? std::stod(x0[q]) : 0.0);
        if (sp[q] == p.get_string("burn.fuel")) fuel_ = int(q);
        if (sp[q] == p.get_string("burn.ash")) ash_ = int(q);
      }
      q_ = p.get_real("burn.q_fuel");
      // The three-stage burn keeps the species as the fuel's composition (its ash is
      // phfa = flam, set by the burn unit from flam; burn.ash need not be a species); the
      // energy is the same.
      species_stay_ = p.get_string("burn.model") == "three_stage";
      if (fuel_ < 0 || (ash_ < 0 && !species_stay_))
        throw Error("white_dwarf: wd.ignite needs burn.fuel and burn.ash in composition.species");
    }
    const auto& geo = p.get_string("mesh.geometry");
    cyl_ = geo == "cylindrical";
    sph_ = geo == "spherical";
    if (sph_ && ignite_)
      throw Error("white_dwarf: a flame bubble needs 2-D r-z or 3-D (wd.ignite in 1-D spherical)");
  }
  std::string name() const override { return "white_dwarf"; }
  /// Radius, mass and how the star was built, for the log.
  std::string describe() const override {
    return fmt::format(
        "white dwarf: rho_c {:.4e} g/cm^3, core T {:.4e} K, radius {:.1f} km, mass {:.5f} Msun "
        "({} samples, {} EOS calls)",
        star_.dens[0], star_.temp.temp_c, star_.radius / 1e5,
        star_.total_mass / constants::solar_mass, star_.r.size(), star_.eos_calls);
  }
  const StarProfile& star() const { return star_; }

  void bind(const mesh::Mesh& m) override {
    iflam_ = m.var_index("flam");
    iqbrn_ = m.var_index("qbrn");
    idx_.clear();
    for (const auto& n : names_) idx_.push_back(m.var_index(n));
    if (ignite_ && iflam_ < 0)
      throw Error(
          "white_dwarf: wd.ignite needs the flame's progress variable flam "
          "(add \"flame\" to driver.operators)");
  }

  // Each zone: the volume average of rho over sub-zones, the mass-weighted average of T
  // (an average of rho*e across the star's edge, where e rises steeply with density, can
  // fall below the zero-temperature energy of the mean density: no EOS state), then the
  // EOS (dens_temp) once per zone, the whole block in one pencil.
  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    const int ns[3] = {nsub_, ndim_ > 1 ? nsub_ : 1, ndim_ > 2 ? nsub_ : 1};
    const std::size_t nz = std::size_t(s.ni(0)) * std::size_t(s.ni(1)) * std::size_t(s.ni(2));
    std::vector<double> dens(nz), temp(nz), eint(nz), pres(nz), gc(nz), ge(nz), fl(nz);
    // The flame front's width: the ADR model's profile (b zones) on this block.
    const double width = 0.5 * flame::AdrModel{}.b * g.dx[0];
    std::size_t z = 0;
    for (int k = 0; k < s.ni(2); ++k)
      for (int j = 0; j < s.ni(1); ++j)
        for (int i = 0; i < s.ni(0); ++i, ++z) {
          double sw = 0, sd = 0, st = 0, sf = 0;
          for (int c = 0; c < ns[2]; ++c)
            for (int b = 0; b < ns[1]; ++b)
              for (int a = 0; a < ns[0]; ++a) {
                const double x = g.lo[0] + (i + (a + 0.5) / ns[0]) * g.dx[0];
                const double y = ndim_ > 1 ? g.lo[1] + (j + (b + 0.5) / ns[1]) * g.dx[1] : 0;
                const double zz = ndim_ > 2 ? g.lo[2] + (k + (c + 0.5) / ns[2]) * g.dx[2] : 0;
                // Distance from the star's centre; r-z: x is the cylindrical radius.
                const double dx = cyl_ || sph_ ? x : x - ctr_[0];
                const double dy = ndim_ > 1 ? y - ctr_[1] : 0;
                const double dz = ndim_ > 2 ? zz - ctr_[2] : 0;
                const double r = std::sqrt(dx * dx + dy * dy + dz * dz);
                const double ds = star_.density_at(r);
                const double d = ds > rho_fluff_ ? ds : rho_fluff_;
                const double t = ds > rho_fluff_ ? star_.temp(ds) : temp_fluff_;
                // Sub-zone volumes: 2 pi x dx dy in r-z, 4 pi x^2 dx in 1-D spherical.
                const double w = cyl_ ? x : (sph_ ? x * x : 1.0);
                double f = 0;
                if (ignite_) {
                  // The bubble sits on the axis (y in r-z, z in 3-D) at ign_dist.
                  const double by = ndim_ == 2 ? dy - ign_dist_ : dy;
                  const double bz = ndim_ == 3 ? dz - ign_dist_ : dz;
                  const double rb = std::sqrt(dx * dx + by * by + bz * bz);
                  f = 0.5 * (1.0 - std::tanh((rb - ign_radius_) / width));
                }
                sw += w;
                sd += w * d;
                st += w * d * t;
                sf += w * d * f;
              }
          dens[z] = sd / sw;
          temp[z] = st / sd;
          fl[z] = sf / sd;  // a mass fraction
          // The front's tail below the sKPP threshold is what the flame's first steps
          // remove (its reaction drives phi < eps0 to 0): zero from the start. Otherwise the
          // initial refinement on flam (a scale-free Loehner error) refines the star's body
          // on a 1e-30 tail instead of the front, and the first regrid derefines the body
          // (snia_2d: 32 -> 64 km, egrav changing by 2.1e47 erg) and refines the front by
          // prolonging it to twice the ADR width (doubling the burn rate thereafter).
          if (fl[z] < flame::AdrModel{}.eps0) fl[z] = 0.0;
        }
    eos::Pencil pc;
    pc.n = nz;
    pc.dens = dens.data();
    pc.temp = temp.data();
    pc.eint = eint.data();
    pc.pres = pres.data();
    pc.gamc = gc.data();
    pc.game = ge.data();
    if (eos_.apply(eos::Mode::dens_temp, pc).failed >= 0)
      throw Error("white_dwarf: the EOS failed while mapping the star");
    z = 0;
    for (int k = 0; k < s.ni(2); ++k)
      for (int j = 0; j < s.ni(1); ++j)
        for (int i = 0; i < s.ni(0); ++i, ++z) {
          const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
          u(DENS, I, J, K) = dens[z];
          u(MOMX, I, J, K) = 0;
          u(MOMY, I, J, K) = 0;
          u(MOMZ, I, J, K) = 0;
          const double f = ignite_ ? fl[z] : 0.0;
          const double q = ignite_ ? f * q_ * xu_[std::size_t(fuel_)] : 0.0;
          u(ETOT, I, J, K) = dens[z] * (eint[z] + q);
          if (iflam_ >= 0) u(iflam_, I, J, K) = f;
          if (iqbrn_ >= 0) u(iqbrn_, I, J, K) = q;
          for (std::size_t s2 = 0; ignite_ && !species_stay_ && s2 < idx_.size(); ++s2) {
            double x = xu_[s2];
            if (int(s2) == fuel_) x *= 1.0 - f;
            if (int(s2) == ash_) x += f * xu_[std::size_t(fuel_)];
            u(idx_[s2], I, J, K) = x;
          }
        }
  }

 private:
  const eos::Eos& eos_;
  double rho_fluff_, temp_fluff_;
  int nsub_, ndim_;
  bool ignite_;
  bool species_stay_ = false;
  double ign_radius_, ign_dist_;
  double ctr_[3] = {0, 0, 0};
  bool cyl_ = false, sph_ = false;
  int iflam_ = -1, iqbrn_ = -1;
  std::vector<std::string> names_;  ///< composition.species (ignition only)
  std::vector<double> xu_;          ///< composition.initial (the fuel)
  std::vector<int> idx_;
  int fuel_ = -1, ash_ = -1;
  double q_ = 0;
  StarProfile star_;
};

}  // namespace

void declare_white_dwarf_params(base::Params& p) {
  p.declare_real("wd.rho_c", 2.2e9, 1e-10, 1e15, "central density of the white dwarf (g/cm^3)");
  p.declare_real("wd.temp_c", 7e8, 1e3, 1e13, "temperature of the star's isothermal core (K)");
  p.declare_real("wd.rho_isothermal", 1e6, 0.0, 1e15,
                 "density below which T falls as (rho/rho_isothermal)^(2/3), down to "
                 "wd.temp_fluff (g/cm^3; 0: isothermal everywhere)");
  p.declare_real("wd.rho_fluff", 1e-3, 1e-12, 1e15,
                 "density of the fluff around the star; the integration stops there (g/cm^3)");
  p.declare_real("wd.temp_fluff", 3e7, 1e3, 1e13, "temperature of the fluff (K)");
  p.declare_real("wd.dr", 1e5, 1.0, 1e12, "largest radial step of the HSE integration (cm)");
  p.declare_int("wd.nsubzones", 4, 1, 32, "sub-zones per axis when the star is mapped");
  p.declare_real("wd.xctr", 0.0, -1e300, 1e300, "centre of the star, x (Cartesian only) (cm)");
  p.declare_real("wd.yctr", 0.0, -1e300, 1e300, "centre of the star, y (z in r-z) (cm)");
  p.declare_real("wd.zctr", 0.0, -1e300, 1e300, "centre of the star, z (3-D) (cm)");
  p.declare_bool("wd.ignite", false, "light a flame bubble (needs the flame operator)");
  p.declare_real("wd.ign_radius", 1.5e7, 0.0, 1e300, "radius of the flame bubble (cm)");
  p.declare_real("wd.ign_dist", 1e7, -1e300, 1e300,
                 "distance of the bubble's centre from the star's centre along the axis (cm)");
}

std::unique_ptr<Problem> make_white_dwarf(const base::Params& p, const eos::Eos& eos) {
  return std::make_unique<WhiteDwarf>(p, eos);
}

}  // namespace tessera::problems

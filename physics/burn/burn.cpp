// Stage 1 of the parametric Type Ia burning (Townsley et al. 2007; Calder et al. 2007):
// carbon consumption at the flame. See burn.hpp for the contract and what is not built.
#include "physics/burn/burn.hpp"

#include <cmath>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/flame/flame.hpp"
#include "physics/hydro/hydro.hpp"

namespace tessera::burn {

void Burn::declare_params(base::Params& p) {
  p.declare_string("burn.fuel", "c12", {}, "species the flame consumes (composition.species)");
  p.declare_string("burn.ash", "mg24", {}, "species the fuel becomes (composition.species)");
  p.declare_real("burn.q_fuel", 5.6016e17, 0.0, 1e20,
                 "energy released per gram of fuel consumed (erg/g; 12C+12C->24Mg: 5.6016e17)");
}

Burn::Burn(const base::Params& p)
    : fuel_name_(p.get_string("burn.fuel")),
      ash_name_(p.get_string("burn.ash")),
      q_fuel_(p.get_real("burn.q_fuel")) {
  if (fuel_name_ == ash_name_) throw Error("burn.fuel and burn.ash are the same species");
}

std::vector<mesh::VarInfo> Burn::variables() const {
  return {{"qbrn", -1, mesh::VarKind::mass_scalar, true, true, name()}};
}

void Burn::bind(mesh::Mesh& m, physics::Units& units) {
  flame_ = units.find<flame::Flame>();
  if (flame_ == nullptr)
    throw Error(
        "burn needs the flame operator: list \"flame\" before \"burn\" in driver.operators");
  eos_ = units.find<eos::EosUnit>();
  idens_ = m.var_index("dens");
  ietot_ = m.var_index("etot");
  iqbrn_ = m.var_index("qbrn");
  itemp_ = eos_->temp();
  flame_->set_fuel_density(this);
  ieint_ = eos_->eint();
  iflam_ = flame_->flam();
  ifdph_ = flame_->fdph();
  const auto* comp = units.find<composition::Composition>();
  comp_ = comp;
  auto species = [&](const std::string& n) {
    int at = -1;
    if (comp)
      for (std::size_t q = 0; q < comp->species().size(); ++q)
        if (n == comp->species()[q].name) at = comp->index(q);
    if (at < 0)
      throw Error("burn: species '" + n + "' is not in composition.species (burn.fuel, burn.ash)");
    return at;
  };
  ifuel_ = species(fuel_name_);
  iash_ = species(ash_name_);
}

void Burn::advance(mesh::Mesh& m, double /*dt*/) {
  TESSERA_REGION("burn");
  const auto& s = m.shape();
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& g) {
    const bool curved = g.geometry != mesh::Geometry::cartesian;
    double dv = 1.0;
    for (int a = 0; a < s.ndim; ++a) dv *= g.dx[a];
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
        bool burned = false;
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const double dphi = u(ifdph_, i, j, k);
          u(ifdph_, i, j, k) = 0.0;  // consumed: a second burn step without a flame step adds 0
          const double dx = fuel_consumed(u(ifuel_, i, j, k), u(iflam_, i, j, k), dphi);
          if (dx <= 0.0) continue;
          burned = true;
          u(ifuel_, i, j, k) -= dx;
          u(iash_, i, j, k) += dx;
          const double de = q_fuel_ * dx;  // erg/g
          const double rho = u(idens_, i, j, k);
          u(ieint_, i, j, k) += de;
          u(iqbrn_, i, j, k) += de;
          u(ietot_, i, j, k) += rho * de;
          released_ += rho * de * (curved ? g.volume(i - s.g(0)) : dv);
          consumed_ += rho * dx * (curved ? g.volume(i - s.g(0)) : dv);
        }
        // Pressure, temperature and gammas of the heated row (dens_ei, new composition).
        if (burned) eos_->update_row(u, s, id, j, k, eos::Mode::dens_ei);
      }
  });
}

nlohmann::json Burn::summary(MPI_Comm comm) const {
  double v[2] = {released_, consumed_};
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, comm);
  return {{"stage", "carbon consumption only (no QSE/NSE relaxation, Ye fixed)"},
          {"fuel", fuel_name_},
          {"ash", ash_name_},
          {"q_fuel", q_fuel_},
          {"energy_released", v[0]},
          {"fuel_consumed", v[1]},
          {"unburned_density_estimates", estimates_},
          {"unburned_density_failures", estimate_failures_}};
}

template <class View>
double Burn::ratio_cell(const View& u, int i, int j, int k) const {
  const double rho = u(idens_, i, j, k), qb = u(iqbrn_, i, j, k);
  const double mx = u(hydro::MOMX, i, j, k), my = u(hydro::MOMY, i, j, k),
               mz = u(hydro::MOMZ, i, j, k);
  const double e = u(ietot_, i, j, k) / rho - 0.5 * (mx * mx + my * my + mz * mz) / (rho * rho);
  if (!(rho > 0.0 && qb > 1e-12 * e && e > 0.0)) return 1.0;
  // The zone's composition, and the one before it burned (fuel restored).
  const auto& sp = comp_->species();
  double ya = 0.0, yz = 0.0, yau = 0.0, yzu = 0.0;
  const double dx = qb / q_fuel_;
  for (std::size_t q = 0; q < sp.size(); ++q) {
    const int v = comp_->index(q);
    const double x = u(v, i, j, k);
    const double xu = v == ifuel_ ? x + dx : (v == iash_ ? std::max(0.0, x - dx) : x);
    ya += x / sp[q].a;
    yz += x * sp[q].z / sp[q].a;
    yau += xu / sp[q].a;
    yzu += xu * sp[q].z / sp[q].a;
  }
  double abar = 1.0 / ya, zbar = abar * yz;
  const double t0 = u(itemp_, i, j, k) > 0.0 ? u(itemp_, i, j, k) : 1e9;
  double d = rho, temp = t0, eint = e, pres = 0.0, gamc = 0.0, game = 0.0;
  eos::Pencil pc;
  pc.n = 1;
  pc.dens = &d;
  pc.temp = &temp;
  pc.eint = &eint;
  pc.pres = &pres;
  pc.gamc = &gamc;
  pc.game = &game;
  pc.abar = &abar;
  pc.zbar = &zbar;
  ++estimates_;
  // Step 1: the zone's pressure (dens_ei; guard zones hold no EOS state of their own).
  if (eos_->eos().apply(eos::Mode::dens_ei, pc).failed >= 0) {
    ++estimate_failures_;
    return 1.0;
  }
  const double p = pres, h_u = e + p / rho - qb;
  // Step 2: the unburned matter at pressure p with enthalpy h_u: secant on the density
  // from rho and the ideal-gas-like guess rho h / h_u.
  abar = 1.0 / yau;
  zbar = abar * yzu;
  auto excess = [&](double r, bool& ok) {
    d = r;
    pres = p;
    ok = eos_->eos().apply(eos::Mode::dens_pres, pc).failed < 0;
    return eint + p / r - h_u;
  };
  bool ok0 = true, ok1 = true;
  double r0 = rho, r1 = rho * (e + p / rho) / h_u;
  double g0 = excess(r0, ok0), g1 = excess(r1, ok1);
  for (int it = 0; it < 30 && ok0 && ok1; ++it) {
    if (std::fabs(r1 - r0) <= 1e-12 * r1 || g1 == g0) return r1 / rho;
    const double r2 = r1 - g1 * (r1 - r0) / (g1 - g0);
    if (!(r2 > 0.0)) break;
    r0 = r1, g0 = g1;
    r1 = r2;
    g1 = excess(r1, ok1);
  }
  ++estimate_failures_;
  return 1.0;
}

template <class View>
void Burn::ratio_impl(const View& u, const mesh::BlockShape& s, int j, int k, double* out) const {
  for (int i = 0; i < s.n(0); ++i) {
    const double phi = u(iflam_, i, j, k);
    out[i] = phi > 0.0 && phi < 1.0 ? ratio_cell(u, i, j, k) : 1.0;
  }
}

}  // namespace tessera::burn

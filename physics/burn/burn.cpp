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

void Burn::bind(mesh::Mesh& m, physics::Units& units, const physics::RunContext& /*ctx*/) {
  flame_ = units.find<flame::Flame>();
  if (flame_ == nullptr)
    throw Error(
        "burn needs the flame operator: list \"flame\" before \"burn\" in driver.operators");
  eos_ = units.find<eos::EosUnit>();
  idens_ = m.var_index("dens");
  ietot_ = m.var_index("etot");
  iqbrn_ = m.var_index("qbrn");
  itemp_ = eos_->temp();
  ipres_ = eos_->pres();
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
void Burn::ratio_impl(const View& u, const mesh::BlockShape& s, int j, int k, double* out) const {
  const int n0 = s.n(0);
  Work& w = work_;
  w.resize(std::size_t(n0));
  // Step 1: the cells inside the front (0 < phi < 1, some energy released): their state,
  // their composition and the one before they burned (fuel restored).
  const auto& sp = comp_->species();
  int m = 0;
  for (int i = 0; i < n0; ++i) {
    out[i] = 1.0;
    const double phi = u(iflam_, i, j, k);
    if (!(phi > 0.0 && phi < 1.0)) continue;
    const double rho = u(idens_, i, j, k), qb = u(iqbrn_, i, j, k);
    const double mx = u(hydro::MOMX, i, j, k), my = u(hydro::MOMY, i, j, k),
                 mz = u(hydro::MOMZ, i, j, k);
    const double e = u(ietot_, i, j, k) / rho - 0.5 * (mx * mx + my * my + mz * mz) / (rho * rho);
    if (!(rho > 0.0 && qb > 1e-12 * e && e > 0.0)) continue;
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
    w.cell[m] = i;
    w.rho[m] = rho;
    w.e[m] = e;
    w.qb[m] = qb;
    w.abar[m] = 1.0 / ya;
    w.zbar[m] = w.abar[m] * yz;
    w.abar_u[m] = 1.0 / yau;
    w.zbar_u[m] = w.abar_u[m] * yzu;
    w.temp[m] = u(itemp_, i, j, k) > 0.0 ? u(itemp_, i, j, k) : 1e9;
    // An iterative EOS's state is guard-filled: every cell holds its current pressure.
    w.p[m] = eos_->iterative() ? u(ipres_, i, j, k) : 0.0;
    w.ok[m] = 1;
    ++m;
  }
  if (m == 0) return;
  estimates_ += m;
  // Step 2: the pressures of a closed-form EOS (dens_ei, the zone's composition).
  if (!eos_->iterative()) {
    for (int q = 0; q < m; ++q) {
      w.d[q] = w.rho[q];
      w.ei[q] = w.e[q];
      w.t[q] = w.temp[q];
    }
    if (eval(eos::Mode::dens_ei, m, w.abar.data(), w.zbar.data()) >= 0)
      for (int q = 0; q < m; ++q) w.ok[q] = 0;  // no retry: the gamma law does not fail
    for (int q = 0; q < m; ++q) w.p[q] = w.pr[q];
  }
  // Step 3: the unburned matter at pressure p with enthalpy h_u = h - qbrn: a secant on
  // each cell's density, the cells of the row in lockstep (one EOS pencil per iteration,
  // dens_pres), from the ideal-gas-like guess rho h / h_u (3 % high in degenerate C/O at
  // 3e8 g/cm^3) and 1 % below it.
  for (int q = 0; q < m; ++q) {
    w.hu[q] = w.e[q] + w.p[q] / w.rho[q] - w.qb[q];
    w.r0[q] = w.rho[q] * (w.e[q] + w.p[q] / w.rho[q]) / w.hu[q];
    w.r1[q] = 0.99 * w.r0[q];
  }
  excess(m, w.r0.data(), w.g0.data());
  excess(m, w.r1.data(), w.g1.data());
  int left = m;
  for (int it = 0; it < 30 && left > 0; ++it) {
    left = 0;
    for (int q = 0; q < m; ++q) {
      if (w.ok[q] != 1) continue;  // done (2) or failed (0)
      // 1e-10 in the density: far below what the front speed can tell.
      if (std::fabs(w.r1[q] - w.r0[q]) <= 1e-10 * w.r1[q] || w.g1[q] == w.g0[q]) {
        w.ok[q] = 2;
        continue;
      }
      const double r2 = w.r1[q] - w.g1[q] * (w.r1[q] - w.r0[q]) / (w.g1[q] - w.g0[q]);
      if (!(r2 > 0.0)) {
        w.ok[q] = 0;
        continue;
      }
      w.r0[q] = w.r1[q];
      w.g0[q] = w.g1[q];
      w.r1[q] = r2;
      ++left;
    }
    if (left > 0) excess(m, w.r1.data(), w.g1.data());
  }
  for (int q = 0; q < m; ++q) {
    if (w.ok[q] == 2)
      out[w.cell[q]] = w.r1[q] / w.rho[q];
    else
      ++estimate_failures_;  // left at 1 (no correction)
  }
}

int Burn::eval(eos::Mode mode, int n, const double* abar, const double* zbar) const {
  Work& w = work_;
  eos::Pencil pc;
  pc.n = std::size_t(n);
  pc.dens = w.d.data();
  pc.temp = w.t.data();
  pc.eint = w.ei.data();
  pc.pres = w.pr.data();
  pc.gamc = w.gc.data();
  pc.game = w.ge.data();
  pc.abar = abar;
  pc.zbar = zbar;
  return int(eos_->eos().apply(mode, pc).failed);
}

void Burn::excess(int m, const double* r, double* g) const {
  // The cells still iterating (ok == 1), gathered into one pencil.
  Work& w = work_;
  int n = 0;
  for (int q = 0; q < m; ++q) {
    if (w.ok[q] != 1) continue;
    w.at[n] = q;
    w.d[n] = r[q];
    w.pr[n] = w.p[q];
    w.t[n] = w.temp[q];
    w.ab[n] = w.abar_u[q];
    w.zb[n] = w.zbar_u[q];
    ++n;
  }
  if (n == 0) return;
  if (eval(eos::Mode::dens_pres, n, w.ab.data(), w.zb.data()) >= 0) {
    // Some cell has no state: again one by one, and those that fail are left out.
    for (int c = 0; c < n; ++c) {
      const int q = w.at[c];
      w.d[0] = r[q];
      w.pr[0] = w.p[q];
      w.t[0] = w.temp[q];
      const double ab = w.abar_u[q], zb = w.zbar_u[q];
      if (eval(eos::Mode::dens_pres, 1, &ab, &zb) >= 0) {
        w.ok[q] = 0;
        continue;
      }
      w.temp[q] = w.t[0];
      g[q] = w.ei[0] + w.p[q] / r[q] - w.hu[q];
    }
    return;
  }
  for (int c = 0; c < n; ++c) {
    const int q = w.at[c];
    w.temp[q] = w.t[c];  // the next iteration's Newton guess
    g[q] = w.ei[c] + w.p[q] / r[q] - w.hu[q];
  }
}

template void Burn::ratio_impl(const mesh::BlockView<mesh::Layout::var_major>&,
                               const mesh::BlockShape&, int, int, double*) const;
template void Burn::ratio_impl(const mesh::BlockView<mesh::Layout::zone_major>&,
                               const mesh::BlockShape&, int, int, double*) const;

physics::Registration Burn::registration() {
  return physics::registration_of<Burn>(
      "burn", physics::UnitRole::operator_unit,
      "carbon burning behind the flame (stage 1 of Townsley et al. 2007)", {.after = {"flame"}});
}

}  // namespace tessera::burn

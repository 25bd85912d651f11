// Stage 1 of the parametric Type Ia burning (Townsley et al. 2007; Calder et al. 2007):
// carbon consumption at the flame. See burn.hpp for the contract and what is not built.
#include "physics/burn/burn.hpp"

#include <cmath>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/composition/nuclides.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/flame/flame.hpp"
#include "physics/hydro/hydro.hpp"

namespace tessera::burn {

namespace {
/// phfa below which a zone counts as fuel for the thermal 12C + 12C burn.
constexpr double kThermalFuelOnly = 1e-3;
/// The smallest thermal 12C + 12C increment (fraction of the zone per step) applied.
constexpr double kThermalMin = 1e-10;
/// The smallest phfa that relaxes to quasi-equilibrium and NSE.
constexpr double kRelaxMin = 1e-6;
}  // namespace

void Burn::declare_params(base::Params& p) {
  p.declare_string("burn.model", "carbon", {"carbon", "three_stage"},
                   "carbon: stage 1 only (carbon consumption at the flame); three_stage: with "
                   "relaxation to quasi-equilibrium and NSE, neutronisation and neutrino losses "
                   "(Townsley et al. 2007; needs the NSE table, `make nse-table`)");
  p.declare_string("burn.nse_table", "", {},
                   "NSE table file (three_stage; \"\" = the build's nse_table.dat)");
  p.declare_real("burn.tau_nsqe_a", 182.06, -1e3, 1e4,
                 "tau_nsqe = exp(a / T9 - b) s: a (FLASH4's 182.06)");
  p.declare_real("burn.tau_nsqe_b", 46.054, -1e3, 1e4, "tau_nsqe: b (FLASH4's 46.054)");
  p.declare_real("burn.tau_nse_a", 201.0, -1e3, 1e4,
                 "tau_nse = exp(a / T9 - b) s: a (FLASH4's 201.0; Calder 2007: 196.02)");
  p.declare_real("burn.tau_nse_b", 46.77, -1e3, 1e4, "tau_nse: b (FLASH4's 46.77)");
  p.declare_bool("burn.thermal_carbon", true,
                 "three_stage: burn carbon by the 12C + 12C rate (Caughlan & Fowler 1988, "
                 "unscreened) wherever the fuel is hot, besides the flame");
  p.declare_string("burn.fuel", "c12", {}, "species the flame consumes (composition.species)");
  p.declare_string("burn.ash", "mg24", {}, "species the fuel becomes (composition.species)");
  p.declare_real("burn.q_fuel", 5.6016e17, 0.0, 1e20,
                 "energy released per gram of fuel consumed (erg/g; 12C+12C->24Mg: 5.6016e17)");
}

Burn::Burn(const base::Params& p)
    : fuel_name_(p.get_string("burn.fuel")),
      ash_name_(p.get_string("burn.ash")),
      q_fuel_(p.get_real("burn.q_fuel")),
      three_stage_(p.get_string("burn.model") == "three_stage"),
      nse_path_(p.get_string("burn.nse_table")) {
  if (fuel_name_ == ash_name_) throw Error("burn.fuel and burn.ash are the same species");
  stage_.a_nsqe = p.get_real("burn.tau_nsqe_a");
  stage_.b_nsqe = p.get_real("burn.tau_nsqe_b");
  stage_.a_nse = p.get_real("burn.tau_nse_a");
  stage_.b_nse = p.get_real("burn.tau_nse_b");
  stage_.thermal_carbon = p.get_bool("burn.thermal_carbon");
}

physics::Declarations Burn::declarations() const {
  physics::Declarations d;
  d.variables = {{"qbrn", -1, mesh::VarKind::mass_scalar, true, true, name()}};
  if (three_stage_)
    for (const char* n : {"phfa", "phaq", "phqn", "qbar", "sumy", "ye"})
      d.variables.push_back({n, -1, mesh::VarKind::mass_scalar, true, true, name()});
  return d;
}

void Burn::bind(mesh::Mesh& m, const physics::Services& services,
                const physics::RunContext& /*ctx*/) {
  flame_ = services.get<flame::Flame>("flame");
  if (flame_ == nullptr)
    throw Error(
        "burn needs the flame operator: list \"flame\" before \"burn\" in driver.operators");
  eos_ = services.get<eos::EosUnit>("eos");
  idens_ = m.var_index("dens");
  ietot_ = m.var_index("etot");
  iqbrn_ = m.var_index("qbrn");
  itemp_ = eos_->temp();
  ipres_ = eos_->pres();
  flame_->set_fuel_density(this);
  ieint_ = eos_->eint();
  iflam_ = flame_->flam();
  ifdph_ = flame_->fdph();
  auto* comp = services.get<composition::Composition>("composition");
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
  if (!three_stage_) {
    iash_ = species(ash_name_);
    return;
  }
  // three_stage: the species are the fuel's; the ash needs only to be a known nuclide of
  // the NSE table's network (its A and binding energy).
  if (eos_ == nullptr) throw Error("burn.model = \"three_stage\" needs the EOS unit");
  nse_ = NseTable::load(nse_path_, eos_->eos());
  const auto ash = composition::find_nuclide(ash_name_);
  if (!ash) throw Error("burn: burn.ash '" + ash_name_ + "' is not a known nuclide");
  ash_a_ = ash->a;
  ash_bind_ = nse_->binding_per_nucleon(ash_name_);
  bind_.clear();
  sp_a_.clear();
  sp_z_.clear();
  for (std::size_t q = 0; q < comp->species().size(); ++q) {
    const auto& sp = comp->species()[q];
    bind_.push_back(nse_->binding_per_nucleon(sp.name));
    sp_a_.push_back(sp.a);
    sp_z_.push_back(sp.z);
    if (comp->index(q) == ifuel_) ifuel_q_ = int(q);
  }
  stage_.q_si = nse_->binding_per_nucleon("si28");
  iphfa_ = m.var_index("phfa");
  iphaq_ = m.var_index("phaq");
  iphqn_ = m.var_index("phqn");
  iqbar_ = m.var_index("qbar");
  isumy_ = m.var_index("sumy");
  iye_ = m.var_index("ye");
  comp->set_ion_variables(iye_, isumy_);
}

template <class View>
FuelProps Burn::fuel_props(const View& u, int i, int j, int k) const {
  return fuel_of(
      int(sp_a_.size()), [&](int q) { return u(comp_->index(std::size_t(q)), i, j, k); },
      sp_a_.data(), sp_z_.data(), bind_.data(), ifuel_q_, ash_a_, ash_bind_);
}

void Burn::initialise(mesh::Mesh& m) {
  if (!three_stage_) return;
  const auto& s = m.shape();
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const FuelProps f = fuel_props(u, i, j, k);
          const double phi = std::clamp(u(iflam_, i, j, k), 0.0, 1.0);
          const double ye = f.ye;
          u(iphfa_, i, j, k) = phi;
          u(iphaq_, i, j, k) = 0.0;
          u(iphqn_, i, j, k) = 0.0;
          u(iqbar_, i, j, k) = (1.0 - phi) * f.qf + phi * f.qa;
          u(isumy_, i, j, k) = (1.0 - phi) * f.yif + phi * f.yia;
          u(iye_, i, j, k) = ye;
          ye_min_ = std::min(ye_min_, ye);
        }
        eos_->update_row(u, s, id, j, k, eos::Mode::dens_ei);
      }
  });
}

void Burn::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("burn");
  if (three_stage_)
    advance_three_stage(m, dt);
  else
    advance_carbon(m);
}

void Burn::add_step_sums(mesh::Mesh& m) {
  // Per leaf partials added in the tree's order: the same bits on any rank count (issue
  // 48; per-rank sums added by MPI_SUM changed their last bits with it).
  const auto sums = m.leaf_sums(3, [&](int id, double* out) {
    const auto& p = step_sums_[std::size_t(m.slot(id))];
    for (int q = 0; q < 3; ++q) out[q] = p[std::size_t(q)];
  });
  released_ += sums[0];
  consumed_ += sums[1];
  neutrino_ += sums[2];
}

void Burn::advance_three_stage(mesh::Mesh& m, double dt) {
  const auto& s = m.shape();
  step_sums_.assign(std::size_t(m.storage().maxblocks()), {0.0, 0.0, 0.0});
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& g) {
    auto& sum = step_sums_[std::size_t(m.slot(id))];
    const bool curved = g.geometry != mesh::Geometry::cartesian;
    double dv = 1.0;
    for (int a = 0; a < s.ndim; ++a) dv *= g.dx[a];
    long zones = 0, rows = 0;  // burned zones, and rows the EOS updated
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
        bool burned = false;
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const double dphi = u(ifdph_, i, j, k);
          u(ifdph_, i, j, k) = 0.0;  // consumed
          ZoneBurn z{u(iphfa_, i, j, k), u(iphaq_, i, j, k), u(iphqn_, i, j, k),
                     u(iye_, i, j, k),   u(iqbar_, i, j, k), u(isumy_, i, j, k)};
          // Advection and the flame's diffusion may unorder the variables: clip.
          z.phfa = std::clamp(z.phfa, 0.0, 1.0);
          z.phaq = std::clamp(z.phaq, 0.0, z.phfa);
          z.phqn = std::clamp(z.phqn, 0.0, z.phaq);
          const double rho = u(idens_, i, j, k);
          const double temp = u(itemp_, i, j, k);
          double dfa = 0.0;
          // The flame's increment burns the same fraction of what is left as in stage 1.
          if (dphi > 0.0) dfa = (1.0 - z.phfa) * fuel_consumed(1.0, u(iflam_, i, j, k), dphi);
          // The thermal burn only where the zone is still fuel: once the front has
          // reached it, its temperature is the mixture's (hot ash, cold fuel), which would
          // burn the fuel at the ash's temperature; there the flame alone burns.
          // An increment under kThermalMin of the zone per step is not applied: the white
          // dwarf's 7e8 K core would take 1e-11 per step in every zone (a row refresh of
          // the EOS each time) for nothing a run of seconds could see.
          FuelProps f;
          double dth = 0.0;
          bool have_fuel = false;
          if (stage_.thermal_carbon && temp > 5e8 && z.phfa < kThermalFuelOnly) {
            f = fuel_props(u, i, j, k);
            have_fuel = true;
            dth = thermal_fraction(z, f, rho, temp, dt);
            if (!(dth >= kThermalMin)) dth = 0.0;
          }
          if (!(dfa > 0.0) && !(z.phfa > 0.0) && !(dth > 0.0)) {
            // Nothing burns, but advection's round-off (phfa = -1e-188 beside a 1e-188
            // phaq) is clipped here too, so that every zone leaves the burn ordered.
            u(iphfa_, i, j, k) = z.phfa;
            u(iphaq_, i, j, k) = z.phaq;
            u(iphqn_, i, j, k) = z.phqn;
            ye_min_ = std::min(ye_min_, z.ye);
            continue;
          }
          if (!have_fuel) f = fuel_props(u, i, j, k);
          const double phfa0 = z.phfa;
          double e1 = stage_one(z, f, dfa);
          if (dth > 0.0) e1 += stage_one(z, f, dth);
          // Traces of burned matter (phfa < kRelaxMin, spread by advection) do not relax:
          // their stages 2-3 would release under 1e-6 of a burned zone's energy, and most
          // lie below the table's densities.
          // Inside the flame front (phfa < 1) the final state is the isobaric one.
          const double pres = z.phfa < 1.0 - kRelaxMin ? u(ipres_, i, j, k) : 0.0;
          const StepResult r = z.phfa >= kRelaxMin ? relax(z, f, stage_, *nse_, rho,
                                                           u(ieint_, i, j, k) + e1, dt, pres)
                                                   : StepResult{};
          if (r.out_of_table) ++out_of_table_;
          const double de = e1 + r.de;  // nuclear energy released, erg/g
          u(iphfa_, i, j, k) = z.phfa;
          u(iphaq_, i, j, k) = z.phaq;
          u(iphqn_, i, j, k) = z.phqn;
          u(iqbar_, i, j, k) = z.qbar;
          u(isumy_, i, j, k) = z.yion;
          u(iye_, i, j, k) = z.ye;
          ye_min_ = std::min(ye_min_, z.ye);
          u(ieint_, i, j, k) += de - r.dnu;
          u(iqbrn_, i, j, k) += de;
          u(ietot_, i, j, k) += rho * (de - r.dnu);
          const double vol = curved ? g.volume(i - s.g(0)) : dv;
          sum[0] += rho * de * vol;
          sum[2] += rho * r.dnu * vol;
          sum[1] += rho * f.xc * (z.phfa - phfa0) * vol;  // carbon, g
          burned = true;
          ++zones;
        }
        if (burned) eos_->update_row(u, s, id, j, k, eos::Mode::dens_ei), ++rows;
      }
    burned_zone_steps_ += zones;
    m.add_work(id, kBurnedZoneWork * double(zones) + kEosRowWork * double(rows * s.ni(0)));
  });
  add_step_sums(m);
}

void Burn::advance_carbon(mesh::Mesh& m) {
  const auto& s = m.shape();
  step_sums_.assign(std::size_t(m.storage().maxblocks()), {0.0, 0.0, 0.0});
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& g) {
    auto& sum = step_sums_[std::size_t(m.slot(id))];
    const bool curved = g.geometry != mesh::Geometry::cartesian;
    double dv = 1.0;
    for (int a = 0; a < s.ndim; ++a) dv *= g.dx[a];
    long zones = 0, rows = 0;  // burned zones, and rows the EOS updated
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
        bool burned = false;
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const double dphi = u(ifdph_, i, j, k);
          u(ifdph_, i, j, k) = 0.0;  // consumed: a second burn step without a flame step adds 0
          const double dx = fuel_consumed(u(ifuel_, i, j, k), u(iflam_, i, j, k), dphi);
          if (dx <= 0.0) continue;
          burned = true;
          ++zones;
          u(ifuel_, i, j, k) -= dx;
          u(iash_, i, j, k) += dx;
          const double de = q_fuel_ * dx;  // erg/g
          const double rho = u(idens_, i, j, k);
          u(ieint_, i, j, k) += de;
          u(iqbrn_, i, j, k) += de;
          u(ietot_, i, j, k) += rho * de;
          sum[0] += rho * de * (curved ? g.volume(i - s.g(0)) : dv);
          sum[1] += rho * dx * (curved ? g.volume(i - s.g(0)) : dv);
        }
        // Pressure, temperature and gammas of the heated row (dens_ei, new composition).
        if (burned) eos_->update_row(u, s, id, j, k, eos::Mode::dens_ei), ++rows;
      }
    burned_zone_steps_ += zones;
    m.add_work(id, kEosRowWork * double(rows * s.ni(0)));
  });
  add_step_sums(m);
}

nlohmann::json Burn::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  const double v[3] = {released_, consumed_, neutrino_};  // every rank's (add_step_sums)
  if (three_stage_) {
    double ye_min = ye_min_;
    long cnt[2] = {out_of_table_, burned_zone_steps_};
    MPI_Allreduce(MPI_IN_PLACE, &ye_min, 1, MPI_DOUBLE, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, cnt, 2, MPI_LONG, MPI_SUM, comm);
    const long out = cnt[0];
    return {{"model", "three_stage"},
            {"stage", "carbon consumption, relaxation to QSE and NSE, neutronisation"},
            {"fuel", fuel_name_},
            {"ash", ash_name_},
            {"energy_released", v[0]},
            {"fuel_consumed", v[1]},
            {"neutrino_losses", v[2]},
            {"ye_min", ye_min},
            {"nse_table", nse_->path()},
            {"nse_table_sha256", nse_->sha256()},
            {"nse_out_of_table", out},
            {"burned_zone_steps", cnt[1]},
            {"tau_nsqe", {stage_.a_nsqe, stage_.b_nsqe}},
            {"tau_nse", {stage_.a_nse, stage_.b_nse}},
            {"thermal_carbon", stage_.thermal_carbon},
            {"unburned_density_estimates", estimates_},
            {"unburned_density_failures", estimate_failures_}};
  }
  return {{"model", "carbon"},
          {"stage", "carbon consumption only (no QSE/NSE relaxation, Ye fixed)"},
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
    const double dx = three_stage_ ? 0.0 : qb / q_fuel_;  // three_stage: species = fuel
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
      "burning behind the flame: carbon (stage 1 of Townsley et al. 2007) or three stages to NSE",
      {.after = {"flame"},
       .needs = {{"flame", false, "the front it burns behind"},
                 {"eos", false, "the state it heats"},
                 {"composition", false, "the fuel and ash species"}}});
}

}  // namespace tessera::burn

// `tessera nse` (see nse_command.hpp).
#include "app/nse_command.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "base/error.hpp"
#include "parallel/comm.hpp"
#include "physics/burn/nse_table.hpp"
#include "physics/burn/three_stage.hpp"
#include "physics/composition/nuclides.hpp"
#include "physics/eos/helmholtz/helmholtz.hpp"

namespace tessera::app {

CLI::App* add_nse_command(CLI::App& app, NseOptions& opt) {
  auto* c = app.add_subcommand(
      "nse", "look up the three-stage burn's NSE table, or burn one zone (--burn)");
  c->add_option("--ye", opt.ye, "electron fraction (lookup)");
  c->add_option("--dens", opt.dens, "density, g/cm^3");
  c->add_option("--emq", opt.emq, "e - qbar N_A MeV, erg/g (lookup)");
  c->add_option("--pres", opt.pres, "pressure, erg/cm^3 (isobaric lookup)");
  c->add_option("--hmq", opt.hmq, "e + P/rho - qbar N_A MeV, erg/g (isobaric lookup)");
  c->add_flag("--burn", opt.burn, "a one-zone isochoric burn from fuel at (--dens, --temp)");
  c->add_option("--temp", opt.temp, "the fuel's temperature, K (--burn)");
  c->add_option("--fuel", opt.fuel, "fuel mass fractions, name=X,... (--burn)");
  c->add_option("--ash", opt.ash, "stage-1 ash species (--burn; the first fuel species burns)");
  c->add_option("--tend", opt.tend, "seconds to burn (--burn)")->check(CLI::PositiveNumber);
  c->add_option("--steps", opt.steps, "equal steps (--burn)")->check(CLI::PositiveNumber);
  c->add_option("--csv", opt.csv, "time series file (--burn)");
  c->add_option("--table", opt.table, "NSE table file (default: the build's)");
  c->add_option("--helm-table", opt.helm_table, "Helmholtz table file (default: the build's)");
  c->add_flag("--json", opt.json, "print JSON");
  return c;
}

namespace {

nlohmann::json state_json(const burn::NseState& s) {
  return {{"temp", s.temp}, {"qbar", s.qbar}, {"abar", 1.0 / s.yion},          {"ydot", s.ydot},
          {"enu", s.enu},   {"dens", s.dens}, {"out_of_table", s.out_of_table}};
}

/// The first fuel species (by --fuel's order) burns to --ash.
struct Fuel {
  std::vector<composition::Nuclide> nuc;
  std::vector<double> x;
};

Fuel parse_fuel(const std::string& spec) {
  Fuel f;
  std::stringstream ss(spec);
  std::string item;
  double sum = 0.0;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw Error("--fuel: '" + item + "' is not name=X");
    const auto n = composition::find_nuclide(item.substr(0, eq));
    if (!n) throw Error("--fuel: unknown nuclide '" + item.substr(0, eq) + "'");
    const double x = std::stod(item.substr(eq + 1));
    if (!(x > 0.0)) throw Error("--fuel: mass fraction of " + item.substr(0, eq) + " <= 0");
    f.nuc.push_back(*n);
    f.x.push_back(x);
    sum += x;
  }
  if (f.nuc.empty()) throw Error("--fuel: no species");
  for (auto& x : f.x) x /= sum;
  return f;
}

int burn_zone(const NseOptions& opt) {
  if (!(opt.dens > 0.0) || !(opt.temp > 0.0))
    throw Error("tessera nse --burn needs --dens > 0 and --temp > 0");
  const Fuel fuel = parse_fuel(opt.fuel);
  const auto ash = composition::find_nuclide(opt.ash);
  if (!ash) throw Error("--ash: unknown nuclide '" + opt.ash + "'");
  const eos::Helmholtz eos(opt.helm_table, 1.0);
  const auto table = burn::NseTable::load(opt.table, eos);
  std::vector<double> na, nz, nbind;  // the fuel species' A, Z and binding per nucleon
  for (const auto& n : fuel.nuc) {
    na.push_back(n.a);
    nz.push_back(n.z);
    nbind.push_back(table->binding_per_nucleon(n.name));
  }
  const burn::FuelProps f = burn::fuel_of(
      int(na.size()), [&](int q) { return fuel.x[std::size_t(q)]; }, na.data(), nz.data(),
      nbind.data(), 0, ash->a, table->binding_per_nucleon(ash->name));
  const double ye = f.ye;
  const burn::StageParams p{};
  // The fuel's state, then stage 1 at constant density.
  eos::PencilArrays pa(1);
  pa.dens[0] = opt.dens;
  pa.temp[0] = opt.temp;
  pa.abar[0] = 1.0 / f.yif;
  pa.zbar[0] = ye / f.yif;
  if (eos.apply(eos::Mode::dens_temp, pa.pencil()).failed >= 0)
    throw Error("the EOS has no state for the fuel at this density and temperature");
  double eint = pa.eint[0];
  burn::ZoneBurn z;
  z.ye = ye;
  z.qbar = f.qf;
  z.yion = f.yif;
  eint += burn::stage_one(z, f, 1.0);
  const double e0 = eint, ye0 = ye;
  std::ofstream csv;
  if (!opt.csv.empty()) {
    csv.open(opt.csv);
    if (!csv) throw Error("cannot write '" + opt.csv + "'");
    csv << "time,phfa,phaq,phqn,qbar,ye,abar,eint,nse_temp,temp,released,neutrino\n";
  }
  const double dt = opt.tend / double(opt.steps);
  double released = 0.0, nu = 0.0, t = 0.0, t_aq = -1.0, t_qn = -1.0, nse_t = 0.0;
  double tau_aq = 0.0, tau_qn = 0.0;
  int out = 0;
  const long every = std::max(1L, opt.steps / 2000);
  for (long n = 0; n < opt.steps; ++n) {
    const double aq0 = z.phaq, qn0 = z.phqn;
    const burn::StepResult r = burn::relax(z, f, p, *table, opt.dens, eint, dt);
    eint += r.de - r.dnu;
    released += r.de;
    nu += r.dnu;
    out |= r.out_of_table;
    nse_t = r.nse_temp;
    const double t0 = t;
    t += dt;
    const double level = 1.0 - std::exp(-1.0);
    // Crossing times, interpolated linearly inside the step.
    if (t_aq < 0.0 && z.phaq >= level) t_aq = t0 + dt * (level - aq0) / (z.phaq - aq0);
    if (t_qn < 0.0 && z.phqn >= 0.5) t_qn = t0 + dt * (0.5 - qn0) / (z.phqn - qn0);
    if (n == 0) {
      tau_aq = std::exp(p.a_nsqe / (nse_t * 1e-9) - p.b_nsqe);
      tau_qn = std::exp(p.a_nse / (nse_t * 1e-9) - p.b_nse);
    }
    if (csv.is_open() && ((n + 1) % every == 0 || n + 1 == opt.steps)) {
      pa.eint[0] = eint;
      pa.abar[0] = 1.0 / z.yion;
      pa.zbar[0] = z.ye / z.yion;
      const bool ok = eos.apply(eos::Mode::dens_ei, pa.pencil()).failed < 0;
      char line[512];
      std::snprintf(line, sizeof line,
                    "%.9e,%.9e,%.9e,%.9e,%.12e,%.12e,%.9e,%.12e,%.9e,%.9e,%.9e,%.9e\n", t, z.phfa,
                    z.phaq, z.phqn, z.qbar, z.ye, 1.0 / z.yion, eint, nse_t,
                    ok ? pa.temp[0] : std::nan(""), released, nu);
      csv << line;
    }
  }
  // The final state beside the table's final state at its (Ye, rho, e - qbar).
  const double emq = eint - burn::mev_per_nucleon_erg * z.qbar;
  const burn::NseState fin = table->lookup(z.ye, opt.dens, emq);
  pa.eint[0] = eint;
  pa.abar[0] = 1.0 / z.yion;
  pa.zbar[0] = z.ye / z.yion;
  pa.temp[0] = fin.temp;
  const bool ok = eos.apply(eos::Mode::dens_ei, pa.pencil()).failed < 0;
  // The relaxation times at the final NSE temperature.
  const double tau_aq_end = std::exp(p.a_nsqe / (fin.temp * 1e-9) - p.b_nsqe);
  const double tau_qn_end = std::exp(p.a_nse / (fin.temp * 1e-9) - p.b_nse);
  nlohmann::json j = {
      {"dens", opt.dens},
      {"fuel_temp", opt.temp},
      {"fuel", {{"qbar", f.qf}, {"abar", 1.0 / f.yif}, {"ye", ye0}, {"carbon", f.xc}}},
      {"ash_qbar", f.qa},
      {"eint_after_stage1", e0},
      {"tend", opt.tend},
      {"steps", opt.steps},
      {"tau_nsqe_start", tau_aq},
      {"tau_nse_start", tau_qn},
      {"tau_nsqe_end", tau_aq_end},
      {"tau_nse_end", tau_qn_end},
      {"time_phaq_1_minus_1_over_e", t_aq},
      {"time_phqn_half", t_qn},
      {"final",
       {{"phfa", z.phfa},
        {"phaq", z.phaq},
        {"phqn", z.phqn},
        {"qbar", z.qbar},
        {"ye", z.ye},
        {"abar", 1.0 / z.yion},
        {"eint", eint},
        {"emq", emq},
        {"temp", ok ? pa.temp[0] : -1.0}}},
      {"table_final", state_json(fin)},
      {"released", released},
      {"neutrino", nu},
      {"out_of_table", out},
      {"table", table->path()},
      {"table_sha256", table->sha256()}};
  std::cout << j.dump(1) << "\n";
  return 0;
}

}  // namespace

int nse_command(const NseOptions& opt) {
  const int rank = parallel::world_rank();
  if (opt.burn) return rank == 0 ? burn_zone(opt) : 0;
  const bool isobaric = std::isfinite(opt.pres) || std::isfinite(opt.hmq);
  if (isobaric ? !(opt.pres > 0.0) || !std::isfinite(opt.ye) || !std::isfinite(opt.hmq)
               : !(opt.dens > 0.0) || !std::isfinite(opt.ye) || !std::isfinite(opt.emq))
    throw Error(
        "tessera nse needs --ye with --dens > 0 and --emq, or with --pres > 0 and --hmq (or "
        "--burn)");
  const eos::Helmholtz eos(opt.helm_table, 1.0);
  const auto table = burn::NseTable::load(opt.table, eos);
  const burn::NseState s = isobaric ? table->lookup_isobaric(opt.ye, opt.pres, opt.hmq)
                                    : table->lookup(opt.ye, opt.dens, opt.emq);
  if (rank != 0) return 0;
  if (opt.json) {
    nlohmann::json j = state_json(s);
    j["table"] = table->path();
    j["table_sha256"] = table->sha256();
    std::cout << j.dump(1) << "\n";
  } else {
    if (isobaric)
      std::printf("NSE final state at Ye %.6f, P %.6e erg/cm^3, h - qbar %.6e erg/g\n", opt.ye,
                  opt.pres, opt.hmq);
    else
      std::printf("NSE final state at Ye %.6f, rho %.6e g/cm^3, e - qbar %.6e erg/g\n", opt.ye,
                  opt.dens, opt.emq);
    std::printf("  table %s\n  table sha256 %s\n", table->path().c_str(), table->sha256().c_str());
    std::printf("  temp   K          % .9e\n  qbar   MeV/nucl.  % .9e\n  abar              % .9e\n",
                s.temp, s.qbar, 1.0 / s.yion);
    std::printf("  dYe/dt 1/s        % .9e\n  eps_nu erg/g/s    % .9e\n", s.ydot, s.enu);
    std::printf("  dens   g/cm^3     % .9e\n", s.dens);
    if (s.out_of_table)
      std::printf("  clamped to the table's edge: %s%s%s%s\n", s.out_of_table & 1 ? "Ye " : "",
                  s.out_of_table & 2 ? (isobaric ? "P " : "rho ") : "",
                  s.out_of_table & 4 ? "e-qbar(low) " : "",
                  s.out_of_table & 8 ? "e-qbar(high)" : "");
  }
  return 0;
}

}  // namespace tessera::app

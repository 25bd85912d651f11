// `tessera eos` (see eos_command.hpp).
#include "app/eos_command.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.hpp"
#include "parallel/comm.hpp"
#include "physics/eos/helmholtz/helmholtz.hpp"
#include "physics/eos/helmholtz/invert_check.hpp"

namespace tessera::app {

namespace {

using eos::helmholtz::FullState;

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "% .10e", v);
  return buf;
}

std::string short_num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void print_text(std::ostream& o, const eos::Helmholtz& eos, const char* mode, const FullState& s) {
  auto row = [&](const char* name, const char* unit, double v) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-10s %-13s %s\n", name, unit, num(v).c_str());
    o << buf;
  };
  auto parts = [&](const char* name, const char* unit, double total, double ion, double ele,
                   double rad, double coul) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "  %-10s %-13s %s %s %s %s %s\n", name, unit, num(total).c_str(),
                  num(ion).c_str(), num(ele).c_str(), num(rad).c_str(), num(coul).c_str());
    o << buf;
  };
  o << "Helmholtz EOS, mode " << mode << " (" << s.iterations << " Newton iteration"
    << (s.iterations == 1 ? "" : "s") << "), coulomb_mult " << eos.coulomb_mult() << "\n";
  o << "  table " << eos.table_path() << "\n  table sha256 " << eos.table_sha256() << "\n\n";
  row("dens", "g/cm^3", s.dens);
  row("temp", "K", s.temp);
  row("abar", "", s.abar);
  row("zbar", "", s.zbar);
  row("ye", "", s.ye);
  {
    char buf[200];
    std::snprintf(buf, sizeof buf, "\n  %-10s %-13s %17s %17s %17s %17s %17s\n", "", "", "total",
                  "ion", "e- e+", "radiation", "coulomb");
    o << buf;
  }
  parts("pres", "erg/cm^3", s.pres, s.pion, s.pele, s.prad, s.pcoul);
  parts("eint", "erg/g", s.eint, s.eion, s.eele, s.erad, s.ecoul);
  parts("entr", "erg/g/K", s.entr, s.sion, s.sele, s.srad, s.scoul);
  o << "\n";
  row("dp/drho", "erg/g", s.dpdd);
  row("dp/dT", "erg/cm^3/K", s.dpdt);
  row("de/drho", "erg cm^3/g^2", s.dedd);
  row("de/dT", "erg/g/K", s.dedt);
  row("ds/drho", "erg cm^3/g^2/K", s.dsdd);
  row("ds/dT", "erg/g/K^2", s.dsdt);
  o << "\n";
  row("cv", "erg/g/K", s.cv);
  row("cp", "erg/g/K", s.cp);
  row("chi_T", "", s.chit);
  row("chi_rho", "", s.chid);
  row("gamma_1", "", s.gamc);
  row("gamma_2", "", s.gam2);
  row("gamma_3", "", s.gam3);
  row("nabla_ad", "", s.nabad);
  row("gamma_e", "", s.game);
  row("cs", "cm/s", s.cs);
  row("eta", "", s.eta);
  row("xne", "1/cm^3", s.xne);
  row("plasma_gam", "", s.plasma_gamma);
  o << "\n  Maxwell relations (0 = consistent)\n";
  row("dse", "", s.dse);
  row("dpe", "", s.dpe);
  row("dsp", "", s.dsp);
}

nlohmann::json to_json(const eos::Helmholtz& eos, const char* mode, const FullState& s) {
  nlohmann::json j;
  j["mode"] = mode;
  j["dens"] = s.dens;
  j["temp"] = s.temp;
  j["abar"] = s.abar;
  j["zbar"] = s.zbar;
  j["ye"] = s.ye;
  j["pres"] = s.pres;
  j["eint"] = s.eint;
  j["entr"] = s.entr;
  j["dpdd"] = s.dpdd;
  j["dpdt"] = s.dpdt;
  j["dedd"] = s.dedd;
  j["dedt"] = s.dedt;
  j["dsdd"] = s.dsdd;
  j["dsdt"] = s.dsdt;
  j["cv"] = s.cv;
  j["cp"] = s.cp;
  j["chit"] = s.chit;
  j["chid"] = s.chid;
  j["gamc"] = s.gamc;
  j["gam2"] = s.gam2;
  j["gam3"] = s.gam3;
  j["nabad"] = s.nabad;
  j["game"] = s.game;
  j["cs"] = s.cs;
  j["eta"] = s.eta;
  j["xne"] = s.xne;
  j["plasma_gamma"] = s.plasma_gamma;
  j["parts"] = {{"ion", {{"pres", s.pion}, {"eint", s.eion}, {"entr", s.sion}}},
                {"electron_positron", {{"pres", s.pele}, {"eint", s.eele}, {"entr", s.sele}}},
                {"radiation", {{"pres", s.prad}, {"eint", s.erad}, {"entr", s.srad}}},
                {"coulomb", {{"pres", s.pcoul}, {"eint", s.ecoul}, {"entr", s.scoul}}}};
  j["maxwell"] = {{"dse", s.dse}, {"dpe", s.dpe}, {"dsp", s.dsp}};
  j["iterations"] = s.iterations;
  j["coulomb_mult"] = eos.coulomb_mult();
  j["table"] = eos.table_path();
  j["table_sha256"] = eos.table_sha256();
  return j;
}

}  // namespace

CLI::App* add_eos_command(CLI::App& app, EosOptions& opt) {
  auto* c = app.add_subcommand("eos", "evaluate the Helmholtz equation of state at one state");
  c->add_option("--dens", opt.dens, "density, g/cm^3 (required for one state)");
  c->add_option("--temp", opt.temp, "temperature, K (mode dens_temp)");
  c->add_option("--eint", opt.eint, "specific internal energy, erg/g (mode dens_ei)");
  c->add_option("--pres", opt.pres, "pressure, erg/cm^3 (mode dens_pres)");
  c->add_option("--abar", opt.abar, "mean mass number (required for one state)");
  c->add_option("--zbar", opt.zbar, "mean charge number (required for one state)");
  c->add_option("--coulomb", opt.coulomb, "Coulomb corrections: 1 on (default), 0 off")
      ->check(CLI::IsMember({0, 1}));
  c->add_option("--table", opt.table, "Helmholtz table file (default: the build's)");
  c->add_flag("--json", opt.json, "print the state as one JSON object");
  c->add_option("--invert-check", opt.invert_check,
                "invert N random in-table states in both kernels and report")
      ->check(CLI::PositiveNumber);
  c->add_option("--seed", opt.seed, "random seed of --invert-check");
  return c;
}

namespace {

int invert_check_command(const EosOptions& opt) {
  const eos::Helmholtz eos(opt.table, static_cast<double>(opt.coulomb));
  const auto r = eos::helmholtz::invert_check(eos, static_cast<std::size_t>(opt.invert_check),
                                              static_cast<std::uint64_t>(opt.seed));
  const bool pass = r.scalar_failed == 0 && r.vector_failed == 0 && r.disagree == 0;
  const int rank = parallel::world_rank();
  if (rank == 0) {
    nlohmann::json j = {{"states", r.states},
                        {"in_table", r.in_table},
                        {"inversions", r.inversions},
                        {"scalar_failed", r.scalar_failed},
                        {"vector_failed", r.vector_failed},
                        {"kernels_disagree", r.disagree},
                        {"not_recovered", r.not_recovered},
                        {"worst_vector_scalar_dT", r.worst_dt},
                        {"worst_recovery_dT", r.worst_recovery},
                        {"mean_iterations", r.mean_iterations},
                        {"max_iterations", r.max_iterations},
                        {"coulomb_mult", eos.coulomb_mult()},
                        {"table_sha256", eos.table_sha256()},
                        {"pass", pass}};
    if (opt.json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::printf(
          "Helmholtz inversion check, coulomb_mult %g, seed %ld\n"
          "  %zu states drawn, %zu inside the table, %zu inversions (dens_ei, dens_pres)\n"
          "  converged: scalar %zu, vector %zu; kernels disagree on %zu\n"
          "  Newton iterations (scalar): mean %.2f, max %d\n"
          "  worst |T_vector - T_scalar| / T / (1 + kappa): %.2e\n"
          "  worst |T - T_drawn| / T / (1 + kappa): %.2e (%zu converged elsewhere: e(T) not "
          "monotonic)\n"
          "  %s\n",
          eos.coulomb_mult(), opt.seed, r.states, r.in_table, r.inversions,
          r.inversions - r.scalar_failed, r.inversions - r.vector_failed, r.disagree,
          r.mean_iterations, r.max_iterations, r.worst_dt, r.worst_recovery, r.not_recovered,
          pass ? "PASS: every in-table state inverts in both kernels"
               : "FAIL: in-table states that do not invert, or kernels that disagree");
    }
  }
  return pass ? 0 : 1;
}

}  // namespace

int eos_command(const EosOptions& opt) {
  if (opt.invert_check > 0) return invert_check_command(opt);
  if (std::isnan(opt.dens) || std::isnan(opt.abar) || std::isnan(opt.zbar))
    throw Error("tessera eos: --dens, --abar and --zbar are required (or --invert-check N)");
  const int given = !std::isnan(opt.temp) + !std::isnan(opt.eint) + !std::isnan(opt.pres);
  if (given != 1) throw Error("tessera eos: give exactly one of --temp, --eint, --pres");
  if (!(opt.dens > 0.0) || !std::isfinite(opt.dens))
    throw Error("tessera eos: --dens must be positive, got " + short_num(opt.dens));
  if (!(opt.abar > 0.0) || !std::isfinite(opt.abar))
    throw Error("tessera eos: --abar must be positive, got " + short_num(opt.abar));
  if (!(opt.zbar > 0.0) || !std::isfinite(opt.zbar))
    throw Error("tessera eos: --zbar must be positive, got " + short_num(opt.zbar));
  eos::Mode mode = eos::Mode::dens_temp;
  const char* mode_name = "dens_temp";
  FullState in;
  in.dens = opt.dens;
  in.abar = opt.abar;
  in.zbar = opt.zbar;
  if (!std::isnan(opt.temp)) {
    if (!(opt.temp > 0.0) || !std::isfinite(opt.temp))
      throw Error("tessera eos: --temp must be positive, got " + short_num(opt.temp));
    in.temp = opt.temp;
  } else {
    // Newton's initial guess: Flash-X starts from the zone's old temperature; here 1e7 K.
    in.temp = 1e7;
    if (!std::isnan(opt.eint)) {
      mode = eos::Mode::dens_ei;
      mode_name = "dens_ei";
      in.eint = opt.eint;
    } else {
      mode = eos::Mode::dens_pres;
      mode_name = "dens_pres";
      in.pres = opt.pres;
    }
  }
  const eos::Helmholtz eos(opt.table, static_cast<double>(opt.coulomb), opt.abar, opt.zbar);
  const FullState s = eos.evaluate(mode, in);  // throws on a failure, naming it
  const int rank = parallel::world_rank();
  if (rank == 0) {
    if (opt.json) {
      std::cout << to_json(eos, mode_name, s).dump(2) << "\n";
    } else {
      print_text(std::cout, eos, mode_name, s);
    }
  }
  return 0;
}

}  // namespace tessera::app

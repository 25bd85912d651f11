#include "driver/simulation.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "base/error.hpp"
#include "io/mesh_output.hpp"
#include "mesh/lohner.hpp"
#include "mesh/mesh.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"
#include "physics/hydro/hydro.hpp"
#include "problems/problem.hpp"

namespace tessera::driver {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void declare_all_params(base::Params& p) {
  p.declare_int("driver.nend", 1000000, 0, 2000000000, "maximum number of steps");
  p.declare_real("driver.tmax", 0.05, 0.0, 1e300, "end time (s)");
  p.declare_real("driver.dtinit", 0.0, 0.0, 1e300, "first step's dt (0: from the CFL condition)");
  p.declare_real("driver.dtmax", 1e300, 0.0, 1e300, "largest dt allowed (s)");
  p.declare_real("driver.dt_growth", 1.25, 1.0, 100.0,
                 "largest factor by which dt may grow per step");
  p.declare_int("driver.log_every", 1, 1, 1000000, "steps between progress lines");
  p.declare_int("driver.inject_nan_step", 0, 0, 2000000000,
                "fault injection for tests: at this step the last rank's last leaf gets a NaN "
                "density (0: off)");
  p.declare_string("io.basename", "tessera", {}, "prefix of output file names");
  p.declare_int("io.plotfile_interval_steps", 0, 0, 2000000000, "steps between plotfiles (0: off)");
  p.declare_real("io.plotfile_interval_time", 0.0, 0.0, 1e300,
                 "simulation time between plotfiles (0: off)");
  p.declare_int("io.checkpoint_interval_steps", 0, 0, 2000000000,
                "steps between checkpoints (0: off)");
  p.declare_real("io.checkpoint_interval_time", 0.0, 0.0, 1e300,
                 "simulation time between checkpoints (0: off)");
  p.declare_bool("io.write_final", true, "write a plotfile and a checkpoint at the end");
  p.declare_bool("io.write_initial", true,
                 "write a plotfile and a checkpoint at step 0 when outputs are on");
  p.declare_string_list("io.plot_vars", {"dens", "pres", "velx", "vely", "velz", "ener", "eint"},
                        "variables in plotfiles (single precision)");
  mesh::Mesh::declare_params(p);
  hydro::Hydro::declare_params(p);
  problems::declare_params(p);
}

Simulation::Simulation(const base::Params& p, MPI_Comm comm, std::string run_dir)
    : p_(p), comm_(comm), dir_(std::move(run_dir)) {
  rank_ = parallel::rank(comm);
  nranks_ = parallel::size(comm);
  hydro_ = std::make_unique<hydro::Hydro>(p);
  problem_ = problems::make(p);
  mesh_ = std::make_unique<mesh::Mesh>(p, comm, hydro::Hydro::variables(), hydro_->nguard());
  for (const auto& v : p.get_string_list("io.plot_vars")) {
    bool known = mesh_->var_index(v) >= 0;
    for (const auto& d : hydro::Hydro::derived_names()) known |= d == v;
    if (!known) throw Error("io.plot_vars: unknown variable '" + v + "'");
  }
}

Simulation::~Simulation() = default;

void Simulation::log(const std::string& line) const {
  if (rank_ == 0) {
    std::cout << line << '\n';
    std::cout.flush();
  }
}

void Simulation::initialise() {
  TESSERA_REGION("initialise");
  auto init_all = [&] {
    mesh_->with_layout([&](auto tag) {
      for (int id : mesh_->local_leaves())
        problem_->init_block(mesh_->view(id, tag), mesh_->geom(id), mesh_->shape());
    });
  };
  init_all();
  // Refine on the initial condition itself, re-initialising the new blocks each time.
  for (int it = 0; it < mesh_->lrefine_max(); ++it) {
    mesh_->fill_guards();
    mark_and_regrid();
    init_all();
  }
}

void Simulation::mark_and_regrid() {
  TESSERA_REGION("mark_refine");
  const auto& s = mesh_->shape();
  std::vector<mesh::Flag> flags(mesh_->tree().size(), mesh::Flag::keep);
  std::vector<double> scratch(s.cells());
  struct Crit {
    int var;
    std::string name;
    double refine, derefine, filter;
  };
  std::vector<Crit> crit;
  for (int n = 1; n <= 4; ++n) {
    const std::string k = std::to_string(n);
    const auto& name = p_.get_string("mesh.refine_var_" + k);
    if (name == "none" || name.empty()) continue;
    crit.push_back({mesh_->var_index(name), name, p_.get_real("mesh.refine_cutoff_" + k),
                    p_.get_real("mesh.derefine_cutoff_" + k),
                    p_.get_real("mesh.refine_filter_" + k)});
  }
  mesh_->with_layout([&](auto tag) {
    for (int id : mesh_->local_leaves()) {
      auto u = mesh_->view(id, tag);
      bool refine = false, derefine = true;
      for (const auto& c : crit) {
        double e;
        if (c.var >= 0) {
          e = mesh::lohner_error(u.field(c.var), s, c.filter);
        } else {
          if (!hydro_->derived(c.name, u, s, scratch.data(), true))
            throw Error("mesh.refine_var: unknown variable '" + c.name + "'");
          e = mesh::lohner_error(scratch.data(), s, c.filter);
        }
        refine |= e > c.refine;
        derefine &= e < c.derefine;
      }
      flags[id] = refine ? mesh::Flag::refine
                         : (derefine && !crit.empty() ? mesh::Flag::derefine : mesh::Flag::keep);
    }
  });
  mesh_->regrid(flags);
}

std::array<double, 2> Simulation::totals() {
  const auto& s = mesh_->shape();
  const auto& t = mesh_->tree();
  // Per-leaf sums, gathered and added in canonical order: the same bits on any rank count.
  std::vector<double> mine;
  std::vector<int> ids;
  mesh_->with_layout([&](auto tag) {
    for (int id : mesh_->local_leaves()) {
      auto u = mesh_->view(id, tag);
      const auto g = mesh_->geom(id);
      double dv = 1;
      for (int a = 0; a < s.ndim; ++a) dv *= g.dx[a];
      double m = 0, e = 0;
      for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
        for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
          for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
            m += u(hydro::DENS, i, j, k);
            e += u(hydro::ETOT, i, j, k);
          }
      mine.push_back(m * dv);
      mine.push_back(e * dv);
    }
  });
  std::vector<double> all(2 * t.size(), 0.0), red(2 * t.size(), 0.0);
  std::size_t at = 0;
  for (int id : mesh_->local_leaves()) {
    all[2 * id] = mine[at++];
    all[2 * id + 1] = mine[at++];
  }
  // Exactly one rank holds each entry, others hold 0: the sum is exact.
  MPI_Allreduce(all.data(), red.data(), static_cast<int>(red.size()), MPI_DOUBLE, MPI_SUM, comm_);
  double m = 0, e = 0;
  for (int id = 0; id < t.size(); ++id) {
    m += red[2 * id];
    e += red[2 * id + 1];
  }
  return {m, e};
}

void Simulation::check_state() {
  const auto bad = hydro_->check(*mesh_);
  const int mine = bad.node >= 0 ? rank_ : nranks_;
  int first = nranks_;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm_);
  if (first == nranks_) return;
  char msg[512] = {0};
  if (rank_ == first) {
    const auto g = mesh_->geom(bad.node);
    const auto& s = mesh_->shape();
    std::snprintf(
        msg, sizeof msg,
        "step %d: %s = %g in block %d (rank %d, level %d), zone (%d,%d,%d) at (%g, %g, %g)", step_,
        bad.what, bad.value, bad.node + 1, rank_, mesh_->tree().node(bad.node).level + 1, bad.i,
        bad.j, bad.k, g.x(bad.i), s.ndim > 1 ? g.y(bad.j) : 0.0, s.ndim > 2 ? g.z(bad.k) : 0.0);
  }
  MPI_Bcast(msg, sizeof msg, MPI_CHAR, first, comm_);
  throw Error(msg);
}

void Simulation::write(bool checkpoint) {
  TESSERA_REGION(checkpoint ? "io/checkpoint" : "io/plotfile");
  mesh_->restrict_parents();
  const auto& s = mesh_->shape();
  std::vector<io::OutputVar> vars;
  std::vector<std::string> names;
  if (checkpoint) {
    for (const auto& v : mesh_->vars()) names.push_back(v.name);
    for (const auto& d : hydro::Hydro::derived_names()) names.push_back(d);
  } else {
    names = p_.get_string_list("io.plot_vars");
  }
  for (const auto& name : names) {
    const int vi = mesh_->var_index(name);
    io::OutputVar ov;
    ov.name = name;
    if (vi >= 0) {
      ov.fill = [this, vi, &s](int node, double* out) {
        mesh_->with_layout([&](auto tag) {
          auto u = mesh_->view(node, tag);
          std::size_t c = 0;
          for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
            for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
              for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) out[c++] = u(vi, i, j, k);
        });
      };
    } else {
      ov.fill = [this, name, &s](int node, double* out) {
        mesh_->with_layout(
            [&](auto tag) { hydro_->derived(name, mesh_->view(node, tag), s, out); });
      };
    }
    vars.push_back(std::move(ov));
  }
  const auto& base = p_.get_string("io.basename");
  const std::string fname = checkpoint ? fmt::format("{}_hdf5_chk_{:04d}", base, chk_count_++)
                                       : fmt::format("{}_hdf5_plt_cnt_{:04d}", base, plot_count_++);
  io::write_mesh_file(*mesh_, p_, (fs::path(dir_) / fname).string(), checkpoint, vars,
                      io::OutputInfo{time_, dt_, step_});
  outputs_.push_back(fname);
  log(fmt::format("  wrote {}", fname));
}

nlohmann::json Simulation::run() {
  const auto t_start = Clock::now();
  perf::TimerTree::local().reset();
  initialise();
  const auto c0 = totals();
  const double tmax = p_.get_real("driver.tmax");
  const long nend = p_.get_int("driver.nend");
  const int nrefs = static_cast<int>(p_.get_int("mesh.nrefs"));
  const int log_every = static_cast<int>(p_.get_int("driver.log_every"));
  const int plot_steps = static_cast<int>(p_.get_int("io.plotfile_interval_steps"));
  const int chk_steps = static_cast<int>(p_.get_int("io.checkpoint_interval_steps"));
  const double plot_dt = p_.get_real("io.plotfile_interval_time");
  const double chk_dt = p_.get_real("io.checkpoint_interval_time");
  double next_plot = plot_dt, next_chk = chk_dt;
  const bool any_plot = plot_steps > 0 || plot_dt > 0, any_chk = chk_steps > 0 || chk_dt > 0;
  if (p_.get_bool("io.write_initial")) {
    if (any_plot) write(false);
    if (any_chk) write(true);
  }
  log(fmt::format("{} {}-D on {} rank(s): {} leaf blocks of {}^{} zones, levels {}..{}",
                  problem_->name(), mesh_->ndim(), nranks_, mesh_->tree().num_leaves(),
                  mesh_->nxb(), mesh_->ndim(), 1, mesh_->tree().max_level() + 1));
  log(fmt::format("{:>7} {:>12} {:>11} {:>7} {:>11}", "step", "time", "dt", "leaves", "zones/s"));
  const long zones_per_block = static_cast<long>(mesh_->shape().interior_cells());
  double zone_updates = 0;
  const auto t_loop = Clock::now();
  double dt_prev = p_.get_real("driver.dtinit");  // step 0: dtinit caps dt if set
  const double growth = p_.get_real("driver.dt_growth");
  const double dtmax = p_.get_real("driver.dtmax");
  const long inject_nan_step = p_.get_int("driver.inject_nan_step");
  const bool write_final = p_.get_bool("io.write_final");
  auto more_steps = [&] { return time_ < tmax * (1 - 1e-12) && step_ < nend; };
  auto t_last = Clock::now();
  double zu_last = 0;
  while (more_steps()) {
    {
      TESSERA_REGION("dt");
      double dt = hydro_->max_dt(*mesh_);
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MIN, comm_);
      if (dt_prev > 0) dt = std::min(dt, dt_prev * (step_ == 0 ? 1.0 : growth));
      dt = std::min({dt, dtmax, tmax - time_});
      dt_ = dt;
    }
    hydro_->advance(*mesh_, dt_);
    time_ += dt_;
    ++step_;
    zone_updates += double(mesh_->tree().num_leaves()) * zones_per_block;
    dt_prev = dt_;
    if (step_ == inject_nan_step && rank_ == nranks_ - 1 && !mesh_->local_leaves().empty()) {
      const auto& s = mesh_->shape();
      mesh_->with_layout([&](auto tag) {
        mesh_->view(mesh_->local_leaves().back(), tag)(hydro::DENS, s.g(0), s.g(1), s.g(2)) =
            std::numeric_limits<double>::quiet_NaN();
      });
    }
    check_state();
    if (step_ % nrefs == 0 && mesh_->lrefine_max() > mesh_->lrefine_min()) {
      mesh_->fill_guards();
      mark_and_regrid();
    }
    if (step_ % log_every == 0 && rank_ == 0) {
      const auto now = Clock::now();
      const double sec = std::chrono::duration<double>(now - t_last).count();
      log(fmt::format("{:>7} {:>12.5e} {:>11.4e} {:>7} {:>11.3e}", step_, time_, dt_,
                      mesh_->tree().num_leaves(), sec > 0 ? (zone_updates - zu_last) / sec : 0.0));
      t_last = now;
      zu_last = zone_updates;
    }
    if (!more_steps() && write_final) break;  // the final outputs follow the loop
    if ((plot_steps > 0 && step_ % plot_steps == 0) ||
        (plot_dt > 0 && time_ >= next_plot * (1 - 1e-12))) {
      write(false);
      while (plot_dt > 0 && next_plot <= time_ * (1 + 1e-12)) next_plot += plot_dt;
    }
    if ((chk_steps > 0 && step_ % chk_steps == 0) ||
        (chk_dt > 0 && time_ >= next_chk * (1 - 1e-12))) {
      write(true);
      while (chk_dt > 0 && next_chk <= time_ * (1 + 1e-12)) next_chk += chk_dt;
    }
  }
  const double loop_seconds = std::chrono::duration<double>(Clock::now() - t_loop).count();
  const auto c1 = totals();
  if (write_final) {
    write(false);
    write(true);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t_start).count();

  const auto rows = perf::reduce_timers(comm_);
  nlohmann::json s;
  s["problem"] = problem_->name();
  s["ndim"] = mesh_->ndim();
  s["ranks"] = nranks_;
  s["steps"] = step_;
  s["time"] = time_;
  s["dt"] = dt_;
  s["leaf_blocks"] = mesh_->tree().num_leaves();
  s["total_blocks"] = mesh_->tree().size();
  s["max_level"] = mesh_->tree().max_level() + 1;
  s["nxb"] = mesh_->nxb();
  s["zone_updates"] = zone_updates;
  s["wall_seconds"] = wall;
  s["evolution_seconds"] = loop_seconds;
  s["zone_updates_per_second"] = loop_seconds > 0 ? zone_updates / loop_seconds : 0.0;
  s["zone_updates_per_second_per_rank"] =
      loop_seconds > 0 ? zone_updates / loop_seconds / nranks_ : 0.0;
  s["conservation"] = {{"mass_initial", c0[0]},
                       {"mass_final", c1[0]},
                       {"energy_initial", c0[1]},
                       {"energy_final", c1[1]},
                       {"mass_rel_change", (c1[0] - c0[0]) / c0[0]},
                       {"energy_rel_change", (c1[1] - c0[1]) / c0[1]}};
  s["timers"] = perf::timers_to_json(rows);
  s["outputs"] = outputs_;
  s["parameters"] = p_.to_json();
  if (rank_ == 0) {
    std::ostringstream os;
    perf::print_summary_table(os, rows, wall, nranks_);
    std::cout << os.str();
    std::ofstream(fs::path(dir_) / "summary.json") << s.dump(2) << '\n';
    std::cout << fmt::format("summary: {}\n", (fs::path(dir_) / "summary.json").string());
  }
  return s;
}

}  // namespace tessera::driver

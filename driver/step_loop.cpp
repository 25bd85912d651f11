// The driver's step loop: dt from the units, the operators in order, refinement every
// nrefs steps, outputs when due, progress lines and history.csv; then the final outputs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/error.hpp"
#include "driver/simulation.hpp"
#include "io/output_manager.hpp"
#include "memory/tier_runtime.hpp"
#include "mesh/mesh.hpp"
#include "perf/comm_census.hpp"
#include "perf/timers.hpp"
#include "problems/problem.hpp"

namespace tessera::driver {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

nlohmann::json Simulation::run() {
  const auto t_start = created_;
  initialise();
  check_state();  // a bad initial state (an EOS that found no solution) stops here
  const bool restarted = restarted_;
  const double tmax = p_.get_real("driver.tmax");
  const long nend = p_.get_int("driver.nend");
  const int nrefs = static_cast<int>(p_.get_int("mesh.nrefs"));
  // Progress lines: every log_every steps, or (0, the default) one each 2 % of the run;
  // history.csv has a row every log_every steps, or every step under the default.
  const long log_every = p_.get_int("driver.log_every");
  const bool auto_log = log_every == 0;
  const int plot_steps = static_cast<int>(p_.get_int("io.plotfile_interval_steps"));
  const int chk_steps = static_cast<int>(p_.get_int("io.checkpoint_interval_steps"));
  const double plot_dt = p_.get_real("io.plotfile_interval_time");
  const double chk_dt = p_.get_real("io.checkpoint_interval_time");
  const double chk_wall = p_.get_real("io.checkpoint_interval_wall");
  double wall_next_chk = chk_wall;
  const bool any_plot = plot_steps > 0 || plot_dt > 0, any_chk = chk_steps > 0 || chk_dt > 0;
  if (!restarted) {
    totals0_ = totals();
    next_plot_time_ = plot_dt;
    next_chk_time_ = chk_dt;
    dt_prev_ = p_.get_real("driver.dtinit");  // step 0: dtinit caps dt if set
    if (p_.get_bool("io.write_initial")) {
      if (any_plot) write(false);
      if (any_chk) write(true);
    }
  }
  const auto c0 = totals0_;
  if (restarted)
    log(fmt::format("restarted from {} at step {}, t = {:.6e}", opt_.restart_path, step_, time_));
  log(fmt::format("{} {}-D on {} rank(s): {} leaf blocks of {}^{} zones, levels {}..{}{}",
                  problem_->name(), mesh_->ndim(), nranks_, mesh_->tree().num_leaves(),
                  mesh_->nxb(), mesh_->ndim(), 1, mesh_->tree().max_level() + 1,
                  out_->async() ? ", asynchronous I/O" : ""));
  log(fmt::format("{:>7} {:>12} {:>11} {:>7} {:>11} {:>6} {:>9}", "step", "time", "dt", "leaves",
                  "zones/s", "done", "left"));
  // history.csv: the progress lines as a table, appended line by line (flushed, so a
  // crash keeps what was written); a restart appends to the file it finds.
  std::ofstream history;
  if (rank_ == 0) {
    const auto hpath = fs::path(opt_.run_dir) / "history.csv";
    const bool fresh = !restarted || !fs::exists(hpath);
    history.open(hpath, fresh ? std::ios::trunc : std::ios::app);
    std::string header = "step,time,dt,leaves,zone_updates_per_second";
    for (const auto& u : units_.all())
      for (const auto& n : decl(*u).history) header += "," + n;
    if (fresh && history) history << header << "\n" << std::flush;
  }
  const long zones_per_block = static_cast<long>(mesh_->shape().interior_cells());
  double zone_updates = 0;
  const auto t_loop = Clock::now();
  const double growth = p_.get_real("driver.dt_growth");
  const double dtmax = p_.get_real("driver.dtmax");
  const long inject_nan_step = p_.get_int("driver.inject_nan_step");
  const long inject_error_step = p_.get_int("driver.inject_error_step");
  const bool write_final = p_.get_bool("io.write_final");
  auto more_steps = [&] { return time_ < tmax * (1 - 1e-12) && step_ < nend; };
  // The fraction of the run done (of tmax or of nend, whichever is nearer), and the time
  // left at this run's pace.
  auto done = [&] {
    double f = tmax > 0 ? time_ / tmax : 0.0;
    if (nend < 2000000000) f = std::max(f, double(step_) / double(std::max(1L, nend)));
    return std::min(f, 1.0);
  };
  const double done0 = done();
  double next_line = std::floor(done0 / 0.02) * 0.02 + 0.02;
  auto left = [&](double f) -> std::string {
    const double el = std::chrono::duration<double>(Clock::now() - t_loop).count();
    if (f <= done0) return "?";
    const double sec = el * (1.0 - f) / (f - done0);
    if (sec < 60) return fmt::format("{:.0f}s", sec);
    if (sec < 3600)
      return fmt::format("{:.0f}m{:02.0f}s", std::floor(sec / 60), std::fmod(sec, 60));
    return fmt::format("{:.0f}h{:02.0f}m", std::floor(sec / 3600), std::fmod(sec / 60, 60));
  };
  auto t_last = Clock::now(), t_hist = t_last;
  double zu_last = 0, zu_hist = 0;
  const int first_step = step_ + 1;
  const perf::CommCounts comm0 = perf::comm_total();  // the census of the loop alone
  bool stop = false;
  while (more_steps()) {
    {
      TESSERA_REGION("dt");
      double dt = std::numeric_limits<double>::max();
      for (const auto& u : units_.all()) dt = std::min(dt, u->max_dt(*mesh_));
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MIN, comm_);
      if (dt_prev_ > 0) dt = std::min(dt, dt_prev_ * (step_ == 0 ? 1.0 : growth));
      dt = std::min({dt, dtmax, tmax - time_});
      dt_ = dt;
    }
    // The previous step's outputs may still be copying unk on the I/O thread: dt only
    // reads it, the operators write it.
    out_->wait_captures();
    for (auto* op : operators_) {
      // An operator may read what another one deferred (not what it deferred itself).
      const auto& d = decl(*op);
      if (std::find(d.reads.begin(), d.reads.end(), physics::Deferred::unk_state) != d.reads.end())
        for (auto* u : services_first_)
          if (u != op) u->refresh(*mesh_, physics::Deferred::unk_state);
      // An operator that writes unk makes what a unit kept from it stale (hydro's time-step
      // rate, or the check its step made as it went): an operator's own record of what it
      // wrote stands only until the next writer runs.
      if (d.writes_unk) mesh_->touch_state();
      op->advance(*mesh_, dt_);
    }
    time_ += dt_;
    ++step_;
    mesh_->end_step();
    zone_updates += double(mesh_->tree().num_leaves()) * zones_per_block;
    dt_prev_ = dt_;
    if (step_ == inject_nan_step && rank_ == nranks_ - 1 && !mesh_->local_leaves().empty()) {
      const auto& s = mesh_->shape();
      mesh_->with_layout([&](auto tag) {
        mesh_->view(mesh_->local_leaves().back(), tag)(mesh_->var_index("dens"), s.g(0), s.g(1),
                                                       s.g(2)) =
            std::numeric_limits<double>::quiet_NaN();
      });
      mesh_->touch_state();
      mesh_->invalidate_guards();  // dens changed: no fill may keep its guard zones
    }
    if (step_ == inject_error_step && rank_ == nranks_ - 1)
      throw Error(fmt::format("driver.inject_error_step: an error on rank {} alone at step {}",
                              rank_, step_));
    check_state();
    if (tiers_ && tiers_->static_pending()) place_tiers();
    if (step_ % nrefs == 0 && mesh_->lrefine_max() > mesh_->lrefine_min()) {
      // Without the units' sync and guard-zone EOS when only the marking would read them
      // (the gamma law's pres comes from hydro's marking_field instead): the same flags,
      // and the deferred state waits for the next reader (an output, a regrid).
      const bool lean = marking_skips_refresh();
      if (lean)
        mesh_->fill_guards();
      else
        fill_guards();
      // The tree as it was: the guard zones just filled are those the next step's first
      // fill would compute (nothing changes unk in between; hydro's mass scalars
      // invalidate them), so that fill is skipped.
      // Blocks that only moved (cost balance) carried these guard zones with them.
      if (!mark_and_regrid(lean) || mesh_->moved_only()) mesh_->mark_guards_current();
    } else if (step_ % nrefs == 0 && mesh_->balance_by_cost() && mesh_->moves_allowed()) {
      rebalance();  // one level: blocks move to the cost partition when it is better
    }
    // The units' history columns (collective: on every rank when a row is due).
    std::string unit_columns;
    if (auto_log || step_ % log_every == 0)
      for (const auto& u : units_.all())
        if (!decl(*u).history.empty())
          for (const auto& v : u->diagnostics(*mesh_, physics::Diagnostic::history_row))
            unit_columns += fmt::format(",{:.9e}", v.get<double>());
    if (rank_ == 0) {
      const auto now = Clock::now();
      const double f = done();
      const bool row = auto_log || step_ % log_every == 0;
      const bool line = auto_log ? (f >= next_line || step_ == first_step || !more_steps())
                                 : step_ % log_every == 0;
      if (row && history) {
        const double sec = std::chrono::duration<double>(now - t_hist).count();
        const double rate = sec > 0 ? (zone_updates - zu_hist) / sec : 0.0;
        history << fmt::format("{},{:.9e},{:.6e},{},{:.4e}{}\n", step_, time_, dt_,
                               mesh_->tree().num_leaves(), rate, unit_columns)
                << std::flush;
        t_hist = now;
        zu_hist = zone_updates;
      }
      if (line) {
        const double sec = std::chrono::duration<double>(now - t_last).count();
        const double rate = sec > 0 ? (zone_updates - zu_last) / sec : 0.0;
        log(fmt::format("{:>7} {:>12.5e} {:>11.4e} {:>7} {:>11.3e} {:>5.1f}% {:>9}", step_, time_,
                        dt_, mesh_->tree().num_leaves(), rate, 100.0 * f, left(f)));
        t_last = now;
        zu_last = zone_updates;
        if (auto_log) next_line = std::floor(f / 0.02) * 0.02 + 0.02;
      }
    }
    const auto [want_chk, want_plot, stop_now] = control(wall_next_chk, chk_wall, t_start);
    if (stop_now) {
      stop = true;
      break;  // the final checkpoint follows the loop
    }
    if (!more_steps() && write_final) break;  // the final outputs follow the loop
    // Advance the next output times before writing, so a checkpoint stores the schedule
    // a restart continues with.
    const bool plot_due = want_plot || (plot_steps > 0 && step_ % plot_steps == 0) ||
                          (plot_dt > 0 && time_ >= next_plot_time_ * (1 - 1e-12));
    while (plot_dt > 0 && next_plot_time_ <= time_ * (1 + 1e-12)) next_plot_time_ += plot_dt;
    const bool chk_due = want_chk || (chk_steps > 0 && step_ % chk_steps == 0) ||
                         (chk_dt > 0 && time_ >= next_chk_time_ * (1 - 1e-12));
    while (chk_dt > 0 && next_chk_time_ <= time_ * (1 + 1e-12)) next_chk_time_ += chk_dt;
    if (plot_due) write(false);
    if (chk_due) write(true);
  }
  out_->wait_captures();
  refresh_units(physics::Deferred::outside_unk);  // the last step's belongs to the loop
  const double loop_seconds = std::chrono::duration<double>(Clock::now() - t_loop).count();
  const perf::CommCounts comm_loop = perf::comm_total() - comm0;
  const auto c1 = totals();
  // The final outputs stand for every schedule point up to now: the checkpoint must carry
  // next output times past them, or a restart writes those outputs again.
  if (write_final || stop) {
    while (plot_dt > 0 && next_plot_time_ <= time_ * (1 + 1e-12)) next_plot_time_ += plot_dt;
    while (chk_dt > 0 && next_chk_time_ <= time_ * (1 + 1e-12)) next_chk_time_ += chk_dt;
  }
  if (write_final && !stop) write(false);
  if (write_final || stop) write(true, /*force_sync=*/true);  // the last one is synchronous
  out_->drain();
  memory::detail::release_spare();  // the kept staging arenas: the report lists live ones
  raise_io_errors();
  const double wall = std::chrono::duration<double>(Clock::now() - t_start).count();

  RunTotals rt;
  rt.zone_updates = zone_updates;
  rt.loop_seconds = loop_seconds;
  rt.wall = wall;
  rt.initial = c0;
  rt.final = c1;
  rt.restarted = restarted;
  rt.comm_loop = comm_loop;
  rt.loop_steps = step_ - first_step + 1;
  return report(rt);
}

}  // namespace tessera::driver

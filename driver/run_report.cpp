// The driver's run report: summary.json (the run, the units' summaries, conservation,
// timers, memory, tiers, counters, I/O) and the timer table, published atomically.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/simd.hpp"
#include "base/size.hpp"
#include "driver/simulation.hpp"
#include "io/output_manager.hpp"
#include "memory/arena.hpp"
#include "memory/tier_runtime.hpp"
#include "mesh/mesh.hpp"
#include "perf/comm_census.hpp"
#include "perf/counters.hpp"
#include "perf/timers.hpp"
#include "problems/problem.hpp"

namespace tessera::driver {

namespace fs = std::filesystem;

nlohmann::json Simulation::report(const RunTotals& rt) {
  const double zone_updates = rt.zone_updates, loop_seconds = rt.loop_seconds, wall = rt.wall;
  const auto& c0 = rt.initial;
  const auto& c1 = rt.final;
  const bool restarted = rt.restarted;
  const auto rows = perf::reduce_timers(comm_);
  const auto counters = perf::reduce_counters(comm_, rows);
  nlohmann::json s;
  s["problem"] = problem_->name();
  s["ndim"] = mesh_->ndim();
  s["ranks"] = nranks_;
  s["steps"] = step_;
  s["comm"] = perf::comm_summary(comm_, rt.comm_loop, rt.loop_steps);
  s["time"] = time_;
  s["dt"] = dt_;
  s["leaf_blocks"] = mesh_->tree().num_leaves();
  s["total_blocks"] = mesh_->tree().size();
  s["max_level"] = mesh_->tree().max_level() + 1;
  s["nxb"] = mesh_->nxb();
  s["nguard"] = mesh_->shape().ng;  // per side on active axes (a block is nxb + 2 nguard wide)
  s["zone_updates"] = zone_updates;
  s["wall_seconds"] = wall;
  s["evolution_seconds"] = loop_seconds;
  s["zone_updates_per_second"] = loop_seconds > 0 ? zone_updates / loop_seconds : 0.0;
  s["zone_updates_per_second_per_rank"] =
      loop_seconds > 0 ? zone_updates / loop_seconds / nranks_ : 0.0;
  const auto simd_target = simd::current();
  s["simd"] = {{"target", simd_target.name},
               {"lanes", simd_target.lanes},
               {"compiled_for", simd::compiled_for()}};
  s["units"] = nlohmann::json::array();
  for (const auto& u : units_.all()) {
    s["units"].push_back(u->name());
    auto j = u->diagnostics(*mesh_, physics::Diagnostic::summary);
    if (j.is_null()) continue;
    s[u->name()] = j;
    // A unit's linear solves (its summary's "solver") also at the top level (the contract's
    // summary.json "solver"; one solving unit per run today).
    if (j.is_object() && j.contains("solver")) s["solver"] = j["solver"];
    log(u->name() + ": " + j.dump());  // e.g. composition's largest renormalisation
  }
  // Particle-in-cell: particles advanced per second of the step loop (issue 49's contract).
  if (s.contains("pic") && s["pic"].is_object() && s["pic"].contains("particle_steps"))
    s["pic"]["particle_updates_per_second"] =
        loop_seconds > 0 ? s["pic"]["particle_steps"].get<double>() / loop_seconds : 0.0;
  s["operators"] = p_.get_string_list("driver.operators");
  s["regrid"] = {{"checks", regrid_checks_}, {"changed", regrid_changes_}};
  {
    // Work per rank over the step loop (zones of its leaves plus the units' reported work)
    // and leaf-steps: max over mean.
    const auto b = mesh_->balance_stats();
    const double imb = b.work_mean > 0 ? b.work_max / b.work_mean : 1.0;
    const double imb_blocks = b.blocks_mean > 0 ? b.blocks_max / b.blocks_mean : 1.0;
    s["balance"] = {{"method", mesh_->balance_by_cost() ? "cost" : "blocks"},
                    {"imbalance", imb},
                    {"imbalance_blocks", imb_blocks},
                    {"moves", b.moves},
                    {"fallbacks", b.fallbacks}};
    log(fmt::format(
        "balance: {}, work imbalance {:.3f} (max over mean of the ranks' work), "
        "leaf imbalance {:.3f}; {} moves on an unchanged tree{}",
        mesh_->balance_by_cost() ? "cost" : "blocks", imb, imb_blocks, b.moves,
        b.fallbacks > 0 ? fmt::format(", {} cost partitions refused (mesh.maxblocks)", b.fallbacks)
                        : ""));
  }
  s["conservation"] = nlohmann::json::object();
  for (std::size_t t = 0; t < total_names_.size(); ++t) {
    const auto& n = total_names_[t];
    s["conservation"][n + "_initial"] = c0[t];
    s["conservation"][n + "_final"] = c1[t];
    s["conservation"][n + "_rel_change"] = (c1[t] - c0[t]) / c0[t];
  }
  s["timers"] = perf::timers_to_json(rows);
  {
    // Peak RSS: the maximum over ranks (the planner predicts one rank).
    std::uint64_t peak = memory::peak_rss_bytes();
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_UINT64_T, MPI_MAX, comm_);
    nlohmann::json arenas = nlohmann::json::array();
    for (const auto& a : memory::report_all()) arenas.push_back(memory::to_json(a));
    // Staging snapshots live only while an output is written: the largest one, as it was.
    if (const auto st = out_->staging_report()) {
      auto j = memory::to_json(*st);
      j["released"] = true;
      arenas.push_back(j);
    }
    nlohmann::json meminfo;
    memory::to_json(meminfo, memory::read_meminfo());
    const auto predicted = plan_["per_rank"]["peak_rss_bytes"].get<double>();
    // Data objects (issue 12's characterisation of the run's own memory): per class the
    // most bytes live at once, the mappings and their mean lifetime; the replicated tree is
    // metadata. This rank's (rank 0's) view, like the arena list.
    nlohmann::json objects = nlohmann::json::object();
    for (int c = 0; c < memory::kObjectClasses; ++c)
      objects[memory::to_string(static_cast<memory::ObjectClass>(c))] = {
          {"bytes", 0.0}, {"count", 0}, {"seconds", 0.0}, {"arenas", nlohmann::json::array()}};
    for (const auto& a : memory::arena_stats()) {
      auto& o = objects[memory::to_string(memory::object_class_of_arena(a.name))];
      o["bytes"] = o["bytes"].get<double>() + double(a.peak_bytes);
      o["count"] = o["count"].get<long>() + a.count;
      o["seconds"] = o["seconds"].get<double>() + a.seconds;
      o["arenas"].push_back(a.name);
    }
    {
      auto& o = objects["metadata"];
      o["bytes"] = o["bytes"].get<double>() + double(mesh_->tree().size()) * sizeof(mesh::Node);
      o["count"] = o["count"].get<long>() + 1;
      o["seconds"] = o["seconds"].get<double>() + wall;
      o["arenas"].push_back("tree (heap)");
    }
    for (auto& [name, o] : objects.items()) {
      const long n = o["count"].get<long>();
      o["mean_lifetime_seconds"] = n > 0 ? o["seconds"].get<double>() / double(n) : 0.0;
      o.erase("seconds");
    }
    nlohmann::json tiers;
    if (tiers_) {
      tiers = tiers_->to_json();
      const std::string pre = tiers_->log_prefix();
      for (const auto& [cls, c] : tiers["classes"].items())
        log(fmt::format("{}{}: fast {}, slow {} (live at the end; peak fast {}, slow {})", pre, cls,
                        format_bytes(c["achieved"]["fast"].get<double>()),
                        format_bytes(c["achieved"]["slow"].get<double>()),
                        format_bytes(c["peak"]["fast"].get<double>()),
                        format_bytes(c["peak"]["slow"].get<double>())));
      for (const auto& [dir, c] : tiers["copies"].items())
        if (c["count"].get<long>() > 0)
          log(fmt::format(
              "{}copies {}: {} in {:.3f} s ({} copies; {} helper thread(s), placement "
              "moves by the step's thread)",
              pre, dir, format_bytes(c["bytes"].get<double>()), c["seconds"].get<double>(),
              c["count"].get<long>(), c["helper_threads"].get<int>()));
      for (const auto& [phase, sec] : tiers["charged_seconds"].items())
        log(fmt::format("{}charged {:.6f} s to {} ({})", pre, sec.get<double>(), phase,
                        tiers["charged_mode"].get<std::string>()));
    } else {
      tiers = {{"installed", false},
               {"backend", "none"},
               {"backend_requested", "none"},
               {"emulated", false},
               {"label",
                "no tiers (memory.tier.backend = none, placement fast_only): nothing "
                "placed, nothing charged"},
               {"placement", "fast_only"},
               {"fast_bytes", 0}};
    }
    // Particles (issue 48): the arena's mapped bytes on this rank against the plan's
    // steady particle items (arena, sort and migration buffers) and its largest copy.
    double particles_mapped = 0, particles_planned = 0, particles_output = 0;
    for (const auto& a : arenas)
      if (a.value("name", std::string()) == "particles")
        particles_mapped += a.value("mapped_bytes", 0.0);
    for (const auto& it : plan_["items"]) {
      const auto name = it["name"].get<std::string>();
      if (name.rfind("particles", 0) != 0) continue;
      if (it["phase"] == "steady")
        particles_planned += it["bytes"].get<double>();
      else if (it["phase"] != "step")
        particles_output = std::max(particles_output, it["bytes"].get<double>());
    }
    s["memory"] = {{"particles",
                    {{"arena_bytes", particles_mapped},
                     {"predicted_steady_bytes", particles_planned},
                     {"predicted_output_copy_bytes", particles_output}}},
                   {"arenas", arenas},
                   {"tiers", tiers},
                   {"objects", objects},
                   {"peak_rss_bytes", peak},
                   {"tree_bytes", double(mesh_->tree().bytes())},
                   {"tree_nodes", mesh_->tree().size()},
                   {"predicted_bytes", predicted},
                   {"prediction_error", (predicted - double(peak)) / double(peak)},
                   {"meminfo", meminfo}};
  }
  s["counters"] = perf::counters_to_json(counters);
  s["counter_backends"] = perf::counter_backends_to_json(counters);
  s["outputs"] = out_->published();
  s["io"] = out_->stats_json(comm_);
  // The I/O thread keeps its own timer tree (regions io_thread/..., io/write, hdf5/...).
  std::vector<perf::ReducedRow> io_rows;
  if (out_->async()) {
    io_rows = perf::reduce_timers(comm_, out_->io_thread_rows());
    s["io"]["thread_timers"] = perf::timers_to_json(io_rows);
  }
  s["mpi_thread_multiple"] = opt_.thread_multiple;
  if (restarted) s["restarted_from"] = opt_.restart_path;
  if (!stopped_by_.empty()) s["stopped_by"] = stopped_by_;
  s["parameters"] = p_.to_json();
  if (rank_ == 0) {
    std::ostringstream os;
    perf::print_summary_table(os, rows, wall, nranks_);
    if (!io_rows.empty()) {
      os << " I/O thread:\n";
      perf::print_summary_table(os, io_rows, wall, nranks_);
    }
    perf::print_counter_table(os, counters);
    {
      const auto& c = s["comm"];
      os << fmt::format(
          " communication per step (max over ranks, step loop of {} steps): {:.1f} messages, "
          "{} sent; {:.1f} collectives, {} contributed\n",
          c["steps"].get<long>(), c["p2p_messages_per_step_max"].get<double>(),
          format_bytes(c["p2p_bytes_per_step_max"].get<double>()),
          c["collectives_per_step_max"].get<double>(),
          format_bytes(c["collective_bytes_per_step_max"].get<double>()));
    }
    std::cout << os.str();
    // summary.json is published like an output: a crash never leaves half of one.
    const auto path = fs::path(opt_.run_dir) / "summary.json";
    const auto tmp = fs::path(opt_.run_dir) / "summary.json.tmp";
    std::ofstream(tmp) << s.dump(2) << '\n';
    fs::rename(tmp, path);
    std::cout << fmt::format("summary: {}\n", path.string());
  }
  return s;
}

}  // namespace tessera::driver

#include "io/io_params.hpp"

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/size.hpp"

namespace tessera::io {

void declare_params(base::Params& p) {
  p.declare_string("io.basename", "tessera", {}, "prefix of output file names");
  p.declare_int("io.plotfile_interval_steps", 0, 0, 2000000000, "steps between plotfiles (0: off)");
  p.declare_real("io.plotfile_interval_time", 0.0, 0.0, 1e300,
                 "simulation time between plotfiles (0: off)");
  p.declare_int("io.checkpoint_interval_steps", 0, 0, 2000000000,
                "steps between checkpoints (0: off)");
  p.declare_real("io.checkpoint_interval_time", 0.0, 0.0, 1e300,
                 "simulation time between checkpoints (0: off)");
  p.declare_real("io.checkpoint_interval_wall", 0.0, 0.0, 1e300,
                 "wall-clock seconds between checkpoints (0: off)");
  p.declare_int("io.checkpoint_keep", 0, 0, 1000000,
                "rolling checkpoints: keep only the newest K (0: keep all)");
  p.declare_bool("io.write_final", true, "write a plotfile and a checkpoint at the end");
  p.declare_bool("io.write_initial", true,
                 "write a plotfile and a checkpoint at step 0 when outputs are on");
  p.declare_string_list("io.plot_vars", {"dens", "pres", "velx", "vely", "velz", "ener", "eint"},
                        "variables in plotfiles (single precision); \"unk\" stands for every "
                        "unk variable its unit marks as plotted");
  p.declare_bool("io.async", false,
                 "write outputs on an I/O thread while the step loop goes on (needs "
                 "MPI_THREAD_MULTIPLE)");
  p.declare_string("io.async_budget", "1G", {},
                   "bytes of snapshots the step loop may hold for the I/O thread (K/M/G suffixes)");
  p.declare_string("io.async_overflow", "wait", {"wait", "sync"},
                   "when a snapshot would exceed io.async_budget: wait for earlier outputs, or "
                   "write it synchronously");
  p.declare_string("io.thread_priority", "normal", {"normal", "low", "idle"},
                   "CPU priority of the I/O thread: normal, low (nice +10: the step loop wins "
                   "a shared core) or idle (SCHED_IDLE: only cores nobody else wants)");
  p.declare_string("io.mpi_wait", "poll", {"poll", "yield"},
                   "how MPI waits while ranks and I/O threads share cores: poll (MPI's "
                   "default busy wait) or yield (Open MPI yields the core when idle; the whole "
                   "process, with io.async only)");
  p.declare_string("io.writer", "auto", {"auto", "rank", "node"},
                   "who writes an asynchronous output: rank (every rank's I/O thread, "
                   "collective MPI-IO), node (the snapshots are gathered onto rank 0, whose "
                   "I/O thread writes alone; all ranks on one node; outputs with particles "
                   "stay rank) or auto: node when the ranks share one node, else rank while "
                   "the nodes have cores to spare, else synchronous writes (said in the log "
                   "and summary.json io.note), and synchronous writes on a full node when the run "
                   "has particles");
  p.declare_string("io.stage_dir", "", {},
                   "write outputs here first (fast local storage) and drain them to the run "
                   "directory in the background; empty: off");
  p.declare_int("io.plotfile_deflate", 0, 0, 9,
                "HDF5 deflate level for plotfile variables (0: off)");
  p.declare_string("io.romio_cb_write", "", {"", "enable", "disable", "automatic"},
                   "MPI-IO hint romio_cb_write (collective buffering); empty: MPI's default");
  p.declare_string("io.romio_ds_write", "", {"", "enable", "disable", "automatic"},
                   "MPI-IO hint romio_ds_write (data sieving); empty: MPI's default");
  p.declare_string("io.cb_buffer_size", "", {},
                   "MPI-IO hint cb_buffer_size in bytes (K/M/G suffixes); empty: MPI's default");
  p.declare_int("io.cb_nodes", 0, 0, 1000000,
                "MPI-IO hint cb_nodes (aggregators; 0: MPI's default)");
  p.declare_string_list("io.mpi_hints", {}, "further MPI-IO hints as \"key=value\"");
  p.declare_int("io.inject_write_error", 0, 0, 2000000000,
                "fault injection for tests: the N-th output of the run fails on the last rank "
                "after its data is written (0: off)");
}

OutputConfig config_from(const base::Params& p, const std::string& run_dir, bool thread_multiple) {
  OutputConfig c;
  c.dir = run_dir;
  c.stage_dir = p.get_string("io.stage_dir");
  c.async = p.get_bool("io.async");
  try {
    c.budget = parse_bytes(p.get_string("io.async_budget"));
  } catch (const Error& e) {
    throw Error(std::string("io.async_budget: ") + e.what());
  }
  c.overflow_wait = p.get_string("io.async_overflow") == "wait";
  c.keep_checkpoints = static_cast<int>(p.get_int("io.checkpoint_keep"));
  c.thread_multiple = thread_multiple;
  c.inject_write_error = static_cast<int>(p.get_int("io.inject_write_error"));
  c.thread_priority = p.get_string("io.thread_priority");
  c.mpi_wait = p.get_string("io.mpi_wait");
  c.writer = p.get_string("io.writer");
  return c;
}

std::vector<std::pair<std::string, std::string>> hints_from(const base::Params& p) {
  std::vector<std::pair<std::string, std::string>> h;
  for (const char* k : {"romio_cb_write", "romio_ds_write"}) {
    const auto& v = p.get_string(std::string("io.") + k);
    if (!v.empty()) h.emplace_back(k, v);
  }
  if (const auto& v = p.get_string("io.cb_buffer_size"); !v.empty()) {
    try {
      h.emplace_back("cb_buffer_size", std::to_string(parse_bytes(v)));
    } catch (const Error& e) {
      throw Error(std::string("io.cb_buffer_size: ") + e.what());
    }
  }
  if (const auto n = p.get_int("io.cb_nodes"); n > 0) h.emplace_back("cb_nodes", std::to_string(n));
  for (const auto& kv : p.get_string_list("io.mpi_hints")) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("io.mpi_hints: '" + kv + "' is not key=value");
    h.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return h;
}

}  // namespace tessera::io

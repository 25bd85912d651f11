// The driver's run control: I/O errors from any rank, signals, .dump_* and .kill files,
// wall-clock checkpoints, agreed over ranks once per step.
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "base/error.hpp"
#include "driver/signals.hpp"
#include "driver/simulation.hpp"
#include "io/output_manager.hpp"
#include "parallel/comm.hpp"

namespace tessera::driver {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void Simulation::raise_io_errors() {
  const auto [first, text] = parallel::first_message(comm_, out_->local_error());
  if (first >= 0) throw Error(fmt::format("output failed on rank {}: {}", first, text));
}

std::array<bool, 3> Simulation::control(double& wall_next_chk, double wall_interval,
                                        Clock::time_point t0) {
  TESSERA_REGION("control");
  int flags[6] = {0, 0, 0, 0, 0, 0};
  flags[0] = out_->local_error().empty() ? 0 : 1;
  flags[1] = pending_signal();
  if (rank_ == 0) {
    // FLASH's convention: files dropped into the run directory.
    auto take = [&](const char* name) {
      std::error_code ec;
      const auto f = fs::path(opt_.run_dir) / name;
      if (!fs::exists(f, ec)) return 0;
      fs::remove(f, ec);
      return 1;
    };
    flags[2] = take(".dump_checkpoint");
    flags[3] = take(".dump_plotfile");
    flags[4] = take(".kill");
    const double now = std::chrono::duration<double>(Clock::now() - t0).count();
    if (wall_interval > 0 && now >= wall_next_chk) {
      flags[5] = 1;
      while (wall_next_chk <= now) wall_next_chk += wall_interval;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, flags, 6, MPI_INT, MPI_MAX, comm_);
  if (flags[0]) raise_io_errors();
  if (flags[1]) {
    stopped_by_ = flags[1] == SIGTERM ? "SIGTERM" : (flags[1] == SIGUSR1 ? "SIGUSR1" : "signal");
  } else if (flags[4]) {
    stopped_by_ = ".kill";
  }
  if (flags[2]) log("  .dump_checkpoint found: writing a checkpoint");
  if (flags[3]) log("  .dump_plotfile found: writing a plotfile");
  if (!stopped_by_.empty()) log("  " + stopped_by_ + ": checkpoint, then stop");
  return {flags[2] != 0 || flags[5] != 0, flags[3] != 0, !stopped_by_.empty()};
}

}  // namespace tessera::driver

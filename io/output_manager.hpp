#pragma once
// Every output of a run goes through the OutputManager. Synchronous mode writes on the
// calling thread. Asynchronous mode (io.async) hands a snapshot to one I/O thread per
// rank, which owns every HDF5 call (Debian's parallel HDF5 is not thread-safe) and
// writes on a duplicated communicator (MPI_THREAD_MULTIPLE):
//   - the step loop takes what must be written (tree, parameters, and the staging copy
//     of the variables, or hands that copy to the I/O thread as FlashFileSpec::capture,
//     and waits for it in wait_captures() before it modifies unk), under a byte budget
//     (io.async_budget); when the budget would be exceeded it waits for earlier
//     outputs to finish ("wait") or writes this one synchronously ("sync"), and counts it;
//   - at most one output of each kind is in flight;
//   - an error on any rank's I/O thread is reported by local_error(); the driver turns it
//     into an error on every rank at the next step (a collective check);
//   - the destructor (and drain()) finish every queued output, so nothing is lost.
// With io.stage_dir the file is written to the staging directory and rank 0 drains it to
// the run directory in the background (same atomic publish at the destination).
#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/flash_file.hpp"
#include "memory/arena.hpp"
#include "perf/timers.hpp"

namespace tessera::io {

/// Checkpoints, plotfiles and particle files (FlashFileSpec::grid false), each with its
/// own in-flight slot and statistics, under the one staging budget.
enum class OutputKind { checkpoint = 0, plotfile = 1, particles = 2 };
inline constexpr int kOutputKinds = 3;

struct OutputConfig {
  std::string dir;        ///< run directory (final names)
  std::string stage_dir;  ///< empty: no staging
  bool async = false;
  std::size_t budget = std::size_t(1) << 30;  ///< staging bytes held by queued outputs
  bool overflow_wait = true;     ///< budget exceeded: wait (true) or write synchronously
  int keep_checkpoints = 0;      ///< rolling checkpoints: keep the newest K (0: all)
  bool thread_multiple = false;  ///< MPI provides MPI_THREAD_MULTIPLE
  /// The run has particles (io.writer = auto on a full node then writes synchronously:
  /// its checkpoints and particle files cannot go to the node writer).
  bool particles = false;
  int inject_write_error = 0;  ///< tests: the N-th output fails on the last rank (0: off)
  /// The I/O thread's CPU priority: "normal", "low" (nice +10: the step loop wins a
  /// contended core) or "idle" (SCHED_IDLE: it runs only on a core nobody else wants).
  std::string thread_priority = "normal";
  /// "poll" (MPI's busy wait) or "yield": MPI yields the core whenever a wait finds
  /// nothing to do, so a rank's I/O thread and the ranks' step loops waiting in
  /// collectives hand a shared core to whoever has work. Process-wide (Open MPI's
  /// progress engine; other MPIs: not available, reported), applied with an I/O thread.
  std::string mpi_wait = "poll";
  /// "rank": every rank's I/O thread writes its rows (collective MPI-IO among the I/O
  /// threads). "node": the step loops gather the snapshots onto rank 0 (one collective
  /// of the step loop, where the ranks meet anyway) and rank 0's I/O thread writes the
  /// file alone, with no MPI at all; only when every rank is on one node and with
  /// io.async, and not for outputs with particles (those stay "rank"). Same bytes.
  std::string writer = "auto";
};

struct OutputStats {
  int count = 0;
  std::uint64_t bytes = 0;     ///< bytes of the published files
  double blocked_seconds = 0;  ///< step loop time spent in output (snapshot, waits, captures)
  double write_seconds = 0;    ///< time the writes took (write + fsync + publish)
  double drain_seconds = 0;    ///< staging drain (rank 0)
  int sync_fallbacks = 0;      ///< written synchronously although io.async was on
  int budget_waits = 0;        ///< waited for earlier outputs because of the budget
  /// Outputs the caller forced synchronous (the final checkpoint, signals): they cannot
  /// be hidden, so they are counted apart and left out of the hidden fraction.
  int forced_count = 0;
  double forced_blocked_seconds = 0;  ///< included in blocked_seconds
  double forced_write_seconds = 0;    ///< included in write_seconds
};

class OutputManager {
 public:
  /// Collective over comm (duplicates it for the I/O thread).
  OutputManager(MPI_Comm comm, OutputConfig cfg);
  ~OutputManager();
  OutputManager(const OutputManager&) = delete;
  OutputManager& operator=(const OutputManager&) = delete;

  /// Collective (every rank calls it for the same outputs in the same order). Writes the
  /// snapshot that `assemble` returns as `<dir>/<name>`. `estimate_bytes` is the snapshot
  /// size, checked against the budget before assembling. `force_sync`: wait until it is
  /// published (final checkpoint, signals).
  void write(OutputKind kind, const std::string& name, std::size_t estimate_bytes,
             const std::function<FlashFileSpec()>& assemble, bool force_sync);

  /// Within write()'s `assemble`, on a manager that defers captures (defers_capture):
  /// queue `capture` now, so that the I/O thread copies while assemble describes the rest
  /// of the file. `capture` is run on a scratch spec and must fill only its `data`, which
  /// becomes the file's; assemble's spec then has no capture. False (nothing taken)
  /// outside an asynchronous write's assemble: the caller sets FlashFileSpec::capture.
  bool start_capture(std::function<void(FlashFileSpec&)> capture);

  /// Wait until every queued output has taken its copy of the live state its
  /// FlashFileSpec::capture reads (local). The caller must call it before modifying that
  /// state (unk) after a write(); without a capture pending it returns at once.
  void wait_captures();
  /// Wait until every queued write and drain has finished (local).
  void drain();
  /// Non-empty if this rank's I/O thread (or drain) failed: the first error's message.
  std::string local_error() const;
  /// Published files in order (rank 0's view; names only).
  std::vector<std::string> published() const;
  bool async() const { return cfg_.async; }
  /// Whether the I/O thread should copy unk (FlashFileSpec::capture) rather than the step
  /// loop: with io.async at normal priority and a per-rank writer. A low or idle thread
  /// may start the copy and then wait for a core while the step loop waits for the copy
  /// (measured: 16-27 ms per checkpoint instead of 1), and io.writer=node gathers in the
  /// step loop anyway.
  bool defers_capture() const {
    return cfg_.async && cfg_.thread_priority == "normal" && writer_achieved_ != "node";
  }
  std::string async_note() const { return note_; }  ///< why async fell back, if it did
  /// Collective: {"checkpoint": {...}, "plotfile": {...}, "particles": {...}, "async":
  /// bool, ...}; blocked and write seconds are the maximum over ranks. Each kind's
  /// hidden_fraction leaves out the outputs forced synchronous, reported under "forced".
  nlohmann::json stats_json(MPI_Comm comm) const;
  /// The largest staging snapshot written so far (its arena, "staging", as smaps showed
  /// it just before it was written and released); nullopt before the first output.
  std::optional<memory::ArenaReport> staging_report() const;
  /// The I/O thread's timer tree as of its last finished job (empty without a thread).
  std::vector<perf::TimerTree::Row> io_thread_rows() const;

 private:
  struct Job {
    enum Type { write, drain } type = write;
    OutputKind kind = OutputKind::checkpoint;
    std::string name;    ///< final file name (no directory)
    std::string staged;  ///< drain: staged path
    FlashFileSpec spec;
    std::size_t bytes = 0;  ///< budget bytes held
    std::uint64_t id = 0;
    bool inject = false;
    bool forced = false;  ///< force_sync: counted apart (OutputStats::forced_*)
    /// spec.capture: none, pending (counted in uncaptured_), running (outside the lock,
    /// on the thread that took it), taken.
    enum Capture { none, pending, running, taken } capture = none;
    /// start_capture's scratch spec: its capture, then its data, which execute() moves
    /// into spec.data (the step loop may set spec meanwhile).
    FlashFileSpec early;
    bool started = false;    ///< the capture is early's (start_capture)
    bool ready = true;       ///< false while write() is still assembling spec
    bool cancelled = false;  ///< assemble threw: nothing to write

    /// io.writer=node, rank 0: every rank's snapshot as gathered (rank by rank, each
    /// [variable][its rows][cells]) and each rank's rows; execute() lays them out as
    /// the file's rows and writes alone.
    memory::ArenaVector<double> gathered;
    std::vector<std::vector<int>> rows_of;
  };
  MPI_Comm comm_ = MPI_COMM_NULL;  ///< the I/O thread's communicator
  int rank_ = 0;
  OutputConfig cfg_;
  std::string note_;
  std::string priority_achieved_ = "normal";  ///< the I/O thread's priority (under m_)
  std::string mpi_wait_achieved_ = "poll";    ///< what io.mpi_wait obtained
  std::string writer_achieved_ = "rank";      ///< what io.writer obtained
  MPI_Comm step_comm_ = MPI_COMM_NULL;        ///< the step loop's (io.writer=node gathers)
  int nranks_ = 1;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  bool in_flight_[kOutputKinds] = {false, false, false};
  std::size_t held_bytes_ = 0;
  int uncaptured_ = 0;         ///< queued outputs whose capture has not run yet
  Job* assembling_ = nullptr;  ///< the queued job write() is assembling (start_capture's)
  std::uint64_t next_id_ = 1, done_id_ = 0;
  int submitted_ = 0;
  std::string error_;
  std::vector<std::string> published_;
  std::deque<std::string> kept_checkpoints_;  ///< io.checkpoint_keep: published, oldest first
  OutputStats stats_[kOutputKinds];
  std::optional<memory::ArenaReport> staging_;
  std::vector<perf::TimerTree::Row> io_rows_;
  std::thread thread_;

  void loop();
  /// io.writer=node: the step loop's gather of spec onto rank 0 (collective over
  /// step_comm_). Rank 0 keeps it in job.gathered/rows_of; other ranks' job is empty.
  void gather_to_writer(Job& job);
  /// io.writer=node, rank 0 (the I/O thread): spec becomes the whole file's rows.
  static void lay_out_gathered(Job& job);
  /// io.mpi_wait=yield: switch MPI's waits to yielding; returns what was achieved.
  static std::string set_mpi_yield();
  /// The step loop's time in one output of kind k (under m_): blocked_seconds, and the
  /// forced_* counts for an output forced synchronous.
  void charge_blocked(int k, bool forced, double seconds);
  /// Run the pending captures of queued jobs, in queue order, unlocking around each.
  void take_captures(std::unique_lock<std::mutex>& lk);
  /// Write + publish (+ drain when staging in async mode). Runs on the I/O thread in
  /// async mode, on the caller otherwise.
  void execute(Job& job);
  void do_drain(const std::string& staged, const std::string& name, OutputKind kind);
  void published_one(const std::string& name, OutputKind kind);
};

}  // namespace tessera::io

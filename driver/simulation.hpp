#pragma once
// The simulation: the units and the mesh of a run, and the driver's jobs on them: dt from the
// units, the operators in order, refinement every nrefs steps, outputs when due, progress
// lines, run control, restart and summary.json at the end.
#include <mpi.h>

#include <array>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "io/flash_file.hpp"
#include "perf/timers.hpp"
#include "physics/unit.hpp"

namespace tessera::mesh {
class Mesh;
}
namespace tessera::eos {
class Eos;
class EosUnit;
}  // namespace tessera::eos
namespace tessera::problems {
class Problem;
}
namespace tessera::particles {
class ParticleSet;
}
namespace tessera::memory {
class TierRuntime;
}
namespace tessera::io {
class OutputManager;
struct RuntimeLists;
enum class OutputKind;
}  // namespace tessera::io

namespace tessera::driver {

/// Declare every module's parameters (driver, io, mesh, the physics units, problems).
void declare_all_params(base::Params& p);
/// Set every declared parameter stored in checkpoint spec f (source "checkpoint"): the
/// parameters a restart starts from, before its file and overrides.
void checkpoint_params(base::Params& params, const io::FlashFileSpec& f);
/// A list parameter's value as a checkpoint stores it (comma-joined) back as the list.
std::vector<std::string> checkpoint_list(const std::string& stored);

/// How the run was started and what the process may do.
struct RunOptions {
  std::string run_dir = ".";
  /// Restart: the checkpoint's tree, scalars, parameters and manifest, read and verified
  /// on every rank (io::read_flash_metadata; null: fresh start). Its variables are read
  /// by the simulation, each rank its own blocks. Released once the mesh is restored.
  std::shared_ptr<io::FlashFileMeta> restart;
  std::string restart_path;
  bool thread_multiple = false;  ///< MPI provides MPI_THREAD_MULTIPLE
};

/// What the step loop hands the run report.
struct RunTotals {
  double zone_updates = 0, loop_seconds = 0, wall = 0;
  std::vector<double> initial, final;  ///< the conserved totals at step 0 and at the end
  bool restarted = false;
  perf::CommCounts comm_loop{};  ///< the communication census of the step loop (this rank)
  long loop_steps = 0;           ///< the steps this run made
};

// The driver, split by job (one file each): wiring and the units' services
// (simulation.cpp), the step loop (step_loop.cpp), refinement (refinement.cpp), restart
// (restart.cpp), output assembly (output_assembly.cpp), run control (run_control.cpp,
// signals.cpp) and the run report (run_report.cpp).
class Simulation {
 public:
  /// Collective.
  Simulation(const base::Params& p, MPI_Comm comm, RunOptions opt);
  ~Simulation();
  /// Collective: run to driver.tmax or driver.nend (or until a stop request); returns
  /// summary.json's content.
  nlohmann::json run();

 private:
  const base::Params& p_;
  MPI_Comm comm_;
  int rank_ = 0, nranks_ = 1;
  RunOptions opt_;
  /// The memory tier runtime (memory.tier.*), made before anything maps an arena and
  /// destroyed after everything that holds one (declared first); null without tiers.
  std::unique_ptr<memory::TierRuntime> tiers_;
  /// When the constructor started: wall_seconds and the timer tree both count from here
  /// (setup, i.e. mapping the arenas, included).
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  physics::RunContext ctx_;                ///< what the units know of the run (given at bind)
  physics::Units units_;                   ///< operators (driver.operators), then services
  std::vector<physics::Unit*> operators_;  ///< applied each step in this order
  eos::EosUnit* eos_ = nullptr;
  /// The particles a unit owns (tracers), written to checkpoints and particle files; null
  /// without particles.
  particles::ParticleSet* particles_ = nullptr;
  std::unique_ptr<eos::Eos> setup_eos_;  ///< the EOS with composition.initial, for set-ups
  std::unique_ptr<problems::Problem> problem_;
  std::unique_ptr<mesh::Mesh> mesh_;
  std::unique_ptr<io::OutputManager> out_;
  // State that a checkpoint carries (besides the tree and the fields).
  double time_ = 0, dt_ = 0, dt_prev_ = 0;
  int step_ = 0;
  int plot_count_ = 0, chk_count_ = 0;
  double next_plot_time_ = 0, next_chk_time_ = 0;
  std::vector<std::string> total_names_;  ///< every unit's conserved totals, unit order
  /// Every unit's declarations after bind, in units_ order (decl()).
  std::vector<physics::Declarations> decl_;
  /// The declarations of unit u, as bind left them.
  const physics::Declarations& decl(const physics::Unit& u) const;
  std::vector<double> totals0_;  ///< their values at step 0 (kept across restarts)
  std::vector<std::pair<std::string, std::string>> hints_;  ///< MPI-IO hints for every file
  /// FLASH's runtime parameter lists, made at the first output (fixed for the run).
  std::shared_ptr<const io::RuntimeLists> runtime_lists_;
  std::string stopped_by_;
  nlohmann::json plan_;  ///< the memory planner's prediction for this run
  bool restarted_ = false;

  void initialise();
  /// Collective: the tree from the checkpoint's metadata, then this rank's blocks read
  /// from the file (io::read_flash_rows) and the scalars.
  void restore(const io::FlashFileMeta& m);
  /// The units with the services (composition, eos) before the operators: the order of
  /// bind(), initialise() and the regrid hooks.
  std::vector<physics::Unit*> services_first_;
  /// The units with conserved totals and how many each has, in total_names_ order.
  std::vector<std::pair<physics::Unit*, std::size_t>> totals_by_;
  /// Every unit's initialise hook, services first.
  void initialise_units();
  /// Every unit's deferred work of kind `what` (physics::Deferred says who reads which).
  void refresh_units(physics::Deferred what);
  /// Guard zones of every variable after the units' unk_state: the mesh fills the
  /// guard-filled ones, the units' guard_state the rest (collective).
  void fill_guards();
  /// Refinement marking and regrid; true if the tree changed. `lean`: the guard fill
  /// before it left out the units' refreshes (marking_skips_refresh()), and the derived
  /// refinement variables come from their unit's derived() (Unit::derives).
  bool mark_and_regrid(bool lean = false);
  /// mesh.balance = "cost" on one level: blocks move to the cost partition when it is
  /// better (Mesh::regrid on an unchanged tree), the units told as after a regrid.
  bool rebalance();
  /// Whether marking may leave out the units' refreshes: they write derived variables
  /// alone (Unit::refresh_writes), and every refinement variable is guard-filled and
  /// independent, or derived and computed by a unit that derives() it.
  bool marking_skips_refresh() const;
  /// The unit that derives() unk variable `name`, or null.
  const physics::Unit* marking_provider(const std::string& name) const;
  long regrid_checks_ = 0, regrid_changes_ = 0;  ///< in the step loop and at start-up
  void check_state();
  /// Collective: the derived variables (VarRole::derived) tested for NaN and inf before an
  /// output, with check_state's one-line error (the units' refresh has run).
  void check_derived();
  /// The independent variables no unit's check() covers (VarInfo::checked), which
  /// check_state tests for NaN and inf; the derived ones, which check_derived tests.
  std::vector<int> unchecked_vars_, derived_vars_;
  /// check_state's and check_derived's report of a bad zone (collective).
  void report_bad(const physics::BadZone& bad);
  /// The first zone of this rank's leaves where one of `vars` is NaN or inf.
  physics::BadZone first_non_finite(const std::vector<int>& vars) const;
  std::vector<double> totals();  ///< total_names_'s values (rank-independent sums)
  /// The unit that derives output variable `name`, or null.
  const physics::Unit* deriver(const std::string& name) const;
  void write(bool checkpoint, bool force_sync = false);
  /// Collective, once per step: I/O errors from any rank, signals, .dump_* / .kill files,
  /// the wall-clock checkpoint schedule. Returns {want_checkpoint, want_plotfile, stop}.
  std::array<bool, 3> control(double& wall_next_chk, double wall_interval,
                              std::chrono::steady_clock::time_point t0);
  /// Collective: if any rank's I/O failed, every rank throws the first one's message.
  void raise_io_errors();
  void log(const std::string& line) const;
  /// Collective: summary.json's content (rank 0 prints the timer table and publishes the
  /// file).
  nlohmann::json report(const RunTotals& rt);
  /// After the first step of this run: the tier runtime's static placement (static,
  /// static_prefetch, dynamic), with one particle batch = the largest local leaf's
  /// particles. Per rank; rank 0 logs.
  void place_tiers();
};

}  // namespace tessera::driver

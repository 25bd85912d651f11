#pragma once
// A physics unit describes itself to the driver, as a Parthenon package does
// (StateDescriptor): the variables it owns in `unk` (with metadata), its derived outputs,
// its conserved totals, and its hooks. The driver builds `unk` as the union of what the
// active units declare, applies the operators of driver.operators in order each step, and
// lets the planner, the writer, restart and the totals read the declarations; no module
// keeps a mirror of another's variables.
//
// Life cycle (driver/simulation.cpp):
//   construct (parameters only, nothing large)  -> variables(), nguard(), nflux(),
//   memory_needs() are valid (the planner uses them before anything is allocated);
//   bind(mesh, units, ctx) once `unk` exists: look up variable indices and the units
//                       it calls (hydro finds the EOS), map arenas, keep the run's
//                       context (run directory, clock after a restart); services
//                       (composition, eos) are bound before the operators;
//   initialise(mesh)    after the problem filled the interior (services first too);
//   after_restart(mesh) instead, after a restart read unk from a checkpoint;
//   each step: max_dt (all units), advance (operators in order; the other units'
//                       refresh(unk_state) first), check (all units); refresh of the
//                       deferred state each reader needs before outputs and marking;
//   before_regrid(mesh) once a regrid will move data (variables to conserved form);
//   after_regrid(mesh)  when the tree changed (back, and every leaf's auxiliary state).
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memory/arena.hpp"
#include "mesh/mesh.hpp"

namespace tessera::particles {
class ParticleSet;
}
namespace tessera::base {
class Params;
}

namespace tessera::physics {

class Units;

/// What a unit may know of the run it is part of, given once at bind (and valid for the
/// unit's life): where the run writes, its communicator and parameters, and the clock the
/// run starts from (a restart's checkpoint time and step, else 0).
struct RunContext {
  std::string run_dir = ".";  ///< the unit's own files go there (pic_history.csv)
  MPI_Comm comm = MPI_COMM_WORLD;
  const base::Params* params = nullptr;
  bool restarted = false;  ///< the run continues a checkpoint
  double start_time = 0;   ///< the run's time at its first step (the checkpoint's)
  int start_step = 0;      ///< the run's step count at its first step
};

/// A NaN or unphysical value found in a zone (node < 0: none).
struct BadZone {
  int node = -1, i = 0, j = 0, k = 0;  ///< interior zone indices from 0; node -1: unknown
  double value = 0;
  std::string what;       ///< the quantity ("density"), or the whole story if `sentence`
  bool sentence = false;  ///< `what` is a full message (an EOS failure, say)
  bool bad() const { return !what.empty(); }
};

/// An arena a unit will map, for the planner: `bytes` under policy memory.pages_<config>.
struct ArenaNeed {
  std::string name;           ///< the arena's name ("scratch", "rk_stage")
  std::string config;         ///< memory.pages_<config> chooses its page policy
  double bytes = 0;           ///< fixed part
  double bytes_per_slot = 0;  ///< part per block slot (times mesh.maxblocks)
  std::string formula;        ///< how bytes follow from the block shape, for the plan's table
  /// Part per block the rank holds (particles: particles per block times their bytes).
  double bytes_per_block = 0;
  /// "steady": an arena mapped for the run; else the phase ("step", "checkpoint",
  /// "plotfile") in which it is allocated and freed again (a transient item).
  std::string phase = "steady";
  /// Only on more than one rank (what a migration between ranks allocates).
  bool multi_rank = false;
  /// Part of the whole run, shared evenly by the ranks (tracers placed over the domain).
  double bytes_shared = 0;
};

/// Work a unit may leave undone until someone reads it (Unit::refresh), by who reads it.
enum class Deferred : std::uint8_t {
  unk_state,    ///< unk's interiors (hydro's gamma-law EOS state): before outputs, marking
                ///< and every other operator whose advance reads it (Unit::reads)
  guard_state,  ///< guard zones of variables the guard fills skip (the EOS state), after
                ///< the driver's own fill for marking
  outside_unk   ///< work outside unk (the tracers' move, pic's charge diagnostic): before
                ///< outputs and at the end of the run
};

/// What a unit may read of the checkpoint its run restarts from (Unit::restore_check).
struct CheckpointInfo {
  /// A string scalar or runtime parameter of the file, trimmed ("" if absent).
  std::function<std::string(const std::string&)> string_value;
  /// A real runtime parameter of the file (nullopt if absent).
  std::function<std::optional<double>(const std::string&)> real_parameter;
  /// A real scalar of the file ("time", "scalar_integral_start"; nullopt if absent).
  std::function<std::optional<double>(const std::string&)> real_scalar;
  /// A list parameter of the file ("pic.species"), as the list ({} if absent).
  std::function<std::vector<std::string>(const std::string&)> string_list;
  /// Whether driver.restart_drop names `what` (a species, group or particle species the
  /// unit would drop of the checkpoint); a unit refuses a loss it is not allowed.
  std::function<bool(const std::string&)> may_drop;
  /// Logs what the unit dropped ("pic: species proton (12800 particles)").
  std::function<void(const std::string&)> dropped;
};

class Unit {
 public:
  virtual ~Unit() = default;
  /// The name in driver.operators and in summary.json "units" ("hydro", "eos", ...).
  virtual std::string name() const = 0;
  /// Variables owned in unk. Order matters only within the unit.
  virtual std::vector<mesh::VarInfo> variables() const { return {}; }
  /// Guard zones the unit's stencils need.
  virtual int nguard() const { return 0; }
  /// Flux-carrying variables the unit stores in the flux register (0: none).
  virtual int nflux(const std::vector<mesh::VarInfo>& /*unk*/) const { return 0; }
  /// Arenas the unit maps in bind() for an unk of variables `unk`, blocks of shape s
  /// and maxblocks slots.
  virtual std::vector<ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& /*unk*/,
                                              const mesh::BlockShape& /*s*/,
                                              long /*maxblocks*/) const {
    return {};
  }
  /// Once unk exists (collective): variable indices, the units it calls, its arenas; the
  /// run's context (kept by reference: the driver's, valid for the unit's life).
  virtual void bind(mesh::Mesh& /*m*/, Units& /*units*/, const RunContext& /*ctx*/) {}
  /// After the problem has filled every local leaf's interior (collective).
  virtual void initialise(mesh::Mesh& /*m*/) {}
  /// After a restart read unk: why the unit's state in unk cannot be taken as the
  /// checkpoint holds it ("" = it can). The EOS unit: the EOS state belongs to the EOS that
  /// wrote it, so another type, gamma or table recomputes it. If any unit (or a missing
  /// auxiliary variable) gives a reason, the driver logs it and calls every unit's
  /// initialise instead of after_restart.
  virtual std::string restore_check(const CheckpointInfo& /*c*/) const { return {}; }
  /// After a restart filled unk from a checkpoint when initialise is not called
  /// (collective): recompute the derived variables the unit recomputes() (not read from
  /// the file) and rebuild what it keeps outside unk (gravity's last field), so that the
  /// run continues bitwise as if it had not stopped.
  virtual void after_restart(mesh::Mesh& /*m*/) {}
  /// Scalars the unit keeps outside unk that a restart must give back (a field's integral
  /// at the run's start, a counter), written into every checkpoint's "real scalars" as
  /// "<unit name>_<key>" (FLASH's names: 80 characters at most).
  virtual std::vector<std::pair<std::string, double>> checkpoint_scalars() const { return {}; }
  /// Strings every output (checkpoint and plotfile) records in its "string scalars": the
  /// identity of data a run used (the EOS's "eos_table_sha256", the burn's
  /// "nse_table_sha256"; FLASH's names: 80 characters at most).
  virtual std::vector<std::pair<std::string, std::string>> output_strings() const { return {}; }
  /// After a restart, last (after after_restart or initialise): the checkpoint's scalars,
  /// by c.real_scalar("<unit name>_<key>") (nullopt in a checkpoint that lacks one: a
  /// checkpoint of an older build or of a run without the unit).
  virtual void restore_scalars(const CheckpointInfo& /*c*/) {}
  /// Largest stable time step over this rank's leaves (not reduced).
  virtual double max_dt(mesh::Mesh& /*m*/) const { return std::numeric_limits<double>::max(); }
  /// Advance every local leaf by dt (collective). Only operators are advanced.
  virtual void advance(mesh::Mesh& /*m*/, double /*dt*/) {}
  /// Whether advance may write the leaves' values in unk (default true; the tracers move
  /// particles only). The driver advances Mesh::state_epoch before each operator that
  /// does, so that what another unit kept from unk goes stale.
  virtual bool writes_unk() const { return true; }
  /// Bring up to date what the unit deferred of kind `what` (nothing to do when nothing
  /// was deferred; collective). One mechanism for every unit's lazy work: the driver calls
  /// it for a kind before a reader of that kind needs it (see Deferred).
  virtual void refresh(mesh::Mesh& /*m*/, Deferred /*what*/) {}
  /// Whether the unit's advance reads the other units' deferred state of kind `what`
  /// (default: their unk_state; the tracers and pic read none: dens and the momenta,
  /// their own fields, are never stale), so that the driver refreshes it first.
  virtual bool reads(Deferred what) const { return what == Deferred::unk_state; }
  /// The unk variables refresh(what) may write (default: none). The driver's refinement
  /// marking leaves out the refreshes of unk_state and guard_state when every variable
  /// they write is derived (mesh::VarRole::derived) and it can read each refinement
  /// variable without them: guard-filled and independent, or derived and computed per
  /// block by a unit that derives() it. Users: hydro (the EOS state: derived with the
  /// gamma law, so marking skips its refresh, about 5 % of a 3-D step when measured;
  /// independent with Helmholtz, so marking refreshes first).
  virtual std::vector<std::string> refresh_writes(Deferred /*what*/) const { return {}; }
  /// The derived unk variables (VarRole::derived) this unit writes and keeps current: a
  /// restart does not read them from the checkpoint (it sets them to NaN) and a regrid
  /// does not move them, and the unit recomputes them in after_restart and after_regrid.
  /// A derived variable that no active unit recomputes is treated as independent (the
  /// gamma law's EOS state with the prescribed flow alone: nothing recomputes it).
  /// Users: hydro (the EOS state).
  virtual std::vector<std::string> recomputes() const { return {}; }
  /// Whether derived(name, u, s, out, true) computes the derived unk variable `name` over
  /// the whole block array from the guard-filled variables alone, to the bits the unit
  /// leaves in unk (refresh of unk_state and guard_state). Users: hydro ("pres" with the
  /// gamma law).
  virtual bool derives(const std::string& /*name*/) const { return false; }
  /// Before a regrid moves block data (the tree will change; guard zones are filled):
  /// put what must be conserved by prolongation and restriction in conserved form.
  virtual void before_regrid(mesh::Mesh& /*m*/) {}
  /// After a regrid changed the tree (collective): undo before_regrid and refresh the
  /// auxiliary state of every leaf.
  virtual void after_regrid(mesh::Mesh& /*m*/) {}
  /// The first bad zone of this rank's leaves.
  virtual BadZone check(mesh::Mesh& /*m*/) const { return {}; }
  /// The unit's own refinement criterion (a level-set band, a scalar front), evaluated with
  /// the Löhner criteria whenever the driver marks (guard zones of the guard-filled
  /// variables filled): write votes[id] for this rank's leaves (refine, derefine or keep:
  /// no change) and return true; false (the default): the unit has none. A leaf refines
  /// if any criterion says refine and derefines only if every criterion says derefine
  /// (Parthenon's rule). Users: the example unit `scalar`; the level set (issue 22).
  virtual bool tag_refinement(mesh::Mesh& /*m*/, std::vector<mesh::Flag>& /*votes*/) const {
    return false;
  }

  /// Derived output variables (computed from unk, written to files, usable for
  /// refinement).
  virtual std::vector<std::string> derived_names() const { return {}; }
  /// Fill out (x fastest) with derived variable `name` (one of derived_names(), or a derived
  /// unk variable the unit derives()) of block view u over the interior, or the whole
  /// block array with guards. u may be a view of an output snapshot that
  /// holds every unk variable at its unk index.
  virtual void derived(const std::string& /*name*/,
                       const mesh::BlockView<mesh::Layout::var_major>& /*u*/,
                       const mesh::BlockShape& /*s*/, double* /*out*/, bool /*with_guards*/) const {
  }
  virtual void derived(const std::string& /*name*/,
                       const mesh::BlockView<mesh::Layout::zone_major>& /*u*/,
                       const mesh::BlockShape& /*s*/, double* /*out*/, bool /*with_guards*/) const {
  }

  /// Names of the volume integrals the unit conserves ("mass", "energy").
  virtual std::vector<std::string> total_names() const { return {}; }
  /// Per-zone densities of those totals: the caller multiplies by the zone volume and
  /// sums in canonical order. out[t] for total t of interior zone (i, j, k).
  virtual void total_densities(const mesh::BlockView<mesh::Layout::var_major>& /*u*/, int /*i*/,
                               int /*j*/, int /*k*/, double* /*out*/) const {}
  virtual void total_densities(const mesh::BlockView<mesh::Layout::zone_major>& /*u*/, int /*i*/,
                               int /*j*/, int /*k*/, double* /*out*/) const {}

  /// What summary.json records of this unit (null: nothing). Collective (a unit may
  /// reduce over ranks).
  virtual nlohmann::json summary(MPI_Comm /*comm*/) const { return nullptr; }
  /// Columns the unit adds to history.csv, after the driver's ("levelset_area"): a
  /// quantity a user follows step by step. Fixed for the run (the header is written once).
  virtual std::vector<std::string> history_names() const { return {}; }
  /// Their values now, one per name (collective: every rank calls it when a row is due;
  /// rank 0 writes them). Users: the level set (interface area and length).
  virtual std::vector<double> history_values(mesh::Mesh& /*m*/) const { return {}; }

  /// The particles the unit owns (null: none). The driver writes them to checkpoints and
  /// particle files and loads them on restart (then calls after_restart).
  virtual particles::ParticleSet* particle_set() { return nullptr; }
};

/// Implements Unit's per-layout overloads (derived, total_densities) from the templates of
/// Derived, derived_impl(name, view, shape, out, with_guards) and totals_impl(view, i, j,
/// k, out), so that a unit writes each once for every layout (as problems::ProblemBase does for
/// set-ups). A unit without one keeps the empty default.
template <class Derived>
class UnitBase : public Unit {
 public:
  void derived(const std::string& name, const mesh::BlockView<mesh::Layout::var_major>& u,
               const mesh::BlockShape& s, double* out, bool with_guards) const final {
    self().derived_impl(name, u, s, out, with_guards);
  }
  void derived(const std::string& name, const mesh::BlockView<mesh::Layout::zone_major>& u,
               const mesh::BlockShape& s, double* out, bool with_guards) const final {
    self().derived_impl(name, u, s, out, with_guards);
  }
  void total_densities(const mesh::BlockView<mesh::Layout::var_major>& u, int i, int j, int k,
                       double* out) const final {
    self().totals_impl(u, i, j, k, out);
  }
  void total_densities(const mesh::BlockView<mesh::Layout::zone_major>& u, int i, int j, int k,
                       double* out) const final {
    self().totals_impl(u, i, j, k, out);
  }

 protected:
  template <class View>
  void derived_impl(const std::string&, const View&, const mesh::BlockShape&, double*, bool) const {
  }
  template <class View>
  void totals_impl(const View&, int, int, int, double*) const {}

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

/// The active units of a run, in the order they were added (the order of unk, of the
/// initialise hooks and of summary.json "units").
class Units {
 public:
  void add(std::unique_ptr<Unit> u) { units_.push_back(std::move(u)); }
  const std::vector<std::unique_ptr<Unit>>& all() const { return units_; }
  /// The unit named `name`, or null.
  Unit* find(const std::string& name) const {
    for (const auto& u : units_)
      if (u->name() == name) return u.get();
    return nullptr;
  }
  /// The unit of type T, or null.
  template <class T>
  T* find() const {
    for (const auto& u : units_)
      if (auto* t = dynamic_cast<T*>(u.get())) return t;
    return nullptr;
  }

 private:
  std::vector<std::unique_ptr<Unit>> units_;
};

}  // namespace tessera::physics

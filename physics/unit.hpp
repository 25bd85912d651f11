#pragma once
// A physics unit describes itself to the driver, as a Parthenon package does
// (StateDescriptor): the variables it owns in `unk` (with metadata), its derived outputs,
// its conserved totals, and its hooks. The driver builds `unk` as the union of what the
// active units declare, applies the operators of driver.operators in order each step, and
// lets the planner, the writer, restart and the totals read the declarations; no module
// keeps a mirror of another's variables.
//
// Life cycle (driver/simulation.cpp):
//   construct (parameters only, nothing large)  -> declarations() and memory_needs() are
//                       valid (the planner uses them before anything is allocated);
//   bind(mesh, services, ctx) once `unk` exists: look up variable indices, take the
//                       services it needs (hydro the EOS), map arenas, keep the run's
//                       context (run directory, clock after a restart); the service
//                       providers (composition, eos) are bound before the operators;
//   initialise(mesh)    after the problem filled the interior (services first too);
//   restore(mesh, c)    instead, after a restart read unk and the particles of a checkpoint;
//   each step: max_dt (all units), advance (operators in order; the other units'
//                       refresh(unk_state) first), check (all units); refresh of the
//                       deferred state each reader needs before outputs and marking;
//   before_regrid(mesh) once a regrid will move data (variables to conserved form);
//   after_regrid(mesh)  when the tree changed (back, and every leaf's auxiliary state).
#include <array>
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

/// A problem's exact solution, which a unit takes its initial state or boundary values from
/// and measures itself against (problems/ implements it: problems/pulse.hpp's Gaussian
/// pulse; the driver hands the problem's to the units in RunContext::exact).
class ExactSolution {
 public:
  virtual ~ExactSolution() = default;
  /// The value at x (its first nd coordinates: x, y, z; r, z in r-z) and time t of the
  /// problem's field as the linear diffusion equation with coefficient D in d dimensions
  /// evolves it.
  virtual double diffusing(const std::array<double, 3>& x, double t, double D, int nd,
                           int d) const = 0;
};

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
  /// The problem's exact solution, where it has one (the diffusion pulse); else null.
  const ExactSolution* exact = nullptr;
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
                ///< and every other operator whose advance reads it (Declarations::reads)
  guard_state,  ///< guard zones of variables the guard fills skip (the EOS state), after
                ///< the driver's own fill for marking
  outside_unk   ///< work outside unk (the tracers' move, pic's charge diagnostic): before
                ///< outputs and at the end of the run
};

/// A value a unit's state in unk was computed with (the EOS's type, table or gamma): a
/// restart takes that state from the checkpoint only where the checkpoint records the same
/// value (as a string scalar, or a string or real runtime parameter); otherwise every unit's
/// initialise recomputes it from the independent variables.
struct StateKey {
  std::string key;        ///< "eos.type", "eos_table_sha256", "eos.gamma"
  std::string value;      ///< this run's value (a real as fmt's "{}" writes it: round-trip)
  bool required = false;  ///< a checkpoint without the key does not match either
};

/// What a unit is, as data the driver, the mesh, the planner, the writer and restart act
/// on (as Parthenon's packages declare variable metadata in a StateDescriptor). Built from
/// the unit's parameters: valid from construction, so that the planner reads it before
/// anything is allocated; `derives`, `state_keys`, `derived` and `particle_set` are read after
/// bind and may depend on what bind found (hydro derives "pres" only with a uniform-gamma EOS;
/// composition drops "ye" once the burn keeps it in unk).
struct Declarations {
  // unk and the flux register
  std::vector<mesh::VarInfo> variables{};  ///< owned in unk (order matters only within the unit)
  int nguard = 0;                          ///< guard zones its stencils need
  int flux_vars = 0;                       ///< flux-carrying variables it stores in the register
  bool flux_mass_scalars = false;          ///< ... plus one per mass scalar of unk (hydro)
  // outputs and diagnostics
  std::vector<std::string> derived{};  ///< derived output variables (Unit::derived)
  std::vector<std::string> totals{};   ///< conserved volume integrals (Unit::total_densities)
  /// Columns of history.csv after the driver's ("levelset_area"): fixed for the run, their
  /// values from diagnostics(m, Diagnostic::history_row).
  std::vector<std::string> history{};
  // The deferred-state protocol: what the driver refreshes (Unit::refresh) and when.
  /// Its advance may write the leaves' values in unk (the tracers move particles only): the
  /// driver advances Mesh::state_epoch before each operator that does, so that what another
  /// unit kept from unk goes stale.
  bool writes_unk = true;
  /// Other units' deferred state its advance reads, refreshed first (the tracers and pic
  /// read none: dens and the momenta, their own fields, are never stale).
  std::vector<Deferred> reads{Deferred::unk_state};
  /// The unk variables its refresh of unk_state and guard_state may write. The driver's
  /// refinement marking leaves those refreshes out when every such variable is derived and
  /// it can read each refinement variable without them (guard-filled and independent, or
  /// derived and in some unit's `derives`). Hydro: the EOS state (derived with the gamma
  /// law, so marking skips its refresh, about 5 % of a 3-D step when measured; independent
  /// with Helmholtz, so marking refreshes first).
  std::vector<std::string> refresh_writes{};
  /// The derived unk variables (VarRole::derived) it keeps current: a restart does not read
  /// them from the checkpoint (it sets them to NaN) and a regrid does not move them; the unit
  /// recomputes them in restore and after_regrid. A derived variable that no active unit
  /// recomputes is treated as independent (the gamma law's EOS state with the prescribed
  /// flow alone). Hydro: the EOS state.
  std::vector<std::string> recomputes{};
  /// Derived unk variables derived(name, u, s, out, true) computes over the whole block
  /// array from the guard-filled variables alone, to the bits the unit leaves in unk (after
  /// its refreshes). Hydro: "pres" with the gamma law.
  std::vector<std::string> derives{};
  // restart
  std::vector<StateKey> state_keys{};  ///< what its state in unk was computed with
  /// The particles the unit owns (made at bind: read after it; null: none). The driver
  /// writes them to checkpoints and particle files and loads them on restart (before
  /// restore). Users: the tracers, pic.
  particles::ParticleSet* particle_set = nullptr;
  // load balance
  /// The unit keeps per-block state across steps outside unk (gravity: the start-of-step
  /// momenta and face potentials, per block slot). Blocks then move only at regrids that
  /// change the tree (the unit rebuilds it in after_regrid, at the same steps on any rank
  /// count), never on an unchanged tree (mesh.balance = "cost"): such a move would make
  /// the answers depend on the rank count.
  bool block_state = false;
};

/// What a unit keeps in files besides unk.
struct FileRecords {
  /// Scalars kept outside unk that a restart must give back (a field's integral at the
  /// run's start, a counter), written into every checkpoint's "real scalars" as
  /// "<unit name>_<key>" (FLASH's names: 80 characters at most); read back in restore.
  std::vector<std::pair<std::string, double>> scalars{};
  /// Strings every output (checkpoint and plotfile) records in its "string scalars": the
  /// identity of data the run used (the EOS's "eos_table_sha256", the burn's
  /// "nse_table_sha256"; 80 characters at most).
  std::vector<std::pair<std::string, std::string>> strings{};
};

/// What Unit::diagnostics is asked for.
enum class Diagnostic : std::uint8_t {
  summary,     ///< what summary.json records of the unit (an object, or null: nothing)
  history_row  ///< this step's values of Declarations::history (an array of numbers)
};

/// What a unit may read of the checkpoint its run restarts from (Unit::restore).
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
  /// unk's state could not be taken as the file holds it (a StateKey differed, or a
  /// recomputable variable was missing): every unit's initialise ran instead, and restore
  /// has only the unit's own scalars and records to bring back.
  bool initialised = false;
};

class Services;

/// A physics unit. Twenty virtual functions, the destructor among them: what it is (name,
/// declarations, memory_needs), its life cycle (bind, initialise, restore), each step
/// (max_dt, advance, check, refresh), the regrid (tag_refinement, before_regrid,
/// after_regrid), and what it gives to outputs (file_records, derived and total_densities
/// with one overload per layout, diagnostics). Each has at least two users (`tessera
/// units` lists who overrides what); what a unit's variables and particles need is data
/// (Declarations).
class Unit {
 public:
  virtual ~Unit() = default;
  /// The name in driver.operators and in summary.json "units" ("hydro", "eos", ...).
  virtual std::string name() const = 0;
  /// The unit's declarations (see Declarations).
  virtual Declarations declarations() const { return {}; }
  /// Arenas the unit maps in bind() for an unk of variables `unk`, blocks of shape s
  /// and maxblocks slots.
  virtual std::vector<ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& /*unk*/,
                                              const mesh::BlockShape& /*s*/,
                                              long /*maxblocks*/) const {
    return {};
  }
  /// Once unk exists (collective): variable indices, the services it declared it needs
  /// (handed over by the registry), its arenas; the run's context (kept by reference: the
  /// driver's, valid for the unit's life).
  virtual void bind(mesh::Mesh& /*m*/, const Services& /*services*/, const RunContext& /*ctx*/) {}
  /// After the problem has filled every local leaf's interior (collective).
  virtual void initialise(mesh::Mesh& /*m*/) {}
  /// After a restart filled unk from a checkpoint and loaded its particles (collective;
  /// every unit, services first): unless c.initialised, recompute the derived variables
  /// the unit recomputes (not read from the file) and rebuild what it keeps outside unk
  /// (gravity's last field), so that the run continues bitwise as if it had not stopped;
  /// then, in either case, its FileRecords::scalars by c.real_scalar("<unit name>_<key>")
  /// (nullopt in a checkpoint that lacks one: an older build's or a run's without the
  /// unit), and check what it owns (a particle species the restart would drop).
  virtual void restore(mesh::Mesh& /*m*/, const CheckpointInfo& /*c*/) {}
  /// What the unit keeps in files besides unk (see FileRecords).
  virtual FileRecords file_records() const { return {}; }
  /// Largest stable time step over this rank's leaves (not reduced).
  virtual double max_dt(mesh::Mesh& /*m*/) const { return std::numeric_limits<double>::max(); }
  /// Advance every local leaf by dt (collective). Only operators are advanced.
  virtual void advance(mesh::Mesh& /*m*/, double /*dt*/) {}
  /// Bring up to date what the unit deferred of kind `what` (nothing to do when nothing
  /// was deferred; collective). One mechanism for every unit's lazy work: the driver calls
  /// it for a kind before a reader of that kind needs it (see Deferred).
  virtual void refresh(mesh::Mesh& /*m*/, Deferred /*what*/) {}
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
  /// (Parthenon's rule).
  virtual bool tag_refinement(mesh::Mesh& /*m*/, std::vector<mesh::Flag>& /*votes*/) const {
    return false;
  }

  /// Fill out (x fastest) with derived variable `name` (one of Declarations::derived, or a
  /// derived unk variable in Declarations::derives) of block view u over the interior, or
  /// the whole block array with guards. u may be a view of an output snapshot that holds
  /// every unk variable at its unk index. One overload per layout (UnitBase writes both).
  virtual void derived(const std::string& /*name*/,
                       const mesh::BlockView<mesh::Layout::var_major>& /*u*/,
                       const mesh::BlockShape& /*s*/, double* /*out*/, bool /*with_guards*/) const {
  }
  virtual void derived(const std::string& /*name*/,
                       const mesh::BlockView<mesh::Layout::zone_major>& /*u*/,
                       const mesh::BlockShape& /*s*/, double* /*out*/, bool /*with_guards*/) const {
  }
  /// Per-zone densities of Declarations::totals: the caller multiplies by the zone volume
  /// and sums in canonical order. out[t] for total t of interior zone (i, j, k). One
  /// overload per layout (UnitBase writes both).
  virtual void total_densities(const mesh::BlockView<mesh::Layout::var_major>& /*u*/, int /*i*/,
                               int /*j*/, int /*k*/, double* /*out*/) const {}
  virtual void total_densities(const mesh::BlockView<mesh::Layout::zone_major>& /*u*/, int /*i*/,
                               int /*j*/, int /*k*/, double* /*out*/) const {}

  /// What the unit reports (collective: a unit may reduce over ranks): its summary.json
  /// entry (null: nothing), or, for a unit with Declarations::history, this step's
  /// history.csv values, one number per column (every rank calls it when a row is due;
  /// rank 0 writes them).
  virtual nlohmann::json diagnostics(mesh::Mesh& /*m*/, Diagnostic /*what*/) const {
    return nullptr;
  }
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

/// A service a unit needs of another (Requirements::needs): by name, not by type.
struct Need {
  std::string service;    ///< "eos", "composition", "gravity", "flame", "velocity"
  bool optional = false;  ///< the unit works without it (hydro without gravity)
  std::string why;        ///< one line for `tessera units` ("the state of its fluid")
};

/// The active units of a run, in the order they were added (the order of unk, of the
/// initialise hooks and of summary.json "units"), each with the services it provides.
class Units {
 public:
  void add(std::unique_ptr<Unit> u, std::vector<std::string> provides = {}) {
    units_.push_back(std::move(u));
    provides_.push_back(std::move(provides));
  }
  const std::vector<std::unique_ptr<Unit>>& all() const { return units_; }
  /// The unit named `name`, or null.
  Unit* find(const std::string& name) const;
  /// The unit that provides `service`, or null.
  Unit* provider(const std::string& service) const;
  /// The services unit `u` provides.
  const std::vector<std::string>& provides(const Unit& u) const;
  /// The provider of `service` as T (the driver's EOS and composition), or null.
  template <class T>
  T* provider(const std::string& service) const {
    return dynamic_cast<T*>(provider(service));
  }

 private:
  std::vector<std::unique_ptr<Unit>> units_;
  std::vector<std::vector<std::string>> provides_;
};

/// What bind hands a unit: the providers of the services it declared it needs
/// (Requirements::needs), checked by the registry when it built the run's units. A unit
/// asks by service name, and gets the provider as the service's type: `eos::EosUnit` for
/// "eos", `composition::Composition`, `gravity::Gravity`, `flame::Flame`, `flow::Flow` for
/// "velocity" (a service is its provider's class: one provider of each today).
class Services {
 public:
  Services(const Units& units, std::string unit, std::vector<Need> needs)
      : units_(&units), unit_(std::move(unit)), needs_(std::move(needs)) {}
  /// The provider of `service` as T, or null where the run has none (an optional need).
  /// Throws if the unit did not declare the need, or if the provider is not a T.
  template <class T>
  T* get(const std::string& service) const {
    Unit* u = provider_of(service);
    if (u == nullptr) return nullptr;
    auto* t = dynamic_cast<T*>(u);
    if (t == nullptr) not_of_type(service, *u);
    return t;
  }

 private:
  Unit* provider_of(const std::string& service) const;
  [[noreturn]] void not_of_type(const std::string& service, const Unit& u) const;
  const Units* units_;
  std::string unit_;
  std::vector<Need> needs_;
};

}  // namespace tessera::physics

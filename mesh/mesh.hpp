#pragma once
// The mesh: the replicated tree, this rank's block storage, and the plans that move data
// between blocks (guard fills and their transpose, regrid, parent restriction, flux
// correction). It knows
// variables only by name and by whether they are a vector component (for reflecting
// boundaries); it never names a physics module.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mesh/block_storage.hpp"
#include "mesh/geometry.hpp"
#include "mesh/transfer.hpp"
#include "mesh/tree.hpp"
#include "parallel/exact_sum.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::mesh {

/// How an operator treats a variable of `unk` (physics units declare it; the mesh only
/// stores it and hands the list to whoever asks).
enum class VarKind {
  conserved,    ///< a conserved density updated by fluxes (dens, momx, etot)
  mass_scalar,  ///< a mass-specific quantity X stored as X, advected as rho*X with fluxes
  auxiliary     ///< a zone quantity without fluxes (pres, temp, gamc)
};

/// What a variable is to the run (Parthenon's Metadata::Independent / Derived / OneCopy).
enum class VarRole {
  independent,  ///< evolved state: checkpointed, regridded, restarted (dens, ener, flam)
  derived,      ///< recomputable from the independents to the bit (pres, temp, gamc of a
                ///< gamma law): written to checkpoints and plotfiles (FLASH's layout, and
                ///< the files stay as they were) but not read by a restart nor moved by a
                ///< regrid: the unit that recomputes() it does so after both
  scratch       ///< within a step only (Krylov vectors, RK stages): never written
};
const char* to_string(VarRole r);
const char* to_string(Prolong p);

/// A variable held in `unk`, declared by the unit that owns it.
struct VarInfo {
  VarInfo() = default;
  VarInfo(std::string n, int axis = -1, VarKind k = VarKind::conserved, bool fill = true,
          bool plotted = true, std::string by = {})
      : name(std::move(n)),
        vector_axis(axis),
        kind(k),
        guard_fill(fill),
        plot(plotted),
        owner(std::move(by)) {}
  std::string name;      ///< FLASH name, at most 4 characters
  int vector_axis = -1;  ///< 0/1/2 if this is the x/y/z component of a vector, else -1
  VarKind kind = VarKind::conserved;
  bool guard_fill = true;  ///< guard zones are filled (false: the owner recomputes them)
  bool plot = true;        ///< in the plotfile list "unk" (io.plot_vars) stands for
  std::string owner;       ///< the declaring unit's name
  VarRole role = VarRole::independent;
  Prolong prolong = Prolong::mc;  ///< how a prolongation fills its fine zones
  /// A checkpoint may lack it: its unit's initialise recomputes it from the other
  /// variables (the EOS state, gravity's field); a restart without any other variable is
  /// refused.
  bool recomputable = false;
  /// The owner's check() tests this variable every step (finite, and whatever else its
  /// physics demands); the driver tests every other independent variable for NaN and inf
  /// after each step, and every derived one before each output (issue 48: no variable
  /// escapes the state check).
  bool checked = false;
  /// The same with a role and a prolongation (declarations read as sentences).
  VarInfo with_role(VarRole r) const {
    VarInfo v = *this;
    v.role = r;
    return v;
  }
  VarInfo with_prolong(Prolong p) const {
    VarInfo v = *this;
    v.prolong = p;
    return v;
  }
  VarInfo checked_by_owner() const {
    VarInfo v = *this;
    v.checked = true;
    return v;
  }
};

/// A set of unk variables (indices into Mesh::vars(), ascending, each once): what a guard
/// fill moves. Made by Mesh::var_set from names.
class VarSet {
 public:
  VarSet() = default;
  /// From indices in any order (sorted, duplicates dropped).
  explicit VarSet(std::vector<int> vars);
  const std::vector<int>& vars() const { return vars_; }
  bool contains(int v) const;
  bool empty() const { return vars_.empty(); }
  std::size_t size() const { return vars_.size(); }
  bool operator==(const VarSet& o) const { return vars_ == o.vars_; }

 private:
  std::vector<int> vars_;
};

enum class Boundary { outflow, reflecting, periodic };

/// Cell geometry of one block: lower corner of the interior, cell widths and the
/// coordinate system (geometry.hpp; axis 0 is r in cylindrical and spherical).
struct BlockGeom {
  std::array<double, 3> lo{}, dx{1, 1, 1};
  Geometry geometry = Geometry::cartesian;
  int ndim = 3;
  /// Centre of interior cell (i, j, k), interior indices from 0.
  double x(int i) const { return lo[0] + (i + 0.5) * dx[0]; }
  double y(int j) const { return lo[1] + (j + 0.5) * dx[1]; }
  double z(int k) const { return lo[2] + (k + 0.5) * dx[2]; }
  /// Volume of interior cell i (any j, k; cm^3 with the full 2 pi / 4 pi).
  double volume(int i) const {
    double v = geometry::shell_volume(geometry, lo[0] + i * dx[0], lo[0] + (i + 1) * dx[0]);
    for (int a = 1; a < ndim; ++a) v *= dx[a];
    return v;
  }
};

class FluxRegister;

/// The guard zones of one variable of one block beyond one physical face of the domain,
/// handed to a variable's own boundary condition (Mesh::set_var_boundary). Layer m = 0
/// touches the face (m < ng); (x, y) run over the block's whole array (guard zones
/// included) along the two other axes b < c; faces are filled x, then y, then z, so the
/// guard zones along b and c already hold their values.
struct GuardSlab {
  int axis = 0, side = 0;      ///< the face: axis 0/1/2, side 0 (low) or 1 (high)
  int ng = 0, nb = 1, nc = 1;  ///< layers; extents along the other axes b, c
  int b = 1, c = 2;            ///< the other two axes, b < c
  BlockGeom geom;              ///< the block's cells
  /// Guard zone m (0 next to the face) at transverse array indices (x, y).
  double& guard(int m, int x, int y) const { return at(gidx(m), x, y); }
  /// The interior zone m from the face (the mirror of guard m).
  double interior(int m, int x, int y) const { return at(midx(m), x, y); }
  /// Centre of guard zone (m, x, y); at(axis) of face() gives the face point under it.
  std::array<double, 3> centre(int m, int x, int y) const;
  /// The face's position along `axis`.
  double face() const;
  /// Distance between the centres of guard m and its mirror, (2m + 1) dx.
  double gap(int m) const { return (2 * m + 1) * geom.dx[axis]; }

  double* p0 = nullptr;                ///< the variable's zone (0, 0, 0)
  std::array<std::ptrdiff_t, 3> st{};  ///< offset per array index along each axis
  int nx = 0;                          ///< interior zones along `axis`

 private:
  int gidx(int m) const { return side ? ng + nx + m : ng - 1 - m; }
  int midx(int m) const { return side ? ng + nx - 1 - m : ng + m; }
  double& at(int i_axis, int x, int y) const {
    return p0[i_axis * st[axis] + x * st[b] + y * st[c]];
  }
};

/// A variable's own condition on a face of the domain: fills the slab's guard zones.
using BoundaryFill = std::function<void(const GuardSlab&)>;
/// Dirichlet: the face value g(face point) held by guard = 2 g - mirror (second order for
/// cell-centred data; deeper layers antisymmetric about the face).
BoundaryFill dirichlet(std::function<double(const std::array<double, 3>&)> g);
/// Neumann: the outward normal derivative q(face point): guard = mirror + gap(m) q.
BoundaryFill neumann(std::function<double(const std::array<double, 3>&)> q);

class Mesh {
 public:
  /// Declare mesh.* parameters.
  static void declare_params(base::Params& p);

  /// Collective. Root blocks only, distributed; call refine_initial to reach lrefine_min.
  /// `vars` lists every variable with guard_fill first (guard fills move that prefix of
  /// the variables only); `nflux` is the most flux-carrying variables one operator
  /// stores in the flux register (< 0: as many as vars; 0: none, and the register maps
  /// no memory). Throws tessera::Error on a
  /// repeated name or a guard-filled variable after one that is not.
  Mesh(const base::Params& p, MPI_Comm comm, std::vector<VarInfo> vars, int nguard, int nflux = -1);
  ~Mesh();

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const Tree& tree() const { return tree_; }
  const BlockShape& shape() const { return storage_.shape(); }
  BlockStorage& storage() { return storage_; }
  const BlockStorage& storage() const { return storage_; }
  /// unk's variables: every declared variable but the scratch ones.
  const std::vector<VarInfo>& vars() const { return vars_; }
  int var_index(const std::string& name) const;  ///< -1 if absent (or a scratch variable)
  /// The scratch variables (VarRole::scratch), kept apart from unk in their own block
  /// storage (arena "scratch_vars", page policy memory.pages_scratch), one slot per block at
  /// the block's unk slot. Never written, restarted or moved by a regrid: after a tree
  /// change their values are unspecified. Guard fills on request (fill_scratch_guards).
  const std::vector<VarInfo>& scratch_vars() const { return scratch_vars_; }
  int scratch_index(const std::string& name) const;  ///< -1 if absent
  /// View of a local block's scratch variables (indices of scratch_vars()); L: layout().
  template <Layout L>
  BlockView<L> scratch_view(int node, LayoutTag<L> tag) {
    return scratch_.view(slot_[node], tag);
  }
  /// The scratch storage (empty, no arena, without scratch variables).
  const BlockStorage& scratch_storage() const { return scratch_; }
  BlockStorage& scratch_storage() { return scratch_; }
  int ndim() const { return tree_.geometry().ndim; }
  int nxb() const { return shape().nx; }
  int lrefine_min() const { return lrefine_min_; }  ///< 1-based, as FLASH
  int lrefine_max() const { return lrefine_max_; }
  Boundary boundary(int axis, int side) const { return bc_[axis][side]; }
  /// mesh.geometry, fixed for the run.
  Geometry geometry() const { return geometry_; }

  /// Local slot of node id, or -1 if not held here.
  int slot(int node) const { return slot_[node]; }
  /// Counts the tree's changes (regrids, restarts): what depends on the tree can tell
  /// whether it is still the one it was built for.
  std::uint64_t tree_generation() const { return tree_generation_; }
  /// This rank's leaves, canonical order.
  const std::vector<int>& local_leaves() const { return local_leaves_; }
  BlockGeom geom(int node) const;
  /// Storage layout of `unk` (mesh.layout), fixed for the run.
  Layout layout() const { return storage_.layout(); }
  /// f(LayoutTag<L>{}) for this run's layout: call it once around a loop over blocks and
  /// take views with view(node, tag) inside; f is compiled for both layouts.
  template <class F>
  decltype(auto) with_layout(F&& f) const {
    return storage_.with_layout(static_cast<F&&>(f));
  }
  /// View of a local block; L must be layout() (the tag from with_layout).
  template <Layout L>
  BlockView<L> view(int node, LayoutTag<L> tag) {
    return storage_.view(slot_[node], tag);
  }
  /// f(node, view, geom) for every local leaf in canonical order, the layout dispatched
  /// once around the loop (the one leaf-iteration helper; f is compiled for both).
  template <class F>
  void for_each_leaf(F&& f) {
    with_layout([&](auto tag) {
      for (int id : local_leaves_) f(id, view(id, tag), geom(id));
    });
  }
  /// The other ranks this rank exchanges guard data with (owners of leaves touching one of
  /// its leaves across faces, edges, corners and periodic boundaries), ascending; taken
  /// from the guard-fill plan, so the relation is symmetric. Rebuilt at every tree change.
  const std::vector<int>& peer_ranks() const { return peer_ranks_; }
  /// Smallest cell width on each axis over the whole tree.
  std::array<double, 3> finest_dx() const;
  /// Collective: n sums over the leaves, the same bits on any number of ranks. f(id, out)
  /// writes (or adds to zeros) leaf id's n partial sums (this rank's leaves); each partial
  /// is added exactly (parallel::ExactSum) and the n sums are reduced in one exact
  /// reduction of n * ExactSum::kBytes bytes, whatever the number of blocks, and rounded
  /// once (issue 46; until then the partials of every tree node were gathered on every
  /// rank and added in canonical order). The one place sums over leaves are reduced (the
  /// driver's totals, the Krylov dot products, units' diagnostics).
  std::vector<double> leaf_sums(int n, const std::function<void(int id, double* out)>& f) const;
  /// The same with each leaf's view: f(id, view, geom, out) for every local leaf (layout
  /// dispatched once, as for_each_leaf).
  template <class F>
  std::vector<double> leaf_sums_of_views(int n, F&& f) {
    std::vector<double> part(static_cast<std::size_t>(n));
    std::vector<parallel::ExactSum> acc(static_cast<std::size_t>(n));
    for_each_leaf([&](int id, const auto& u, const BlockGeom& g) {
      std::fill(part.begin(), part.end(), 0.0);
      f(id, u, g, part.data());
      for (std::size_t q = 0; q < part.size(); ++q) acc[q].add(part[q]);
    });
    return parallel::exact_allreduce(comm_, acc);
  }

  /// Collective: fill every local leaf's guard cells (same-level copy, restriction,
  /// prolongation, then physical boundaries, coarse levels first) of the guard-filled
  /// variables, or of the first `nvar` of them (variables [0, nvar): a unit that reads
  /// only hydro's dens and momenta fills those four).
  void fill_guards(int nvar = -1);
  /// Collective: the same for the variables of `set` alone, guard-filled or not (a unit
  /// fills what its stencil reads), in one exchange, each variable with its own
  /// prolongation. The runs of contiguous variables a set moves are worked out once per
  /// set and kept until the tree changes. A fill the marking's guard zones serve
  /// (mark_guards_current) ends that state: its caller may change the variables next.
  void fill_guards(const VarSet& set);
  /// The set of the variables named (throws tessera::Error naming an unknown one).
  VarSet var_set(const std::vector<std::string>& names) const;
  /// The guard-filled variables (what fill_guards() moves).
  VarSet guard_filled() const;
  /// Collective: fill the guard zones of the scratch variables of `set` (indices of
  /// scratch_vars()), as fill_guards(VarSet) does for unk's.
  void fill_scratch_guards(const VarSet& set);
  /// The set of the scratch variables named (throws tessera::Error naming an unknown one).
  VarSet scratch_set(const std::vector<std::string>& names) const;
  /// Variable `var` of unk takes its own condition at face (axis, side) of the domain
  /// instead of the face's mesh.*_boundary_type (which the other variables keep): a unit's
  /// Dirichlet or Neumann value, or any fill (a Marshak condition). Throws tessera::Error
  /// for a periodic face or a bad index. Every guard fill applies it, on every rank.
  void set_var_boundary(int var, int axis, int side, BoundaryFill fill);
  /// The caller states that the guard zones of the guard-filled variables [0, nvar) (all
  /// of them: nvar < 0) hold what a fill would give now: the driver after refinement
  /// marking left the tree as it was, the tracers after the fill of their move. The next
  /// complete fill_guards() fills only the others and forgets this; partial fills skip
  /// those variables and keep it; a fill_guards(VarSet) skips them and forgets it (its
  /// caller may write them next). Whoever changes a guard-filled variable before that fill
  /// calls invalidate_guards(from): the variables from `from` on (hydro's mass scalars to
  /// rho*X: from the first of them; the prescribed flow's momenta: all).
  void mark_guards_current(int nvar = -1) {
    current_vars_ = nvar < 0 ? nfill_ : std::min(nvar, nfill_);
  }
  void invalidate_guards(int from = 0) { current_vars_ = std::min(current_vars_, from); }
  /// A count of changes to the leaves' values. The mesh advances it when it writes them
  /// itself (a regrid that moves data, a restore, accumulate_guards); whoever else writes
  /// them calls touch_state() (the driver: before each operator of a step, after the
  /// initial conditions, the units' refreshes, a restart). A unit may keep a value it
  /// computed from the leaves for as long as the count is unchanged: hydro's end-of-step
  /// check computes the next step's time-step rate with it, in the same pass over memory,
  /// and takes its own test from hydro's step, which made it as it wrote the leaves.
  std::uint64_t state_epoch() const { return state_epoch_; }
  void touch_state() { ++state_epoch_; }

  /// Collective: add every local leaf's guard-zone values of variables [first, first + nvar)
  /// into the interior zones of the blocks they overlap (same-level neighbours; across
  /// periodic boundaries too), then zero the guard zones: the transpose of the same-level
  /// guard fill, for particle-in-cell deposits (current, charge) that land in guard zones.
  /// One refinement level only: throws a one-line tessera::Error if the tree has leaves on
  /// more than one level (or if the variable range is not within vars()). Guard zones beyond
  /// a non-periodic physical boundary are dropped (outflow: absorbing), or, for reflecting
  /// boundaries, folded back onto the mirror zone with the sign a reflecting guard fill
  /// would apply to that variable (vector_axis), so that fill_guards after
  /// accumulate_guards is consistent: on periodic and reflecting faces this is exactly the
  /// transpose of fill_guards (sum over guards of fill(u) * G equals sum over interiors of
  /// u * accumulate(G)). Bitwise identical results on any number of ranks and either
  /// layout: each destination zone receives its contributions in one fixed global order
  /// (plan order: source leaf id, then direction z, y, x from -1 to 1; reflecting folds
  /// first, within the block, axes z, y, x), never in arrival order.
  ///
  /// Staggered quantities: all boxes are cell-index boxes, and a staggered PIC field (J on
  /// edges, rho on nodes) stored in a cell-indexed array maps to a neighbour by the same
  /// integer shift, so periodic and same-level sums need nothing special. With the
  /// convention that a block owns indices [g, g+n) on each axis, a node- or face-centred
  /// value at the block's own upper face (index g+n) is a guard value: it is the
  /// neighbour's lower face (index g) and is added there, which is what the plain cell-box
  /// transpose does. The reflecting fold is the cell-centred mirror (guard g-1-m onto g+m),
  /// as the reflecting fill is; a node-centred quantity whose mirror is about a node on the
  /// wall (g-m onto g+m) needs its own fold, which this does not provide.
  void accumulate_guards(int first, int nvar);

  /// Collective: apply leaf flags (this rank's leaves' entries are read; others are
  /// gathered), balance 2:1, rebuild, redistribute and move data. Returns true if the
  /// tree changed or blocks moved (moved_only() tells which). Guard cells of local leaves
  /// must be filled before (prolongation of new children reads the parent's guards).
  /// `before_move`, if given, runs once the tree is known to change, before any block
  /// data moves (a unit may put its variables in conserved form for the transfers); not
  /// for a move on an unchanged tree. Derived variables (VarRole::derived) are not moved
  /// when the tree changes: their units recompute them.
  bool regrid(std::vector<Flag> flags, const std::function<void()>& before_move = {});

  /// Load balance by cost (mesh.balance = "cost"; issue 46, item 6). A leaf's weight is its
  /// interior zones (the sweep every grid unit makes) plus the work units report for it
  /// (add_work, in zone-update equivalents: the burn's burned zones, PIC's particles),
  /// averaged over the steps since the last partition. regrid then splits the weights into
  /// equal runs along the Morton curve, and moves blocks on an unchanged tree when that
  /// lowers the heaviest rank's weight by more than 2 %. With "blocks" (the default) the
  /// split is by leaf count. The partition never changes an answer (every sum is
  /// reproducible); a partition that would exceed mesh.maxblocks on a rank falls back to
  /// blocks. A restart starts from the blocks partition (the costs are not checkpointed).
  bool balance_by_cost() const { return balance_cost_; }
  /// Whether regrid may move blocks on an unchanged tree (the driver: false when a unit
  /// keeps per-block state outside unk, Declarations::block_state).
  void allow_moves(bool allow) { moves_allowed_ = allow; }
  bool moves_allowed() const { return moves_allowed_; }
  /// The last regrid kept the tree and only moved blocks to other ranks (cost balance):
  /// every unk variable travelled as it was, derived ones and guard zones included (the
  /// guards that were current stay current), and before_move did not run. A unit's
  /// after_regrid then has nothing to redo but what follows its blocks (particles).
  /// Cleared by the next regrid or tree change.
  bool moved_only() const { return moved_only_; }
  /// Work done on local leaf `node` this step beyond its zones, in zone-updates.
  void add_work(int node, double zone_updates) {
    work_[static_cast<std::size_t>(node)] += zone_updates;
    step_work_ += zone_updates;
  }
  /// The end of a step (the driver): this rank's work and leaves join the run's tally.
  void end_step();
  struct BalanceStats {
    double work_max = 0, work_mean = 0;      ///< per rank over the tallied steps
    double blocks_max = 0, blocks_mean = 0;  ///< leaf-steps per rank
    long moves = 0;                          ///< regrids that moved blocks on an unchanged tree
    long fallbacks = 0;                      ///< cost partitions refused for mesh.maxblocks
  };
  /// Collective: the tally (max and mean over ranks).
  BalanceStats balance_stats() const;

  /// Collective: fill every parent block with the average of its children, finest first.
  void restrict_parents();

  /// Collective (restart): replace the tree by the one in which exactly the nodes listed
  /// in `refined` ((0-based level, position) of every node with children) are refined.
  /// Built from the roots level by level, so node ids come out in canonical order;
  /// distributed as a fresh run on this many ranks would be. Block contents are zeroed;
  /// the caller fills every owned node. Throws if a listed node does not exist.
  void restore(const std::vector<std::pair<int, IVec>>& refined);

  FluxRegister& flux_register() { return *fluxreg_; }

 private:
  MPI_Comm comm_;
  int rank_ = 0, nranks_ = 1;
  std::vector<VarInfo> vars_;
  int nfill_ = 0;
  std::vector<VarSet> prefix_sets_;  ///< [n]: variables [0, n), for fill_guards(nvar)
  Tree tree_;
  BlockStorage storage_;
  std::vector<int> slot_;
  std::vector<int> local_leaves_;
  int lrefine_min_ = 1, lrefine_max_ = 1;
  bool round_robin_ = false;
  std::uint64_t tree_generation_ = 0;
  std::array<int, 3> rank_grid_{};  ///< mesh.distribution = "cartesian": the process grid
  /// Owners of t's nodes by mesh.distribution; by weight (per node of t, on every rank)
  /// when given, unless that exceeds mesh.maxblocks on a rank (then false: by count).
  bool distribute(Tree& t, const std::vector<double>* weight = nullptr) const;
  bool fits(const Tree& t) const;  ///< no rank holds more than mesh.maxblocks nodes of t
  bool balance_cost_ = false;
  bool moves_allowed_ = true, moved_only_ = false;
  std::vector<double> work_;              ///< per node id: local leaves' work since the partition
  long work_steps_ = 0;                   ///< steps since the partition
  double step_work_ = 0;                  ///< this step's add_work total (this rank)
  double run_work_ = 0, run_blocks_ = 0;  ///< this rank's tally over the steps
  long balance_moves_ = 0, balance_fallbacks_ = 0;
  /// Collective: every leaf's weight on every rank (zones + work per step).
  std::vector<double> leaf_weights() const;
  Geometry geometry_ = Geometry::cartesian;
  std::array<std::array<Boundary, 2>, 3> bc_{};
  // Guard fill: stage 0 (copies + restrictions), then one prolongation stage per level.
  std::vector<TransferPlan> guard_stages_;
  std::vector<int> peer_ranks_;  ///< the ranks guard_stages_ exchange with
  // Transpose of stage 0's same-level copies (accumulate ops); empty, with
  // accumulate_levels_ > 1, when leaves lie on more than one level.
  TransferPlan accumulate_plan_;
  int accumulate_levels_ = 1;
  std::unique_ptr<FluxRegister> fluxreg_;
  /// Runs of contiguous variables of one prolongation per filled set (fill_guards(VarSet)),
  /// kept until the tree changes; and those of every variable (regrid).
  std::map<std::vector<int>, std::vector<VarRun>> set_runs_, scratch_runs_;
  static const std::vector<VarRun>& runs_of(const VarSet& set, const std::vector<VarInfo>& vars,
                                            std::map<std::vector<int>, std::vector<VarRun>>& cache);
  /// The guard fill of `runs` of the variables `vars` held in `st` (unk or the scratch).
  void fill_runs(BlockStorage& st, const std::vector<VarInfo>& vars,
                 const std::vector<VarRun>& runs);
  std::vector<VarInfo> scratch_vars_;
  BlockStorage scratch_;
  /// Variables' own boundary conditions, by (var, axis, side) (unk variables only).
  std::map<std::array<int, 3>, BoundaryFill> var_bcs_;
  int current_vars_ =
      0;  ///< guard-filled variables [0, n) with current guards (mark_guards_current)
  std::uint64_t state_epoch_ = 0;

  void after_tree_change();  ///< local lists, plans
  /// Radial position of op's first source cell (r_lo, r_dx) for curvilinear weights.
  void set_radial(TransferOp& op, int src_node) const;
  void build_guard_plan();
  void build_accumulate_plan();
  /// fill_guards of a set; `keep_current`: a partial fill served by current guard zones
  /// leaves them current (fill_guards(nvar), whose partial callers do not write unk).
  void fill_set(const VarSet& set, bool keep_current);
  void apply_physical_bcs(int level, BlockStorage& st, const std::vector<VarInfo>& vars,
                          const std::vector<VarRun>& runs);
  void check_maxblocks(const Tree& t) const;
};

}  // namespace tessera::mesh

#pragma once
// The mesh: the replicated tree, this rank's block storage, and the plans that move data
// between blocks (guard fills and their transpose, regrid, parent restriction, flux
// correction). It knows
// variables only by name and by whether they are a vector component (for reflecting
// boundaries); it never names a physics module.
#include <mpi.h>

#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mesh/block_storage.hpp"
#include "mesh/geometry.hpp"
#include "mesh/transfer.hpp"
#include "mesh/tree.hpp"

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
  const std::vector<VarInfo>& vars() const { return vars_; }
  int var_index(const std::string& name) const;  ///< -1 if absent
  int ndim() const { return tree_.geometry().ndim; }
  int nxb() const { return shape().nx; }
  int lrefine_min() const { return lrefine_min_; }  ///< 1-based, as FLASH
  int lrefine_max() const { return lrefine_max_; }
  Boundary boundary(int axis, int side) const { return bc_[axis][side]; }
  /// mesh.geometry, fixed for the run.
  Geometry geometry() const { return geometry_; }

  /// Local slot of node id, or -1 if not held here.
  int slot(int node) const { return slot_[node]; }
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

  /// Collective: fill every local leaf's guard cells (same-level copy, restriction,
  /// prolongation, then physical boundaries, coarse levels first) of the guard-filled
  /// variables, or of the first `nvar` of them (variables [0, nvar): a unit that reads
  /// only hydro's dens and momenta fills those four).
  void fill_guards(int nvar = -1);
  /// Run f once, right after the next fill_guards that fills at least variables
  /// [0, nvar) (whoever calls it), and forget it. One at a time: a second call replaces the
  /// first. A unit that needs the guard zones of the current state but not now (the
  /// tracers' move) takes them from the next fill someone does anyway. f runs on every
  /// rank (fills are collective), so it may be collective too.
  void after_next_fill(int nvar, std::function<void()> f);
  /// Forget a pending after_next_fill.
  void cancel_after_fill() { after_fill_ = nullptr; }
  /// The caller (the driver, after refinement marking left the tree as it was) states
  /// that every guard zone holds what a fill would give now: the next complete
  /// fill_guards() returns at once (running after_next_fill's hook) and forgets this;
  /// partial fills return at once and keep it. Whoever changes a guard-filled variable
  /// before that fill calls invalidate_guards() (hydro's mass scalars to rho*X).
  void mark_guards_current() { guards_current_ = true; }
  void invalidate_guards() { guards_current_ = false; }

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
  /// tree changed. Guard cells of local leaves must be filled before (prolongation of new
  /// children reads the parent's guards).
  /// `before_move`, if given, runs once the tree is known to change, before any block
  /// data moves (a unit may put its variables in conserved form for the transfers).
  bool regrid(std::vector<Flag> flags, const std::function<void()>& before_move = {});

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
  Tree tree_;
  BlockStorage storage_;
  std::vector<int> slot_;
  std::vector<int> local_leaves_;
  int lrefine_min_ = 1, lrefine_max_ = 1;
  bool round_robin_ = false;
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
  std::function<void()> after_fill_;
  int after_fill_nvar_ = 0;
  bool guards_current_ = false;

  void after_tree_change();  ///< local lists, plans
  /// Radial position of op's first source cell (r_lo, r_dx) for curvilinear weights.
  void set_radial(TransferOp& op, int src_node) const;
  void build_guard_plan();
  void build_accumulate_plan();
  void apply_physical_bcs(int level, int nvar);
  void check_maxblocks(const Tree& t) const;
};

}  // namespace tessera::mesh

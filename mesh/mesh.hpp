#pragma once
// The mesh: the replicated tree, this rank's block storage, and the plans that move data
// between blocks (guard fills, regrid, parent restriction, flux correction). It knows
// variables only by name and by whether they are a vector component (for reflecting
// boundaries); it never names a physics module.
#include <mpi.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "mesh/block_storage.hpp"
#include "mesh/transfer.hpp"
#include "mesh/tree.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::mesh {

/// A variable held in `unk`, declared by the module that owns it.
struct VarInfo {
  std::string name;      ///< FLASH-style, at most 4 characters
  int vector_axis = -1;  ///< 0/1/2 if this is the x/y/z component of a vector, else -1
};

enum class Boundary { outflow, reflecting, periodic };

/// Cell geometry of one block: lower corner of the interior and cell widths.
struct BlockGeom {
  std::array<double, 3> lo{}, dx{1, 1, 1};
  /// Centre of interior cell (i, j, k), interior indices from 0.
  double x(int i) const { return lo[0] + (i + 0.5) * dx[0]; }
  double y(int j) const { return lo[1] + (j + 0.5) * dx[1]; }
  double z(int k) const { return lo[2] + (k + 0.5) * dx[2]; }
};

class FluxRegister;

class Mesh {
 public:
  /// Declare mesh.* parameters.
  static void declare_params(base::Params& p);

  /// Collective. Root blocks only, distributed; call refine_initial to reach lrefine_min.
  Mesh(const base::Params& p, MPI_Comm comm, std::vector<VarInfo> vars, int nguard);
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
  /// Smallest cell width on each axis over the whole tree.
  std::array<double, 3> finest_dx() const;

  /// Collective: fill every local leaf's guard cells (same-level copy, restriction,
  /// prolongation, then physical boundaries, coarse levels first).
  void fill_guards();

  /// Collective: apply leaf flags (this rank's leaves' entries are read; others are
  /// gathered), balance 2:1, rebuild, redistribute and move data. Returns true if the
  /// tree changed. Guard cells of local leaves must be filled before (prolongation of new
  /// children reads the parent's guards).
  bool regrid(std::vector<Flag> flags);

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
  Tree tree_;
  BlockStorage storage_;
  std::vector<int> slot_;
  std::vector<int> local_leaves_;
  int lrefine_min_ = 1, lrefine_max_ = 1;
  bool round_robin_ = false;
  std::array<std::array<Boundary, 2>, 3> bc_{};
  // Guard fill: stage 0 (copies + restrictions), then one prolongation stage per level.
  std::vector<TransferPlan> guard_stages_;
  std::unique_ptr<FluxRegister> fluxreg_;

  void after_tree_change();  ///< local lists, plans
  void build_guard_plan();
  void apply_physical_bcs(int level);
  void check_maxblocks(const Tree& t) const;
};

}  // namespace tessera::mesh

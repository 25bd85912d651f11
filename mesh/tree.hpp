#pragma once
// The forest of octrees (quadtrees in 2-D, binary trees in 1-D) over nblockx x nblocky x
// nblockz root blocks. The whole tree is replicated on every rank, so every query is
// local. Nodes are kept in canonical order: roots in lexicographic (k, j, i) order, each
// tree depth-first with children in Morton order (x fastest) — the order of the FLASH
// file rows, independent of the number of ranks. The Morton-curve distribution walks the
// roots in Morton order instead (curve_leaves): a rank's roots form a compact box.
#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace tessera::mesh {

using IVec = std::array<int, 3>;

/// Geometry and topology shared by every tree of a run.
struct TreeGeometry {
  int ndim = 3;
  IVec nroot{1, 1, 1};  ///< root blocks per axis (1 for inactive axes)
  std::array<bool, 3> periodic{false, false, false};
  std::array<double, 3> lo{0, 0, 0}, hi{1, 1, 1};
  int nchild() const { return 1 << ndim; }
  /// Number of block positions along `axis` at `level` (0-based levels).
  int nblocks_at(int axis, int level) const { return axis < ndim ? nroot[axis] << level : 1; }
};

struct Node {
  int level = 0;      ///< 0-based (FLASH refine level = level + 1)
  IVec pos{0, 0, 0};  ///< block coordinates at this level
  int parent = -1;
  std::array<int, 8> child{-1, -1, -1, -1, -1, -1, -1, -1};
  int owner = -1;  ///< MPI rank that holds this node's data
  bool leaf() const { return child[0] < 0; }
};

/// What a regrid asks of one leaf.
enum class Flag : std::int8_t { derefine = -1, keep = 0, refine = 1 };

class Tree {
 public:
  Tree() = default;
  /// Root blocks only.
  explicit Tree(const TreeGeometry& g);

  const TreeGeometry& geometry() const { return geom_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  /// This rank's bytes for the (replicated, global) tree: the nodes as allocated and the
  /// index from (level, position) to node (its buckets, and per entry the key, the id and
  /// the list link of a node of std::unordered_map, rounded to 32 bytes). Grows with the
  /// global block count on every rank (issue 46: summary.json memory.tree_bytes).
  std::size_t bytes() const {
    return nodes_.capacity() * sizeof(Node) + index_.bucket_count() * sizeof(void*) +
           index_.size() * 32;
  }
  int max_level() const;
  int num_leaves() const;
  /// Leaves in canonical order.
  std::vector<int> leaves() const;
  /// Leaves along the space-filling curve the Morton distribution splits: the roots in
  /// Morton order of their positions (bits interleaved, x fastest; non-power-of-two grids
  /// skip the absent keys), each root's leaves depth-first with children in Morton order.
  /// One root, or roots along one axis, gives the canonical order. A rank's run of
  /// roots is then a compact box (2x2x2 for 8), not a row of the lexicographic order.
  std::vector<int> curve_leaves() const;

  /// Node at (level, pos) after periodic wrapping, or -1 if absent or outside the domain
  /// on a non-periodic axis. `shift` receives the periodic shift applied, in blocks.
  int find(int level, IVec pos, IVec* shift = nullptr) const;
  /// The node one level coarser that covers position pos at `level` (wrapped on periodic
  /// axes; pos must be inside the domain), or -1.
  int find_coarser(int level, IVec pos) const;
  /// True if pos (at level) lies outside the domain on a non-periodic axis.
  bool outside(int level, const IVec& pos) const;

  /// Block bounds in physical coordinates.
  std::array<double, 3> block_lo(int id) const;
  std::array<double, 3> block_size(int id) const;

  /// The tree after applying flags (indexed by node id; only leaf flags are read; a
  /// derefine is honoured only if every sibling asks for it). Flags must already be
  /// 2:1-consistent (see balance_flags). Returns the new tree and, for each new node,
  /// the old node it came from (same node, or the parent it was refined from: `origin`
  /// gives the old id and `kind`).
  enum class Origin : std::int8_t { same, refined_from_parent, derefined_from_children };
  struct Rebuilt;
  Rebuilt rebuild(const std::vector<Flag>& flags) const;

  /// Make leaf flags 2:1-consistent across faces, edges and corners: propagate refines
  /// to coarser neighbours; cancel derefines that would break balance or that not all
  /// siblings share; honour lrefine bounds (levels 0..max_level).
  void balance_flags(std::vector<Flag>& flags, int min_level, int max_level) const;

  /// Assign owners to every node: leaves along the Morton curve (curve_leaves) in
  /// contiguous equal runs ("morton") or in canonical order cyclically ("round_robin"); a
  /// parent goes to the owner of its first leaf descendant.
  void distribute(int nranks, bool round_robin);
  /// Leaves along the Morton curve (curve_leaves) in contiguous runs of equal weight (weight
  /// per node id, leaves read; every rank must pass the same): leaf i goes to the rank whose
  /// share [r W / nranks, (r+1) W / nranks) holds the midpoint of its own weight. Parents
  /// as distribute.
  void distribute_weighted(int nranks, const std::vector<double>& weight);
  /// Owners on a Cartesian process grid (V2D's NX1 x NX2): the leaf whose centre lies in
  /// the (r0, r1, r2)-th of grid[0] x grid[1] x grid[2] equal slabs of the domain goes to
  /// rank r0 + grid[0] (r1 + grid[1] r2); parents as above. grid's product must be nranks.
  void distribute_cartesian(int nranks, const std::array<int, 3>& grid);

 private:
  TreeGeometry geom_;
  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, int> index_;
  static std::uint64_t key(int level, const IVec& p) {
    return (std::uint64_t(level) << 58) | (std::uint64_t(p[2]) << 38) |
           (std::uint64_t(p[1]) << 19) | std::uint64_t(p[0]);
  }
  void reindex();
  friend struct TreeBuilder;
};

struct Tree::Rebuilt {
  Tree tree;
  std::vector<int> origin;         ///< per new node: old node id
  std::vector<Tree::Origin> kind;  ///< per new node
};

}  // namespace tessera::mesh

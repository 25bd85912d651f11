#include "mesh/tree.hpp"

#include <algorithm>
#include <stdexcept>

#include "base/error.hpp"

namespace tessera::mesh {

namespace {
// Position of child c (0-based, x fastest) of a block at p.
IVec child_pos(const IVec& p, int c, int ndim) {
  IVec q = p;
  for (int a = 0; a < ndim; ++a) q[a] = 2 * p[a] + ((c >> a) & 1);
  return q;
}
}  // namespace

Tree::Tree(const TreeGeometry& g) : geom_(g) {
  for (int a = geom_.ndim; a < 3; ++a) geom_.nroot[a] = 1;
  for (int k = 0; k < geom_.nroot[2]; ++k)
    for (int j = 0; j < geom_.nroot[1]; ++j)
      for (int i = 0; i < geom_.nroot[0]; ++i) {
        Node n;
        n.pos = {i, j, k};
        nodes_.push_back(n);
      }
  reindex();
}

void Tree::reindex() {
  index_.clear();
  index_.reserve(nodes_.size() * 2);
  for (int id = 0; id < size(); ++id) index_[key(nodes_[id].level, nodes_[id].pos)] = id;
}

int Tree::max_level() const {
  int m = 0;
  for (const auto& n : nodes_) m = std::max(m, n.level);
  return m;
}

int Tree::num_leaves() const {
  return static_cast<int>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.leaf(); }));
}

std::vector<int> Tree::leaves() const {
  std::vector<int> out;
  for (int id = 0; id < size(); ++id)
    if (nodes_[id].leaf()) out.push_back(id);
  return out;
}

std::vector<int> Tree::curve_leaves() const {
  // Root keys: the bits of (i, j, k) interleaved, x fastest (positions < 2^19 per axis).
  const int nd = geom_.ndim;
  std::vector<std::pair<std::uint64_t, int>> roots;
  for (int id = 0; id < size(); ++id) {
    const Node& n = nodes_[id];
    if (n.parent >= 0) continue;
    std::uint64_t k = 0;
    for (int b = 0; b < 21; ++b)
      for (int a = 0; a < nd; ++a) k |= std::uint64_t((n.pos[a] >> b) & 1) << (b * nd + a);
    roots.emplace_back(k, id);
  }
  std::sort(roots.begin(), roots.end());
  std::vector<int> out;
  out.reserve(nodes_.size());
  const int nc = geom_.nchild();
  auto walk = [&](auto&& self, int id) -> void {
    const Node& n = nodes_[id];
    if (n.leaf()) {
      out.push_back(id);
      return;
    }
    for (int c = 0; c < nc; ++c) self(self, n.child[c]);
  };
  for (const auto& r : roots) walk(walk, r.second);
  return out;
}

bool Tree::outside(int level, const IVec& p) const {
  for (int a = 0; a < geom_.ndim; ++a) {
    const int n = geom_.nblocks_at(a, level);
    if ((p[a] < 0 || p[a] >= n) && !geom_.periodic[a]) return true;
  }
  return false;
}

int Tree::find(int level, IVec p, IVec* shift) const {
  IVec s{0, 0, 0};
  for (int a = 0; a < 3; ++a) {
    const int n = geom_.nblocks_at(a, level);
    if (p[a] < 0 || p[a] >= n) {
      if (a >= geom_.ndim || !geom_.periodic[a]) return -1;
      const int w = ((p[a] % n) + n) % n;
      s[a] = w - p[a];
      p[a] = w;
    }
  }
  if (shift) *shift = s;
  auto it = index_.find(key(level, p));
  return it == index_.end() ? -1 : it->second;
}

int Tree::find_coarser(int level, IVec p) const {
  for (int a = 0; a < geom_.ndim; ++a) {
    const int nb = geom_.nblocks_at(a, level);
    p[a] = (((p[a] % nb) + nb) % nb) >> 1;
  }
  return find(level - 1, p);
}

std::array<double, 3> Tree::block_size(int id) const {
  std::array<double, 3> w{};
  const Node& n = nodes_[id];
  for (int a = 0; a < 3; ++a) w[a] = (geom_.hi[a] - geom_.lo[a]) / geom_.nblocks_at(a, n.level);
  return w;
}

std::array<double, 3> Tree::block_lo(int id) const {
  std::array<double, 3> x{};
  const auto w = block_size(id);
  for (int a = 0; a < 3; ++a) x[a] = geom_.lo[a] + w[a] * nodes_[id].pos[a];
  return x;
}

void Tree::balance_flags(std::vector<Flag>& flags, int min_level, int max_level) const {
  const int nd = geom_.ndim;
  // Level bounds first.
  for (int id = 0; id < size(); ++id) {
    const Node& n = nodes_[id];
    if (!n.leaf()) {
      flags[id] = Flag::keep;
      continue;
    }
    if (n.level < min_level) flags[id] = Flag::refine;
    if (flags[id] == Flag::refine && n.level >= max_level) flags[id] = Flag::keep;
    if (flags[id] == Flag::derefine && n.level <= min_level) flags[id] = Flag::keep;
  }
  auto for_each_dir = [nd](auto&& f) {
    for (int dz = (nd > 2 ? -1 : 0); dz <= (nd > 2 ? 1 : 0); ++dz)
      for (int dy = (nd > 1 ? -1 : 0); dy <= (nd > 1 ? 1 : 0); ++dy)
        for (int dx = -1; dx <= 1; ++dx)
          if (dx || dy || dz) f(IVec{dx, dy, dz});
  };
  // Refines propagate to coarser neighbours until nothing changes: a leaf at level L
  // that refines needs every neighbour position at level L to exist (be a node).
  bool changed = true;
  while (changed) {
    changed = false;
    for (int id = 0; id < size(); ++id) {
      const Node& n = nodes_[id];
      if (!n.leaf() || flags[id] != Flag::refine) continue;
      for_each_dir([&](const IVec& d) {
        IVec p{n.pos[0] + d[0], n.pos[1] + d[1], n.pos[2] + d[2]};
        if (outside(n.level, p)) return;
        if (find(n.level, p) >= 0) return;
        // Covered by a coarser leaf (2:1 holds in the old tree, so exactly one level up).
        const int c = find_coarser(n.level, p);
        if (c >= 0 && nodes_[c].leaf() && flags[c] != Flag::refine) {
          flags[c] = Flag::refine;
          changed = true;
        }
      });
    }
  }
  // Derefines: all siblings must ask, none may refine, and the parent-to-be must not
  // touch a node two levels finer (a refined neighbour of a child, or a leaf neighbour
  // of a child that is about to refine).
  for (int pid = 0; pid < size(); ++pid) {
    const Node& p = nodes_[pid];
    if (p.leaf()) continue;
    bool ok = true;
    for (int c = 0; c < geom_.nchild() && ok; ++c) {
      const int cid = p.child[c];
      if (!nodes_[cid].leaf() || flags[cid] != Flag::derefine) ok = false;
    }
    if (ok) {
      for (int c = 0; c < geom_.nchild() && ok; ++c) {
        const Node& ch = nodes_[p.child[c]];
        for_each_dir([&](const IVec& d) {
          if (!ok) return;
          IVec q{ch.pos[0] + d[0], ch.pos[1] + d[1], ch.pos[2] + d[2]};
          const int nb = find(ch.level, q);
          if (nb < 0 || nodes_[nb].parent == pid) return;
          if (!nodes_[nb].leaf() || flags[nb] == Flag::refine) ok = false;
        });
      }
    }
    if (!ok)
      for (int c = 0; c < geom_.nchild(); ++c)
        if (flags[p.child[c]] == Flag::derefine) flags[p.child[c]] = Flag::keep;
  }
}

Tree::Rebuilt Tree::rebuild(const std::vector<Flag>& flags) const {
  Rebuilt out;
  out.tree.geom_ = geom_;
  auto& nn = out.tree.nodes_;
  const int nc = geom_.nchild();
  // A parent derefines when all its children are leaves flagged derefine (balance_flags
  // has already cancelled partial requests).
  auto derefines = [&](int id) {
    const Node& n = nodes_[id];
    if (n.leaf()) return false;
    for (int c = 0; c < nc; ++c)
      if (!nodes_[n.child[c]].leaf() || flags[n.child[c]] != Flag::derefine) return false;
    return true;
  };
  // Depth-first emission keeps the canonical order.
  auto emit = [&](auto&& self, int id, int new_parent) -> void {
    const Node& n = nodes_[id];
    const int me = static_cast<int>(nn.size());
    Node m;
    m.level = n.level;
    m.pos = n.pos;
    m.parent = new_parent;
    nn.push_back(m);
    if (n.leaf()) {
      out.origin.push_back(id);
      out.kind.push_back(Origin::same);
      if (flags[id] == Flag::refine) {
        for (int c = 0; c < nc; ++c) {
          Node ch;
          ch.level = n.level + 1;
          ch.pos = child_pos(n.pos, c, geom_.ndim);
          ch.parent = me;
          nn[me].child[c] = static_cast<int>(nn.size());
          nn.push_back(ch);
          out.origin.push_back(id);
          out.kind.push_back(Origin::refined_from_parent);
        }
      }
      return;
    }
    if (derefines(id)) {
      out.origin.push_back(id);
      out.kind.push_back(Origin::derefined_from_children);
      return;
    }
    out.origin.push_back(id);
    out.kind.push_back(Origin::same);
    for (int c = 0; c < nc; ++c) {
      const int cid = static_cast<int>(nn.size());
      nn[me].child[c] = cid;
      self(self, n.child[c], me);
    }
  };
  for (int id = 0; id < size(); ++id)
    if (nodes_[id].parent < 0) emit(emit, id, -1);
  out.tree.reindex();
  return out;
}

void Tree::distribute(int nranks, bool round_robin) {
  const auto lv = round_robin ? leaves() : curve_leaves();
  const long nl = static_cast<long>(lv.size());
  for (long i = 0; i < nl; ++i) {
    nodes_[lv[i]].owner =
        round_robin ? static_cast<int>(i % nranks) : static_cast<int>((i * nranks) / nl);
  }
  // Parents: owner of the first leaf descendant (the next leaf in canonical order).
  for (int id = size() - 1; id >= 0; --id) {
    Node& n = nodes_[id];
    if (!n.leaf()) n.owner = nodes_[n.child[0]].owner;
  }
}

void Tree::distribute_weighted(int nranks, const std::vector<double>& weight) {
  const auto lv = curve_leaves();
  double total = 0.0;
  for (int id : lv) total += weight[std::size_t(id)];
  double before = 0.0;
  int last = 0;
  for (int id : lv) {
    const double w = weight[std::size_t(id)];
    int r = total > 0.0 ? static_cast<int>((before + 0.5 * w) / total * nranks) : 0;
    r = std::clamp(r, last, nranks - 1);  // monotone along the curve
    nodes_[id].owner = last = r;
    before += w;
  }
  for (int id = size() - 1; id >= 0; --id) {
    Node& n = nodes_[id];
    if (!n.leaf()) n.owner = nodes_[n.child[0]].owner;
  }
}

void Tree::distribute_cartesian(int nranks, const std::array<int, 3>& grid) {
  if (grid[0] * grid[1] * grid[2] != nranks)
    throw Error("mesh.distribution = \"cartesian\": mesh.ranks_x * ranks_y * ranks_z = " +
                std::to_string(grid[0] * grid[1] * grid[2]) + " but the run has " +
                std::to_string(nranks) + " ranks");
  for (int a = geom_.ndim; a < 3; ++a)
    if (grid[a] > 1)
      throw Error("mesh.distribution = \"cartesian\": mesh.ranks_" + std::string(1, "xyz"[a]) +
                  " = " + std::to_string(grid[a]) + " on an axis the " +
                  std::to_string(geom_.ndim) + "-D mesh does not have");
  for (int id : leaves()) {
    Node& n = nodes_[id];
    int r[3] = {0, 0, 0};
    for (int a = 0; a < 3; ++a) {
      const long nb = geom_.nblocks_at(a, n.level);
      // The centre's slab: floor((pos + 1/2) / nb * grid) in integers.
      r[a] = static_cast<int>(((2L * n.pos[a] + 1) * grid[a]) / (2L * nb));
    }
    n.owner = r[0] + grid[0] * (r[1] + grid[1] * r[2]);
  }
  for (int id = size() - 1; id >= 0; --id) {
    Node& n = nodes_[id];
    if (!n.leaf()) n.owner = nodes_[n.child[0]].owner;
  }
}

}  // namespace tessera::mesh

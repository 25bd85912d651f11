// The mesh's regrid (flags to a new 2:1-balanced tree, blocks moved, prolonged and
// restricted by the transfer plans), the distribution of a tree over the ranks, the
// restriction of parents, and the restore of a checkpoint's tree (see mesh.hpp).
#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "mesh/flux_register.hpp"
#include "mesh/mesh.hpp"
#include "mesh/plan_ops.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

using detail::child_to_parent;
using detail::interior_box;
using detail::push_op;
using detail::whole_box;

bool Mesh::regrid(std::vector<Flag> flags, const std::function<void()>& before_move) {
  TESSERA_REGION("regrid");
  // Everyone learns every leaf's flag (each rank filled its own leaves).
  std::vector<std::int8_t> f(tree_.size(), 0), all(tree_.size(), 0);
  for (int id : local_leaves_) f[id] = static_cast<std::int8_t>(flags[id]);
  // Flags are -1/0/1; shift to 0..2 so MAX over ranks (others hold 0) picks the owner's.
  for (auto& x : f) x = static_cast<std::int8_t>(x + 1);
  for (int id = 0; id < tree_.size(); ++id)
    if (tree_.node(id).owner != rank_) f[id] = 0;
  MPI_Allreduce(f.data(), all.data(), tree_.size(), MPI_INT8_T, MPI_MAX, comm_);
  std::vector<Flag> g(tree_.size(), Flag::keep);
  for (int id = 0; id < tree_.size(); ++id) g[id] = static_cast<Flag>(all[id] - 1);
  tree_.balance_flags(g, lrefine_min_ - 1, lrefine_max_ - 1);
  bool any = false;
  for (int id = 0; id < tree_.size(); ++id)
    if (tree_.node(id).leaf() && g[id] != Flag::keep) any = true;
  // Cost balance: every leaf's weight on every rank; with an unchanged tree, blocks move
  // only when the cost partition lowers the heaviest rank's weight by more than 2 %.
  moved_only_ = false;
  std::vector<double> w_old;
  if (balance_cost_ && nranks_ > 1 && (any || moves_allowed_)) w_old = leaf_weights();
  Tree::Rebuilt rb;
  std::vector<double> w_new;
  if (any) {
    rb = tree_.rebuild(g);
    if (!w_old.empty()) {
      // New leaves: a child keeps its parent's weight (as many zones, the same work per
      // zone), a parent the mean of its children's.
      w_new.assign(std::size_t(rb.tree.size()), 0.0);
      for (int id = 0; id < rb.tree.size(); ++id) {
        const int o = rb.origin[std::size_t(id)];
        if (rb.kind[std::size_t(id)] != Tree::Origin::derefined_from_children) {
          w_new[std::size_t(id)] = w_old[std::size_t(o)];
          continue;
        }
        const Node& pn = tree_.node(o);
        const int nc = tree_.geometry().nchild();
        for (int c = 0; c < nc; ++c) w_new[std::size_t(id)] += w_old[std::size_t(pn.child[c])] / nc;
      }
    }
  } else {
    if (w_old.empty()) return false;
    Tree t = tree_;
    if (!distribute(t, &w_old)) return false;
    // The heaviest rank's weight before and after, and every rank's slots at the move's
    // peak (the blocks it keeps and those it sends, until the transfer ends, plus those
    // it receives).
    std::vector<double> now(std::size_t(nranks_), 0.0), then(std::size_t(nranks_), 0.0);
    std::vector<long> peak(std::size_t(nranks_), 0);
    for (int id = 0; id < tree_.size(); ++id) {
      const int a = tree_.node(id).owner, b = t.node(id).owner;
      ++peak[std::size_t(a)];
      if (b != a) ++peak[std::size_t(b)];
      if (!tree_.node(id).leaf()) continue;
      now[std::size_t(a)] += w_old[std::size_t(id)];
      then[std::size_t(b)] += w_old[std::size_t(id)];
    }
    if (!(*std::max_element(then.begin(), then.end()) <
          0.98 * *std::max_element(now.begin(), now.end())))
      return false;
    if (*std::max_element(peak.begin(), peak.end()) > storage_.maxblocks()) {
      ++balance_fallbacks_;
      return false;
    }
    rb.tree = std::move(t);
    rb.origin.resize(std::size_t(tree_.size()));
    std::iota(rb.origin.begin(), rb.origin.end(), 0);
    rb.kind.assign(std::size_t(tree_.size()), Tree::Origin::same);
    moved_only_ = true;
    ++balance_moves_;
  }

  // before_move and the move write the leaves; a move on an unchanged tree carries them as
  // they are, but a unit's state kept over its rank's leaves (hydro's time-step rate) is
  // no longer this rank's: every change of the leaves a rank holds is a new epoch.
  ++state_epoch_;
  if (before_move && !moved_only_) before_move();
  Tree& nt = rb.tree;
  if (!moved_only_ && !distribute(nt, w_new.empty() ? nullptr : &w_new)) ++balance_fallbacks_;
  check_maxblocks(nt);
  const int nx = shape().nx, ng = shape().ng, nd = ndim();
  std::vector<int> nslot(nt.size(), -1);
  std::vector<char> kept(storage_.maxblocks(), 0);
  // Slots that stay: same node (or old parent becoming a leaf) on the same rank.
  for (int id = 0; id < nt.size(); ++id) {
    if (nt.node(id).owner != rank_) continue;
    const int o = rb.origin[id];
    if (rb.kind[id] != Tree::Origin::refined_from_parent && tree_.node(o).owner == rank_ &&
        slot_[o] >= 0) {
      nslot[id] = slot_[o];
      kept[slot_[o]] = 1;
    }
  }
  for (int id = 0; id < nt.size(); ++id)
    if (nt.node(id).owner == rank_ && nslot[id] < 0) nslot[id] = storage_.acquire();

  TransferPlan plan;
  const Box interior = interior_box(shape());
  auto add = [&](TransferOp op, int src_old, int dst_new) {
    set_radial(op, src_old);
    push_op(plan, op, rank_, tree_.node(src_old).owner, slot_[src_old], nt.node(dst_new).owner,
            nslot[dst_new]);
  };
  for (int id = 0; id < nt.size(); ++id) {
    const Node& n = nt.node(id);
    const int o = rb.origin[id];
    switch (rb.kind[id]) {
      case Tree::Origin::same:
        if (n.leaf() && tree_.node(o).owner != n.owner) {
          // A move on an unchanged tree carries the guard zones too: their neighbours
          // are the same, so guards that were current stay current.
          TransferOp op;
          op.src = op.dst = moved_only_ ? whole_box(shape()) : interior;
          add(op, o, id);
        }
        break;
      case Tree::Origin::refined_from_parent: {
        const Node& pn = tree_.node(o);
        TransferOp op;
        op.kind = OpKind::prolong;
        op.dst = interior;
        for (int a = 0; a < 3; ++a) {
          if (a >= nd) {
            op.src.lo[a] = 0, op.src.hi[a] = 1;
            continue;
          }
          const int X = n.pos[a] * nx;  // fine global index of the first interior cell
          op.parity0[a] = 0;
          op.src.lo[a] = X / 2 - pn.pos[a] * nx + ng - 1;
          op.src.hi[a] = op.src.lo[a] + nx / 2 + 2;
        }
        add(op, o, id);
        break;
      }
      case Tree::Origin::derefined_from_children: {
        const Node& pn = tree_.node(o);
        for (int c = 0; c < tree_.geometry().nchild(); ++c)
          add(child_to_parent(shape(), c), pn.child[c], id);
        break;
      }
    }
  }
  {
    // Every variable but the derived ones (their units recompute them after the regrid),
    // each with its own prolongation; on an unchanged tree every variable, as it is.
    std::vector<int> moved;
    for (int v = 0; v < static_cast<int>(vars_.size()); ++v)
      if (moved_only_ || vars_[static_cast<std::size_t>(v)].role != VarRole::derived)
        moved.push_back(v);
    const std::vector<VarRun> runs = runs_of(VarSet(std::move(moved)), vars_, set_runs_);
    execute(plan, storage_, comm_, 200, runs, geometry_);
  }
  for (int id = 0; id < tree_.size(); ++id)
    if (slot_[id] >= 0 && !kept[slot_[id]]) storage_.release(slot_[id]);
  tree_ = std::move(nt);
  slot_ = std::move(nslot);
  const int current = current_vars_;
  after_tree_change();
  if (moved_only_) current_vars_ = current;
  return true;
}

bool Mesh::distribute(Tree& t, const std::vector<double>* weight) const {
  if (rank_grid_[0] > 0) {
    t.distribute_cartesian(nranks_, rank_grid_);
    return true;
  }
  if (weight != nullptr) {
    Tree c = t;
    c.distribute_weighted(nranks_, *weight);
    if (fits(c)) {
      t = std::move(c);
      return true;
    }
  }
  t.distribute(nranks_, round_robin_);
  return weight == nullptr;
}

void Mesh::restrict_parents() {
  TESSERA_REGION("restrict_parents");
  for (int L = tree_.max_level() - 1; L >= 0; --L) {
    TransferPlan plan;
    for (int id = 0; id < tree_.size(); ++id) {
      const Node& p = tree_.node(id);
      if (p.leaf() || p.level != L) continue;
      for (int c = 0; c < tree_.geometry().nchild(); ++c) {
        const int cid = p.child[c];
        TransferOp op = child_to_parent(shape(), c);
        set_radial(op, cid);
        push_op(plan, op, rank_, tree_.node(cid).owner, slot_[cid], p.owner, slot_[id]);
      }
    }
    execute(plan, storage_, comm_, 300 + L, -1, geometry_);
  }
}

void Mesh::restore(const std::vector<std::pair<int, IVec>>& refined) {
  ++state_epoch_;
  moved_only_ = false;
  Tree t(tree_.geometry());
  std::vector<std::vector<IVec>> by_level;
  for (const auto& [level, pos] : refined) {
    if (level < 0) throw Error("restart: negative refinement level in the tree");
    if (level >= static_cast<int>(by_level.size())) by_level.resize(level + 1);
    by_level[level].push_back(pos);
  }
  for (int L = 0; L < static_cast<int>(by_level.size()); ++L) {
    std::vector<Flag> flags(t.size(), Flag::keep);
    for (const auto& pos : by_level[L]) {
      const int id = t.find(L, pos);
      if (id < 0 || t.node(id).level != L || !t.node(id).leaf())
        throw Error("restart: the checkpoint's tree refines a block at level " +
                    std::to_string(L + 1) + " that does not exist");
      flags[id] = Flag::refine;
    }
    t = t.rebuild(flags).tree;
  }
  distribute(t);
  check_maxblocks(t);
  for (int id = 0; id < tree_.size(); ++id)
    if (slot_[id] >= 0) storage_.release(slot_[id]);
  tree_ = std::move(t);
  slot_.assign(tree_.size(), -1);
  for (int id = 0; id < tree_.size(); ++id)
    if (tree_.node(id).owner == rank_) slot_[id] = storage_.acquire();
  after_tree_change();
}

}  // namespace tessera::mesh

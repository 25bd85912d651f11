// The mesh's guard fills: the guard-fill plan of the tree (same-level copies, restriction,
// prolongation) and its transpose (accumulate_guards: deposits in guard zones folded into
// their owners), the fill of a variable set in runs of contiguous variables, the guard
// zones a fill left current (mark_guards_current), and the scratch variables' fills.
#include <algorithm>
#include <numeric>
#include <string>

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

namespace {
// Guard-region box on one axis for direction component d.
void guard_range(int d, int nx, int ng, int& lo, int& hi) {
  if (d < 0) {
    lo = 0;
    hi = ng;
  } else if (d == 0) {
    lo = ng;
    hi = ng + nx;
  } else {
    lo = ng + nx;
    hi = 2 * ng + nx;
  }
}

inline int floordiv2(int x) {
  return x >= 0 ? x / 2 : -((-x + 1) / 2);
}
// f(id, node, d, p) for every leaf id (ascending) and every direction d to a neighbour
// position p inside the domain (z, y, x each from -1 to 1, d = 0 left out): the order in
// which the guard-fill plan and its transpose list their operations, the same on every rank.
template <class F>
void for_each_leaf_direction(const Tree& tree, int nd, F&& f) {
  for (int id = 0; id < tree.size(); ++id) {
    const Node& n = tree.node(id);
    if (!n.leaf()) continue;
    for (int dz = (nd > 2 ? -1 : 0); dz <= (nd > 2 ? 1 : 0); ++dz)
      for (int dy = (nd > 1 ? -1 : 0); dy <= (nd > 1 ? 1 : 0); ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (!dx && !dy && !dz) continue;
          const IVec d{dx, dy, dz};
          const IVec p{n.pos[0] + dx, n.pos[1] + dy, n.pos[2] + dz};
          if (tree.outside(n.level, p)) continue;  // a physical boundary: folded or dropped
          f(id, n, d, p);
        }
  }
}

}  // namespace

void Mesh::build_guard_plan() {
  const int nd = ndim(), nx = shape().nx, ng = shape().ng;
  const int nlev = tree_.max_level() + 1;
  guard_stages_.assign(nlev, TransferPlan{});
  for_each_leaf_direction(tree_, nd, [&](int id, const Node& n, const IVec& d, const IVec& p) {
    Box gb;
    for (int a = 0; a < 3; ++a) {
      if (a < nd)
        guard_range(d[a], nx, ng, gb.lo[a], gb.hi[a]);
      else
        gb.lo[a] = 0, gb.hi[a] = 1;
    }
    IVec shift{0, 0, 0};
    const int nb = tree_.find(n.level, p, &shift);
    auto add = [&](int stage, TransferOp op, int src_node) {
      set_radial(op, src_node);
      push_op(guard_stages_[stage], op, rank_, tree_.node(src_node).owner, slot_[src_node], n.owner,
              slot_[id]);
    };
    if (nb >= 0 && tree_.node(nb).leaf()) {
      TransferOp op;
      op.kind = OpKind::copy;
      op.dst = gb;
      op.src = gb;
      for (int a = 0; a < nd; ++a) op.src.lo[a] -= d[a] * nx, op.src.hi[a] -= d[a] * nx;
      add(0, op, nb);
    } else if (nb >= 0) {
      const Node& nn = tree_.node(nb);
      for (int c = 0; c < tree_.geometry().nchild(); ++c) {
        TransferOp op;
        op.kind = OpKind::restrict_avg;
        bool empty = false;
        for (int a = 0; a < 3; ++a) {
          if (a >= nd) {
            op.dst.lo[a] = 0, op.dst.hi[a] = 1, op.src.lo[a] = 0, op.src.hi[a] = 1;
            continue;
          }
          const int ca = (c >> a) & 1;
          const int clo = ng + ca * nx / 2 + d[a] * nx, chi = clo + nx / 2;
          op.dst.lo[a] = std::max(gb.lo[a], clo);
          op.dst.hi[a] = std::min(gb.hi[a], chi);
          if (op.dst.lo[a] >= op.dst.hi[a]) empty = true;
          op.src.lo[a] = 2 * (op.dst.lo[a] - clo) + ng;
          op.src.hi[a] = op.src.lo[a] + 2 * (op.dst.hi[a] - op.dst.lo[a]);
        }
        if (!empty) add(0, op, nn.child[c]);
      }
    } else {
      const int c = tree_.find_coarser(n.level, p);
      if (c < 0) throw Error("internal: tree is not 2:1 balanced");
      const Node& cn = tree_.node(c);
      TransferOp op;
      op.kind = OpKind::prolong;
      op.dst = gb;
      for (int a = 0; a < 3; ++a) {
        if (a >= nd) {
          op.src.lo[a] = 0, op.src.hi[a] = 1;
          continue;
        }
        const int Xlo = n.pos[a] * nx + gb.lo[a] - ng + shift[a] * nx;
        const int Xhi = Xlo + gb.extent(a) - 1;
        op.parity0[a] = Xlo & 1;
        op.src.lo[a] = floordiv2(Xlo) - cn.pos[a] * nx + ng - 1;
        op.src.hi[a] = floordiv2(Xhi) - cn.pos[a] * nx + ng + 2;
      }
      add(n.level, op, c);
    }
  });
}

void Mesh::build_accumulate_plan() {
  accumulate_plan_ = TransferPlan{};
  int lo = tree_.max_level(), hi = 0;
  for (int id : tree_.leaves()) {
    lo = std::min(lo, tree_.node(id).level);
    hi = std::max(hi, tree_.node(id).level);
  }
  accumulate_levels_ = hi - lo + 1;
  if (accumulate_levels_ > 1) return;
  // The transpose of stage 0's same-level copies, in the same global order: source leaf
  // id, then direction (z, y, x from -1 to 1). Every rank builds the same list.
  const int nd = ndim(), nx = shape().nx, ng = shape().ng;
  for_each_leaf_direction(tree_, nd, [&](int id, const Node& n, const IVec& d, const IVec& p) {
    const int nb = tree_.find(n.level, p);
    if (nb < 0 || !tree_.node(nb).leaf())
      throw Error("internal: accumulate plan on a tree with more than one leaf level");
    TransferOp op;
    op.kind = OpKind::accumulate;
    for (int a = 0; a < 3; ++a) {
      if (a < nd)
        guard_range(d[a], nx, ng, op.src.lo[a], op.src.hi[a]);
      else
        op.src.lo[a] = 0, op.src.hi[a] = 1;
    }
    // The neighbour's interior zones under this guard box: the same cells, shifted
    // by one block (a face or node value at index g+n lands on the neighbour's g).
    op.dst = op.src;
    for (int a = 0; a < nd; ++a) op.dst.lo[a] -= d[a] * nx, op.dst.hi[a] -= d[a] * nx;
    push_op(accumulate_plan_, op, rank_, n.owner, slot_[id], tree_.node(nb).owner, slot_[nb]);
  });
}

namespace {
// Transpose of boundary_slab for variables [first, first + nvar), over the whole block on
// the other two axes: outflow zeroes the guard slab (absorbing); reflecting adds each
// guard layer m onto its mirror zone, times -1 for the normal vector component, and zeroes
// it. Guards on the other axes fold too, so corner deposits reach the neighbour (or the
// next fold) that owns their mirror.
template <Layout L>
void fold_slab(const BlockView<L>& u, const BlockShape& s, int a, int side, Boundary bc,
               const std::vector<VarInfo>& vars, int first, int nvar) {
  const int nx = s.nx, ng = s.ng;
  const int b = a == 0 ? 1 : 0, c = a == 2 ? 1 : 2;  // the other two axes
  for (int v = first; v < first + nvar; ++v) {
    const double sign = vars[v].vector_axis == a ? -1.0 : 1.0;
    for (int m = 0; m < ng; ++m) {
      int g[3], q[3];
      g[a] = side ? ng + nx + m : ng - 1 - m;
      q[a] = side ? ng + nx - 1 - m : ng + m;
      for (int y = 0; y < s.n(c); ++y)
        for (int x = 0; x < s.n(b); ++x) {
          g[b] = q[b] = x;
          g[c] = q[c] = y;
          double& gv = u(v, g[0], g[1], g[2]);
          if (bc == Boundary::reflecting) u(v, q[0], q[1], q[2]) += sign * gv;
          gv = 0.0;
        }
    }
  }
}

// Zero every guard zone of variables [first, first + nvar) of one block, a contiguous run
// at a time: x-rows outside the interior in y or z whole, the two x-guard runs otherwise.
template <Layout L>
void zero_guards(const BlockView<L>& u, const BlockShape& s, int first, int nvar) {
  auto zero_run = [&](int i0, int i1, int j, int k) {
    if constexpr (L == Layout::var_major) {
      for (int v = first; v < first + nvar; ++v) std::fill_n(&u(v, i0, j, k), i1 - i0, 0.0);
    } else if (nvar == u.nvar) {
      std::fill_n(&u(0, i0, j, k), std::size_t(i1 - i0) * nvar, 0.0);
    } else {
      for (int i = i0; i < i1; ++i) std::fill_n(&u(first, i, j, k), nvar, 0.0);
    }
  };
  auto inside = [&](int a, int i) { return i >= s.g(a) && i < s.g(a) + s.ni(a); };
  for (int k = 0; k < s.n(2); ++k)
    for (int j = 0; j < s.n(1); ++j) {
      if (inside(2, k) && inside(1, j)) {
        zero_run(0, s.g(0), j, k);
        zero_run(s.g(0) + s.ni(0), s.n(0), j, k);
      } else {
        zero_run(0, s.n(0), j, k);
      }
    }
}
}  // namespace

void Mesh::accumulate_guards(int first, int nvar) {
  TESSERA_REGION("accumulate_guards");
  ++state_epoch_;
  const int nall = static_cast<int>(vars_.size());
  if (first < 0 || nvar < 0 || first + nvar > nall)
    throw Error("mesh: accumulate_guards(" + std::to_string(first) + ", " + std::to_string(nvar) +
                ") is outside the " + std::to_string(nall) + " variables");
  if (accumulate_levels_ > 1)
    throw Error(
        "mesh: accumulate_guards needs every leaf on one refinement level; this tree "
        "has leaves on " +
        std::to_string(accumulate_levels_) + " levels");
  if (nvar == 0) return;
  current_vars_ = 0;
  // Step 1 (local): physical boundaries, outflow drops first, then reflecting folds z, y, x
  // (the reverse of the fill's x, y, z slabs).
  with_layout([&](auto tag) {
    for (int id : local_leaves_) {
      const Node& n = tree_.node(id);
      const auto u = view(id, tag);
      auto at_edge = [&](int a, int side) {
        return n.pos[a] == (side ? tree_.geometry().nblocks_at(a, n.level) - 1 : 0);
      };
      for (int a = 0; a < ndim(); ++a)
        for (int side = 0; side < 2; ++side)
          if (bc_[a][side] == Boundary::outflow && at_edge(a, side))
            fold_slab(u, shape(), a, side, Boundary::outflow, vars_, first, nvar);
      for (int q = 0; q < ndim(); ++q)  // axes z, y, x (q counts up: GCC 12 then bounds it)
        for (int side = 0, a = ndim() - 1 - q; side < 2; ++side)
          if (bc_[a][side] == Boundary::reflecting && at_edge(a, side))
            fold_slab(u, shape(), a, side, Boundary::reflecting, vars_, first, nvar);
    }
  });
  // Step 2: guard boxes into the neighbours' interiors, in plan order on every rank.
  execute(accumulate_plan_, storage_, comm_, 400, nvar, geometry_, first);
  // Step 3: the deposits have moved; every guard zone starts the next deposit at zero.
  with_layout([&](auto tag) {
    for (int id : local_leaves_) zero_guards(view(id, tag), shape(), first, nvar);
  });
}

void Mesh::fill_guards(int nvar) {
  // The prefix sets are made once (the constructor): no allocation on the hot path.
  fill_set(prefix_sets_[static_cast<std::size_t>(nvar < 0 ? nfill_ : std::min(nvar, nfill_))],
           true);
}

void Mesh::fill_guards(const VarSet& set) {
  fill_set(set, false);
}

const std::vector<VarRun>& Mesh::runs_of(const VarSet& set, const std::vector<VarInfo>& vars,
                                         std::map<std::vector<int>, std::vector<VarRun>>& cache) {
  auto it = cache.find(set.vars());
  if (it != cache.end()) return it->second;
  std::vector<VarRun> runs;
  for (const int v : set.vars()) {
    const Prolong p = vars[v].prolong;
    if (!runs.empty() && runs.back().first + runs.back().n == v && runs.back().prolong == p)
      ++runs.back().n;
    else
      runs.push_back({v, 1, p});
  }
  return cache.emplace(set.vars(), std::move(runs)).first->second;
}

void Mesh::fill_runs(BlockStorage& st, const std::vector<VarInfo>& vars,
                     const std::vector<VarRun>& runs) {
  execute(guard_stages_[0], st, comm_, 100, runs, geometry_);
  apply_physical_bcs(0, st, vars, runs);
  for (int L = 1; L < static_cast<int>(guard_stages_.size()); ++L) {
    execute(guard_stages_[L], st, comm_, 100 + L, runs, geometry_);
    apply_physical_bcs(L, st, vars, runs);
  }
}

void Mesh::fill_set(const VarSet& set, bool keep_current) {
  TESSERA_REGION("guardcell");
  for (const int v : set.vars())
    if (v < 0 || v >= static_cast<int>(vars_.size()))
      throw Error("mesh: fill_guards of variable " + std::to_string(v) + " of " +
                  std::to_string(vars_.size()));
  // Whether the set holds every guard-filled variable [0, n) (they come first).
  auto covers = [&](int n) {
    return static_cast<int>(set.size()) >= n && (n == 0 || set.vars()[n - 1] == n - 1);
  };
  const VarSet* todo = &set;
  VarSet rest;
  if (current_vars_ > 0) {
    // A fill that nothing has changed since (the marking's, the tracers') left the guard
    // zones of variables [0, current_vars_) current: only the others of the set need
    // filling (the same bits: a variable's guard values do not depend on the set).
    std::vector<int> others;
    for (const int v : set.vars())
      if (v >= current_vars_) others.push_back(v);
    rest = VarSet(std::move(others));
    todo = &rest;
    if (covers(nfill_) || !keep_current) current_vars_ = 0;
  }
  if (!todo->empty()) fill_runs(storage_, vars_, runs_of(*todo, vars_, set_runs_));
}

void Mesh::fill_scratch_guards(const VarSet& set) {
  TESSERA_REGION("guardcell");
  for (const int v : set.vars())
    if (v < 0 || v >= static_cast<int>(scratch_vars_.size()))
      throw Error("mesh: fill_scratch_guards of scratch variable " + std::to_string(v) + " of " +
                  std::to_string(scratch_vars_.size()));
  if (!set.empty()) fill_runs(scratch_, scratch_vars_, runs_of(set, scratch_vars_, scratch_runs_));
}

}  // namespace tessera::mesh

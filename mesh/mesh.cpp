#include "mesh/mesh.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/flux_register.hpp"
#include "mesh/plan_ops.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

using detail::child_to_parent;
using detail::interior_box;
using detail::push_op;

namespace {
const char* kAxis = "xyz";

Boundary parse_bc(const std::string& s) {
  if (s == "periodic") return Boundary::periodic;
  if (s == "reflecting") return Boundary::reflecting;
  return Boundary::outflow;
}

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

}  // namespace

void Mesh::declare_params(base::Params& p) {
  p.declare_int("mesh.ndim", 3, 1, 3, "number of spatial dimensions");
  p.declare_int("mesh.nxb", 16, 4, 64, "interior zones per block along each active axis (even)");
  p.declare_int("mesh.nblockx", 1, 1, 4096, "root blocks along x");
  p.declare_int("mesh.nblocky", 1, 1, 4096, "root blocks along y");
  p.declare_int("mesh.nblockz", 1, 1, 4096, "root blocks along z");
  for (int a = 0; a < 3; ++a) {
    const std::string ax(1, kAxis[a]);
    p.declare_real("mesh." + ax + "min", 0.0, -1e300, 1e300,
                   "domain lower edge along " + ax + " (cm)");
    p.declare_real("mesh." + ax + "max", 1.0, -1e300, 1e300,
                   "domain upper edge along " + ax + " (cm)");
    p.declare_string("mesh." + ax + "l_boundary_type", "outflow",
                     {"outflow", "reflecting", "periodic"},
                     "boundary condition at the lower " + ax + " face");
    p.declare_string("mesh." + ax + "r_boundary_type", "outflow",
                     {"outflow", "reflecting", "periodic"},
                     "boundary condition at the upper " + ax + " face");
  }
  p.declare_int("mesh.lrefine_min", 1, 1, 30, "coarsest refinement level of any leaf (1 = root)");
  p.declare_int("mesh.lrefine_max", 1, 1, 30, "finest refinement level allowed");
  p.declare_int("mesh.nrefs", 2, 1, 1000000, "steps between refinement checks");
  p.declare_int("mesh.maxblocks", 1000, 1, 100000000, "block slots per rank (leaves and parents)");
  p.declare_string("mesh.layout", "var_major", {"var_major", "zone_major"},
                   "unk order per block: var_major [var][k][j][i] or zone_major [k][j][i][var] "
                   "(PARAMESH); same answers to the bit");
  p.declare_string("mesh.geometry", "cartesian", {"cartesian", "cylindrical", "spherical"},
                   "coordinates: cartesian (1-3-D), cylindrical (2-D r-z, x = r), spherical "
                   "(1-D r)");
  p.declare_string("mesh.distribution", "morton", {"morton", "round_robin", "cartesian"},
                   "how leaf blocks are spread over ranks: along the Morton curve, cyclically, "
                   "or on a ranks_x x ranks_y x ranks_z process grid (V2D's NX1 x NX2)");
  p.declare_int("mesh.ranks_x", 0, 0, 1 << 20,
                "process grid along x with mesh.distribution = \"cartesian\" (0: all ranks "
                "along x, unless ranks_y is set)");
  p.declare_int("mesh.ranks_y", 0, 0, 1 << 20,
                "process grid along y (0: the ranks ranks_x leaves, else 1)");
  p.declare_int("mesh.ranks_z", 1, 1, 1 << 20, "process grid along z");
  for (int n = 1; n <= 4; ++n) {
    const std::string s = std::to_string(n);
    p.declare_string("mesh.refine_var_" + s, n == 1 ? "dens" : (n == 2 ? "pres" : "none"), {},
                     "variable " + s + " for the Loehner error estimator ('none' to skip)");
    p.declare_real("mesh.refine_cutoff_" + s, 0.8, 0.0, 1.0, "refine where the error exceeds this");
    p.declare_real("mesh.derefine_cutoff_" + s, 0.2, 0.0, 1.0,
                   "derefine where the error is below this");
    p.declare_real("mesh.refine_filter_" + s, 0.01, 0.0, 1.0,
                   "noise filter of the error estimator");
  }
  p.declare_int("mesh.derefine_guard_layers", 0, 0, 8,
                "a leaf derefines only if the error is below derefine_cutoff also over this "
                "many guard layers around it (0: interior only); keeps a block refined for a "
                "front at its face from derefining before the front enters (flip-flop)");
}

Mesh::Mesh(const base::Params& p, MPI_Comm comm, std::vector<VarInfo> vars, int nguard, int nflux)
    : comm_(comm) {
  for (std::size_t v = 0; v < vars.size(); ++v)
    for (std::size_t w = 0; w < v; ++w)
      if (vars[w].name == vars[v].name)
        throw Error("variable '" + vars[v].name + "' is declared by both " + vars[w].owner +
                    " and " + vars[v].owner);
  // Scratch variables live apart from unk (their own storage, below).
  for (auto& v : vars) (v.role == VarRole::scratch ? scratch_vars_ : vars_).push_back(std::move(v));
  for (std::size_t v = 0; v < vars_.size(); ++v) {
    if (vars_[v].guard_fill) {
      if (nfill_ != static_cast<int>(v))
        throw Error("mesh: guard-filled variable '" + vars_[v].name +
                    "' follows one that is not (the driver orders them)");
      ++nfill_;
    }
  }
  for (int n = 0; n <= nfill_; ++n) {
    std::vector<int> prefix(static_cast<std::size_t>(n));
    std::iota(prefix.begin(), prefix.end(), 0);
    prefix_sets_.emplace_back(std::move(prefix));
  }
  rank_ = parallel::rank(comm);
  nranks_ = parallel::size(comm);
  TreeGeometry g;
  g.ndim = static_cast<int>(p.get_int("mesh.ndim"));
  g.nroot = {static_cast<int>(p.get_int("mesh.nblockx")),
             static_cast<int>(p.get_int("mesh.nblocky")),
             static_cast<int>(p.get_int("mesh.nblockz"))};
  for (int a = 0; a < 3; ++a) {
    const std::string ax(1, kAxis[a]);
    g.lo[a] = p.get_real("mesh." + ax + "min");
    g.hi[a] = p.get_real("mesh." + ax + "max");
    bc_[a][0] = parse_bc(p.get_string("mesh." + ax + "l_boundary_type"));
    bc_[a][1] = parse_bc(p.get_string("mesh." + ax + "r_boundary_type"));
    if (a < g.ndim) {
      if (!(g.hi[a] > g.lo[a]))
        throw Error("mesh." + ax + "max must be greater than mesh." + ax + "min");
      if ((bc_[a][0] == Boundary::periodic) != (bc_[a][1] == Boundary::periodic))
        throw Error("mesh." + ax + "l_boundary_type and mesh." + ax +
                    "r_boundary_type must both be periodic or neither");
      g.periodic[a] = bc_[a][0] == Boundary::periodic;
    } else {
      g.nroot[a] = 1;
    }
  }
  const int nxb = static_cast<int>(p.get_int("mesh.nxb"));
  if (nxb % 2 != 0) throw Error("mesh.nxb = " + std::to_string(nxb) + " must be even");
  if (2 * nguard > nxb)
    throw Error("mesh.nxb = " + std::to_string(nxb) + " is too small for " +
                std::to_string(nguard) + " guard zones (need nxb >= " + std::to_string(2 * nguard) +
                ")");
  lrefine_min_ = static_cast<int>(p.get_int("mesh.lrefine_min"));
  lrefine_max_ = static_cast<int>(p.get_int("mesh.lrefine_max"));
  if (lrefine_max_ < lrefine_min_)
    throw Error("mesh.lrefine_max = " + std::to_string(lrefine_max_) +
                " is below mesh.lrefine_min = " + std::to_string(lrefine_min_));
  round_robin_ = p.get_string("mesh.distribution") == "round_robin";
  if (p.get_string("mesh.distribution") == "cartesian") {
    int rx = static_cast<int>(p.get_int("mesh.ranks_x")),
        ry = static_cast<int>(p.get_int("mesh.ranks_y")),
        rz = static_cast<int>(p.get_int("mesh.ranks_z"));
    if (rx == 0 && ry == 0) ry = 1;
    if (rx == 0) rx = std::max(1, nranks_ / std::max(1, ry * rz));
    if (ry == 0) ry = std::max(1, nranks_ / std::max(1, rx * rz));
    rank_grid_ = {rx, ry, rz};
  }
  {
    const auto& geo = p.get_string("mesh.geometry");
    geometry_ = geo == "cylindrical"
                    ? Geometry::cylindrical
                    : (geo == "spherical" ? Geometry::spherical : Geometry::cartesian);
    if (geometry_ == Geometry::cylindrical && g.ndim != 2)
      throw Error("mesh.geometry = \"cylindrical\" is 2-D (r, z): set mesh.ndim = 2");
    if (geometry_ == Geometry::spherical && g.ndim != 1)
      throw Error("mesh.geometry = \"spherical\" is 1-D (r): set mesh.ndim = 1");
    if (geometry_ != Geometry::cartesian) {
      if (g.lo[0] < 0.0)
        throw Error("mesh.xmin = " + std::to_string(g.lo[0]) + " is a negative radius");
      if (g.periodic[0]) throw Error("mesh.geometry = \"" + geo + "\": r cannot be periodic");
      const double dx_root = (g.hi[0] - g.lo[0]) / (g.nroot[0] * nxb);
      if (g.lo[0] > 0.0 && g.lo[0] < nguard * dx_root)
        throw Error("mesh.xmin = " + std::to_string(g.lo[0]) +
                    " leaves the guard zones of the "
                    "inner boundary across r = 0: use 0 or at least " +
                    std::to_string(nguard * dx_root));
      if (g.lo[0] == 0.0 && bc_[0][0] != Boundary::reflecting)
        throw Error("mesh.geometry = \"" + geo +
                    "\": the axis r = 0 needs mesh.xl_boundary_type = \"reflecting\"");
    }
  }
  BlockShape s;
  s.ndim = g.ndim;
  s.nx = nxb;
  s.ng = nguard;
  s.nvar = static_cast<int>(vars_.size());
  const int maxblocks = static_cast<int>(p.get_int("mesh.maxblocks"));
  tree_ = Tree(g);
  distribute(tree_);
  storage_ = BlockStorage(s, maxblocks, rank_, memory::config_for(p, "unk"),
                          parse_layout(p.get_string("mesh.layout")));
  if (!scratch_vars_.empty()) {
    BlockShape ss = s;
    ss.nvar = static_cast<int>(scratch_vars_.size());
    scratch_ = BlockStorage(ss, maxblocks, rank_, memory::config_for(p, "scratch"),
                            storage_.layout(), "scratch_vars");
  }
  fluxreg_ = std::make_unique<FluxRegister>(s, maxblocks, nflux < 0 ? s.nvar : nflux,
                                            memory::config_for(p, "flux"));
  check_maxblocks(tree_);
  slot_.assign(tree_.size(), -1);
  for (int id = 0; id < tree_.size(); ++id)
    if (tree_.node(id).owner == rank_) slot_[id] = storage_.acquire();
  after_tree_change();
}

Mesh::~Mesh() = default;

int Mesh::var_index(const std::string& name) const {
  for (int v = 0; v < static_cast<int>(vars_.size()); ++v)
    if (vars_[v].name == name) return v;
  return -1;
}

int Mesh::scratch_index(const std::string& name) const {
  for (int v = 0; v < static_cast<int>(scratch_vars_.size()); ++v)
    if (scratch_vars_[v].name == name) return v;
  return -1;
}

void Mesh::set_radial(TransferOp& op, int src_node) const {
  if (geometry_ == Geometry::cartesian) return;
  const double dx = tree_.block_size(src_node)[0] / shape().nx;
  op.r_dx = dx;
  op.r_lo = tree_.block_lo(src_node)[0] + (op.src.lo[0] - shape().ng) * dx;
}

BlockGeom Mesh::geom(int node) const {
  BlockGeom bg;
  bg.geometry = geometry_;
  bg.ndim = ndim();
  bg.lo = tree_.block_lo(node);
  const auto w = tree_.block_size(node);
  for (int a = 0; a < 3; ++a) bg.dx[a] = w[a] / shape().ni(a);
  return bg;
}

std::array<double, 3> Mesh::finest_dx() const {
  const int L = tree_.max_level();
  std::array<double, 3> dx{};
  const auto& g = tree_.geometry();
  for (int a = 0; a < 3; ++a) dx[a] = (g.hi[a] - g.lo[a]) / g.nblocks_at(a, L) / shape().ni(a);
  return dx;
}

std::vector<double> Mesh::leaf_sums(int n, const std::function<void(int, double*)>& f) const {
  const std::size_t nn = static_cast<std::size_t>(n);
  std::vector<double> all(nn * tree_.size(), 0.0);
  for (int id : local_leaves_) f(id, all.data() + nn * std::size_t(id));
  return add_leaf_partials(n, all);
}

std::vector<double> Mesh::add_leaf_partials(int n, const std::vector<double>& all) const {
  const std::size_t nn = static_cast<std::size_t>(n);
  std::vector<double> red(nn * tree_.size(), 0.0);
  // Exactly one rank holds each entry, the others 0: the sum over ranks is exact.
  MPI_Allreduce(all.data(), red.data(), static_cast<int>(red.size()), MPI_DOUBLE, MPI_SUM, comm_);
  std::vector<double> tot(nn, 0.0);
  for (int id = 0; id < tree_.size(); ++id)
    for (std::size_t q = 0; q < nn; ++q) tot[q] += red[nn * std::size_t(id) + q];
  return tot;
}

void Mesh::check_maxblocks(const Tree& t) const {
  std::vector<int> count(nranks_, 0);
  for (const auto& n : t.nodes()) ++count[n.owner];
  for (int r = 0; r < nranks_; ++r)
    if (count[r] > storage_.maxblocks())
      throw Error("rank " + std::to_string(r) + " needs " + std::to_string(count[r]) +
                  " blocks but mesh.maxblocks = " + std::to_string(storage_.maxblocks()) +
                  "; raise mesh.maxblocks or run on more ranks");
}

void Mesh::after_tree_change() {
  ++tree_generation_;
  current_vars_ = 0;
  set_runs_.clear();
  scratch_runs_.clear();
  local_leaves_.clear();
  for (int id = 0; id < tree_.size(); ++id)
    if (tree_.node(id).leaf() && tree_.node(id).owner == rank_) local_leaves_.push_back(id);
  build_guard_plan();
  // Every op a rank keeps names both ends, and both ends keep it: a symmetric relation.
  std::vector<int> peers;
  for (const auto& stage : guard_stages_)
    for (const auto& op : stage.ops)
      for (int r : {op.src_rank, op.dst_rank})
        if (r != rank_) peers.push_back(r);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  peer_ranks_ = std::move(peers);
  build_accumulate_plan();
  fluxreg_->build(tree_, slot_, rank_, geometry_);
}

void Mesh::build_guard_plan() {
  const int nd = ndim(), nx = shape().nx, ng = shape().ng;
  const int nlev = tree_.max_level() + 1;
  guard_stages_.assign(nlev, TransferPlan{});
  for (int id = 0; id < tree_.size(); ++id) {
    const Node& n = tree_.node(id);
    if (!n.leaf()) continue;
    for (int dz = (nd > 2 ? -1 : 0); dz <= (nd > 2 ? 1 : 0); ++dz)
      for (int dy = (nd > 1 ? -1 : 0); dy <= (nd > 1 ? 1 : 0); ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (!dx && !dy && !dz) continue;
          const IVec d{dx, dy, dz};
          IVec p{n.pos[0] + dx, n.pos[1] + dy, n.pos[2] + dz};
          if (tree_.outside(n.level, p)) continue;
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
            push_op(guard_stages_[stage], op, rank_, tree_.node(src_node).owner, slot_[src_node],
                    n.owner, slot_[id]);
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
        }
  }
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
  for (int id = 0; id < tree_.size(); ++id) {
    const Node& n = tree_.node(id);
    if (!n.leaf()) continue;
    for (int dz = (nd > 2 ? -1 : 0); dz <= (nd > 2 ? 1 : 0); ++dz)
      for (int dy = (nd > 1 ? -1 : 0); dy <= (nd > 1 ? 1 : 0); ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (!dx && !dy && !dz) continue;
          const IVec d{dx, dy, dz};
          const IVec p{n.pos[0] + dx, n.pos[1] + dy, n.pos[2] + dz};
          if (tree_.outside(n.level, p)) continue;  // physical boundary: folded or dropped
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
        }
  }
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

std::array<double, 3> GuardSlab::centre(int m, int x, int y) const {
  std::array<double, 3> r{};
  for (int d = 0; d < 3; ++d) {
    const int i = d == axis ? gidx(m) : (d == b ? x : y);
    const int g = d < geom.ndim ? ng : 0;
    r[d] = geom.lo[d] + (i - g + 0.5) * geom.dx[d];
  }
  return r;
}

double GuardSlab::face() const {
  return geom.lo[axis] + (side ? nx * geom.dx[axis] : 0.0);
}

BoundaryFill dirichlet(std::function<double(const std::array<double, 3>&)> g) {
  return [g = std::move(g)](const GuardSlab& s) {
    for (int y = 0; y < s.nc; ++y)
      for (int x = 0; x < s.nb; ++x) {
        auto at = s.centre(0, x, y);
        at[s.axis] = s.face();
        const double value = g(at);
        for (int m = 0; m < s.ng; ++m) s.guard(m, x, y) = 2.0 * value - s.interior(m, x, y);
      }
  };
}

BoundaryFill neumann(std::function<double(const std::array<double, 3>&)> q) {
  return [q = std::move(q)](const GuardSlab& s) {
    for (int y = 0; y < s.nc; ++y)
      for (int x = 0; x < s.nb; ++x) {
        auto at = s.centre(0, x, y);
        at[s.axis] = s.face();
        const double dudn = q(at);
        for (int m = 0; m < s.ng; ++m) s.guard(m, x, y) = s.interior(m, x, y) + s.gap(m) * dudn;
      }
  };
}

namespace {
/// The set of the variables named in `vars` (throws, naming the first unknown one).
VarSet set_of(const std::vector<std::string>& names, const std::vector<VarInfo>& vars,
              const char* what, const char* where) {
  std::vector<int> v;
  for (const auto& n : names) {
    const auto it =
        std::find_if(vars.begin(), vars.end(), [&](const VarInfo& x) { return x.name == n; });
    if (it == vars.end()) throw Error("mesh: no " + std::string(what) + " '" + n + "'" + where);
    v.push_back(static_cast<int>(it - vars.begin()));
  }
  return VarSet(std::move(v));
}
}  // namespace

VarSet Mesh::scratch_set(const std::vector<std::string>& names) const {
  return set_of(names, scratch_vars_, "scratch variable", "");
}

VarSet Mesh::var_set(const std::vector<std::string>& names) const {
  return set_of(names, vars_, "variable", " in unk");
}

VarSet Mesh::guard_filled() const {
  std::vector<int> v(static_cast<std::size_t>(nfill_));
  std::iota(v.begin(), v.end(), 0);
  return VarSet(std::move(v));
}

VarSet::VarSet(std::vector<int> vars) : vars_(std::move(vars)) {
  std::sort(vars_.begin(), vars_.end());
  vars_.erase(std::unique(vars_.begin(), vars_.end()), vars_.end());
}

bool VarSet::contains(int v) const {
  return std::binary_search(vars_.begin(), vars_.end(), v);
}

const char* to_string(VarRole r) {
  switch (r) {
    case VarRole::independent:
      return "independent";
    case VarRole::derived:
      return "derived";
    case VarRole::scratch:
      return "scratch";
  }
  return "?";
}

const char* to_string(Prolong p) {
  switch (p) {
    case Prolong::mc:
      return "mc";
    case Prolong::linear:
      return "linear";
    case Prolong::injection:
      return "injection";
  }
  return "?";
}

}  // namespace tessera::mesh

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
  p.declare_string("mesh.balance", "blocks", {"blocks", "cost"},
                   "load balance: equal leaf counts per rank along the Morton curve, or equal "
                   "cost (zones plus the work units report per leaf: burned zones, particles)");
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
  balance_cost_ = p.get_string("mesh.balance") == "cost";
  if (balance_cost_ && p.get_string("mesh.distribution") != "morton")
    throw Error(
        "mesh.balance = \"cost\" needs mesh.distribution = \"morton\" (it splits the "
        "Morton curve by weight), not \"" +
        p.get_string("mesh.distribution") + "\"");
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

namespace {
/// Nodes of t each rank owns (leaves and parents: the block slots it needs).
std::vector<int> nodes_per_rank(const Tree& t, int nranks) {
  std::vector<int> count(std::size_t(nranks), 0);
  for (const auto& n : t.nodes()) ++count[std::size_t(n.owner)];
  return count;
}
}  // namespace

bool Mesh::fits(const Tree& t) const {
  const auto count = nodes_per_rank(t, nranks_);
  return *std::max_element(count.begin(), count.end()) <= storage_.maxblocks();
}

void Mesh::end_step() {
  const double zones = static_cast<double>(shape().interior_cells());
  run_work_ += static_cast<double>(local_leaves_.size()) * zones + step_work_;
  run_blocks_ += static_cast<double>(local_leaves_.size());
  step_work_ = 0.0;
  ++work_steps_;
}

Mesh::BalanceStats Mesh::balance_stats() const {
  double mine[2] = {run_work_, run_blocks_}, mx[2], sum[2];
  MPI_Allreduce(mine, mx, 2, MPI_DOUBLE, MPI_MAX, comm_);
  MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, comm_);
  BalanceStats b;
  b.work_max = mx[0], b.work_mean = sum[0] / nranks_;
  b.blocks_max = mx[1], b.blocks_mean = sum[1] / nranks_;
  b.moves = balance_moves_, b.fallbacks = balance_fallbacks_;
  return b;
}

std::vector<double> Mesh::leaf_weights() const {
  // Each leaf's owner contributes its weight, the others zeros: the sum is exact.
  const double zones = static_cast<double>(shape().interior_cells());
  const double steps = static_cast<double>(std::max<long>(1, work_steps_));
  std::vector<double> w(static_cast<std::size_t>(tree_.size()), 0.0);
  for (int id : local_leaves_) w[std::size_t(id)] = zones + work_[std::size_t(id)] / steps;
  MPI_Allreduce(MPI_IN_PLACE, w.data(), tree_.size(), MPI_DOUBLE, MPI_SUM, comm_);
  return w;
}

void Mesh::check_maxblocks(const Tree& t) const {
  const auto count = nodes_per_rank(t, nranks_);
  for (int r = 0; r < nranks_; ++r)
    if (count[r] > storage_.maxblocks())
      throw Error("rank " + std::to_string(r) + " needs " + std::to_string(count[r]) +
                  " blocks but mesh.maxblocks = " + std::to_string(storage_.maxblocks()) +
                  "; raise mesh.maxblocks or run on more ranks");
}

void Mesh::after_tree_change() {
  ++tree_generation_;
  work_.assign(static_cast<std::size_t>(tree_.size()), 0.0);
  work_steps_ = 0;
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

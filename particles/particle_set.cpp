#include "particles/particle_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "base/error.hpp"
#include "mesh/mesh.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::particles {

double wrap_periodic(double x, double lo, double hi) {
  const double L = hi - lo;
  // A period or two (every step's case): by adding periods, as ever.
  for (int n = 0; n < 4 && x < lo; ++n) x += L;
  for (int n = 0; n < 4 && x >= hi; ++n) x -= L;
  if (x >= lo && x < hi) return x;
  // Far outside (|x| up to 2^52 L and beyond, where x + L == x): the remainder.
  x = lo + std::fmod(x - lo, L);
  if (x < lo) x += L;
  if (x >= hi || x < lo) x = lo;  // the rounding of the last addition
  return x;
}

int locate(const mesh::Tree& t, const std::array<double, 3>& x) {
  const auto& g = t.geometry();
  mesh::IVec p{0, 0, 0};
  for (int a = 0; a < g.ndim; ++a) {
    if (!(x[a] >= g.lo[a] && x[a] < g.hi[a])) return -1;  // NaN too
    const int n = g.nroot[a];
    const double w = (g.hi[a] - g.lo[a]) / n;
    int q = std::clamp(static_cast<int>((x[a] - g.lo[a]) / w), 0, n - 1);
    // The division may round across a face; the bounds decide, as block_lo computes them.
    while (q > 0 && x[a] < g.lo[a] + w * q) --q;
    while (q + 1 < n && x[a] >= g.lo[a] + w * (q + 1)) ++q;
    p[a] = q;
  }
  int id = t.find(0, p);
  while (id >= 0 && !t.node(id).leaf()) {
    const int level = t.node(id).level + 1;
    int c = 0;
    for (int a = 0; a < g.ndim; ++a) {
      const double w = (g.hi[a] - g.lo[a]) / g.nblocks_at(a, level);
      const int upper = x[a] >= g.lo[a] + w * (2 * p[a] + 1) ? 1 : 0;
      p[a] = 2 * p[a] + upper;
      c |= upper << a;
    }
    id = t.node(id).child[c];
  }
  return id;
}

ParticleSet::ParticleSet(ParticleType type, memory::ArenaConfig cfg, std::string arena_name)
    : type_(std::move(type)), cfg_(cfg), arena_name_(std::move(arena_name)) {
  nprop_ = NBASE + static_cast<int>(type_.extra.size());
}

std::vector<std::string> ParticleSet::prop_names() const {
  std::vector<std::string> n{"posx", "posy", "posz", "velx", "vely", "velz"};
  n.insert(n.end(), type_.extra.begin(), type_.extra.end());
  return n;
}

void ParticleSet::clear() {
  n_ = 0;
  first_.clear();
}

void ParticleSet::remap(std::size_t cap) {
  memory::Arena fresh(arena_name_, std::max<std::size_t>(cap, 1) * bytes_per_particle(), cfg_);
  auto* d = static_cast<double*>(fresh.data());
  auto* tg = reinterpret_cast<std::int64_t*>(d + std::size_t(nprop_) * cap);
  auto* nd = reinterpret_cast<std::int32_t*>(tg + cap);
  for (int q = 0; q < nprop_; ++q) std::copy(prop(q), prop(q) + n_, d + std::size_t(q) * cap);
  std::copy(tag_, tag_ + n_, tg);
  std::copy(node_, node_ + n_, nd);
  arena_ = std::move(fresh);
  data_ = d, tag_ = tg, node_ = nd, cap_ = cap;
}

void ParticleSet::reserve(std::size_t n) {
  if (n <= cap_ && data_ != nullptr) return;
  remap(std::max({n, cap_ + cap_ / 2, std::size_t(1024)}));
}

void ParticleSet::push(const double* values, std::int64_t t) {
  reserve(n_ + 1);
  for (int q = 0; q < nprop_; ++q) prop(q)[n_] = values[q];
  tag_[n_] = t;
  node_[n_] = -1;
  ++n_;
  first_.clear();
}

memory::ArenaReport ParticleSet::report() const {
  if (arena_.data() == nullptr) {
    memory::ArenaReport r;
    r.name = arena_name_;
    r.policy_requested = r.policy_achieved = cfg_.policy;
    return r;
  }
  return arena_.report();
}

void ParticleSet::set_bins(int nbins, BinFunction bins) {
  if (bins && nbins < 1) throw Error("particles: set_bins needs at least one bin");
  nbins_ = bins ? nbins : 0;
  bins_ = std::move(bins);
}

bool ParticleSet::order_by_bins(int nnodes, const std::vector<char>& moved) {
  // The particles that kept their node and their bin since the last sort (stayers) are
  // still in (node, bin, tag) order (dropping others keeps it; checked while merging, not
  // assumed: a tree change renumbers nodes); the rest (moved[i], a new bin, arrivals, new
  // particles) are sorted alone, by keys held beside their indices, and merged in: O(n + k
  // log k) for k of them. (node, bin) is one 64-bit key.
  bin_.resize(n_, -1);
  new_bin_.resize(n_);
  bins_(*this, node_, n_, new_bin_.data());
  auto& key = key_;
  key.resize(n_);
  auto& mover = mover_;
  mover.resize(n_);
  move_.clear();
  move_.reserve(n_);  // every particle at worst (the plan's 24 bytes each; no regrowth)
  for (std::size_t i = 0; i < n_; ++i) {
    if (new_bin_[i] < 0 || new_bin_[i] >= nbins_)
      throw Error(fmt::format("particles: bin {} of particle {} is outside [0, {})", new_bin_[i],
                              tag_[i], nbins_));
    key[i] = std::uint64_t(std::uint32_t(node_[i])) << 32 | std::uint32_t(new_bin_[i]);
    mover[i] = moved[i] || new_bin_[i] != bin_[i];
    if (mover[i]) move_.push_back({key[i], tag_[i], i});
  }
  const auto before = [](const SortKey& a, const SortKey& b) {
    return a.key != b.key ? a.key < b.key : a.tag < b.tag;
  };
  auto& order = order_;
  order.resize(n_);
  // Merges the stayers (storage order) with the sorted movers into order; false if the
  // stayers were out of order.
  auto merge = [&]() {
    std::sort(move_.begin(), move_.end(), before);
    const std::uint64_t* K = key.data();
    const std::int64_t* T = tag_;
    const char* M = mover.data();
    std::size_t* O = order.data();
    const SortKey *mv = move_.data(), *mend = mv + move_.size();
    std::size_t k = 0;
    bool any = false;
    std::uint64_t last_key = 0;
    std::int64_t last_tag = 0;
    for (std::size_t a = 0; a < n_; ++a) {
      if (M[a]) continue;
      const std::uint64_t ka = K[a];
      const std::int64_t ta = T[a];
      if (any && (ka < last_key || (ka == last_key && ta < last_tag))) return false;
      while (mv != mend && (mv->key < ka || (mv->key == ka && mv->tag < ta)))
        O[k++] = (mv++)->index;
      O[k++] = a;
      last_key = ka, last_tag = ta, any = true;
    }
    while (mv != mend) O[k++] = (mv++)->index;
    return true;
  };
  if (!merge()) {  // the stayers were out of order: sort everything
    move_.clear();
    for (std::size_t i = 0; i < n_; ++i) {
      mover[i] = 1;
      move_.push_back({key[i], tag_[i], i});
    }
    merge();
  }
  first_.assign(std::size_t(nnodes) + 1, 0);
  bool identity = true;
  for (std::size_t k = 0; k < n_; ++k) {
    const std::size_t i = order[k];
    bin_[k] = new_bin_[i];
    ++first_[std::size_t(node_[i]) + 1];
    identity = identity && i == k;
  }
  std::partial_sum(first_.begin(), first_.end(), first_.begin());
  return !identity;
}

void ParticleSet::permute() {
  auto& order = order_;
  auto& tmp = permute_buf_;
  tmp.resize(n_ * sizeof(double));
  auto* td = reinterpret_cast<double*>(tmp.data());
  for (int q = 0; q < nprop_; ++q) {
    double* p = prop(q);
    for (std::size_t i = 0; i < n_; ++i) td[i] = p[order[i]];
    std::copy(td, td + n_, p);
  }
  auto* tt = reinterpret_cast<std::int64_t*>(tmp.data());
  for (std::size_t i = 0; i < n_; ++i) tt[i] = tag_[order[i]];
  std::copy(tt, tt + n_, tag_);
  // The nodes in the new order are first_'s ranges.
  for (std::size_t id = 0; id + 1 < first_.size(); ++id)
    std::fill(node_ + first_[id], node_ + first_[id + 1], std::int32_t(id));
}

void ParticleSet::sort_canonical(int nnodes, const std::vector<char>& moved) {
  if (bins_) {
    if (order_by_bins(nnodes, moved)) permute();
    return;
  }
  // Counting sort by node (canonical tree order), then by tag inside each node. Inside a
  // node the particles that kept their node (moved[i] == 0) come first, in storage order,
  // which is already their tag order (the previous sort left every node's particles
  // sorted by tag, and dropping some keeps the rest sorted; checked, not assumed); the
  // newcomers follow, are sorted by tag alone and merged in: O(n + k log k) for k
  // newcomers instead of O(n log n).
  first_.assign(std::size_t(nnodes) + 1, 0);
  std::vector<std::size_t> stay_count(std::size_t(nnodes), 0);
  bool any_moved = false;
  for (std::size_t i = 0; i < n_; ++i) {
    ++first_[std::size_t(node_[i]) + 1];
    if (moved[i])
      any_moved = true;
    else
      ++stay_count[std::size_t(node_[i])];
  }
  std::partial_sum(first_.begin(), first_.end(), first_.begin());
  if (!any_moved) {
    // Nothing changed node: storage is sorted by (node, tag) already unless the nodes
    // themselves are out of order (after a tree change renumbered them).
    bool sorted = true;
    for (std::size_t i = 1; i < n_ && sorted; ++i)
      sorted = node_[i - 1] < node_[i] || (node_[i - 1] == node_[i] && tag_[i - 1] < tag_[i]);
    if (sorted) return;
  }
  auto& order = order_;
  order.resize(n_);
  {
    std::vector<std::size_t> next_stay(first_.begin(), first_.end() - 1), next_new(nnodes);
    for (int id = 0; id < nnodes; ++id)
      next_new[std::size_t(id)] = first_[std::size_t(id)] + stay_count[std::size_t(id)];
    for (std::size_t i = 0; i < n_; ++i) {
      const auto id = std::size_t(node_[i]);
      order[moved[i] ? next_new[id]++ : next_stay[id]++] = i;
    }
  }
  const auto by_tag = [&](std::size_t x, std::size_t y) { return tag_[x] < tag_[y]; };
  for (int id = 0; id < nnodes; ++id) {
    const auto b = order.begin() + long(first_[std::size_t(id)]),
               e = order.begin() + long(first_[std::size_t(id) + 1]);
    if (e - b < 2) continue;
    const auto mid = b + long(stay_count[std::size_t(id)]);
    if (!std::is_sorted(b, mid, by_tag)) std::sort(b, mid, by_tag);
    if (e - mid > 1) std::sort(mid, e, by_tag);
    if (mid != b && mid != e) std::inplace_merge(b, mid, e, by_tag);
  }
  // Apply the permutation through one reused buffer (no allocation per call).
  bool identity = true;
  for (std::size_t i = 0; i < n_ && identity; ++i) identity = order[i] == i;
  if (!identity) permute();
}

MigrateStats ParticleSet::redistribute(const mesh::Mesh& m) {
  const auto& t = m.tree();
  const auto& g = t.geometry();
  const int nd = g.ndim, self = m.rank(), nranks = m.nranks();
  const MPI_Comm comm = m.comm();
  // Step 1: boundaries, then the leaf and rank of every particle (-1: lost).
  std::vector<int> dest(n_, -1);
  std::vector<char>& moved = moved_;
  moved.assign(n_, 1);
  // The bounds of every leaf, as locate decides them: a particle still inside the leaf
  // its node_ names needs no tree descent (most particles, most steps).
  const int nnodes = t.size();
  leaf_lo_.assign(std::size_t(nnodes) * 3, 0.0);
  leaf_hi_.assign(std::size_t(nnodes) * 3, -1.0);  // empty box: non-leaves never match
  for (int id = 0; id < nnodes; ++id) {
    const mesh::Node& leaf = t.node(id);
    if (!leaf.leaf()) continue;
    for (int a = 0; a < 3; ++a) {
      if (a >= nd) {
        leaf_lo_[3 * std::size_t(id) + a] = -HUGE_VAL, leaf_hi_[3 * std::size_t(id) + a] = HUGE_VAL;
        continue;
      }
      // locate's comparisons, at this leaf's level (w at level l is exactly twice w at
      // level l + 1, so every coarser level's face is one of these values, to the bit).
      const int nb = g.nblocks_at(a, leaf.level);
      const double w = (g.hi[a] - g.lo[a]) / nb;
      const int p = leaf.pos[a];
      leaf_lo_[3 * std::size_t(id) + a] = p == 0 ? g.lo[a] : g.lo[a] + w * p;
      leaf_hi_[3 * std::size_t(id) + a] = p + 1 == nb ? g.hi[a] : g.lo[a] + w * (p + 1);
    }
  }
  long lost = 0;
  double* pos[3] = {prop(POSX), prop(POSY), prop(POSZ)};
  double* vel[3] = {prop(VELX), prop(VELY), prop(VELZ)};
  for (std::size_t i = 0; i < n_; ++i) {
    // A position that is not finite on any axis is lost (a periodic wrap of inf would not
    // end; issue 48).
    bool gone = !std::isfinite(pos[0][i]) || !std::isfinite(pos[1][i]) || !std::isfinite(pos[2][i]);
    for (int a = 0; a < nd && !gone; ++a) {
      double& x = pos[a][i];
      if (x >= g.lo[a] && x < g.hi[a]) continue;
      const int side = x >= g.hi[a] ? 1 : 0;
      switch (m.boundary(a, side)) {
        case mesh::Boundary::periodic: {
          x = wrap_periodic(x, g.lo[a], g.hi[a]);
          break;
        }
        case mesh::Boundary::reflecting:
          x = side ? 2 * g.hi[a] - x : 2 * g.lo[a] - x;
          if (x >= g.hi[a]) x = std::nextafter(g.hi[a], g.lo[a]);
          if (x < g.lo[a]) x = g.lo[a];
          vel[a][i] = -vel[a][i];
          break;
        case mesh::Boundary::outflow:
          gone = true;
          break;
      }
    }
    if (gone) {
      ++lost;
      continue;
    }
    const int old = node_[i];
    if (old >= 0 && old < nnodes) {
      const double* lo = &leaf_lo_[3 * std::size_t(old)];
      const double* hi = &leaf_hi_[3 * std::size_t(old)];
      if (pos[0][i] >= lo[0] && pos[0][i] < hi[0] && pos[1][i] >= lo[1] && pos[1][i] < hi[1] &&
          pos[2][i] >= lo[2] && pos[2][i] < hi[2]) {
        dest[i] = t.node(old).owner;
        moved[i] = 0;
        continue;
      }
    }
    const int id = locate(t, {pos[0][i], pos[1][i], pos[2][i]});
    if (id < 0) {
      ++lost;
      continue;
    }
    node_[i] = id;
    dest[i] = t.node(id).owner;
  }
  // Step 2: which path. Neighbour-only exchange needs every destination among the ranks
  // owning leaves next to ours; the decision is collective.
  std::vector<long> nsend(std::size_t(nranks), 0);
  for (std::size_t i = 0; i < n_; ++i)
    if (dest[i] >= 0 && dest[i] != self) ++nsend[std::size_t(dest[i])];
  const std::vector<int>& nbrs = m.peer_ranks();
  long outside = 0, migrated = 0;
  for (int r = 0; r < nranks; ++r) {
    migrated += nsend[std::size_t(r)];
    if (nsend[std::size_t(r)] > 0 && !std::binary_search(nbrs.begin(), nbrs.end(), r)) ++outside;
  }
  long agg[3] = {lost, migrated, outside};
  MPI_Allreduce(MPI_IN_PLACE, agg, 3, MPI_LONG, MPI_SUM, comm);
  MigrateStats st;
  st.lost = agg[0];
  st.migrated = agg[1];
  st.general = agg[2] > 0;
  // Step 3: pack what leaves (nprop values, then the tag's bits as a double), keep the rest.
  const int w = nprop_ + 1;
  std::vector<std::vector<double>> out(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) out[std::size_t(r)].reserve(std::size_t(nsend[r] * w));
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n_; ++i) {
    if (dest[i] < 0) continue;
    if (dest[i] != self) {
      auto& b = out[std::size_t(dest[i])];
      for (int q = 0; q < nprop_; ++q) b.push_back(prop(q)[i]);
      double bits;
      std::memcpy(&bits, &tag_[i], sizeof bits);
      b.push_back(bits);
      continue;
    }
    if (kept != i) {
      for (int q = 0; q < nprop_; ++q) prop(q)[kept] = prop(q)[i];
      tag_[kept] = tag_[i];
      node_[kept] = node_[i];
      moved[kept] = moved[i];
      if (i < bin_.size()) bin_[kept] = bin_[i];
    }
    ++kept;
  }
  n_ = kept;
  // Step 4: exchange, counted in particles (a datatype of w doubles: counts and
  // displacements in doubles passed 2^31 at 16 GiB and went negative; issue 48).
  std::vector<std::vector<double>> in(static_cast<std::size_t>(nranks));
  MPI_Datatype ptype;
  MPI_Type_contiguous(w, MPI_DOUBLE, &ptype);
  MPI_Type_commit(&ptype);
  if (st.migrated > 0 && !st.general) {
    std::vector<long> nrecv(std::size_t(nranks), 0);
    std::vector<MPI_Request> req;
    for (int r : nbrs) {
      req.emplace_back();
      MPI_Irecv(&nrecv[std::size_t(r)], 1, MPI_LONG, r, 7301, comm, &req.back());
      req.emplace_back();
      MPI_Isend(&nsend[std::size_t(r)], 1, MPI_LONG, r, 7301, comm, &req.back());
    }
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
    req.clear();
    for (int r : nbrs) {
      in[std::size_t(r)].resize(std::size_t(nrecv[std::size_t(r)] * w));
      if (!in[std::size_t(r)].empty()) {
        req.emplace_back();
        MPI_Irecv(in[std::size_t(r)].data(),
                  parallel::int_count(std::size_t(nrecv[std::size_t(r)]), "particles received"),
                  ptype, r, 7302, comm, &req.back());
      }
      if (!out[std::size_t(r)].empty()) {
        req.emplace_back();
        MPI_Isend(
            out[std::size_t(r)].data(),
            parallel::int_count(out[std::size_t(r)].size() / std::size_t(w), "particles sent"),
            ptype, r, 7302, comm, &req.back());
      }
    }
    MPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
  } else if (st.migrated > 0) {
    std::vector<int> sc(static_cast<std::size_t>(nranks)), rc(static_cast<std::size_t>(nranks)),
        sd(static_cast<std::size_t>(nranks)), rd(static_cast<std::size_t>(nranks));
    for (int r = 0; r < nranks; ++r)
      sc[std::size_t(r)] = parallel::int_count(std::size_t(nsend[r]), "particles sent");
    MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
    std::vector<double> sbuf, rbuf;
    std::size_t at = 0;
    for (int r = 0; r < nranks; ++r) {
      sd[std::size_t(r)] = parallel::int_count(at, "particles sent");
      sbuf.insert(sbuf.end(), out[std::size_t(r)].begin(), out[std::size_t(r)].end());
      at += std::size_t(sc[std::size_t(r)]);
    }
    std::size_t total = 0;
    for (int r = 0; r < nranks; ++r) {
      rd[std::size_t(r)] = parallel::int_count(total, "particles received");
      total += std::size_t(rc[std::size_t(r)]);
    }
    rbuf.resize(total * std::size_t(w));
    MPI_Alltoallv(sbuf.data(), sc.data(), sd.data(), ptype, rbuf.data(), rc.data(), rd.data(),
                  ptype, comm);
    for (int r = 0; r < nranks; ++r)
      in[std::size_t(r)].assign(
          rbuf.begin() + std::ptrdiff_t(std::size_t(rd[std::size_t(r)]) * std::size_t(w)),
          rbuf.begin() + std::ptrdiff_t(std::size_t(rd[std::size_t(r)] + rc[std::size_t(r)]) *
                                        std::size_t(w)));
  }
  MPI_Type_free(&ptype);
  // Step 5: append what arrived (its leaf found again here: the same lookup), then sort.
  std::size_t incoming = 0;
  for (const auto& b : in) incoming += b.size() / std::size_t(w);
  reserve(n_ + incoming);
  for (const auto& b : in)
    for (std::size_t at = 0; at + std::size_t(w) <= b.size(); at += std::size_t(w)) {
      for (int q = 0; q < nprop_; ++q) prop(q)[n_] = b[at + std::size_t(q)];
      std::memcpy(&tag_[n_], &b[at + std::size_t(nprop_)], sizeof(std::int64_t));
      const int id = locate(t, {prop(POSX)[n_], prop(POSY)[n_], prop(POSZ)[n_]});
      if (id < 0 || t.node(id).owner != self)
        throw Error("particles: a particle sent here does not belong here (internal error)");
      node_[n_] = id;
      ++n_;
    }
  moved.resize(kept);   // drop the flags of particles that left (compaction kept [0, kept))
  moved.resize(n_, 1);  // arrivals are newcomers
  sort_canonical(t.size(), moved);
  return st;
}

}  // namespace tessera::particles

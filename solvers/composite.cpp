// The composite matrix of a matrix-free operator by probing (see composite.hpp).
#include "solvers/composite.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "base/error.hpp"

namespace tessera::solvers {

namespace {

constexpr int kReach = 4;                // zones of the probed level a row may reach
constexpr int kPeriod = 2 * kReach + 1;  // probe spacing on a non-periodic axis

using Faces = std::array<std::array<bool, 2>, 3>;

/// Interior indices (from 0) of zone number `zone` of a block.
std::array<int, 3> zone_indices(const mesh::BlockShape& s, int zone) {
  const int n0 = s.ni(0), n1 = s.ni(1);
  return {zone % n0, (zone / n0) % n1, zone / (n0 * n1)};
}

bool next_to(const mesh::BlockShape& s, const Faces& f, const std::array<int, 3>& I, int nd) {
  for (int a = 0; a < nd; ++a)
    if ((f[a][0] && I[a] == 0) || (f[a][1] && I[a] == s.ni(a) - 1)) return true;
  return false;
}

int floor_mod(long a, long p) {
  return static_cast<int>(((a % p) + p) % p);
}

}  // namespace

Faces coarse_fine_faces(const mesh::Mesh& m, int id) {
  const auto& t = m.tree();
  const auto& node = t.node(id);
  Faces f{};
  for (int a = 0; a < m.ndim(); ++a)
    for (int side = 0; side < 2; ++side) {
      mesh::IVec pos = node.pos;
      pos[a] += side ? 1 : -1;
      if (t.outside(node.level, pos)) continue;  // a physical face
      const int nb = t.find(node.level, pos);
      f[a][side] = nb < 0 || !t.node(nb).leaf();
    }
  return f;
}

bool is_composite(const mesh::Tree& t) {
  const auto leaves = t.leaves();
  for (int id : leaves)
    if (t.node(id).level != t.node(leaves.front()).level) return true;
  return false;
}

void probe_rows(mesh::Mesh& m, const Apply& A, const Field& x, const Field& y, const RowSink& sink,
                const std::string& name) {
  const auto& t = m.tree();
  const auto& geo = t.geometry();
  const auto& s = m.shape();
  const int nd = m.ndim(), nx = s.ni(0), ncomp = x.ncomp();
  // The unknowns next to a coarse-fine face on this rank, in leaf and zone order.
  struct Cell {
    int id, zone;
    std::array<int, 3> I;
  };
  std::vector<Cell> cells;
  for (int id : m.local_leaves()) {
    const Faces f = coarse_fine_faces(m, id);
    const int nz = static_cast<int>(s.interior_cells());
    for (int z = 0; z < nz; ++z) {
      const auto I = zone_indices(s, z);
      if (next_to(s, f, I, nd)) cells.push_back({id, z, I});
    }
  }
  std::vector<std::vector<Entry>> entries(cells.size() * std::size_t(ncomp));
  int lost_level = 0;  // the finest level (from 1) of a coefficient no probed zone explains
  std::set<int> levels;
  for (int id : t.leaves()) levels.insert(t.node(id).level);
  for (const int L : levels) {
    // Probe spacing per axis: kPeriod, or on a periodic axis the smallest divisor of the
    // level's zones that is at least kPeriod (the pattern must repeat across the seam).
    int P[3] = {1, 1, 1}, N[3] = {1, 1, 1};
    for (int a = 0; a < nd; ++a) {
      N[a] = geo.nblocks_at(a, L) * nx;
      P[a] = geo.periodic[a] ? N[a] : kPeriod;
      if (geo.periodic[a])
        for (int p = kPeriod; p < N[a]; ++p)
          if (N[a] % p == 0) {
            P[a] = p;
            break;
          }
    }
    for (int cc = 0; cc < ncomp; ++cc)
      for (int p2 = 0; p2 < P[2]; ++p2)
        for (int p1 = 0; p1 < P[1]; ++p1)
          for (int p0 = 0; p0 < P[0]; ++p0) {
            const int pc[3] = {p0, p1, p2};
            m.with_layout([&](auto tag) {
              for (int id : m.local_leaves()) {
                const auto w = m.scratch_view(id, tag);
                const auto& node = t.node(id);
                mesh::for_each_zone(s, [&](int i, int j, int k) {
                  const int I[3] = {i - s.g(0), j - s.g(1), k - s.g(2)};
                  bool on = node.level == L;
                  for (int a = 0; a < nd && on; ++a)
                    on = floor_mod(long(node.pos[a]) * nx + I[a], P[a]) == pc[a];
                  for (int c = 0; c < ncomp; ++c)
                    w(x.vars[std::size_t(c)], i, j, k) = (on && c == cc) ? 1.0 : 0.0;
                });
              }
            });
            A(x, y);
            m.with_layout([&](auto tag) {
              for (std::size_t q = 0; q < cells.size(); ++q) {
                const Cell& cell = cells[q];
                const auto w = m.scratch_view(cell.id, tag);
                const auto& node = t.node(cell.id);
                const int i = s.g(0) + cell.I[0], j = s.g(1) + cell.I[1], k = s.g(2) + cell.I[2];
                for (int c = 0; c < ncomp; ++c) {
                  const double v = w(y.vars[std::size_t(c)], i, j, k);
                  if (v == 0.0) continue;
                  // The probed zone within kReach of this row's centre (in level-L zones).
                  mesh::IVec bpos{0, 0, 0};
                  int J[3] = {0, 0, 0};
                  bool inside = true;
                  for (int a = 0; a < nd; ++a) {
                    const double centre =
                        std::ldexp(double(long(node.pos[a]) * nx + cell.I[a]) + 0.5,
                                   L - node.level) -
                        0.5;
                    const long lo = static_cast<long>(std::ceil(centre - kReach));
                    long g = lo + floor_mod(pc[a] - lo, P[a]);
                    if (geo.periodic[a])
                      g = floor_mod(g, N[a]);
                    else if (g < 0 || g >= N[a])
                      inside = false;
                    bpos[a] = static_cast<int>(g / nx);
                    J[a] = static_cast<int>(g % nx);
                  }
                  const int col = inside ? t.find(L, bpos) : -1;
                  if (col < 0 || !t.node(col).leaf()) {  // reported after the probes
                    lost_level = std::max(lost_level, L + 1);
                    continue;
                  }
                  entries[q * std::size_t(ncomp) + std::size_t(c)].push_back(
                      {col, J[0] + s.ni(0) * (J[1] + s.ni(1) * J[2]), cc, v});
                }
              }
            });
          }
  }
  // Every rank has made the same applies; now all agree whether one of them failed.
  MPI_Allreduce(MPI_IN_PLACE, &lost_level, 1, MPI_INT, MPI_MAX, m.comm());
  if (lost_level > 0)
    throw Error(fmt::format(
        "solver: the composite matrix of the {} operator: a coefficient of level {} comes "
        "from no leaf zone within {} zones (probing failed); use solver.backend = "
        "\"tessera\"",
        name, lost_level, kReach));
  for (std::size_t q = 0; q < cells.size(); ++q)
    for (int c = 0; c < ncomp; ++c) {
      const auto& e = entries[q * std::size_t(ncomp) + std::size_t(c)];
      sink(cells[q].id, cells[q].zone, c, e.data(), static_cast<int>(e.size()));
    }
}

Rows composite_rows(mesh::Mesh& m, const Apply& A, const Rows& rows, const Field& x, const Field& y,
                    const std::string& name) {
  return [&m, A, rows, x, y, name](const RowSink& sink) {
    const auto& s = m.shape();
    std::map<int, Faces> faces;
    for (int id : m.local_leaves()) faces[id] = coarse_fine_faces(m, id);
    rows([&](int node, int zone, int comp, const Entry* e, int n) {
      if (!next_to(s, faces.at(node), zone_indices(s, zone), m.ndim()))
        sink(node, zone, comp, e, n);
    });
    probe_rows(m, A, x, y, sink, name);
  };
}

}  // namespace tessera::solvers

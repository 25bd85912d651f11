// The mesh's physical boundaries (outflow, reflecting; periodic is a neighbour) and the
// per-variable boundary fills a unit sets (see mesh.hpp).
#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "mesh/flux_register.hpp"
#include "mesh/mesh.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

namespace {
// One physical boundary (axis a, side) of one block: each guard layer m takes the zone
// that outflow (the edge zone) or reflection (the mirror zone) names; reflection flips
// the normal vector component. The guard slab spans the whole block on the other axes,
// so applying x, then y, then z fills edges and corners from already-filled zones.
template <Layout L>
void boundary_slab(const BlockView<L>& u, const BlockShape& s, int a, int side, Boundary bc,
                   const std::vector<VarInfo>& vars, const std::vector<VarRun>& runs,
                   const std::map<std::array<int, 3>, BoundaryFill>* own, const BlockGeom& geom) {
  const int nx = s.nx, ng = s.ng;
  const int b = a == 0 ? 1 : 0, c = a == 2 ? 1 : 2;  // the other two axes
  for (const auto& run : runs)
    for (int v = run.first; v < run.first + run.n; ++v) {
      if (own != nullptr) {
        if (const auto it = own->find({v, a, side}); it != own->end()) {
          GuardSlab g;
          g.axis = a;
          g.side = side;
          g.ng = ng;
          g.nx = nx;
          g.b = b;
          g.c = c;
          g.nb = s.n(b);
          g.nc = s.n(c);
          g.geom = geom;
          g.p0 = &u(v, 0, 0, 0);
          for (int d = 0; d < 3; ++d)
            g.st[d] = std::ptrdiff_t(u.offset(v, d == 0, d == 1, d == 2)) -
                      std::ptrdiff_t(u.offset(v, 0, 0, 0));
          it->second(g);
          continue;
        }
      }
      const double sign = bc == Boundary::reflecting && vars[v].vector_axis == a ? -1.0 : 1.0;
      for (int m = 0; m < ng; ++m) {
        int g[3], q[3];
        g[a] = side ? ng + nx + m : ng - 1 - m;
        q[a] =
            bc == Boundary::outflow ? (side ? ng + nx - 1 : ng) : (side ? ng + nx - 1 - m : ng + m);
        g[b] = q[b] = g[c] = q[c] = 0;
        // Offsets are linear in (i, j, k) in either layout: the guard zone is a fixed
        // distance from its source zone across the whole slab.
        const std::ptrdiff_t shift = std::ptrdiff_t(u.offset(v, g[0], g[1], g[2])) -
                                     std::ptrdiff_t(u.offset(v, q[0], q[1], q[2]));
        const std::ptrdiff_t sb = u.offset(v, b == 0, b == 1, b == 2) - u.offset(v, 0, 0, 0);
        const std::ptrdiff_t sc = u.offset(v, c == 0, c == 1, c == 2) - u.offset(v, 0, 0, 0);
        double* base = &u(v, q[0], q[1], q[2]);
        for (int y = 0; y < s.n(c); ++y)
          for (int x = 0; x < s.n(b); ++x) {
            double* src = base + y * sc + x * sb;
            src[shift] = sign * src[0];
          }
      }
    }
}
}  // namespace

void Mesh::apply_physical_bcs(int level, BlockStorage& st, const std::vector<VarInfo>& vars,
                              const std::vector<VarRun>& runs) {
  with_layout([&](auto tag) {
    for (int id : local_leaves_) {
      const Node& n = tree_.node(id);
      if (n.level != level) continue;
      const auto u = st.view(slot_[id], tag);
      for (int a = 0; a < ndim(); ++a)
        for (int side = 0; side < 2; ++side) {
          const Boundary bc = bc_[a][side];
          if (bc == Boundary::periodic) continue;
          const int edge = side ? tree_.geometry().nblocks_at(a, level) - 1 : 0;
          if (n.pos[a] != edge) continue;
          // The geometry only for the variables' own conditions (most runs have none).
          const auto* own = &st == &storage_ && !var_bcs_.empty() ? &var_bcs_ : nullptr;
          boundary_slab(u, st.shape(), a, side, bc, vars, runs, own,
                        own != nullptr ? geom(id) : BlockGeom{});
        }
    }
  });
}

void Mesh::set_var_boundary(int var, int axis, int side, BoundaryFill fill) {
  if (var < 0 || var >= static_cast<int>(vars_.size()) || axis < 0 || axis >= ndim() || side < 0 ||
      side > 1)
    throw Error("mesh: set_var_boundary(" + std::to_string(var) + ", " + std::to_string(axis) +
                ", " + std::to_string(side) + ") is outside the variables or the axes");
  if (bc_[axis][side] == Boundary::periodic)
    throw Error("mesh: variable '" + vars_[var].name + "' cannot have its own condition on the " +
                std::string(side ? "high " : "low ") + "xyz"[axis] + " face: it is periodic");
  var_bcs_[{var, axis, side}] = std::move(fill);
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

}  // namespace tessera::mesh

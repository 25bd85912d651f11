#include "particles/tracers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "mesh/mesh.hpp"
#include "perf/timers.hpp"

namespace tessera::particles {

Mapping parse_mapping(const std::string& s) {
  if (s == "cic") return Mapping::cic;
  if (s == "quadratic") return Mapping::quadratic;
  throw Error("particles.mapping: '" + s + "' is not one of cic, quadratic");
}

long placement_count(const Placement& p, int ndim) {
  if (p.random) return p.count;
  long n = 1;
  for (int a = 0; a < ndim; ++a) n *= p.lattice[a];
  return n;
}

namespace {

/// splitmix64 (Steele, Lea & Flood 2014): a counter-based generator, so particle t's
/// coordinates need no sequence and come out the same on any rank.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) from (seed, tag, axis): 53 random bits.
double uniform(std::uint64_t seed, std::uint64_t tag, int axis) {
  const std::uint64_t z = mix(mix(seed) ^ mix(tag * 4 + std::uint64_t(axis)));
  return double(z >> 11) * 0x1.0p-53;
}

/// The stencils of point x in block `geom` of shape s; throws if one leaves the array.
void stencils(Mapping mp, const double* x, const mesh::BlockGeom& geom, const mesh::BlockShape& s,
              Stencil1 (&st)[3]) {
  for (int a = 0; a < 3; ++a) {
    st[a] = Stencil1{};
    if (a >= s.ndim) continue;
    st[a] = stencil(mp, x[a], geom.lo[a], geom.dx[a], s.g(a));
    if (!fits(st[a], s.n(a)))
      throw Error(
          "particles: a particle's mapping stencil leaves its block's guard zones (it moved "
          "too far in one step: lower particles.dt_factor)");
  }
}

template <class View>
void velocity_at(Mapping mp, const View& u, const VelocityVars& vv, const mesh::BlockGeom& geom,
                 const mesh::BlockShape& s, const double* x, double* v) {
  Stencil1 st[3];
  stencils(mp, x, geom, s, st);
  for (int a = 0; a < 3; ++a) {
    if (vv.mom[a] < 0) {
      v[a] = 0;
      continue;
    }
    v[a] = interpolate(st[0], st[1], st[2], [&](int i, int j, int k) {
      return u(vv.mom[a], i, j, k) / u(vv.dens, i, j, k);
    });
  }
}

}  // namespace

void place(const mesh::Mesh& m, const Placement& p, ParticleSet& s) {
  const auto& t = m.tree();
  const auto& g = t.geometry();
  const int nd = g.ndim, self = m.rank();
  s.clear();
  std::vector<double> val(std::size_t(s.nprop()), 0.0);
  auto put = [&](const std::array<double, 3>& x, std::int64_t tag) {
    for (int a = 0; a < 3; ++a) val[std::size_t(POSX + a)] = x[a];
    s.push(val.data(), tag);
  };
  std::array<double, 3> centre{};
  for (int a = 0; a < 3; ++a) centre[a] = 0.5 * (g.lo[a] + g.hi[a]);
  if (p.random) {
    for (long tag = 1; tag <= p.count; ++tag) {
      std::array<double, 3> x = centre;
      for (int a = 0; a < nd; ++a)
        x[a] = p.lo[a] + uniform(p.seed, std::uint64_t(tag), a) * (p.hi[a] - p.lo[a]);
      const int id = locate(t, x);
      if (id >= 0 && t.node(id).owner == self) put(x, tag);
    }
  } else {
    std::array<double, 3> d{1, 1, 1};
    for (int a = 0; a < nd; ++a) d[a] = (p.hi[a] - p.lo[a]) / double(p.lattice[a]);
    for (int id : m.local_leaves()) {
      const auto blo = t.block_lo(id), w = t.block_size(id);
      std::array<long, 3> i0{0, 0, 0}, i1{1, 1, 1};
      for (int a = 0; a < nd; ++a) {
        // Candidates with a margin of one point; the lookup decides (faces go up).
        i0[a] = std::max(0L, long(std::floor((blo[a] - p.lo[a]) / d[a] - 0.5)) - 1);
        i1[a] = std::min(p.lattice[a], long(std::ceil((blo[a] + w[a] - p.lo[a]) / d[a])) + 1);
      }
      for (long k = i0[2]; k < i1[2]; ++k)
        for (long j = i0[1]; j < i1[1]; ++j)
          for (long i = i0[0]; i < i1[0]; ++i) {
            std::array<double, 3> x = centre;
            const long idx[3] = {i, j, k};
            for (int a = 0; a < nd; ++a) x[a] = p.lo[a] + (double(idx[a]) + 0.5) * d[a];
            if (locate(t, x) != id) continue;
            put(x, 1 + i + p.lattice[0] * (j + p.lattice[1] * k));
          }
    }
  }
  s.redistribute(m);  // nothing moves: it sets every particle's leaf and the order
}

void map_velocity(mesh::Mesh& m, Mapping mp, const VelocityVars& vv, ParticleSet& s) {
  const auto& sh = m.shape();
  double* pos[3] = {s.prop(POSX), s.prop(POSY), s.prop(POSZ)};
  double* vel[3] = {s.prop(VELX), s.prop(VELY), s.prop(VELZ)};
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& geom) {
    for (std::size_t i = s.begin(id); i < s.end(id); ++i) {
      const double x[3] = {pos[0][i], pos[1][i], pos[2][i]};
      double v[3];
      velocity_at(mp, u, vv, geom, sh, x, v);
      for (int a = 0; a < 3; ++a) vel[a][i] = v[a];
    }
  });
}

void heun_move(mesh::Mesh& m, Mapping mp, const VelocityVars& vv, double dt, ParticleSet& s) {
  const auto& sh = m.shape();
  const int nd = sh.ndim;
  double* pos[3] = {s.prop(POSX), s.prop(POSY), s.prop(POSZ)};
  double* vel[3] = {s.prop(VELX), s.prop(VELY), s.prop(VELZ)};
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& geom) {
    for (std::size_t i = s.begin(id); i < s.end(id); ++i) {
      // Predictor: Euler with the carried velocity; corrector: the mean of both slopes.
      double xs[3] = {pos[0][i], pos[1][i], pos[2][i]};
      for (int a = 0; a < nd; ++a) xs[a] = pos[a][i] + dt * vel[a][i];
      double vs[3];
      velocity_at(mp, u, vv, geom, sh, xs, vs);
      for (int a = 0; a < nd; ++a) pos[a][i] += 0.5 * dt * (vel[a][i] + vs[a]);
    }
  });
}

double max_dt(mesh::Mesh& m, const VelocityVars& vv, double factor) {
  double dt = std::numeric_limits<double>::max();
  const auto& sh = m.shape();
  const int i0 = sh.g(0), n = sh.ni(0);
  std::vector<double> inv(static_cast<std::size_t>(n)), q(static_cast<std::size_t>(n));
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& geom) {
    double rate = 0;  // max over zones of max_a |v_a| / dx_a
    for (int k = sh.g(2); k < sh.g(2) + sh.ni(2); ++k)
      for (int j = sh.g(1); j < sh.g(1) + sh.ni(1); ++j) {
        // One division per zone, then loops GCC vectorises, then the row's maximum.
        const auto dens = u.row(vv.dens, j, k) + i0;
        for (int i = 0; i < n; ++i) inv[i] = 1.0 / dens[i];
        for (int i = 0; i < n; ++i) q[i] = 0.0;
        for (int a = 0; a < sh.ndim; ++a) {
          if (vv.mom[a] < 0) continue;
          const auto mom = u.row(vv.mom[a], j, k) + i0;
          const double idx = 1.0 / geom.dx[a];
          for (int i = 0; i < n; ++i) q[i] = std::max(q[i], std::abs(mom[i]) * inv[i] * idx);
        }
        for (int i = 0; i < n; ++i) rate = std::max(rate, q[i]);
      }
    if (rate > 0) dt = std::min(dt, factor / rate);
  });
  return dt;
}

}  // namespace tessera::particles

#pragma once
// Passive tracer particles: placement and time integration over the block mesh, free of
// any physics unit (the unit physics/particles/ wires them into a run).
//
// Integration is FLASH's recommended Runge-Kutta (Heun) scheme for passive particles
// (Particles/ParticlesMain/passive/RungeKutta; verification.md §K):
//   x*      = x^n + dt v^n                      (v^n = v(x^n, t^n), carried by the particle)
//   x^{n+1} = x^n + dt/2 [v^n + v(x*, t^{n+1})]
//   v^{n+1} = v(x^{n+1}, t^{n+1})              (mapped after migration, carried to the next step)
// Particles move after the fluid, so the mesh holds t^{n+1}. v(x*) is mapped in the block
// holding x^n (its guard zones reach a dt-limited x*), v(x^{n+1}) in the block holding
// x^{n+1}: both are fixed by positions alone, so results do not depend on the rank count.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "particles/mapping.hpp"
#include "particles/particle_set.hpp"

namespace tessera::mesh {
class Mesh;
}

namespace tessera::particles {

/// Where the mesh velocity lives in unk: v = mom / dens.
struct VelocityVars {
  int dens = -1;
  int mom[3] = {-1, -1, -1};
};

/// The box particles are placed in and how.
struct Placement {
  std::array<double, 3> lo{}, hi{};      ///< placement box (inactive axes: ignored)
  std::array<long, 3> lattice{1, 1, 1};  ///< lattice: points per axis (cell-centred in the box)
  long count = 0;                        ///< random: total number
  std::uint64_t seed = 1;
  bool random = false;
};

/// Total particles a placement creates.
long placement_count(const Placement& p, int ndim);

/// Collective: clear `s` and create every particle of placement p that falls in a local
/// leaf, with zero velocity, tags 1..N (lattice: x fastest; random: the draw's number).
/// Each particle's position depends only on p and its tag (random: a counter-based hash
/// of (seed, tag, axis)), so every rank count creates the same particles.
void place(const mesh::Mesh& m, const Placement& p, ParticleSet& s);

/// Velocity of every local particle mapped from the mesh at its position (guard zones
/// must be filled). Throws if a particle's stencil leaves its block's array.
void map_velocity(mesh::Mesh& m, Mapping mp, const VelocityVars& vv, ParticleSet& s);

/// The Heun predictor and corrector for every local particle (guard zones filled at
/// t^{n+1}): positions to x^{n+1}. Call redistribute, then map_velocity, after it.
void heun_move(mesh::Mesh& m, Mapping mp, const VelocityVars& vv, double dt, ParticleSet& s);

/// Largest dt with which nothing moving with the fluid crosses more than `factor` zones
/// along any axis: factor * min over this rank's leaf zones of dx_a / |mom_a / dens|
/// (FLASH's pt_dtFactor limit, taken on the fluid the tracers follow rather than on their
/// carried velocities: it then depends on unk alone, which a checkpoint holds, and not on
/// whether the last move is complete).
double max_dt(mesh::Mesh& m, const VelocityVars& vv, double factor);

}  // namespace tessera::particles

#pragma once
// Initial particle loading for a PIC species: uniform placement of N particles per cell
// with a drift and a thermal spread, from a counter-based generator so that a particle's
// position (within its cell) and momentum depend only on (seed, tag): the same on any
// number of ranks and blocks, in any loading order. And the built-in species table
// (electron, positron, proton: name, charge, mass).
//
// References
//   Steele, G. L., Lea, D. & Flood, C. H. 2014, OOPSLA '14, 453: splitmix64 (the mixer
//     particles/tracers.cpp uses).
//   Box, G. E. P. & Muller, M. E. 1958, Ann. Math. Stat. 29, 610: normal deviates.
//   Birdsall & Langdon 1991, §16-2: quiet (regular) starts.
//
// Known limitation: the thermal spread is a Maxwellian in u = gamma v with spread u_th per
// component, right for k T << m c^2; a relativistic (Maxwell-Juttner) load is not here.
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "physics/pic/boris.hpp"
#include "physics/pic/constants.hpp"
#include "physics/pic/fields.hpp"

namespace tessera::pic {

/// A particle species: its name, charge (C) and mass (kg).
struct SpeciesInfo {
  std::string_view name;
  double charge = 0;
  double mass = 0;
};

/// The built-in species (CODATA 2018 constants.hpp): electron, positron, proton.
inline constexpr std::array<SpeciesInfo, 3> species_table{{
    {"electron", -constants::q_e, constants::m_e},
    {"positron", constants::q_e, constants::m_e},
    {"proton", constants::q_e, constants::m_p},
}};

/// The entry of species_table named `name`, or null.
constexpr const SpeciesInfo* find_species(std::string_view name) {
  for (const auto& s : species_table)
    if (s.name == name) return &s;
  return nullptr;
}

/// The factor by which a species' velocity response to a field exceeds the electron's,
/// (q / m) / (-q_e / m_e): the cold two-species Langmuir normal mode has u_s = this times
/// u_e (1 for electrons, -1 for positrons, -m_e/m_p for protons).
constexpr double response_factor(const SpeciesInfo& s) {
  return -s.charge / constants::q_e * (constants::m_e / s.mass);
}

/// splitmix64's output function (Steele et al. 2014) applied to z.
constexpr std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// Uniform in [0, 1) from (seed, tag, stream), 53 random bits; stream < 64.
constexpr double uniform01(std::uint64_t seed, std::uint64_t tag, unsigned stream) {
  const std::uint64_t z = splitmix64(splitmix64(seed) ^ splitmix64(tag * 64 + stream));
  return double(z >> 11) * 0x1.0p-53;
}

/// Standard normal deviate from (seed, tag, stream) by Box-Muller; stream < 16.
inline double normal01(std::uint64_t seed, std::uint64_t tag, unsigned stream) {
  const double u1 = 1.0 - uniform01(seed, tag, 32 + 2 * stream);  // (0, 1]
  const double u2 = uniform01(seed, tag, 33 + 2 * stream);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * constants::pi * u2);
}

/// A uniform plasma: density, drift and thermal spread of u = gamma v, particles per cell.
struct PlasmaLoad {
  double density = 0;             ///< physical particles per m^3
  Vec3 u_drift{0, 0, 0};          ///< m/s
  Vec3 u_th{0, 0, 0};             ///< m/s, standard deviation per component (sqrt(kT/m))
  int per_axis = 1;               ///< particles per cell along each active axis
  bool random_positions = false;  ///< uniform random in the cell, else a regular lattice
};

/// Particles per cell of a load in D dimensions: per_axis^D.
template <int D>
constexpr int particles_per_cell(const PlasmaLoad& p) {
  int n = 1;
  for (int a = 0; a < D; ++a) n *= p.per_axis;
  return n;
}

/// Macro-particle weight (physical particles per macro-particle) of load p on grid g.
template <int D>
double macro_weight(const PlasmaLoad& p, const Grid& g) {
  return p.density * g.volume() / particles_per_cell<D>(p);
}

/// Where a block array's cells sit in the domain, so that tags are global: array index 0
/// of the block is domain cell `offset` (the block's first interior cell minus g on active
/// axes), and the domain has `cells` cells per axis (1 on inactive axes).
struct CellNumbering {
  std::array<std::int64_t, 3> offset{0, 0, 0};
  std::array<std::int64_t, 3> cells{1, 1, 1};
};

/// Call emit(tag, x, u) for every particle of load p in the cells of box `box` (array
/// indices of g). Tags are first_tag + (domain cell number, x fastest) * ppc + particle
/// number in the cell, and a particle's place in its cell and its u depend only on (seed,
/// tag): the same particles come out however the domain is split into blocks. Along
/// inactive axes x is x0 of g. Returns the count.
template <int D, class Emit>
std::int64_t load_uniform(const Grid& g, const Box& box, const CellNumbering& num,
                          const PlasmaLoad& p, std::uint64_t seed, std::int64_t first_tag,
                          Emit&& emit) {
  const int ppc = particles_per_cell<D>(p);
  const int m = p.per_axis;
  std::int64_t count = 0;
  for (int k = box.lo[2]; k < box.hi[2]; ++k)
    for (int j = box.lo[1]; j < box.hi[1]; ++j)
      for (int i = box.lo[0]; i < box.hi[0]; ++i) {
        const std::int64_t cell =
            (num.offset[0] + i) +
            num.cells[0] * ((num.offset[1] + j) + num.cells[1] * (num.offset[2] + k));
        for (int n = 0; n < ppc; ++n, ++count) {
          const std::int64_t tag = first_tag + cell * ppc + n;
          const std::uint64_t t = static_cast<std::uint64_t>(tag);
          const int idx[3] = {i, j, k};
          const int sub[3] = {n % m, (n / m) % m, n / (m * m)};
          Vec3 x{g.x0[0], g.x0[1], g.x0[2]};
          for (int a = 0; a < D; ++a) {
            const double f = p.random_positions ? uniform01(seed, t, a) : (sub[a] + 0.5) / m;
            x[a] = g.x0[a] + (idx[a] + f) * g.dx[a];
          }
          Vec3 u;
          for (int a = 0; a < 3; ++a) u[a] = p.u_drift[a] + p.u_th[a] * normal01(seed, t, a);
          emit(tag, x, u);
        }
      }
  return count;
}

}  // namespace tessera::pic

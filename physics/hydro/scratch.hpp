#pragma once
// The work arrays of one hydro block update (Hydro::Scratch), carved from one arena.
#include <cstddef>
#include <vector>

#include "memory/arena.hpp"
#include "mesh/mesh.hpp"
#include "physics/hydro/hydro.hpp"

namespace tessera::hydro {

// Work arrays of one block update, carved from one arena ("scratch", 64-byte aligned
// pieces: with n0 a multiple of 4 every x-row of W and of the row buffers then starts on
// a 32-byte boundary, so no AVX load splits a cache line). Sized once for the mesh's
// block shape and the number of mass scalars; no allocation in a step. NR = 5 + scalars
// reconstructed channels (rho, vx, vy, vz, p, X...); W adds gamc and game.
struct Hydro::Scratch {
  memory::ArenaConfig cfg;
  memory::Arena arena;
  double* w = nullptr;           // primitives [NR + 2][N]: rho, vx, vy, vz, p, X..., gamc,
                                 // 1/(game-1)
  double* slope = nullptr;       // this row's limited slopes [3 axes][NR][n0] (PPM: [NR][n0 + 2])
  double* half = nullptr;        // this row's Hancock half-step state [NR][n0]
  double* lo = nullptr;          // this row's low-face states along one axis [NR][n0]
  double* hi = nullptr;          // this row's high-face states along x [NR][n0]
  double* hi_y = nullptr;        // high-face states along y of rows j-1 and j [2][NR][n0]
  double* hi_z = nullptr;        // high-face states along z of planes k-1 and k [2][n1][NR][n0]
  double* flux = nullptr;        // fluxes through one row of faces [NR][fn]
  double* row = nullptr;         // a row of interior zones per variable [7][n0]: the time-step
                                 // rate; zone-major's update (BlockUpdate::update)
  double* gz = nullptr;          // guard-zone EOS pencil [6][ngz]: dens eint temp pres gamc game
  double* geo = nullptr;         // curvilinear radial factors [3][n0]: dt A-/V, dt A+/V, alpha dr/r
  std::vector<int> guard_cells;  // cell numbers of the guard zones (EOS evaluated there)
  std::size_t n = 0;
  int nr = 5;
  int fn = 0;  // flux row stride: n0 + 1 faces, rounded up to a multiple of 4
  /// Doubles of each piece for N cells, rows of n0, n1 rows per plane, nr channels.
  static std::vector<std::size_t> sizes(std::size_t cells, int n0, int n1, int nr,
                                        std::size_t guards) {
    const std::size_t r = std::size_t(nr) * std::size_t(n0);
    const std::size_t fn = std::size_t((n0 + 1 + 3) / 4 * 4);
    return {std::size_t(nr + 2) * cells,
            3 * r,
            r,
            r,
            r,
            2 * r,
            2 * std::size_t(n1) * r,
            std::size_t(nr) * fn,
            7 * std::size_t(n0),
            6 * guards,
            3 * std::size_t(n0)};
  }
  static std::size_t bytes(const std::vector<std::size_t>& sz) {
    std::size_t total = 0;
    for (std::size_t x : sz) total += (x + 7) / 8 * 8;  // 8 doubles = 64 bytes
    return total * sizeof(double);
  }
  void resize(const mesh::BlockShape& s, int nscalars) {
    const std::size_t cells = s.cells();
    const int n0 = s.n(0), n1 = s.n(1);
    if (n == cells && nr == 5 + nscalars && arena.data()) return;
    n = cells;
    nr = 5 + nscalars;
    fn = (n0 + 1 + 3) / 4 * 4;
    guard_cells.clear();
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) {
          const int idx[3] = {i, j, k};
          bool inside = true;
          for (int a = 0; a < s.ndim; ++a) inside &= idx[a] >= s.ng && idx[a] < s.ng + s.nx;
          if (!inside) guard_cells.push_back(int((std::size_t(k) * n1 + j) * n0 + i));
        }
    const auto sz = sizes(cells, n0, n1, nr, guard_cells.size());
    double** parts[] = {&w, &slope, &half, &lo, &hi, &hi_y, &hi_z, &flux, &row, &gz, &geo};
    arena = memory::Arena("scratch", bytes(sz), cfg);  // zero-filled
    double* p = static_cast<double*>(arena.data());
    for (std::size_t i = 0; i < sz.size(); ++i) {
      *parts[i] = p;
      p += (sz[i] + 7) / 8 * 8;
    }
  }
};

}  // namespace tessera::hydro

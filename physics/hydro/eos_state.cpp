// The hydro unit's EOS state in unk: eint and the EOS after each stage, the gamma law's
// deferred refresh (sync), the EOS state of guard zones for refinement marking, and mass
// scalars between X and rho*X.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/simd.hpp"
#include "mesh/flux_register.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/hydro/scratch.hpp"

namespace tessera::hydro {

template <mesh::Layout L>
void Hydro::refresh_row(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node, int j,
                        int k) const {
  const auto d = u.row(DENS, j, k), mx = u.row(MOMX, j, k), my = u.row(MOMY, j, k),
             mz = u.row(MOMZ, j, k), e = u.row(ETOT, j, k);
  auto ei = u.row(at_.eint, j, k);
  for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
    const double ir = 1.0 / d[i];
    const double vx = mx[i] * ir, vy = my[i] * ir, vz = mz[i] * ir;
    ei[i] = e[i] * ir - 0.5 * (vx * vx + vy * vy + vz * vz);
  }
  if (eos_->update_row(u, s, node, j, k, eos::Mode::dens_ei) == 0) return;
  // The EOS's cold floor raised eint in some zones (those whose eint differs from the one
  // computed above): etot follows, so the state stays consistent (energy is added there).
  for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
    const double ir = 1.0 / d[i];
    const double vx = mx[i] * ir, vy = my[i] * ir, vz = mz[i] * ir;
    const double ke = 0.5 * (vx * vx + vy * vy + vz * vz);
    if (ei[i] != e[i] * ir - ke) e[i] = d[i] * (ei[i] + ke);
  }
}

template <mesh::Layout L>
void Hydro::refresh_block(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node) const {
  // Row by row: eint from the conserved variables, then the EOS on the same row (in L1).
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) refresh_row(u, s, node, j, k);
}

void Hydro::refresh_thermo(mesh::Mesh& m) {
  TESSERA_REGION("eos");
  stale_ = false;
  m.for_each_leaf(
      [&](int id, const auto& u, const mesh::BlockGeom&) { refresh_block(u, m.shape(), id); });
}

void Hydro::scalars_to_conserved(mesh::Mesh& m, bool to_conserved) {
  if (at_.scalars.empty()) return;
  // The mass scalars (guard-filled) change: the next fill must move them (dens and the
  // momenta before them keep what a fill left current: the tracers' move).
  m.invalidate_guards(*std::min_element(at_.scalars.begin(), at_.scalars.end()));
  const auto& s = m.shape();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    for (int q : at_.scalars)
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        if (to_conserved)
          u(q, i, j, k) *= u(DENS, i, j, k);
        else
          u(q, i, j, k) /= u(DENS, i, j, k);
      });
  });
  if (comp_) comp_->set_conserved(to_conserved);
}

void Hydro::fill_guard_state(mesh::Mesh& m) {
  const auto& s = m.shape();
  Scratch& S = *scratch_;
  const std::size_t ng = S.guard_cells.size();
  const int* gcell = S.guard_cells.data();
  double* gd = S.gz;
  double* ge = gd + ng;
  double* gt = ge + ng;
  double* gp = gt + ng;
  double* ggc = gp + ng;
  double* gge = ggc + ng;
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    const auto d = u.row(DENS, 0, 0), mx = u.row(MOMX, 0, 0), my = u.row(MOMY, 0, 0),
               mz = u.row(MOMZ, 0, 0), e = u.row(ETOT, 0, 0);
    for (std::size_t q = 0; q < ng; ++q) {
      const int c = gcell[q];
      const double ir = 1.0 / d[c];
      const double vx = mx[c] * ir, vy = my[c] * ir, vz = mz[c] * ir;
      gd[q] = d[c];
      ge[q] = e[c] * ir - 0.5 * (vx * vx + vy * vy + vz * vz);
    }
    eos_->eval_cells(u, s, gcell, ng, gd, ge, gt, gp, ggc, gge);
    const auto pr = u.row(at_.pres, 0, 0), te = u.row(at_.temp, 0, 0), gc = u.row(at_.gamc, 0, 0),
               gm = u.row(at_.game, 0, 0), ei = u.row(at_.eint, 0, 0);
    for (std::size_t q = 0; q < ng; ++q) {
      const int c = gcell[q];
      pr[c] = gp[q];
      te[c] = gt[q];
      gc[c] = ggc[q];
      gm[c] = gge[q];
      ei[c] = ge[q];
    }
  });
}

void Hydro::sync(mesh::Mesh& m) {
  if (!stale_) return;
  refresh_thermo(m);
}

// step.cpp's update refreshes rows and blocks as it finishes them.
template void Hydro::refresh_row(const mesh::BlockView<mesh::Layout::var_major>&,
                                 const mesh::BlockShape&, int, int, int) const;
template void Hydro::refresh_row(const mesh::BlockView<mesh::Layout::zone_major>&,
                                 const mesh::BlockShape&, int, int, int) const;
template void Hydro::refresh_block(const mesh::BlockView<mesh::Layout::var_major>&,
                                   const mesh::BlockShape&, int) const;
template void Hydro::refresh_block(const mesh::BlockView<mesh::Layout::zone_major>&,
                                   const mesh::BlockShape&, int) const;

}  // namespace tessera::hydro

// The hydro unit's step: guard fills, the block update of every leaf (block_update.hpp)
// per stage, flux correction, the EOS state after each stage, the rate and check as the
// step finishes rows and leaves (one-stage sweep), the Runge-Kutta stages' blends.
// References: Toro (2009) §14.4; Colella (1990); Shu & Osher (1988).
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
#include "physics/hydro/block_update.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/hydro/scratch.hpp"

namespace tessera::hydro {

using namespace detail;

void Hydro::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("hydro");
  const auto& s = m.shape();
  const std::size_t per = s.doubles();
  auto& fr = m.flux_register();
  scalars_to_conserved(m, true);
  // The gravity unit's field of this block (the density at the start of the step), or
  // null without gravity in the step.
  auto field = [&](const auto& u) -> const double* {
    if (grav_ == nullptr) return nullptr;
    const std::size_t N = s.cells();
    for (int a = 0; a < s.ndim; ++a) {
      const auto g = u.row(at_.gac[a], 0, 0);
      double* out = gfield_.data() + std::size_t(a) * N;
      for (std::size_t c = 0; c < N; ++c) out[c] = g[c];
    }
    return gfield_.data();
  };
  // The gravity unit's face mass fluxes of a block (stage weight w, added or set).
  auto mass_out = [&](int slot, double w, bool add) {
    MassFluxOut mo;
    if (mflux_ == nullptr) return mo;
    mo.f = mflux_->mass_fluxes(slot);
    mo.layout = &mflux_->face_layout();
    mo.w = w;
    mo.add = add;
    return mo;
  };
  // One sweep over the leaves, then flux correction. row(id, u, bg, j, k) runs for every
  // interior row as soon as its update is complete (update_block's hook), corrected(b, id,
  // u, bg) for each leaf (b: its place in for_each_leaf order) flux correction changed.
  const auto none = [](auto&&...) {};
  auto sweep = [&](bool predictor, double w, bool add, auto&& row, auto&& corrected) {
    m.fill_guards();
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
      const int slot = m.slot(id);
      BoundaryFluxes out{{}, fr.per_var()};
      for (int f = 0; f < 6; ++f) out.face[f] = fr.face(slot, f);
      update_block(u, s, bg, opt_, at_, dt, predictor, *scratch_, out, mass_out(slot, w, add),
                   field(u), [&](int j, int k) { row(id, u, bg, j, k); });
    });
    fr.correct(m.storage(), m.tree(), m.comm(), dt, at_.flux, mflux_ != nullptr);
    if (mflux_) store_boundary_mass_fluxes(m, w, add);
    if (!fr.corrected_slots().empty()) {
      std::size_t b = 0;
      m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
        if (std::binary_search(fr.corrected_slots().begin(), fr.corrected_slots().end(),
                               m.slot(id)))
          corrected(b, id, u, bg);
        ++b;
      });
    }
  };
  // The EOS after the last stage sees X again (normalised species). A uniform-gamma
  // EOS's state waits for sync(): the kernels do not read it.
  auto finish = [&] {
    scalars_to_conserved(m, false);
    if (comp_) comp_->normalise(m);
    if (at_.uniform)
      stale_ = true;
    else
      refresh_thermo(m);
  };
  swept_.stamp = {};
  if (opt_.integrator == Integrator::hancock && swept_checkable(m)) {
    // One stage, uniform gamma, no mass scalars, Cartesian, hydro the last operator: each
    // interior row gets check()'s test and its time-step rate as soon as its update is
    // complete, while it is in cache (timed inside "fluxes"), and the blocks that flux
    // correction changes afterwards get them again; check() takes the result (swept_)
    // unless the leaves change first. That is a pass over the leaves' conserved variables
    // less per step. The same bad zone and the same rate bits as check()'s own pass (max is
    // exact in any order).
    swept_.leaves.clear();
    double idx[3] = {0.0, 0.0, 0.0};  // 1/dx of the leaf being swept
    sweep(
        true, 1.0, false,
        [&](int id, const auto& u, const mesh::BlockGeom& bg, int j, int k) {
          if (swept_.leaves.empty() || swept_.leaves.back().id != id) {  // the leaf's first row
            swept_.leaves.push_back({});
            swept_.leaves.back().id = id;
            for (int a = 0; a < 3; ++a) idx[a] = a < s.ndim ? 1.0 / bg.dx[a] : 0.0;
          }
          swept_row(u, s, j, k, idx, swept_.leaves.back());
        },
        [&](std::size_t b, int id, const auto& u, const mesh::BlockGeom& bg) {
          swept_.leaves[b] = swept_leaf(u, s, bg, id);
        });
    finish();
    if (mflux_) mflux_->mass_fluxes_written();
    swept_.stamp = StateStamp::of(m);
    return;
  }
  if (opt_.integrator == Integrator::hancock && at_.uniform) {
    sweep(true, 1.0, false, none, none);
    finish();
    if (mflux_) mflux_->mass_fluxes_written();
    return;
  }
  if (opt_.integrator == Integrator::hancock && at_.scalars.empty()) {
    // One stage and no mass scalars: each zone row's EOS state is refreshed as soon as its
    // update is complete, while it is in cache (timed inside "fluxes"), and again for the
    // blocks that flux correction changes afterwards. The same values as
    // refresh_thermo() after the sweep.
    sweep(
        true, 1.0, false,
        [&](int id, const auto& u, const mesh::BlockGeom&, int j, int k) {
          refresh_row(u, s, id, j, k);
        },
        [&](std::size_t, int id, const auto& u, const mesh::BlockGeom&) {
          TESSERA_REGION("eos");
          refresh_block(u, s, id);
        });
    if (mflux_) mflux_->mass_fluxes_written();
    return;
  }
  if (opt_.integrator == Integrator::hancock) {
    sweep(true, 1.0, false, none, none);
    finish();
    if (mflux_) mflux_->mass_fluxes_written();
    return;
  }
  // SSP Runge-Kutta: U^(s) = a_s U^n + b_s (U^(s-1) + dt L(U^(s-1))). Whole-block copies
  // and blends (guard zones too) of the ranges rk_ranges_ holds: in var-major storage every
  // variable but the derived ones (a gamma law's EOS state, 5 of sedov_3d_uniform's 10
  // variables), which are recomputed from the blended state (refresh_thermo, or sync()
  // while flagged stale) before anything reads them. The EOS state follows each stage.
  static const double rk2[2][2] = {{0.0, 1.0}, {0.5, 0.5}};
  static const double rk3[3][2] = {{0.0, 1.0}, {0.75, 0.25}, {1.0 / 3.0, 2.0 / 3.0}};
  const int ns = stages();
  const auto& leaves = m.local_leaves();
  double* const u0 = static_cast<double*>(u0_.data());
  for (std::size_t b = 0; b < leaves.size(); ++b) {
    const double* src = m.storage().data(m.slot(leaves[b]));
    for (const auto& [at, n] : rk_ranges_) std::copy(src + at, src + at + n, u0 + b * per + at);
  }
  for (int st = 0; st < ns; ++st) {
    const double a = ns == 2 ? rk2[st][0] : rk3[st][0];
    const double b = ns == 2 ? rk2[st][1] : rk3[st][1];
    // This stage's weight in the step's effective flux: the b of every stage from it on.
    double w = 1.0;
    for (int later = st; later < ns; ++later) w *= ns == 2 ? rk2[later][1] : rk3[later][1];
    sweep(false, w, st > 0, none, none);
    // The last stage's blend is the step's last write to a block: with a uniform gamma, no
    // mass scalars and Cartesian geometry, check()'s test and the time-step rate follow it
    // block by block while the block is in cache, as the one-stage sweep does row by row.
    const bool check_here = st + 1 == ns && st > 0 && swept_checkable(m);
    if (check_here) swept_.leaves.clear();
    if (st > 0) {
      for (std::size_t bl = 0; bl < leaves.size(); ++bl) {
        double* q = m.storage().data(m.slot(leaves[bl]));
        const double* q0 = u0 + bl * per;
        for (const auto& [at, n] : rk_ranges_)
          for (std::size_t c = at; c < at + n; ++c) q[c] = a * q0[c] + b * q[c];
        if (check_here)
          m.with_layout([&](auto tag) {
            const int id = leaves[bl];
            swept_.leaves.push_back(swept_leaf(m.view(id, tag), s, m.geom(id), id));
          });
      }
    }
    if (st + 1 < ns && !at_.uniform) refresh_thermo(m);
  }
  finish();
  if (mflux_) mflux_->mass_fluxes_written();
  if (ns > 1 && swept_checkable(m)) swept_.stamp = StateStamp::of(m);
}

}  // namespace tessera::hydro

#pragma once
// What the PIC unit's files share (pic_unit.cpp the unit and its step, pic_diagnostics.cpp
// the energies and the charge error, pic_restart.cpp the restart and the memory plan): the
// property indices, a block's grid and boxes, views of its fields, and the dispatch on the
// dimension and shape order. Internal linkage (an anonymous namespace), as when they lived
// in pic_unit.cpp: each of the three files has its own copy.
#include <algorithm>
#include <cmath>

#include "mesh/mesh.hpp"
#include "particles/particle_set.hpp"
#include "physics/pic/absorbing.hpp"
#include "physics/pic/kernels_simd.hpp"
#include "physics/pic/pic.hpp"
#include "physics/pic/pic_unit.hpp"
#include "physics/pic/pulse.hpp"

namespace tessera::pic {
namespace {
namespace cst = constants;

/// The particle properties after the base ones: the macro-particle weight and the type.
constexpr int kWeight = particles::NBASE, kType = particles::NBASE + 1;

/// The Grid (node-0 position, cell size) of a block: lengths of 1 m along inactive axes.
inline Grid grid_of(const mesh::Mesh& m, int id) {
  const mesh::BlockGeom bg = m.geom(id);
  const auto& s = m.shape();
  Grid g;
  for (int a = 0; a < 3; ++a) {
    if (a < m.ndim()) {
      g.dx[a] = bg.dx[a];
      g.x0[a] = bg.lo[a] - s.g(a) * bg.dx[a];
    } else {
      g.dx[a] = 1.0;
      g.x0[a] = m.tree().geometry().lo[a];
    }
  }
  return g;
}

/// The whole block array (inactive axes [0, 1)).
inline Box all_of(const mesh::BlockShape& s) {
  Box b;
  for (int a = 0; a < 3; ++a) b.lo[a] = 0, b.hi[a] = a < s.ndim ? s.n(a) : 1;
  return b;
}

/// The whole block array but its last layer along active axes: where a B half step can
/// run once E's guards are current (advance_b reads E at +1).
inline Box all_but_last(const mesh::BlockShape& s) {
  Box b;
  for (int a = 0; a < 3; ++a) b.lo[a] = 0, b.hi[a] = a < s.ndim ? s.n(a) - 1 : 1;
  return b;
}

template <class View>
EMFields em_of(const View& u, int ie, int ib) {
  return {field_of(u, ie), field_of(u, ie + 1), field_of(u, ie + 2),
          field_of(u, ib), field_of(u, ib + 1), field_of(u, ib + 2)};
}

template <class View>
Currents j_of(const View& u, int ij) {
  return {field_of(u, ij), field_of(u, ij + 1), field_of(u, ij + 2)};
}

/// f.template operator()<D>() for the run's dimension.
template <class F>
void dispatch_d(int ndim, F&& f) {
  if (ndim == 1)
    f.template operator()<1>();
  else if (ndim == 2)
    f.template operator()<2>();
  else
    f.template operator()<3>();
}

/// f.template operator()<D, P, S>() for the run's dimension, order and gather.
template <class F>
void dispatch(int ndim, int order, bool energy, F&& f) {
  auto with_s = [&]<int D, int P>() {
    if (energy)
      f.template operator()<D, P, GatherScheme::energy_conserving>();
    else
      f.template operator()<D, P, GatherScheme::momentum_conserving>();
  };
  auto with_p = [&]<int D>() {
    if (order == 1)
      with_s.template operator()<D, 1>();
    else if (order == 2)
      with_s.template operator()<D, 2>();
    else
      with_s.template operator()<D, 3>();
  };
  dispatch_d(ndim, with_p);
}
}  // namespace
}  // namespace tessera::pic

// The hydro unit's time-step rate and state check: the rate of a leaf, the rate and check
// the step takes as it finishes rows and leaves (swept_*), the kept rate while the leaves
// have not changed (StateStamp, max_dt), and check.
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
#include "physics/hydro/rate_kernels.hpp"
#include "physics/hydro/scratch.hpp"

namespace tessera::hydro {

using namespace detail;

template <class View>
double Hydro::leaf_rate(const View& u, const mesh::BlockShape& s, const mesh::BlockGeom& bg) const {
  const int nd = s.ndim;
  const double idx[3] = {1.0 / bg.dx[0], nd > 1 ? 1.0 / bg.dx[1] : 0.0,
                         nd > 2 ? 1.0 / bg.dx[2] : 0.0};
  const double* rad = nullptr;
  if (bg.geometry != mesh::Geometry::cartesian) {
    double* r = scratch_->geo;  // per interior zone i: max(A-, A+) / V per unit length
    for (int i = 0; i < s.ni(0); ++i) {
      const double r0 = bg.lo[0] + i * bg.dx[0], r1 = r0 + bg.dx[0];
      r[i] = std::max(mesh::geometry::radial_area(bg.geometry, r0),
                      mesh::geometry::radial_area(bg.geometry, r1)) /
             mesh::geometry::shell_volume(bg.geometry, r0, r1);
    }
    rad = r;
  }
  double* buf = scratch_->row;
  return at_.uniform
             ? max_rate<true>(u, s, idx, at_.pres, at_.gamc, at_.ugamc, at_.ugame - 1.0,
                              opt_.smallp, buf, rad)
             : max_rate<false>(u, s, idx, at_.pres, at_.gamc, 0.0, 0.0, opt_.smallp, buf, rad);
}

template <class View>
void Hydro::swept_row(const View& u, const mesh::BlockShape& s, int j, int k, const double idx[3],
                      SweptLeaf& leaf) const {
  const double gm1 = at_.ugame - 1.0;
  bool flagged = false;
  leaf.rate =
      std::max(leaf.rate, row_rate<true>(u, s, j, k, idx, at_.pres, at_.gamc, at_.ugamc, gm1,
                                         opt_.smallp, scratch_->row, nullptr, &flagged));
  if (flagged && !leaf.bad.bad()) {
    leaf.bad = check_row<true>(u, s, j, k, at_.pres, gm1);
    if (leaf.bad.bad()) leaf.bad.node = leaf.id;
  }
}

template <class View>
Hydro::SweptLeaf Hydro::swept_leaf(const View& u, const mesh::BlockShape& s,
                                   const mesh::BlockGeom& bg, int id) const {
  const int nd = s.ndim;
  const double idx[3] = {1.0 / bg.dx[0], nd > 1 ? 1.0 / bg.dx[1] : 0.0,
                         nd > 2 ? 1.0 / bg.dx[2] : 0.0};
  SweptLeaf leaf;
  leaf.id = id;
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) swept_row(u, s, j, k, idx, leaf);
  return leaf;
}

Hydro::StateStamp Hydro::StateStamp::of(const mesh::Mesh& m) {
  return {&m, m.state_epoch(), tessera::simd::current().name};
}

bool Hydro::StateStamp::matches(const mesh::Mesh& m) const {
  return mesh == &m && epoch == m.state_epoch() && target == tessera::simd::current().name;
}

double Hydro::max_dt(mesh::Mesh& m) const {
  // check() saw these leaves (the same mesh, state epoch and SIMD target): its maximum.
  const bool kept = at_.uniform && checked_rate_.stamp.matches(m);
  double rate = 0.0;  // max over zones of sum_a (|u_a| + c) / dx_a
  if (!kept || verify_kept_rate_)
    m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& bg) {
      rate = std::max(rate, leaf_rate(u, m.shape(), bg));
    });
  if (kept && verify_kept_rate_ &&
      std::bit_cast<std::uint64_t>(rate) != std::bit_cast<std::uint64_t>(checked_rate_.rate))
    throw Error(fmt::format(
        "hydro.verify_kept_rate: the time-step rate kept from the last check ({:.17g}) is not "
        "the leaves' now ({:.17g}): unk changed without Mesh::touch_state",
        checked_rate_.rate, rate));
  if (kept) rate = checked_rate_.rate;
  return rate > 0.0 ? opt_.cfl / rate : std::numeric_limits<double>::max();
}

physics::BadZone Hydro::check(mesh::Mesh& m) const {
  physics::BadZone bad;
  if (m.geometry() != mesh::Geometry::cartesian && !rotation_checked_) {
    // No centrifugal or Coriolis terms: momentum about the axis (v_phi) is not modelled.
    // Checked once (the driver checks the initial state): with none at the start the
    // update creates none (its flux is rho u v_phi).
    rotation_checked_ = true;
    const auto& s = m.shape();
    const int first = m.geometry() == mesh::Geometry::cylindrical ? MOMZ : MOMY;
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
      if (bad.bad()) return;
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (int v = first; v <= MOMZ && !bad.bad(); ++v)
          if (u(v, i, j, k) != 0.0) {
            bad = {id,
                   i - s.g(0),
                   j - s.g(1),
                   k - s.g(2),
                   u(v, i, j, k),
                   std::string(v == MOMZ ? "momz" : "momy") + " is not zero: rotation and " +
                       "transverse motion are not modelled in " +
                       mesh::geometry_name(m.geometry()) + " geometry (no centrifugal terms)",
                   true};
          }
      });
    });
    if (bad.bad()) return bad;
  }
  // The step checked the leaves as it finished them (advance: the one-stage sweep row by
  // row, Runge-Kutta block by block after its last blend; swept_checkable): its result
  // stands while nothing has written the leaves since (the driver advances the state
  // epoch before every operator that writes unk).
  const bool swept = swept_.stamp.matches(m) && swept_.leaves.size() == m.local_leaves().size();
  double rate = 0.0;
  if (swept) {
    for (const SweptLeaf& l : swept_.leaves) {
      if (l.bad.bad()) {
        bad = l.bad;
        break;
      }
      rate = std::max(rate, l.rate);
    }
    if (verify_kept_rate_) {
      // Leaf by leaf: a leaf the sweep saw otherwise than it is now (flux correction after
      // the sweep, say) shows even where it holds neither the bad zone nor the maximum.
      const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
      std::size_t b = 0;
      m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
        const SweptLeaf& l = swept_.leaves[b++];
        physics::BadZone z = check_block<true>(u, m.shape(), at_.pres, at_.ugame - 1.0);
        if (z.bad()) z.node = id;
        const double own = leaf_rate(u, m.shape(), bg);
        if (l.id != id || z.node != l.bad.node || z.i != l.bad.i || z.j != l.bad.j ||
            z.k != l.bad.k || z.what != l.bad.what || bits(z.value) != bits(l.bad.value) ||
            bits(own) != bits(l.rate))
          throw Error(fmt::format(
              "hydro.verify_kept_rate: what the sweep found in leaf {} ({}, rate {:.17g}) is "
              "not what the leaf holds now ({}, rate {:.17g}): unk changed without "
              "Mesh::touch_state",
              id + 1, l.bad.bad() ? l.bad.what : "good", l.rate, z.bad() ? z.what : "good", own));
      });
    }
  } else {
    bad = check_leaves(m, rate);
  }
  if (at_.uniform && !bad.bad()) checked_rate_ = {StateStamp::of(m), rate};
  return bad;
}

physics::BadZone Hydro::check_leaves(mesh::Mesh& m, double& rate) const {
  // With a uniform gamma the time-step rate reads the conserved variables alone (its
  // pressure is recomputed), which a good state's check has just brought into cache: the
  // next max_dt takes it from here unless the leaves change first (Mesh::state_epoch).
  physics::BadZone bad;
  rate = 0.0;
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
    if (bad.node >= 0) return;
    physics::BadZone z = at_.uniform ? check_block<true>(u, m.shape(), at_.pres, at_.ugame - 1.0)
                                     : check_block<false>(u, m.shape(), at_.pres, 0.0);
    if (!z.what.empty()) {
      z.node = id;
      bad = z;
      return;
    }
    if (at_.uniform) rate = std::max(rate, leaf_rate(u, m.shape(), bg));
  });
  return bad;
}

// step.cpp's sweep takes the rate and the check of each row or leaf as it finishes it.
#define TESSERA_HYDRO_RATE_INSTANCES(L)                                                           \
  template double Hydro::leaf_rate(const mesh::BlockView<L>&, const mesh::BlockShape&,            \
                                   const mesh::BlockGeom&) const;                                 \
  template void Hydro::swept_row(const mesh::BlockView<L>&, const mesh::BlockShape&, int, int,    \
                                 const double[3], SweptLeaf&) const;                              \
  template Hydro::SweptLeaf Hydro::swept_leaf(const mesh::BlockView<L>&, const mesh::BlockShape&, \
                                              const mesh::BlockGeom&, int) const;
TESSERA_HYDRO_RATE_INSTANCES(mesh::Layout::var_major)
TESSERA_HYDRO_RATE_INSTANCES(mesh::Layout::zone_major)
#undef TESSERA_HYDRO_RATE_INSTANCES

}  // namespace tessera::hydro

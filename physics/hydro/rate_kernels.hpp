#pragma once
// The hydro unit's time-step rate and state check per block (physics/hydro/rate.cpp, the
// block update's sweep through Hydro::swept_row; hydro.cpp's derived pressure): the rate of
// a row and a block, a uniform-gamma EOS's pressure from the conserved variables, and the
// first bad zone of a row and a block. Internal linkage, as block_update.hpp.
#include <algorithm>
#include <cmath>
#include <limits>

#include "base/simd.hpp"
#include "mesh/mesh.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/hydro/kernels_ref.hpp"
#include "physics/hydro/kernels_simd.hpp"

namespace tessera::hydro::detail {
namespace {

using mesh::BlockShape;
using mesh::BlockView;
using mesh::Layout;

// Largest sum over axes of (|u_a| + c) / dx_a over the block's interior, with the sound
// speed c = sqrt(gamc p / rho) of the EOS state kept in unk.
// In curvilinear geometry the radial rate of zone i is (|u_r| + c) A+ / V (the zone's
// outflow capacity; 3/dr at the origin of a sphere, 2/dr at a cylinder's axis): rad[i]
// replaces idx[0] when given.
// A uniform-gamma EOS (UG): Gamma1 is ugc, and the pressure (game - 1) rho e comes from
// the conserved variables (gm1 = game - 1; unk's pres may be stale), the same bits as the
// EOS's.
// With `bad`: also whether the row may hold a zone check_row finds (the Highway kernel
// tests check_row's conditions on the rate's loads: true exactly when check_row finds
// one; the reference always says true, and check_row decides).
template <bool UG, Layout L>
double row_rate(const BlockView<L>& u, const BlockShape& s, int j, int k, const double idx[3],
                int ipres, int igamc, double ugc, double gm1, double smallp, double* buf,
                const double* rad, bool* bad = nullptr) {
  const int n = s.ni(0), o = s.g(0);
  if (!tessera::simd::reference()) {
    // The Highway kernel on contiguous rows: var-major's own, zone-major's gathered (the
    // same inputs, so both layouts give the same bits).
    simd::MaxRateRow a;
    a.n = n, a.rad = rad, a.uniform = UG, a.ugc = ugc, a.gm1 = gm1, a.smallp = smallp;
    a.idx[0] = idx[0], a.idx[1] = idx[1], a.idx[2] = idx[2];
    const int nv = UG ? 5 : 7;
    const int vars[7] = {DENS, MOMX, MOMY, MOMZ, ETOT, ipres, igamc};
    const double* rows[7] = {};
    for (int v = 0; v < nv; ++v) {
      const auto src = u.row(vars[v], j, k);
      if constexpr (L == Layout::var_major) {
        rows[v] = src + o;
      } else {
        for (int i = 0; i < n; ++i) buf[v * n + i] = src[o + i];
        rows[v] = buf + v * n;
      }
    }
    a.d = rows[0], a.mx = rows[1], a.my = rows[2], a.mz = rows[3], a.e = rows[4];
    a.pres = rows[5], a.gamc = rows[6];
    a.bad = bad;
    return simd::max_rate(a);
  }
  if (bad != nullptr) *bad = true;
  double m[4] = {0.0, 0.0, 0.0, 0.0};  // independent maxima: max is exact in any order
  const auto d = u.row(DENS, j, k), mx = u.row(MOMX, j, k), my = u.row(MOMY, j, k),
             mz = u.row(MOMZ, j, k), pr = u.row(ipres, j, k), gc = u.row(igamc, j, k),
             e = u.row(ETOT, j, k);
  for (int i = 0; i < n; ++i) {
    const double r = 1.0 / d[o + i];
    const double vx = mx[o + i] * r, vy = my[o + i] * r, vz = mz[o + i] * r;
    double p;
    if constexpr (UG)
      p = std::max(gm1 * d[o + i] * (e[o + i] * r - 0.5 * (vx * vx + vy * vy + vz * vz)), smallp);
    else
      p = std::max(pr[o + i], smallp);
    const double c = std::sqrt((UG ? ugc : gc[o + i]) * p * r);
    buf[i] = (std::fabs(vx) + c) * (rad ? rad[i] : idx[0]) + (std::fabs(vy) + c) * idx[1] +
             (std::fabs(vz) + c) * idx[2];
  }
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) m[l] = std::max(m[l], buf[i + l]);
  for (; i < n; ++i) m[0] = std::max(m[0], buf[i]);
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

template <bool UG, Layout L>
double max_rate(const BlockView<L>& u, const BlockShape& s, const double idx[3], int ipres,
                int igamc, double ugc, double gm1, double smallp, double* buf,
                const double* rad = nullptr) {
  double m = 0.0;  // the rows' maxima: max is exact in any order
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
      m = std::max(m, row_rate<UG>(u, s, j, k, idx, ipres, igamc, ugc, gm1, smallp, buf, rad));
  return m;
}

// First zone of the block's interior (k, j, i order) with a NaN or non-positive density
// or a non-finite pressure or energy; node < 0 if none. A vectorised pass per row finds
// the rows to look at. UG (a uniform-gamma EOS, unk's pres possibly stale): the pressure
// is (game - 1) rho e from the conserved variables (gm1 = game - 1), finite exactly where
// the energy and momenta are (the scan tests those).
// A uniform-gamma EOS's pressure from one zone's conserved variables, (game - 1) rho e
// (gm1 = game - 1): check_block's and refinement marking's, the bits of the gamma law's.
inline double ug_pressure(double gm1, double d, double mx, double my, double mz, double e) {
  const double ir = 1.0 / d;
  const double vx = mx * ir, vy = my * ir, vz = mz * ir;
  return gm1 * d * (e * ir - 0.5 * (vx * vx + vy * vy + vz * vz));
}

// check_block's test of one interior row (j, k).
template <bool UG, Layout L>
physics::BadZone check_row(const BlockView<L>& u, const BlockShape& s, int j, int k, int ipres,
                           double gm1) {
  const double inf = std::numeric_limits<double>::infinity();
  const int o = s.g(0), n = s.ni(0);
  const auto d = u.row(DENS, j, k), e = u.row(ETOT, j, k), pr = u.row(ipres, j, k);
  const auto mx = u.row(MOMX, j, k), my = u.row(MOMY, j, k), mz = u.row(MOMZ, j, k);
  auto pres = [&](int i) {
    if constexpr (UG) {
      return ug_pressure(gm1, d[i], mx[i], my[i], mz[i], e[i]);
    } else {
      return double(pr[i]);
    }
  };
  bool bad = false;
  if constexpr (UG) {
    for (int i = o; i < o + n; ++i)
      bad |= !(d[i] > 0.0) | !(std::fabs(e[i]) < inf) | !(std::fabs(mx[i]) < inf) |
             !(std::fabs(my[i]) < inf) | !(std::fabs(mz[i]) < inf);
  } else {
    for (int i = o; i < o + n; ++i)
      bad |= !(d[i] > 0.0) | !(std::fabs(pr[i]) < inf) | !(std::fabs(e[i]) < inf);
  }
  if (!bad) return {};
  for (int i = o; i < o + n; ++i) {
    if (!(d[i] > 0.0)) return {0, i - o, j - s.g(1), k - s.g(2), d[i], "density", false};
    const double p = pres(i);
    if (!std::isfinite(p) || !std::isfinite(e[i]))
      return {0, i - o, j - s.g(1), k - s.g(2), p, "pressure", false};
  }
  return {};
}

template <bool UG, Layout L>
physics::BadZone check_block(const BlockView<L>& u, const BlockShape& s, int ipres, double gm1) {
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
      physics::BadZone z = check_row<UG>(u, s, j, k, ipres, gm1);
      if (!z.what.empty()) return z;
    }
  return {};
}

}  // namespace
}  // namespace tessera::hydro::detail

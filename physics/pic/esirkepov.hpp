#pragma once
// Charge-conserving current deposition for B-spline shapes of order 1-3, and the direct
// charge deposit at nodes with the same shapes, SI units.
//
// References
//   Esirkepov, T. Zh. 2001, Comput. Phys. Commun. 135, 144: eqs. 23-32, the density
//     decomposition W and the current J_x,i+1/2 = J_x,i-1/2 - q w/(dt dy dz) W_x,i; §4 the
//     2-D form with the out-of-plane current from the velocity.
//   verification.md §G: W_x = DS_x (S0_y S0_z + 1/2 DS_y S0_z + 1/2 S0_y DS_z
//     + 1/3 DS_y DS_z), DS = S1 - S0.
//
// With rho deposited by deposit_rho at x^n and x^{n+1} and J by deposit_current for the
// move, (rho^{n+1} - rho^n)/dt + div J = 0 at every node to round-off, div J taken with
// the Yee lattice's backward differences (J_x(i) - J_x(i-1))/dx + ...; the Yee E update
// then keeps div E - rho/eps0 constant to round-off (Gauss's law).
//
// Along an inactive axis (D < 3) there is no motion to difference, and the current is
// q w v_a times the time-averaged transverse shape (Esirkepov §4): it needs v = u/gamma.
//
// Preconditions (asserted in debug builds only): the particle moves less than one cell
// along each active axis, and the window touched lies in the array. A particle within
// about P/2 + 1 cells of a block face deposits into the guard zones; the integration sums
// those into the neighbours (in a fixed order, for reproducibility) and zeroes them.
// Touched indices per active axis: [floor-based first of the old and new shapes, +P+1].
#include <algorithm>
#include <cassert>

#include "physics/pic/boris.hpp"
#include "physics/pic/fields.hpp"
#include "physics/pic/shape.hpp"

namespace tessera::pic {

namespace detail {

/// Old shape S0 and the change DS = S1 - S0 on one window of N = P + 2 points along an
/// active axis (a move of less than a cell shifts the first point by at most one), or the
/// trivial window {S0 = 1, DS = 0} at index 0 along an inactive axis.
template <int P, bool Active>
struct MoveWindow {
  static constexpr int n = Active ? P + 2 : 1;
  int first = 0;
  double s0[n] = {};
  double ds[n] = {};

  MoveWindow(double s_old, double s_new) {
    if constexpr (!Active) {
      s0[0] = 1.0;
    } else {
      const Shape<P> a = shape<P>(s_old);
      const Shape<P> b = shape<P>(s_new);
      first = std::min(a.first, b.first);
      const int oa = a.first - first, ob = b.first - first;
      assert(oa <= 1 && ob <= 1 && "esirkepov: a particle moved a cell or more");
      for (int m = 0; m <= P; ++m) s0[oa + m] = a.w[m];
      for (int m = 0; m <= P; ++m) ds[ob + m] = b.w[m];
      for (int m = 0; m < n; ++m) ds[m] -= s0[m];
    }
  }
};

/// Esirkepov's transverse factor S0_b S0_c + DS_b S0_c / 2 + S0_b DS_c / 2 + DS_b DS_c / 3.
inline double transverse(double s0b, double dsb, double s0c, double dsc) {
  return s0b * s0c + 0.5 * (dsb * s0c + s0b * dsc) + (1.0 / 3.0) * dsb * dsc;
}

}  // namespace detail

/// Add to J (A/m^2) the current of one macro-particle of charge q w (C) moving from x_old
/// to x_new (m) in dt, with shapes of order P. v (m/s, = u/gamma at n+1/2) is used only
/// along inactive axes.
template <int D, int P>
void deposit_current(const Currents& J, const Grid& g, const Vec3& x_old, const Vec3& x_new,
                     const Vec3& v, double qw, double dt) {
  static_assert(D >= 1 && D <= 3 && P >= 1 && P <= 3);
  // Step 1: S0 and DS per axis on a common window (Esirkepov eq. 23).
  const detail::MoveWindow<P, true> wx(g.cells(0, x_old[0]), g.cells(0, x_new[0]));
  const detail::MoveWindow<P, (D > 1)> wy(D > 1 ? g.cells(1, x_old[1]) : 0.0,
                                          D > 1 ? g.cells(1, x_new[1]) : 0.0);
  const detail::MoveWindow<P, (D > 2)> wz(D > 2 ? g.cells(2, x_old[2]) : 0.0,
                                          D > 2 ? g.cells(2, x_new[2]) : 0.0);
  constexpr int nx = decltype(wx)::n, ny = decltype(wy)::n, nz = decltype(wz)::n;
  const double inv_vol = 1.0 / g.volume();

  // Step 2: J_x by the prefix sum J_x,i+1/2 = J_x,i-1/2 - (q w / dt dy dz) W_x,i along x
  // (eq. 32); W_x,i = DS_x,i times the transverse factor t, so the sum is t times the
  // prefix of DS_x. The last window point closes the sum to round-off and is skipped.
  {
    const double cx = qw * g.dx[0] * inv_vol / dt;
    for (int k = 0; k < nz; ++k)
      for (int j = 0; j < ny; ++j) {
        const double c = cx * detail::transverse(wy.s0[j], wy.ds[j], wz.s0[k], wz.ds[k]);
        double pre = 0;
        for (int i = 0; i < nx - 1; ++i) {
          pre += wx.ds[i];
          J.jx(wx.first + i, wy.first + j, wz.first + k) -= c * pre;
        }
      }
  }
  // Step 3: J_y, by the same prefix sum along y when y is active, else from v_y. The
  // inner loop runs along x (unit stride): the rows of the kernels (kernels_simd.hpp).
  if constexpr (D > 1) {
    const double cy = qw * g.dx[1] * inv_vol / dt;
    for (int k = 0; k < nz; ++k) {
      double t[nx];
      for (int i = 0; i < nx; ++i)
        t[i] = detail::transverse(wx.s0[i], wx.ds[i], wz.s0[k], wz.ds[k]);
      double pre = 0;
      for (int j = 0; j < ny - 1; ++j) {
        pre += wy.ds[j];
        const double c = cy * pre;
        for (int i = 0; i < nx; ++i) J.jy(wx.first + i, wy.first + j, wz.first + k) -= c * t[i];
      }
    }
  } else {
    const double cy = qw * v[1] * inv_vol;
    for (int i = 0; i < nx; ++i)
      J.jy(wx.first + i, 0, 0) += cy * detail::transverse(wx.s0[i], wx.ds[i], 1.0, 0.0);
  }
  // Step 4: J_z likewise.
  if constexpr (D > 2) {
    const double cz = qw * g.dx[2] * inv_vol / dt;
    double t[ny][nx];
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i)
        t[j][i] = detail::transverse(wx.s0[i], wx.ds[i], wy.s0[j], wy.ds[j]);
    double pre = 0;
    for (int k = 0; k < nz - 1; ++k) {
      pre += wz.ds[k];
      const double c = cz * pre;
      for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) J.jz(wx.first + i, wy.first + j, wz.first + k) -= c * t[j][i];
    }
  } else {
    const double cz = qw * v[2] * inv_vol;
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i)
        J.jz(wx.first + i, wy.first + j, 0) +=
            cz * detail::transverse(wx.s0[i], wx.ds[i], wy.s0[j], wy.ds[j]);
  }
}

/// Add to rho (C/m^3, at nodes) the charge q w (C) of one macro-particle at x (m), shape P.
template <int D, int P>
void deposit_rho(const Field& rho, const Grid& g, const Vec3& x, double qw) {
  const Shape<P> sx = shape<P>(g.cells(0, x[0]));
  const Shape<(D > 1 ? P : 0)> sy = shape<(D > 1 ? P : 0)>(D > 1 ? g.cells(1, x[1]) : 0.0);
  const Shape<(D > 2 ? P : 0)> sz = shape<(D > 2 ? P : 0)>(D > 2 ? g.cells(2, x[2]) : 0.0);
  const double c = qw / g.volume();
  for (int k = 0; k < sz.n; ++k)
    for (int j = 0; j < sy.n; ++j)
      for (int i = 0; i < sx.n; ++i)
        rho(sx.first + i, sy.first + j, sz.first + k) += c * sx.w[i] * sy.w[j] * sz.w[k];
}

}  // namespace tessera::pic

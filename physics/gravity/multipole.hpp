#pragma once
// The multipole expansion of the potential of a set of point masses (zones) about one
// centre, with the moments accumulated in radial bins (Couch, Graziani & Flocke 2013,
// ApJ 778, 181, §2.2-2.3; FLASH's Multipole_new). For a point x at radius r:
//
//   sum_j m_j / |x - x_j| = sum_lm w_m [ I_lm(x) . M_in(r) + R_lm(x) . M_out(r) ],
//   M_in(r)  = sum over masses with r_j < r of m_j R_lm(x_j)   (interior moments),
//   M_out(r) = sum over masses with r_j >= r of m_j I_lm(x_j)  (exterior moments),
//
// w_0 = 1, w_m = 2 (solid_harmonics.hpp). The moments are kept per radial bin; a point in
// bin Q takes the bins below Q whole as interior, the bins above whole as exterior, and
// bin Q split linearly in radius: a fraction f = (r - r_Q) / (r_{Q+1} - r_Q) of its interior
// moments and 1 - f of its exterior ones (Couch et al.'s interpolation inside a bin).
// Bins are fine in an inner zone around the centre (FLASH's inner zone, there of exact
// discrete radii: the few close radii of the central zones are where a mass put on the
// wrong side of a point costs most, (r'/r)^l), then of width h, then growing
// geometrically (continuous width at the join), so a wide domain needs few bins far out
// where zones are coarse. Coordinates are relative to the centre and scaled by a length L of the
// order of the domain (the caller's), which keeps r^l and 1/r^(l+1) in range: the sums are then L
// times the physical ones.
//
// Header-only, mesh-free (the gravity unit feeds it zones; the unit tests point masses).
// Not thread-safe.
#include <algorithm>
#include <cmath>
#include <vector>

#include "physics/gravity/solid_harmonics.hpp"

namespace tessera::gravity {

/// Radial bins: an inner zone of ni bins of width hi (finer, around the centre, where
/// the radii of the zones are few and close: FLASH's inner zone), then nu bins of width
/// h, then widths growing geometrically, continuous at the join (factor 1 + h / ru).
struct RadialBins {
  double hi = 1.0;  ///< width of the inner-zone bins
  int ni = 0;       ///< number of inner-zone bins
  double h = 1.0;   ///< width of the uniform bins
  int nu = 1;       ///< number of uniform bins
  int count = 1;    ///< bins in use (the last holds the largest radius asked for)
  RadialBins() = default;
  /// Bins of width h that reach radius rmax, at most nu of them uniform; no inner zone.
  RadialBins(double width, int uniform, double rmax) : RadialBins(width, 0, width, uniform, rmax) {}
  /// An inner zone of n_inner bins of width inner_width, then as above.
  RadialBins(double inner_width, int n_inner, double width, int uniform, double rmax)
      : hi(inner_width), ni(std::max(n_inner, 0)), h(width), nu(std::max(uniform, 1)) {
    count = bin(rmax) + 1;
  }
  double rin() const { return ni * hi; }        ///< outer radius of the inner zone
  double ru() const { return rin() + nu * h; }  ///< where the bins start to grow
  double growth() const { return std::log1p(h / ru()); }
  /// The bin of radius r >= 0.
  int bin(double r) const {
    if (r < rin()) return std::min(int(r / hi), ni - 1);
    if (r < ru()) return ni + std::min(int((r - rin()) / h), nu - 1);
    return ni + nu + int(std::log(r / ru()) / growth());
  }
  /// Lower edge of bin q.
  double edge(int q) const {
    if (q <= ni) return q * hi;
    if (q <= ni + nu) return rin() + (q - ni) * h;
    return ru() * std::exp((q - ni - nu) * growth());
  }
  /// Where r lies inside its bin q, from 0 (lower edge) to 1.
  double fraction(double r, int q) const {
    const double a = edge(q), b = edge(q + 1);
    return std::clamp((r - a) / (b - a), 0.0, 1.0);
  }
};

/// Moments in bins and the sum of m / |x - x_j| at any point (scaled coordinates).
class Expansion {
 public:
  Expansion() = default;
  /// l <= lmax, m <= mmax (0: axisymmetric, Legendre terms only).
  Expansion(int lmax, int mmax, RadialBins bins)
      : lmax_(lmax), mmax_(std::min(mmax, lmax)), nlm_(n_lm(lmax)), bins_(bins) {
    bin_.assign(std::size_t(bins_.count) * row_size(), 0.0);
  }
  int lmax() const { return lmax_; }
  int mmax() const { return mmax_; }
  const RadialBins& bins() const { return bins_; }
  /// Doubles per bin: Rc, Rs (interior moments), Ic, Is (exterior), n_lm(lmax) each.
  std::size_t row_size() const { return 4 * std::size_t(nlm_); }

  /// Add the moments of mass m at (x, y, z) to a bin row (row_size() doubles). A mass at
  /// the centre has no exterior moments (it is interior to every point but the centre).
  void accumulate(double m, double x, double y, double z, double* row) const {
    double rc[kMaxLm], rs[kMaxLm], ic[kMaxLm], is[kMaxLm];
    regular_harmonics(x, y, z, lmax_, mmax_, rc, rs);
    const bool at_centre = x * x + y * y + z * z == 0.0;
    if (!at_centre) irregular_harmonics(x, y, z, lmax_, mmax_, ic, is);
    const int n = nlm_;
    for (int l = 0; l <= lmax_; ++l)
      for (int mm = 0; mm <= std::min(l, mmax_); ++mm) {
        const int a = lm_index(l, mm);
        row[a] += m * rc[a];
        row[n + a] += m * rs[a];
        if (!at_centre) {
          row[2 * n + a] += m * ic[a];
          row[3 * n + a] += m * is[a];
        }
      }
  }
  /// Add a mass directly (tests, or a caller without per-block partial sums).
  void add_mass(double m, double x, double y, double z) {
    const int q = std::min(bins_.bin(std::sqrt(x * x + y * y + z * z)), bins_.count - 1);
    accumulate(m, x, y, z, bin_.data() + std::size_t(q) * row_size());
  }
  /// Add a row of partial moments to bin q.
  void add_row(int q, const double* row) {
    double* b = bin_.data() + std::size_t(q) * row_size();
    for (std::size_t c = 0; c < row_size(); ++c) b[c] += row[c];
  }
  /// Equatorial symmetry about z = 0 (axisymmetric only): the mirror images double the
  /// even-l moments and cancel the odd ones.
  void mirror_equator() {
    for (int q = 0; q < bins_.count; ++q) {
      double* b = bin_.data() + std::size_t(q) * row_size();
      for (int l = 0; l <= lmax_; ++l)
        for (int mm = 0; mm <= std::min(l, mmax_); ++mm)
          for (int part = 0; part < 4; ++part)
            b[part * nlm_ + lm_index(l, mm)] *= l % 2 ? 0.0 : 2.0;
    }
  }
  /// After every mass is in: cumulative interior moments below each bin and exterior
  /// moments above it.
  void finish() {
    const std::size_t w = 2 * std::size_t(nlm_), nb = std::size_t(bins_.count);
    below_.assign((nb + 1) * w, 0.0);
    above_.assign((nb + 1) * w, 0.0);
    for (std::size_t q = 0; q < nb; ++q)
      for (std::size_t c = 0; c < w; ++c)
        below_[(q + 1) * w + c] = below_[q * w + c] + bin_[q * row_size() + c];
    for (std::size_t q = nb; q-- > 0;)
      for (std::size_t c = 0; c < w; ++c)
        above_[q * w + c] = above_[(q + 1) * w + c] + bin_[q * row_size() + w + c];
  }
  /// sum_j m_j / |x - x_j| at (x, y, z) (finish() first).
  double sum(double x, double y, double z) const {
    double rc[kMaxLm], rs[kMaxLm], ic[kMaxLm], is[kMaxLm];
    const double r2 = x * x + y * y + z * z;
    const std::size_t w = 2 * std::size_t(nlm_), n = std::size_t(nlm_);
    // The centre itself: every mass is exterior and only the monopole is non-zero there.
    if (r2 == 0.0) return above_[w] + bin_[w];
    const double r = std::sqrt(r2);
    regular_harmonics(x, y, z, lmax_, mmax_, rc, rs);
    irregular_harmonics(x, y, z, lmax_, mmax_, ic, is);
    const int q = bins_.bin(r);
    if (q >= bins_.count) {  // outside every mass: interior moments only
      const double* in = below_.data() + std::size_t(bins_.count) * w;
      return dot(ic, is, in, in + n);
    }
    const double f = bins_.fraction(r, q);
    const double* in = below_.data() + std::size_t(q) * w;
    const double* out = above_.data() + std::size_t(q + 1) * w;
    const double* b = bin_.data() + std::size_t(q) * row_size();
    double s = 0.0;
    for (int l = 0; l <= lmax_; ++l)
      for (int mm = 0; mm <= std::min(l, mmax_); ++mm) {
        const std::size_t a = std::size_t(lm_index(l, mm));
        const double inc = in[a] + f * b[a], ins = in[n + a] + f * b[n + a];
        const double outc = out[a] + (1.0 - f) * b[w + a];
        const double outs = out[n + a] + (1.0 - f) * b[w + n + a];
        const double t = ic[a] * inc + is[a] * ins + rc[a] * outc + rs[a] * outs;
        s += mm == 0 ? t : 2.0 * t;
      }
    return s;
  }
  /// The summed moments of bin q (row_size() doubles).
  const double* row(int q) const { return bin_.data() + std::size_t(q) * row_size(); }

  /// Largest lmax the fixed-size scratch holds.
  static constexpr int kMaxL = 40;

 private:
  static constexpr int kMaxLm = n_lm(kMaxL);
  int lmax_ = 0, mmax_ = 0, nlm_ = 1;
  RadialBins bins_;
  std::vector<double> bin_;            ///< per bin: Rc, Rs, Ic, Is
  std::vector<double> below_, above_;  ///< per bin edge: interior (Rc, Rs) / exterior (Ic, Is)
  /// sum_lm w_m (hc mc + hs ms).
  double dot(const double* hc, const double* hs, const double* mc, const double* ms) const {
    double s = 0.0;
    for (int l = 0; l <= lmax_; ++l)
      for (int mm = 0; mm <= std::min(l, mmax_); ++mm) {
        const int a = lm_index(l, mm);
        const double t = hc[a] * mc[a] + hs[a] * ms[a];
        s += mm == 0 ? t : 2.0 * t;
      }
    return s;
  }
};

}  // namespace tessera::gravity

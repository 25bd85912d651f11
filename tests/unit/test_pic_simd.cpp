// The Highway PIC particle kernels (physics/pic/kernels_simd.hpp) against the C++ reference
// (gather.hpp, boris.hpp, esirkepov.hpp) on random particles and fields, under every
// instruction set this build runs on this processor (base/simd.hpp: each forced in turn),
// for 1-3 dimensions, shape orders 1-3, both gathers and both unk layouts (J and the fields
// adjacent in x, or strided as zone-major blocks hold them). They must agree to round-off:
// 1e-14 of the quantity's scale (a fused multiply-add here and not there moves the last
// bits). Particle counts 1, 3 and 37 leave a partial last vector, 64 none (a multiple of
// every vector length), 0 is nothing; nothing past the n-th particle is written. A particle's
// result must not depend on where in a vector it falls: for the gather and the push, n
// particles in one call give the same bits as n calls of one particle each; for the deposit,
// as the same particles after 1, 3 or 5 particles of weight zero (its sums are runs of
// particles whose windows start at the same point; clustered particles make long runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "physics/pic/boris.hpp"
#include "physics/pic/esirkepov.hpp"
#include "physics/pic/gather.hpp"
#include "physics/pic/kernels_simd.hpp"
#include "tests/unit/simd_targets.hpp"

namespace {

namespace simd = tessera::simd;
namespace pic = tessera::pic;
namespace ps = tessera::pic::simd;

constexpr double kTol = 1e-14;
constexpr int kExtent = 12;  // array points per active axis (the particles sit in [4, 8))

using tessera::test::ForceGuard;
using tessera::test::highway_targets;

// Nine components (E, B, J) over a block array of kExtent points per active axis, var-major
// (each component its own array, x adjacent) or zone-major (the nine interleaved per point).
struct Block {
  int D;
  bool zone_major;
  std::size_t points;
  std::vector<double> data;
  Block(int d, bool zm) : D(d), zone_major(zm) {
    points = 1;
    for (int a = 0; a < D; ++a) points *= kExtent;
    data.assign(9 * points, 0.0);
  }
  pic::Field field(int v) {
    const std::ptrdiff_t nx = kExtent, ny = D > 1 ? kExtent : 1;
    if (zone_major) return pic::Field{data.data() + v, 9, 9 * nx, 9 * nx * ny};
    return pic::Field{data.data() + std::size_t(v) * points, 1, nx, nx * ny};
  }
  pic::EMFields em() { return {field(0), field(1), field(2), field(3), field(4), field(5)}; }
  pic::Currents j() { return {field(6), field(7), field(8)}; }
  std::vector<double> component(int v) {
    std::vector<double> out(points);
    const auto f = field(v);
    for (std::size_t q = 0; q < points; ++q) out[q] = f.p[std::ptrdiff_t(q) * f.si];
    return out;
  }
};

pic::Grid grid_of(int D) {
  pic::Grid g;
  g.x0 = {0.3, D > 1 ? -0.2 : 0.0, D > 2 ? 1.1 : 0.0};
  g.dx = {0.5, D > 1 ? 0.25 : 1.0, D > 2 ? 2.0 : 1.0};
  return g;
}

// n particles inside [4, 8) cells on active axes, old positions within 0.95 cells of the new
// ones; along inactive axes any position (the kernels must ignore it); u of up to 0.6 c per
// component; weights in [0.5, 2].
// Clustered: inside [5.55, 5.95) cells, moves within 0.04 cells, so that most particles'
// deposit windows start at the same point (the deposit's runs).
struct Particles {
  std::vector<double> x[3], xo, u[3], w;
  Particles(int D, const pic::Grid& g, std::size_t n, std::mt19937_64& rng,
            bool clustered = false) {
    std::uniform_real_distribution<double> cell(clustered ? 5.55 : 4.0, clustered ? 5.95 : 8.0),
        move(clustered ? -0.04 : -0.95, clustered ? 0.04 : 0.95), uu(-0.6, 0.6), ww(0.5, 2.0),
        anywhere(-50.0, 50.0);
    xo.resize(3 * n);
    for (int c = 0; c < 3; ++c) {
      x[c].resize(n);
      u[c].resize(n);
      for (std::size_t p = 0; p < n; ++p) {
        const bool active = c < D;
        const double s = active ? cell(rng) : anywhere(rng);
        x[c][p] = g.x0[c] + s * g.dx[c];
        xo[c * n + p] = active ? g.x0[c] + (s + move(rng)) * g.dx[c] : x[c][p];
        u[c][p] = uu(rng) * pic::constants::c;
      }
    }
    w.resize(n);
    for (auto& v : w) v = ww(rng);
  }
};

template <int D, int P, pic::GatherScheme S>
void check_gather(const std::string& what, std::size_t n, bool zone_major, bool runs,
                  bool clustered, std::mt19937_64& rng) {
  Block blk(D, zone_major);
  std::uniform_real_distribution<double> val(-1.0, 1.0);
  for (auto& v : blk.data) v = val(rng);
  const auto g = grid_of(D);
  const Particles pt(D, g, n, rng, clustered);
  const double* x[3] = {pt.x[0].data(), pt.x[1].data(), pt.x[2].data()};
  // One past the end: a canary the kernel must not write.
  std::vector<double> ref(6 * n), got(6 * n + 1, -7.0), ahead(6 * n + 1, -7.0), alone(6 * n);
  for (std::size_t p = 0; p < n; ++p) {
    pic::Vec3 E, B;
    pic::gather<D, P, S>(blk.em(), g, {x[0][p], x[1][p], x[2][p]}, E, B);
    for (int c = 0; c < 3; ++c) ref[c * n + p] = E[c], ref[(3 + c) * n + p] = B[c];
  }
  constexpr bool energy = S == pic::GatherScheme::energy_conserving;
  ps::gather(D, P, energy, runs, blk.em(), g, n, x, 0, got.data());
  ps::gather(D, P, energy, runs, blk.em(), g, n, x, 3, ahead.data());
  for (std::size_t p = 0; p < n; ++p) {
    const double* x1[3] = {x[0] + p, x[1] + p, x[2] + p};
    double e1[6];
    ps::gather(D, P, energy, runs, blk.em(), g, 1, x1, 0, e1);
    for (int c = 0; c < 6; ++c) alone[c * n + p] = e1[c];
  }
  double diff = 0;
  for (std::size_t q = 0; q < 6 * n; ++q) diff = std::max(diff, std::fabs(got[q] - ref[q]));
  EXPECT_LE(diff, kTol) << what << ": gather differs by " << diff << " (fields of scale 1)";
  EXPECT_EQ(got, ahead) << what << ": the prefetch changed the gather";
  EXPECT_EQ(got[6 * n], -7.0) << what << ": wrote past the last particle";
  got.pop_back();
  EXPECT_EQ(got, alone) << what << ": a particle's fields depend on its lane";
}

void check_push(const std::string& what, std::size_t n, std::mt19937_64& rng) {
  const auto g = grid_of(3);
  Particles pt(3, g, n, rng);
  std::uniform_real_distribution<double> field(-1.0, 1.0);
  std::vector<double> eb(6 * n);
  for (std::size_t q = 0; q < 6 * n; ++q) eb[q] = field(rng) * (q < 3 * n ? 1e12 : 1e4);
  const double qm = -1.758820e11, dt = 1e-15;
  Particles ref = pt, alone = pt;
  // One past the end of each output: a canary the kernel must not write.
  for (int c = 0; c < 3; ++c) pt.u[c].push_back(-7.0), pt.x[c].push_back(-7.0);
  std::vector<double> xo(3 * n + 1, -7.0);
  double* u[3] = {pt.u[0].data(), pt.u[1].data(), pt.u[2].data()};
  double* x[3] = {pt.x[0].data(), pt.x[1].data(), pt.x[2].data()};
  ps::push(n, u, x, eb.data(), qm, dt, xo.data());
  EXPECT_EQ(xo[3 * n], -7.0) << what << ": x_old written past the last particle";
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(pt.u[c][n], -7.0) << what << ": u written past the last particle";
    EXPECT_EQ(pt.x[c][n], -7.0) << what << ": x written past the last particle";
  }
  // One particle at a time (each in lane 0 of a partial vector): the same bits.
  for (std::size_t p = 0; p < n; ++p) {
    double* u1[3] = {alone.u[0].data() + p, alone.u[1].data() + p, alone.u[2].data() + p};
    double* x1[3] = {alone.x[0].data() + p, alone.x[1].data() + p, alone.x[2].data() + p};
    const double eb1[6] = {eb[p],         eb[n + p],     eb[2 * n + p],
                           eb[3 * n + p], eb[4 * n + p], eb[5 * n + p]};
    double xo1[3];
    ps::push(1, u1, x1, eb1, qm, dt, xo1);
    for (int c = 0; c < 3; ++c) {
      EXPECT_EQ(u[c][p], u1[c][0]) << what << ": particle " << p << "'s u depends on its lane";
      EXPECT_EQ(x[c][p], x1[c][0]) << what << ": particle " << p << "'s x depends on its lane";
      EXPECT_EQ(xo[c * n + p], xo1[c]) << what << ": x_old depends on the lane";
    }
  }
  double du = 0, dx = 0, su = 0, sx = 0;
  for (std::size_t p = 0; p < n; ++p) {
    pic::Vec3 up{ref.u[0][p], ref.u[1][p], ref.u[2][p]};
    pic::Vec3 xp{ref.x[0][p], ref.x[1][p], ref.x[2][p]};
    pic::boris_push(up, {eb[p], eb[n + p], eb[2 * n + p]},
                    {eb[3 * n + p], eb[4 * n + p], eb[5 * n + p]}, qm, dt);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(xo[c * n + p], xp[c]) << what << ": x_old";
    pic::push_position(xp, up, dt);
    for (int c = 0; c < 3; ++c) {
      du = std::max(du, std::fabs(pt.u[c][p] - up[c]));
      dx = std::max(dx, std::fabs(pt.x[c][p] - xp[c]));
      su = std::max(su, std::fabs(up[c]));
      sx = std::max(sx, std::fabs(xp[c]));
    }
  }
  EXPECT_LE(du, kTol * su) << what << ": u differs by " << du << " of scale " << su;
  EXPECT_LE(dx, kTol * sx) << what << ": x differs by " << dx << " of scale " << sx;
}

// The scale of a particle's current in component a: J_a is c_a times sums of shape
// products (each at most 1): c_a = |q w| dx_a / (V dt) along an active axis, |q w v_a| / V
// along an inactive one. Differences are bounded against it, not against the current
// itself: DS = S1 - S0 cancels for a short move, so a fused multiply-add in a weight moves
// J by round-off of the weights (measured: 3.4e-14 of max |J| for SVE, order 3 in 1-D).
template <int D>
std::array<double, 3> current_scales(const pic::Grid& g, double qw, const pic::Vec3& v, double dt) {
  std::array<double, 3> c{};
  for (int a = 0; a < 3; ++a)
    c[a] = a < D ? std::fabs(qw) * g.dx[a] / (g.volume() * dt) : std::fabs(qw * v[a]) / g.volume();
  return c;
}

// max over J's components a of max |x_a - y_a| / scale[a].
double current_difference(Block& x, Block& y, const std::array<double, 3>& scale) {
  double worst = 0;
  for (int a = 0; a < 3; ++a) {
    const auto p = x.component(6 + a), q = y.component(6 + a);
    for (std::size_t k = 0; k < p.size(); ++k)
      worst = std::max(worst, std::fabs(p[k] - q[k]) / scale[std::size_t(a)]);
  }
  return worst;
}

// The n particles' current in one call, after m particles of weight zero whose windows
// start where none of theirs does (they sum to zero runs of their own): each real particle
// then sits in another lane of its vector, and J must have the same bits.
template <int D, int P>
Block deposit_after_blanks(const Particles& pt, std::size_t n, std::size_t m, bool zone_major,
                           const pic::Grid& g, double q, double dt) {
  const std::size_t t = n + m;
  std::vector<double> x[3], u[3], xo(3 * t), w(t, 0.0);
  for (int c = 0; c < 3; ++c) {
    x[c].assign(t, g.x0[c] + (c < D ? 1.0 * g.dx[c] : 0.0));
    u[c].assign(t, 0.0);
    for (std::size_t p = 0; p < t; ++p) xo[c * t + p] = x[c][p];
    for (std::size_t p = 0; p < n; ++p) {
      x[c][m + p] = pt.x[c][p];
      u[c][m + p] = pt.u[c][p];
      xo[c * t + m + p] = pt.xo[c * n + p];
    }
  }
  for (std::size_t p = 0; p < n; ++p) w[m + p] = pt.w[p];
  Block b(D, zone_major);
  const double* xs[3] = {x[0].data(), x[1].data(), x[2].data()};
  const double* us[3] = {u[0].data(), u[1].data(), u[2].data()};
  ps::deposit(D, P, b.j(), g, t, xo.data(), xs, us, w.data(), q, dt);
  return b;
}

template <int D, int P>
void check_deposit(const std::string& what, std::size_t n, bool zone_major, bool clustered,
                   std::mt19937_64& rng) {
  const auto g = grid_of(D);
  const Particles pt(D, g, n, rng, clustered);
  const double q = -1.602e-19, dt = 1e-15;
  const double* x[3] = {pt.x[0].data(), pt.x[1].data(), pt.x[2].data()};
  const double* u[3] = {pt.u[0].data(), pt.u[1].data(), pt.u[2].data()};
  Block all(D, zone_major), ref(D, zone_major);
  ps::deposit(D, P, all.j(), g, n, pt.xo.data(), x, u, pt.w.data(), q, dt);
  if (n == 0) {  // no particle, no current (and no scale to bound a difference against)
    EXPECT_EQ(all.data, ref.data) << what << ": J of no particle";
    return;
  }
  double worst_alone = 0;
  std::array<double, 3> summed{};
  for (std::size_t p = 0; p < n; ++p) {
    // One particle alone: the kernel against the reference on zeroed arrays.
    Block a(D, zone_major), r(D, zone_major);
    const double xo1[3] = {pt.xo[p], pt.xo[n + p], pt.xo[2 * n + p]};
    const double* x1[3] = {x[0] + p, x[1] + p, x[2] + p};
    const double* u1[3] = {u[0] + p, u[1] + p, u[2] + p};
    ps::deposit(D, P, a.j(), g, 1, xo1, x1, u1, pt.w.data() + p, q, dt);
    const pic::Vec3 up{u[0][p], u[1][p], u[2][p]};
    const double ig = 1.0 / pic::lorentz_gamma(up);
    const pic::Vec3 v{up[0] * ig, up[1] * ig, up[2] * ig};
    pic::deposit_current<D, P>(r.j(), g, {xo1[0], xo1[1], xo1[2]}, {x[0][p], x[1][p], x[2][p]}, v,
                               q * pt.w[p], dt);
    pic::deposit_current<D, P>(ref.j(), g, {xo1[0], xo1[1], xo1[2]}, {x[0][p], x[1][p], x[2][p]}, v,
                               q * pt.w[p], dt);
    const auto scale = current_scales<D>(g, q * pt.w[p], v, dt);
    for (int c = 0; c < 3; ++c) summed[std::size_t(c)] += scale[std::size_t(c)];
    worst_alone = std::max(worst_alone, current_difference(a, r, scale));
  }
  EXPECT_LE(worst_alone, kTol) << what << ": a particle's current differs (of its scale)";
  // The same particles in other lanes: the same bits (the sums are the runs', in order).
  for (const std::size_t m : {std::size_t(1), std::size_t(3), std::size_t(5)})
    EXPECT_EQ(all.data, (deposit_after_blanks<D, P>(pt, n, m, zone_major, g, q, dt).data))
        << what << ": depends on the particle's lane (" << m << " blanks before)";
  // And within round-off of the reference, against the particles' scales summed.
  EXPECT_LE(current_difference(all, ref, summed), kTol) << what << ": J of " << n << " particles";
}

template <int D, int P>
void check_order(const std::string& target, std::mt19937_64& rng) {
  for (const bool zm : {false, true})
    for (const std::size_t n :
         {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(37), std::size_t(64)}) {
      const std::string what = target + " D=" + std::to_string(D) + " P=" + std::to_string(P) +
                               (zm ? " zone-major" : " var-major") + " n=" + std::to_string(n);
      for (const bool runs : {false, true})
        for (const bool clustered : {false, true}) {
          const std::string how =
              std::string(runs ? " by runs" : " per lane") + (clustered ? " clustered" : "");
          check_gather<D, P, pic::GatherScheme::energy_conserving>(what + " energy" + how, n, zm,
                                                                   runs, clustered, rng);
          check_gather<D, P, pic::GatherScheme::momentum_conserving>(what + " momentum" + how, n,
                                                                     zm, runs, clustered, rng);
        }
      check_deposit<D, P>(what, n, zm, false, rng);
      check_deposit<D, P>(what + " clustered", n, zm, true, rng);
    }
  // The gather by runs over more particles than its chunk of keys on every target (16
  // vectors: 128 lanes on AVX-512), so that runs also end at a chunk's edge.
  const std::string what = target + " D=" + std::to_string(D) + " P=" + std::to_string(P);
  check_gather<D, P, pic::GatherScheme::energy_conserving>(what + " n=300 by runs clustered", 300,
                                                           false, true, true, rng);
}

template <int D>
void check_dimension(const std::string& target, std::mt19937_64& rng) {
  check_order<D, 1>(target, rng);
  check_order<D, 2>(target, rng);
  check_order<D, 3>(target, rng);
}

TEST(PicSimd, GatherAndDepositMatchTheReferenceOnEveryTarget) {
  ForceGuard guard;
  for (const auto& t : highway_targets()) {
    simd::force(t);
    std::mt19937_64 rng(20261128);
    check_dimension<1>(t, rng);
    check_dimension<2>(t, rng);
    check_dimension<3>(t, rng);
  }
}

// simd::bins: a particle's bin is the same in one call of n as alone (its place in the
// arrays must not matter: it orders the particles), and is the grid point of its shapes
// (floor of x in cells, plus a half for even orders) clamped to the block array, species
// major: checked against the scalar formula away from rounding ties.
TEST(PicSimd, BinsDoNotDependOnThePlaceOfAParticleOnEveryTarget) {
  ForceGuard guard;
  for (const auto& t : highway_targets()) {
    simd::force(t);
    std::mt19937_64 rng(11);
    for (const int D : {1, 2, 3})
      for (const double shift : {0.0, 0.5})
        for (const std::size_t n : {std::size_t(1), std::size_t(5), std::size_t(37)}) {
          const double x0[3] = {0.3, -0.2, 1.1}, inv[3] = {2.0, 4.0, 0.5};
          const int ext[3] = {12, D > 1 ? 12 : 1, D > 2 ? 12 : 1};
          std::uniform_real_distribution<double> cell(-1.5, 13.5);
          std::vector<double> x[3], type(n);
          for (int a = 0; a < 3; ++a) {
            x[a].resize(n);
            for (auto& v : x[a]) v = x0[a] + cell(rng) / inv[a];
          }
          for (std::size_t p = 0; p < n; ++p) type[p] = double(1 + p % 3);  // 3: clamped to 2
          const double* xs[3] = {x[0].data(), x[1].data(), x[2].data()};
          std::vector<std::int32_t> all(n + 1, -7), alone(n);
          ps::bins(D, n, xs, type.data(), 2, x0, inv, shift, ext, all.data());
          EXPECT_EQ(all[n], -7) << t << ": wrote past the last particle";
          const int cells = ext[0] * ext[1] * ext[2];
          for (std::size_t p = 0; p < n; ++p) {
            const double* x1[3] = {xs[0] + p, xs[1] + p, xs[2] + p};
            ps::bins(D, 1, x1, type.data() + p, 2, x0, inv, shift, ext, &alone[p]);
            EXPECT_EQ(all[p], alone[p]) << t << " D=" << D << ": a bin depends on its place";
            int at = 0;
            bool tie = false;
            for (int a = D - 1; a >= 0; --a) {
              const double s = (x[a][p] - x0[a]) * inv[a] + shift;
              tie = tie || std::fabs(s - std::round(s)) < 1e-9;
              at = at * ext[a] + std::clamp(int(std::floor(s)), 0, ext[a] - 1);
            }
            if (!tie) {
              EXPECT_EQ(all[p], std::min(int(type[p]) - 1, 1) * cells + at) << t << " D=" << D;
            }
          }
        }
  }
}

TEST(PicSimd, BorisPushMatchesTheReferenceOnEveryTarget) {
  ForceGuard guard;
  for (const auto& t : highway_targets()) {
    simd::force(t);
    std::mt19937_64 rng(7);
    for (const std::size_t n :
         {std::size_t(0), std::size_t(1), std::size_t(5), std::size_t(64), std::size_t(67)})
      check_push(t + " n=" + std::to_string(n), n, rng);
  }
}

}  // namespace

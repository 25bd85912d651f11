// The Highway hydro row kernels (physics/hydro/kernels_simd.hpp) against the C++ reference
// kernels (kernels_ref.hpp) on random states, under every instruction set this build runs
// on this processor (base/simd.hpp: each forced in turn). They must agree to round-off:
// 1e-14 of the largest value of the same quantity in the row (a fused multiply-add here
// and not there moves the last bits; cancellation inside a formula can make one face's
// relative difference larger, never the row's). Rows have lengths that are not multiples
// of any vector length, so the masked last vector is exercised; values past the row's end
// must be left untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.hpp"
#include "base/simd.hpp"
#include "physics/hydro/kernels_ref.hpp"
#include "physics/hydro/kernels_simd.hpp"
#include "tests/unit/simd_targets.hpp"

namespace {

namespace simd = tessera::simd;
namespace hs = tessera::hydro::simd;
namespace ref = tessera::hydro::ref;
using tessera::hydro::Limiter;

constexpr double kTol = 1e-14;
constexpr double kCanary = -12345.0;  // fills output past the row

using tessera::test::ForceGuard;
using tessera::test::highway_targets;

// max |a - b| over [0, n) against kTol * max |b|; values [n, size) must still be kCanary.
void expect_close(const std::vector<double>& a, const std::vector<double>& b, int n,
                  const std::string& what) {
  double scale = 0.0, diff = 0.0;
  for (int i = 0; i < n; ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  EXPECT_LE(diff, kTol * scale) << what << ": max difference " << diff << " of scale " << scale;
  for (std::size_t i = n; i < a.size(); ++i)
    ASSERT_EQ(a[i], kCanary) << what << ": wrote past the row at " << i;
}

TEST(HydroSimd, ListsTargetsAndForcesEachOne) {
  ForceGuard guard;
  const auto names = simd::available();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.back(), "scalar");
  std::string listed;
  for (const auto& t : names) {
    simd::force(t);
    const auto cur = simd::current();
    listed += " " + cur.name + " (" + std::to_string(cur.lanes) + " lanes)";
    EXPECT_EQ(cur.name, t);
    EXPECT_GE(cur.lanes, 1);
    EXPECT_EQ(simd::reference(), t == "scalar");
  }
  std::printf("targets tested here:%s\n", listed.c_str());
  EXPECT_THROW(simd::force("no_such_target"), tessera::Error);
  simd::force("auto");
  EXPECT_EQ(simd::current().name, names.front());
}

// Random face states on a row of n faces: rho, p in [0.1, 10], velocities in [-2, 2]
// (supersonic and subsonic faces, both signs of the contact speed), Gamma1 and game in
// [1.1, 1.7].
struct FaceRow {
  int n;
  std::vector<double> s[10], gc[2], ge[2];
  explicit FaceRow(int n_, unsigned seed) : n(n_) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> pos(0.1, 10.0), vel(-2.0, 2.0), gam(1.1, 1.7);
    for (auto& v : s) v.resize(n);
    for (auto& v : gc) v.resize(n);
    for (auto& v : ge) v.resize(n);
    for (int t = 0; t < n; ++t) {
      for (int side = 0; side < 2; ++side) {
        auto* q = s + 5 * side;
        q[0][t] = pos(rng);
        q[1][t] = vel(rng);
        q[2][t] = vel(rng);
        q[3][t] = vel(rng);
        q[4][t] = pos(rng);
        gc[side][t] = gam(rng);
        ge[side][t] = 1.0 / (gam(rng) - 1.0);
      }
    }
  }
};

void riemann_case(bool hllc, bool uniform, const std::string& target, int n) {
  const FaceRow f(n, 7 + 2 * hllc + uniform);
  const double ugc = 1.4, uge = 2.5;
  std::vector<double> out_s(5 * (n + 16), kCanary), out_r(5 * (n + 16), kCanary);
  auto F = [&](std::vector<double>& o, int v) { return o.data() + v * (n + 16); };
  hs::RiemannRow r;
  r.n = n;
  r.ld = f.s[0].data(), r.lu = f.s[1].data(), r.lt1 = f.s[2].data(), r.lt2 = f.s[3].data();
  r.lp = f.s[4].data();
  r.rd = f.s[5].data(), r.ru = f.s[6].data(), r.rt1 = f.s[7].data(), r.rt2 = f.s[8].data();
  r.rp = f.s[9].data();
  r.fd = F(out_s, 0), r.fn = F(out_s, 1), r.ft1 = F(out_s, 2), r.ft2 = F(out_s, 3);
  r.fe = F(out_s, 4);
  r.lgc = f.gc[0].data(), r.lge = f.ge[0].data(), r.rgc = f.gc[1].data(), r.rge = f.ge[1].data();
  r.ugc = ugc, r.uge = uge;
  hs::riemann(hllc, uniform, r);
  hs::RiemannRow rr = r;  // the same states into the reference's outputs
  rr.fd = F(out_r, 0), rr.fn = F(out_r, 1), rr.ft1 = F(out_r, 2), rr.ft2 = F(out_r, 3);
  rr.fe = F(out_r, 4);
  ref::riemann(hllc, uniform, rr);
  const char* comp[5] = {"mass", "normal momentum", "momentum t1", "momentum t2", "energy"};
  for (int v = 0; v < 5; ++v) {
    std::vector<double> a(F(out_s, v), F(out_s, v) + n + 16), b(F(out_r, v), F(out_r, v) + n + 16);
    // [n, n + 16) of each component is past the row.
    expect_close(a, b, n,
                 target + (hllc ? " HLLC " : " HLLE ") + (uniform ? "uniform " : "") + comp[v] +
                     ", " + std::to_string(n) + " faces");
  }
}

TEST(HydroSimd, RiemannFluxesMatchTheReferenceOnEveryTarget) {
  ForceGuard guard;
  for (const auto& t : highway_targets()) {
    simd::force(t);
    for (bool hllc : {true, false})
      for (bool uniform : {true, false})
        // 37, 17 and 12 faces: whole vectors after one narrower vector of 2 or 4 lanes, or
        // a whole one overlapping the next (which, depends on the target's width); 3:
        // shorter than one vector of AVX2 and wider (a partial vector).
        for (int n : {37, 17, 12, 3}) riemann_case(hllc, uniform, t, n);
  }
}

// The Riemann kernels start a row with a narrower vector for the faces a whole vector
// does not take (kernels_simd.cpp, RiemannRowT): a face's flux must not depend on the
// width of the vector it fell in. Faces 1..16 of a row of 17 and faces 0..15 of the same
// states as a row of 16 land in different vectors: the fluxes are the same bits.
TEST(HydroSimd, RiemannFluxOfAFaceDoesNotDependOnItsPlaceInTheRow) {
  ForceGuard guard;
  const FaceRow f(17, 11);
  for (const auto& t : highway_targets()) {
    simd::force(t);
    for (bool hllc : {true, false}) {
      std::vector<double> a(5 * 17), b(5 * 16);
      for (int shift : {0, 1}) {
        const int n = 17 - shift;
        double* o = shift ? b.data() : a.data();
        hs::RiemannRow r;
        r.n = n;
        r.ld = f.s[0].data() + shift, r.lu = f.s[1].data() + shift;
        r.lt1 = f.s[2].data() + shift, r.lt2 = f.s[3].data() + shift;
        r.lp = f.s[4].data() + shift;
        r.rd = f.s[5].data() + shift, r.ru = f.s[6].data() + shift;
        r.rt1 = f.s[7].data() + shift, r.rt2 = f.s[8].data() + shift;
        r.rp = f.s[9].data() + shift;
        r.fd = o, r.fn = o + n, r.ft1 = o + 2 * n, r.ft2 = o + 3 * n, r.fe = o + 4 * n;
        r.ugc = 1.4, r.uge = 2.5;
        hs::riemann(hllc, true, r);
      }
      for (int v = 0; v < 5; ++v)
        for (int i = 0; i < 16; ++i)
          ASSERT_EQ(a[v * 17 + 1 + i], b[v * 16 + i])
              << t << (hllc ? " HLLC" : " HLLE") << " component " << v << " face " << i + 1;
    }
  }
}

// The conservative update of rows (update_rows; hydro.cpp step 6, whose reference loops
// are add_divergence, add_flux and sub_flux), written here from its definition: every
// target within round-off of it, rows whole vectors long, with a partial vector and shorter
// than one; nothing past a row changes.
TEST(HydroSimd, UpdateRowsAddTheFluxDifferencesOnEveryTarget) {
  ForceGuard guard;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> val(-2.0, 2.0);
  const double c = 0.37;
  for (int n : {16, 13, 3}) {
    std::vector<double> q0(2 * (n + 8)), f(2 * (n + 1));
    for (auto& x : q0) x = val(rng);
    for (auto& x : f) x = val(rng);
    for (int kind : {0, 1, 2}) {
      std::vector<double> want = q0;
      for (int v = 0; v < 2; ++v)
        for (int t = 0; t < n; ++t) {
          const double* F = f.data() + v * (n + 1);
          double& x = want[v * (n + 8) + t];
          x += kind == 0 ? c * (F[t] - F[t + 1]) : (kind == 1 ? c * F[t] : -c * F[t]);
        }
      for (const auto& t : highway_targets()) {
        simd::force(t);
        std::vector<double> got = q0;
        double* q[2] = {got.data(), got.data() + n + 8};
        const double* F[2] = {f.data(), f.data() + n + 1};
        hs::update_rows(kind, 2, q, F, n, c);
        for (int v = 0; v < 2; ++v)
          for (int i = 0; i < n + 8; ++i) {
            const std::size_t at = std::size_t(v) * (n + 8) + i;
            if (i < n)
              EXPECT_NEAR(got[at], want[at], 1e-14 * 6.0)
                  << t << " kind " << kind << ", " << n << " zones, row " << v << " zone " << i;
            else
              ASSERT_EQ(got[at], q0[at]) << t << ": wrote past the row at " << i;
          }
      }
    }
  }
}

// The time-step rate of a row: the largest sum over axes of (|u_a| + c) / dx_a, c =
// sqrt(Gamma1 p / rho), written here from its definition (hydro.hpp, max_dt).
TEST(HydroSimd, MaxRateIsTheLargestSignalSpeedOverDxOnEveryTarget) {
  ForceGuard guard;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> pos(0.1, 10.0), vel(-2.0, 2.0), gam(1.1, 1.7);
  for (int n : {19, 3}) {
    std::vector<double> d(n), mx(n), my(n), mz(n), e(n), p(n), g(n), rad(n);
    for (int i = 0; i < n; ++i) {
      d[i] = pos(rng), mx[i] = d[i] * vel(rng), my[i] = d[i] * vel(rng), mz[i] = d[i] * vel(rng);
      p[i] = pos(rng), g[i] = gam(rng), rad[i] = 10.0 + i;
      e[i] = p[i] / 0.4 + 0.5 * (mx[i] * mx[i] + my[i] * my[i] + mz[i] * mz[i]) / d[i];
    }
    const double idx[3] = {8.0, 4.0, 2.0};
    for (bool uniform : {true, false})
      for (bool curved : {false, true}) {
        double want = 0.0;
        for (int i = 0; i < n; ++i) {
          const double gc = uniform ? 1.4 : g[i];
          const double c = std::sqrt(gc * p[i] / d[i]);
          want = std::max(want, (std::fabs(mx[i] / d[i]) + c) * (curved ? rad[i] : idx[0]) +
                                    (std::fabs(my[i] / d[i]) + c) * idx[1] +
                                    (std::fabs(mz[i] / d[i]) + c) * idx[2]);
        }
        hs::MaxRateRow r;
        r.n = n, r.d = d.data(), r.mx = mx.data(), r.my = my.data(), r.mz = mz.data();
        r.e = e.data(), r.pres = p.data(), r.gamc = g.data(), r.rad = curved ? rad.data() : nullptr;
        r.uniform = uniform, r.ugc = 1.4, r.gm1 = 0.4, r.smallp = 1e-30;
        r.idx[0] = idx[0], r.idx[1] = idx[1], r.idx[2] = idx[2];
        for (const auto& t : highway_targets()) {
          simd::force(t);
          EXPECT_NEAR(hs::max_rate(r), want, 1e-13 * want)
              << t << (uniform ? " uniform" : "") << (curved ? " curved" : "") << ", " << n
              << " zones";
        }
      }
  }
}

// The rate kernel's flag for hydro's check (MaxRateRow::bad): true exactly when a zone of
// the row has a density not > 0 or a non-finite energy or momentum (uniform gamma), or a
// non-finite pres or energy (otherwise): a good row, then each bad value at each zone of
// rows of 19 (whole vectors and the overlapping last one) and 3 (shorter than a vector:
// the lanes past the row must not count), on every target.
TEST(HydroSimd, MaxRateFlagsARowExactlyWhenAZoneFailsHydrosCheckOnEveryTarget) {
  ForceGuard guard;
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (int n : {19, 3}) {
    std::vector<double> d(n, 1.0), mx(n, 0.5), my(n, -0.5), mz(n, 0.25), e(n, 3.0), p(n, 1.0),
        g(n, 1.4);
    hs::MaxRateRow r;
    r.n = n, r.d = d.data(), r.mx = mx.data(), r.my = my.data(), r.mz = mz.data();
    r.e = e.data(), r.pres = p.data(), r.gamc = g.data();
    r.ugc = 1.4, r.gm1 = 0.4, r.smallp = 1e-30;
    r.idx[0] = r.idx[1] = r.idx[2] = 1.0;
    bool bad = true;
    r.bad = &bad;
    struct Case {
      std::vector<double>* v;
      double x;
      bool uniform, nonuniform;  // flagged with a uniform gamma / without
    };
    const std::vector<Case> cases = {
        {&d, 0.0, true, true},   {&d, -1.0, true, true},  {&d, nan, true, true},
        {&e, inf, true, true},   {&e, nan, true, true},   {&mx, -inf, true, false},
        {&my, nan, true, false}, {&mz, inf, true, false}, {&p, inf, false, true},
        {&p, nan, false, true},  {&e, -1.0, false, false}};
    for (const auto& t : highway_targets()) {
      simd::force(t);
      for (bool uniform : {true, false}) {
        r.uniform = uniform;
        bad = true;
        hs::max_rate(r);
        EXPECT_FALSE(bad) << t << " a good row of " << n;
        for (const auto& c : cases)
          for (int i = 0; i < n; ++i) {
            const double keep = (*c.v)[i];
            (*c.v)[i] = c.x;
            bad = !(uniform ? c.uniform : c.nonuniform);
            const double rate = hs::max_rate(r);
            r.bad = nullptr;  // the rate is the same bits without the flag
            const double plain = hs::max_rate(r);
            r.bad = &bad;
            EXPECT_EQ(std::memcmp(&rate, &plain, sizeof rate), 0) << t;
            EXPECT_EQ(bad, uniform ? c.uniform : c.nonuniform)
                << t << (uniform ? " uniform" : "") << ", " << c.x << " at zone " << i << " of "
                << n;
            (*c.v)[i] = keep;
          }
      }
    }
  }
}

// Step 1 (hydro.cpp, primitives) from its definition, with the floors exercised (densities
// below smalld, internal energies below zero) and a NaN density kept NaN (std::max's
// order); the kernel in place (outputs over their inputs, as a zone-major block runs it)
// gives the same bits as into separate arrays; nothing past n is written.
TEST(HydroSimd, PrimitivesMatchTheirDefinitionOnEveryTarget) {
  ForceGuard guard;
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> pos(0.1, 10.0), vel(-2.0, 2.0), gam(1.1, 1.7);
  const double smalld = 0.2, smallp = 1e-3, gm1 = 0.4;
  for (int n : {19, 3, 64}) {
    // Inputs: d mx my mz e pres gamc game; outputs: r vx vy vz p gc 1/(ge-1).
    std::vector<std::vector<double>> in(8, std::vector<double>(n));
    for (int i = 0; i < n; ++i) {
      const double d = pos(rng), vx = vel(rng), vy = vel(rng), vz = vel(rng);
      in[0][i] = d, in[1][i] = d * vx, in[2][i] = d * vy, in[3][i] = d * vz;
      // Every third zone with too little energy for its motion: p below the floor.
      const double eint = i % 3 == 0 ? -0.1 : pos(rng);
      in[4][i] = d * eint + 0.5 * d * (vx * vx + vy * vy + vz * vz);
      in[5][i] = i % 4 == 0 ? -1.0 : pos(rng), in[6][i] = gam(rng), in[7][i] = gam(rng);
    }
    in[0][1] = 0.05;  // below smalld
    if (n > 2) in[0][2] = std::nan("");
    for (bool uniform : {true, false}) {
      std::vector<std::vector<double>> want(7, std::vector<double>(n));
      for (int i = 0; i < n; ++i) {
        const double r = std::max(in[0][i], smalld), ir = 1.0 / r;
        const double vx = in[1][i] * ir, vy = in[2][i] * ir, vz = in[3][i] * ir;
        want[0][i] = r, want[1][i] = vx, want[2][i] = vy, want[3][i] = vz;
        const double ein = in[4][i] * ir - 0.5 * (vx * vx + vy * vy + vz * vz);
        want[4][i] = uniform ? std::max(gm1 * r * ein, smallp) : std::max(in[5][i], smallp);
        want[5][i] = in[6][i], want[6][i] = 1.0 / (in[7][i] - 1.0);
      }
      const int nout = uniform ? 5 : 7;
      for (const auto& t : highway_targets()) {
        simd::force(t);
        std::vector<std::vector<double>> out(7, std::vector<double>(n + 5, kCanary));
        hs::PrimitivesRow a;
        a.n = std::size_t(n), a.uniform = uniform, a.gm1 = gm1, a.smalld = smalld;
        a.smallp = smallp;
        a.d = in[0].data(), a.mx = in[1].data(), a.my = in[2].data(), a.mz = in[3].data();
        a.e = in[4].data(), a.pres = in[5].data(), a.gamc = in[6].data(), a.game = in[7].data();
        a.wr = out[0].data(), a.wx = out[1].data(), a.wy = out[2].data(), a.wz = out[3].data();
        a.wp = out[4].data(), a.wgc = out[5].data(), a.wge = out[6].data();
        hs::primitives(a);
        // In place: each output array holds its input first.
        std::vector<std::vector<double>> io(7);
        for (int v = 0; v < 4; ++v) io[v] = in[v];
        io[4] = uniform ? in[4] : in[5], io[5] = in[6], io[6] = in[7];
        hs::PrimitivesRow b = a;
        b.d = io[0].data(), b.mx = io[1].data(), b.my = io[2].data(), b.mz = io[3].data();
        b.e = io[4].data(), b.pres = io[4].data(), b.gamc = io[5].data(), b.game = io[6].data();
        b.wr = io[0].data(), b.wx = io[1].data(), b.wy = io[2].data(), b.wz = io[3].data();
        b.wp = io[4].data(), b.wgc = io[5].data(), b.wge = io[6].data();
        hs::primitives(b);
        for (int v = 0; v < nout; ++v) {
          const std::string what = t + (uniform ? " uniform" : " EOS state") + ", " +
                                   std::to_string(n) + " zones, channel " + std::to_string(v);
          if (n > 2) {
            // rho and v, and p where it is computed from them, carry the NaN.
            const bool from_d = v < 4 || (v == 4 && uniform);
            EXPECT_EQ(std::isnan(out[v][2]), from_d) << what << ": the NaN density";
            out[v][2] = want[v][2] = io[v][2] = 0.0;  // NaN != NaN: compared above
          }
          expect_close(out[v], want[v], n, what);
          for (int i = 0; i < n; ++i)
            ASSERT_EQ(io[v][i], out[v][i]) << what << ": in place differs at zone " << i;
        }
        EXPECT_EQ(out[0][1], smalld) << t;
        EXPECT_EQ(out[4][0], smallp) << t << (uniform ? " uniform" : " EOS state");
        // The mass fractions: rho X / rho, in place too.
        std::vector<double> x = in[1], q(n + 5, kCanary);
        hs::divide(std::size_t(n), x.data(), out[0].data(), q.data());
        hs::divide(std::size_t(n), x.data(), out[0].data(), x.data());
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(q[i], in[1][i] / out[0][i]) << t << " divide, zone " << i;
          ASSERT_EQ(x[i], q[i]) << t << " divide in place, zone " << i;
        }
        for (int i = n; i < n + 5; ++i) ASSERT_EQ(q[i], kCanary) << t << " divide past the row";
      }
    }
  }
}

// A block-like primitive array W [nr + 2][N] with rows of n0 zones, random positive
// density and pressure, velocities and one mass scalar.
struct Prims {
  int n0 = 23, n1 = 6, nr = 6;
  std::size_t N = std::size_t(n0) * n1 * 5;
  std::vector<double> w;
  // The row in the middle of the 5 planes and 6 rows (two neighbours on every side on every
  // axis), and the strides along x, y, z.
  std::size_t rb = (std::size_t(2) * n1 + 2) * n0;
  std::ptrdiff_t st[3] = {1, n0, std::ptrdiff_t(n0) * n1};
  explicit Prims(unsigned seed) : w(std::size_t(nr + 2) * N) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> pos(0.1, 10.0), vel(-2.0, 2.0), x(0.0, 1.0),
        gam(1.1, 1.7);
    for (std::size_t c = 0; c < N; ++c) {
      w[c] = pos(rng);
      for (int v = 1; v < 4; ++v) w[v * N + c] = vel(rng);
      w[4 * N + c] = pos(rng);
      w[5 * N + c] = x(rng);
      w[6 * N + c] = gam(rng);
      w[7 * N + c] = 1.0 / (gam(rng) - 1.0);
    }
  }
};

TEST(HydroSimd, SlopesHalfStepFaceStatesAndFallbackMatchTheReference) {
  ForceGuard guard;
  const Prims P(11);
  const int n0 = P.n0, nr = P.nr;
  const std::size_t R = std::size_t(nr) * n0;
  // A row in the middle plane; zones [1, n0 - 1) so that x-neighbours exist.
  const std::size_t rb = P.rb;
  const auto& st = P.st;
  // Zones [i0, i1): 21 (whole vectors and an overlapping last one) and 2 (shorter than a
  // vector of AVX2 and wider: one partial vector).
  for (const auto& [i0, i1] : {std::pair{1, n0 - 1}, std::pair{1, 3}})
    for (const auto& t : highway_targets()) {
      simd::force(t);
      // Every value outside zones [i0, i1) of each [n0] row of `buf` is still kCanary.
      auto untouched = [&](const std::vector<double>& buf, const std::string& what) {
        for (std::size_t c = 0; c < buf.size(); ++c) {
          const int i = int(c % std::size_t(n0));
          if (c >= buf.size() - 16 || i < i0 || i >= i1) {
            ASSERT_EQ(buf[c], kCanary) << t << " " << what << ": wrote outside the row at " << c;
          }
        }
      };
      for (int lim = 0; lim < 3; ++lim) {
        std::vector<double> a(3 * R + 16, kCanary), b(3 * R + 16, kCanary);
        for (int ax = 0; ax < 3; ++ax) {
          hs::slopes(lim, P.w.data(), P.N, rb, st[ax], i0, i1, a.data() + ax * R, n0, nr);
          if (lim == 0)
            ref::slopes_row<Limiter::minmod>(P.w.data(), P.N, rb, st[ax], i0, i1, b.data() + ax * R,
                                             n0, nr);
          else if (lim == 1)
            ref::slopes_row<Limiter::van_leer>(P.w.data(), P.N, rb, st[ax], i0, i1,
                                               b.data() + ax * R, n0, nr);
          else
            ref::slopes_row<Limiter::mc>(P.w.data(), P.N, rb, st[ax], i0, i1, b.data() + ax * R, n0,
                                         nr);
        }
        untouched(a, "slopes");
        for (int ax = 0; ax < 3; ++ax)
          for (int v = 0; v < nr; ++v) {
            std::vector<double> x(a.begin() + ax * R + v * n0 + i0,
                                  a.begin() + ax * R + v * n0 + i1);
            std::vector<double> y(b.begin() + ax * R + v * n0 + i0,
                                  b.begin() + ax * R + v * n0 + i1);
            expect_close(x, y, i1 - i0,
                         t + " slopes, limiter " + std::to_string(lim) + " axis " +
                             std::to_string(ax) + " channel " + std::to_string(v));
          }
        // The half step from these slopes, 1-3 axes, uniform Gamma1 or W's.
        const double f[3] = {0.21, 0.17, 0.13};
        for (int nd = 1; nd <= 3; ++nd)
          for (bool uniform : {true, false}) {
            std::vector<double> ha(R + 16, kCanary), hb(R + 16, kCanary);
            hs::hancock(nd, uniform, P.w.data(), P.N, rb, b.data(), i0, i1, n0, f, nr, 1.4,
                        ha.data());
            auto fn = uniform ? (nd == 3   ? ref::hancock_row<3, true>
                                 : nd == 2 ? ref::hancock_row<2, true>
                                           : ref::hancock_row<1, true>)
                              : (nd == 3   ? ref::hancock_row<3, false>
                                 : nd == 2 ? ref::hancock_row<2, false>
                                           : ref::hancock_row<1, false>);
            fn(P.w.data(), P.N, rb, b.data(), i0, i1, n0, f, nr, 1.4, hb.data());
            for (int v = 0; v < nr; ++v) {
              std::vector<double> x(ha.begin() + v * n0 + i0, ha.begin() + v * n0 + i1);
              std::vector<double> y(hb.begin() + v * n0 + i0, hb.begin() + v * n0 + i1);
              expect_close(x, y, i1 - i0,
                           t + " half step, " + std::to_string(nd) + "-d" +
                               (uniform ? " uniform" : "") + " channel " + std::to_string(v));
            }
            untouched(ha, "half step");
          }
        // The fallback alone (PPM's) on the reference face states: selections only, so bit
        // for bit.
        std::vector<double> la(R + 16, kCanary), pa(R + 16, kCanary);
        ref::plm_states_row(P.w.data() + rb, P.N, b.data(), i0, i1, n0, nr, la.data(), pa.data());
        std::vector<double> lb = la, pb = pa;
        // Make some states non-positive so that the fallback acts.
        for (int i = i0; i < i1; i += 3) la[i] = -la[i], pa[4 * n0 + i] = -1.0;
        for (int i = i0; i < i1; i += 3) lb[i] = -lb[i], pb[4 * n0 + i] = -1.0;
        const double* w = P.w.data() + rb;
        for (auto* s : {&la, &pa})
          hs::fallback(s->data(), s->data() + n0, s->data() + 2 * n0, s->data() + 3 * n0,
                       s->data() + 4 * n0, w, w + P.N, w + 2 * P.N, w + 3 * P.N, w + 4 * P.N, i0,
                       i1, 1e-30, 1e-30);
        for (auto* s : {&lb, &pb})
          ref::fallback_row(s->data(), s->data() + n0, s->data() + 2 * n0, s->data() + 3 * n0,
                            s->data() + 4 * n0, w, w + P.N, w + 2 * P.N, w + 3 * P.N, w + 4 * P.N,
                            i0, i1, 1e-30, 1e-30);
        EXPECT_EQ(la, lb) << t << ": low-face states differ";
        EXPECT_EQ(pa, pb) << t << ": high-face states differ";
        // The fused form (plm_faces) on slopes steep enough that some faces go negative.
        std::vector<double> steep(b.begin(), b.begin() + R);
        for (int i = i0; i < i1; i += 2)  // low face: rho < 0; high face: p < 0
          steep[i] = 3.0 * w[i], steep[4 * n0 + i] = -3.0 * w[4 * P.N + i];
        std::fill(la.begin(), la.end(), kCanary), std::fill(pa.begin(), pa.end(), kCanary);
        std::fill(lb.begin(), lb.end(), kCanary), std::fill(pb.begin(), pb.end(), kCanary);
        hs::plm_faces(w, P.N, steep.data(), w, P.N, i0, i1, n0, nr, 1e-30, 1e-30, la.data(),
                      pa.data());
        ref::plm_states_row(w, P.N, steep.data(), i0, i1, n0, nr, lb.data(), pb.data());
        int fell = 0;
        for (auto* s : {&lb, &pb}) {
          for (int i = i0; i < i1; ++i) fell += !((*s)[i] > 1e-30 && (*s)[4 * n0 + i] > 1e-30);
          for (int q = 5; q < nr; ++q)
            ref::fallback_scalar_row(s->data() + q * n0, w + q * P.N, s->data(), s->data() + 4 * n0,
                                     i0, i1, 1e-30, 1e-30);
          ref::fallback_row(s->data(), s->data() + n0, s->data() + 2 * n0, s->data() + 3 * n0,
                            s->data() + 4 * n0, w, w + P.N, w + 2 * P.N, w + 3 * P.N, w + 4 * P.N,
                            i0, i1, 1e-30, 1e-30);
        }
        EXPECT_GT(fell, 0) << "no face fell back: the case tests nothing";
        EXPECT_EQ(la, lb) << t << ": fused low-face states differ";
        EXPECT_EQ(pa, pb) << t << ": fused high-face states differ";
      }
    }
}

// PPM face states with the fallback (ppm_faces) against ppm_states_row, fallback_scalar_row
// and fallback_row, along each axis, on every target. smalld and smallp of 1 (densities and
// pressures are 0.1-10) make about half of the faces fall back.
TEST(HydroSimd, PpmFaceStatesWithTheFallbackMatchTheReference) {
  ForceGuard guard;
  const Prims P(12);
  const int n0 = P.n0, nr = P.nr;
  const std::size_t R = std::size_t(nr) * n0;
  const std::size_t rb = P.rb;
  const auto& st = P.st;
  const double small = 1.0;
  for (const auto& [i0, i1] : {std::pair{2, n0 - 2}, std::pair{2, 4}, std::pair{3, 16}})
    for (int ax = 0; ax < 3; ++ax) {
      std::vector<double> lb(R + 16, kCanary), hb(R + 16, kCanary);
      ref::ppm_states_row(P.w.data(), P.N, rb, st[ax], i0, i1, n0, nr, lb.data(), hb.data());
      const double* w = P.w.data() + rb;
      int fell = 0;
      for (auto* s : {&lb, &hb}) {
        for (int i = i0; i < i1; ++i) fell += !((*s)[i] > small && (*s)[4 * n0 + i] > small);
        for (int q = 5; q < nr; ++q)
          ref::fallback_scalar_row(s->data() + q * n0, w + q * P.N, s->data(), s->data() + 4 * n0,
                                   i0, i1, small, small);
        ref::fallback_row(s->data(), s->data() + n0, s->data() + 2 * n0, s->data() + 3 * n0,
                          s->data() + 4 * n0, w, w + P.N, w + 2 * P.N, w + 3 * P.N, w + 4 * P.N, i0,
                          i1, small, small);
      }
      if (i1 - i0 > 10) {
        EXPECT_GT(fell, 0) << "no face fell back: the case tests nothing";
      }
      for (const auto& t : highway_targets()) {
        simd::force(t);
        std::vector<double> la(R + 16, kCanary), ha(R + 16, kCanary),
            ds(std::size_t(nr) * (n0 + 2));
        hs::ppm_faces(P.w.data(), P.N, rb, st[ax], i0, i1, n0, nr, small, small, ds.data(),
                      la.data(), ha.data());
        for (int v = 0; v < nr; ++v)
          for (const auto& [a, b, side] :
               {std::tuple{&la, &lb, "low"}, std::tuple{&ha, &hb, "high"}}) {
            std::vector<double> x(a->begin() + v * n0 + i0, a->begin() + v * n0 + i1);
            std::vector<double> y(b->begin() + v * n0 + i0, b->begin() + v * n0 + i1);
            expect_close(x, y, i1 - i0,
                         t + " PPM " + side + " faces, axis " + std::to_string(ax) + " channel " +
                             std::to_string(v) + ", zones " + std::to_string(i0) + "-" +
                             std::to_string(i1));
          }
        for (const auto* a : {&la, &ha})
          for (std::size_t c = 0; c < a->size(); ++c) {
            const int i = int(c % std::size_t(n0));
            if (c >= a->size() - 16 || i < i0 || i >= i1) {
              ASSERT_EQ((*a)[c], kCanary) << t << " PPM: wrote outside the row at " << c;
            }
          }
      }
    }
}

}  // namespace

// M1's plane kernel (physics/m1/rows.hpp), compiled per instruction set and dispatched:
// on random planes (states inside and outside the realizable set's faces, so that the
// limiter's bisection runs; thick and thin faces; every closure, MC and unlimited slopes),
// every target this build runs gives the same bits, each within 1e-14 (relative to the
// largest flux of its moment) of a line-by-line scalar reference written here from the
// method's formulas, and nothing is written past the faces asked for.
// Needs no MPI or HDF5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "physics/m1/rows.hpp"
#include "tests/unit/simd_targets.hpp"

namespace {

namespace m1 = tessera::m1;
using tessera::test::ForceGuard;
using tessera::test::highway_targets;

constexpr double kCanary = -12345.0;

struct Case {
  int N = 12, g0 = 2, n = 8, nl = 11, axis = 1;
  double c = 1.3, dx = 0.05;
  m1::Closure closure = m1::Closure::minerbo;
  bool mc = true, thick = false;
};

// Planes of nl lines, cell s of line l at [s * ss + l] with ss = nl + 3 (padding between
// rows, as a block's guard zones give).
struct Data {
  long ss;
  std::vector<double> u[4], chi;
};

Data make(const Case& k, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> U(0.0, 1.0);
  Data d;
  d.ss = k.nl + 3;
  const std::size_t size = std::size_t(k.N) * std::size_t(d.ss);
  for (auto& v : d.u) v.assign(size, std::nan(""));
  d.chi.assign(size, std::nan(""));
  for (int s = 0; s < k.N; ++s)
    for (int l = 0; l < k.nl; ++l) {
      const std::size_t at = std::size_t(s) * std::size_t(d.ss) + std::size_t(l);
      // E in (0.1, 2); |F| / (cE) mostly below 1, a fifth of the cells at 0.999 (their
      // neighbours' slopes then push a face state out: the bisection), a few F = 0.
      const double e = 0.1 + 1.9 * U(rng);
      const double f = U(rng) < 0.2 ? 0.999 : (U(rng) < 0.1 ? 0.0 : 0.9 * U(rng));
      double dir[3] = {U(rng) - 0.5, U(rng) - 0.5, U(rng) - 0.5};
      const double norm = std::sqrt(dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]);
      d.u[0][at] = e;
      for (int q = 0; q < 3; ++q) d.u[1 + q][at] = f * k.c * e * dir[q] / norm;
      d.chi[at] = k.thick ? 40.0 * U(rng) : 0.0;  // chi dx from 0 to 2: thick and thin faces
    }
  return d;
}

std::vector<double> run(const Case& k, const Data& d) {
  const std::size_t faces = std::size_t(k.n + 1) * std::size_t(k.nl);
  std::vector<double> out(4 * (faces + 8), kCanary), scratch(26 * std::size_t(k.nl), 0.0);
  double* f[4];
  for (int q = 0; q < 4; ++q) f[q] = out.data() + std::size_t(q) * (faces + 8);
  const m1::Plane p{{d.u[0].data(), d.u[1].data(), d.u[2].data(), d.u[3].data()},
                    k.thick ? d.chi.data() : nullptr,
                    d.ss,
                    k.g0,
                    k.n,
                    k.nl,
                    k.axis,
                    k.c,
                    k.dx,
                    k.closure,
                    k.mc,
                    scratch.data()};
  m1::plane_fluxes(p, f);
  return out;
}

// The method, face by face (the kernel's plane-at-once order aside).
// `limited` counts the cells whose slopes the bisection scaled down (lo < 1).
double reference(const Case& k, const Data& d, int q, int s, int l, int& limited) {
  auto at = [&](int cell) { return std::size_t(cell) * std::size_t(d.ss) + std::size_t(l); };
  auto slopes = [&](int cell, double out[4]) {
    for (int m = 0; m < 4; ++m) {
      const double a = d.u[m][at(cell)] - d.u[m][at(cell - 1)];
      const double b = d.u[m][at(cell + 1)] - d.u[m][at(cell)];
      out[m] = k.mc ? (a * b > 0.0 ? std::copysign(std::min({2 * std::fabs(a), 2 * std::fabs(b),
                                                             0.5 * std::fabs(a + b)}),
                                                   a)
                                   : 0.0)
                    : 0.5 * (d.u[m][at(cell + 1)] - d.u[m][at(cell - 1)]);
    }
    // The largest scale t in [0, 1] (bisection, 30 halvings) keeping both faces realizable.
    auto ok = [&](double t) {
      for (double side : {-0.5, 0.5}) {
        const double e = d.u[0][at(cell)] + side * t * out[0];
        double f2 = 0;
        for (int m = 1; m < 4; ++m) {
          const double v = d.u[m][at(cell)] + side * t * out[m];
          f2 += v * v;
        }
        if (!(e >= 0.0 && std::sqrt(f2) <= k.c * e)) return false;
      }
      return true;
    };
    if (ok(1.0)) return;
    double lo = 0.0, hi = ok(0.0) ? 1.0 : 0.0;
    for (int it = 0; it < 30 && hi > 0.0; ++it) {
      const double mid = 0.5 * (lo + hi);
      (ok(mid) ? lo : hi) = mid;
    }
    if (lo < 1.0) ++limited;
    for (int m = 0; m < 4; ++m) out[m] *= lo;
  };
  double sm[4], sc[4], ul[4], ur[4], fl[4], fr[4];
  slopes(s - 1, sm);
  slopes(s, sc);
  for (int m = 0; m < 4; ++m) {
    ul[m] = d.u[m][at(s - 1)] + 0.5 * sm[m];
    ur[m] = d.u[m][at(s)] - 0.5 * sc[m];
  }
  auto flux = [&](const double st[4], double out[4]) {
    const auto o = m1::zone_flux_scaled(st[0], st[1], st[2], st[3], k.axis, k.c, [&](double x) {
      return m1::eddington_factor(k.closure, x);
    });
    for (int m = 0; m < 4; ++m) out[m] = o[std::size_t(m)];
  };
  flux(ul, fl);
  flux(ur, fr);
  double eps = 1.0;
  if (k.thick) {
    const double chi = 0.5 * (d.chi[at(s - 1)] + d.chi[at(s)]);
    if (chi * k.dx > 1.0) eps = 1.0 / (chi * k.dx);
  }
  return 0.5 * (fl[q] + fr[q]) - 0.5 * eps * k.c * (ur[q] - ul[q]);
}

TEST(M1Rows, GivenRandomPlanes_EveryTargetGivesTheSameBitsAndTheReferenceWithin1e14) {
  ForceGuard guard;
  std::mt19937_64 rng(49);
  std::vector<Case> cases;
  for (auto cl : {m1::Closure::minerbo, m1::Closure::levermore, m1::Closure::eddington})
    for (bool mc : {true, false})
      for (bool thick : {false, true})
        for (int axis : {0, 2}) {
          Case k;
          k.closure = cl;
          k.mc = mc;
          k.thick = thick;
          k.axis = axis;
          k.nl = axis == 0 ? 5 : 11;  // lane counts that are no multiple of a vector
          cases.push_back(k);
        }
  int limited = 0;
  for (const auto& k : cases) {
    const Data d = make(k, rng);
    std::vector<double> first;
    std::string first_target;
    for (const auto& t : highway_targets()) {
      tessera::simd::force(t);
      const auto out = run(k, d);
      const std::size_t faces = std::size_t(k.n + 1) * std::size_t(k.nl);
      for (int q = 0; q < 4; ++q) {
        const double* f = out.data() + std::size_t(q) * (faces + 8);
        double scale = 0.0;
        for (std::size_t e = 0; e < faces; ++e) scale = std::max(scale, std::fabs(f[e]));
        for (int s = k.g0; s <= k.g0 + k.n; ++s)
          for (int l = 0; l < k.nl; ++l) {
            const double got = f[std::size_t(s - k.g0) * std::size_t(k.nl) + std::size_t(l)];
            const double want = reference(k, d, q, s, l, limited);
            ASSERT_LE(std::fabs(got - want), 1e-14 * scale)
                << t << " moment " << q << " face " << s << " line " << l << ": " << got
                << " against " << want;
          }
        for (std::size_t e = faces; e < faces + 8; ++e)
          ASSERT_EQ(f[e], kCanary) << t << ": wrote past the faces";
      }
      if (first_target.empty()) {
        first = out;
        first_target = t;
        continue;
      }
      EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(double)), 0)
          << t << " against " << first_target;
    }
  }
  // The limiter ran: the bisection scaled some cell's slopes down.
  EXPECT_GT(limited, 0) << "no face state left the realizable set";
}

}  // namespace

// tessera_kernel_bench: nanoseconds per zone (per face for the Riemann solvers) of the
// hydro row kernels (physics/hydro/kernels_simd.hpp and the C++ reference of
// kernels_ref.hpp) for every instruction set this build runs here, on rows of random
// physical states held in L1 as in a block update (16^3 blocks, 2 guard zones: rows of
// 20 zones, 17 x-faces). A repeat times batches of 8 rows many times and keeps the least
// (interrupted batches left out); the table is the median (and least) of R repeats
// alternating between targets, so that machine noise hits every target alike. The
// whole-step rates are bench/simd_targets.py's; this isolates one kernel when changing it.
// A second table: ns per zone of the PPM face states with their positivity fallback
// (ref::ppm_states_row + fallback_row, simd::ppm_faces) along x, y and z of a 16^3 block
// with PPM's 3 guard zones (22^3 cells), every row of the block's interior. A third: ns per
// cell of the primitives (simd::primitives) of a 16^3 block with 2 guard zones, Highway
// targets only.
//
//   tessera_kernel_bench [--repeats R] [--targets avx3,avx2,sse4,scalar] [--faces 17]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "physics/hydro/kernels_ref.hpp"
#include "physics/hydro/kernels_simd.hpp"

namespace {

using namespace tessera;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double least(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

// Rows of faces with random left and right states: density and pressure over 4 decades,
// velocities of either sign (a mix of subsonic and supersonic faces, both sides of the
// contact), so that every lane of a select takes both values.
struct Rows {
  int n0, rows;
  std::vector<double> l, r, f;  // [rows][5][n0]
  Rows(int n0_, int rows_) : n0(n0_), rows(rows_), l(5 * n0_ * rows_), r(l.size()), f(l.size()) {
    std::mt19937_64 g(42);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto* s : {&l, &r})
      for (int row = 0; row < rows; ++row)
        for (int i = 0; i < n0; ++i) {
          double* b = s->data() + std::size_t(row) * 5 * n0;
          b[i] = std::pow(10.0, 4 * u(g) - 2);                       // rho
          for (int v = 1; v < 4; ++v) b[v * n0 + i] = 4 * u(g) - 2;  // velocities
          b[4 * n0 + i] = std::pow(10.0, 4 * u(g) - 2);              // p
        }
  }
  hydro::RiemannRow row(int k, int n) {
    hydro::RiemannRow a;
    const double* L = l.data() + std::size_t(k) * 5 * n0;
    const double* R = r.data() + std::size_t(k) * 5 * n0;
    double* F = f.data() + std::size_t(k) * 5 * n0;
    a.n = n;
    a.ld = L, a.lu = L + n0, a.lt1 = L + 2 * n0, a.lt2 = L + 3 * n0, a.lp = L + 4 * n0;
    a.rd = R, a.ru = R + n0, a.rt1 = R + 2 * n0, a.rt2 = R + 3 * n0, a.rp = R + 4 * n0;
    a.fd = F, a.fn = F + n0, a.ft1 = F + 2 * n0, a.ft2 = F + 3 * n0, a.fe = F + 4 * n0;
    a.ugc = 1.4, a.uge = 1.0 / 0.4;
    return a;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int repeats = 9, faces = 17;
  std::string targets;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--repeats") && a + 1 < argc) repeats = std::atoi(argv[++a]);
    if (!std::strcmp(argv[a], "--faces") && a + 1 < argc) faces = std::atoi(argv[++a]);
    if (!std::strcmp(argv[a], "--targets") && a + 1 < argc) targets = argv[++a];
  }
  std::vector<std::string> ts;
  if (targets.empty()) {
    ts = simd::available();
  } else {
    std::stringstream ss(targets);
    for (std::string t; std::getline(ss, t, ',');) ts.push_back(t);
  }
  const int n0 = std::max(24, faces), nrows = 64;  // 17 faces: 64 x 5 x 24 doubles x 3: 90 KiB
  Rows rows(n0, nrows);
  struct Kernel {
    const char* name;
    bool hllc;
  };
  const Kernel kernels[] = {{"hllc", true}, {"hlle", false}};
  // ns per face: [kernel][target][repeat]
  std::vector<std::vector<std::vector<double>>> t(2, std::vector<std::vector<double>>(ts.size()));
  // Each sample times a batch of 8 rows (a few microseconds); a repeat is the least of
  // `samples` of them, which leaves out the samples a shared machine interrupted.
  const int samples = 400, batch = 8;
  for (int rep = 0; rep < repeats; ++rep)
    for (std::size_t x = 0; x < ts.size(); ++x) {
      simd::force(ts[x]);
      const bool ref = simd::reference();
      for (int k = 0; k < 2; ++k) {
        double best = 1e300;
        for (int s = 0; s < samples; ++s) {
          const int r0 = (s * batch) % nrows;
          const auto t0 = std::chrono::steady_clock::now();
          for (int r = r0; r < r0 + batch; ++r) {
            const hydro::RiemannRow a = rows.row(r, faces);
            (ref ? hydro::ref::riemann : hydro::simd::riemann)(kernels[k].hllc, true, a);
          }
          const double dt =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          best = std::min(best, dt);
        }
        t[k][x].push_back(1e9 * best / (double(batch) * faces));
      }
    }
  simd::force("auto");
  std::printf("ns per face, median (least) of %d repeats, rows of %d faces (uniform gamma)\n",
              repeats, faces);
  std::printf("%-8s", "kernel");
  for (auto& n : ts) std::printf(" %16s", n.c_str());
  std::printf("\n");
  for (int k = 0; k < 2; ++k) {
    std::printf("%-8s", kernels[k].name);
    for (std::size_t x = 0; x < ts.size(); ++x)
      std::printf("  %6.3f (%6.3f)", median(t[k][x]), least(t[k][x]));
    std::printf("\n");
  }
  // PPM: W [5][22^3] of smooth-plus-noise positive states (a few extrema per row, so both
  // sides of every select occur), faces of one axis for all interior rows.
  const int ng = 3, nx = 16, m0 = nx + 2 * ng;
  const std::size_t N = std::size_t(m0) * m0 * m0;
  std::vector<double> W(5 * N), lo(5 * m0), hi(5 * m0), ds(5 * (m0 + 2));
  {
    std::mt19937_64 g(7);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (std::size_t c = 0; c < N; ++c) {
      const double x = double(c % m0) / m0, y = double((c / m0) % m0) / m0,
                   z = double(c / (m0 * m0)) / m0;
      const double smooth = std::sin(6.0 * x + 4.0 * y - 5.0 * z);
      W[c] = 2.0 + smooth + 0.3 * u(g);
      for (int v = 1; v < 4; ++v) W[v * N + c] = smooth * v * 0.3 + 0.2 * u(g);
      W[4 * N + c] = 3.0 - smooth + 0.3 * u(g);
    }
  }
  const std::ptrdiff_t stride[3] = {1, m0, std::ptrdiff_t(m0) * m0};
  std::vector<std::vector<std::vector<double>>> tp(3, std::vector<std::vector<double>>(ts.size()));
  double psum = 0;
  for (int rep = 0; rep < repeats; ++rep)
    for (std::size_t x = 0; x < ts.size(); ++x) {
      simd::force(ts[x]);
      const bool ref = simd::reference();
      for (int a = 0; a < 3; ++a) {
        const int i0 = a == 0 ? ng - 1 : ng, i1 = a == 0 ? ng + nx + 1 : ng + nx;
        double best = 1e300;
        for (int s = 0; s < 40; ++s) {
          const auto t0 = std::chrono::steady_clock::now();
          for (int k = ng; k < ng + nx; ++k)
            for (int j = ng; j < ng + nx; ++j) {
              const std::size_t rb = (std::size_t(k) * m0 + j) * m0;
              if (ref) {
                hydro::ref::ppm_states_row(W.data(), N, rb, stride[a], i0, i1, m0, 5, lo.data(),
                                           hi.data());
                for (double* f : {lo.data(), hi.data()})
                  hydro::ref::fallback_row(f, f + m0, f + 2 * m0, f + 3 * m0, f + 4 * m0,
                                           W.data() + rb, W.data() + N + rb, W.data() + 2 * N + rb,
                                           W.data() + 3 * N + rb, W.data() + 4 * N + rb, i0, i1,
                                           1e-30, 1e-30);
              } else {
                hydro::simd::ppm_faces(W.data(), N, rb, stride[a], i0, i1, m0, 5, 1e-30, 1e-30,
                                       ds.data(), lo.data(), hi.data());
              }
              psum += lo[i0] + hi[i1 - 1];
            }
          const double dt =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          best = std::min(best, dt);
        }
        tp[a][x].push_back(1e9 * best / (double(nx) * nx * (i1 - i0)));
      }
    }
  simd::force("auto");
  std::printf("PPM face states + fallback, ns per zone, median (least) of %d repeats, 16^3 block\n",
              repeats);
  std::printf("%-8s", "axis");
  for (auto& n : ts) std::printf(" %16s", n.c_str());
  std::printf("\n");
  for (int a = 0; a < 3; ++a) {
    std::printf("%-8s", a == 0 ? "x" : (a == 1 ? "y" : "z"));
    for (std::size_t x = 0; x < ts.size(); ++x)
      std::printf("  %6.3f (%6.3f)", median(tp[a][x]), least(tp[a][x]));
    std::printf("\n");
  }
  std::printf("ppm checksum %.6e\n", psum);

  // Primitives (simd::primitives, uniform gamma) of a whole 16^3 block with 2 guard zones
  // (20^3 cells) from conserved variables, out of place as a var-major block runs it. The
  // reference is hydro.cpp's own loop, which the bench cannot call: Highway targets only.
  const std::size_t NP = 20 * 20 * 20;
  std::vector<double> U(5 * NP), WP(5 * NP);
  {
    std::mt19937_64 g(11);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (std::size_t c = 0; c < NP; ++c) {
      const double d = std::pow(10.0, 2.0 * u(g) - 1.0), vx = u(g) - 0.5, vy = u(g) - 0.5,
                   vz = u(g) - 0.5, p = std::pow(10.0, 2.0 * u(g) - 1.0);
      U[c] = d, U[NP + c] = d * vx, U[2 * NP + c] = d * vy, U[3 * NP + c] = d * vz;
      U[4 * NP + c] = p / 0.4 + 0.5 * d * (vx * vx + vy * vy + vz * vz);
    }
  }
  std::vector<std::string> hw;
  for (const auto& n : ts)
    if (n != "scalar") hw.push_back(n);
  std::vector<std::vector<double>> tq(hw.size());
  double qsum = 0;
  for (int rep = 0; rep < repeats; ++rep)
    for (std::size_t x = 0; x < hw.size(); ++x) {
      simd::force(hw[x]);
      hydro::simd::PrimitivesRow a;
      a.n = NP, a.uniform = true, a.gm1 = 0.4, a.smalld = 1e-30, a.smallp = 1e-30;
      a.d = U.data(), a.mx = U.data() + NP, a.my = U.data() + 2 * NP, a.mz = U.data() + 3 * NP;
      a.e = U.data() + 4 * NP;
      a.wr = WP.data(), a.wx = WP.data() + NP, a.wy = WP.data() + 2 * NP;
      a.wz = WP.data() + 3 * NP, a.wp = WP.data() + 4 * NP;
      double best = 1e300;
      for (int s = 0; s < 40; ++s) {
        const auto t0 = std::chrono::steady_clock::now();
        hydro::simd::primitives(a);
        const double dt =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, dt);
        qsum += WP[4 * NP + std::size_t(s)];
      }
      tq[x].push_back(1e9 * best / double(NP));
    }
  simd::force("auto");
  std::printf("primitives, ns per cell, median (least) of %d repeats, 16^3 block + 2 guards\n",
              repeats);
  std::printf("%-8s", "");
  for (auto& n : hw) std::printf(" %16s", n.c_str());
  std::printf("\n%-8s", "uniform");
  for (std::size_t x = 0; x < hw.size(); ++x)
    std::printf("  %6.3f (%6.3f)", median(tq[x]), least(tq[x]));
  std::printf("\nprimitives checksum %.6e\n", qsum);
  double checksum = 0;
  for (double v : rows.f) checksum += v;
  std::printf("checksum %.6e\n", checksum);
  return 0;
}

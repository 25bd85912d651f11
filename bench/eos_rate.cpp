// tessera_eos_bench: Helmholtz EOS evaluations per second on one core, scalar reference
// kernel against the vectorised one, modes dens_temp and dens_ei, over white-dwarf states
// (rho log-uniform in [1e6, 3e9] g/cm^3, T log-uniform in [1e7, 1e10] K, 50/50 C/O by
// mass). Median of 7 repeats of a 65536-zone pencil. dens_ei starts Newton from the true
// temperature times a factor in [0.9, 1.1] (a hydro step's change).
//
//   tessera_eos_bench [TABLE] [--zones N] [--repeats R]
//
// The vector kernel runs the best SIMD target this processor has, or the one TESSERA_SIMD
// names (base/simd.hpp: avx2, avx512, sse4, ...); the first line says which. Forcing a
// lower target measures it only in a portable build (-DTESSERA_NATIVE=OFF).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "physics/eos/helmholtz/helmholtz.hpp"

namespace {

using tessera::eos::Helmholtz;
using tessera::eos::Mode;
using tessera::eos::Pencil;

using Zones = tessera::eos::PencilArrays;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string table;
  std::size_t n = 65536;
  int repeats = 7;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--zones") == 0 && a + 1 < argc) {
      n = std::strtoul(argv[++a], nullptr, 10);
    } else if (std::strcmp(argv[a], "--repeats") == 0 && a + 1 < argc) {
      repeats = std::atoi(argv[++a]);
    } else {
      table = argv[a];
    }
  }
  try {
    tessera::simd::force_from_environment();
    const Helmholtz eos(table, 1.0);
    Zones ref(n);
    std::mt19937_64 rng(20240601);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (std::size_t i = 0; i < n; ++i) {
      ref.dens[i] = 1e6 * std::pow(3e3, u(rng));
      ref.temp[i] = 1e7 * std::pow(1e3, u(rng));
      ref.abar[i] = Helmholtz::default_abar;
      ref.zbar[i] = Helmholtz::default_zbar;
    }
    {
      Pencil p = ref.pencil();
      if (eos.apply(Mode::dens_temp, p).failed >= 0) throw std::runtime_error("bad states");
    }
    std::vector<double> guess_factor(n);
    for (auto& g : guess_factor) g = 0.9 + 0.2 * u(rng);

    std::printf("tessera_eos_bench: Helmholtz EOS, %zu white-dwarf zones (C/O), table %s\n", n,
                eos.table_path().c_str());
    const auto target = tessera::simd::current();
    std::printf("  median of %d repeats, one core; vector kernel: %s (%d doubles per vector)\n",
                repeats, target.name.c_str(), target.lanes);
#ifndef TESSERA_PORTABLE
    std::printf(
        "  (a native build: every target's copy carries -march=native's instructions, so a\n"
        "   forced lower target is not measured here; build with -DTESSERA_NATIVE=OFF)\n");
#endif
    std::printf("\n");
    std::printf("  %-10s %-8s %14s %12s %10s\n", "mode", "kernel", "evals/s", "ns/eval",
                "Newton it");
    for (Mode mode : {Mode::dens_temp, Mode::dens_ei}) {
      double rate[2] = {0.0, 0.0};
      for (int vec = 0; vec < 2; ++vec) {
        std::vector<double> secs;
        long iters = 0;
        for (int r = 0; r < repeats; ++r) {
          Zones z = ref;  // fresh inputs: dens_ei overwrites temp
          if (mode == Mode::dens_ei)
            for (std::size_t i = 0; i < n; ++i) z.temp[i] *= guess_factor[i];
          Pencil p = z.pencil();
          const auto t0 = std::chrono::steady_clock::now();
          const auto res = vec ? eos.apply(mode, p) : eos.apply_scalar(mode, p);
          const auto t1 = std::chrono::steady_clock::now();
          if (res.failed >= 0) throw std::runtime_error("zone failed in the benchmark");
          secs.push_back(std::chrono::duration<double>(t1 - t0).count());
          iters = res.iterations;
        }
        const double t = median(secs);
        rate[vec] = static_cast<double>(n) / t;
        std::printf("  %-10s %-8s %14.4g %12.1f %10.2f\n",
                    mode == Mode::dens_temp ? "dens_temp" : "dens_ei", vec ? "vector" : "scalar",
                    rate[vec], 1e9 * t / static_cast<double>(n),
                    static_cast<double>(iters) / static_cast<double>(n));
      }
      std::printf("  %-10s speed-up vector / scalar: %.2fx\n\n",
                  mode == Mode::dens_temp ? "dens_temp" : "dens_ei", rate[1] / rate[0]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_eos_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

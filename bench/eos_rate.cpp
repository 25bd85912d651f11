// tessera_eos_bench: Helmholtz EOS evaluations per second on one core, scalar reference
// kernel against the vectorised one, modes dens_temp and dens_ei, over white-dwarf states
// (rho log-uniform in [1e6, 3e9] g/cm^3, T log-uniform in [1e7, 1e10] K, 50/50 C/O by
// mass). Median of 7 repeats of a 65536-zone pencil, scalar and vector alternating (the
// speed-up is the median of the repeats' ratios; "best ns" the fastest repeat). dens_ei starts
// Newton from the true temperature times a factor in [0.9, 1.1] (a hydro step's change).
//
//   tessera_eos_bench [TABLE] [--zones N] [--repeats R] [--mode dens_temp|dens_ei] [--hash]
//
// --hash prints a hash of each kernel's outputs (the CRC-32 of their bytes), to show that
// a change to a kernel gives the same bits as before.
//
// The vector kernel runs the best SIMD target this processor has, or the one TESSERA_SIMD
// names (base/simd.hpp: avx2, avx512, sse4, ...); the first line says which. Forcing a
// lower target measures it only in a portable build (the default; not with
// -DTESSERA_NATIVE=ON or -DTESSERA_ARCH).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "base/simd.hpp"
#include "io/manifest.hpp"
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

/// The CRC-32 (io/manifest.hpp: the output files' checksums) of the bytes of every output
/// (temp, eint, pres, gamc, game, cs), in that order: equal values mean the same bits (to
/// check that a change to a kernel leaves its results alone).
std::uint32_t output_crc(const Zones& z) {
  std::vector<std::uint32_t> crcs;
  std::vector<std::uint64_t> bytes;
  for (const auto* v : {&z.temp, &z.eint, &z.pres, &z.gamc, &z.game, &z.cs}) {
    bytes.push_back(v->size() * sizeof(double));
    crcs.push_back(tessera::io::crc_of_bytes(v->data(), bytes.back()));
  }
  return tessera::io::chain_crcs(crcs, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  std::string table;
  std::size_t n = 65536;
  int repeats = 7;
  bool hash = false;
  std::vector<Mode> modes = {Mode::dens_temp, Mode::dens_ei};
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--zones") == 0 && a + 1 < argc) {
      n = std::strtoul(argv[++a], nullptr, 10);
    } else if (std::strcmp(argv[a], "--repeats") == 0 && a + 1 < argc) {
      repeats = std::atoi(argv[++a]);
    } else if (std::strcmp(argv[a], "--mode") == 0 && a + 1 < argc) {
      const std::string m = argv[++a];
      if (m != "dens_temp" && m != "dens_ei") {
        std::fprintf(stderr, "tessera_eos_bench: --mode takes dens_temp or dens_ei, not '%s'\n",
                     m.c_str());
        return 2;
      }
      modes = {m == "dens_temp" ? Mode::dens_temp : Mode::dens_ei};
    } else if (std::strcmp(argv[a], "--hash") == 0) {
      hash = true;
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
    {  // eint and pres (dens_ei's inputs) from the reference kernel: they do not move when
       // the vector kernel under test changes
      Pencil p = ref.pencil();
      if (eos.apply_scalar(Mode::dens_temp, p).failed >= 0) throw std::runtime_error("bad states");
    }
    std::vector<double> guess_factor(n);
    for (auto& g : guess_factor) g = 0.9 + 0.2 * u(rng);

    std::printf("tessera_eos_bench: Helmholtz EOS, %zu white-dwarf zones (C/O), table %s\n", n,
                eos.table_path().c_str());
    const auto target = tessera::simd::current();
    std::printf("  median of %d repeats, one core; vector kernel: %s (%d doubles per vector)\n",
                repeats, target.name.c_str(), target.lanes);
    if (tessera::simd::compiled_for() != "portable")
      std::printf(
          "  (built with -march=%s: every target's copy carries its instructions, so a forced\n"
          "   lower target is not measured here; use the default, portable build)\n",
          tessera::simd::compiled_for().c_str());
    std::printf("\n");
    std::printf("  %-10s %-8s %14s %12s %10s %10s\n", "mode", "kernel", "evals/s", "ns/eval",
                "best ns", "Newton it");
    for (Mode mode : modes) {
      // Scalar and vector alternate repeat by repeat, so that both see the same load on a
      // shared machine; the speed-up is the median of the per-repeat ratios.
      std::vector<double> secs[2], ratio;
      std::uint32_t digest[2] = {0, 0};
      long iters[2] = {0, 0};
      for (int r = 0; r < repeats; ++r) {
        for (int vec = 0; vec < 2; ++vec) {
          Zones z = ref;  // fresh inputs: dens_ei overwrites temp
          if (mode == Mode::dens_ei)
            for (std::size_t i = 0; i < n; ++i) z.temp[i] *= guess_factor[i];
          Pencil p = z.pencil();
          const auto t0 = std::chrono::steady_clock::now();
          const auto res = vec ? eos.apply(mode, p) : eos.apply_scalar(mode, p);
          const auto t1 = std::chrono::steady_clock::now();
          if (res.failed >= 0) throw std::runtime_error("zone failed in the benchmark");
          secs[vec].push_back(std::chrono::duration<double>(t1 - t0).count());
          if (hash && r == 0) digest[vec] = output_crc(z);
          iters[vec] = res.iterations;
        }
        ratio.push_back(secs[0].back() / secs[1].back());
      }
      const char* name = mode == Mode::dens_temp ? "dens_temp" : "dens_ei";
      for (int vec = 0; vec < 2; ++vec) {
        const double t = median(secs[vec]);
        const double best = *std::min_element(secs[vec].begin(), secs[vec].end());
        std::printf("  %-10s %-8s %14.4g %12.1f %10.1f %10.2f\n", name, vec ? "vector" : "scalar",
                    static_cast<double>(n) / t, 1e9 * t / static_cast<double>(n),
                    1e9 * best / static_cast<double>(n),
                    static_cast<double>(iters[vec]) / static_cast<double>(n));
      }
      if (hash)
        std::printf("  %-10s output hashes: scalar %08x vector %08x\n", name,
                    static_cast<unsigned>(digest[0]), static_cast<unsigned>(digest[1]));
      std::printf("  %-10s speed-up vector / scalar: %.2fx (median of the repeats' ratios)\n\n",
                  name, median(ratio));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_eos_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

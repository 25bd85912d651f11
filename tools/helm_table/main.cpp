// tessera_helm_table: generate the Helmholtz EOS table (Timmes' helm_table.dat format) from
// first principles; see physics/eos/helmholtz/table_generator.hpp for the physics.
//
//   tessera_helm_table OUT [--threads N]
//
// Writes OUT (through OUT.tmp and a rename, so a half-written table is never seen), then
// prints the generation time and the file's SHA-256. The bytes do not depend on N.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "base/sha256.hpp"
#include "physics/eos/helmholtz/table_generator.hpp"

namespace {

int usage() {
  std::cerr << "usage: tessera_helm_table OUT [--threads N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace h = tessera::eos::helmholtz;
  std::string out;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--threads") == 0 && a + 1 < argc) {
      threads = std::atoi(argv[++a]);
      if (threads < 1) return usage();
    } else if (argv[a][0] == '-' || !out.empty()) {
      return usage();
    } else {
      out = argv[a];
    }
  }
  if (out.empty()) return usage();
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const auto nodes = h::generate_table(h::standard_grid, threads);
    const auto t1 = std::chrono::steady_clock::now();
    const std::string text = h::format_table(nodes);
    const std::string tmp = out + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (!f) throw std::runtime_error("cannot write '" + tmp + "'");
      f.write(text.data(), static_cast<std::streamsize>(text.size()));
      f.close();
      if (!f) throw std::runtime_error("cannot write '" + tmp + "'");
    }
    std::filesystem::rename(tmp, out);
    const double gen_s = std::chrono::duration<double>(t1 - t0).count();
    std::printf("helm_table: %zu nodes (%d x %d) generated in %.2f s on %d thread%s\n",
                nodes.size(), h::standard_grid.imax, h::standard_grid.jmax, gen_s, threads,
                threads == 1 ? "" : "s");
    std::printf("helm_table: wrote %s (%zu bytes)\n", out.c_str(), text.size());
    std::printf("helm_table: sha256 %s\n", tessera::base::sha256_hex(text).c_str());
  } catch (const std::exception& e) {
    std::cerr << "tessera_helm_table: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// tessera_tier_bench: what the memory tier layer sees on this machine: the detected
// topology (memory/tiers.hpp, one line) and the copy-bandwidth curve BW(n), n = 1..N
// threads (memory/tier_bench.hpp), the input of the helper-thread model. On a one-node
// machine the curve is DRAM-to-DRAM: it says how fast helper threads can copy here, not
// what a slow tier would give.
//
//   tessera_tier_bench [MAX_THREADS] [--mib M] [--copies C]    (default: cores, 64, 3)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "memory/tier_bench.hpp"
#include "memory/tiers.hpp"

int main(int argc, char** argv) {
  int max_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::size_t mib = 64;
  int copies = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--mib") && i + 1 < argc)
      mib = std::strtoul(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--copies") && i + 1 < argc)
      copies = std::atoi(argv[++i]);
    else
      max_threads = std::atoi(argv[i]);
  }
  try {
    std::printf("topology: %s\n", tessera::memory::detect_tiers().describe().c_str());
    std::printf("%8s %14s %12s   (%zu MiB per thread, median of %d)\n", "threads", "copy GB/s",
                "seconds", mib, copies);
    for (const auto& p :
         tessera::memory::copy_bandwidth_curve(max_threads, mib * tessera::memory::kMiB, copies))
      std::printf("%8d %14.2f %12.4f\n", p.threads, p.bytes_per_second / 1e9, p.seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_tier_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

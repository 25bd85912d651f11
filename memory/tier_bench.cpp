#include "memory/tier_bench.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/error.hpp"

namespace tessera::memory {

std::vector<BandwidthPoint> copy_bandwidth_curve(int max_threads, std::size_t bytes_per_copy,
                                                 int copies) {
  if (max_threads < 1 || bytes_per_copy == 0 || copies < 1)
    throw Error("copy_bandwidth_curve: need max_threads >= 1, bytes_per_copy > 0, copies >= 1");
  // Arenas: pre-faulted, so the first timed copy pays no page faults.
  std::vector<Arena> src, dst;
  for (int t = 0; t < max_threads; ++t) {
    src.emplace_back("tier_bench_src", bytes_per_copy, PagePolicy::none);
    dst.emplace_back("tier_bench_dst", bytes_per_copy, PagePolicy::none);
    std::memset(src.back().data(), t + 1, bytes_per_copy);
  }
  std::vector<BandwidthPoint> curve;
  for (int n = 1; n <= max_threads; ++n) {
    std::vector<double> times;
    for (int rep = 0; rep <= copies; ++rep) {  // rep 0: warm-up
      std::barrier sync(n + 1);
      std::vector<std::jthread> team;
      for (int t = 0; t < n; ++t)
        team.emplace_back([&, t] {
          sync.arrive_and_wait();
          std::memcpy(dst[t].data(), src[t].data(), bytes_per_copy);
          sync.arrive_and_wait();
        });
      sync.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      sync.arrive_and_wait();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      team.clear();
      if (rep > 0) times.push_back(s);
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    curve.push_back({n, double(n) * double(bytes_per_copy) / median, median});
  }
  return curve;
}

}  // namespace tessera::memory

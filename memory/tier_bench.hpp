#pragma once
// Copy-bandwidth micro-benchmark: BW(n), the bytes per second n threads copy together,
// for n = 1..max_threads, the curves the helper-thread model (tier_model.hpp, eqs 3-7)
// takes. Each thread copies its own source to its own destination (both pre-faulted, so
// page faults are not timed) `copies` times; a point is the median of its repetitions of
// the whole team's copy. On a one-node machine both buffers are in the same memory: the
// curve is this machine's DRAM-to-DRAM copy, not a tier-to-tier measurement.
#include <cstddef>
#include <vector>

#include "memory/arena.hpp"

namespace tessera::memory {

struct BandwidthPoint {
  int threads = 0;
  double bytes_per_second = 0;  ///< bytes copied (not read + written) per second, all threads
  double seconds = 0;           ///< median time of one team copy
};

/// BW(n) for n = 1..max_threads. bytes_per_copy per thread (64 MiB: well past the caches);
/// `copies` timed repetitions per point after one untimed warm-up. Allocates 2 *
/// max_threads * bytes_per_copy. Not collective; run it on an otherwise idle node.
std::vector<BandwidthPoint> copy_bandwidth_curve(int max_threads,
                                                 std::size_t bytes_per_copy = 64 * kMiB,
                                                 int copies = 3);

}  // namespace tessera::memory

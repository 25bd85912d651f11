#pragma once
// The WarpX-PM study's models as pure functions (J. Ren et al., ICS '21,
// doi 10.1145/3447818.3460356; distilled in reference/tiered-memory.md):
//   - the cache-prefetch distance for fields left in slow memory, eqs (1)-(2), with f the
//     FRACTION of field bytes in fast memory (the paper's ratio fast/slow exceeds 1 and
//     makes 1 - f negative);
//   - the fit of alpha, beta1, beta2 in eq (2) by linear least squares;
//   - the helper-thread count of dynamic placement, eqs (3)-(9).
// Units: seconds, bytes, bytes/s.
#include <cstddef>
#include <string>
#include <vector>

namespace tessera::memory {

/// Coefficients of eq (2): prefetch_time = alpha + beta1 f lat_fast + beta2 (1-f) lat_slow.
struct PrefetchModel {
  double alpha = 0, beta1 = 0, beta2 = 0;
};

/// Eq (2). f in [0, 1] (throws tessera::Error otherwise).
double prefetch_time(const PrefetchModel& m, double f, double lat_fast, double lat_slow);

/// Eq (1): k = ceil(prefetch_time / time_per_particle), at least 1. Throws for
/// time_per_particle <= 0 or a negative prefetch_time.
long prefetch_distance(double prefetch_time, double time_per_particle);

/// One micro-benchmark point: fraction f, the two latencies it ran with, the measured time.
struct PrefetchSample {
  double f = 0, lat_fast = 0, lat_slow = 0, time = 0;
};

/// Least-squares alpha, beta1, beta2 from samples (normal equations, 3x3).
///
/// The three regressors 1, f lat_fast, (1-f) lat_slow are linearly dependent when every
/// sample has the same pair of latencies ((1-f) lat_slow = lat_slow - (lat_slow/lat_fast)
/// f lat_fast): only alpha + beta2 lat_slow and the slope in f can then be fitted. The
/// samples must therefore span at least two latency pairs (e.g. the sequential and the
/// random latencies of both tiers); a singular system throws tessera::Error saying so.
PrefetchModel fit_prefetch_model(const std::vector<PrefetchSample>& samples);

/// Inputs of the helper-thread model, eqs (3)-(9). Curves are indexed by thread count
/// (element 0 unused): bw_slow_to_fast[n], bw_fast_to_slow[n] from the copy benchmark
/// (bytes/s with n threads copying), t_comp[n] and bw_comp[n] for n application threads
/// (the study measures them once with n_max threads and reuses them for n_max-2..n_max:
/// then fill with the same value). Each curve needs n_max + 1 elements.
struct HelperInputs {
  double data_in = 0;   ///< bytes fetched slow -> fast per interval (one batch)
  double data_out = 0;  ///< bytes written back fast -> slow per interval (modified batch)
  std::vector<double> bw_slow_to_fast, bw_fast_to_slow;
  std::vector<double> t_comp;   ///< seconds of one interval with its batch in fast memory
  std::vector<double> bw_comp;  ///< the application's own memory traffic, bytes/s
  int n_max = 1;                ///< hardware threads of the rank
  int n_ranks = 1;              ///< ranks sharing the memory whose BW_max is given
};

/// The decision: the smallest n_cp that satisfies threads (8), bandwidth (6) and overlap
/// (5) with n_comp in [n_max - 2, n_max] (and >= 1); among those n_comp, the one with the
/// smallest T_comp (goal (9): with the copies hidden, the interval takes T_comp).
struct HelperDecision {
  bool feasible = false;
  int n_cp = 0, n_comp = 0;
  double t_in = 0, t_out = 0, t_cp = 0;  ///< eqs (3)-(4) at n_cp
  double t_comp = 0;                     ///< T_comp(n_comp)
  double bw_used = 0;                    ///< left side of (6)
  double bw_budget = 0;                  ///< BW_max / N_ranks, eq (7)
  /// One line: the choice, or "infeasible: " and the constraint that failed for each n_cp.
  std::string why;
};

/// Eqs (3)-(9). No data to move gives n_cp = 0, n_comp = n_max. Throws tessera::Error
/// for curves shorter than n_max + 1 or non-positive bandwidths.
HelperDecision choose_helper_threads(const HelperInputs& in);

/// The study's typical case, built from reference/tiered-memory.md and documented in
/// tier_model.cpp: one rank on a 24-core socket, batches of 2^18 particles of 64 B, 150 ns
/// per particle per thread, Optane read/write limits. The model chooses 2 helper threads.
HelperInputs study_typical_inputs();

}  // namespace tessera::memory

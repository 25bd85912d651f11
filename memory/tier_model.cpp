#include "memory/tier_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "base/error.hpp"

namespace tessera::memory {

double prefetch_time(const PrefetchModel& m, double f, double lat_fast, double lat_slow) {
  if (!(f >= 0 && f <= 1))
    throw Error(
        fmt::format("prefetch_time: f = {} is not a fraction in [0, 1] (f is the share of "
                    "field bytes in fast memory)",
                    f));
  // Eq (2) with f the fraction (reference/tiered-memory.md).
  return m.alpha + m.beta1 * f * lat_fast + m.beta2 * (1 - f) * lat_slow;
}

long prefetch_distance(double prefetch_time, double time_per_particle) {
  if (!(time_per_particle > 0) || !(prefetch_time >= 0))
    throw Error(
        fmt::format("prefetch_distance: need prefetch_time >= 0 and time_per_particle > 0 "
                    "(got {} s, {} s)",
                    prefetch_time, time_per_particle));
  // Eq (1). A relative tolerance keeps an exact ratio (309 ns / 60 ns etc. computed in
  // floating point) from rounding up one particle too far.
  const double r = prefetch_time / time_per_particle;
  return std::max(1L, long(std::ceil(r * (1 - 1e-12))));
}

PrefetchModel fit_prefetch_model(const std::vector<PrefetchSample>& samples) {
  // Normal equations A^T A x = A^T y with rows [1, f lat_fast, (1-f) lat_slow]; columns
  // scaled to unit size first (latencies are ~1e-7) so the singularity test is relative.
  std::array<double, 3> scale{1, 0, 0};
  for (const auto& s : samples) {
    scale[1] = std::max(scale[1], std::abs(s.f * s.lat_fast));
    scale[2] = std::max(scale[2], std::abs((1 - s.f) * s.lat_slow));
  }
  const char* kWhy =
      "fit_prefetch_model: alpha, beta1, beta2 are not identifiable from these samples (need at "
      "least 3, spanning two or more latency pairs: with one pair the regressors are collinear)";
  if (samples.size() < 3 || scale[1] == 0 || scale[2] == 0) throw Error(kWhy);
  double a[3][4] = {};
  for (const auto& s : samples) {
    const double row[3] = {1, s.f * s.lat_fast / scale[1], (1 - s.f) * s.lat_slow / scale[2]};
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) a[i][j] += row[i] * row[j];
      a[i][3] += row[i] * s.time;
    }
  }
  double trace = a[0][0] + a[1][1] + a[2][2];
  // Gaussian elimination with partial pivoting.
  for (int c = 0; c < 3; ++c) {
    int piv = c;
    for (int r = c + 1; r < 3; ++r)
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    if (std::abs(a[piv][c]) < 1e-10 * trace) throw Error(kWhy);
    for (int j = 0; j < 4; ++j) std::swap(a[c][j], a[piv][j]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double k = a[r][c] / a[c][c];
      for (int j = c; j < 4; ++j) a[r][j] -= k * a[c][j];
    }
  }
  return PrefetchModel{a[0][3] / a[0][0], a[1][3] / a[1][1] / scale[1],
                       a[2][3] / a[2][2] / scale[2]};
}

HelperDecision choose_helper_threads(const HelperInputs& in) {
  const auto n_max = std::size_t(std::max(in.n_max, 1));
  for (const auto* v : {&in.bw_slow_to_fast, &in.bw_fast_to_slow, &in.t_comp, &in.bw_comp})
    if (v->size() < n_max + 1)
      throw Error(fmt::format("choose_helper_threads: a curve has {} elements, need n_max + 1 = {}",
                              v->size(), n_max + 1));
  for (std::size_t n = 1; n <= n_max; ++n)
    if (!(in.bw_slow_to_fast[n] > 0) || !(in.bw_fast_to_slow[n] > 0))
      throw Error(
          fmt::format("choose_helper_threads: copy bandwidth at {} threads is not positive", n));

  HelperDecision d;
  // Eq (7): BW_max is the larger of the two directions' best; (6) shares it among ranks.
  const double bw_max = std::max(
      *std::max_element(in.bw_slow_to_fast.begin() + 1, in.bw_slow_to_fast.begin() + n_max + 1),
      *std::max_element(in.bw_fast_to_slow.begin() + 1, in.bw_fast_to_slow.begin() + n_max + 1));
  d.bw_budget = bw_max / std::max(in.n_ranks, 1);
  const int lo = std::max(1, in.n_max - 2);

  if (in.data_in <= 0 && in.data_out <= 0) {
    d.feasible = true;
    d.n_comp = in.n_max;
    d.t_comp = in.t_comp[n_max];
    d.bw_used = in.bw_comp[n_max];
    d.why = fmt::format("no data to move: 0 helper threads, {} application threads", in.n_max);
    return d;
  }

  std::string failures;
  for (int n_cp = 1; n_cp < in.n_max; ++n_cp) {
    // Eqs (3)-(4): both directions run at once.
    const double t_in = in.data_in / in.bw_slow_to_fast[n_cp];
    const double t_out = in.data_out / in.bw_fast_to_slow[n_cp];
    const double t_cp = std::max(t_in, t_out);
    std::string fail;
    int best = -1;
    for (int n_comp = std::min(in.n_max - n_cp, in.n_max); n_comp >= lo; --n_comp) {
      // (8) holds by the loop bounds; (6) then (5).
      const double used = in.bw_comp[n_comp] + in.bw_slow_to_fast[n_cp] + in.bw_fast_to_slow[n_cp];
      if (used > d.bw_budget) {
        if (fail.empty())
          fail =
              fmt::format("bandwidth ({:.1f} + {:.1f} + {:.1f} GB/s > {:.1f} GB/s at n_comp = {})",
                          in.bw_comp[n_comp] / 1e9, in.bw_slow_to_fast[n_cp] / 1e9,
                          in.bw_fast_to_slow[n_cp] / 1e9, d.bw_budget / 1e9, n_comp);
        continue;
      }
      if (t_cp > in.t_comp[n_comp]) {
        if (fail.empty() || fail.rfind("bandwidth", 0) == 0)
          fail = fmt::format("overlap (T_cp {:.3g} ms > T_comp({}) {:.3g} ms)", t_cp * 1e3, n_comp,
                             in.t_comp[n_comp] * 1e3);
        continue;
      }
      if (best < 0 || in.t_comp[n_comp] < in.t_comp[best]) best = n_comp;
    }
    if (in.n_max - n_cp < lo && fail.empty())
      fail = fmt::format("threads (n_comp <= {} < {}; n_comp + n_cp <= n_max = {})",
                         in.n_max - n_cp, lo, in.n_max);
    if (best >= 0) {
      d.feasible = true;
      d.n_cp = n_cp;
      d.n_comp = best;
      d.t_in = t_in;
      d.t_out = t_out;
      d.t_cp = t_cp;
      d.t_comp = in.t_comp[best];
      d.bw_used = in.bw_comp[best] + in.bw_slow_to_fast[n_cp] + in.bw_fast_to_slow[n_cp];
      d.why = fmt::format(
          "{} helper thread{} and {} application threads: T_cp {:.3g} ms <= T_comp {:.3g} ms, "
          "{:.1f} <= {:.1f} GB/s{}",
          n_cp, n_cp == 1 ? "" : "s", best, t_cp * 1e3, d.t_comp * 1e3, d.bw_used / 1e9,
          d.bw_budget / 1e9, failures.empty() ? "" : "; rejected " + failures);
      return d;
    }
    failures += fmt::format("{}n_cp = {}: {}", failures.empty() ? "" : "; ", n_cp, fail);
  }
  if (in.n_max <= 1) failures = "threads (n_max = 1 leaves none for copying)";
  d.why = "infeasible: " + failures;
  return d;
}

HelperInputs study_typical_inputs() {
  // A plausible instance of the study's problems (reference/tiered-memory.md):
  // - one rank per socket of 24 cores (n_max = 24, N_ranks = 1), Optane PM per socket at
  //   39 GB/s read and 13 GB/s write;
  // - a batch is one box of 32^3 cells at 8 particles per cell = 2^18 particles of 64 B
  //   (WarpX's f64 layout): 16.8 MB in, and the same out (the push modifies every one);
  // - 150 ns per particle per thread for push + deposition (the reference's "tens of ns"
  //   for a vectorised push plus order-3 deposition, and its 60 ns per particle of the
  //   prefetch example: within that range for the heavier pair of kernels);
  //   T_comp(n) = 2^18 * 150 ns / n;
  // - copy curves: one thread copies 8 GB/s out of PM and 6.5 GB/s into it, up to the
  //   device limits of 39 and 13 GB/s;
  // - the application's own traffic is 8 GB/s (the study: ~10 % of DRAM's 104 GB/s
  //   outside deposition).
  // Then n_cp = 1 misses the overlap (T_out 2.6 ms > T_comp(23) 1.7 ms), n_cp = 2 fits
  // (T_out 1.3 ms <= T_comp(22) 1.8 ms; 8 + 16 + 13 = 37 <= 39 GB/s), and n_cp = 3 would
  // break the bandwidth budget (8 + 24 + 13 = 45 GB/s): 2 helper threads, as the study.
  HelperInputs in;
  in.n_max = 24;
  in.n_ranks = 1;
  const double particles = 1 << 18;
  in.data_in = in.data_out = particles * 64;
  in.bw_slow_to_fast.assign(in.n_max + 1, 0);
  in.bw_fast_to_slow.assign(in.n_max + 1, 0);
  in.t_comp.assign(in.n_max + 1, 0);
  in.bw_comp.assign(in.n_max + 1, 8e9);
  for (int n = 1; n <= in.n_max; ++n) {
    in.bw_slow_to_fast[n] = std::min(n * 8e9, 39e9);
    in.bw_fast_to_slow[n] = std::min(n * 6.5e9, 13e9);
    in.t_comp[n] = particles * 150e-9 / n;
  }
  return in;
}

}  // namespace tessera::memory

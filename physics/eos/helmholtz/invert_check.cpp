// Random inversion check of the Helmholtz EOS (see invert_check.hpp).
#include "physics/eos/helmholtz/invert_check.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "physics/eos/eos.hpp"

namespace tessera::eos::helmholtz {

InvertCheck invert_check(const Helmholtz& eos, std::size_t n, std::uint64_t seed) {
  InvertCheck r;
  r.states = n;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double comps[][2] = {{Helmholtz::default_abar, Helmholtz::default_zbar},
                             {4.0, 2.0},
                             {1.0, 1.0},
                             {56.0, 26.0},
                             {24.0, 12.0}};
  constexpr std::size_t chunk = 1001;
  long scalar_iterations = 0;
  for (std::size_t base = 0; base < n; base += chunk) {
    const std::size_t m = std::min(chunk, n - base);
    PencilArrays z(m);
    for (std::size_t i = 0; i < m; ++i) {
      const auto& c = comps[(base + i) % 5];
      z.abar[i] = c[0];
      z.zbar[i] = c[1];
      if ((base + i) % 2) {
        z.dens[i] = 1e6 * std::pow(3e3, u(rng));
        z.temp[i] = 1e7 * std::pow(1e3, u(rng));
      } else {
        z.dens[i] = 1e-8 * std::pow(1e19, u(rng));
        z.temp[i] = 2e3 * std::pow(2.5e9, u(rng));
      }
    }
    // dens_temp one zone at a time, so that a state outside the table drops out alone.
    std::vector<char> ok(m, 0);
    std::vector<double> kappa_e(m), kappa_p(m);
    for (std::size_t i = 0; i < m; ++i) {
      FullState in;
      in.dens = z.dens[i];
      in.temp = z.temp[i];
      in.abar = z.abar[i];
      in.zbar = z.zbar[i];
      const FullState s = eos.evaluate_nothrow(Mode::dens_temp, in);
      if (s.failure != Failure::none) continue;
      ok[i] = 1;
      z.eint[i] = s.eint;
      z.pres[i] = s.pres;
      kappa_e[i] = std::fabs(s.eint / (s.temp * s.dedt));
      kappa_p[i] = std::fabs(s.pres / (s.temp * s.dpdt));
      ++r.in_table;
    }
    // Pencils of the in-table states only (apply reports only the first failure).
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < m; ++i)
      if (ok[i]) idx.push_back(i);
    for (const Mode mode : {Mode::dens_ei, Mode::dens_pres}) {
      const bool by_e = mode == Mode::dens_ei;
      std::vector<double> guess(idx.size());
      for (std::size_t k = 0; k < idx.size(); ++k)
        guess[k] = z.temp[idx[k]] * std::pow(10.0, 2.0 * u(rng) - 1.0);
      // Zone by zone, each kernel on a pencil of one, so every failure is seen.
      for (std::size_t k = 0; k < idx.size(); ++k) {
        const std::size_t i = idx[k];
        double res[2] = {0.0, 0.0};
        bool failed[2] = {false, false};
        for (int kernel = 0; kernel < 2; ++kernel) {
          PencilArrays q(1);
          q.dens[0] = z.dens[i];
          q.abar[0] = z.abar[i];
          q.zbar[0] = z.zbar[i];
          q.eint[0] = z.eint[i];
          q.pres[0] = z.pres[i];
          q.temp[0] = guess[k];
          const Pencil p = q.pencil();
          const Result rr = kernel == 0 ? eos.apply_scalar(mode, p) : eos.apply(mode, p);
          failed[kernel] = rr.failed >= 0;
          res[kernel] = q.temp[0];
          if (kernel == 0) {
            scalar_iterations += rr.iterations;
            r.max_iterations = std::max(r.max_iterations, rr.max_iterations);
          }
        }
        ++r.inversions;
        r.scalar_failed += failed[0];
        r.vector_failed += failed[1];
        if (failed[0] != failed[1]) ++r.disagree;
        if (failed[0] || failed[1]) continue;
        const double kappa = 1.0 + (by_e ? kappa_e[i] : kappa_p[i]);
        const double rec = std::fabs(res[0] - z.temp[i]) / z.temp[i] / kappa;
        r.worst_recovery = std::max(r.worst_recovery, rec);
        if (rec > 1e-6) {
          ++r.not_recovered;  // kappa is the drawn state's, not that of the root found
          continue;
        }
        r.worst_dt = std::max(r.worst_dt, std::fabs(res[1] - res[0]) / res[0] / kappa);
      }
    }
  }
  r.mean_iterations =
      r.inversions ? static_cast<double>(scalar_iterations) / static_cast<double>(r.inversions)
                   : 0.0;
  return r;
}

}  // namespace tessera::eos::helmholtz

#pragma once
// A check of the Helmholtz EOS inversions (dens_ei, dens_pres) on random states, shared by
// `tessera eos --invert-check N` and the unit tests: every state inside the table whose
// energy or pressure comes from a dens_temp call must invert in both kernels, to the same
// temperature within round-off times the condition number.
#include <cstddef>
#include <cstdint>

#include "physics/eos/helmholtz/helmholtz.hpp"

namespace tessera::eos::helmholtz {

/// What invert_check found (counts over states x the two modes).
struct InvertCheck {
  std::size_t states = 0;         ///< random states drawn
  std::size_t in_table = 0;       ///< of them, inside the table (dens_temp succeeded)
  std::size_t inversions = 0;     ///< in_table x 2 modes
  std::size_t scalar_failed = 0;  ///< inversions the scalar kernel failed
  std::size_t vector_failed = 0;  ///< inversions the vector kernel failed
  std::size_t disagree = 0;       ///< inversions one kernel failed and the other did not
  std::size_t not_recovered = 0;  ///< converged, but T differs from the drawn T by more than
                                  ///< 1e-6 (1 + kappa): another root (e(T) not monotonic)
  double worst_dt = 0.0;          ///< max |T_vec - T_scal| / T / (1 + kappa), recovered
  double worst_recovery = 0.0;    ///< max |T - T_drawn| / T_drawn / (1 + kappa), scalar
  double mean_iterations = 0.0;   ///< scalar kernel, per inversion
  int max_iterations = 0;         ///< scalar kernel
};

/// Draws `n` states (seeded, deterministic): half uniform in log over the whole table
/// (1e-8 <= rho <= 1e11, 2e3 <= T <= 5e12), half in white-dwarf conditions (1e6 <= rho
/// <= 3e9, 1e7 <= T <= 1e10), compositions from pure H to Fe-56; computes e and p with
/// dens_temp, then inverts both from a starting guess within a factor 10 of T, in the scalar
/// and the vector kernel (pencils of 1001 zones).
InvertCheck invert_check(const Helmholtz& eos, std::size_t n, std::uint64_t seed = 1);

}  // namespace tessera::eos::helmholtz

#pragma once
// The two kernels of the Helmholtz EOS (see helmholtz.hpp): declarations shared by
// helmholtz.cpp, scalar_kernel.cpp and vector_kernel.cpp.
#include "physics/eos/eos.hpp"
#include "physics/eos/helmholtz/helm_table.hpp"
#include "physics/eos/helmholtz/helmholtz.hpp"

namespace tessera::eos::helmholtz::detail {

/// Everything at (s.dens, s.temp, s.abar, s.zbar), which must be valid and inside the
/// table (solve_zone checks): Step 1-4 of Timmes' helmeos for one zone.
void eval_dens_temp(const HelmTable& t, double coulomb_mult, FullState& s);

/// One zone in any mode: input checks, Newton in T for dens_ei / dens_pres, final state.
/// Sets s.failure and s.iterations.
void solve_zone(const HelmTable& t, double coulomb_mult, Mode mode, FullState& s);

/// The vectorised kernel over a pencil (abar, zbar: the default composition).
Result apply_vector(const HelmTable& t, double coulomb_mult, double abar, double zbar, Mode mode,
                    const Pencil& p);

}  // namespace tessera::eos::helmholtz::detail

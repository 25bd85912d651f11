#pragma once
// A hydrostatic white dwarf built at start-up (verification.md §J): dP/dr = -G m rho / r^2,
// dm/dr = 4 pi r^2 rho, integrated outward (classical RK4 in r) from a central density and
// temperature with the run's EOS at the fixed composition composition.initial, until the
// density falls to the fluff's; no external profile file. The temperature is a function
// of density (StarTemperature): an isothermal core at T_c down to rho_iso, below it an
// adiabat of a non-degenerate gas, T = T_c (rho / rho_iso)^(2/3), never below the fluff's
// temperature, so that the star's edge is the fluff's state (an isothermal 7e8 K envelope
// would be radiation-dominated and blow into the fluff at ~1e11 cm/s). The problem maps the
// profile onto the mesh with sub-zone averages of rho and (mass-weighted) T (fluff outside), and
// for the Type Ia "EOS" test lights a flame bubble (flam, the ADR flame's progress variable)
// off-centre on the axis.
#include <string>
#include <vector>

#include "problems/problem.hpp"

namespace tessera::eos {
class Eos;
}

namespace tessera::problems {

/// T(rho) of the star (see the file comment).
struct StarTemperature {
  double temp_c = 7e8, rho_iso = 1e6, temp_fluff = 3e7;
  double operator()(double rho) const;
};

/// The radial profile of a hydrostatic star: samples at r[0] = 0 < r[1] < ...
struct StarProfile {
  std::vector<double> r, dens, pres, mass;
  StarTemperature temp;
  double radius = 0;      ///< where the density reached the fluff's (cm)
  double total_mass = 0;  ///< g
  long eos_calls = 0;
  /// Density at radius x (linear in r between samples; 0 beyond the last sample).
  double density_at(double x) const;
};

/// Integrate the star (throws tessera::Error if the EOS has no state on the way). dr is
/// the largest step; steps shrink to a tenth of the pressure scale height.
StarProfile build_star(const eos::Eos& eos, double rho_c, const StarTemperature& temp,
                       double rho_edge, double dr);

/// The density whose pressure at temperature temp(rho) is `pres` (dens_temp inverted in
/// log rho by bracketed Illinois regula falsi), starting near `guess`.
double density_of_pressure(const eos::Eos& eos, double pres, const StarTemperature& temp,
                           double guess, long* calls = nullptr);

/// wd.* parameters.
void declare_white_dwarf_params(base::Params& p);
/// The "white_dwarf" problem.
std::unique_ptr<Problem> make_white_dwarf(const base::Params& p, const eos::Eos& eos);

}  // namespace tessera::problems

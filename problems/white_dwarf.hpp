#pragma once
// A hydrostatic white dwarf built at start-up (verification.md §J): dP/dr = -G m rho / r^2,
// dm/dr = 4 pi r^2 rho, integrated outward (classical RK4 in r) from a central density and
// temperature with the run's EOS at the fixed composition composition.initial, isothermal,
// until the density falls to the fluff's; no external profile file. The problem maps the
// profile onto the mesh with sub-zone averages of rho and rho*e (fluff outside), and for
// the Type Ia "EOS" test lights a flame bubble (flam, the ADR flame's progress variable)
// off-centre on the axis.
#include <string>
#include <vector>

#include "problems/problem.hpp"

namespace tessera::eos {
class Eos;
}

namespace tessera::problems {

/// The radial profile of a hydrostatic, isothermal star: samples at r[0] = 0 < r[1] < ...
struct StarProfile {
  std::vector<double> r, dens, pres, mass;
  double temp = 0;        ///< K, everywhere in the star
  double radius = 0;      ///< where the density reached the fluff's (cm)
  double total_mass = 0;  ///< g
  long eos_calls = 0;
  /// Density at radius x (linear in r between samples; 0 beyond the last sample).
  double density_at(double x) const;
};

/// Integrate the star (throws tessera::Error if the EOS has no state on the way). dr is
/// the largest step; steps shrink to a tenth of the pressure scale height.
StarProfile build_star(const eos::Eos& eos, double rho_c, double temp_c, double rho_edge,
                       double dr);

/// Density of (pres, temp) from the EOS (dens_temp inverted in log rho by bracketed
/// Illinois regula falsi to a relative 1e-12 in pressure), starting near `guess`.
double density_of_pressure(const eos::Eos& eos, double pres, double temp, double guess,
                           long* calls = nullptr);

/// wd.* parameters.
void declare_white_dwarf_params(base::Params& p);
/// The "white_dwarf" problem.
std::unique_ptr<Problem> make_white_dwarf(const base::Params& p, const eos::Eos& eos);

}  // namespace tessera::problems

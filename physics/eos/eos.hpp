#pragma once
// The equation-of-state interface. An EOS is called on a whole pencil of zones at once
// (apply over n states), so that a tabulated EOS (Helmholtz, later) can amortise its
// table look-ups and vectorise; the per-call virtual dispatch is outside the zone loop.
// Modes follow FLASH's MODE_DENS_EI, MODE_DENS_TEMP and MODE_DENS_PRES.
#include <cstddef>

namespace tessera::eos {

/// Physical constants in cgs (CODATA 2018), shared by every EOS.
namespace cgs {
inline constexpr double k_boltzmann = 1.380649e-16;            ///< erg / K (exact)
inline constexpr double atomic_mass_unit = 1.66053906660e-24;  ///< g
}  // namespace cgs

/// Which pair of variables is given: density and one of specific internal energy,
/// temperature or pressure. apply() fills every other thermodynamic field.
enum class Mode { dens_ei, dens_temp, dens_pres };

/// Thermodynamic state of one zone, cgs. dens and the variable named by the Mode are
/// inputs; the EOS fills the rest. abar, zbar (mean mass and charge number) are inputs
/// for composition-dependent EOSs and are never written.
struct State {
  double dens;  ///< g / cm^3
  double eint;  ///< specific internal energy, erg / g
  double pres;  ///< erg / cm^3
  double temp;  ///< K
  double gamc;  ///< Γ1 = d ln p / d ln ρ at constant entropy; cs^2 = gamc p / ρ
  double game;  ///< 1 + p / (ρ eint), the "energy gamma"
  double cs;    ///< adiabatic sound speed, cm / s
  double abar = 1.0;
  double zbar = 1.0;
};

/// An equation of state. Implementations are immutable after construction, so apply()
/// is thread-safe; it does no allocation and reports nothing (callers check states).
class Eos {
 public:
  virtual ~Eos() = default;
  /// Given dens and the variable named by mode in states[0..n), fill the others.
  virtual void apply(Mode mode, State* states, std::size_t n) const = 0;
  /// Short name for logs and output files, e.g. "gamma_law".
  virtual const char* name() const = 0;
};

}  // namespace tessera::eos

#pragma once
// The equation-of-state interface. An EOS is called on a whole pencil of zones at once,
// in structure-of-arrays form, so that a tabulated EOS (Helmholtz) can amortise its table
// look-ups and vectorise across zones; the virtual dispatch is outside the zone loop.
// Modes follow FLASH's MODE_DENS_EI, MODE_DENS_TEMP and MODE_DENS_PRES.
#include <cstddef>

namespace tessera::eos {

/// Physical constants in cgs (CODATA 2018), shared by the gamma law. The Helmholtz EOS
/// keeps its own (CODATA 2006, as Timmes' reference code) in physics/eos/helmholtz/.
namespace cgs {
inline constexpr double k_boltzmann = 1.380649e-16;            ///< erg / K (exact)
inline constexpr double atomic_mass_unit = 1.66053906660e-24;  ///< g
}  // namespace cgs

/// Which pair of variables is given: density and one of specific internal energy,
/// temperature or pressure. apply() fills every other thermodynamic field.
enum class Mode { dens_ei, dens_temp, dens_pres };

/// A pencil of n zones, structure of arrays, cgs. The caller owns the arrays (often rows
/// of `unk` itself). `dens` and the variable named by the Mode are inputs; `temp` is also
/// the initial guess of an iterative EOS in dens_ei and dens_pres mode, so it must hold a
/// positive value. `abar`, `zbar` (mean mass and charge number per zone) are inputs for a
/// composition-dependent EOS; null means the EOS's own default composition. `cs` may be
/// null when the caller does not want it.
struct Pencil {
  std::size_t n = 0;
  double* dens = nullptr;  ///< g / cm^3
  double* temp = nullptr;  ///< K
  double* eint = nullptr;  ///< specific internal energy, erg / g
  double* pres = nullptr;  ///< erg / cm^3
  double* gamc = nullptr;  ///< Γ1 = d ln p / d ln ρ at constant entropy; cs^2 = gamc p / ρ
  double* game = nullptr;  ///< 1 + p / (ρ eint), the "energy gamma"
  double* cs = nullptr;    ///< adiabatic sound speed, cm / s (optional)
  const double* abar = nullptr;
  const double* zbar = nullptr;
};

/// What one apply() did. `failed` is the index of the first zone whose iteration did not
/// converge (its outputs are unspecified), or -1; the caller names the zone in its error.
struct Result {
  long iterations = 0;     ///< Newton iterations summed over the pencil
  int max_iterations = 0;  ///< the most any one zone took
  std::ptrdiff_t failed = -1;
};

/// An equation of state. Implementations are immutable after construction, so apply()
/// is thread-safe; it does no allocation and throws nothing.
class Eos {
 public:
  virtual ~Eos() = default;
  /// Given dens and the variable named by mode in p's arrays [0, n), fill the others.
  virtual Result apply(Mode mode, const Pencil& p) const = 0;
  /// Short name for logs and output files: "gamma" or "helmholtz".
  virtual const char* name() const = 0;
  /// False if apply() never reads abar and zbar (the caller may leave them null).
  virtual bool uses_composition() const { return true; }
};

/// An EOS seen through a fixed composition: apply() passes `abar`, `zbar` for every zone
/// of a pencil that brings none (problem set-ups, which know the initial mixture before
/// unk holds it). Keeps a reference: `eos` must outlive it.
class FixedComposition final : public Eos {
 public:
  FixedComposition(const Eos& eos, double abar, double zbar)
      : eos_(eos), abar_(abar), zbar_(zbar) {}
  Result apply(Mode mode, const Pencil& p) const override {
    if (p.abar != nullptr || p.n > kMax) return eos_.apply(mode, p);
    double a[kMax], z[kMax];
    for (std::size_t i = 0; i < p.n; ++i) a[i] = abar_, z[i] = zbar_;
    Pencil q = p;
    q.abar = a;
    q.zbar = z;
    return eos_.apply(mode, q);
  }
  const char* name() const override { return eos_.name(); }
  bool uses_composition() const override { return eos_.uses_composition(); }

 private:
  static constexpr std::size_t kMax = 64;  ///< set-ups call it a zone at a time
  const Eos& eos_;
  double abar_, zbar_;
};

}  // namespace tessera::eos

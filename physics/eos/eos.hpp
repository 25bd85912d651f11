#pragma once
// The equation-of-state interface. An EOS is called on a whole pencil of zones at once,
// in structure-of-arrays form, so that a tabulated EOS (Helmholtz) can amortise its table
// look-ups and vectorise across zones; the virtual dispatch is outside the zone loop.
// Modes follow FLASH's MODE_DENS_EI, MODE_DENS_TEMP and MODE_DENS_PRES.
#include <algorithm>
#include <cstddef>
#include <vector>

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

/// Owned storage for a pencil of n zones, every array (sound speed and composition
/// included) value-initialised; pencil() points a Pencil at it. For tests, benchmarks and
/// callers that evaluate states outside `unk`.
struct PencilArrays {
  explicit PencilArrays(std::size_t n)
      : dens(n), temp(n), eint(n), pres(n), gamc(n), game(n), cs(n), abar(n), zbar(n) {}
  Pencil pencil() {
    return {dens.size(), dens.data(), temp.data(), eint.data(), pres.data(),
            gamc.data(), game.data(), cs.data(),   abar.data(), zbar.data()};
  }
  std::vector<double> dens, temp, eint, pres, gamc, game, cs, abar, zbar;
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
  /// True if Gamma1 and game are the same in every state (the gamma law), with their
  /// values: a caller may then use them instead of per-zone arrays, and p = (game - 1)
  /// rho e holds by the definition of game.
  virtual bool uniform_gamma(double& /*gamc*/, double& /*game*/) const { return false; }
};

/// An EOS seen through a fixed composition: apply() passes `abar`, `zbar` for every zone
/// of a pencil that brings none (problem set-ups, which know the initial mixture before
/// unk holds it). Keeps a reference: `eos` must outlive it.
class FixedComposition final : public Eos {
 public:
  FixedComposition(const Eos& eos, double abar, double zbar)
      : eos_(eos), abar_(abar), zbar_(zbar) {}
  Result apply(Mode mode, const Pencil& p) const override {
    if (p.abar != nullptr) return eos_.apply(mode, p);
    double a[kChunk], z[kChunk];
    for (std::size_t i = 0; i < kChunk; ++i) a[i] = abar_, z[i] = zbar_;
    Result r;
    for (std::size_t at = 0; at < p.n; at += kChunk) {  // long pencils in chunks
      Pencil q = p;
      q.n = std::min(kChunk, p.n - at);
      for (double** f : {&q.dens, &q.temp, &q.eint, &q.pres, &q.gamc, &q.game}) *f += at;
      if (q.cs) q.cs += at;
      q.abar = a;
      q.zbar = z;
      const Result c = eos_.apply(mode, q);
      r.iterations += c.iterations;
      r.max_iterations = std::max(r.max_iterations, c.max_iterations);
      if (r.failed < 0 && c.failed >= 0) r.failed = std::ptrdiff_t(at) + c.failed;
    }
    return r;
  }
  const char* name() const override { return eos_.name(); }
  bool uses_composition() const override { return eos_.uses_composition(); }
  bool uniform_gamma(double& gamc, double& game) const override {
    return eos_.uniform_gamma(gamc, game);
  }

 private:
  static constexpr std::size_t kChunk = 64;
  const Eos& eos_;
  double abar_, zbar_;
};

}  // namespace tessera::eos

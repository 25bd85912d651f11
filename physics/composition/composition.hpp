#pragma once
// Composition: the species of composition.species become mass fractions X_i in `unk`
// (mass scalars: stored as X, advected by hydro as rho*X), renormalised to sum 1 after
// every hydro update (the largest correction of the run is kept and reported); they give
// per zone abar = 1 / sum(X_i / A_i), zbar = abar sum(Z_i X_i / A_i) and ye = zbar / abar
// (FLASH's Multispecies conventions). composition.scalars declares passive mass scalars
// the same way (advected, not normalised, not in abar).
#include <string>
#include <vector>

#include "physics/composition/nuclides.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::composition {

class Composition final : public physics::UnitBase<Composition> {
 public:
  /// composition.species, composition.scalars.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  /// Throws tessera::Error naming an unknown species (and the nearest known one).
  explicit Composition(const base::Params& p);

  std::string name() const override { return "composition"; }
  /// One mass scalar per species (checked) and per composition.scalars; abar, zbar (and ye
  /// unless a species sum is kept) derived.
  physics::Declarations declarations() const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// Zones the problem left without species (all zero) get composition.initial; then
  /// every zone is renormalised.
  void initialise(mesh::Mesh& m) override;
  physics::BadZone check(mesh::Mesh& m) const override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;

  bool has_species() const { return !species_.empty(); }
  /// abar and zbar of composition.initial (species must exist).
  void initial_abar_zbar(double& abar, double& zbar) const {
    double ya = 0.0, yz = 0.0, sum = 0.0;
    for (std::size_t s = 0; s < species_.size(); ++s) sum += initial_[s];
    for (std::size_t s = 0; s < species_.size(); ++s) {
      ya += initial_[s] / sum * inv_a_[s];
      yz += initial_[s] / sum * z_over_a_[s];
    }
    abar = 1.0 / ya;
    zbar = abar * yz;
  }
  const std::vector<Nuclide>& species() const { return species_; }
  /// unk index of species s (after bind).
  int index(std::size_t s) const { return idx_[s]; }

  /// abar and zbar of zone (i, j, k) of block u (species must exist). With `conserved`
  /// the view holds rho*X (unk inside hydro's advance: pass conserved()), divided by dens
  /// first; an output snapshot always holds X. Thread-safe (the I/O thread derives abar).
  template <class View>
  void abar_zbar(const View& u, int i, int j, int k, double& abar, double& zbar,
                 bool conserved) const {
    if (isumy_ >= 0) {  // another unit carries Ye and sum X/A (set_ion_variables)
      const double yi = u(isumy_, i, j, k), ye = u(iye_, i, j, k);
      abar = (conserved ? u(idens_, i, j, k) : 1.0) / yi;
      zbar = ye / yi;
      return;
    }
    double ya = 0.0, yz = 0.0;
    for (std::size_t s = 0; s < species_.size(); ++s) {
      const double x = u(idx_[s], i, j, k);
      ya += x * inv_a_[s];
      yz += x * z_over_a_[s];
    }
    if (conserved) {
      const double d = u(idens_, i, j, k);
      ya /= d;
      yz /= d;
    }
    abar = 1.0 / ya;
    zbar = abar * yz;
  }
  /// The EOS's abar and zbar come from the unk mass scalars `ye` (Ye) and `sumy` (sum X/A)
  /// of the unit that calls this at bind (burn.model = "three_stage", whose matter is not a
  /// mixture of the species) instead of from the species; initialise gives zones where
  /// sumy is 0 the species' values (unburned matter). The derived "ye" is then not offered
  /// (the unk variable is the same number).
  void set_ion_variables(int iye, int isumy) {
    iye_ = iye;
    isumy_ = isumy;
  }
  bool has_ion_variables() const { return isumy_ >= 0; }
  /// Hydro's switch: unk holds rho*X (true) or X (false) for every mass scalar. Read and
  /// written by the step loop's thread only.
  void set_conserved(bool c) { conserved_ = c; }
  bool conserved() const { return conserved_; }

  /// Scale every interior zone's species to sum 1 on this rank's leaves; returns the
  /// largest |sum - 1| met (kept as the run's largest correction too).
  double normalise(mesh::Mesh& m);

 private:
  friend class physics::UnitBase<Composition>;
  std::vector<Nuclide> species_;
  std::vector<double> initial_;  ///< composition.initial, one per species
  std::vector<std::string> scalars_;
  std::vector<int> idx_;
  std::vector<double> inv_a_, z_over_a_;
  double largest_ = 0.0;
  bool conserved_ = false;
  int idens_ = 0;
  int iye_ = -1, isumy_ = -1;
  template <class View>
  void derived_impl(const std::string& name, const View& u, const mesh::BlockShape& s, double* out,
                    bool with_guards) const;
};

}  // namespace tessera::composition

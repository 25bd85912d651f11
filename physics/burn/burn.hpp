#pragma once
// The burn unit: the nuclear energy release behind the ADR flame (physics/flame/), the
// first stage of the parametric scheme of Townsley et al. (2007, ApJ 668, 1118; 2009,
// ApJ 701, 1582) and Calder et al. (2007, ApJ 656, 313): carbon consumption at the front.
//
// Each step, where the flame operator advanced the progress variable by d phi > 0 (its
// `fdph`), the fraction d phi / (1 - phi_before) of the fuel species left in the zone
// (burn.fuel, 12C) becomes ash (burn.ash, 24Mg: 12C + 12C -> 24Mg, the ash of Flash-X's
// one-stage EIP set-up, sumyi 0.072917 -> 0.052083 for 50/50 C/O), mass for mass, and
// releases burn.q_fuel per gram of fuel consumed (5.6016e17 erg/g: Q = 13.9336 MeV per 24
// nucleons); so in fuel of carbon fraction X12 the release is q_fuel X12 d phi, Flash-X's
// EIP qdot = flame_deltae phidot with flame_deltae = q_fuel X12 (2.80e17 erg/g for
// X12 = 0.5). The energy goes into eint and etot (rho de), then the EOS refreshes the
// row (dens_ei, with the new composition). Ye does not change (Z/A = 1/2 on both sides).
// Tying the energy to the carbon actually consumed means no energy without fuel (mixed or
// already burned zones) and none given back where d phi < 0 (diffusion tails, clipping):
// burning is one-way here, where Flash-X's EIP would "unburn".
//
// The unit owns `qbrn`, the specific nuclear energy released so far (erg/g; a mass
// scalar, advected, guard-filled, plotted; Townsley et al. advect the mean binding energy
// the same way). With it the unit gives the flame its unburned-density estimate
// (flame::FuelDensity, for the expansion correction): the density at which the zone's
// matter, with its fuel restored (X_fuel + qbrn / q_fuel) and its enthalpy lowered by
// qbrn, has the zone's pressure (secant iteration on the EOS in dens_pres mode, only in
// zones inside the front, 0 < phi < 1).
//
// burn.model = "three_stage" (three_stage.hpp) adds the later stages of the same scheme:
// the ash relaxes to quasi-statistical and to nuclear statistical equilibrium on the
// density- and temperature-dependent times of Townsley et al., with neutronisation (Ye
// falls) and neutrino losses from the NSE table (nse_table.hpp, built from pynucastro's
// nuclear data by `make nse-table`), and a thermal 12C + 12C burn wherever the fuel is hot.
// Then the species of composition.species stay the FUEL's composition (the matter of a
// zone is (1 - phfa) fuel, the rest ash in its stages), and the unit carries the progress
// variables phfa, phaq, phqn, the mean binding energy qbar (MeV per nucleon), Ye (`ye`)
// and sum X/A (`sumy`) as mass scalars; the EOS takes abar = 1/sumy and zbar = ye/sumy
// (Composition::set_ion_variables).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "physics/burn/nse_table.hpp"
#include "physics/burn/three_stage.hpp"
#include "physics/eos/eos.hpp"
#include "physics/flame/flame.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}
namespace tessera::eos {
class EosUnit;
}
namespace tessera::composition {
class Composition;
}

namespace tessera::burn {

/// Stage 1 for one zone, given the flame's increment dphi and phi after it and the fuel
/// mass fraction x_fuel: the mass fraction of fuel turned to ash (0 for dphi <= 0).
inline double fuel_consumed(double x_fuel, double phi_after, double dphi) {
  if (!(dphi > 0.0) || !(x_fuel > 0.0)) return 0.0;
  const double left = 1.0 - (phi_after - dphi);  // unburned fraction before the step
  const double f = left > 1e-12 ? dphi / left : 1.0;
  return x_fuel * (f < 1.0 ? f : 1.0);
}

class Burn final : public physics::UnitBase<Burn>, public flame::FuelDensity {
 public:
  /// burn.model, burn.fuel, burn.ash, burn.q_fuel, burn.nse_table, burn.tau_*,
  /// burn.thermal_carbon.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Burn(const base::Params& p);

  std::string name() const override { return "burn"; }
  /// qbrn (mass scalar, guard-filled, plotted); with three_stage also phfa, phaq, phqn,
  /// qbar, sumy, ye.
  physics::Declarations declarations() const override;
  /// three_stage: the progress variables from the flame's flam (phfa; phaq = phqn = 0),
  /// qbar, sumy and ye of the zone's fuel and ash, and the EOS state for them.
  void initialise(mesh::Mesh& m) override;
  /// Finds the flame (required), the EOS, composition and the fuel and ash species.
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// Turns the flame's increment into ash and energy, then zeroes the increment
  /// (collective only through nothing: purely local).
  void advance(mesh::Mesh& m, double dt) override;
  /// model; energy_released (erg, summed over ranks) and fuel_consumed (g) by this run
  /// (since its start or restart; not checkpointed), estimates and failures of the
  /// unburned density; three_stage: nse_table_sha256, neutrino_losses (erg), ye_min,
  /// states clamped to the NSE table.
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;
  /// three_stage: the string "nse_table_sha256" in every output.
  physics::FileRecords file_records() const override {
    if (!nse_) return {};
    return {.strings = {{"nse_table_sha256", nse_->sha256()}}};
  }
  /// flame::FuelDensity: rho_u / rho of every cell of a row (1 outside 0 < phi < 1).
  void ratio_row(const mesh::BlockView<mesh::Layout::var_major>& u, const mesh::BlockShape& s,
                 int j, int k, double* out) const override {
    ratio_impl(u, s, j, k, out);
  }
  void ratio_row(const mesh::BlockView<mesh::Layout::zone_major>& u, const mesh::BlockShape& s,
                 int j, int k, double* out) const override {
    ratio_impl(u, s, j, k, out);
  }

  double q_fuel() const { return q_fuel_; }
  bool three_stage() const { return three_stage_; }
  /// Energy released on this rank so far (erg; per unit area in 1-D Cartesian, per unit
  /// length in 2-D Cartesian, as the totals).
  double energy_released() const { return released_; }

 private:
  std::string fuel_name_, ash_name_;
  double q_fuel_ = 5.6016e17;
  bool three_stage_ = false;
  std::string nse_path_;
  StageParams stage_;
  std::shared_ptr<const NseTable> nse_;
  std::vector<double> bind_;  ///< binding energy per nucleon of each species (three_stage)
  double ash_a_ = 24.0, ash_bind_ = 0.0;  ///< burn.ash's A and binding (three_stage)
  std::vector<double> sp_a_, sp_z_;       ///< the species' A and Z (three_stage)
  int ifuel_q_ = 0;                       ///< burn.fuel's position among the species
  int iphfa_ = -1, iphaq_ = -1, iphqn_ = -1, iqbar_ = -1, isumy_ = -1, iye_ = -1;
  double neutrino_ = 0.0, ye_min_ = 1.0;
  long out_of_table_ = 0;
  long burned_zone_steps_ = 0;  ///< zones the three-stage burn integrated, summed over steps
  /// Work per zone for mesh.balance = "cost", in zone-updates of the whole step: a
  /// three-stage burned zone (stage one and the relaxation), and a zone of a row the EOS
  /// updates after burning. Measured on snia_2d, 1 rank, 10 steps (Intel Xeon, AVX-512):
  /// the step 0.96 us per zone-update, the burn 0.014 s over 5,962 burned zone-steps (at
  /// most 2.3 us each, its scan of every zone included), hydro's Helmholtz calls 0.18 us
  /// per zone.
  static constexpr double kBurnedZoneWork = 2.0, kEosRowWork = 0.2;
  /// The fuel and stage-1 ash of zone (i, j, k) (three_stage).
  template <class View>
  FuelProps fuel_props(const View& u, int i, int j, int k) const;
  /// Stage 1 only (burn.model = "carbon").
  void advance_carbon(mesh::Mesh& m);
  void advance_three_stage(mesh::Mesh& m, double dt);
  flame::Flame* flame_ = nullptr;
  const composition::Composition* comp_ = nullptr;
  const eos::EosUnit* eos_ = nullptr;
  int iqbrn_ = -1, itemp_ = -1, ipres_ = -1;
  int idens_ = -1, ietot_ = -1, ieint_ = -1, ifuel_ = -1, iash_ = -1, iflam_ = -1, ifdph_ = -1;
  double released_ = 0.0, consumed_ = 0.0;  ///< every rank's totals (add_step_sums)
  /// This step's energy released, fuel consumed and neutrino losses per local leaf, by
  /// its block slot (bounded by mesh.maxblocks, not by the global tree).
  std::vector<std::array<double, 3>> step_sums_;
  /// Adds step_sums_ over every leaf, in the tree's order, to the totals (collective).
  void add_step_sums(mesh::Mesh& m);
  mutable long estimates_ = 0, estimate_failures_ = 0;
  /// Row scratch of the unburned-density estimate (one x-row of a block).
  struct Work {
    std::vector<int> cell, at, ok;
    std::vector<double> rho, e, qb, abar, zbar, abar_u, zbar_u, temp, p, hu, r0, r1, g0, g1;
    std::vector<double> d, t, ei, pr, gc, ge, ab, zb;  ///< the EOS pencil
    void resize(std::size_t n) {
      if (cell.size() >= n) return;
      for (auto* v : {&cell, &at, &ok}) v->assign(n, 0);
      for (auto* v : {&rho, &e,  &qb, &abar, &zbar, &abar_u, &zbar_u, &temp, &p,  &hu, &r0,
                      &r1,  &g0, &g1, &d,    &t,    &ei,     &pr,     &gc,   &ge, &ab, &zb})
        v->assign(n, 0.0);
    }
  };
  mutable Work work_;
  template <class View>
  void ratio_impl(const View& u, const mesh::BlockShape& s, int j, int k, double* out) const;
  /// The EOS in `mode` on the first n entries of work_'s pencil; the first failed index or -1.
  int eval(eos::Mode mode, int n, const double* abar, const double* zbar) const;
  /// g = e(r, p) + p / r - h_u for the cells still iterating (dens_pres, one pencil).
  void excess(int m, const double* r, double* g) const;
};

}  // namespace tessera::burn

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
// NOT BUILT (issue 10, item 2, later stages): the relaxation of the ash to
// quasi-statistical equilibrium (Si group) and to nuclear statistical equilibrium on
// density-dependent timescales, with neutronisation (Ye falling by electron captures).
// They need the NSE tables of Seitenzahl et al. (2009) (binding energy and Ye rates as a
// function of density, internal energy and Ye), which this repository does not have and
// cannot yet generate; approximating them without the tables would fake their numbers.
// So the ash here stays at the carbon-burned (O/Mg) stage and Ye stays at its fuel value.
#include <string>
#include <vector>

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
  /// burn.fuel, burn.ash, burn.q_fuel.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Burn(const base::Params& p);

  std::string name() const override { return "burn"; }
  /// qbrn (mass scalar, guard-filled, plotted).
  std::vector<mesh::VarInfo> variables() const override;
  /// Finds the flame (required), the EOS, composition and the fuel and ash species.
  void bind(mesh::Mesh& m, physics::Units& units, const physics::RunContext& ctx) override;
  /// Turns the flame's increment into ash and energy, then zeroes the increment
  /// (collective only through nothing: purely local).
  void advance(mesh::Mesh& m, double dt) override;
  /// energy_released (erg, summed over ranks) and fuel_consumed (g) by this run (since
  /// its start or restart; not checkpointed), estimates and failures of the unburned
  /// density.
  nlohmann::json summary(MPI_Comm comm) const override;
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
  /// Energy released on this rank so far (erg; per unit area in 1-D Cartesian, per unit
  /// length in 2-D Cartesian, as the totals).
  double energy_released() const { return released_; }

 private:
  std::string fuel_name_, ash_name_;
  double q_fuel_ = 5.6016e17;
  flame::Flame* flame_ = nullptr;
  const composition::Composition* comp_ = nullptr;
  const eos::EosUnit* eos_ = nullptr;
  int iqbrn_ = -1, itemp_ = -1, ipres_ = -1;
  int idens_ = -1, ietot_ = -1, ieint_ = -1, ifuel_ = -1, iash_ = -1, iflam_ = -1, ifdph_ = -1;
  double released_ = 0.0, consumed_ = 0.0;
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

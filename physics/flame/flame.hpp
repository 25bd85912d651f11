#pragma once
// The flame unit: the ADR flame front (physics/flame/adr.hpp) for Type Ia deflagrations.
// It owns the progress variable `flam` in unk (0 fuel, 1 ash; a mass scalar, so hydro
// advects it as rho*phi; guard-filled, plotted, usable as mesh.refine_var_N) and `fdph`,
// the reaction-diffusion increment of phi of the last flame step (auxiliary, not
// guard-filled, not plotted), which the burn unit turns into energy and ash and then
// zeroes, and `fspd`, the speed each zone had in the last step (auxiliary, plotted). Each step it
// fills the guard zones (Mesh::fill_guards: every guard-filled variable, flam and dens included),
// then reacts, diffuses and clips (adr.hpp), timed in region "flame". Its max_dt keeps the flame
// Courant number s dt / Delta at most flame.courant (<= 0.5, which keeps both explicit steps stable
// in any dimension).
//
// Flame speed per zone (flame_speed.hpp): flame.speed_model "constant" (flame.speed) or
// "laminar_co" (the C/O fit of the zone's density); with flame.buoyancy,
// max(s, 0.5 sqrt(A g m Delta)) with A = flame.atwood and g = |gravity|: flame.gravity_accel
// (or set_gravity_accel()) if > 0, else each zone's field gacx, gacy, gacz of the
// gravity operator (which runs before the flame); then times the quench factor (flame.quench)
// between flame.quench_dens_min and flame.quench_dens_max. Total "burned_mass": the volume integral
// of rho*phi.
//
// Expansion (flame.expansion_correction): in a front whose matter expands as it burns, the
// ADR front with the local speed s moves at about s rho_f / rho_u relative to the fuel,
// rho_f a density inside the front (0.95 s measured for rho_b / rho_u = 0.80), because
// the mass burning rate is set where the reaction is. With the correction the zone's
// speed is s rho_u / rho, rho_u the density its matter had before it burned at its
// present pressure, which a FuelDensity (the burn unit) supplies: then the planar steady
// front obeys -(mdot / rho_u) phi' = kappa phi'' + R / tau exactly (mdot the mass flux
// through it), the equation of the front at constant density, so it moves at s relative
// to the fuel with the model's width. The speed models and the quench see rho_u too (as
// Flash-X's laminar speed sees its unburned-density estimate). Without a FuelDensity
// (no burn unit) rho_u = rho.
#include <string>
#include <vector>

#include "physics/flame/adr.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::flame {

enum class SpeedModel { constant, laminar_co };

/// Density ratio rho_u / rho of the matter of each cell of an x-row (guard cells
/// included, element i of out is cell i of the block array row (j, k)): rho_u is the
/// density the cell's matter had before it burned, at its present pressure (1 where
/// nothing burned or no estimate exists). Implemented by the burn unit.
class FuelDensity {
 public:
  virtual ~FuelDensity() = default;
  virtual void ratio_row(const mesh::BlockView<mesh::Layout::var_major>& u,
                         const mesh::BlockShape& s, int j, int k, double* out) const = 0;
  virtual void ratio_row(const mesh::BlockView<mesh::Layout::zone_major>& u,
                         const mesh::BlockShape& s, int j, int k, double* out) const = 0;
};

/// Speed parameters of the flame (flame.*), evaluated per zone by speed().
struct SpeedOptions {
  SpeedModel model = SpeedModel::laminar_co;
  double speed = 8e6;  ///< cm/s, constant model
  bool buoyancy = false;
  double atwood = 0.1;
  double m = 0.06;
  double gravity = 0.0;  ///< |g|, cm/s^2
  bool quench = true;
  double quench_rho0 = 1e6, quench_rho1 = 1e7;
  /// The flame speed (cm/s) at density rho (g/cm^3) for zone width delta (cm).
  double speed_at(double rho, double delta) const;
  /// The same with the local |g| (cm/s^2) for the buoyancy compensation.
  double speed_at(double rho, double delta, double g) const;
};

class Flame final : public physics::UnitBase<Flame> {
 public:
  /// flame.speed_model, flame.speed, flame.buoyancy, flame.atwood, flame.buoyancy_m,
  /// flame.gravity_accel, flame.quench, flame.quench_dens_min, flame.quench_dens_max,
  /// flame.courant, flame.expansion_correction.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Flame(const base::Params& p);

  std::string name() const override { return "flame"; }
  /// flam (mass scalar, guard-filled, plotted), fdph (auxiliary), fspd (the flame speed
  /// of the last step, cm/s; auxiliary, plotted); two guard zones (the five-point
  /// Laplacian); the total "burned_mass" (integral of rho*phi).
  physics::Declarations declarations() const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// fdph = fspd = 0 everywhere (no increment, no speed before the first step).
  void initialise(mesh::Mesh& m) override;
  /// flame.courant * Delta / s over this rank's zones (not reduced); s the larger of the
  /// zone's speed model and 1.1 fspd (the expansion-corrected speed of the last step).
  double max_dt(mesh::Mesh& m) const override;
  /// Reaction, diffusion, clip on every local leaf (collective: fills guard zones).
  void advance(mesh::Mesh& m, double dt) override;
  /// First zone with phi outside [0, 1] or NaN.
  physics::BadZone check(mesh::Mesh& m) const override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;

  /// The magnitude of gravity (cm/s^2) the buoyancy compensation uses, for a gravity
  /// unit to set each step (or flame.gravity_accel, constant).
  void set_gravity_accel(double g) { speed_.gravity = g; }
  /// The unburned-density estimate for the expansion correction (the burn unit sets it
  /// in its bind; it must outlive the flame's use of it). Null: rho_u = rho.
  void set_fuel_density(const FuelDensity* f) { fuel_density_ = f; }
  const SpeedOptions& speed_options() const { return speed_; }
  const AdrModel& model() const { return model_; }
  /// unk indices (after bind).
  int flam() const { return iflam_; }
  int fdph() const { return ifdph_; }

 private:
  friend class physics::UnitBase<Flame>;
  template <class View>
  void totals_impl(const View& u, int i, int j, int k, double* out) const {
    out[0] = u(idens_, i, j, k) * u(iflam_, i, j, k);
  }
  SpeedOptions speed_;
  AdrModel model_;
  double courant_ = 0.05;
  bool expansion_ = true;
  const FuelDensity* fuel_density_ = nullptr;
  int idens_ = -1, iflam_ = -1, ifdph_ = -1, ifspd_ = -1;
  bool local_g_ = false;  ///< the buoyancy takes the local field (gac*)
  int igac_[3] = {-1, -1, -1};
  std::vector<double> phi1_, spd_, ratio_;  ///< one block array: phi after reaction,
                                            ///< speed, rho_u / rho
  std::vector<double> gabs_;                ///< |g| per cell of one block array (buoyancy)
  /// gabs_ = |g| of every cell of block u (guard zones included) from gac*.
  template <class View>
  void local_gravity(const View& u, const mesh::BlockShape& s);
  long steps_ = 0;
  double largest_clip_ = 0.0;  ///< the largest |phi - clip(phi)| met
};

}  // namespace tessera::flame

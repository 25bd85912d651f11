#pragma once
// The gravity unit: the potential `gpot` in unk and its source terms, applied as an
// operator after hydro (driver.operators = ["hydro", "gravity"]).
//
//   gravity.type = "none"      gpot = 0, no source;
//                  "constant"  uniform field g = gravity.constant_g along
//                              gravity.direction, gpot = -g x;
//                  "multipole" self-gravity of the density on the mesh by the multipole
//                              expansion of Couch, Graziani & Flocke (2013, ApJ 778, 181)
//                              (multipole.hpp): 3-D Cartesian with every (l, m), 2-D
//                              cylindrical r-z with m = 0 (optionally mirrored about the
//                              plane z = ymin), 1-D spherical (monopole).
//
// The potential is evaluated at the centre of every face of a leaf's interior zones and
// the face values are averaged to the zone (`gpot`), which avoids the divergent self term
// of a zone at its own centre; the field of a zone is the difference of its own opposite
// faces, g_a = -(phi_a+ - phi_a-) / dx_a, so no guard zones are needed (gpot is not
// guard-filled). The potential is recomputed from the current density at initialise,
// after every regrid and at every advance. The source (operator split, after hydro):
//   mom += dt rho g,   etot += dt g . (mom_old + mom_new) / 2,
// the time-centred momentum making the energy change exactly the kinetic energy change,
// so eint (and the EOS state) is untouched.
// Reductions are rank-count independent: per-leaf partial moments (only each leaf's own
// range of bins) are gathered and summed in canonical tree order, as the driver's totals
// are, so gpot is bitwise identical on any number of ranks.
#include <chrono>
#include <string>
#include <vector>

#include "base/constants.hpp"
#include "physics/gravity/multipole.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::gravity {

enum class Kind { none, constant, multipole };

class Gravity final : public physics::UnitBase<Gravity> {
 public:
  /// gravity.type, grav_const, constant_g, direction, mpole_lmax, mpole_symmetric,
  /// mpole_bin_width, mpole_inner_zone_size, mpole_inner_zone_resolution,
  /// mpole_uniform_bins, cfl.
  static void declare_params(base::Params& p);
  /// Reads the parameters; throws tessera::Error on a geometry the type cannot handle.
  explicit Gravity(const base::Params& p);

  std::string name() const override { return "gravity"; }
  /// gpot: auxiliary, not guard-filled (recomputed wherever it is needed), plotted; and
  /// (type not none) gacx, gacy, gacz (ndim of them): the field of the last solve per
  /// zone, a guard-filled vector (reflecting walls mirror it, neighbours' guard zones
  /// hold the very values of the zones they copy), not plotted, for hydro's
  /// gravity-aware step (hydro.gravity_coupling).
  std::vector<mesh::VarInfo> variables() const override;
  /// The last solve's field, for the planner (heap, per slot in use).
  std::vector<physics::ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& unk,
                                               const mesh::BlockShape& s,
                                               long maxblocks) const override;
  /// Finds dens, momx..momz, etot (hydro's) and gpot.
  void bind(mesh::Mesh& m, physics::Units& units) override;
  /// The potential of the initial state (collective).
  void initialise(mesh::Mesh& m) override;
  /// The potential and field of the restored state (collective): the next step's
  /// time-centred field needs the field of this state.
  void after_restart(mesh::Mesh& m) override;
  /// gravity.cfl * min sqrt(dx / |g|) over the zones at the last solve (none if cfl = 0).
  double max_dt(mesh::Mesh& m) const override;
  /// The potential of the current density, then the source terms over dt (collective).
  void advance(mesh::Mesh& m, double dt) override;
  /// New leaves get their potential (collective).
  void after_regrid(mesh::Mesh& m) override;
  /// "egrav": 0.5 rho phi (self-gravity) or rho phi (external field).
  std::vector<std::string> total_names() const override;
  nlohmann::json summary(MPI_Comm comm) const override;

  Kind kind() const { return kind_; }
  /// Hydro put the field into its own step (hydro.gravity_coupling predictor or
  /// balanced): the energy source then takes the momentum of the whole step's start and
  /// end, etot += dt g . (mom^n + mom^{n+1}) / 2, which vanishes in equilibrium (the
  /// momentum hydro leaves, -dt grad p, is hydro's half of a balance, not motion). Set by
  /// hydro's bind.
  void set_hydro_coupled(bool on) { coupled_ = on; }
  /// Expansion centre of the last solve (physical coordinates).
  const std::array<double, 3>& centre() const { return centre_; }

 private:
  friend class physics::UnitBase<Gravity>;
  template <class View>
  void totals_impl(const View& u, int i, int j, int k, double* out) const {
    out[0] = (kind_ == Kind::multipole ? 0.5 : 1.0) * u(idens_, i, j, k) * u(igpot_, i, j, k);
  }
  /// Potential on every local leaf, and with dt > 0 the source terms (collective).
  void solve(mesh::Mesh& m, double dt);
  /// Centre, bins and moments of the current density (collective).
  void build_expansion(mesh::Mesh& m);

  Kind kind_ = Kind::none;
  double G_ = constants::newton_g;
  double g0_ = 0.0;
  int dir_ = 0;
  int lmax_ = 8;
  bool symmetric_ = false;
  double bin_width_ = 0.5;
  double inner_size_ = 16.0, inner_res_ = 0.1;
  int uniform_bins_ = 4096;
  double cfl_ = 0.5;
  mesh::Geometry geometry_ = mesh::Geometry::cartesian;
  int ndim_ = 3;
  int idens_ = -1, imom_ = -1, ietot_ = -1, igpot_ = -1;
  int igac_[3] = {-1, -1, -1};
  std::array<double, 3> centre_{};
  double scale_ = 1.0;  ///< L: coordinates are (x - centre) / L in the expansion
  Expansion exp_;
  /// With coupled_: the momentum after the last solve per block slot, ndim components per
  /// interior zone (the next step's mom^n; regrids and restarts refresh it by a solve).
  /// The last solve's field itself is unk's gac* (every solve writes it on every leaf).
  std::vector<std::vector<double>> pprev_;
  bool coupled_ = false;
  double dt_limit_ = 0.0;  ///< min sqrt(dx / |g|) over local zones at the last solve
  long solves_ = 0;
  double seconds_ = 0.0, moment_seconds_ = 0.0;
  std::size_t gathered_ = 0;  ///< doubles of partial moments gathered at the last solve
};

}  // namespace tessera::gravity

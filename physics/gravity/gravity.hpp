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
// after every regrid and at every advance. The sources (operator split, after hydro), with
// the field g = (g^n + g^{n+1}) / 2 of the density before and after the step's hydro:
//   mom += dt rho g,
// and the energy by gravity.energy_source:
//   "flux" (default; Mullen, Hanawa & Gammie 2021, ApJS 252, 30; Castro's
//   grav_source_type 4; Springel 2010, AREPO): the work of the mass hydro moved through
//   each face f of the zone against the time-centred potential phi = (phi^n + phi^{n+1})/2,
//     etot_i += sum_f s_f dt F_f (A_f / V_i) (phi_f - phi_i),
//   F_f hydro's mass flux through f (the flux-corrected one at fine/coarse faces), s_f = +1
//   on the zone's low faces and -1 on its high faces, phi_f the potential at the face
//   centre, phi_i the zone's (gpot). Summed over zones the face terms cancel (both
//   zones of a face use the same F_f and phi_f), leaving -sum_i V_i (rho_i^{n+1} -
//   rho_i^n) phi_i, which is minus the change of 1/2 sum rho phi V for a symmetric discrete
//   Green's function: etot + egrav is conserved to the potential's asymmetry (multipole
//   binning, face-averaged gpot), not to the truncation error of a kinetic-energy source.
//   "momentum": etot += dt g . (mom_old + mom_new) / 2, the time-centred momentum making
//   the energy change exactly the kinetic energy change, so eint is untouched.
//   gravity.ambient_density > 0: zones below it take the momentum form under "flux" too
//   (Castro's safeguard for ambient gas; off by default, the total then not exact).
// Reductions are rank-count independent: per-leaf partial moments (only each leaf's own
// range of bins) are summed over ranks bin by bin with parallel::WindowedSums (a payload of
// 20 bytes per moment of every bin, whatever the number of blocks), and the centre of mass
// with Mesh::leaf_sums, so gpot is bitwise identical on any number of ranks.
#include <chrono>
#include <string>
#include <vector>

#include "base/constants.hpp"
#include "physics/gravity/multipole.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::gravity {

enum class Kind { none, constant, multipole };
/// gravity.energy_source: see the top of this file.
enum class EnergySource { flux, momentum };

/// The faces of one block's interior zones, axis after axis: for axis a the n_a + 1 faces
/// along a times the zones along the other axes, face f of axis a lying below zone f, x
/// fastest. Face potentials (gravity) and face mass fluxes (hydro) are kept so.
struct FaceLayout {
  int n[3] = {1, 1, 1};
  int ndim = 0;
  std::size_t off[4] = {0, 0, 0, 0};
  FaceLayout() = default;
  explicit FaceLayout(const mesh::BlockShape& s) : ndim(s.ndim) {
    for (int a = 0; a < 3; ++a) n[a] = s.ni(a);
    for (int a = 0; a < 3; ++a)
      off[a + 1] =
          off[a] + (a < ndim ? std::size_t(n[0] + (a == 0)) * std::size_t(n[1] + (a == 1)) *
                                   std::size_t(n[2] + (a == 2))
                             : 0);
  }
  /// Face (i, j, k) of axis a (interior numbering, 0-based).
  std::size_t index(int a, int i, int j, int k) const {
    const int fx = n[0] + (a == 0), fy = n[1] + (a == 1);
    return off[a] + (std::size_t(k) * fy + j) * fx + i;
  }
  std::size_t size() const { return off[3]; }
  /// f(r, i) for every face of the block's boundary (axis a, side 0 low / 1 high): r its
  /// index in the flux register's face array ([t2][t1], t1 < t2 the transverse axes), i
  /// its index here. Gravity's potential-weighted fluxes and hydro's boundary mass fluxes
  /// cross between the two layouts this way.
  template <class F>
  void boundary_faces(int a, int side, F&& f) const {
    const int t1 = a == 0 ? 1 : 0, t2 = a == 2 ? 1 : 2;
    int idx[3] = {0, 0, 0};
    idx[a] = side ? n[a] : 0;
    for (int c2 = 0; c2 < n[t2]; ++c2)
      for (int c1 = 0; c1 < n[t1]; ++c1) {
        idx[t1] = c1;
        idx[t2] = c2;
        f(std::size_t(c2) * std::size_t(n[t1]) + std::size_t(c1), index(a, idx[0], idx[1], idx[2]));
      }
  }
};

class Gravity final : public physics::UnitBase<Gravity> {
 public:
  /// gravity.type, grav_const, constant_g, direction, mpole_lmax, mpole_symmetric,
  /// mpole_bin_width, mpole_inner_zone_size, mpole_inner_zone_resolution,
  /// mpole_uniform_bins, cfl, energy_source, ambient_density.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  /// Reads the parameters; throws tessera::Error on a geometry the type cannot handle.
  explicit Gravity(const base::Params& p);

  std::string name() const override { return "gravity"; }
  /// gpot: auxiliary, not guard-filled (recomputed wherever it is needed), plotted; and
  /// (type not none) gacx, gacy, gacz (ndim of them): the field of the last solve per
  /// zone, a guard-filled vector (reflecting walls mirror it, neighbours' guard zones
  /// hold the very values of the zones they copy), not plotted, for hydro's
  /// gravity-aware step (hydro.gravity_coupling). The total "egrav": 0.5 rho phi
  /// (self-gravity) or rho phi (external field).
  physics::Declarations declarations() const override;
  /// The last solve's field, for the planner (heap, per slot in use).
  std::vector<physics::ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& unk,
                                               const mesh::BlockShape& s,
                                               long maxblocks) const override;
  /// Finds dens, momx..momz, etot (hydro's) and gpot.
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// The potential of the initial state (collective).
  void initialise(mesh::Mesh& m) override;
  /// The potential and field of the restored state (collective, unless initialised): the
  /// next step's time-centred field needs the field of this state.
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;
  /// gravity.cfl * min sqrt(dx / |g|) over the zones at the last solve (none if cfl = 0).
  double max_dt(mesh::Mesh& m) const override;
  /// The potential of the current density, then the source terms over dt (collective).
  void advance(mesh::Mesh& m, double dt) override;
  /// egrav of the mesh about to change (collective).
  void before_regrid(mesh::Mesh& m) override;
  /// New leaves get their potential (collective); egrav's change by the regrid is counted.
  void after_regrid(mesh::Mesh& m) override;
  /// With "egrav_regrid_change": the sum over the run's regrids of egrav after minus
  /// before. A regrid conserves mass, momentum and etot, but 1/2 sum rho phi V is the
  /// potential energy of the mass distribution the mesh resolves: derefining a star's body
  /// changes it by its discretisation error (snia_2d's first regrid, 32 -> 64 km zones:
  /// +2.1e47 erg, 7e-5 of |egrav|), no exchange with etot.
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;

  Kind kind() const { return kind_; }
  /// Hydro put the field into its own step (hydro.gravity_coupling predictor or
  /// balanced): the energy source then takes the momentum of the whole step's start and
  /// end, etot += dt g . (mom^n + mom^{n+1}) / 2, which vanishes in equilibrium (the
  /// momentum hydro leaves, -dt grad p, is hydro's half of a balance, not motion). Set by
  /// hydro's bind.
  void set_hydro_coupled(bool on) { coupled_ = on; }
  /// The energy source is the work of hydro's face mass fluxes (gravity.energy_source =
  /// "flux" and a field): hydro then writes them here every step (found in its bind).
  bool wants_mass_fluxes() const { return kind_ != Kind::none && energy_ == EnergySource::flux; }
  const FaceLayout& face_layout() const { return faces_; }
  /// The mass flux through every face of block slot `slot` (FaceLayout; per unit area and
  /// time, as hydro applies it), for hydro to fill; allocated on first use.
  double* mass_fluxes(int slot);
  /// Hydro has written every local leaf's fluxes of this step: the next advance takes them
  /// (once). Without them (no hydro before gravity) no mass moved and there is no work.
  void mass_fluxes_written() { fluxes_fresh_ = true; }
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
  /// egrav of the current state (per-leaf sums added in canonical tree order; collective).
  double potential_energy(mesh::Mesh& m) const;

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
  EnergySource energy_ = EnergySource::flux;
  FaceLayout faces_;  ///< set in bind
  /// Flux source: per block slot, the face potentials of the last solve (FaceLayout), the
  /// next step's phi^n; and hydro's face mass fluxes of the step.
  std::vector<std::vector<double>> phif_, mflux_;
  bool fluxes_fresh_ = false;
  double egrav_before_ = 0.0;     ///< potential_energy() before the regrid under way
  double regrid_change_ = 0.0;    ///< egrav's change over the run's regrids (summary)
  long ambient_ = 0;              ///< flux source: zone-steps that took the momentum form (summary)
  double ambient_density_ = 0.0;  ///< gravity.ambient_density
  int maxblocks_ = 0;
  double dt_limit_ = 0.0;  ///< min sqrt(dx / |g|) over local zones at the last solve
  long solves_ = 0;
  double seconds_ = 0.0, moment_seconds_ = 0.0;
  std::size_t reduced_bytes_ = 0;  ///< bytes per rank of the last solve's moment reduction
};

}  // namespace tessera::gravity

#pragma once
// Unsplit second-order finite-volume hydrodynamics with any EOS (the EOS unit's, called
// through the pencil interface; per-zone Gamma1 and game at every face):
//   - PLM (minmod, van Leer, MC) with the MUSCL-Hancock predictor (Toro 2009, §14.4;
//     the fully unsplit primitive-variable form of Colella 1990 without transverse
//     Riemann problems), one stage per step;
//   - or PPM (Colella & Woodward 1984) / PLM face values with SSP Runge-Kutta stages
//     (Shu & Osher 1988), the method of lines;
//   - HLLC or HLLE fluxes; positivity fallback to first order at any face whose
//     reconstructed density or pressure is not positive;
//   - every mass scalar of unk (species, passive scalars) advected conservatively as
//     rho*X with the density flux, upwinded (so X stays within its initial bounds).
// The unit owns the conserved variables dens, momx, momy, momz, etot in unk (always unk
// variables 0-4) and derives FLASH's velx, vely, velz, ener; pres, temp, gamc, game and
// eint are the EOS unit's, refreshed by the EOS after every stage (with a uniform-gamma
// EOS, the gamma law, only when someone reads them: sync()).
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "memory/arena.hpp"
#include "mesh/mesh.hpp"
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
namespace tessera::gravity {
class Gravity;
}

namespace tessera::hydro {

enum Var : int { DENS = 0, MOMX = 1, MOMY = 2, MOMZ = 3, ETOT = 4, NVAR = 5 };

enum class Recon { plm, ppm };
enum class Riemann { hllc, hlle };
enum class Integrator { hancock, rk2, rk3 };
/// How the gravity unit's field (when one is active) enters the hydro step itself (its
/// source terms are the gravity operator's, after hydro, in every case).
enum class GravityCoupling {
  split,      ///< not at all: hydro knows no gravity
  predictor,  ///< the Hancock half step's velocity gets dt/2 g
  balanced,   ///< and the PLM pressure is reconstructed about the local hydrostatic profile
};

struct Options {
  Recon recon = Recon::plm;
  int limiter = 2;  ///< 0 minmod, 1 van Leer, 2 MC
  Riemann riemann = Riemann::hllc;
  Integrator integrator = Integrator::hancock;
  GravityCoupling gravity = GravityCoupling::balanced;
  double cfl = 0.8;
  double smallp = 1e-30;
  double smalld = 1e-30;
};

/// Where the unit's variables and the ones it calls live in unk (set by bind()).
struct Indices {
  int pres = -1, gamc = -1, game = -1, eint = -1, temp = -1;
  std::vector<int> scalars;  ///< every mass scalar of unk, in unk order
  /// gacx, gacy, gacz (the gravity unit's field, guard-filled) when gravity enters the step.
  int gac[3] = {-1, -1, -1};
  /// Curvilinear: the outer radius of the domain if its wall there is reflecting, else
  /// infinity.
  double rwall = std::numeric_limits<double>::infinity();
  std::vector<int> flux;  ///< unk variable of each flux-register slot: 0-4, then scalars
  /// The EOS's Gamma1 and game are the same in every state (the gamma law): the kernels
  /// take these values instead of per-zone arrays (the same numbers, fewer loads), compute
  /// p = (game - 1) rho e from the conserved variables, and a step leaves the EOS state
  /// in unk to Hydro::sync().
  bool uniform = false;
  double ugamc = 0, ugame = 0;
};

class Hydro final : public physics::UnitBase<Hydro> {
 public:
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Hydro(const base::Params& p);
  ~Hydro() override;

  std::string name() const override { return "hydro"; }
  const Options& options() const { return opt_; }
  /// dens, momx, momy, momz, etot: conserved, guard-filled.
  /// dens, momx, momy, momz, etot (conserved, guard-filled; only dens plotted), owned by
  /// `owner`: hydro's, and the prescribed flow's (physics/flow/flow.hpp).
  static std::vector<mesh::VarInfo> conserved_variables(const std::string& owner);
  /// Its conserved variables (checked by check()); the guard zones the reconstruction
  /// needs; fluxes of the conserved variables and every mass scalar; velx, vely, velz, ener
  /// derived; mass and energy conserved. The deferred EOS state: refresh of unk_state and
  /// guard_state writes it (pres, temp, gamc, game, eint): derived with a uniform-gamma EOS
  /// (nothing reads it in unk but readers after sync(): the kernels recompute p from the
  /// conserved variables, and the guard zones fill_guard_state() writes serve refinement
  /// marking alone), independent with Helmholtz; where derived, restore and after_regrid
  /// recompute it from the conserved variables; and with a uniform-gamma EOS derived()
  /// computes "pres" (p = (game - 1) rho e) over the whole block array.
  physics::Declarations declarations() const override;
  /// "scratch" (one block update's work arrays) and, for Runge-Kutta, "rk_stage".
  std::vector<physics::ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& unk,
                                               const mesh::BlockShape& s,
                                               long maxblocks) const override;
  /// Takes the EOS (required), the composition and gravity (where the run has them) and
  /// the mass scalars; maps the arenas with policy memory.pages_scratch.
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// eint from the problem's conserved state, then the EOS (dens_ei) on every leaf.
  void initialise(mesh::Mesh& m) override;
  /// Number of guard fills per step (stages).
  int stages() const;

  /// Largest stable time step over this rank's leaves (not reduced). With a uniform-gamma
  /// EOS, from the rate check() computed if the leaves have not changed since
  /// (Mesh::state_epoch): the same maximum without a second pass over memory.
  double max_dt(mesh::Mesh& m) const override;
  /// Advance every local leaf by dt (collective: fills guards, corrects fluxes, runs the
  /// EOS after each stage).
  void advance(mesh::Mesh& m, double dt) override;
  /// The EOS state (pres, temp, gamc, game, eint) of every leaf's guard zones from their
  /// filled conserved variables (for refinement on pres, say).
  void fill_guard_state(mesh::Mesh& m);
  /// unk_state: sync(); guard_state: fill_guard_state().
  void refresh(mesh::Mesh& m, physics::Deferred what) override {
    if (what == physics::Deferred::unk_state) sync(m);
    if (what == physics::Deferred::guard_state) fill_guard_state(m);
  }
  /// The derived EOS state (a uniform-gamma EOS; not read from the checkpoint) from the
  /// conserved variables, as sync() computes it; nothing with Helmholtz (its state is
  /// independent: temp is the Newton iteration's start) or when initialised.
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;
  /// Mass scalars to rho*X on every leaf's whole block array (guards included), so that
  /// prolongation and restriction conserve species mass, not mass fractions.
  void before_regrid(mesh::Mesh& m) override;
  /// Mass scalars back to X (species renormalised), then every leaf's eint and EOS state
  /// from its (interpolated) conserved variables.
  void after_regrid(mesh::Mesh& m) override;
  /// First zone with a NaN or non-positive density or a non-finite pressure or energy.
  /// With a uniform-gamma EOS and a good state, also the time-step rate max_dt takes next,
  /// leaf by leaf while the leaf is in cache.
  physics::BadZone check(mesh::Mesh& m) const override;
  /// With a uniform-gamma EOS a step leaves the EOS state in unk (pres, temp, eint, gamc,
  /// game) stale: p = (game - 1) rho e is cheaper to recompute in the kernels than to
  /// store (about 5 % of a 3-D step). Refreshes it if a step left it stale.
  void sync(mesh::Mesh& m);

  /// Per-block work arrays of the update kernel (hydro.cpp); sized once, reused.
  struct Scratch;

 private:
  friend class physics::UnitBase<Hydro>;
  /// "mass" and "energy" densities of zone (i, j, k): dens, etot.
  template <class View>
  void totals_impl(const View& u, int i, int j, int k, double* out) const {
    out[0] = u(DENS, i, j, k);
    out[1] = u(ETOT, i, j, k);
  }
  Options opt_;
  Indices at_;
  eos::EosUnit* eos_ = nullptr;
  composition::Composition* comp_ = nullptr;
  /// The gravity unit when its field enters the step (hancock, gravity.type not none,
  /// hydro.gravity_coupling not split); null otherwise, and then no step reads gfield_.
  const gravity::Gravity* grav_ = nullptr;
  /// The gravity unit when it takes the step's face mass fluxes for its energy source
  /// (gravity.energy_source = "flux"): every stage writes them there; null otherwise, and
  /// then no step stores a flux.
  gravity::Gravity* mflux_ = nullptr;
  /// Face mass fluxes: the boundary faces of every local leaf from the flux register (the
  /// corrected values at fine/coarse faces), added with weight w (or set, `add` false).
  void store_boundary_mass_fluxes(mesh::Mesh& m, double w, bool add);
  /// grav_, mflux_ and gfield_ from the run's gravity unit g (null: none), at bind
  /// (gravity_coupling.cpp).
  void bind_gravity(mesh::Mesh& m, gravity::Gravity* g);
  /// One block's field [ndim][cells] from unk's gacx.. (guards included), layout-free;
  /// heap, sized in bind only when grav_ is set.
  std::vector<double> gfield_;
  std::unique_ptr<Scratch> scratch_;
  memory::ArenaConfig cfg_;                ///< memory.pages_scratch
  mutable bool rotation_checked_ = false;  ///< curvilinear: no v_phi in the initial state
  /// Which leaves a kept value was computed from: the mesh, its state epoch and the SIMD
  /// target (simd::current: a test may force another in between). Default: none.
  struct StateStamp {
    const mesh::Mesh* mesh = nullptr;
    std::uint64_t epoch = 0;
    std::string target;
    static StateStamp of(const mesh::Mesh& m);
    bool matches(const mesh::Mesh& m) const;
  };
  /// The rate (max over zones of sum_a (|u_a| + c) / dx_a) check() found, and of what.
  struct CheckedRate {
    StateStamp stamp;
    double rate = 0.0;
  };
  mutable CheckedRate checked_rate_;
  /// What the last uniform-gamma step found leaf by leaf as it finished them (check()'s
  /// test and leaf_rate: the one-stage sweep row by row while each row is in cache, the
  /// Runge-Kutta schemes block by block after the last stage's blend), for check() to take
  /// while the mesh, the state epoch and the SIMD target are unchanged: its leaves in
  /// for_each_leaf order.
  struct SweptLeaf {
    int id = -1;
    physics::BadZone bad;  ///< the first bad zone (k, j, i order), or none
    double rate = 0.0;
  };
  struct Swept {
    StateStamp stamp;  ///< none where the last advance did not check so
    std::vector<SweptLeaf> leaves;
  };
  Swept swept_;
  /// Whether advance checks the leaves as it writes them for check() to take (swept_): a
  /// uniform gamma (the rate needs no EOS state), no mass scalars (the case measured; the
  /// check reads none of what finish() writes after the sweep, species and X), Cartesian
  /// geometry (the radial rate's factors share the sweep's scratch).
  /// And hydro is the last operator of driver.operators (bind): with another after it the
  /// driver advances the state epoch again and check() makes its own pass anyway.
  bool swept_checkable(const mesh::Mesh& m) const {
    return sweep_check_ && at_.uniform && at_.scalars.empty() &&
           m.geometry() == mesh::Geometry::cartesian;
  }
  bool sweep_check_ = true;
  /// One interior row (j, k) into `leaf`: its rate, and check()'s test where the rate
  /// kernel flags the row and the leaf has no bad zone yet (Cartesian: idx = 1/dx).
  template <class View>
  void swept_row(const View& u, const mesh::BlockShape& s, int j, int k, const double idx[3],
                 SweptLeaf& leaf) const;
  /// swept_row over a leaf's interior rows, k then j (check_block's order).
  template <class View>
  SweptLeaf swept_leaf(const View& u, const mesh::BlockShape& s, const mesh::BlockGeom& bg,
                       int id) const;
  /// check()'s own pass over the leaves (first bad zone; the rate of the leaves before it).
  physics::BadZone check_leaves(mesh::Mesh& m, double& rate) const;
  bool verify_kept_rate_ = false;  ///< hydro.verify_kept_rate
  /// One leaf's rate (interior zones), as max_dt takes it.
  template <class View>
  double leaf_rate(const View& u, const mesh::BlockShape& s, const mesh::BlockGeom& bg) const;
  bool stale_ = false;  ///< a uniform-gamma step left the EOS state in unk stale (sync())
  memory::Arena u0_;    ///< "rk_stage": stage-0 copy for Runge-Kutta, one block array per leaf
  /// The ranges of a block (first double, count) the Runge-Kutta stages copy and blend:
  /// var-major, every variable but the derived ones; zone-major, the whole block (bind).
  std::vector<std::pair<std::size_t, std::size_t>> rk_ranges_;
  /// eint = etot/dens - |mom|^2/(2 dens^2) on the interior, then the EOS, every leaf.
  void refresh_thermo(mesh::Mesh& m);
  /// refresh_thermo for one interior row (j, k) of a block (no timer region).
  template <mesh::Layout L>
  void refresh_row(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node, int j,
                   int k) const;
  /// refresh_thermo for one block (no timer region).
  template <mesh::Layout L>
  void refresh_block(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node) const;
  /// Mass scalars between X (between operators) and rho*X (inside advance).
  void scalars_to_conserved(mesh::Mesh& m, bool to_conserved);
  template <class View>
  void derived_impl(const std::string& name, const View& u, const mesh::BlockShape& s, double* out,
                    bool with_guards) const;
  static std::vector<std::string> eos_state_names() {
    return {"pres", "temp", "gamc", "game", "eint"};
  }
};

}  // namespace tessera::hydro

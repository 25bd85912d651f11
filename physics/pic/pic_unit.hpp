#pragma once
// The electromagnetic particle-in-cell unit ("pic"): the kernels of physics/pic/pic.hpp run
// on the block mesh, SI units throughout (m, s, kg, C, V/m, T, A/m^2, C/m^3). The operator
// "pic" in driver.operators, alone (with hydro or any other operator: a one-line error);
// the run then has no EOS or composition service and uses problem.name = "pic" (which
// zeroes unk; this unit loads the particles and sets the fields in initialise).
//
// Variables in unk (Yee staggering of fields.hpp, array index (i,j,k) = the node at the
// lower corner of cell (i,j,k)):
//   ex ey ez   E (V/m) on edges           guard-filled, the first three of unk
//   bx by bz   B (T) on faces             guard-filled, the next three
//   jx jy jz   J (A/m^2) on edges         not guard-filled: deposits land in guards and
//                                         accumulate_guards folds them into the owners
//   rhoq       charge density of the particles, all species (C/m^3) at nodes, deposited
//              for diagnostics at the start, before every output and at the end (finish;
//              an immobile ion background, when there is one, is not stored)
// Along inactive axes (1-D, 2-D) lengths are 1 m: densities per m^3 as given, energies
// per m^2 (1-D) or per m (2-D).
//
// Species (pic.species, from species.hpp's table: electron, positron, proton) share one
// particles::ParticleSet: position (m), u = gamma v (m/s) in velx..velz, the macro-particle
// weight `weight` (physical particles per particle) and `type` (the 1-based species index,
// as a real: FLASH's particle-type property). Tags are species-major (species s's tags
// start at s times the particles per species) and so are the bins of pic.sort = "cell"
// (the set's (leaf, bin, tag) order; "tag": (leaf, tag)), so each species is one
// contiguous range within each block, in species order: the step loops over
// those ranges with the species' q/m constant. Each species has density pic.density; with
// only negative species an immobile background of +q_e per electron neutralises them,
// otherwise there is none and the species must be neutral together.
//
// Boundaries: each active axis is periodic or absorbing (mesh boundary `outflow` on both
// sides). At an absorbing face particles that cross it are removed (ParticleSet's
// outflow; counted in summary `lost`), the current they deposit beyond the face is dropped
// by accumulate_guards, and E tangential to the face follows Mur's first-order condition
// (absorbing.hpp), applied after E's guard fill.
//
// One step (timer regions pic/gather, pic/push, pic/deposit, pic/field_solve,
// pic/redistribute, and pic/stream for the waits on staged particle batches under
// dynamic tier placement; see step() for the tiers), E and B at integer time levels between steps,
// their guards valid:
//   zero J; per block and species: gather E^n, B^n at x^n; Boris u^{n-1/2} -> u^{n+1/2};
//   x^{n+1}; Esirkepov J^{n+1/2} (into guards); accumulate_guards of J;
//   B^{n+1/2} = B^n - dt/2 curl E^n over the whole array but its last layer (E's guards
//   are current, so B's guards come out as a guard fill would give them, bit for bit);
//   (absorbing faces: save the tangential E at the boundary nodes and one cell inside);
//   E^{n+1} over the interior; fill_guards of E; (absorbing faces: Mur's E at the boundary
//   nodes, over the whole array across the face); B^{n+1} likewise over the whole array;
//   redistribute the particles (periodic wrap, removal at absorbing faces, migration).
// So one guard fill (of E) per step. One refinement level.
#include <array>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "particles/particle_set.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::pic {

class Pic final : public physics::Unit {
 public:
  /// pic.species, shape_order, particles_per_cell, density, u_th, ion_temperature_ratio,
  /// u_drift, init, epsilon, mode, cfl, gather, seed, pulse_amplitude, pulse_length,
  /// pulse_width, pulse_angle, pulse_x, pulse_y.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Pic(const base::Params& p);

  std::string name() const override { return "pic"; }
  /// E, B (guard-filled), J and rhoq; shape_order / 2 + 2 guard zones (the gather and
  /// deposit windows, pic.hpp); its advance reads no other unit's deferred state.
  physics::Declarations declarations() const override;
  /// Finds the variables; refuses more than one level, and an axis that is not periodic or
  /// absorbing (outflow) on both sides.
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// Loads the particles (depending on (seed, tag) only), E = B = 0 (or the pulse), guards
  /// filled.
  void initialise(mesh::Mesh& m) override;

  /// For the planner: the particles' arena (particles per block times their bytes), its
  /// growth in a migration, the per-block work arrays, and the outputs' particle copies.
  std::vector<physics::ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& unk,
                                               const mesh::BlockShape& s,
                                               long maxblocks) const override;
  /// Fills the guards of E and B (the checkpoint holds interiors only) and appends to
  /// pic_history.csv; then the checkpoint's pic.species against this run's (its particles
  /// are loaded): a species added or the order changed is refused; a species dropped is
  /// refused unless driver.restart_drop names it, and then its particles are removed.
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;
  /// pic.cfl times the Yee limit (c dt <= (sum 1/dx^2)^(-1/2)).
  double max_dt(mesh::Mesh& m) const override;
  void advance(mesh::Mesh& m, double dt) override;
  /// The charge density and the charge-conservation error at the end.
  void finish(mesh::Mesh& m);
  void after_regrid(mesh::Mesh& m) override;
  /// outside_unk: finish().
  void refresh(mesh::Mesh& m, physics::Deferred what) override {
    if (what == physics::Deferred::outside_unk) finish(m);
  }
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;

  /// Field energy, the complex amplitude of Ex's mode along x (sum over the interior of
  /// Ex exp(-i k x) at Ex's positions), rank-local; kinetic energy of the particles.
  struct Diag {
    double field = 0, mode_re = 0, mode_im = 0;
  };

  /// A species of the run: the table's name, charge (C) and mass (kg), its thermal spread
  /// (m/s) and its Langmuir response factor (species.hpp response_factor).
  struct Species {
    std::string name;
    double charge = 0, mass = 0, u_th = 0, response = 1;
  };

 private:
  /// restore's halves: E's and B's guards and the history file (after_restart's work:
  /// not when initialised), and the checkpoint's species against this run's.
  void resume(mesh::Mesh& m);
  void check_species(const physics::CheckpointInfo& c);
  int order_ = 1;
  long ppc_ = 1;
  double density_ = 0, u_th_ = 0, u_drift_ = 0, epsilon_ = 0, cfl_ = 0.95;
  std::array<double, 2> slab_{};  ///< pic.slab_xmin, slab_xmax
  /// A particle's step (gather, push, deposit, move) in zone-updates of the grid's step
  /// (mesh.balance = "cost"). Measured on pic_slab_2d, 1 rank, 100 steps, TSC (Intel Xeon,
  /// AVX-512): 86 ns per zone-step without particles, 90 ns more per particle-step with
  /// 8,192 of them (three runs: 0.9 to 1.2 zone-updates per particle).
  static constexpr double kParticleWork = 1.0;
  int mode_ = 1;
  std::string init_, gather_, sort_;
  std::uint64_t seed_ = 1;
  std::vector<Species> species_;
  double background_ = 0;  ///< charge density of the immobile ion background (C/m^3), or 0
  double pulse_amplitude_ = 0, pulse_length_ = 0, pulse_width_ = 0, pulse_angle_ = 0;
  double pulse_x_ = 0, pulse_y_ = 0;
  int ndim_ = 0;
  std::array<bool, 3> absorbing_{false, false, false};  ///< per axis
  std::vector<double> mur_state_;                       ///< the absorbing faces' E at time n (step)
  long lost_ = 0;  ///< particles removed at absorbing faces (all ranks)
  memory::ArenaConfig cfg_;
  std::unique_ptr<particles::ParticleSet> set_;
  mesh::Mesh* mesh_ = nullptr;
  int ie_ = -1, ib_ = -1, ij_ = -1, irho_ = -1;  ///< first of ex.., bx.., jx.., and rhoq
  int nfill_e_ = 0, nfill_ = 0;                  ///< fills covering E, and E and B
  std::string run_dir_;  ///< where pic_history.csv goes (rank 0; the run's directory)
  std::ofstream history_;
  std::vector<double>
      scratch_;  ///< per particle of one species segment: E, B, x_old (9 arrays of n)
  // Diagnostics.
  double k_prev_ = 0;  ///< kinetic energy of u^{n-1/2} (all ranks)
  double field0_ = 0, kin0_ = 0, total0_ = 0, field1_ = 0, kin1_ = 0, total1_ = 0;
  double drift_ = 0, charge_error0_ = 0, charge_error_ = 0;
  long steps_ = 0;
  double time_ = 0;                      ///< since the start of this run (not the restart's time)
  double gather_time_per_particle_ = 0;  ///< last step's, for the prefetch distance
  double clock_ = 0;  ///< the run's time (the driver's, accumulated the same way)
  int step0_ = 0;     ///< the run's step at the start of this run (a restart's)
  double particle_steps_ = 0;
  bool have_total0_ = false;
  bool need_k_prev_ = false;
  /// The field energy after the last step (advance's closing diagnosis): the next step's
  /// E^n, B^n unless a regrid, a restore or an initialisation came between.
  double field_next_ = 0;
  bool field_next_valid_ = false;

  /// Each species' range [first[s], first[s+1]) within the particles [b, e) of one block.
  std::vector<std::size_t> segments(std::size_t b, std::size_t e) const;
  /// The same on a block's type array of n particles (staged or not), relative to it.
  std::vector<std::size_t> segments_of(const double* type, std::size_t n) const;
  Diag diagnose(mesh::Mesh& m) const;
  /// Kinetic energy of every particle, per-leaf sums added in tree order (collective).
  double kinetic() const;
  /// Deposits rhoq (all species) and returns max |div E - rho_net/eps0| / max_s |rho_s/eps0|
  /// over the interior nodes, those next to absorbing faces left out (collective).
  double charge_error(mesh::Mesh& m);
  void step(mesh::Mesh& m, double dt);
};

}  // namespace tessera::pic

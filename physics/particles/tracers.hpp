#pragma once
// The tracer-particle unit ("particles"): passive particles that follow the fluid, FLASH's
// Particles unit with passive particles (verification.md §K). It is an operator applied
// after every other one (so the mesh holds t^{n+1}), added to any run by
// particles.tracers = true. The container, placement, mapping and the Heun integrator are
// the physics-free particles/ layer; this unit reads the parameters, owns the set, and
// hooks it into the step (advance, max_dt), the regrid (particles follow refinement,
// derefinement and rebalancing) and summary.json.
//
// Each step's move (timer regions particles/advance and particles/migrate): Heun
// predictor + corrector (particles/tracers.hpp) with the guard zones of dens and the
// momenta at t^{n+1}, migration to the leaves and ranks that now hold the particles,
// velocity mapped at the new positions. Each move fills the guard zones of dens and the
// momenta itself (four variables) and marks them current (Mesh::mark_guards_current), so
// that the next fill (the next step's hydro fill, or refinement marking's) leaves them
// out: the step moves the bytes it moved before. Until issue 45 the move waited for the
// next fill somebody did anyway instead (a mesh hook, after_next_fill, with the tracers
// its only user); the bits are the same (the fill of dens and the momenta does not depend
// on who asks for it). Its time is a top-level region "particles", left out of the region
// it ran in.
#include <memory>
#include <string>

#include "particles/particle_set.hpp"
#include "particles/tracers.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::tracers {

class Tracers final : public physics::Unit {
 public:
  /// particles.tracers, init, count, lattice_nx/ny/nz, xmin..zmax, mapping, seed,
  /// dt_factor.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  explicit Tracers(const base::Params& p);

  std::string name() const override { return "particles"; }
  /// The mapping stencil at the predictor's position (at most dt_factor zones out) as its
  /// guard zones; its advance writes no unk and reads no deferred state (dens and the
  /// momenta are never stale).
  physics::Declarations declarations() const override;
  /// Finds dens and the momenta (guard-filled, a prefix of unk) and maps the arena.
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// For the planner: the tracers' arena, sort buffers and output copies, the placed
  /// count shared evenly by the ranks.
  std::vector<physics::ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& unk,
                                               const mesh::BlockShape& s,
                                               long maxblocks) const override;
  /// Places the particles on the current mesh and maps their velocity (collective;
  /// throws a one-line error if they would not fit in memory).
  void initialise(mesh::Mesh& m) override;
  /// dt_factor zones per step at the fluid's velocity (particles::max_dt).
  double max_dt(mesh::Mesh& m) const override;
  /// Moves the particles over dt (see above; collective).
  void advance(mesh::Mesh& m, double dt) override;
  /// Particles follow the new tree (collective).
  void after_regrid(mesh::Mesh& m) override;
  /// count, lost, migrated, bytes, pages (requested, achieved), init, mapping.
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;

 private:
  particles::Placement place_;
  particles::Mapping mapping_ = particles::Mapping::cic;
  double dt_factor_ = 0.5;
  memory::ArenaConfig cfg_;
  std::string init_;
  particles::VelocityVars vel_;
  int nfill_ = 0;  ///< guard fill of variables [0, nfill_) covers dens and the momenta
  std::unique_ptr<particles::ParticleSet> set_;
  long lost_ = 0, migrated_ = 0, general_ = 0, redistributions_ = 0;
  long moves_ = 0;
  void count(const particles::MigrateStats& st);
};

}  // namespace tessera::tracers

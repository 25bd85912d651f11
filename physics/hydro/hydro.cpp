// The hydro unit: parameters, declarations, memory, bind, initial state, restart, regrid
// and derived outputs. Its step is step.cpp (the block update: block_update.hpp), the
// EOS state eos_state.cpp, the time-step rate and check rate.cpp, the gravity coupling
// gravity_coupling.cpp. Unsplit hydrodynamics on one block at a time. References:
//   Toro, "Riemann Solvers and Numerical Methods for Fluid Dynamics", 3rd ed. (2009),
//     §14.4 (MUSCL-Hancock), §10.4 (HLLC), §10.3 (HLLE);
//   Colella, J. Comput. Phys. 87 (1990) 171 (unsplit primitive-variable predictor);
//   Colella & Woodward, J. Comput. Phys. 54 (1984) 174 (PPM);
//   Shu & Osher, J. Comput. Phys. 77 (1988) 439 (SSP Runge-Kutta).
#include "physics/hydro/hydro.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/rate_kernels.hpp"
#include "physics/hydro/scratch.hpp"

namespace tessera::hydro {

void Hydro::declare_params(base::Params& p) {
  p.declare_string("hydro.reconstruction", "plm", {"plm", "ppm"}, "spatial reconstruction");
  p.declare_string("hydro.limiter", "mc", {"minmod", "van_leer", "mc"}, "PLM slope limiter");
  p.declare_string("hydro.riemann", "hllc", {"hllc", "hlle"}, "Riemann solver");
  p.declare_string("hydro.integrator", "auto", {"auto", "hancock", "rk2", "rk3"},
                   "time integration (auto: hancock for plm, rk3 for ppm)");
  p.declare_string("hydro.gravity_coupling", "balanced", {"split", "predictor", "balanced"},
                   "with a gravity unit and the Hancock integrator: split (hydro ignores g), "
                   "predictor (dt/2 g in the half step) or balanced (and the PLM pressure "
                   "reconstructed about the local hydrostatic profile)");
  p.declare_real("hydro.cfl", 0.8, 0.01, 1.0,
                 "Courant number: dt = cfl / max(sum over axes of (|u|+c)/dx)");
  p.declare_real("hydro.smallp", 1e-30, 0.0, 1e300, "pressure floor for reconstructed states");
  p.declare_real("hydro.smalld", 1e-30, 0.0, 1e300, "density floor for reconstructed states");
  p.declare_bool("hydro.verify_kept_rate", false,
                 "a test of what hydro keeps from unk (uniform gamma): max_dt also computes "
                 "the rate afresh, and check() its test and rate leaf by leaf where the step "
                 "made them, and the run stops if they differ (a writer of unk that did not "
                 "advance Mesh::state_epoch)");
}

Hydro::Hydro(const base::Params& p)
    : scratch_(new Scratch), cfg_(memory::config_for(p, "scratch")) {
  opt_.recon = p.get_string("hydro.reconstruction") == "ppm" ? Recon::ppm : Recon::plm;
  const auto& lim = p.get_string("hydro.limiter");
  opt_.limiter = lim == "minmod" ? 0 : (lim == "van_leer" ? 1 : 2);
  opt_.riemann = p.get_string("hydro.riemann") == "hlle" ? Riemann::hlle : Riemann::hllc;
  const auto& integ = p.get_string("hydro.integrator");
  if (integ == "auto")
    opt_.integrator = opt_.recon == Recon::ppm ? Integrator::rk3 : Integrator::hancock;
  else
    opt_.integrator = integ == "hancock" ? Integrator::hancock
                                         : (integ == "rk2" ? Integrator::rk2 : Integrator::rk3);
  if (opt_.integrator == Integrator::hancock && opt_.recon == Recon::ppm)
    throw Error(
        "hydro.integrator = \"hancock\" needs hydro.reconstruction = \"plm\" (use rk2 or rk3 with "
        "ppm)");
  const auto& gc = p.get_string("hydro.gravity_coupling");
  opt_.gravity = gc == "split"
                     ? GravityCoupling::split
                     : (gc == "predictor" ? GravityCoupling::predictor : GravityCoupling::balanced);
  opt_.cfl = p.get_real("hydro.cfl");
  opt_.smallp = p.get_real("hydro.smallp");
  verify_kept_rate_ = p.get_bool("hydro.verify_kept_rate");
  opt_.smalld = p.get_real("hydro.smalld");
}

Hydro::~Hydro() = default;

int Hydro::stages() const {
  switch (opt_.integrator) {
    case Integrator::hancock:
      return 1;
    case Integrator::rk2:
      return 2;
    default:
      return 3;
  }
}

std::vector<mesh::VarInfo> Hydro::conserved_variables(const std::string& owner) {
  using mesh::VarKind;
  return {{"dens", -1, VarKind::conserved, true, true, owner},
          {"momx", 0, VarKind::conserved, true, false, owner},
          {"momy", 1, VarKind::conserved, true, false, owner},
          {"momz", 2, VarKind::conserved, true, false, owner},
          {"etot", -1, VarKind::conserved, true, false, owner}};
}

physics::Declarations Hydro::declarations() const {
  physics::Declarations d;
  // check(): density > 0, finite momenta and energy (the prescribed flow's copies of the
  // same variables have no check of their own: the driver tests them).
  d.variables = conserved_variables(name());
  for (auto& x : d.variables) x = x.checked_by_owner();
  d.nguard = opt_.recon == Recon::ppm ? 3 : 2;
  d.flux_vars = NVAR;
  d.flux_mass_scalars = true;
  d.derived = {"velx", "vely", "velz", "ener"};
  d.totals = {"mass", "energy"};
  d.refresh_writes = eos_state_names();
  d.recomputes = eos_state_names();
  if (at_.uniform) d.derives = {"pres"};
  return d;
}

using namespace detail;  // the per-block kernels (block_update.hpp)

std::vector<physics::ArenaNeed> Hydro::memory_needs(const std::vector<mesh::VarInfo>& unk,
                                                    const mesh::BlockShape& s,
                                                    long maxblocks) const {
  // Hydro::Scratch::resize: one block update's work arrays (the guard zones counted as
  // the cells outside the interior), and the Runge-Kutta stage copy.
  std::vector<physics::ArenaNeed> v;
  const std::size_t guards = s.cells() - s.interior_cells();
  int nr = NVAR;
  for (const auto& v : unk) nr += v.kind == mesh::VarKind::mass_scalar;
  v.push_back(
      {"scratch", "scratch",
       double(Scratch::bytes(Scratch::sizes(s.cells(), s.n(0), s.n(1), nr, guards))), 0.0,
       "W (NR+2)C, row buffers, fluxes, chunk buffers, guard-zone EOS 6(C-I); NR = 5 + scalars"});
  (void)maxblocks;
  if (opt_.integrator != Integrator::hancock)
    v.push_back({"rk_stage", "scratch", 0.0, double(s.doubles()) * 8.0,
                 "M*C*V*8 (stage-0 copy of every block)"});
  return v;
}

void Hydro::bind(mesh::Mesh& m, const physics::Services& services, const physics::RunContext& ctx) {
  checked_rate_ = {};  // a rate of another mesh's leaves is not this one's
  swept_ = {};
  // The step's own check serves check() only when no operator runs after hydro (the
  // tracers, which write no unk, may).
  if (ctx.params != nullptr) {
    const auto& ops = ctx.params->get_string_list("driver.operators");
    sweep_check_ = !ops.empty() && ops.back() == name();
  }
  eos_ = services.get<eos::EosUnit>("eos");
  if (eos_ == nullptr) throw Error("hydro needs the eos unit");
  comp_ = services.get<composition::Composition>("composition");
  const auto vars = conserved_variables(name());
  for (int v = 0; v < NVAR; ++v)
    if (m.var_index(vars[std::size_t(v)].name) != v)
      throw Error("hydro: its variables must be unk variables 0-4 (driver order)");
  at_ = Indices{};
  at_.pres = eos_->pres();
  at_.gamc = eos_->gamc();
  at_.game = eos_->game();
  at_.eint = eos_->eint();
  at_.temp = eos_->temp();
  at_.uniform = eos_->uniform_gamma();
  at_.ugamc = eos_->uniform_gamc();
  at_.ugame = eos_->uniform_game();
  for (int v = 0; v < NVAR; ++v) at_.flux.push_back(v);
  if (m.geometry() != mesh::Geometry::cartesian && m.boundary(0, 1) == mesh::Boundary::reflecting)
    at_.rwall = m.tree().geometry().hi[0];
  bind_gravity(m, services.get<gravity::Gravity>("gravity"));
  for (int v = 0; v < static_cast<int>(m.vars().size()); ++v)
    if (m.vars()[v].kind == mesh::VarKind::mass_scalar) {
      at_.scalars.push_back(v);
      at_.flux.push_back(v);
    }
  if (at_.flux.size() > 64) throw Error("hydro: more than 59 mass scalars");
  const auto& s = m.shape();
  scratch_->cfg = cfg_;
  scratch_->arena = memory::Arena();
  scratch_->resize(s, static_cast<int>(at_.scalars.size()));
  if (opt_.integrator != Integrator::hancock) {
    u0_ = memory::Arena("rk_stage",
                        std::size_t(m.storage().maxblocks()) * s.doubles() * sizeof(double), cfg_);
    // What the stages copy and blend (advance), as contiguous ranges of a block (first
    // double, count). Var-major: each run of consecutive variables that are not derived.
    // Zone-major: the whole block, since a zone's derived variables share its cache lines
    // (skipping them saves no memory traffic, and ranges of a few doubles per zone would
    // cost more than blending them).
    rk_ranges_.clear();
    const auto& vars = m.vars();
    const std::size_t cells = s.cells(), nv = std::size_t(s.nvar);
    if (m.layout() == mesh::Layout::zone_major)
      rk_ranges_.emplace_back(0, s.doubles());
    else
      for (std::size_t v = 0; v < nv;) {
        std::size_t e = v;
        while (e < nv && vars[e].role != mesh::VarRole::derived) ++e;
        if (e > v) rk_ranges_.emplace_back(v * cells, (e - v) * cells);
        v = e + 1;  // past the derived variable that ended the run
      }
  }
}

void Hydro::initialise(mesh::Mesh& m) {
  refresh_thermo(m);
}

void Hydro::restore(mesh::Mesh& m, const physics::CheckpointInfo& c) {
  if (!c.initialised && m.vars()[static_cast<std::size_t>(at_.pres)].role == mesh::VarRole::derived)
    refresh_thermo(m);
}

void Hydro::before_regrid(mesh::Mesh& m) {
  if (at_.scalars.empty()) return;
  const std::size_t N = m.shape().cells();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    const auto d = u.row(DENS, 0, 0);
    for (int q : at_.scalars) {
      auto x = u.row(q, 0, 0);
      for (std::size_t c = 0; c < N; ++c) x[c] *= d[c];
    }
  });
}

void Hydro::after_regrid(mesh::Mesh& m) {
  // Blocks moved on an unchanged tree (cost balance): every variable travelled as it was,
  // before_regrid did not run; recomputing the state (the Helmholtz temperature seeds
  // its Newton solve) would change bits at steps that depend on the rank count.
  if (m.moved_only()) return;
  if (!at_.scalars.empty()) {
    scalars_to_conserved(m, false);
    if (comp_) comp_->normalise(m);
  }
  refresh_thermo(m);
}

template <class View>
void Hydro::derived_impl(const std::string& name, const View& u, const mesh::BlockShape& s,
                         double* out, bool with_guards) const {
  const int which = name == "velx" ? 0 : (name == "vely" ? 1 : (name == "velz" ? 2 : 3));
  int lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = with_guards ? 0 : s.g(a);
    hi[a] = with_guards ? s.n(a) : s.g(a) + s.ni(a);
  }
  std::size_t c = 0;
  if (name == "pres") {
    // A uniform-gamma EOS (derives()): eint from the conserved variables as refresh_row and
    // fill_guard_state compute it, then p = (game - 1) rho e: the EOS's bits.
    const double gm1 = at_.ugame - 1.0;
    for (int k = lo[2]; k < hi[2]; ++k)
      for (int j = lo[1]; j < hi[1]; ++j)
        for (int i = lo[0]; i < hi[0]; ++i, ++c)
          out[c] = ug_pressure(gm1, u(DENS, i, j, k), u(MOMX, i, j, k), u(MOMY, i, j, k),
                               u(MOMZ, i, j, k), u(ETOT, i, j, k));
    return;
  }
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j)
      for (int i = lo[0]; i < hi[0]; ++i, ++c) {
        const double d = u(DENS, i, j, k);
        out[c] = which < 3 ? u(MOMX + which, i, j, k) / d : u(ETOT, i, j, k) / d;
      }
}

physics::Registration Hydro::registration() {
  return physics::registration_of<Hydro>(
      "hydro", physics::UnitRole::operator_unit,
      "unsplit second-order hydrodynamics (PLM/PPM, HLLC/HLLE, rk2 or one-stage MUSCL-Hancock)",
      {.needs = {{"eos", false, "the EOS state of its fluid"},
                 {"composition", true, "the species it advects as mass scalars"},
                 {"gravity", true, "the field inside its step, the face mass fluxes"}}});
}

}  // namespace tessera::hydro

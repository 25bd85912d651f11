// Unsplit hydrodynamics on one block at a time. References:
//   Toro, "Riemann Solvers and Numerical Methods for Fluid Dynamics", 3rd ed. (2009),
//     §14.4 (MUSCL-Hancock), §10.4 (HLLC), §10.3 (HLLE);
//   Colella, J. Comput. Phys. 87 (1990) 171 (unsplit primitive-variable predictor);
//   Colella & Woodward, J. Comput. Phys. 54 (1984) 174 (PPM);
//   Shu & Osher, J. Comput. Phys. 77 (1988) 439 (SSP Runge-Kutta).
#include "physics/hydro/hydro.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <new>
#include <type_traits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/simd.hpp"
#include "mesh/flux_register.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/block_update.hpp"
#include "physics/hydro/kernels_ref.hpp"
#include "physics/hydro/kernels_simd.hpp"
#include "physics/hydro/reconstruct.hpp"
#include "physics/hydro/riemann.hpp"
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
  grav_ = nullptr;
  gfield_.clear();
  mflux_ = nullptr;
  auto* g = services.get<gravity::Gravity>("gravity");
  if (g != nullptr && g->wants_mass_fluxes()) mflux_ = g;
  if (g != nullptr && g->kind() != gravity::Kind::none && opt_.integrator == Integrator::hancock &&
      opt_.gravity != GravityCoupling::split) {
    grav_ = g;
    g->set_hydro_coupled(true);
    for (int a = 0; a < m.shape().ndim; ++a) {
      at_.gac[a] = m.var_index(std::string("gac") + "xyz"[a]);
      if (at_.gac[a] < 0) throw Error("hydro: the gravity unit declares no gacx..gacz");
    }
    gfield_.assign(std::size_t(m.shape().ndim) * m.shape().cells(), 0.0);
  }
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

template <mesh::Layout L>
void Hydro::refresh_row(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node, int j,
                        int k) const {
  const auto d = u.row(DENS, j, k), mx = u.row(MOMX, j, k), my = u.row(MOMY, j, k),
             mz = u.row(MOMZ, j, k), e = u.row(ETOT, j, k);
  auto ei = u.row(at_.eint, j, k);
  for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
    const double ir = 1.0 / d[i];
    const double vx = mx[i] * ir, vy = my[i] * ir, vz = mz[i] * ir;
    ei[i] = e[i] * ir - 0.5 * (vx * vx + vy * vy + vz * vz);
  }
  if (eos_->update_row(u, s, node, j, k, eos::Mode::dens_ei) == 0) return;
  // The EOS's cold floor raised eint in some zones (those whose eint differs from the one
  // computed above): etot follows, so the state stays consistent (energy is added there).
  for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
    const double ir = 1.0 / d[i];
    const double vx = mx[i] * ir, vy = my[i] * ir, vz = mz[i] * ir;
    const double ke = 0.5 * (vx * vx + vy * vy + vz * vz);
    if (ei[i] != e[i] * ir - ke) e[i] = d[i] * (ei[i] + ke);
  }
}

template <mesh::Layout L>
void Hydro::refresh_block(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node) const {
  // Row by row: eint from the conserved variables, then the EOS on the same row (in L1).
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) refresh_row(u, s, node, j, k);
}

void Hydro::refresh_thermo(mesh::Mesh& m) {
  TESSERA_REGION("eos");
  stale_ = false;
  m.for_each_leaf(
      [&](int id, const auto& u, const mesh::BlockGeom&) { refresh_block(u, m.shape(), id); });
}

void Hydro::scalars_to_conserved(mesh::Mesh& m, bool to_conserved) {
  if (at_.scalars.empty()) return;
  // The mass scalars (guard-filled) change: the next fill must move them (dens and the
  // momenta before them keep what a fill left current: the tracers' move).
  m.invalidate_guards(*std::min_element(at_.scalars.begin(), at_.scalars.end()));
  const auto& s = m.shape();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    for (int q : at_.scalars)
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        if (to_conserved)
          u(q, i, j, k) *= u(DENS, i, j, k);
        else
          u(q, i, j, k) /= u(DENS, i, j, k);
      });
  });
  if (comp_) comp_->set_conserved(to_conserved);
}

void Hydro::initialise(mesh::Mesh& m) {
  refresh_thermo(m);
}

void Hydro::restore(mesh::Mesh& m, const physics::CheckpointInfo& c) {
  if (!c.initialised && m.vars()[static_cast<std::size_t>(at_.pres)].role == mesh::VarRole::derived)
    refresh_thermo(m);
}

void Hydro::fill_guard_state(mesh::Mesh& m) {
  const auto& s = m.shape();
  Scratch& S = *scratch_;
  const std::size_t ng = S.guard_cells.size();
  const int* gcell = S.guard_cells.data();
  double* gd = S.gz;
  double* ge = gd + ng;
  double* gt = ge + ng;
  double* gp = gt + ng;
  double* ggc = gp + ng;
  double* gge = ggc + ng;
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
    const auto d = u.row(DENS, 0, 0), mx = u.row(MOMX, 0, 0), my = u.row(MOMY, 0, 0),
               mz = u.row(MOMZ, 0, 0), e = u.row(ETOT, 0, 0);
    for (std::size_t q = 0; q < ng; ++q) {
      const int c = gcell[q];
      const double ir = 1.0 / d[c];
      const double vx = mx[c] * ir, vy = my[c] * ir, vz = mz[c] * ir;
      gd[q] = d[c];
      ge[q] = e[c] * ir - 0.5 * (vx * vx + vy * vy + vz * vz);
    }
    eos_->eval_cells(u, s, gcell, ng, gd, ge, gt, gp, ggc, gge);
    const auto pr = u.row(at_.pres, 0, 0), te = u.row(at_.temp, 0, 0), gc = u.row(at_.gamc, 0, 0),
               gm = u.row(at_.game, 0, 0), ei = u.row(at_.eint, 0, 0);
    for (std::size_t q = 0; q < ng; ++q) {
      const int c = gcell[q];
      pr[c] = gp[q];
      te[c] = gt[q];
      gc[c] = ggc[q];
      gm[c] = gge[q];
      ei[c] = ge[q];
    }
  });
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
  if (!at_.scalars.empty()) {
    scalars_to_conserved(m, false);
    if (comp_) comp_->normalise(m);
  }
  refresh_thermo(m);
}

template <class View>
double Hydro::leaf_rate(const View& u, const mesh::BlockShape& s, const mesh::BlockGeom& bg) const {
  const int nd = s.ndim;
  const double idx[3] = {1.0 / bg.dx[0], nd > 1 ? 1.0 / bg.dx[1] : 0.0,
                         nd > 2 ? 1.0 / bg.dx[2] : 0.0};
  const double* rad = nullptr;
  if (bg.geometry != mesh::Geometry::cartesian) {
    double* r = scratch_->geo;  // per interior zone i: max(A-, A+) / V per unit length
    for (int i = 0; i < s.ni(0); ++i) {
      const double r0 = bg.lo[0] + i * bg.dx[0], r1 = r0 + bg.dx[0];
      r[i] = std::max(mesh::geometry::radial_area(bg.geometry, r0),
                      mesh::geometry::radial_area(bg.geometry, r1)) /
             mesh::geometry::shell_volume(bg.geometry, r0, r1);
    }
    rad = r;
  }
  double* buf = scratch_->row;
  return at_.uniform
             ? max_rate<true>(u, s, idx, at_.pres, at_.gamc, at_.ugamc, at_.ugame - 1.0,
                              opt_.smallp, buf, rad)
             : max_rate<false>(u, s, idx, at_.pres, at_.gamc, 0.0, 0.0, opt_.smallp, buf, rad);
}

template <class View>
void Hydro::swept_row(const View& u, const mesh::BlockShape& s, int j, int k, const double idx[3],
                      SweptLeaf& leaf) const {
  const double gm1 = at_.ugame - 1.0;
  bool flagged = false;
  leaf.rate =
      std::max(leaf.rate, row_rate<true>(u, s, j, k, idx, at_.pres, at_.gamc, at_.ugamc, gm1,
                                         opt_.smallp, scratch_->row, nullptr, &flagged));
  if (flagged && !leaf.bad.bad()) {
    leaf.bad = check_row<true>(u, s, j, k, at_.pres, gm1);
    if (leaf.bad.bad()) leaf.bad.node = leaf.id;
  }
}

template <class View>
Hydro::SweptLeaf Hydro::swept_leaf(const View& u, const mesh::BlockShape& s,
                                   const mesh::BlockGeom& bg, int id) const {
  const int nd = s.ndim;
  const double idx[3] = {1.0 / bg.dx[0], nd > 1 ? 1.0 / bg.dx[1] : 0.0,
                         nd > 2 ? 1.0 / bg.dx[2] : 0.0};
  SweptLeaf leaf;
  leaf.id = id;
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) swept_row(u, s, j, k, idx, leaf);
  return leaf;
}

Hydro::StateStamp Hydro::StateStamp::of(const mesh::Mesh& m) {
  return {&m, m.state_epoch(), tessera::simd::current().name};
}

bool Hydro::StateStamp::matches(const mesh::Mesh& m) const {
  return mesh == &m && epoch == m.state_epoch() && target == tessera::simd::current().name;
}

double Hydro::max_dt(mesh::Mesh& m) const {
  // check() saw these leaves (the same mesh, state epoch and SIMD target): its maximum.
  const bool kept = at_.uniform && checked_rate_.stamp.matches(m);
  double rate = 0.0;  // max over zones of sum_a (|u_a| + c) / dx_a
  if (!kept || verify_kept_rate_)
    m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& bg) {
      rate = std::max(rate, leaf_rate(u, m.shape(), bg));
    });
  if (kept && verify_kept_rate_ &&
      std::bit_cast<std::uint64_t>(rate) != std::bit_cast<std::uint64_t>(checked_rate_.rate))
    throw Error(fmt::format(
        "hydro.verify_kept_rate: the time-step rate kept from the last check ({:.17g}) is not "
        "the leaves' now ({:.17g}): unk changed without Mesh::touch_state",
        checked_rate_.rate, rate));
  if (kept) rate = checked_rate_.rate;
  return rate > 0.0 ? opt_.cfl / rate : std::numeric_limits<double>::max();
}

void Hydro::sync(mesh::Mesh& m) {
  if (!stale_) return;
  refresh_thermo(m);
}

void Hydro::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("hydro");
  const auto& s = m.shape();
  const std::size_t per = s.doubles();
  auto& fr = m.flux_register();
  scalars_to_conserved(m, true);
  // The gravity unit's field of this block (the density at the start of the step), or
  // null without gravity in the step.
  auto field = [&](const auto& u) -> const double* {
    if (grav_ == nullptr) return nullptr;
    const std::size_t N = s.cells();
    for (int a = 0; a < s.ndim; ++a) {
      const auto g = u.row(at_.gac[a], 0, 0);
      double* out = gfield_.data() + std::size_t(a) * N;
      for (std::size_t c = 0; c < N; ++c) out[c] = g[c];
    }
    return gfield_.data();
  };
  // The gravity unit's face mass fluxes of a block (stage weight w, added or set).
  auto mass_out = [&](int slot, double w, bool add) {
    MassFluxOut mo;
    if (mflux_ == nullptr) return mo;
    mo.f = mflux_->mass_fluxes(slot);
    mo.layout = &mflux_->face_layout();
    mo.w = w;
    mo.add = add;
    return mo;
  };
  // One sweep over the leaves, then flux correction. row(id, u, bg, j, k) runs for every
  // interior row as soon as its update is complete (update_block's hook), corrected(b, id,
  // u, bg) for each leaf (b: its place in for_each_leaf order) flux correction changed.
  const auto none = [](auto&&...) {};
  auto sweep = [&](bool predictor, double w, bool add, auto&& row, auto&& corrected) {
    m.fill_guards();
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
      const int slot = m.slot(id);
      BoundaryFluxes out{{}, fr.per_var()};
      for (int f = 0; f < 6; ++f) out.face[f] = fr.face(slot, f);
      update_block(u, s, bg, opt_, at_, dt, predictor, *scratch_, out, mass_out(slot, w, add),
                   field(u), [&](int j, int k) { row(id, u, bg, j, k); });
    });
    fr.correct(m.storage(), m.tree(), m.comm(), dt, at_.flux, mflux_ != nullptr);
    if (mflux_) store_boundary_mass_fluxes(m, w, add);
    if (!fr.corrected_slots().empty()) {
      std::size_t b = 0;
      m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
        if (std::binary_search(fr.corrected_slots().begin(), fr.corrected_slots().end(),
                               m.slot(id)))
          corrected(b, id, u, bg);
        ++b;
      });
    }
  };
  // The EOS after the last stage sees X again (normalised species). A uniform-gamma
  // EOS's state waits for sync(): the kernels do not read it.
  auto finish = [&] {
    scalars_to_conserved(m, false);
    if (comp_) comp_->normalise(m);
    if (at_.uniform)
      stale_ = true;
    else
      refresh_thermo(m);
  };
  swept_.stamp = {};
  if (opt_.integrator == Integrator::hancock && swept_checkable(m)) {
    // One stage, uniform gamma, no mass scalars, Cartesian, hydro the last operator: each
    // interior row gets check()'s test and its time-step rate as soon as its update is
    // complete, while it is in cache (timed inside "fluxes"), and the blocks that flux
    // correction changes afterwards get them again; check() takes the result (swept_)
    // unless the leaves change first. That is a pass over the leaves' conserved variables
    // less per step. The same bad zone and the same rate bits as check()'s own pass (max is
    // exact in any order).
    swept_.leaves.clear();
    double idx[3] = {0.0, 0.0, 0.0};  // 1/dx of the leaf being swept
    sweep(
        true, 1.0, false,
        [&](int id, const auto& u, const mesh::BlockGeom& bg, int j, int k) {
          if (swept_.leaves.empty() || swept_.leaves.back().id != id) {  // the leaf's first row
            swept_.leaves.push_back({});
            swept_.leaves.back().id = id;
            for (int a = 0; a < 3; ++a) idx[a] = a < s.ndim ? 1.0 / bg.dx[a] : 0.0;
          }
          swept_row(u, s, j, k, idx, swept_.leaves.back());
        },
        [&](std::size_t b, int id, const auto& u, const mesh::BlockGeom& bg) {
          swept_.leaves[b] = swept_leaf(u, s, bg, id);
        });
    finish();
    if (mflux_) mflux_->mass_fluxes_written();
    swept_.stamp = StateStamp::of(m);
    return;
  }
  if (opt_.integrator == Integrator::hancock && at_.uniform) {
    sweep(true, 1.0, false, none, none);
    finish();
    if (mflux_) mflux_->mass_fluxes_written();
    return;
  }
  if (opt_.integrator == Integrator::hancock && at_.scalars.empty()) {
    // One stage and no mass scalars: each zone row's EOS state is refreshed as soon as its
    // update is complete, while it is in cache (timed inside "fluxes"), and again for the
    // blocks that flux correction changes afterwards. The same values as
    // refresh_thermo() after the sweep.
    sweep(
        true, 1.0, false,
        [&](int id, const auto& u, const mesh::BlockGeom&, int j, int k) {
          refresh_row(u, s, id, j, k);
        },
        [&](std::size_t, int id, const auto& u, const mesh::BlockGeom&) {
          TESSERA_REGION("eos");
          refresh_block(u, s, id);
        });
    if (mflux_) mflux_->mass_fluxes_written();
    return;
  }
  if (opt_.integrator == Integrator::hancock) {
    sweep(true, 1.0, false, none, none);
    finish();
    if (mflux_) mflux_->mass_fluxes_written();
    return;
  }
  // SSP Runge-Kutta: U^(s) = a_s U^n + b_s (U^(s-1) + dt L(U^(s-1))). Whole-block copies
  // and blends (guard zones too) of the ranges rk_ranges_ holds: in var-major storage every
  // variable but the derived ones (a gamma law's EOS state, 5 of sedov_3d_uniform's 10
  // variables), which are recomputed from the blended state (refresh_thermo, or sync()
  // while flagged stale) before anything reads them. The EOS state follows each stage.
  static const double rk2[2][2] = {{0.0, 1.0}, {0.5, 0.5}};
  static const double rk3[3][2] = {{0.0, 1.0}, {0.75, 0.25}, {1.0 / 3.0, 2.0 / 3.0}};
  const int ns = stages();
  const auto& leaves = m.local_leaves();
  double* const u0 = static_cast<double*>(u0_.data());
  for (std::size_t b = 0; b < leaves.size(); ++b) {
    const double* src = m.storage().data(m.slot(leaves[b]));
    for (const auto& [at, n] : rk_ranges_) std::copy(src + at, src + at + n, u0 + b * per + at);
  }
  for (int st = 0; st < ns; ++st) {
    const double a = ns == 2 ? rk2[st][0] : rk3[st][0];
    const double b = ns == 2 ? rk2[st][1] : rk3[st][1];
    // This stage's weight in the step's effective flux: the b of every stage from it on.
    double w = 1.0;
    for (int later = st; later < ns; ++later) w *= ns == 2 ? rk2[later][1] : rk3[later][1];
    sweep(false, w, st > 0, none, none);
    // The last stage's blend is the step's last write to a block: with a uniform gamma, no
    // mass scalars and Cartesian geometry, check()'s test and the time-step rate follow it
    // block by block while the block is in cache, as the one-stage sweep does row by row.
    const bool check_here = st + 1 == ns && st > 0 && swept_checkable(m);
    if (check_here) swept_.leaves.clear();
    if (st > 0) {
      for (std::size_t bl = 0; bl < leaves.size(); ++bl) {
        double* q = m.storage().data(m.slot(leaves[bl]));
        const double* q0 = u0 + bl * per;
        for (const auto& [at, n] : rk_ranges_)
          for (std::size_t c = at; c < at + n; ++c) q[c] = a * q0[c] + b * q[c];
        if (check_here)
          m.with_layout([&](auto tag) {
            const int id = leaves[bl];
            swept_.leaves.push_back(swept_leaf(m.view(id, tag), s, m.geom(id), id));
          });
      }
    }
    if (st + 1 < ns && !at_.uniform) refresh_thermo(m);
  }
  finish();
  if (mflux_) mflux_->mass_fluxes_written();
  if (ns > 1 && swept_checkable(m)) swept_.stamp = StateStamp::of(m);
}

void Hydro::store_boundary_mass_fluxes(mesh::Mesh& m, double w, bool add) {
  const auto& s = m.shape();
  const int nd = s.ndim;
  auto& fr = m.flux_register();
  const gravity::FaceLayout& L = mflux_->face_layout();
  for (int id : m.local_leaves()) {
    const int slot = m.slot(id);
    double* f = mflux_->mass_fluxes(slot);
    for (int a = 0; a < nd; ++a) {
      // The register's face layout [v][t2][t1], t1 < t2 the transverse axes; dens is v = 0.
      const int t1 = a == 0 ? 1 : 0, t2 = a == 2 ? 1 : 2;
      for (int side = 0; side < 2; ++side) {
        const double* R = fr.face(slot, 2 * a + side);
        int idx[3] = {0, 0, 0};
        idx[a] = side ? s.ni(a) : 0;
        for (int c2 = 0; c2 < s.ni(t2); ++c2)
          for (int c1 = 0; c1 < s.ni(t1); ++c1) {
            idx[t1] = c1;
            idx[t2] = c2;
            const double F = R[std::size_t(c2) * s.ni(t1) + c1];
            double& d = f[L.index(a, idx[0], idx[1], idx[2])];
            d = add ? d + w * F : w * F;
          }
      }
    }
  }
}

physics::BadZone Hydro::check(mesh::Mesh& m) const {
  physics::BadZone bad;
  if (m.geometry() != mesh::Geometry::cartesian && !rotation_checked_) {
    // No centrifugal or Coriolis terms: momentum about the axis (v_phi) is not modelled.
    // Checked once (the driver checks the initial state): with none at the start the
    // update creates none (its flux is rho u v_phi).
    rotation_checked_ = true;
    const auto& s = m.shape();
    const int first = m.geometry() == mesh::Geometry::cylindrical ? MOMZ : MOMY;
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
      if (bad.bad()) return;
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (int v = first; v <= MOMZ && !bad.bad(); ++v)
          if (u(v, i, j, k) != 0.0) {
            bad = {id,
                   i - s.g(0),
                   j - s.g(1),
                   k - s.g(2),
                   u(v, i, j, k),
                   std::string(v == MOMZ ? "momz" : "momy") + " is not zero: rotation and " +
                       "transverse motion are not modelled in " +
                       mesh::geometry_name(m.geometry()) + " geometry (no centrifugal terms)",
                   true};
          }
      });
    });
    if (bad.bad()) return bad;
  }
  // The step checked the leaves as it finished them (advance: the one-stage sweep row by
  // row, Runge-Kutta block by block after its last blend; swept_checkable): its result
  // stands while nothing has written the leaves since (the driver advances the state
  // epoch before every operator that writes unk).
  const bool swept = swept_.stamp.matches(m) && swept_.leaves.size() == m.local_leaves().size();
  double rate = 0.0;
  if (swept) {
    for (const SweptLeaf& l : swept_.leaves) {
      if (l.bad.bad()) {
        bad = l.bad;
        break;
      }
      rate = std::max(rate, l.rate);
    }
    if (verify_kept_rate_) {
      // Leaf by leaf: a leaf the sweep saw otherwise than it is now (flux correction after
      // the sweep, say) shows even where it holds neither the bad zone nor the maximum.
      const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
      std::size_t b = 0;
      m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
        const SweptLeaf& l = swept_.leaves[b++];
        physics::BadZone z = check_block<true>(u, m.shape(), at_.pres, at_.ugame - 1.0);
        if (z.bad()) z.node = id;
        const double own = leaf_rate(u, m.shape(), bg);
        if (l.id != id || z.node != l.bad.node || z.i != l.bad.i || z.j != l.bad.j ||
            z.k != l.bad.k || z.what != l.bad.what || bits(z.value) != bits(l.bad.value) ||
            bits(own) != bits(l.rate))
          throw Error(fmt::format(
              "hydro.verify_kept_rate: what the sweep found in leaf {} ({}, rate {:.17g}) is "
              "not what the leaf holds now ({}, rate {:.17g}): unk changed without "
              "Mesh::touch_state",
              id + 1, l.bad.bad() ? l.bad.what : "good", l.rate, z.bad() ? z.what : "good", own));
      });
    }
  } else {
    bad = check_leaves(m, rate);
  }
  if (at_.uniform && !bad.bad()) checked_rate_ = {StateStamp::of(m), rate};
  return bad;
}

physics::BadZone Hydro::check_leaves(mesh::Mesh& m, double& rate) const {
  // With a uniform gamma the time-step rate reads the conserved variables alone (its
  // pressure is recomputed), which a good state's check has just brought into cache: the
  // next max_dt takes it from here unless the leaves change first (Mesh::state_epoch).
  physics::BadZone bad;
  rate = 0.0;
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& bg) {
    if (bad.node >= 0) return;
    physics::BadZone z = at_.uniform ? check_block<true>(u, m.shape(), at_.pres, at_.ugame - 1.0)
                                     : check_block<false>(u, m.shape(), at_.pres, 0.0);
    if (!z.what.empty()) {
      z.node = id;
      bad = z;
      return;
    }
    if (at_.uniform) rate = std::max(rate, leaf_rate(u, m.shape(), bg));
  });
  return bad;
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

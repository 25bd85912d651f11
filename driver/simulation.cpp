#include "driver/simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "base/error.hpp"
#include "base/simd.hpp"
#include "base/size.hpp"
#include "driver/signals.hpp"
#include "driver/units.hpp"
#include "io/io_params.hpp"
#include "io/mesh_output.hpp"
#include "io/output_manager.hpp"
#include "memory/arena.hpp"
#include "memory/planner.hpp"
#include "memory/tier_runtime.hpp"
#include "memory/tiers.hpp"
#include "mesh/lohner.hpp"
#include "mesh/mesh.hpp"
#include "parallel/comm.hpp"
#include "particles/particle_io.hpp"
#include "particles/particle_set.hpp"
#include "perf/counters.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/field_rules.hpp"
#include "problems/problem.hpp"
#include "solvers/krylov.hpp"

namespace tessera::driver {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void declare_all_params(base::Params& p) {
  p.declare_int("driver.nend", 1000000, 0, 2000000000, "maximum number of steps");
  p.declare_real("driver.tmax", 0.05, 0.0, 1e300, "end time (s)");
  p.declare_real("driver.dtinit", 0.0, 0.0, 1e300, "first step's dt (0: from the CFL condition)");
  p.declare_real("driver.dtmax", 1e300, 0.0, 1e300, "largest dt allowed (s)");
  p.declare_real("driver.dt_growth", 1.25, 1.0, 100.0,
                 "largest factor by which dt may grow per step");
  p.declare_int("driver.log_every", 0, 0, 1000000,
                "steps between progress lines and history.csv rows (0: a line each 2 % of the "
                "run, with the time left, and a history.csv row every step)");
  p.declare_int("driver.inject_nan_step", 0, 0, 2000000000,
                "fault injection for tests: at this step the last rank's last leaf gets a NaN "
                "density (0: off)");
  p.declare_int("driver.inject_error_step", 0, 0, 2000000000,
                "fault injection for tests: at this step the last rank alone throws an error "
                "(the job must end, not hang; 0: off)");
  p.declare_string_list("driver.restart_drop", {},
                        "what a restart may drop from its checkpoint: units, variables, "
                        "species, groups or particle species named here (a restart that "
                        "would lose anything not named is refused)");
  io::declare_params(p);
  perf::declare_params(p);
  memory::declare_params(p);
  mesh::Mesh::declare_params(p);
  solvers::Options::declare_params(p);
  declare_unit_params(p);
  problems::declare_params(p);
}

Simulation::Simulation(const base::Params& p, MPI_Comm comm, RunOptions opt)
    : p_(p), comm_(comm), opt_(std::move(opt)) {
  rank_ = parallel::rank(comm);
  nranks_ = parallel::size(comm);
  memory::check_params(p);
  // Counters (and the timer tree) start before the arenas are mapped, so the "setup"
  // region shows what mapping and pre-faulting them cost (page faults, time) under each
  // page policy. A bad counter name fails here, before the run; a missing counter never
  // does.
  perf::TimerTree::local().reset();
  perf::configure_counters(p.get_string_list("perf.counters"));
  // The kernels' instruction set: the parameter, else TESSERA_SIMD, else the best.
  if (const auto simd_target = p.get_string("perf.simd"); simd_target != "auto")
    simd::force(simd_target);
  else
    simd::force_from_environment();
  units_ = make_units(p, &operators_);
  eos_ = units_.provider<eos::EosUnit>("eos");
  if (eos_ != nullptr) {
    // Set-ups evaluate the EOS before unk holds any species: they see the initial mixture.
    const eos::Eos* setup_eos = &eos_->eos();
    if (auto* comp = units_.provider<composition::Composition>("composition");
        comp && comp->has_species()) {
      double abar, zbar;
      comp->initial_abar_zbar(abar, zbar);
      setup_eos_ = std::make_unique<eos::FixedComposition>(eos_->eos(), abar, zbar);
      setup_eos = setup_eos_.get();
    }
    problem_ = problems::make(p, *setup_eos);
  } else {
    problem_ = problems::make_without_eos(p);  // a run without a fluid (pic)
  }
  ctx_.run_dir = opt_.run_dir;
  ctx_.exact = problem_->exact_solution();
  ctx_.comm = comm;
  ctx_.params = &p;
  if (opt_.restart) {
    // The clock the run continues from (the units learn it at bind).
    ctx_.restarted = true;
    for (const auto& [k, v] : opt_.restart->spec.real_scalars)
      if (k == "time") ctx_.start_time = v;
    for (const auto& [k, v] : opt_.restart->spec.int_scalars)
      if (k == "nstep") ctx_.start_step = static_cast<int>(v);
  }
  const auto vars = unk_variables(units_);
  for (const auto& u : units_.all()) {
    const auto names = u->declarations().totals;
    if (!names.empty()) totals_by_.emplace_back(u.get(), names.size());
    total_names_.insert(total_names_.end(), names.begin(), names.end());
  }
  for (const auto& u : units_.all())
    if (std::find(operators_.begin(), operators_.end(), u.get()) == operators_.end())
      services_first_.push_back(u.get());
  services_first_.insert(services_first_.end(), operators_.begin(), operators_.end());
  // The planner's prediction, made before anything large is allocated (its baseline is
  // this process's RSS now); summary.json sets it beside the measured peak.
  {
    // The ranks that share this node's memory (the plan's per-node peak).
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    int per_node = parallel::size(node);
    MPI_Allreduce(MPI_IN_PLACE, &per_node, 1, MPI_INT, MPI_MAX, comm);
    MPI_Comm_free(&node);
    // Against the memory available now (MemAvailable: the OS and other jobs hold the
    // rest), not the node's total.
    plan_ = memory::plan_memory(p, declared(p, units_), nranks_, per_node,
                                memory::read_meminfo().mem_available);
  }
  // A run that cannot fit is refused before it maps anything (issue 48: a PIC run with a
  // million particles per cell was killed by the kernel at 24 GB while writing its last
  // outputs, with no error line and nothing saved).
  if (p.get_bool("memory.refuse_over_plan") && !plan_["per_node"]["fits"].get<bool>()) {
    const auto& r = plan_["per_rank"];
    std::string largest;
    double most = -1;
    for (const auto& it : plan_["items"])
      if (it["counted"].get<bool>() && it["bytes"].get<double>() > most)
        most = it["bytes"].get<double>(), largest = it["name"].get<std::string>();
    throw Error(fmt::format(
        "the memory plan does not fit: {} per node at its peak ({} per rank in phase '{}', "
        "{} steady; the largest item '{}' {}) against {} of memory available; see `tessera plan` "
        "(memory.refuse_over_plan = false runs it anyway)",
        format_bytes(plan_["per_node"]["peak_bytes"].get<double>()),
        format_bytes(r["peak_bytes"].get<double>()), r["peak_phase"].get<std::string>(),
        format_bytes(r["steady_bytes"].get<double>()), largest, format_bytes(most),
        format_bytes(plan_["per_node"]["memory_per_node"].get<double>())));
  }
  {
    TESSERA_REGION("setup");  // root blocks, and every arena mapped and pre-faulted
    // Tiers first: every arena from here on is placed (memory/tier_runtime.hpp).
    if (const auto tc = memory::tier_config(p); memory::TierRuntime::wanted(tc)) {
      MPI_Comm node;
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
      memory::TierRuntime::Options o;
      o.ranks_per_node = parallel::size(node);
      MPI_Comm_free(&node);
      tiers_ = std::make_unique<memory::TierRuntime>(tc, memory::detect_tiers(), o);
    }
    mesh_ =
        std::make_unique<mesh::Mesh>(p, comm, vars, unk_nguard(units_), unk_nflux(units_, vars));
    // Services (composition, eos) first: operators look up what they declared.
    for (auto* u : services_first_) u->bind(*mesh_, services_for(units_, *u), ctx_);
  }
  // What the units declare, as bind left it (hydro derives "pres" with a uniform gamma).
  for (const auto& u : units_.all()) decl_.push_back(u->declarations());
  // Blocks may move on an unchanged tree (mesh.balance = "cost") unless a unit keeps
  // per-block state outside unk.
  bool moves = true;
  std::string keeper;
  for (const auto& u : units_.all())
    if (decl(*u).block_state) {
      moves = false;
      keeper = u->name();
    }
  mesh_->allow_moves(moves);
  if (!moves && mesh_->balance_by_cost() && nranks_ > 1)
    log("balance: mesh.balance = \"cost\" splits the work at regrids that change the tree "
        "only: " +
        keeper + " keeps per-block state, so blocks do not move on an unchanged tree");
  for (const auto& u : units_.all())
    if (auto* ps = decl(*u).particle_set) {
      if (particles_ != nullptr) throw Error("two units own particles; one particle set per run");
      particles_ = ps;
    }
  // What check_state and check_derived test besides the units' own checks.
  for (int v = 0; v < int(mesh_->vars().size()); ++v) {
    const auto& var = mesh_->vars()[std::size_t(v)];
    if (var.role == mesh::VarRole::derived)
      derived_vars_.push_back(v);
    else if (var.role == mesh::VarRole::independent && !var.checked)
      unchecked_vars_.push_back(v);
  }
  problem_->bind(*mesh_);
  if (const auto d = problem_->describe(); !d.empty()) log(d);
  for (const auto& v : p.get_string_list("io.plot_vars"))
    if (v != "unk" && mesh_->var_index(v) < 0 && deriver(v) == nullptr)
      throw Error("io.plot_vars: unknown variable '" + v + "'");
  hints_ = io::hints_from(p);  // validated before the run starts
  {
    auto cfg = io::config_from(p, opt_.run_dir, opt_.thread_multiple);
    cfg.particles = particles_ != nullptr;
    out_ = std::make_unique<io::OutputManager>(comm, std::move(cfg));
  }
  if (!out_->async_note().empty()) log("warning: " + out_->async_note());
  {
    const auto t = simd::current();
    log(fmt::format("simd: vectorised kernels run {} ({} double{} per vector)", t.name, t.lanes,
                    t.lanes == 1 ? "" : "s"));
    log("simd: the rest of the code is compiled for " + simd::compiled_for());
  }
  for (const auto& a : memory::report_all()) {
    log(fmt::format("memory: arena {} {} pages={} (requested {}), {} in huge pages", a.name,
                    format_bytes(double(a.bytes)), memory::to_string(a.policy_achieved),
                    memory::to_string(a.policy_requested), format_bytes(double(a.huge_bytes))));
    if (!a.warning.empty()) log("warning: memory: arena " + a.name + ": " + a.warning);
  }
  if (tiers_) {
    const std::string pre = tiers_->log_prefix();
    if (const auto w = tiers_->backend_warning(); !w.empty()) log("warning: " + pre + w);
    for (const auto& w : tiers_->topology().warnings()) log("warning: " + pre + w);
    for (const auto& line : tiers_->describe()) log(line);
    for (const auto& e : tiers_->ledger())
      log(fmt::format("{}arena {} ({}) {}: fast {}, slow {} (requested fast {}, slow {}){}", pre,
                      e.name, memory::to_string(e.cls), format_bytes(double(e.bytes)),
                      format_bytes(double(e.achieved[0])), format_bytes(double(e.achieved[1])),
                      format_bytes(double(e.requested[0])), format_bytes(double(e.requested[1])),
                      e.warning.empty() ? "" : "; " + e.warning));
    if (tiers_->static_pending()) log(pre + "static placement follows the first step");
  }
  install_signal_handlers();
}

Simulation::~Simulation() = default;

void Simulation::log(const std::string& line) const {
  if (rank_ == 0) {
    std::cout << line << '\n';
    std::cout.flush();
  }
}

void Simulation::place_tiers() {
  TESSERA_REGION("tier_placement");
  std::size_t batch = 0;
  if (particles_ != nullptr)
    for (int id : mesh_->local_leaves())
      batch = std::max(
          batch, (particles_->end(id) - particles_->begin(id)) * particles_->bytes_per_particle());
  const std::string line = tiers_->place_static(batch);
  if (!line.empty()) log(line);
}

void Simulation::refresh_units(physics::Deferred what) {
  // A refresh writes unk (derived variables; PIC's finish re-deposits rhoq): an output
  // still copying unk takes its copy first (issue 48: a plotfile and a checkpoint of one
  // step, the second's refresh rewrote rhoq under the first's copy).
  if (out_) out_->wait_captures();
  mesh_->touch_state();  // a refresh writes unk's derived variables
  for (auto* u : services_first_) u->refresh(*mesh_, what);
}

void Simulation::fill_guards() {
  refresh_units(physics::Deferred::unk_state);  // refinement marking may read any variable
  mesh_->fill_guards();
  refresh_units(physics::Deferred::guard_state);
}

const physics::Unit* Simulation::deriver(const std::string& name) const {
  for (const auto& u : units_.all())
    for (const auto& d : decl(*u).derived)
      if (d == name) return u.get();
  return nullptr;
}

const physics::Declarations& Simulation::decl(const physics::Unit& u) const {
  for (std::size_t n = 0; n < units_.all().size(); ++n)
    if (units_.all()[n].get() == &u) return decl_.at(n);
  throw Error("internal: " + u.name() + " is not a unit of this run");
}

void Simulation::initialise_units() {
  for (auto* u : services_first_) u->initialise(*mesh_);
}

void Simulation::initialise() {
  TESSERA_REGION("initialise");
  if (opt_.restart) {
    restore(*opt_.restart);
    opt_.restart.reset();
    restarted_ = true;
    mesh_->touch_state();  // unk is the checkpoint's
    return;
  }
  auto init_all = [&] {
    mesh_->for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
      problem_->init_block(u, g, mesh_->shape());
    });
    initialise_units();
  };
  init_all();
  // Refine on the initial condition itself, re-initialising the new blocks each time.
  for (int it = 0; it < mesh_->lrefine_max(); ++it) {
    fill_guards();
    mark_and_regrid();
    init_all();
  }
  const double f = problem_->normalise_deposit(*mesh_);
  if (f == 0.0) {
    log("warning: " + problem_->name() + ": no zone of the domain holds the deposit");
  } else if (f != 1.0) {
    log(
        fmt::format("{}: deposit scaled by {:.9f} to hold exactly the energy asked for "
                    "(the sub-zone average held {:.6f} of it)",
                    problem_->name(), f, 1.0 / f));
    initialise_units();
  }
  mesh_->touch_state();  // unk holds the initial conditions
}

std::vector<double> Simulation::totals() {
  const auto& s = mesh_->shape();
  const std::size_t nt = total_names_.size();
  std::vector<double> zone(nt, 0.0), sum(nt, 0.0);
  // Per-leaf sums added exactly (Mesh::leaf_sums): the same bits on any rank
  // count.
  return mesh_->leaf_sums(static_cast<int>(nt), [&](int id, double* out) {
    const mesh::BlockGeom g = mesh_->geom(id);
    // Cartesian zones share one volume (applied once per block); curvilinear ones are
    // weighted zone by zone.
    const bool curved = g.geometry != mesh::Geometry::cartesian;
    double dv = 1;
    for (int a = 0; a < s.ndim; ++a) dv *= g.dx[a];
    std::fill(sum.begin(), sum.end(), 0.0);
    mesh_->with_layout([&](auto tag) {
      const auto u = mesh_->view(id, tag);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        std::size_t at = 0;
        for (const auto& [unit, n] : totals_by_) {
          unit->total_densities(u, i, j, k, zone.data() + at);
          at += n;
        }
        const double w = curved ? g.volume(i - s.g(0)) : 1.0;
        for (std::size_t q = 0; q < nt; ++q) sum[q] += zone[q] * w;
      });
    });
    for (std::size_t q = 0; q < nt; ++q) out[q] = curved ? sum[q] : sum[q] * dv;
  });
}

void Simulation::check_state() {
  physics::BadZone bad;
  {
    TESSERA_REGION("check");
    for (const auto& u : units_.all())
      if (!bad.bad()) bad = u->check(*mesh_);
    if (!bad.bad() && !unchecked_vars_.empty()) bad = first_non_finite(unchecked_vars_);
  }
  report_bad(bad);
}

void Simulation::check_derived() {
  physics::BadZone bad;
  {
    TESSERA_REGION("check");
    if (!derived_vars_.empty()) bad = first_non_finite(derived_vars_);
  }
  report_bad(bad);
}

physics::BadZone Simulation::first_non_finite(const std::vector<int>& vars) const {
  std::vector<std::string> names;
  for (const int v : vars) names.push_back(mesh_->vars()[std::size_t(v)].name);
  return physics::first_non_finite(*mesh_, vars, names);
}

void Simulation::report_bad(const physics::BadZone& bad) {
  char msg[1024] = {0};
  if (bad.bad() && bad.sentence) {
    std::snprintf(msg, sizeof msg, "step %d (rank %d): %s", step_, rank_, bad.what.c_str());
  } else if (bad.bad()) {
    const auto g = mesh_->geom(bad.node);
    const auto& s = mesh_->shape();
    std::snprintf(
        msg, sizeof msg,
        "step %d: %s = %g in block %d (rank %d, level %d), zone (%d,%d,%d) at (%g, %g, %g)", step_,
        bad.what.c_str(), bad.value, bad.node + 1, rank_, mesh_->tree().node(bad.node).level + 1,
        bad.i, bad.j, bad.k, g.x(bad.i), s.ndim > 1 ? g.y(bad.j) : 0.0,
        s.ndim > 2 ? g.z(bad.k) : 0.0);
  }
  parallel::agree(comm_, msg);  // the lowest rank with a bad zone speaks for all
}

}  // namespace tessera::driver

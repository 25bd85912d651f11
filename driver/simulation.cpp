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
#include "problems/problem.hpp"

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
  p.declare_int("driver.log_every", 1, 1, 1000000, "steps between progress lines");
  p.declare_int("driver.inject_nan_step", 0, 0, 2000000000,
                "fault injection for tests: at this step the last rank's last leaf gets a NaN "
                "density (0: off)");
  io::declare_params(p);
  perf::declare_params(p);
  memory::declare_params(p);
  mesh::Mesh::declare_params(p);
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
  units_ = make_units(p, &operators_);
  eos_ = units_.find<eos::EosUnit>();
  if (eos_ != nullptr) {
    // Set-ups evaluate the EOS before unk holds any species: they see the initial mixture.
    const eos::Eos* setup_eos = &eos_->eos();
    if (auto* comp = units_.find<composition::Composition>(); comp && comp->has_species()) {
      double abar, zbar;
      comp->initial_abar_zbar(abar, zbar);
      setup_eos_ = std::make_unique<eos::FixedComposition>(eos_->eos(), abar, zbar);
      setup_eos = setup_eos_.get();
    }
    problem_ = problems::make(p, *setup_eos);
  } else {
    problem_ = problems::make_without_eos(p);  // a run without a fluid (pic)
  }
  for (const auto& u : units_.all()) u->set_run_dir(opt_.run_dir);
  const auto vars = unk_variables(units_);
  for (const auto& u : units_.all()) {
    const auto names = u->total_names();
    if (!names.empty()) totals_by_.emplace_back(u.get(), names.size());
    total_names_.insert(total_names_.end(), names.begin(), names.end());
  }
  for (const auto& u : units_.all())
    if (std::find(operators_.begin(), operators_.end(), u.get()) == operators_.end())
      services_first_.push_back(u.get());
  services_first_.insert(services_first_.end(), operators_.begin(), operators_.end());
  // The planner's prediction, made before anything large is allocated (its baseline is
  // this process's RSS now); summary.json sets it beside the measured peak.
  plan_ = memory::plan_memory(p, declared(p, units_), nranks_, nranks_, 0);
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
    for (auto* u : services_first_) u->bind(*mesh_, units_);
  }
  for (const auto& u : units_.all())
    if (auto* ps = u->particle_set()) {
      if (particles_ != nullptr) throw Error("two units own particles; one particle set per run");
      particles_ = ps;
    }
  problem_->bind(*mesh_);
  if (const auto d = problem_->describe(); !d.empty()) log(d);
  for (const auto& v : p.get_string_list("io.plot_vars"))
    if (v != "unk" && mesh_->var_index(v) < 0 && deriver(v) == nullptr)
      throw Error("io.plot_vars: unknown variable '" + v + "'");
  hints_ = io::hints_from(p);  // validated before the run starts
  out_ = std::make_unique<io::OutputManager>(
      comm, io::config_from(p, opt_.run_dir, opt_.thread_multiple));
  if (!out_->async_note().empty()) log("warning: " + out_->async_note());
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

void Simulation::sync_units() {
  for (auto* u : services_first_) u->sync(*mesh_);
}

void Simulation::finish_units() {
  for (auto* u : services_first_) u->finish(*mesh_);
}

void Simulation::fill_guards() {
  sync_units();  // refinement marking may read any variable
  mesh_->fill_guards();
  for (auto* u : services_first_) u->fill_guard_state(*mesh_);
}

const physics::Unit* Simulation::deriver(const std::string& name) const {
  for (const auto& u : units_.all())
    for (const auto& d : u->derived_names())
      if (d == name) return u.get();
  return nullptr;
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
}

const physics::Unit* Simulation::marking_provider(const std::string& name) const {
  for (auto* u : services_first_)
    if (u->marking_computes(name)) return u;
  return nullptr;
}

bool Simulation::marking_skips_sync() const {
  for (auto* u : services_first_)
    if (!u->marking_skips_sync()) return false;
  for (int n = 1; n <= 4; ++n) {
    const auto& name = p_.get_string("mesh.refine_var_" + std::to_string(n));
    if (name == "none" || name.empty()) continue;
    const int v = mesh_->var_index(name);
    if (v < 0) return false;  // a derived variable: its unit reads unk after sync
    if (!mesh_->vars()[v].guard_fill && marking_provider(name) == nullptr) return false;
  }
  return true;
}

bool Simulation::mark_and_regrid(bool lean) {
  TESSERA_REGION("mark_refine");
  const auto& s = mesh_->shape();
  std::vector<mesh::Flag> flags(mesh_->tree().size(), mesh::Flag::keep);
  std::vector<double> scratch(s.cells());
  struct Crit {
    int var;
    std::string name;
    double refine, derefine, filter;
    const physics::Unit* computed_by = nullptr;  // lean marking: not guard-filled
  };
  std::vector<Crit> crit;
  // With one refinement level the criteria decide nothing (the bounds override every
  // flag; a regrid can only bring leaves up to lrefine_min): they are not evaluated, so a
  // run without their variables (pic) needs no mesh.refine_var settings.
  const bool decide = mesh_->lrefine_max() > mesh_->lrefine_min();
  for (int n = 1; n <= 4 && decide; ++n) {
    const std::string k = std::to_string(n);
    const auto& name = p_.get_string("mesh.refine_var_" + k);
    if (name == "none" || name.empty()) continue;
    const int v = mesh_->var_index(name);
    crit.push_back(
        {v, name, p_.get_real("mesh.refine_cutoff_" + k), p_.get_real("mesh.derefine_cutoff_" + k),
         p_.get_real("mesh.refine_filter_" + k),
         lean && v >= 0 && !mesh_->vars()[v].guard_fill ? marking_provider(name) : nullptr});
  }
  const int ext = static_cast<int>(p_.get_int("mesh.derefine_guard_layers"));
  // The units' own criteria: one vote per local leaf from each unit that has one.
  std::vector<std::vector<mesh::Flag>> votes;
  for (auto* u : services_first_) {
    if (!decide) break;
    std::vector<mesh::Flag> v(mesh_->tree().size(), mesh::Flag::keep);
    if (u->tag_refinement(*mesh_, v)) votes.push_back(std::move(v));
  }
  mesh_->with_layout([&](auto tag) {
    for (int id : mesh_->local_leaves()) {
      auto u = mesh_->view(id, tag);
      bool refine = false, derefine = true;
      for (const auto& c : crit) {
        mesh::LohnerErrors e;
        if (c.computed_by != nullptr) {
          c.computed_by->marking_field(c.name, u, s, scratch.data());
          e = mesh::lohner_errors(scratch.data(), s, c.filter, ext);
        } else if (c.var >= 0) {
          e = mesh::lohner_errors(u.field(c.var), s, c.filter, ext);
        } else {
          const physics::Unit* d = deriver(c.name);
          if (d == nullptr) throw Error("mesh.refine_var: unknown variable '" + c.name + "'");
          d->derived(c.name, u, s, scratch.data(), true);
          e = mesh::lohner_errors(scratch.data(), s, c.filter, ext);
        }
        refine |= e.interior > c.refine;
        derefine &= e.widened < c.derefine;
      }
      for (const auto& v : votes) {
        refine |= v[id] == mesh::Flag::refine;
        derefine &= v[id] == mesh::Flag::derefine;
      }
      const bool any = !crit.empty() || !votes.empty();
      flags[id] =
          refine ? mesh::Flag::refine : (derefine && any ? mesh::Flag::derefine : mesh::Flag::keep);
    }
  });
  const bool changed = mesh_->regrid(flags, [&] {
    for (auto* u : services_first_) u->before_regrid(*mesh_);
  });
  ++regrid_checks_;
  if (changed) {
    ++regrid_changes_;
    for (auto* u : services_first_) u->after_regrid(*mesh_);
  }
  return changed;
}

std::vector<double> Simulation::totals() {
  const auto& s = mesh_->shape();
  const std::size_t nt = total_names_.size();
  std::vector<double> zone(nt, 0.0), sum(nt, 0.0);
  // Per-leaf sums added in canonical order (Mesh::leaf_sums): the same bits on any rank
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
  for (const auto& u : units_.all())
    if (!bad.bad()) bad = u->check(*mesh_);
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

void Simulation::restore(const io::FlashFileMeta& m) {
  const io::FlashFileSpec& f = m.spec;
  const std::string what = "cannot restart from '" + opt_.restart_path + "': ";
  if (!f.double_precision)
    throw Error(what + "it holds single-precision data (a plotfile?); restart needs a checkpoint");
  if (f.ndim != mesh_->ndim())
    throw Error(what + fmt::format("it is {}-D but mesh.ndim = {}", f.ndim, mesh_->ndim()));
  if (f.nxb != mesh_->nxb())
    throw Error(what +
                fmt::format("its blocks have nxb = {} but mesh.nxb = {}", f.nxb, mesh_->nxb()));
  if (f.nyb != mesh_->shape().ni(1) || f.nzb != mesh_->shape().ni(2))
    throw Error(what + fmt::format("its blocks have nyb = {}, nzb = {}; expected {}, {}", f.nyb,
                                   f.nzb, mesh_->shape().ni(1), mesh_->shape().ni(2)));
  const auto& geo = mesh_->tree().geometry();
  const std::size_t N = f.refine_level.size();
  std::vector<std::pair<int, mesh::IVec>> refined;
  std::vector<std::pair<int, mesh::IVec>> node(N);
  for (std::size_t b = 0; b < N; ++b) {
    mesh::IVec pos{0, 0, 0};
    for (int a = 0; a < geo.ndim; ++a) {
      const double w = f.block_size[b * 3 + a];
      pos[a] = static_cast<int>(std::lround((f.bounding_box[b * 6 + a * 2] - geo.lo[a]) / w));
    }
    node[b] = {f.refine_level[b] - 1, pos};
    if (f.node_type[b] != 1) refined.push_back(node[b]);
  }
  mesh_->restore(refined);
  const auto& t = mesh_->tree();
  if (static_cast<std::size_t>(t.size()) != N)
    throw Error(what + fmt::format("its tree has {} blocks, rebuilt {} (different root blocks?)", N,
                                   t.size()));
  for (std::size_t b = 0; b < N; ++b) {
    const auto& n = t.node(static_cast<int>(b));
    if (n.level != node[b].first || n.pos != node[b].second)
      throw Error(what + fmt::format("block {} is not where the canonical order puts it", b + 1));
    const auto lo = t.block_lo(static_cast<int>(b));
    const auto w = t.block_size(static_cast<int>(b));
    for (int a = 0; a < geo.ndim; ++a)
      if (std::abs(lo[a] - f.bounding_box[b * 6 + a * 2]) > 1e-12 * std::abs(w[a]) ||
          std::abs(w[a] - f.block_size[b * 3 + a]) > 1e-12 * std::abs(w[a]))
        throw Error(what + fmt::format("block {} does not match the domain of the parameters "
                                       "(mesh.{}min/{}max or nblock{} changed?)",
                                       b + 1, "xyz"[a], "xyz"[a], "xyz"[a]));
  }
  // Fields: every variable the mesh holds must be in the file, except auxiliary ones (the
  // EOS state), which are recomputed from the conserved variables when missing.
  const auto& s = mesh_->shape();
  std::vector<int> dst(f.var_names.size(), -1);  // file variable -> unk variable, or -1
  std::string recompute;
  for (int v = 0; v < static_cast<int>(mesh_->vars().size()); ++v) {
    const auto& var = mesh_->vars()[v];
    const auto it = std::find(f.var_names.begin(), f.var_names.end(), var.name);
    if (it == f.var_names.end()) {
      if (var.kind != mesh::VarKind::auxiliary)
        throw Error(what + "variable '" + var.name + "' is missing");
      recompute = "it has no '" + var.name + "'";
      continue;
    }
    dst[static_cast<std::size_t>(it - f.var_names.begin())] = v;
  }
  // The EOS state in the file belongs to the EOS that wrote it: another EOS (type, gamma,
  // table) recomputes it.
  auto stored_string = [&](const char* key) {
    for (const auto* l : {&f.str_scalars, &f.str_runtime})
      for (const auto& [k, v] : *l)
        if (k == key) return v;
    return std::string();
  };
  auto trim = [](std::string x) {
    while (!x.empty() && (x.back() == ' ' || x.back() == '\0')) x.pop_back();
    return x;
  };
  const std::string type0 = trim(stored_string("eos.type")),
                    sha0 = trim(stored_string("eos_table_sha256"));
  if (eos_ == nullptr)
    ;  // no EOS in this run (pic): nothing to recompute
  else if (!type0.empty() && type0 != eos_->type())
    recompute = "its EOS was '" + type0 + "'";
  else if (eos_->type() == "helmholtz" && sha0 != eos_->table_sha256())
    recompute = "its Helmholtz table was " + (sha0.empty() ? std::string("unrecorded") : sha0);
  for (const auto& [k, v] : f.real_runtime)
    if (eos_ && k == "eos.gamma" && eos_->type() == "gamma" && v != p_.get_real("eos.gamma"))
      recompute = "its eos.gamma was " + fmt::format("{}", v);
  // This rank's blocks (parents included), read straight from the file into unk, every
  // row verified as it is read. The derived variables are read and verified too, so a
  // restart refuses what `tessera check` refuses; no rank holds more than one variable of
  // its own rows besides unk.
  std::vector<int> rows;
  for (int id = 0; id < t.size(); ++id)
    if (mesh_->slot(id) >= 0) rows.push_back(id);
  try {
    mesh_->with_layout([&](auto tag) {
      io::read_flash_rows(
          comm_, m, f.var_names, rows,
          [&](std::size_t v, std::size_t r, const double* q) {
            if (dst[v] < 0) return;
            auto u = mesh_->view(rows[r], tag);
            std::size_t c = 0;
            mesh::for_each_zone(s, [&](int i, int j, int k) { u(dst[v], i, j, k) = q[c++]; });
          },
          hints_);
    });
  } catch (const Error& e) {
    throw Error("refusing to restart from '" + opt_.restart_path + "': " + e.what());
  }
  // Scalars.
  auto real = [&](const char* name) {
    for (const auto& [k, v] : f.real_scalars)
      if (k == name) return v;
    throw Error(what + "real scalar '" + name + "' is missing (not a tessera checkpoint?)");
  };
  auto integer = [&](const char* name) {
    for (const auto& [k, v] : f.int_scalars)
      if (k == name) return v;
    throw Error(what + "integer scalar '" + name + "' is missing (not a tessera checkpoint?)");
  };
  time_ = real("time");
  dt_ = real("dt");
  dt_prev_ = real("dtold");
  step_ = integer("nstep");
  chk_count_ = integer("checkpointfilenumber");
  plot_count_ = integer("plotfilenumber");
  next_plot_time_ = real("nextplotfiletime");
  next_chk_time_ = real("nextcheckpointtime");
  totals0_.clear();
  for (const auto& t : total_names_) totals0_.push_back(real((t + "_initial").c_str()));
  if (!recompute.empty()) {
    log("restart: " + recompute +
        ": the EOS state (pres, temp, gamc, game, eint) is "
        "recomputed from the conserved variables");
    initialise_units();
  } else {
    // unk is the checkpoint's: units rebuild only what they keep outside it.
    for (auto* u : services_first_) u->after_restart(*mesh_);
  }
  for (auto* u : services_first_) u->resume_clock(time_, step_);
  // Particles last (a unit's initialise above may have placed fresh ones): this rank's
  // blocks' particles, verified against the manifest, then their leaves and order.
  if (particles_ != nullptr) {
    if (f.particle_names.empty())
      throw Error(what + "it holds no particles, but particles.tracers is on");
    std::vector<double> values;
    try {
      values = io::read_flash_particles(comm_, m, rows, hints_);
    } catch (const Error& e) {
      throw Error("refusing to restart from '" + opt_.restart_path + "': " + e.what());
    }
    particles_->clear();
    particles::from_file(*particles_, f.particle_names, values);
    particles_->redistribute(*mesh_);
  } else if (!f.particle_names.empty()) {
    log("restart: the checkpoint's particles are not used (particles.tracers is false)");
  }
}

void Simulation::write(bool checkpoint, bool force_sync) {
  finish_units();  // particles complete their move (outside the output's region)
  TESSERA_REGION(checkpoint ? "io/checkpoint" : "io/plotfile");
  out_->wait_captures();  // an output of this step may still be copying unk
  sync_units();
  std::vector<std::string> names;
  if (checkpoint) {
    for (const auto& v : mesh_->vars()) names.push_back(v.name);
    for (const auto& u : units_.all())
      for (const auto& d : u->derived_names()) names.push_back(d);
  } else {
    // "unk" stands for every unk variable its unit marks as plotted.
    for (const auto& n : p_.get_string_list("io.plot_vars")) {
      if (n != "unk") {
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
        continue;
      }
      for (const auto& v : mesh_->vars())
        if (v.plot && std::find(names.begin(), names.end(), v.name) == names.end())
          names.push_back(v.name);
    }
  }
  // The step loop snapshots unk's variables only (a copy); derived variables are computed
  // from that snapshot by whoever writes the file (the I/O thread in asynchronous mode),
  // with the same function on the same doubles, so sync and async files are identical.
  bool any_derived = false;
  for (const auto& n : names) any_derived |= mesh_->var_index(n) < 0;
  std::vector<io::OutputVar> stored;
  for (int v = 0; v < static_cast<int>(mesh_->vars().size()); ++v) {
    const std::string& name = mesh_->vars()[v].name;
    const bool wanted = std::find(names.begin(), names.end(), name) != names.end();
    if (!wanted && !any_derived) continue;
    io::OutputVar ov;
    ov.name = name;
    ov.fill = [this, v](int node, double* out) {
      const auto& s = mesh_->shape();
      mesh_->with_layout([&](auto tag) {
        auto u = mesh_->view(node, tag);
        const int i0 = s.g(0), n = s.ni(0);
        for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
          for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
            const auto r = u.row(v, j, k);  // interior x-rows (contiguous in var-major)
            for (int i = 0; i < n; ++i) out[i] = r[i0 + i];
            out += n;
          }
      });
    };
    stored.push_back(std::move(ov));
  }
  // Runs on the writer: rebuild data in the order of `names`, deriving what is missing.
  std::vector<const physics::Unit*> derivers;  // per name: the unit deriving it, or null
  for (const auto& n : names) derivers.push_back(mesh_->var_index(n) < 0 ? deriver(n) : nullptr);
  mesh::BlockShape interior = mesh_->shape();
  interior.ng = 0;
  const int nstored = static_cast<int>(stored.size());
  // When the stored variables are the first of `names`, in order (checkpoints: unk, then
  // the derived variables), the snapshot is laid out as the file: the derived rows are
  // left empty for the writer to compute in place, and nothing is copied twice.
  bool in_place = stored.size() <= names.size();
  for (std::size_t n = 0; in_place && n < stored.size(); ++n) in_place = stored[n].name == names[n];
  if (in_place)
    for (std::size_t n = stored.size(); n < names.size(); ++n) stored.push_back({names[n], {}});
  auto prepare = [derivers, names, interior, nstored, in_place](io::FlashFileSpec& f) {
    const std::size_t rows = f.local_rows.size();
    const std::size_t cells = interior.interior_cells();
    if (in_place) {
      for (std::size_t n = nstored; n < names.size(); ++n)
        for (std::size_t r = 0; r < rows; ++r) {
          // A view of row r of the snapshot: unk's variables are nstored planes apart.
          mesh::BlockView<> u(f.data.data() + r * cells, interior);
          u.sv = rows * cells;
          u.nvar = nstored;
          derivers[n]->derived(names[n], u, interior, f.data.data() + (n * rows + r) * cells,
                               false);
        }
      return;
    }
    memory::ArenaVector<double> data(names.size() * rows * cells, f.data.get_allocator());
    for (std::size_t n = 0; n < names.size(); ++n) {
      double* dst = data.data() + n * rows * cells;
      const auto it = std::find(f.var_names.begin(), f.var_names.end(), names[n]);
      if (it != f.var_names.end()) {
        const double* src = f.data.data() + std::size_t(it - f.var_names.begin()) * rows * cells;
        std::copy(src, src + rows * cells, dst);
        continue;
      }
      for (std::size_t r = 0; r < rows; ++r) {
        // A view of row r of the snapshot: unk's variables are nstored planes apart.
        mesh::BlockView<> u(f.data.data() + r * cells, interior);
        u.sv = rows * cells;
        u.nvar = nstored;
        derivers[n]->derived(names[n], u, interior, dst + r * cells, false);
      }
    }
    f.var_names = names;
    f.data = std::move(data);
  };
  const auto& base = p_.get_string("io.basename");
  const int number = checkpoint ? chk_count_++ : plot_count_++;
  const std::string fname = checkpoint ? fmt::format("{}_hdf5_chk_{:04d}", base, number)
                                       : fmt::format("{}_hdf5_plt_cnt_{:04d}", base, number);
  // Everything a restart needs besides the tree, the fields and the parameters.
  io::OutputInfo info;
  info.time = time_;
  info.dt = dt_;
  info.step = step_;
  info.int_state = {{"checkpointfilenumber", chk_count_}, {"plotfilenumber", plot_count_}};
  info.real_state = {{"dtold", dt_prev_},
                     {"nextplotfiletime", next_plot_time_},
                     {"nextcheckpointtime", next_chk_time_}};
  for (std::size_t t = 0; t < total_names_.size(); ++t)
    info.real_state.emplace_back(total_names_[t] + "_initial", totals0_[t]);
  if (eos_ && !eos_->table_sha256().empty())
    info.str_state = {{"eos_table_sha256", eos_->table_sha256()}};
  const int deflate = checkpoint ? 0 : static_cast<int>(p_.get_int("io.plotfile_deflate"));
  // Particles go into checkpoints, and into a particle file of the plotfile's number and
  // time (yt pairs _plt_cnt_NNNN with _part_NNNN by name and time).
  const std::size_t particle_bytes =
      particles_ ? particles_->size() * particles::file_columns(*particles_).size() * sizeof(double)
                 : 0;
  out_->write(
      checkpoint ? io::OutputKind::checkpoint : io::OutputKind::plotfile, fname,
      io::snapshot_bytes(*mesh_, std::max(names.size(), stored.size())) +
          (checkpoint ? particle_bytes : 0),
      [&] {
        mesh_->restrict_parents();
        // Asynchronous (normal priority): the I/O thread copies unk while the step loop
        // computes the next dt; the loop waits for that copy (wait_captures) before
        // anything modifies unk.
        io::FlashFileSpec f =
            io::mesh_file_spec(*mesh_, p_, checkpoint, stored, info, out_->defers_capture());
        f.hints = hints_;
        f.deflate = deflate;
        f.prepare = prepare;
        if (checkpoint && particles_) particles::to_file(*particles_, *mesh_, f);
        return f;
      },
      force_sync);
  log(fmt::format("  {} {}", out_->async() && !force_sync ? "queued" : "wrote", fname));
  if (checkpoint || particles_ == nullptr) return;
  const std::string pname = fmt::format("{}_hdf5_part_{:04d}", base, number);
  out_->write(
      io::OutputKind::particles, pname, particle_bytes,
      [&] {
        io::FlashFileSpec f = io::mesh_file_spec(*mesh_, p_, true, {}, info);
        f.grid = false;
        f.hints = hints_;
        particles::to_file(*particles_, *mesh_, f);
        return f;
      },
      force_sync);
  log(fmt::format("  {} {}", out_->async() && !force_sync ? "queued" : "wrote", pname));
}

void Simulation::raise_io_errors() {
  const auto [first, text] = parallel::first_message(comm_, out_->local_error());
  if (first >= 0) throw Error(fmt::format("output failed on rank {}: {}", first, text));
}

std::array<bool, 3> Simulation::control(double& wall_next_chk, double wall_interval,
                                        Clock::time_point t0) {
  TESSERA_REGION("control");
  int flags[6] = {0, 0, 0, 0, 0, 0};
  flags[0] = out_->local_error().empty() ? 0 : 1;
  flags[1] = pending_signal();
  if (rank_ == 0) {
    // FLASH's convention: files dropped into the run directory.
    auto take = [&](const char* name) {
      std::error_code ec;
      const auto f = fs::path(opt_.run_dir) / name;
      if (!fs::exists(f, ec)) return 0;
      fs::remove(f, ec);
      return 1;
    };
    flags[2] = take(".dump_checkpoint");
    flags[3] = take(".dump_plotfile");
    flags[4] = take(".kill");
    const double now = std::chrono::duration<double>(Clock::now() - t0).count();
    if (wall_interval > 0 && now >= wall_next_chk) {
      flags[5] = 1;
      while (wall_next_chk <= now) wall_next_chk += wall_interval;
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, flags, 6, MPI_INT, MPI_MAX, comm_);
  if (flags[0]) raise_io_errors();
  if (flags[1]) {
    stopped_by_ = flags[1] == SIGTERM ? "SIGTERM" : (flags[1] == SIGUSR1 ? "SIGUSR1" : "signal");
  } else if (flags[4]) {
    stopped_by_ = ".kill";
  }
  if (flags[2]) log("  .dump_checkpoint found: writing a checkpoint");
  if (flags[3]) log("  .dump_plotfile found: writing a plotfile");
  if (!stopped_by_.empty()) log("  " + stopped_by_ + ": checkpoint, then stop");
  return {flags[2] != 0 || flags[5] != 0, flags[3] != 0, !stopped_by_.empty()};
}

nlohmann::json Simulation::run() {
  const auto t_start = created_;
  initialise();
  check_state();  // a bad initial state (an EOS that found no solution) stops here
  const bool restarted = restarted_;
  const double tmax = p_.get_real("driver.tmax");
  const long nend = p_.get_int("driver.nend");
  const int nrefs = static_cast<int>(p_.get_int("mesh.nrefs"));
  const int log_every = static_cast<int>(p_.get_int("driver.log_every"));
  const int plot_steps = static_cast<int>(p_.get_int("io.plotfile_interval_steps"));
  const int chk_steps = static_cast<int>(p_.get_int("io.checkpoint_interval_steps"));
  const double plot_dt = p_.get_real("io.plotfile_interval_time");
  const double chk_dt = p_.get_real("io.checkpoint_interval_time");
  const double chk_wall = p_.get_real("io.checkpoint_interval_wall");
  double wall_next_chk = chk_wall;
  const bool any_plot = plot_steps > 0 || plot_dt > 0, any_chk = chk_steps > 0 || chk_dt > 0;
  if (!restarted) {
    totals0_ = totals();
    next_plot_time_ = plot_dt;
    next_chk_time_ = chk_dt;
    dt_prev_ = p_.get_real("driver.dtinit");  // step 0: dtinit caps dt if set
    if (p_.get_bool("io.write_initial")) {
      if (any_plot) write(false);
      if (any_chk) write(true);
    }
  }
  const auto c0 = totals0_;
  if (restarted)
    log(fmt::format("restarted from {} at step {}, t = {:.6e}", opt_.restart_path, step_, time_));
  log(fmt::format("{} {}-D on {} rank(s): {} leaf blocks of {}^{} zones, levels {}..{}{}",
                  problem_->name(), mesh_->ndim(), nranks_, mesh_->tree().num_leaves(),
                  mesh_->nxb(), mesh_->ndim(), 1, mesh_->tree().max_level() + 1,
                  out_->async() ? ", asynchronous I/O" : ""));
  log(fmt::format("{:>7} {:>12} {:>11} {:>7} {:>11}", "step", "time", "dt", "leaves", "zones/s"));
  // history.csv: the progress lines as a table, appended line by line (flushed, so a
  // crash keeps what was written); a restart appends to the file it finds.
  std::ofstream history;
  if (rank_ == 0) {
    const auto hpath = fs::path(opt_.run_dir) / "history.csv";
    const bool fresh = !restarted || !fs::exists(hpath);
    history.open(hpath, fresh ? std::ios::trunc : std::ios::app);
    if (fresh && history) history << "step,time,dt,leaves,zone_updates_per_second\n" << std::flush;
  }
  const long zones_per_block = static_cast<long>(mesh_->shape().interior_cells());
  double zone_updates = 0;
  const auto t_loop = Clock::now();
  const double growth = p_.get_real("driver.dt_growth");
  const double dtmax = p_.get_real("driver.dtmax");
  const long inject_nan_step = p_.get_int("driver.inject_nan_step");
  const bool write_final = p_.get_bool("io.write_final");
  auto more_steps = [&] { return time_ < tmax * (1 - 1e-12) && step_ < nend; };
  auto t_last = Clock::now();
  double zu_last = 0;
  bool stop = false;
  while (more_steps()) {
    {
      TESSERA_REGION("dt");
      double dt = std::numeric_limits<double>::max();
      for (const auto& u : units_.all()) dt = std::min(dt, u->max_dt(*mesh_));
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MIN, comm_);
      if (dt_prev_ > 0) dt = std::min(dt, dt_prev_ * (step_ == 0 ? 1.0 : growth));
      dt = std::min({dt, dtmax, tmax - time_});
      dt_ = dt;
    }
    // The previous step's outputs may still be copying unk on the I/O thread: dt only
    // reads it, the operators write it.
    out_->wait_captures();
    for (auto* op : operators_) {
      // An operator may read what another one deferred (not what it deferred itself).
      if (op->reads_deferred_state())
        for (auto* u : services_first_)
          if (u != op) u->sync(*mesh_);
      op->advance(*mesh_, dt_);
    }
    time_ += dt_;
    ++step_;
    zone_updates += double(mesh_->tree().num_leaves()) * zones_per_block;
    dt_prev_ = dt_;
    if (step_ == inject_nan_step && rank_ == nranks_ - 1 && !mesh_->local_leaves().empty()) {
      const auto& s = mesh_->shape();
      mesh_->with_layout([&](auto tag) {
        mesh_->view(mesh_->local_leaves().back(), tag)(mesh_->var_index("dens"), s.g(0), s.g(1),
                                                       s.g(2)) =
            std::numeric_limits<double>::quiet_NaN();
      });
    }
    check_state();
    if (tiers_ && tiers_->static_pending()) place_tiers();
    if (step_ % nrefs == 0 && mesh_->lrefine_max() > mesh_->lrefine_min()) {
      // Without the units' sync and guard-zone EOS when only the marking would read them
      // (the gamma law's pres comes from hydro's marking_field instead): the same flags,
      // and the deferred state waits for the next reader (an output, a regrid).
      const bool lean = marking_skips_sync();
      if (lean)
        mesh_->fill_guards();
      else
        fill_guards();
      // The tree as it was: the guard zones just filled are those the next step's first
      // fill would compute (nothing changes unk in between; hydro's mass scalars
      // invalidate them), so that fill is skipped.
      if (!mark_and_regrid(lean)) mesh_->mark_guards_current();
    }
    if (step_ % log_every == 0 && rank_ == 0) {
      const auto now = Clock::now();
      const double sec = std::chrono::duration<double>(now - t_last).count();
      const double rate = sec > 0 ? (zone_updates - zu_last) / sec : 0.0;
      log(fmt::format("{:>7} {:>12.5e} {:>11.4e} {:>7} {:>11.3e}", step_, time_, dt_,
                      mesh_->tree().num_leaves(), rate));
      if (history)
        history << fmt::format("{},{:.9e},{:.6e},{},{:.4e}\n", step_, time_, dt_,
                               mesh_->tree().num_leaves(), rate)
                << std::flush;
      t_last = now;
      zu_last = zone_updates;
    }
    const auto [want_chk, want_plot, stop_now] = control(wall_next_chk, chk_wall, t_start);
    if (stop_now) {
      stop = true;
      break;  // the final checkpoint follows the loop
    }
    if (!more_steps() && write_final) break;  // the final outputs follow the loop
    // Advance the next output times before writing, so a checkpoint stores the schedule
    // a restart continues with.
    const bool plot_due = want_plot || (plot_steps > 0 && step_ % plot_steps == 0) ||
                          (plot_dt > 0 && time_ >= next_plot_time_ * (1 - 1e-12));
    while (plot_dt > 0 && next_plot_time_ <= time_ * (1 + 1e-12)) next_plot_time_ += plot_dt;
    const bool chk_due = want_chk || (chk_steps > 0 && step_ % chk_steps == 0) ||
                         (chk_dt > 0 && time_ >= next_chk_time_ * (1 - 1e-12));
    while (chk_dt > 0 && next_chk_time_ <= time_ * (1 + 1e-12)) next_chk_time_ += chk_dt;
    if (plot_due) write(false);
    if (chk_due) write(true);
  }
  out_->wait_captures();
  finish_units();  // the last step's deferred work belongs to the loop
  const double loop_seconds = std::chrono::duration<double>(Clock::now() - t_loop).count();
  const auto c1 = totals();
  // The final outputs stand for every schedule point up to now: the checkpoint must carry
  // next output times past them, or a restart writes those outputs again.
  if (write_final || stop) {
    while (plot_dt > 0 && next_plot_time_ <= time_ * (1 + 1e-12)) next_plot_time_ += plot_dt;
    while (chk_dt > 0 && next_chk_time_ <= time_ * (1 + 1e-12)) next_chk_time_ += chk_dt;
  }
  if (write_final && !stop) write(false);
  if (write_final || stop) write(true, /*force_sync=*/true);  // the last one is synchronous
  out_->drain();
  memory::detail::release_spare();  // the kept staging arenas: the report lists live ones
  raise_io_errors();
  const double wall = std::chrono::duration<double>(Clock::now() - t_start).count();

  const auto rows = perf::reduce_timers(comm_);
  const auto counters = perf::reduce_counters(comm_, rows);
  nlohmann::json s;
  s["problem"] = problem_->name();
  s["ndim"] = mesh_->ndim();
  s["ranks"] = nranks_;
  s["steps"] = step_;
  s["time"] = time_;
  s["dt"] = dt_;
  s["leaf_blocks"] = mesh_->tree().num_leaves();
  s["total_blocks"] = mesh_->tree().size();
  s["max_level"] = mesh_->tree().max_level() + 1;
  s["nxb"] = mesh_->nxb();
  s["zone_updates"] = zone_updates;
  s["wall_seconds"] = wall;
  s["evolution_seconds"] = loop_seconds;
  s["zone_updates_per_second"] = loop_seconds > 0 ? zone_updates / loop_seconds : 0.0;
  s["zone_updates_per_second_per_rank"] =
      loop_seconds > 0 ? zone_updates / loop_seconds / nranks_ : 0.0;
  s["units"] = nlohmann::json::array();
  for (const auto& u : units_.all()) {
    s["units"].push_back(u->name());
    auto j = u->summary(comm_);
    if (j.is_null()) continue;
    s[u->name()] = j;
    log(u->name() + ": " + j.dump());  // e.g. composition's largest renormalisation
  }
  s["operators"] = p_.get_string_list("driver.operators");
  s["regrid"] = {{"checks", regrid_checks_}, {"changed", regrid_changes_}};
  s["conservation"] = nlohmann::json::object();
  for (std::size_t t = 0; t < total_names_.size(); ++t) {
    const auto& n = total_names_[t];
    s["conservation"][n + "_initial"] = c0[t];
    s["conservation"][n + "_final"] = c1[t];
    s["conservation"][n + "_rel_change"] = (c1[t] - c0[t]) / c0[t];
  }
  s["timers"] = perf::timers_to_json(rows);
  {
    // Peak RSS: the maximum over ranks (the planner predicts one rank).
    std::uint64_t peak = memory::peak_rss_bytes();
    MPI_Allreduce(MPI_IN_PLACE, &peak, 1, MPI_UINT64_T, MPI_MAX, comm_);
    nlohmann::json arenas = nlohmann::json::array();
    for (const auto& a : memory::report_all()) arenas.push_back(memory::to_json(a));
    // Staging snapshots live only while an output is written: the largest one, as it was.
    if (const auto st = out_->staging_report()) {
      auto j = memory::to_json(*st);
      j["released"] = true;
      arenas.push_back(j);
    }
    nlohmann::json meminfo;
    memory::to_json(meminfo, memory::read_meminfo());
    const auto predicted = plan_["per_rank"]["peak_rss_bytes"].get<double>();
    // Data objects (issue 12's characterisation of the run's own memory): per class the
    // most bytes live at once, the mappings and their mean lifetime; the replicated tree is
    // metadata. This rank's (rank 0's) view, like the arena list.
    nlohmann::json objects = nlohmann::json::object();
    for (int c = 0; c < memory::kObjectClasses; ++c)
      objects[memory::to_string(static_cast<memory::ObjectClass>(c))] = {
          {"bytes", 0.0}, {"count", 0}, {"seconds", 0.0}, {"arenas", nlohmann::json::array()}};
    for (const auto& a : memory::arena_stats()) {
      auto& o = objects[memory::to_string(memory::object_class_of_arena(a.name))];
      o["bytes"] = o["bytes"].get<double>() + double(a.peak_bytes);
      o["count"] = o["count"].get<long>() + a.count;
      o["seconds"] = o["seconds"].get<double>() + a.seconds;
      o["arenas"].push_back(a.name);
    }
    {
      auto& o = objects["metadata"];
      o["bytes"] = o["bytes"].get<double>() + double(mesh_->tree().size()) * sizeof(mesh::Node);
      o["count"] = o["count"].get<long>() + 1;
      o["seconds"] = o["seconds"].get<double>() + wall;
      o["arenas"].push_back("tree (heap)");
    }
    for (auto& [name, o] : objects.items()) {
      const long n = o["count"].get<long>();
      o["mean_lifetime_seconds"] = n > 0 ? o["seconds"].get<double>() / double(n) : 0.0;
      o.erase("seconds");
    }
    nlohmann::json tiers;
    if (tiers_) {
      tiers = tiers_->to_json();
      const std::string pre = tiers_->log_prefix();
      for (const auto& [cls, c] : tiers["classes"].items())
        log(fmt::format("{}{}: fast {}, slow {} (live at the end; peak fast {}, slow {})", pre, cls,
                        format_bytes(c["achieved"]["fast"].get<double>()),
                        format_bytes(c["achieved"]["slow"].get<double>()),
                        format_bytes(c["peak"]["fast"].get<double>()),
                        format_bytes(c["peak"]["slow"].get<double>())));
      for (const auto& [dir, c] : tiers["copies"].items())
        if (c["count"].get<long>() > 0)
          log(fmt::format(
              "{}copies {}: {} in {:.3f} s ({} copies; {} helper thread(s), placement "
              "moves by the step's thread)",
              pre, dir, format_bytes(c["bytes"].get<double>()), c["seconds"].get<double>(),
              c["count"].get<long>(), c["helper_threads"].get<int>()));
      for (const auto& [phase, sec] : tiers["charged_seconds"].items())
        log(fmt::format("{}charged {:.6f} s to {} ({})", pre, sec.get<double>(), phase,
                        tiers["charged_mode"].get<std::string>()));
    } else {
      tiers = {{"installed", false},
               {"backend", "none"},
               {"backend_requested", "none"},
               {"emulated", false},
               {"label",
                "no tiers (memory.tier.backend = none, placement fast_only): nothing "
                "placed, nothing charged"},
               {"placement", "fast_only"},
               {"fast_bytes", 0}};
    }
    s["memory"] = {{"arenas", arenas},
                   {"tiers", tiers},
                   {"objects", objects},
                   {"peak_rss_bytes", peak},
                   {"predicted_bytes", predicted},
                   {"prediction_error", (predicted - double(peak)) / double(peak)},
                   {"meminfo", meminfo}};
  }
  s["counters"] = perf::counters_to_json(counters);
  s["counter_backends"] = perf::counter_backends_to_json(counters);
  s["outputs"] = out_->published();
  s["io"] = out_->stats_json(comm_);
  // The I/O thread keeps its own timer tree (regions io_thread/..., io/write, hdf5/...).
  std::vector<perf::ReducedRow> io_rows;
  if (out_->async()) {
    io_rows = perf::reduce_timers(comm_, out_->io_thread_rows());
    s["io"]["thread_timers"] = perf::timers_to_json(io_rows);
  }
  s["mpi_thread_multiple"] = opt_.thread_multiple;
  if (restarted) s["restarted_from"] = opt_.restart_path;
  if (!stopped_by_.empty()) s["stopped_by"] = stopped_by_;
  s["parameters"] = p_.to_json();
  if (rank_ == 0) {
    std::ostringstream os;
    perf::print_summary_table(os, rows, wall, nranks_);
    if (!io_rows.empty()) {
      os << " I/O thread:\n";
      perf::print_summary_table(os, io_rows, wall, nranks_);
    }
    perf::print_counter_table(os, counters);
    std::cout << os.str();
    // summary.json is published like an output: a crash never leaves half of one.
    const auto path = fs::path(opt_.run_dir) / "summary.json";
    const auto tmp = fs::path(opt_.run_dir) / "summary.json.tmp";
    std::ofstream(tmp) << s.dump(2) << '\n';
    fs::rename(tmp, path);
    std::cout << fmt::format("summary: {}\n", path.string());
  }
  return s;
}

}  // namespace tessera::driver

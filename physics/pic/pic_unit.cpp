#include "physics/pic/pic_unit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/simd.hpp"
#include "memory/tier_runtime.hpp"
#include "mesh/mesh.hpp"
#include "perf/timers.hpp"
#include "physics/particle_needs.hpp"
#include "physics/pic/absorbing.hpp"
#include "physics/pic/kernels_simd.hpp"
#include "physics/pic/pic.hpp"
#include "physics/pic/pulse.hpp"
#include "physics/pic/unit_helpers.hpp"

namespace tessera::pic {

void Pic::declare_params(base::Params& p) {
  p.declare_string_list("pic.species", {"electron"},
                        "particle species, each at pic.density: electron, positron, proton "
                        "(particle type = 1-based index); with only electrons an immobile ion "
                        "background neutralises them, otherwise the species must be neutral");
  p.declare_int("pic.shape_order", 1, 1, 3,
                "particle shape (B-spline order): 1 CIC, 2 TSC, 3 cubic; nguard = order/2 + 2");
  p.declare_int("pic.particles_per_cell", 8, 1, 1000000,
                "macro-particles per cell (per beam for two_stream), a regular lattice: must be "
                "n^ndim");
  p.declare_real("pic.density", 1e24, 1e-300, 1e300,
                 "number density of each species (m^-3); with only electrons the ions are an "
                 "immobile background of the same density");
  p.declare_real("pic.u_th", 0.0, 0.0, 1e300,
                 "thermal spread of u = gamma v per component of electrons and positrons (m/s; "
                 "two_stream: along x only); protons get u_th sqrt(ion_temperature_ratio m_e/m_p)");
  p.declare_real("pic.ion_temperature_ratio", 1.0, 0.0, 1e300,
                 "proton to electron temperature ratio T_i/T_e of the thermal spread");
  p.declare_real("pic.u_drift", 0.0, -1e300, 1e300,
                 "drift of u = gamma v along x, every species (m/s; two_stream: the beams at "
                 "+-u_drift)");
  p.declare_real("pic.slab_xmin", -1e300, -1e300, 1e300,
                 "load the plasma only where slab_xmin <= x < slab_xmax (m): a slab target, "
                 "a non-uniform load (default: everywhere)");
  p.declare_real("pic.slab_xmax", 1e300, -1e300, 1e300, "see pic.slab_xmin (m)");
  p.declare_string("pic.init", "thermal", {"thermal", "langmuir", "two_stream", "pulse"},
                   "initial state: thermal (drifting Maxwellian), langmuir (u_x += epsilon c "
                   "sin(k x)), two_stream (two beams per species, each density/2, the same "
                   "perturbation), pulse (vacuum, no particles: the pic.pulse_* pulse)");
  p.declare_real("pic.epsilon", 0.0, -1e300, 1e300,
                 "perturbation: u_x += epsilon c sin(k x) f, k = 2 pi pic.mode / (xmax - xmin), "
                 "f = (q/m)/(-q_e/m_e) of the species (1 electron, -1 positron)");
  p.declare_int("pic.mode", 1, 0, 1000000,
                "wavenumber index along x of the perturbation and of pic_history.csv's Ex mode");
  p.declare_real("pic.cfl", 0.95, 1e-6, 1.0,
                 "time step as a fraction of the Yee limit c dt <= (sum 1/dx^2)^(-1/2)");
  p.declare_string("pic.gather", "energy", {"energy", "momentum"},
                   "field gather: energy-conserving (order p-1 along staggered axes) or "
                   "momentum-conserving (order p everywhere)");
  p.declare_string("pic.sort", "cell", {"cell", "tag"},
                   "order of a block's particles: cell (by species, then the grid point "
                   "nearest the particle for even shape orders or the cell for odd ones, then "
                   "tag: the deposit sums the current of neighbours once) or tag");
  p.declare_int("pic.seed", 1, 0, 9000000000000000000LL,
                "seed of the thermal momenta (a particle depends only on (seed, tag))");
  p.declare_real("pic.pulse_amplitude", 1.0, -1e300, 1e300,
                 "init = pulse: A0 (V/m) of Ez = c dAz/dxi, Az = A0 sigma/c exp(-xi^2/(2 "
                 "sigma^2) - eta^2/(2 w^2)) (physics/pic/pulse.hpp)");
  p.declare_real("pic.pulse_x", 0.0, -1e300, 1e300, "init = pulse: x of the pulse's centre (m)");
  p.declare_real("pic.pulse_y", 0.0, -1e300, 1e300,
                 "init = pulse: y of the pulse's centre (m; ignored in 1-D)");
  p.declare_real("pic.pulse_length", 0.0, 0.0, 1e300,
                 "init = pulse: sigma (m) along the direction of motion; must be > 0");
  p.declare_real("pic.pulse_width", 0.0, 0.0, 1e300,
                 "init = pulse: w (m) across the direction of motion; 0: a plane pulse");
  p.declare_real("pic.pulse_angle", 0.0, -360.0, 360.0,
                 "init = pulse: direction of motion in the x-y plane, degrees from +x (0 in "
                 "1-D)");
}

Pic::Pic(const base::Params& p)
    : order_(static_cast<int>(p.get_int("pic.shape_order"))),
      ppc_(p.get_int("pic.particles_per_cell")),
      density_(p.get_real("pic.density")),
      u_th_(p.get_real("pic.u_th")),
      u_drift_(p.get_real("pic.u_drift")),
      epsilon_(p.get_real("pic.epsilon")),
      cfl_(p.get_real("pic.cfl")),
      slab_{p.get_real("pic.slab_xmin"), p.get_real("pic.slab_xmax")},
      mode_(static_cast<int>(p.get_int("pic.mode"))),
      init_(p.get_string("pic.init")),
      gather_(p.get_string("pic.gather")),
      sort_(p.get_string("pic.sort")),
      seed_(static_cast<std::uint64_t>(p.get_int("pic.seed"))),
      pulse_amplitude_(p.get_real("pic.pulse_amplitude")),
      pulse_length_(p.get_real("pic.pulse_length")),
      pulse_width_(p.get_real("pic.pulse_width")),
      pulse_angle_(p.get_real("pic.pulse_angle") * cst::pi / 180.0),
      pulse_x_(p.get_real("pic.pulse_x")),
      pulse_y_(p.get_real("pic.pulse_y")),
      cfg_(memory::config_for(p, "particles")) {
  const int nd = static_cast<int>(p.get_int("mesh.ndim"));
  // Species: the table's, distinct; leptons at u_th, protons at the ion temperature.
  const double t_ratio = p.get_real("pic.ion_temperature_ratio");
  for (const auto& name : p.get_string_list("pic.species")) {
    const SpeciesInfo* info = find_species(name);
    if (!info) {
      std::string choices;
      for (const auto& t : species_table)
        choices += std::string(choices.empty() ? "" : ", ") + std::string(t.name);
      throw Error(
          fmt::format("pic: unknown species '{}' in pic.species (the choices: {})", name, choices));
    }
    for (const auto& sp : species_)
      if (sp.name == name)
        throw Error(fmt::format("pic: species '{}' is listed twice in pic.species", name));
    Species sp;
    sp.name = name;
    sp.charge = info->charge;
    sp.mass = info->mass;
    sp.u_th = info->mass == cst::m_e ? u_th_ : u_th_ * std::sqrt(t_ratio * cst::m_e / info->mass);
    sp.response = response_factor(*info);
    species_.push_back(sp);
  }
  if (species_.empty()) throw Error("pic: pic.species is empty (name at least one species)");
  // Neutrality: an ion background of +q_e per electron when every species is negative,
  // else the species (each at pic.density) must cancel.
  double net = 0;
  bool positive = false;
  std::string names;
  for (const auto& sp : species_) {
    net += sp.charge, positive = positive || sp.charge > 0;
    names += (names.empty() ? "" : ", ") + sp.name;
  }
  if (!positive)
    background_ = (-net / cst::q_e) * cst::q_e * density_;
  else if (std::abs(net) > 1e-6 * cst::q_e)
    throw Error(fmt::format(
        "pic: pic.species = [{}] is not neutral at equal densities (net charge {:+g} e per "
        "pic.density); the ion background is there only when every species is negative",
        names, net / cst::q_e));
  if (init_ == "pulse") {
    background_ = 0;  // vacuum
    if (!(pulse_length_ > 0))
      throw Error("pic: pic.init = \"pulse\" needs pic.pulse_length > 0 (m)");
    if (nd == 1 && pulse_angle_ != 0)
      throw Error("pic: pic.pulse_angle must be 0 in 1-D (the pulse moves along x)");
  }
  const long n = std::lround(std::pow(double(ppc_), 1.0 / nd));
  long nn = 1;
  for (int a = 0; a < nd; ++a) nn *= n;
  if (nn != ppc_ && init_ != "pulse")
    throw Error(fmt::format(
        "pic: pic.particles_per_cell = {} is not a {}-th power (the lattice has n^ndim particles "
        "per cell)",
        ppc_, nd));
}

physics::Declarations Pic::declarations() const {
  using mesh::VarKind;
  std::vector<mesh::VarInfo> v;
  const char* e[3] = {"ex", "ey", "ez"};
  const char* b[3] = {"bx", "by", "bz"};
  const char* j[3] = {"jx", "jy", "jz"};
  for (int a = 0; a < 3; ++a) v.emplace_back(e[a], a, VarKind::conserved, true, true, "pic");
  for (int a = 0; a < 3; ++a) v.emplace_back(b[a], a, VarKind::conserved, true, true, "pic");
  for (int a = 0; a < 3; ++a) v.emplace_back(j[a], a, VarKind::conserved, false, true, "pic");
  v.emplace_back("rhoq", -1, VarKind::conserved, false, true, "pic");
  return {
      .variables = std::move(v), .nguard = order_ / 2 + 2, .reads = {}, .particle_set = set_.get()};
}

void Pic::bind(mesh::Mesh& m, const physics::Services& /*services*/,
               const physics::RunContext& ctx) {
  // pic_history.csv goes into the run directory and, after a restart, continues at the
  // checkpoint's step and time.
  run_dir_ = ctx.run_dir;
  mesh_ = &m;
  clock_ = ctx.start_time;
  step0_ = ctx.start_step;
  ie_ = m.var_index("ex");
  ib_ = m.var_index("bx");
  ij_ = m.var_index("jx");
  irho_ = m.var_index("rhoq");
  for (int q = 0; q < 3; ++q)
    if (m.var_index(std::string("e") + "xyz"[q]) != ie_ + q ||
        m.var_index(std::string("b") + "xyz"[q]) != ib_ + q ||
        m.var_index(std::string("j") + "xyz"[q]) != ij_ + q)
      throw Error("pic: E, B and J must each be three consecutive variables of unk");
  nfill_e_ = ie_ + 3;
  nfill_ = std::max(ie_, ib_) + 3;
  if (ib_ < ie_) nfill_e_ = nfill_;  // E is not a prefix before B: fill both
  if (m.lrefine_max() > m.lrefine_min())
    throw Error(fmt::format(
        "pic: one refinement level only (mesh.lrefine_max = {} > mesh.lrefine_min = {}); "
        "refinement jumps are not built for the Yee fields and the deposit",
        m.lrefine_max(), m.lrefine_min()));
  ndim_ = m.ndim();
  for (int a = 0; a < m.ndim(); ++a) {
    using mesh::Boundary;
    const Boundary lo = m.boundary(a, 0), hi = m.boundary(a, 1);
    auto word = [](Boundary b) {
      return b == Boundary::periodic ? "periodic"
                                     : (b == Boundary::outflow ? "outflow" : "reflecting");
    };
    if (lo != hi || lo == Boundary::reflecting)
      throw Error(fmt::format(
          "pic: mesh boundaries along {} are {} and {}: a PIC axis is periodic or absorbing "
          "(outflow) on both sides (reflecting PIC boundaries are not built)",
          "xyz"[a], word(lo), word(hi)));
    absorbing_[std::size_t(a)] = lo == Boundary::outflow;
  }
  if (m.geometry() != mesh::Geometry::cartesian) throw Error("pic: Cartesian geometry only");
  if (m.balance_by_cost() && (absorbing_[0] || absorbing_[1] || absorbing_[2]))
    throw Error(
        "pic: mesh.balance = \"cost\" with absorbing (outflow) faces is not built: blocks "
        "moving under Mur's boundary update have not been verified to keep the answers");
  set_ = std::make_unique<particles::ParticleSet>(
      particles::ParticleType{"pic", {"weight", "type"}, name()}, cfg_);
  if (sort_ == "cell") {
    // Bins: species-major (a block's species stay contiguous), then the grid point that
    // places a particle's shapes (shape.hpp: the nearest point for even orders, floor for
    // odd ones; the shapes start a fixed number of points before it), over the block array. Bins
    // only order the particles (the kernels find their runs themselves), so x/dx may be a
    // multiplication here.
    const auto& s = m.shape();
    const int ext[3] = {s.n(0), s.n(1), s.n(2)};
    const int cells = ext[0] * ext[1] * ext[2];
    const int ntypes = std::max(1, int(species_.size()));
    const double shift = order_ % 2 == 0 ? 0.5 : 0.0;
    set_->set_bins(ntypes * cells, [this, ext, shift, ntypes](const particles::ParticleSet& ps,
                                                              const std::int32_t* node,
                                                              std::size_t n, std::int32_t* out) {
      // Runs of one node (a block's particles are mostly together).
      for (std::size_t b = 0; b < n;) {
        std::size_t e = b + 1;
        while (e < n && node[e] == node[b]) ++e;
        const Grid g = grid_of(*mesh_, node[b]);
        const double inv[3] = {1.0 / g.dx[0], 1.0 / g.dx[1], 1.0 / g.dx[2]};
        const double* x[3] = {ps.prop(particles::POSX) + b, ps.prop(particles::POSY) + b,
                              ps.prop(particles::POSZ) + b};
        simd::bins(ndim_, e - b, x, ps.prop(kType) + b, ntypes, g.x0.data(), inv, shift, ext,
                   out + b);
        b = e;
      }
    });
  }
}

void Pic::initialise(mesh::Mesh& m) {
  // Called again after each initial regrid: start from scratch.
  field_next_valid_ = false;
  set_->clear();
  const int nd = m.ndim();
  const auto& s = m.shape();
  const auto& tg = m.tree().geometry();
  const double lx = tg.hi[0] - tg.lo[0];
  const double k = 2 * cst::pi * mode_ / lx;
  const int per_axis = static_cast<int>(std::lround(std::pow(double(ppc_), 1.0 / nd)));
  const bool two = init_ == "two_stream";
  const int nbeams = two ? 2 : 1;
  const int nspecies = init_ == "pulse" ? 0 : int(species_.size());  // a pulse: vacuum
  std::int64_t cells_total = ppc_;
  for (int a = 0; a < nd; ++a)
    cells_total *= std::int64_t(tg.nblocks_at(a, m.lrefine_min() - 1)) * s.nx;
  // Species-major tags: species sp's start at sp * per_species (module header).
  const std::int64_t per_species = nbeams * cells_total;
  std::vector<double> values(std::size_t(set_->nprop()));
  std::size_t expect = 0;
  expect = m.local_leaves().size() * s.interior_cells() * std::size_t(ppc_ * nbeams * nspecies);
  set_->reserve(expect + 1024);
  for (int id : m.local_leaves()) {
    const Grid g = grid_of(m, id);
    const mesh::Node& node = m.tree().node(id);
    CellNumbering num;
    for (int a = 0; a < 3; ++a) {
      num.offset[a] = a < nd ? std::int64_t(node.pos[a]) * s.nx - s.g(a) : 0;
      num.cells[a] = a < nd ? std::int64_t(tg.nblocks_at(a, node.level)) * s.nx : 1;
    }
    for (int sp = 0; sp < nspecies; ++sp) {
      const Species& spec = species_[std::size_t(sp)];
      for (int beam = 0; beam < nbeams; ++beam) {
        PlasmaLoad load;
        load.density = two ? 0.5 * density_ : density_;
        load.per_axis = per_axis;
        load.u_drift = {beam ? -u_drift_ : u_drift_, 0, 0};
        load.u_th = two ? Vec3{spec.u_th, 0, 0} : Vec3{spec.u_th, spec.u_th, spec.u_th};
        const double w = ppc_ > 0 ? load.density * g.volume() / double(ppc_) : 0.0;
        auto emit = [&](std::int64_t tag, const Vec3& x, Vec3 u) {
          if (x[0] < slab_[0] || !(x[0] < slab_[1])) return;  // outside the slab
          if (init_ != "thermal")
            u[0] += epsilon_ * cst::c * std::sin(k * (x[0] - tg.lo[0])) * spec.response;
          for (int a = 0; a < 3; ++a) values[particles::POSX + a] = x[a];
          for (int a = 0; a < 3; ++a) values[particles::VELX + a] = u[a];
          values[kWeight] = w;
          values[kType] = sp + 1;
          set_->push(values.data(), tag);
        };
        const std::int64_t first = sp * per_species + beam * cells_total;
        switch (nd) {
          case 1:
            load_uniform<1>(g, interior(s), num, load, seed_, first, emit);
            break;
          case 2:
            load_uniform<2>(g, interior(s), num, load, seed_, first, emit);
            break;
          default:
            load_uniform<3>(g, interior(s), num, load, seed_, first, emit);
        }
      }
    }
  }
  set_->redistribute(m);
  lost_ = 0;
  // E = B = 0: Gauss's law holds to round-off for the regular lattice (neutral in every
  // cell, the species at the same places); J and rhoq zero everywhere, guards included.
  // A pulse sets E and B inside (divergence-free, pulse.hpp).
  Pulse pulse;
  pulse.amplitude = pulse_amplitude_, pulse.sigma = pulse_length_, pulse.width = pulse_width_;
  pulse.angle = pulse_angle_;
  pulse.xc = pulse_x_, pulse.yc = pulse_y_;
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
    for (int v = 0; v < s.nvar; ++v)
      if (m.vars()[std::size_t(v)].owner == "pic") {
        const Field f = field_of(u, v);
        for (int kk = 0; kk < s.n(2); ++kk)
          for (int j = 0; j < s.n(1); ++j)
            for (int i = 0; i < s.n(0); ++i) f(i, j, kk) = 0.0;
      }
    if (init_ == "pulse")
      dispatch_d(nd, [&]<int D>() {
        set_pulse<D>(em_of(u, ie_, ib_), interior(s), grid_of(m, id), pulse);
      });
  });
  m.fill_guards(nfill_);
  k_prev_ = kinetic();
  charge_error0_ = charge_error(m);
  const Diag d = diagnose(m);
  field0_ = d.field;
  kin0_ = k_prev_;
  have_total0_ = false;
  drift_ = 0;
  steps_ = 0;
  time_ = 0;
  clock_ = 0;
  step0_ = 0;
  particle_steps_ = 0;
  if (m.rank() == 0) {
    history_ =
        std::ofstream(std::filesystem::path(run_dir_.empty() ? "." : run_dir_) / "pic_history.csv");
    history_ << "step,time,field_energy,kinetic_energy,total_energy,ex_mode_sin,ex_mode_abs\n";
    history_ << fmt::format("0,0,{:.17g},{:.17g},,{:.17g},{:.17g}\n", d.field, k_prev_, -d.mode_im,
                            std::hypot(d.mode_re, d.mode_im))
             << std::flush;
  }
}

double Pic::max_dt(mesh::Mesh& m) const {
  Grid g;
  const auto dx = m.finest_dx();
  for (int a = 0; a < 3; ++a) g.dx[a] = dx[a];
  switch (m.ndim()) {
    case 1:
      return cfl_ * yee::max_dt<1>(g);
    case 2:
      return cfl_ * yee::max_dt<2>(g);
    default:
      return cfl_ * yee::max_dt<3>(g);
  }
}

void Pic::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("pic");
  if (need_k_prev_) k_prev_ = kinetic(), need_k_prev_ = false;
  // E^n, B^n: the last step's closing diagnosis, when nothing has changed the fields since.
  const double field_n = field_next_valid_ ? field_next_ : diagnose(m).field;
  step(m, dt);
  const double k_next = kinetic();
  if (memory::TierRuntime* rt = memory::tier_runtime(); rt != nullptr && set_->size() > 0) {
    // The kinetic energy reads the momenta, weights and types of every particle in place.
    for (int q : {int(particles::VELX), int(particles::VELY), int(particles::VELZ), kWeight, kType})
      rt->charge(set_->prop(q), set_->size() * sizeof(double), memory::AccessPattern::sequential);
    rt->pay("pic/diagnostics");
  }
  const double total = field_n + 0.5 * (k_prev_ + k_next);
  if (!have_total0_) total0_ = total, have_total0_ = true;
  drift_ = std::max(drift_, std::abs(total / total0_ - 1));
  total1_ = total;
  k_prev_ = k_next;
  ++steps_;
  time_ += dt;
  clock_ += dt;
  const Diag d = diagnose(m);
  field_next_ = d.field;
  field_next_valid_ = true;
  field1_ = d.field;
  kin1_ = k_next;
  if (m.rank() == 0 && history_)
    history_ << fmt::format("{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g}\n", step0_ + steps_,
                            clock_, d.field, k_next, total, -d.mode_im,
                            std::hypot(d.mode_re, d.mode_im))
             << std::flush;
}

void Pic::step(mesh::Mesh& m, double dt) {
  const auto& s = m.shape();
  const int nd = m.ndim();
  double pushed = 0;
  m.with_layout([&](auto tag) {
    // Step 1: J = 0 everywhere (guards included).
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      for (int q = 0; q < 3; ++q) {
        const Field f = field_of(u, ij_ + q);
        for (int kk = 0; kk < s.n(2); ++kk)
          for (int j = 0; j < s.n(1); ++j)
            for (int i = 0; i < s.n(0); ++i) f(i, j, kk) = 0.0;
      }
    }
    // Step 2: per block and species, gather, push, move and deposit (three passes, one
    // region each), q/m constant over a species' range.
    //
    // Tiers (memory/tier_runtime.hpp; nothing of this runs without a runtime): under
    // dynamic placement the block's particles (a batch) are staged into fast memory by the
    // streamer's helper threads while the previous block computes, and positions and
    // momenta are written back (weight and type are not: unmodified); under
    // static_prefetch and dynamic the gather prefetches the fields of the particle k ahead,
    // k from the study's model and this run's gather time per particle. Each phase
    // charges what it reads or writes in place (emulated: the slow part's modelled extra
    // time is slept inside the phase's region; model: counted). None of it changes a bit.
    memory::TierRuntime* rt = memory::tier_runtime();
    memory::TierStreamer* streamer = rt != nullptr && rt->streaming() ? &rt->streamer() : nullptr;
    const long ahead = rt != nullptr && gather_time_per_particle_ > 0
                           ? rt->prefetch_distance(gather_time_per_particle_)
                           : 0;
    // Fields read without prefetch are latency-bound (one line per access); prefetched,
    // they stream (the model's premise: the prefetch hides the latency).
    const auto field_read =
        ahead > 0 ? memory::AccessPattern::sequential : memory::AccessPattern::random;
    const std::size_t block_bytes =
        std::size_t(s.n(0)) * std::size_t(s.n(1)) * std::size_t(s.n(2)) * sizeof(double);
    const int nprop = set_->nprop();
    std::vector<int> blocks;
    std::vector<memory::BatchRange> batches;
    for (int id : m.local_leaves())
      if (set_->begin(id) != set_->end(id)) {
        blocks.push_back(id);
        batches.push_back({set_->begin(id), set_->end(id)});
        // The block's cost for mesh.balance = "cost": its particles, in zone-updates.
        m.add_work(id, kParticleWork * double(set_->end(id) - set_->begin(id)));
      }
    // If the block loop throws, the helpers' copies in flight are drained before the
    // particle arena can go away (the runtime, and so the streamer, outlives this unit).
    struct Abandon {
      memory::TierStreamer* s;
      ~Abandon() {
        if (s != nullptr) s->abandon_phase();
      }
    } abandon{streamer};
    if (streamer != nullptr) {
      TESSERA_REGION("stream");
      std::vector<memory::StreamArray> arrays;
      for (int q = 0; q < nprop; ++q) arrays.push_back({set_->prop(q), sizeof(double)});
      streamer->begin_phase("pic/particles", batches, arrays);
    }
    std::uint64_t modified = 0;
    for (int q = particles::POSX; q <= particles::VELZ; ++q) modified |= memory::modified_bit(q);
    std::vector<double*> a(std::size_t(nprop), nullptr);
    // In-place traffic of properties [q0, q0 + nq) of particles [b, b + n) of the block.
    auto charge_props = [&](int q0, int nq, std::size_t b, std::size_t n,
                            memory::AccessPattern pt) {
      if (streamer != nullptr) return;  // staged in fast memory; the streamer counts the copies
      for (int q = q0; q < q0 + nq; ++q) rt->charge(a[std::size_t(q)] + b, n * sizeof(double), pt);
    };
    double gather_seconds = 0, gathered = 0;
    // The Highway kernels (kernels_simd.hpp) unless perf.simd = "scalar" forces the
    // reference's per-particle loops.
    const bool vectorised = !tessera::simd::reference();
    const bool by_cell = sort_ == "cell";  // the gather by runs
    dispatch(nd, order_, gather_ == "energy", [&]<int D, int P, GatherScheme S>() {
      for (std::size_t bi = 0; bi < blocks.size(); ++bi) {
        const int id = blocks[bi];
        const std::size_t nblk = batches[bi].size();
        if (streamer != nullptr) {
          TESSERA_REGION("stream");
          const memory::StagedBatch& sb = streamer->acquire(bi);
          for (int q = 0; q < nprop; ++q) a[std::size_t(q)] = sb.array<double>(std::size_t(q));
        } else {
          for (int q = 0; q < nprop; ++q) a[std::size_t(q)] = set_->prop(q) + batches[bi].begin;
        }
        double* x[3] = {a[particles::POSX], a[particles::POSY], a[particles::POSZ]};
        double* uu[3] = {a[particles::VELX], a[particles::VELY], a[particles::VELZ]};
        const double* w = a[kWeight];
        const auto u = m.view(id, tag);
        const Grid g = grid_of(m, id);
        const EMFields f = em_of(u, ie_, ib_);
        const Currents J = j_of(u, ij_);
        const auto seg = segments_of(a[kType], nblk);
        for (std::size_t sp = 0; sp < species_.size(); ++sp) {
          const std::size_t b = seg[sp], e = seg[sp + 1], n = e - b;
          if (n == 0) continue;
          const double q = species_[sp].charge, qm = q / species_[sp].mass;
          scratch_.resize(9 * n);
          double* eb = scratch_.data();
          double* xo = eb + 6 * n;
          {
            TESSERA_REGION("gather");
            const auto t0 = std::chrono::steady_clock::now();
            if (vectorised) {
              const double* xs[3] = {x[0] + b, x[1] + b, x[2] + b};
              simd::gather(D, P, S == GatherScheme::energy_conserving, by_cell, f, g, n, xs, ahead,
                           eb);
            } else {
              for (std::size_t p = 0; p < n; ++p) {
                if (ahead > 0 && p + std::size_t(ahead) < n) {
                  const std::size_t r = b + p + std::size_t(ahead);
                  prefetch_fields<D>(f, g, {x[0][r], x[1][r], x[2][r]});
                }
                Vec3 E, B;
                gather<D, P, S>(f, g, {x[0][b + p], x[1][b + p], x[2][b + p]}, E, B);
                for (int c = 0; c < 3; ++c) eb[c * n + p] = E[c], eb[(3 + c) * n + p] = B[c];
              }
            }
            gather_seconds +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            gathered += double(n);
            if (rt != nullptr) {
              rt->charge(f.ex.p, 6 * block_bytes, field_read);
              charge_props(particles::POSX, 3, b, n, memory::AccessPattern::sequential);
              rt->pay("pic/gather");
            }
          }
          {
            TESSERA_REGION("push");
            if (vectorised) {
              double* us[3] = {uu[0] + b, uu[1] + b, uu[2] + b};
              double* xs[3] = {x[0] + b, x[1] + b, x[2] + b};
              simd::push(n, us, xs, eb, qm, dt, xo);
            } else {
              for (std::size_t p = 0; p < n; ++p) {
                Vec3 up{uu[0][b + p], uu[1][b + p], uu[2][b + p]};
                boris_push(up, {eb[p], eb[n + p], eb[2 * n + p]},
                           {eb[3 * n + p], eb[4 * n + p], eb[5 * n + p]}, qm, dt);
                Vec3 xp{x[0][b + p], x[1][b + p], x[2][b + p]};
                for (int c = 0; c < 3; ++c) xo[c * n + p] = xp[c];
                push_position(xp, up, dt);
                for (int c = 0; c < 3; ++c) uu[c][b + p] = up[c], x[c][b + p] = xp[c];
              }
            }
            if (rt != nullptr) {
              charge_props(particles::POSX, 6, b, n, memory::AccessPattern::sequential);
              charge_props(particles::POSX, 6, b, n, memory::AccessPattern::sequential_write);
              rt->pay("pic/push");
            }
          }
          {
            TESSERA_REGION("deposit");
            if (vectorised) {
              const double* us[3] = {uu[0] + b, uu[1] + b, uu[2] + b};
              const double* xs[3] = {x[0] + b, x[1] + b, x[2] + b};
              simd::deposit(D, P, J, g, n, xo, xs, us, w + b, q, dt);
            } else {
              for (std::size_t p = 0; p < n; ++p) {
                const Vec3 up{uu[0][b + p], uu[1][b + p], uu[2][b + p]};
                const double ig = 1.0 / lorentz_gamma(up);
                deposit_current<D, P>(J, g, {xo[p], xo[n + p], xo[2 * n + p]},
                                      {x[0][b + p], x[1][b + p], x[2][b + p]},
                                      {up[0] * ig, up[1] * ig, up[2] * ig}, q * w[b + p], dt);
              }
            }
            if (rt != nullptr) {
              // J is read and written where the particles fall: latency-bound either way.
              rt->charge(J.jx.p, 3 * block_bytes, memory::AccessPattern::random);
              charge_props(particles::POSX, 6, b, n, memory::AccessPattern::sequential);
              charge_props(kWeight, 1, b, n, memory::AccessPattern::sequential);
              rt->pay("pic/deposit");
            }
          }
          pushed += double(n);
        }
        if (streamer != nullptr) streamer->release(bi, modified);
      }
    });
    if (streamer != nullptr) {
      TESSERA_REGION("stream");
      streamer->end_phase();
    }
    abandon.s = nullptr;
    if (gathered > 0) gather_time_per_particle_ = gather_seconds / gathered;
    {
      TESSERA_REGION("deposit");
      m.accumulate_guards(ij_, 3);
    }
    // Step 3: the field solve around J^{n+1/2} (see the header for the guard reasoning).
    {
      TESSERA_REGION("field_solve");
      const Box all = all_but_last(s), in = interior(s);
      auto half_b = [&] {
        for (int id : m.local_leaves()) {
          const auto u = m.view(id, tag);
          const Grid g = grid_of(m, id);
          dispatch_d(nd, [&]<int D>() { yee::advance_b<D>(em_of(u, ie_, ib_), all, g, 0.5 * dt); });
        }
      };
      half_b();
      // Absorbing faces (absorbing.hpp): the tangential E at time n, then Mur's after the fill.
      std::vector<std::pair<int, absorbing::Face>> faces;
      for (int id : m.local_leaves()) {
        const mesh::Node& node = m.tree().node(id);
        for (int a = 0; a < nd; ++a)
          if (absorbing_[std::size_t(a)]) {
            if (node.pos[a] == 0) faces.push_back({id, {a, 0, s.g(a)}});
            if (node.pos[a] == m.tree().geometry().nblocks_at(a, node.level) - 1)
              faces.push_back({id, {a, 1, s.g(a) + s.ni(a)}});
          }
      }
      const Box whole = all_of(s);
      std::size_t state = 0;
      for (const auto& [id, face] : faces) state += absorbing::state_size(face, whole);
      mur_state_.resize(state);
      state = 0;
      for (const auto& [id, face] : faces) {
        absorbing::mur_save(em_of(m.view(id, tag), ie_, ib_), face, whole, &mur_state_[state]);
        state += absorbing::state_size(face, whole);
      }
      for (int id : m.local_leaves()) {
        const auto u = m.view(id, tag);
        const Grid g = grid_of(m, id);
        dispatch_d(
            nd, [&]<int D>() { yee::advance_e<D>(em_of(u, ie_, ib_), j_of(u, ij_), in, g, dt); });
      }
      if (rt != nullptr) {
        // The three passes (B half step, E step, B half step) stream: E is read three
        // times and written once, B read three times and written twice, J read once. Each
        // of E, B, J is three consecutive variables of the block (one range each).
        const auto seq = memory::AccessPattern::sequential;
        const auto wr = memory::AccessPattern::sequential_write;
        for (int id : m.local_leaves()) {
          const auto u = m.view(id, tag);
          const double* e = field_of(u, ie_).p;
          const double* b = field_of(u, ib_).p;
          for (int pass = 0; pass < 3; ++pass) {
            rt->charge(e, 3 * block_bytes, seq);
            rt->charge(b, 3 * block_bytes, seq);
          }
          rt->charge(field_of(u, ij_).p, 3 * block_bytes, seq);
          rt->charge(e, 3 * block_bytes, wr);
          for (int pass = 0; pass < 2; ++pass) rt->charge(b, 3 * block_bytes, wr);
        }
        rt->pay("pic/field_solve");
      }
      m.fill_guards(nfill_e_);
      state = 0;
      for (const auto& [id, face] : faces) {
        const double k = absorbing::mur_coefficient(dt, grid_of(m, id).dx[std::size_t(face.axis)]);
        absorbing::mur_apply(em_of(m.view(id, tag), ie_, ib_), face, whole, &mur_state_[state], k);
        state += absorbing::state_size(face, whole);
      }
      half_b();
    }
  });
  {
    TESSERA_REGION("redistribute");
    memory::TierRuntime* rt = memory::tier_runtime();
    if (rt != nullptr && set_->size() > 0) {
      // Reads every property once and rewrites them (the canonical order), in place.
      for (int q = 0; q < set_->nprop(); ++q) {
        rt->charge(set_->prop(q), set_->size() * sizeof(double), memory::AccessPattern::sequential);
        rt->charge(set_->prop(q), set_->size() * sizeof(double),
                   memory::AccessPattern::sequential_write);
      }
    }
    lost_ += set_->redistribute(m).lost;
    if (rt != nullptr) rt->pay("pic/redistribute");
  }
  MPI_Allreduce(MPI_IN_PLACE, &pushed, 1, MPI_DOUBLE, MPI_SUM, m.comm());
  particle_steps_ += pushed;
}

void Pic::after_regrid(mesh::Mesh& m) {
  field_next_valid_ = false;
  // One level only: a regrid is a rebalance (mesh.balance = "cost"): the fields moved with
  // their blocks, guard zones included; the particles follow them.
  lost_ += set_->redistribute(m).lost;
}

void Pic::finish(mesh::Mesh& m) {
  charge_error_ = charge_error(m);
}

nlohmann::json Pic::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  std::vector<long> count(species_.size() + 1, 0);
  const double* type = set_->prop(kType);
  for (std::size_t p = 0; p < set_->size(); ++p) ++count[std::size_t(type[p]) - 1];
  count.back() = long(set_->size());
  MPI_Allreduce(MPI_IN_PLACE, count.data(), int(count.size()), MPI_LONG, MPI_SUM, comm);
  nlohmann::json j;
  j["species"] = nlohmann::json::array();
  for (std::size_t sp = 0; sp < species_.size(); ++sp)
    j["species"].push_back({{"name", species_[sp].name},
                            {"type", sp + 1},
                            {"charge", species_[sp].charge},
                            {"mass", species_[sp].mass},
                            {"count", count[sp]}});
  j["particles"] = count.back();
  j["lost"] = lost_;
  j["background_charge_density"] = background_;
  j["boundaries"] = nlohmann::json::array();
  for (int a = 0; a < ndim_; ++a)
    j["boundaries"].push_back(absorbing_[std::size_t(a)] ? "absorbing" : "periodic");
  j["particles_per_cell"] = ppc_;
  j["shape_order"] = order_;
  j["gather"] = gather_;
  j["init"] = init_;
  j["steps"] = steps_;
  j["particle_steps"] = particle_steps_;
  j["field_energy_start"] = field0_;
  j["kinetic_energy_start"] = kin0_;
  j["total_energy_start"] = total0_;
  j["field_energy_end"] = field1_;
  j["kinetic_energy_end"] = kin1_;
  j["total_energy_end"] = total1_;
  j["energy_drift_max"] = drift_;
  j["charge_error_start"] = charge_error0_;
  j["charge_error"] = charge_error_;
  return j;
}

physics::Registration Pic::registration() {
  return physics::registration_of<Pic>("pic", physics::UnitRole::operator_unit,
                                       "electromagnetic particle-in-cell plasma", {.alone = true});
}

}  // namespace tessera::pic

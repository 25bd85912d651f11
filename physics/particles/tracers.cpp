#include "physics/particles/tracers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/size.hpp"
#include "mesh/mesh.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"
#include "physics/particle_needs.hpp"

namespace tessera::tracers {

namespace {
const char* const kAxes = "xyz";
}

void Tracers::declare_params(base::Params& p) {
  p.declare_bool("particles.tracers", false,
                 "passive tracer particles in this run (the operator 'particles', applied "
                 "after every other)");
  p.declare_string("particles.init", "lattice", {"lattice", "random"},
                   "placement: a cell-centred lattice over the box, or seeded uniform random");
  p.declare_int("particles.count", 0, 0, 4000000000000LL,
                "random: number of particles; lattice: total when particles.lattice_n* are 0 "
                "(round(count^(1/ndim)) per axis)");
  for (int a = 0; a < 3; ++a) {
    p.declare_int(fmt::format("particles.lattice_n{}", kAxes[a]), 0, 0, 2000000000,
                  fmt::format("lattice points along {} (0: from particles.count)", kAxes[a]));
    p.declare_real(fmt::format("particles.{}min", kAxes[a]), -1e300, -1e300, 1e300,
                   fmt::format("placement box, lower {} (clipped to the domain)", kAxes[a]));
    p.declare_real(fmt::format("particles.{}max", kAxes[a]), 1e300, -1e300, 1e300,
                   fmt::format("placement box, upper {} (clipped to the domain)", kAxes[a]));
  }
  p.declare_string("particles.mapping", "cic", {"cic", "quadratic"},
                   "mesh-to-particle velocity interpolation: cloud-in-cell or quadratic");
  p.declare_int("particles.seed", 1, 0, 9000000000000000000LL, "seed of random placement");
  p.declare_real("particles.dt_factor", 0.5, 1e-6, 1.0,
                 "largest move per step in zones at the particle's velocity (FLASH pt_dtFactor)");
}

Tracers::Tracers(const base::Params& p)
    : mapping_(particles::parse_mapping(p.get_string("particles.mapping"))),
      dt_factor_(p.get_real("particles.dt_factor")),
      cfg_(memory::config_for(p, "particles")),
      init_(p.get_string("particles.init")) {
  const int nd = static_cast<int>(p.get_int("mesh.ndim"));
  const long count = p.get_int("particles.count");
  place_.random = init_ == "random";
  place_.count = count;
  place_.seed = static_cast<std::uint64_t>(p.get_int("particles.seed"));
  bool any = false;
  for (int a = 0; a < 3; ++a) {
    const std::string ax(1, kAxes[a]);
    const double dlo = p.get_real("mesh." + ax + "min"), dhi = p.get_real("mesh." + ax + "max");
    place_.lo[a] = std::max(dlo, p.get_real("particles." + ax + "min"));
    place_.hi[a] = std::min(dhi, p.get_real("particles." + ax + "max"));
    if (a < nd && !(place_.lo[a] < place_.hi[a]))
      throw Error(
          fmt::format("particles: the placement box is empty along {} ([{}, {}] within "
                      "the domain [{}, {}])",
                      ax, place_.lo[a], place_.hi[a], dlo, dhi));
    place_.lattice[a] = a < nd ? p.get_int("particles.lattice_n" + ax) : 1;
    any |= a < nd && place_.lattice[a] > 0;
  }
  if (!place_.random) {
    if (!any) {
      const long n = std::lround(std::pow(double(count), 1.0 / nd));
      for (int a = 0; a < nd; ++a) place_.lattice[a] = n;
    }
    for (int a = 0; a < nd; ++a)
      if (place_.lattice[a] < 1)
        throw Error(fmt::format(
            "particles: the lattice has no point along {} (set particles.lattice_n{} or "
            "particles.count)",
            kAxes[a], kAxes[a]));
  } else if (count < 1) {
    throw Error("particles: particles.init = \"random\" needs particles.count >= 1");
  }
}

physics::Declarations Tracers::declarations() const {
  // The predictor lands at most dt_factor zones out; CIC reaches half a zone past it, the
  // quadratic stencil one zone and a half.
  const double reach = dt_factor_ + (mapping_ == particles::Mapping::cic ? 0.5 : 1.5);
  return {.nguard = static_cast<int>(std::ceil(reach)),
          .writes_unk = false,
          .reads = {},
          .particle_set = set_.get()};
}

std::vector<physics::ArenaNeed> Tracers::memory_needs(const std::vector<mesh::VarInfo>& /*unk*/,
                                                      const mesh::BlockShape& s,
                                                      long /*maxblocks*/) const {
  // The placed particles (tracers stay where the flow takes them: an even share per rank
  // is the estimate), 6 properties, tag and node each (ParticleSet), sort and migration
  // buffers as PIC's, and a checkpoint's or particle file's copy (9 file columns).
  // File columns: blk posx posy posz proc tag velx vely velz.
  return physics::particle_set_needs(double(particles::placement_count(place_, s.ndim)), false,
                                     particles::NBASE, 9, "tracers placed");
}

void Tracers::bind(mesh::Mesh& m, const physics::Services& /*services*/,
                   const physics::RunContext& /*ctx*/) {
  vel_.dens = m.var_index("dens");
  const char* mom[3] = {"momx", "momy", "momz"};
  for (int a = 0; a < 3; ++a) vel_.mom[a] = m.var_index(mom[a]);
  if (vel_.dens < 0 || vel_.mom[0] < 0)
    throw Error("particles: tracers need the fluid's dens and momx..momz in unk (hydro or flow)");
  nfill_ = 0;
  for (int v : {vel_.dens, vel_.mom[0], vel_.mom[1], vel_.mom[2]}) {
    if (v < 0) continue;
    if (!m.vars()[std::size_t(v)].guard_fill)
      throw Error("particles: '" + m.vars()[std::size_t(v)].name + "' is not guard-filled");
    nfill_ = std::max(nfill_, v + 1);
  }
  set_ =
      std::make_unique<particles::ParticleSet>(particles::ParticleType{"tracer", {}, name()}, cfg_);
}

void Tracers::initialise(mesh::Mesh& m) {
  // Refuse a placement that cannot fit before allocating it (an even share per rank; the
  // arena grows by half again when it must).
  const double total = place_.random ? double(place_.count) : [&] {
    double n = 1;
    for (int a = 0; a < m.ndim(); ++a) n *= double(place_.lattice[a]);
    return n;
  }();
  const double need = total / m.nranks() * double(set_->bytes_per_particle());
  const double avail = double(memory::read_meminfo().mem_available);
  if (avail > 0 && need > avail) {
    std::string what = place_.random ? fmt::format("{} random particles", place_.count) : "";
    if (!place_.random) {
      what = "a lattice of ";
      for (int a = 0; a < m.ndim(); ++a)
        what += (a ? " x " : "") + std::to_string(place_.lattice[a]);
      what += fmt::format(" = {:.4g} particles", total);
    }
    throw Error(fmt::format(
        "particles: {} need {} per rank ({} bytes each on {} rank(s)), more than the {} "
        "this machine has available",
        what, format_bytes(need), set_->bytes_per_particle(), m.nranks(), format_bytes(avail)));
  }
  set_->reserve(static_cast<std::size_t>(total / m.nranks() * 1.1) + 1024);
  particles::place(m, place_, *set_);
  m.fill_guards(nfill_);
  particles::map_velocity(m, mapping_, vel_, *set_);
}

double Tracers::max_dt(mesh::Mesh& m) const {
  return particles::max_dt(m, vel_, dt_factor_);
}

void Tracers::count(const particles::MigrateStats& st) {
  lost_ += st.lost;
  migrated_ += st.migrated;
  general_ += st.general ? 1 : 0;
  ++redistributions_;
}

void Tracers::advance(mesh::Mesh& m, double dt) {
  TESSERA_DETACHED_REGION("particles");
  {
    TESSERA_REGION("advance");
    m.fill_guards(nfill_);  // the fluid at t^{n+1}: dens and momenta only
    ++moves_;
    particles::heun_move(m, mapping_, vel_, dt, *set_);
  }
  // Nothing writes unk between the last operator and the next fill without saying so
  // (Mesh::invalidate_guards): that fill (the next step's hydro fill, or refinement
  // marking's) leaves dens and the momenta out.
  m.mark_guards_current(nfill_);
  {
    TESSERA_REGION("migrate");
    count(set_->redistribute(m));
  }
  TESSERA_REGION("advance");
  particles::map_velocity(m, mapping_, vel_, *set_);
}

void Tracers::after_regrid(mesh::Mesh& m) {
  TESSERA_REGION("particles");
  TESSERA_REGION("migrate");
  count(set_->redistribute(m));
}

nlohmann::json Tracers::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  long n[2] = {long(set_->size()), 0};
  const auto rep = set_->report();
  double bytes = double(rep.mapped_bytes);
  MPI_Allreduce(MPI_IN_PLACE, n, 1, MPI_LONG, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_DOUBLE, MPI_SUM, comm);
  nlohmann::json j;
  j["count"] = n[0];
  j["lost"] = lost_;
  j["migrated"] = migrated_;
  j["redistributions"] = redistributions_;
  j["general_exchanges"] = general_;
  // Every move fills the guard zones of dens and the momenta itself (issue 45: it used to
  // wait for the next fill somebody did, a hook of the mesh's; the keys stay).
  j["moves_with_own_guard_fill"] = moves_;
  j["moves_with_shared_guard_fill"] = 0;
  j["bytes"] = bytes;
  j["bytes_per_particle"] = set_->bytes_per_particle();
  j["arena"] = rep.name;
  j["pages_requested"] = memory::to_string(rep.policy_requested);
  j["pages_achieved"] = memory::to_string(rep.policy_achieved);
  j["init"] = init_;
  j["mapping"] = mapping_ == particles::Mapping::cic ? "cic" : "quadratic";
  return j;
}

physics::Registration Tracers::registration() {
  auto r =
      physics::registration_of<Tracers>("particles", physics::UnitRole::particles,
                                        "tracer particles moved with the fluid velocity (Heun)");
  r.enabled = [](const base::Params& p) { return p.get_bool("particles.tracers"); };
  return r;
}

}  // namespace tessera::tracers

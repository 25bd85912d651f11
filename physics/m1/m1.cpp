// Two-moment (M1) radiation transport (see m1.hpp).
#include "physics/m1/m1.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/flux_register.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/field_rules.hpp"
#include "physics/m1/closure.hpp"
#include "physics/m1/rows.hpp"

namespace tessera::m1 {

namespace {

thread_local std::vector<double> g_p, g_rhs;

}  // namespace

void M1::declare_params(base::Params& p) {
  p.declare_int("m1.groups", 1, 1, 99, "energy groups per species");
  p.declare_int("m1.species", 1, 1, 9, "radiation species");
  p.declare_string("m1.closure", "minerbo", {"minerbo", "levermore", "eddington"},
                   "the Eddington factor chi(f), f = |F| / (cE) (eddington: chi = 1/3, the P1 "
                   "approximation)");
  p.declare_string("m1.integrator", "ssprk2", {"ssprk2", "ssprk3"},
                   "the transport's strong-stability-preserving Runge-Kutta method");
  p.declare_real("m1.cfl", 0.5, 1e-6, 1.0, "dt = cfl / (c sum_a 1/dx_a)");
  p.declare_string("m1.reconstruction", "plm_mc", {"plm_mc", "unlimited"},
                   "piecewise-linear slopes: MC-limited or the unlimited central difference");
  p.declare_real("m1.speed", 1.0, 1e-300, 1e300, "the speed of light c (code units: 1)");
  p.declare_real("m1.radiation_constant", 1.0, 0.0, 1e300, "a in the emission b_g a T^4");
  p.declare_number_list("m1.kappa_a", {},
                        "absorption coefficient per group (one value: every "
                        "group; empty: none), 1/length");
  p.declare_number_list("m1.kappa_s", {}, "scattering coefficient per group (as kappa_a)");
  p.declare_bool("m1.couple_gas", false,
                 "emission b_g a T^4 from the gas (gamma law) and the absorbed energy given "
                 "to it (radiation + gas energy conserved); false: absorption only");
  p.declare_bool("m1.thick_correction", true,
                 "scale the Lax-Friedrichs dissipation by 1 / (chi dx) on optically thick faces "
                 "(chi dx > 1), so that the diffusion limit is not swamped by it");
  p.declare_real("m1.disk_radius", 0.0, 0.0, 1e300,
                 "an absorbing disk (sphere in 3-D) of this radius (0: none) where kappa_a "
                 "= m1.disk_kappa: the shadow test's obstacle");
  p.declare_real("m1.disk_x", 0.5, -1e300, 1e300, "the disk's centre x");
  p.declare_real("m1.disk_y", 0.5, -1e300, 1e300, "the disk's centre y");
  p.declare_real("m1.disk_z", 0.5, -1e300, 1e300, "the disk's centre z");
  p.declare_real("m1.disk_kappa", 1e4, 0.0, 1e300, "kappa_a inside the disk");
  p.declare_string_list("m1.beam_faces", {},
                        "faces (xl, xr, yl, ...) a beam enters through: E = m1.beam_e, F = "
                        "(1 - 1e-12) c E along the inward normal where the next axis's "
                        "coordinate is in [m1.beam_lo, m1.beam_hi], vacuum (E = F = 0) "
                        "elsewhere on the face; the other faces keep mesh.*_boundary_type");
  p.declare_real("m1.beam_lo", 0.4, -1e300, 1e300, "the beam's band, low end");
  p.declare_real("m1.beam_hi", 0.6, -1e300, 1e300, "the beam's band, high end");
  p.declare_real("m1.beam_e", 1.0, 0.0, 1e300, "the beam's energy density");
}

physics::Registration M1::registration() {
  return physics::registration_of<M1>(
      "m1", physics::UnitRole::operator_unit,
      "two-moment (M1) radiation transport: explicit PLM + Lax-Friedrichs, implicit collisions",
      {.needs = {{"eos", true, "the gas it exchanges energy with (m1.couple_gas)"}}});
}

M1::M1(const base::Params& p)
    : groups_(static_cast<int>(p.get_int("m1.groups"))),
      species_(static_cast<int>(p.get_int("m1.species"))),
      closure_(p.get_string("m1.closure") == "levermore"   ? Closure::levermore
               : p.get_string("m1.closure") == "eddington" ? Closure::eddington
                                                           : Closure::minerbo),
      stages_(p.get_string("m1.integrator") == "ssprk3" ? 3 : 2),
      cfl_(p.get_real("m1.cfl")),
      c_(p.get_real("m1.speed")),
      arad_(p.get_real("m1.radiation_constant")),
      mc_(p.get_string("m1.reconstruction") == "plm_mc"),
      couple_(p.get_bool("m1.couple_gas")),
      thick_fix_(p.get_bool("m1.thick_correction")),
      adaptive_(p.get_int("mesh.lrefine_max") > p.get_int("mesh.lrefine_min")),
      disk_{p.get_real("m1.disk_x"), p.get_real("m1.disk_y"), p.get_real("m1.disk_z"),
            p.get_real("m1.disk_radius")},
      disk_kappa_(p.get_real("m1.disk_kappa")),
      beam_faces_(p.get_string_list("m1.beam_faces")),
      beam_lo_(p.get_real("m1.beam_lo")),
      beam_hi_(p.get_real("m1.beam_hi")),
      beam_e_(p.get_real("m1.beam_e")) {
  auto per_group = [&](const char* key) {
    auto v = p.get_number_list(key);
    if (v.empty()) v.assign(std::size_t(groups_), 0.0);
    if (v.size() == 1) v.assign(std::size_t(groups_), v[0]);
    if (v.size() != std::size_t(groups_))
      throw Error(fmt::format("{}: {} values for {} groups (give one or one per group)", key,
                              v.size(), groups_));
    for (double x : v)
      if (!(x >= 0.0)) throw Error(fmt::format("{}: {} is negative", key, x));
    return v;
  };
  kappa_a_ = per_group("m1.kappa_a");
  kappa_s_ = per_group("m1.kappa_s");
  physics::faces_named("m1.beam_faces", beam_faces_);
  if (!beam_faces_.empty() && !(beam_lo_ < beam_hi_))
    throw Error(
        fmt::format("m1.beam_lo = {} is not below m1.beam_hi = {}: the beam would be "
                    "empty",
                    beam_lo_, beam_hi_));
}

std::string M1::var_name(int q, int s, int g, int species, int groups) {
  if (species == 1 && groups == 1) {
    static const char* one[4] = {"erad", "frax", "fray", "fraz"};
    return one[q];
  }
  static const char prefix[4] = {'e', 'x', 'y', 'z'};
  return fmt::format("{}{:03d}", prefix[q], s * groups + g);
}

physics::Declarations M1::declarations() const {
  std::vector<mesh::VarInfo> v;
  for (int s = 0; s < species_; ++s)
    for (int g = 0; g < groups_; ++g)
      for (int q = 0; q < 4; ++q)
        v.push_back(mesh::VarInfo(var_name(q, s, g, species_, groups_), q == 0 ? -1 : q - 1,
                                  mesh::VarKind::auxiliary, true, true, name())
                        .checked_by_owner());
  for (int s = 0; s < species_; ++s)
    for (int g = 0; g < groups_; ++g)
      for (int q = 0; q < 4; ++q)
        v.push_back(mesh::VarInfo("m1b_" + var_name(q, s, g, species_, groups_), -1,
                                  mesh::VarKind::auxiliary, false, false, name())
                        .with_role(mesh::VarRole::scratch));
  if (couple_)  // the gas's total energy at the step's start: part of the IMEX state
    v.push_back(mesh::VarInfo("m1b_etot", -1, mesh::VarKind::auxiliary, false, false, name())
                    .with_role(mesh::VarRole::scratch));
  // Every moment's fluxes go to the flux register (coarse-fine faces corrected), where the
  // mesh can have more than one level: a uniform mesh maps no register for them.
  return {
      .variables = std::move(v), .nguard = 2, .flux_vars = adaptive_ ? 4 * species_ * groups_ : 0};
}

void M1::bind(mesh::Mesh& m, const physics::Services& services, const physics::RunContext& ctx) {
  if (m.geometry() != mesh::Geometry::cartesian)
    throw Error("m1: Cartesian geometry only (mesh.geometry = \"cartesian\")");
  mesh_ = &m;
  time_ = ctx.start_time;
  steps_ = ctx.start_step;
  restarted_ = ctx.restarted;
  ivar_.clear();
  ibase_.clear();
  for (int s = 0; s < species_; ++s)
    for (int g = 0; g < groups_; ++g)
      for (int q = 0; q < 4; ++q) {
        const std::string n = var_name(q, s, g, species_, groups_);
        ivar_.push_back(m.var_index(n));
        ibase_.push_back(m.scratch_index("m1b_" + n));
      }
  if (couple_) {
    for (const char* v : {"dens", "eint", "temp", "etot", "momx"})
      if (m.var_index(v) < 0)
        throw Error(std::string("m1.couple_gas: the gas has no '") + v +
                    "' (add \"flow\" or \"hydro\" to driver.operators)");
    idens_ = m.var_index("dens");
    ieint_ = m.var_index("eint");
    itemp_ = m.var_index("temp");
    ietot_ = m.var_index("etot");
    imom_[0] = m.var_index("momx");
    imom_[1] = m.var_index("momy");
    imom_[2] = m.var_index("momz");
    igas_base_ = m.scratch_index("m1b_etot");
    eos_ = services.get<eos::EosUnit>("eos");
    if (eos_ == nullptr) throw Error("m1.couple_gas: the gas coupling needs the EOS unit");
    if (ctx.params && ctx.params->get_string("eos.type") != "gamma")
      throw Error("m1.couple_gas: needs eos.type = \"gamma\" (c_v = e/T)");
  }
  // A beam: the guard zones hold the incoming state (E, F along the inward normal) in the
  // band, vacuum elsewhere (an inflow for the upwind flux).
  for (const auto& f : beam_faces_) {
    const int axis = f[0] - 'x', side = f[1] == 'r';
    if (axis >= m.ndim())
      throw Error("m1.beam_faces: face '" + f + "' of a " + std::to_string(m.ndim()) + "-D mesh");
    const int nd = m.ndim();
    const int across = nd > 1 ? (axis + 1) % nd : axis;
    for (std::size_t k = 0; k < ivar_.size() / 4; ++k)
      for (int q = 0; q < 4; ++q) {
        const double sign = side ? -1.0 : 1.0;
        m.set_var_boundary(ivar_[4 * k + q], axis, side, [=, this](const mesh::GuardSlab& sl) {
          for (int y = 0; y < sl.nc; ++y)
            for (int x = 0; x < sl.nb; ++x)
              for (int mm = 0; mm < sl.ng; ++mm) {
                const auto at = sl.centre(mm, x, y);
                const bool in = nd == 1 || (at[across] >= beam_lo_ && at[across] <= beam_hi_);
                const double e = in ? beam_e_ : 0.0;
                double v = 0.0;
                if (q == 0) v = e;
                if (q == axis + 1) v = sign * (1.0 - 1e-12) * c_ * e;
                sl.guard(mm, x, y) = v;
              }
        });
      }
  }
}

double M1::kappa_a(int g, const std::array<double, 3>& x) const {
  if (disk_[3] > 0.0) {
    double r2 = 0;
    for (int a = 0; a < mesh_->ndim(); ++a) r2 += (x[a] - disk_[a]) * (x[a] - disk_[a]);
    if (r2 <= disk_[3] * disk_[3]) return disk_kappa_;
  }
  return kappa_a_[std::size_t(g)];
}

std::array<double, 2> M1::energies() const {
  auto& m = *mesh_;
  const auto& s = m.shape();
  const std::size_t npair = ivar_.size() / 4;
  const auto sums = m.leaf_sums(2, [&](int id, double* out) {
    const mesh::BlockGeom g = m.geom(id);
    double dv = 1.0;
    for (int a = 0; a < m.ndim(); ++a) dv *= g.dx[a];
    double er = 0, gas = 0;
    m.with_layout([&](auto tag) {
      const auto u = m.view(id, tag);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (std::size_t p = 0; p < npair; ++p) er += u(ivar_[4 * p], i, j, k);
        if (couple_) {
          double ke = 0;
          for (int a = 0; a < 3; ++a) ke += u(imom_[a], i, j, k) * u(imom_[a], i, j, k);
          gas += u(ietot_, i, j, k) - 0.5 * ke / u(idens_, i, j, k);
        }
      });
    });
    out[0] = er * dv;
    out[1] = gas * dv;
  });
  return {sums[0], sums[1]};
}

void M1::initialise(mesh::Mesh& m) {
  if (restarted_) return;  // the checkpoint's fields and clock
  // The initial state must be realizable (E >= 0, |F| <= cE, finite): the transport's
  // limiter and the closure assume it, and a run from E < 0 gains energy silently
  // (issue 48). The first bad zone of the lowest rank, for every rank.
  const auto& s = m.shape();
  const std::size_t npair = ivar_.size() / 4;
  std::string bad;
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      if (!bad.empty()) return;
      const auto u = m.view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (std::size_t p = 0; p < npair && bad.empty(); ++p) {
          const double e = u(ivar_[4 * p], i, j, k);
          double f2 = 0;
          for (int q = 1; q < 4; ++q)
            f2 += u(ivar_[4 * p + q], i, j, k) * u(ivar_[4 * p + q], i, j, k);
          const double nf = std::sqrt(f2);
          const char* why = !std::isfinite(e) || !std::isfinite(nf) ? "not finite"
                            : e < 0.0                               ? "E < 0"
                            : nf > c_ * e * (1.0 + 1e-10)           ? "|F| > cE"
                                                                    : nullptr;
          if (why == nullptr) continue;
          bad = fmt::format(
              "m1: the initial state is not realizable ({}): {} = {:g}, |F| = {:g} at ({:g}, "
              "{:g}, {:g}); radiation needs E >= 0 and |F| <= cE (check the problem's "
              "parameters)",
              why, m.vars()[std::size_t(ivar_[4 * p])].name, e, nf, g.x(i - s.g(0)),
              m.ndim() > 1 ? g.y(j - s.g(1)) : 0.0, m.ndim() > 2 ? g.z(k - s.g(2)) : 0.0);
        }
      });
    }
  });
  parallel::agree(m.comm(), bad);
  const auto e = energies();
  energy_start_ = e[0];
  gas_start_ = e[1];
}

physics::FileRecords M1::file_records() const {
  return {.scalars = {{"energy_start", energy_start_},
                      {"gas_energy_start", gas_start_},
                      {"realizability_violations", double(violations_)}}};
}

void M1::restore(mesh::Mesh& /*m*/, const physics::CheckpointInfo& c) {
  const auto e = energies();
  energy_start_ = c.real_scalar("m1_energy_start").value_or(e[0]);
  gas_start_ = c.real_scalar("m1_gas_energy_start").value_or(e[1]);
  violations_ = static_cast<long>(c.real_scalar("m1_realizability_violations").value_or(0));
}

double M1::max_dt(mesh::Mesh& m) const {
  const auto dx = m.finest_dx();
  double inv = 0;
  for (int a = 0; a < m.ndim(); ++a) inv += 1.0 / dx[a];
  return cfl_ / (c_ * inv);
}

template <class View>
void M1::block_rhs(const View& u, const mesh::BlockGeom& g, std::vector<double>& rhs,
                   double* const* faces, std::size_t per_var) const {
  const auto& s = mesh_->shape();
  const int nd = mesh_->ndim();
  const std::size_t cells = s.cells(), nv = ivar_.size(), npair = nv / 4;
  // The moments with their guards, contiguous per variable (x fastest): var-major unk
  // itself, a copy of zone-major's made row by row.
  thread_local std::vector<const double*> mom;
  mom.resize(nv);
  if constexpr (std::is_same_v<View, mesh::BlockView<mesh::Layout::var_major>>) {
    for (std::size_t v = 0; v < nv; ++v) mom[v] = &u(ivar_[v], 0, 0, 0);
  } else {
    g_p.resize(nv * cells);
    for (std::size_t v = 0; v < nv; ++v) {
      double* p = g_p.data() + v * cells;
      mom[v] = p;
      for (int k = 0; k < s.n(2); ++k)
        for (int j = 0; j < s.n(1); ++j, p += s.n(0)) {
          const auto r = u.row(ivar_[v], j, k);
          for (int i = 0; i < s.n(0); ++i) p[i] = r[i];
        }
    }
  }
  rhs.assign(nv * cells, 0.0);
  const long st[3] = {1, s.n(0), long(s.n(0)) * s.n(1)};
  const bool thick = thick_fix_ && collides();  // all opacities zero: never thick
  if (thick) {
    chi_.resize(std::size_t(groups_));
    for (int gr = 0; gr < groups_; ++gr) {
      auto& ch = chi_[std::size_t(gr)];
      ch.resize(cells);
      std::size_t c = 0;
      for (int k = 0; k < s.n(2); ++k)
        for (int j = 0; j < s.n(1); ++j)
          for (int i = 0; i < s.n(0); ++i, ++c)
            ch[c] = kappa_a(gr, {g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))}) +
                    kappa_s_[std::size_t(gr)];
    }
  }
  // Per axis and pair, plane by plane: the lines of a plane (the block's interior along x
  // for the y and z sweeps; along y, from a copy transposed in x and y, for the x sweep)
  // are the vector lanes of the plane kernel (rows.cpp, compiled for every SIMD target:
  // MC or unlimited slopes, each cell's slopes scaled where a face state would leave the
  // realizable set, the face states, the closure's fluxes and the Lax-Friedrichs flux);
  // then the divergence, axis after axis.
  const int n0 = s.n(0), n1 = s.n(1);
  const int nlmax = std::max(s.ni(0), s.ni(1));
  const int nfmax = std::max({s.ni(0), s.ni(1), s.ni(2)}) + 1;
  thread_local std::vector<double> buf, tr;
  buf.resize(std::size_t(nlmax) * (26 + 4 * std::size_t(nfmax)));
  double* scratch = buf.data();
  double* fh[4];
  for (int q = 0; q < 4; ++q)
    fh[q] = buf.data() + std::size_t(nlmax) * (26 + std::size_t(q) * nfmax);
  for (int a = 0; a < nd; ++a) {
    const int g0 = s.g(a), n = s.ni(a);
    const double idx = 1.0 / g.dx[a];
    const int o1 = a == 0 ? 1 : 0, o2 = a == 2 ? 1 : 2;  // the other two axes (t1 < t2)
    const int nl = s.ni(o1);                             // lanes: the interior along o1
    // Moment q's element (sweep s, plane p, lane l), the plane p along o2: x sweep, from
    // the transposed copy T[k][i][j] (j fastest); y, z: the copy itself.
    long ss = 0, sp = 0;
    const double* base[4];
    const double* chibase = nullptr;
    for (std::size_t pair = 0; pair < npair; ++pair) {
      const int gr = int(pair % std::size_t(groups_));
      if (a == 0) {
        // The x sweep reads a copy transposed in x and y, T[k][i][j] (j fastest): of the
        // interior planes and lanes, every cell along x. Moments in slots 0-3, chi in 4.
        tr.resize(5 * cells);
        auto transpose = [&](const double* p, double* t) {
          for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
            for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
              const double* __restrict row = p + std::size_t(k) * st[2] + std::size_t(j) * n0;
              double* __restrict col = t + std::size_t(k) * st[2] + std::size_t(j);
              for (int i = 0; i < n0; ++i) col[std::size_t(i) * n1] = row[i];
            }
          return t + s.g(1);
        };
        for (int q = 0; q < 4; ++q)
          base[q] = transpose(mom[4 * pair + std::size_t(q)], tr.data() + std::size_t(q) * cells);
        if (thick) chibase = transpose(chi_[std::size_t(gr)].data(), tr.data() + 4 * cells);
        ss = n1;
        sp = st[2];
      } else {
        for (int q = 0; q < 4; ++q) base[q] = mom[4 * pair + std::size_t(q)] + s.g(0);
        if (thick) chibase = chi_[std::size_t(gr)].data() + s.g(0);
        ss = st[a];
        sp = a == 1 ? st[2] : st[1];
      }
      for (int p2 = s.g(o2); p2 < s.g(o2) + s.ni(o2); ++p2) {
        const Plane plane{
            {base[0] + p2 * sp, base[1] + p2 * sp, base[2] + p2 * sp, base[3] + p2 * sp},
            thick ? chibase + p2 * sp : nullptr,
            ss,
            g0,
            n,
            nl,
            a,
            c_,
            g.dx[a],
            closure_,
            mc_,
            scratch};
        plane_fluxes(plane, fh);
        for (int q = 0; q < 4; ++q) {
          double* h = fh[q];
          if (faces != nullptr) {
            // The block's two faces along a, as fluxes (not divided by dx), into the
            // flux register: [f][t2][t1], f = 4 pair + q, t1 = o1 (the lanes) < t2 = o2.
            const std::size_t o =
                (4 * pair + std::size_t(q)) * per_var + std::size_t(p2 - s.g(o2)) * std::size_t(nl);
            for (int l = 0; l < nl; ++l) {
              faces[2 * a][o + std::size_t(l)] = h[l];
              faces[2 * a + 1][o + std::size_t(l)] = h[std::size_t(n) * nl + std::size_t(l)];
            }
          }
          for (std::size_t e = 0; e < std::size_t(n + 1) * nl; ++e) h[e] *= idx;
          // Cell (sweep s, lane l) of plane p2 in the block's own order.
          double* out = rhs.data() + (4 * pair + std::size_t(q)) * cells;
          const long sl = a == 0 ? st[1] : 1;  // the lanes' stride in the block
          const long lane0 = a == 0 ? s.g(1) * st[1] : s.g(0);
          for (int sw = g0; sw < g0 + n; ++sw) {
            const double* hl = h + std::size_t(sw - g0) * nl;
            const double* hr = hl + nl;
            double* o = out + p2 * sp + sw * st[a] + lane0;
            for (int l = 0; l < nl; ++l) o[l * sl] += hl[l] - hr[l];
          }
        }
      }
    }
  }
}

void M1::advance(mesh::Mesh& m, double dt) {
  const auto& s = m.shape();
  const std::size_t nv = ivar_.size(), npair = nv / 4;
  std::vector<std::string> names;
  for (int v : ivar_) names.push_back(m.vars()[std::size_t(v)].name);
  const mesh::VarSet set = m.var_set(names);
  // Shu-Osher forms: U = a base + b (U + dt L(U)) per stage.
  const double a2[2] = {0.0, 0.5}, b2[2] = {1.0, 0.5};
  const double a3[3] = {0.0, 0.75, 1.0 / 3.0}, b3[3] = {1.0, 0.25, 2.0 / 3.0};
  const double* a = stages_ == 3 ? a3 : a2;
  const double* b = stages_ == 3 ? b3 : b2;
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const auto w = m.scratch_view(id, tag);
      // The step's start, row by row.
      for (std::size_t v = 0; v <= nv; ++v) {
        if (v == nv && !couple_) break;
        const int from = v < nv ? ivar_[v] : ietot_, to = v < nv ? ibase_[v] : igas_base_;
        for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
          for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
            const auto ur = u.row(from, j, k);
            const auto wr = w.row(to, j, k);
            for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) wr[i] = ur[i];
          }
      }
    }
  });
  long bad = 0;
  // IMEX: each stage U = a U^n + b (U' + dt L(U') + dt S(U)) with the collisions S implicit
  // (coefficient b dt), so that in a thick medium F takes its diffusion value at every
  // stage (a split step after the transport gives the stages F^n (1 + dt c kappa) instead,
  // and E diffuses too fast: 45 % at dt c kappa = 0.8).
  const bool collide_now = collides();
  // Coarse-fine faces: the fine fluxes replace the coarse one (the flux register, as the
  // hydro's), so that the radiation's energy and momentum change only through the domain's
  // faces (and the collisions).
  const bool amr = m.tree().max_level() > 0;
  auto& fr = m.flux_register();
  for (int stage = 0; stage < stages_; ++stage) {
    m.fill_guards(set);
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const auto u = m.view(id, tag);
        const auto w = m.scratch_view(id, tag);
        {
          TESSERA_REGION("m1/flux");
          double* faces[6] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
          if (amr)
            for (int f = 0; f < 6; ++f) faces[f] = fr.face(m.slot(id), f);
          block_rhs(u, m.geom(id), g_rhs, amr ? faces : nullptr, fr.per_var());
        }
        TESSERA_REGION("m1/update");
        const std::size_t cells = s.cells();
        const long st1 = s.n(0), st2 = long(s.n(0)) * s.n(1);
        // Row by row (x-rows: contiguous in var-major), each zone as before.
        const double as = a[stage], bs = b[stage];
        for (std::size_t v = 0; v < nv; ++v)
          for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
            for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
              const auto ur = u.row(ivar_[v], j, k);
              const auto wr = w.row(ibase_[v], j, k);
              const double* __restrict r =
                  g_rhs.data() + v * cells + std::size_t(j * st1 + k * st2);
              for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
                const double next = ur[i] + dt * r[i];
                ur[i] = stage == 0 ? next : as * wr[i] + bs * next;
              }
            }
      }
    });
    // The stage applied b dt times its flux divergence (U = a U^n + b (U' + dt L(U'))).
    if (amr) fr.correct(m.storage(), m.tree(), m.comm(), b[stage] * dt, ivar_);
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const auto u = m.view(id, tag);
        const auto w = m.scratch_view(id, tag);
        // Back onto the realizable set where the stage left it, counted: a branch-free
        // test of each row first, the zones of a row that fails one by one.
        for (std::size_t p = 0; p < npair; ++p)
          for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
            for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
              const auto er = u.row(ivar_[4 * p], j, k);
              const auto xr = u.row(ivar_[4 * p + 1], j, k);
              const auto yr = u.row(ivar_[4 * p + 2], j, k);
              const auto zr = u.row(ivar_[4 * p + 3], j, k);
              int fails = 0;
              for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
                const double nf = std::sqrt(xr[i] * xr[i] + yr[i] * yr[i] + zr[i] * zr[i]);
                fails += ((er[i] >= 0.0) & (nf <= c_ * er[i])) ? 0 : 1;
              }
              if (fails == 0) continue;
              for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
                double& e = er[i];
                double* f[3] = {&xr[i], &yr[i], &zr[i]};
                const double nf = std::sqrt(*f[0] * *f[0] + *f[1] * *f[1] + *f[2] * *f[2]);
                if (e >= 0.0 && nf <= c_ * e) continue;
                ++bad;
                e = std::max(e, 0.0);
                if (nf > c_ * e)
                  for (double* x : f) *x *= nf > 0.0 ? c_ * e / nf : 0.0;
              }
            }
        if (collide_now) {
          TESSERA_REGION("m1/collide");
          if (couple_ && stage > 0) {
            // The gas is part of the stage's combination (it has no transport term), so
            // that radiation + gas energy is conserved through the Runge-Kutta averages.
            mesh::for_each_zone(s, [&](int i, int j, int k) {
              u(ietot_, i, j, k) =
                  a[stage] * w(igas_base_, i, j, k) + b[stage] * u(ietot_, i, j, k);
            });
            eos_->from_total_energy(u, s, id);
          }
          collide_block(u, m.geom(id), id, b[stage] * dt);
        }
      }
    });
  }
  // Counted over every rank (the same count on each, so a checkpoint keeps the total).
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, m.comm());
  violations_ += bad;
  time_ += dt;
  ++steps_;
}

bool M1::collides() const {
  bool any = couple_ || disk_[3] > 0.0;
  for (int g = 0; g < groups_; ++g)
    any |= kappa_a_[std::size_t(g)] > 0 || kappa_s_[std::size_t(g)] > 0;
  return any;
}

template <class View>
void M1::collide_block(const View& u, const mesh::BlockGeom& geo, int id, double dt) const {
  const auto& s = mesh_->shape();
  const std::size_t npair = ivar_.size() / 4;
  const double b = 1.0 / groups_;
  // Per group: alpha = dt c kappa_a / (1 + dt c kappa_a), the absorption's implicit weight,
  // and the flux's damping 1 / (1 + dt c (kappa_a + kappa_s)); once per zone (the disk
  // makes kappa_a depend on x), shared by the species.
  thread_local std::vector<double> alpha, damp;
  alpha.resize(std::size_t(groups_));
  damp.resize(std::size_t(groups_));
  mesh::for_each_zone(s, [&](int i, int j, int k) {
    const std::array<double, 3> x{geo.x(i - s.g(0)), geo.y(j - s.g(1)), geo.z(k - s.g(2))};
    for (int g = 0; g < groups_; ++g) {
      const double ka = kappa_a(g, x), ks = kappa_s_[std::size_t(g)];
      alpha[std::size_t(g)] = dt * c_ * ka / (1.0 + dt * c_ * ka);
      damp[std::size_t(g)] = 1.0 / (1.0 + dt * c_ * (ka + ks));
    }
    double T = 0, cv = 0;  // the gas's temperature and heat capacity per volume
    if (couple_) {
      T = u(itemp_, i, j, k);
      cv = T > 0.0 ? u(idens_, i, j, k) * u(ieint_, i, j, k) / T : 0.0;
    }
    const double aT4 = arad_ * T * T * T * T, daT4 = 4.0 * arad_ * T * T * T;
    // Sum over pairs of alpha (b a T^4 - E) and of alpha b d(aT^4)/dT: the change of
    // the radiation's energy is A + B dT, the gas's cv dT; their sum is zero.
    double A = 0, B = 0;
    for (std::size_t p = 0; p < npair; ++p) {
      const std::size_t g = p % std::size_t(groups_);
      A += alpha[g] * (b * aT4 - u(ivar_[4 * p], i, j, k));
      B += alpha[g] * b * daT4;
      for (int q = 1; q < 4; ++q) u(ivar_[4 * p + std::size_t(q)], i, j, k) *= damp[g];
    }
    const double dT = couple_ && (B + cv) > 0.0 ? -A / (B + cv) : 0.0;
    double de = 0;
    for (std::size_t p = 0; p < npair; ++p) {
      double& e = u(ivar_[4 * p], i, j, k);
      const double change = alpha[p % std::size_t(groups_)] * (b * (aT4 + daT4 * dT) - e);
      e += change;
      de += change;
    }
    if (couple_) u(ietot_, i, j, k) -= de;
  });
  if (couple_) eos_->from_total_energy(u, s, id);
}

physics::BadZone M1::check(mesh::Mesh& m) const {
  std::vector<int> vars;
  std::vector<std::string> names;
  for (std::size_t v = 0; v < ivar_.size(); ++v) {
    vars.push_back(ivar_[v]);
    names.push_back("m1 " + m.vars()[std::size_t(ivar_[v])].name);
  }
  return physics::first_non_finite(m, vars, names);
}

nlohmann::json M1::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  const auto e = energies();
  (void)comm;
  const long total = violations_;
  nlohmann::json j = {{"groups", groups_},
                      {"species", species_},
                      {"closure", closure_ == Closure::minerbo     ? "minerbo"
                                  : closure_ == Closure::levermore ? "levermore"
                                                                   : "eddington"},
                      {"integrator", stages_ == 3 ? "ssprk3" : "ssprk2"},
                      {"reconstruction", mc_ ? "plm_mc" : "unlimited"},
                      {"speed", c_},
                      {"time", time_},
                      {"steps", steps_},
                      {"realizability_violations", total},
                      // Radiation plus the coupled gas's internal energy (0 uncoupled):
                      // what the transport, the collisions and the flux register conserve.
                      {"energy_start", energy_start_ + gas_start_},
                      {"energy_end", e[0] + e[1]},
                      {"radiation_energy_start", energy_start_},
                      {"radiation_energy_end", e[0]}};
  if (couple_) {
    j["gas_energy_start"] = gas_start_;
    j["gas_energy_end"] = e[1];
    j["energy_total_change"] = (e[0] + e[1] - energy_start_ - gas_start_) /
                               std::max(std::fabs(energy_start_ + gas_start_), 1e-300);
  }
  return j;
}

}  // namespace tessera::m1

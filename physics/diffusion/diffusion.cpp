// Implicit flux-limited diffusion (see diffusion.hpp).
#include "physics/diffusion/diffusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/flux_register.hpp"
#include "mesh/geometry.hpp"
#include "perf/timers.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/field_rules.hpp"
#include "solvers/composite.hpp"

namespace tessera::diffusion {

double lambda(Limiter l, double R) {
  R = std::fabs(R);
  switch (l) {
    case Limiter::none:
      return 1.0 / 3.0;
    case Limiter::levermore_pomraning:
      return (2.0 + R) / (6.0 + 3.0 * R + R * R);
    case Limiter::larsen:
      return 1.0 / std::sqrt(9.0 + R * R);
    case Limiter::minerbo:
      return R < 1.5 ? 2.0 / (3.0 + std::sqrt(9.0 + 12.0 * R * R))
                     : 1.0 / (1.0 + R + std::sqrt(1.0 + 2.0 * R));
  }
  return 1.0 / 3.0;
}

Limiter limiter_named(const std::string& n) {
  if (n == "none") return Limiter::none;
  if (n == "levermore_pomraning") return Limiter::levermore_pomraning;
  if (n == "larsen") return Limiter::larsen;
  if (n == "minerbo") return Limiter::minerbo;
  throw Error("diffusion.limiter: unknown limiter '" + n +
              "' (none, levermore_pomraning, larsen, minerbo)");
}

void Diffusion::declare_params(base::Params& p) {
  p.declare_string_list("diffusion.species", {"erad"},
                        "names of the diffusing variables (at most 4 characters each; plotfile "
                        "names); each an independent variable of unk");
  p.declare_number_list("diffusion.coefficient", {},
                        "constant diffusion coefficient D per species (numbers; the constant-D "
                        "mode); empty: from diffusion.opacity");
  p.declare_number_list("diffusion.opacity", {},
                        "extinction coefficient chi per species (numbers, 1/length: D = c / (3 "
                        "chi)); used when diffusion.coefficient is empty");
  p.declare_real("diffusion.speed", 2.99792458e10, 1e-300, 1e300,
                 "signal speed c of the limiter and of D = c / (3 chi) (cm/s)");
  p.declare_string("diffusion.limiter", "none",
                   {"none", "levermore_pomraning", "larsen", "minerbo"},
                   "flux limiter lambda(R), R = |grad E| / (chi E): none is lambda = 1/3");
  p.declare_int("diffusion.limiter_iterations", 1, 1, 100,
                "solves per step with a limiter: 1 takes lambda(R) from E^n (lagged); more "
                "take it again from the last iterate each time (Picard)");
  p.declare_real("diffusion.theta", 1.0, 0.5, 1.0,
                 "time centring: 1 backward Euler, 0.5 Crank-Nicolson");
  p.declare_real("diffusion.dt_factor", 1.0, 1e-12, 1e12,
                 "time step = dt_factor * (smallest dx)^2 / (largest D)");
  p.declare_string("diffusion.boundary", "zero_flux",
                   {"zero_flux", "dirichlet", "exact", "marshak"},
                   "non-periodic faces: zero flux, Dirichlet with diffusion.boundary_value, or "
                   "Dirichlet with the pulse's exact solution (problem diffusion_pulse)");
  p.declare_string_list("diffusion.boundary_faces", {"xl", "xr", "yl", "yr", "zl", "zr"},
                        "the non-periodic faces where diffusion.boundary applies; the others "
                        "are zero flux");
  p.declare_real("diffusion.boundary_value", 0.0, -1e300, 1e300,
                 "E on the faces with diffusion.boundary = \"dirichlet\"; the incident "
                 "radiation's E (flux c E / 4 inwards) with \"marshak\"");
  p.declare_real("diffusion.initial", 0.0, -1e300, 1e300,
                 "initial E of every species when the problem is not diffusion_pulse");
  p.declare_number_list("diffusion.absorption", {},
                        "absorption coefficient kappa_a per species (numbers, 1/length; empty: no "
                        "coupling): emission and absorption c kappa_a (a T^4 - E) exchange "
                        "energy with the gas (gamma-law EOS; one coupled species: gray; several: "
                        "groups, see diffusion.emission_fraction)");
  p.declare_number_list("diffusion.emission_fraction", {},
                        "fraction of a T^4 each species emits toward (numbers, one per species, "
                        "0 for uncoupled ones, summing to 1; empty: 1 for a single coupled "
                        "species); needed when several species are coupled");
  p.declare_real("diffusion.radiation_constant", 7.5657e-15, 0.0, 1e300,
                 "a of the emission a T^4 (erg cm^-3 K^-4)");
  p.declare_real("diffusion.refine_above", 1e300, -1e300, 1e300,
                 "the unit's refinement criterion: refine a block where a species exceeds "
                 "this (with the Loehner criteria of mesh.refine_var_*)");
  p.declare_real("diffusion.derefine_below", -1e300, -1e300, 1e300,
                 "derefine a block where every species stays below this");
}

physics::Registration Diffusion::registration() {
  return physics::registration_of<Diffusion>(
      "diffusion", physics::UnitRole::operator_unit,
      "implicit flux-limited diffusion of one or more species (Krylov solve every step)",
      {.needs = {{"eos", true, "the gas it exchanges energy with (diffusion.absorption)"}}});
}

Diffusion::Diffusion(const base::Params& p)
    : species_(p.get_string_list("diffusion.species")),
      limiter_(limiter_named(p.get_string("diffusion.limiter"))),
      limiter_iterations_(static_cast<int>(p.get_int("diffusion.limiter_iterations"))),
      theta_(p.get_real("diffusion.theta")),
      dt_factor_(p.get_real("diffusion.dt_factor")),
      speed_(p.get_real("diffusion.speed")),
      initial_(p.get_real("diffusion.initial")),
      boundary_value_(p.get_real("diffusion.boundary_value")),
      boundary_(p.get_string("diffusion.boundary")),
      refine_above_(p.get_real("diffusion.refine_above")),
      derefine_below_(p.get_real("diffusion.derefine_below")),
      pulse_(p.get_string("problem.name") == "diffusion_pulse"),
      sopt_(solvers::Options::from(p)) {
  if (species_.empty() || species_.size() > 10) throw Error("diffusion.species: 1 to 10 names");
  for (const auto& s : species_)
    if (s.empty() || s.size() > 4)
      throw Error("diffusion.species: '" + s + "' must have 1 to 4 characters");
  const auto coef = p.get_number_list("diffusion.coefficient");
  const auto opac = p.get_number_list("diffusion.opacity");
  const std::size_t ns = species_.size();
  if (!coef.empty()) {
    if (coef.size() != ns)
      throw Error(fmt::format("diffusion.coefficient: {} values for {} species", coef.size(), ns));
    for (double d : coef)
      if (!(d > 0.0)) throw Error(fmt::format("diffusion.coefficient: {} is not positive", d));
    d0_ = coef;
  } else {
    if (opac.size() != ns)
      throw Error(
          fmt::format("diffusion.opacity: {} values for {} species (or give diffusion.coefficient)",
                      opac.size(), ns));
    for (double k : opac)
      if (!(k > 0.0)) throw Error(fmt::format("diffusion.opacity: {} is not positive", k));
    for (double k : opac) d0_.push_back(speed_ / (3.0 * k));
  }
  for (double d : d0_) chi_.push_back(speed_ / (3.0 * d));
  kappa_a_ = p.get_number_list("diffusion.absorption");
  arad_ = p.get_real("diffusion.radiation_constant");
  if (!kappa_a_.empty()) {
    if (kappa_a_.size() != ns)
      throw Error(
          fmt::format("diffusion.absorption: {} values for {} species", kappa_a_.size(), ns));
    for (std::size_t c = 0; c < ns; ++c) {
      if (kappa_a_[c] < 0.0)
        throw Error(fmt::format("diffusion.absorption: {} is negative", kappa_a_[c]));
      if (kappa_a_[c] > 0.0) coupled_.push_back(int(c));
    }
  }
  frac_ = p.get_number_list("diffusion.emission_fraction");
  if (coupled_.empty() && !frac_.empty())
    throw Error("diffusion.emission_fraction: no species is coupled (diffusion.absorption)");
  if (!coupled_.empty()) {
    if (frac_.empty()) {
      if (coupled_.size() > 1)
        throw Error(fmt::format(
            "diffusion.emission_fraction: {} species are coupled; give each species' fraction "
            "of a T^4 (0 for uncoupled ones, summing to 1)",
            coupled_.size()));
      frac_.assign(ns, 0.0);
      frac_[std::size_t(coupled_[0])] = 1.0;
    }
    if (frac_.size() != ns)
      throw Error(
          fmt::format("diffusion.emission_fraction: {} values for {} species", frac_.size(), ns));
    double sum = 0.0;
    for (std::size_t c = 0; c < ns; ++c) {
      if (!(frac_[c] >= 0.0 && frac_[c] <= 1.0))
        throw Error(fmt::format("diffusion.emission_fraction: {} is not in [0, 1]", frac_[c]));
      if (frac_[c] > 0.0 && kappa_a_[c] == 0.0)
        throw Error(
            fmt::format("diffusion.emission_fraction: species '{}' emits but does not absorb "
                        "(diffusion.absorption 0)",
                        species_[c]));
      sum += frac_[c];
    }
    if (std::fabs(sum - 1.0) > 1e-12)
      throw Error(
          fmt::format("diffusion.emission_fraction: the fractions sum to {:.6g} (not 1)", sum));
    if (p.get_string("eos.type") != "gamma")
      throw Error("diffusion.absorption: gas coupling needs eos.type = \"gamma\" (c_v = e/T)");
  }
  // The faces where a boundary value holds (zero flux needs none: no face then).
  if (boundary_ != "zero_flux")
    valued_ = physics::faces_named("diffusion.boundary_faces",
                                   p.get_string_list("diffusion.boundary_faces"));
  if (boundary_ == "exact" && !pulse_)
    throw Error("diffusion.boundary = \"exact\": only with problem.name = \"diffusion_pulse\"");
}

physics::Declarations Diffusion::declarations() const {
  // The species: evolved (checkpointed, regridded with MC prolongation: positive and
  // conservative), guard-filled. Scratch: the iterate x, the right-hand side b, the
  // Jacobi diagonal d, a temporary y, the face coefficients per axis, and the Krylov
  // method's work vectors.
  std::vector<mesh::VarInfo> v;
  for (const auto& s : species_)
    v.push_back(
        mesh::VarInfo(s, -1, mesh::VarKind::auxiliary, true, true, name()).checked_by_owner());
  const int ns = static_cast<int>(species_.size());
  auto scratch = [&](const std::string& n) {
    return mesh::VarInfo(n, -1, mesh::VarKind::auxiliary, false, false, name())
        .with_role(mesh::VarRole::scratch)
        .with_prolong(mesh::Prolong::linear);
  };
  for (const char* pre : {"ex", "eb", "ed", "ey", "es", "e0", "fx", "fy", "fz"})
    for (int c = 0; c < ns; ++c) v.push_back(scratch(pre + std::to_string(c)));
  if (coupled_.size() > 1) v.push_back(scratch("eh"));
  for (auto& w : solvers::Krylov::work_variables("k", ns, name())) v.push_back(w);
  return {.variables = std::move(v), .nguard = 1, .flux_vars = ns, .totals = species_};
}

void Diffusion::bind(mesh::Mesh& m, const physics::Services& services,
                     const physics::RunContext& ctx) {
  mesh_ = &m;
  time_ = ctx.start_time;
  steps_ = ctx.start_step;
  restarted_ = ctx.restarted;
  if (m.geometry() == mesh::Geometry::spherical)
    throw Error("diffusion: Cartesian or cylindrical (r-z) geometry");
  const int ns = static_cast<int>(species_.size());
  ivar_.clear();
  for (const auto& s : species_) ivar_.push_back(m.var_index(s));
  auto field = [&](const std::string& pre) {
    solvers::Field f;
    for (int c = 0; c < ns; ++c) f.vars.push_back(m.scratch_index(pre + std::to_string(c)));
    return f;
  };
  x_ = field("ex");
  b_ = field("eb");
  d_ = field("ed");
  y_ = field("ey");
  sig_ = field("es");
  e0_ = field("e0");
  if (coupled_.size() > 1) eh_.vars = {m.scratch_index("eh")};
  if (!coupled_.empty()) {
    for (const char* v : {"dens", "eint", "temp", "etot", "pres"})
      if (m.var_index(v) < 0)
        throw Error(std::string("diffusion.absorption: the gas has no '") + v +
                    "' (driver.operators needs flow or hydro)");
    idens_ = m.var_index("dens");
    ieint_ = m.var_index("eint");
    itemp_ = m.var_index("temp");
    ietot_ = m.var_index("etot");
    ipres_ = m.var_index("pres");
    for (int a = 0; a < 3; ++a) imom_[a] = m.var_index(std::string("mom") + "xyz"[a]);
    eos_ = services.get<eos::EosUnit>("eos");
    if (eos_ == nullptr) throw Error("diffusion.absorption: the gas coupling needs the EOS unit");
  }
  face_ = {field("fx"), field("fy"), field("fz")};
  krylov_ = solvers::Krylov(m, sopt_, "k", ns, "diffusion");
  ndim_eff_ = m.geometry() == mesh::Geometry::cylindrical ? 3 : m.ndim();
  pulse_solution_ = ctx.exact;
  if (pulse_ && pulse_solution_ == nullptr)
    throw Error("diffusion: problem.name = \"diffusion_pulse\" gave no exact solution");
  if (m.geometry() == mesh::Geometry::cylindrical && m.ndim() != 2)
    throw Error("diffusion: cylindrical geometry is r-z (mesh.ndim = 2)");
  // r-z: I + w V^-1 (face fluxes) is symmetric after scaling by the volumes; CG runs in
  // the volume-weighted inner product (the matrix-free backend: hypre's PCG would get the
  // unscaled, non-symmetric rows).
  const bool rz = m.geometry() != mesh::Geometry::cartesian;
  krylov_.weight_by_volume(rz);
  if (sopt_.method == "cg" && rz && sopt_.backend == "hypre")
    throw Error(
        "solver.method = \"cg\" with solver.backend = \"hypre\": the r-z diffusion matrix "
        "is not symmetric (CG in r-z needs the volume-weighted inner product of the "
        "tessera backend); use \"bicgstab\" or \"gmres\"");
  // Several coupled species: the cross term A_s f_s A_r eta / D is not symmetric in (s, r)
  // unless the fractions are equal.
  if (sopt_.method == "cg" && coupled_.size() > 1)
    throw Error(
        "solver.method = \"cg\": several species coupled to the gas make the diffusion "
        "operator non-symmetric (their cross terms); use \"bicgstab\"");
}

double Diffusion::exact(int s, const std::array<double, 3>& x, double t) const {
  // r-z: (r, z) with the pulse on the axis; Cartesian: the first ndim coordinates.
  const int nd = mesh_ ? mesh_->ndim() : 3;
  return pulse_solution_->diffusing(x, t, d0_[std::size_t(s)], nd, ndim_eff_);
}

void Diffusion::initialise(mesh::Mesh& m) {
  // After a restart (the driver's "recompute" path: another EOS, say) the field and the
  // clock are the checkpoint's: nothing to set.
  if (restarted_) return;
  time_ = 0.0;
  const auto& s = m.shape();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      const std::array<double, 3> x{g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))};
      for (std::size_t c = 0; c < species_.size(); ++c)
        u(ivar_[c], i, j, k) = pulse_ ? exact(int(c), x, 0.0) : initial_;
    });
  });
  const auto z = sums();
  integral_start_.assign(z.begin(), z.begin() + long(species_.size()));
  gas_start_ = z.back();
}

double Diffusion::max_dt(mesh::Mesh& m) const {
  const auto dx = m.finest_dx();
  double h = dx[0];
  for (int a = 1; a < m.ndim(); ++a) h = std::min(h, dx[a]);
  return dt_factor_ * h * h / *std::max_element(d0_.begin(), d0_.end());
}

namespace {
/// Which faces of leaf id lie on a non-periodic face of the domain.
std::array<std::array<bool, 2>, 3> physical_faces(const mesh::Mesh& m, int id) {
  std::array<std::array<bool, 2>, 3> f{};
  const auto& n = m.tree().node(id);
  for (int a = 0; a < m.ndim(); ++a) {
    const int nb = m.tree().geometry().nblocks_at(a, n.level);
    f[a][0] = n.pos[a] == 0 && m.boundary(a, 0) != mesh::Boundary::periodic;
    f[a][1] = n.pos[a] == nb - 1 && m.boundary(a, 1) != mesh::Boundary::periodic;
  }
  return f;
}

/// Per zone along axis a of a block: area/volume of its low and high faces (A/V; 1/dx in
/// Cartesian, and along z in r-z).
void face_factors(const mesh::BlockGeom& g, int a, int n, std::vector<double>& lo,
                  std::vector<double>& hi) {
  lo.assign(std::size_t(n), 1.0 / g.dx[a]);
  hi.assign(std::size_t(n), 1.0 / g.dx[a]);
  if (a != 0 || g.geometry == mesh::Geometry::cartesian) return;
  for (int i = 0; i < n; ++i) {
    const double r0 = g.lo[0] + i * g.dx[0], r1 = r0 + g.dx[0];
    const double v = mesh::geometry::shell_volume(g.geometry, r0, r1);
    lo[std::size_t(i)] = mesh::geometry::radial_area(g.geometry, r0) / v;
    hi[std::size_t(i)] = mesh::geometry::radial_area(g.geometry, r1) / v;
  }
}
}  // namespace

void Diffusion::face_coefficients(mesh::Mesh& m) {
  // D on the low face of every zone and on the block's high faces (index g + n, a guard
  // slot of the scratch array), from E^n (guard-filled): the harmonic mean of the two
  // cells' D_s (constant per species: D_s), times 3 lambda(R) with a limiter.
  const auto& s = m.shape();
  const int nd = m.ndim();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const auto w = m.scratch_view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      const auto phys = physical_faces(m, id);
      for (int a = 0; a < nd; ++a) {
        int hi[3] = {s.g(0) + s.ni(0), s.g(1) + s.ni(1), s.g(2) + s.ni(2)};
        hi[a] += 1;
        for (int k = s.g(2); k < (nd > 2 ? hi[2] : s.g(2) + 1); ++k)
          for (int j = s.g(1); j < (nd > 1 ? hi[1] : s.g(1) + 1); ++j)
            for (int i = s.g(0); i < hi[0]; ++i) {
              int im[3] = {i, j, k};
              im[a] -= 1;
              const int I[3] = {i, j, k};
              // A face where a boundary value holds (not zero flux): the limiter sees the
              // gradient to that value over dx/2, as the flux does.
              const bool low = I[a] == s.g(a) && phys[a][0] && valued_[std::size_t(a)][0];
              const bool high =
                  I[a] == s.g(a) + s.ni(a) && phys[a][1] && valued_[std::size_t(a)][1];
              const bool valued = low || high;
              for (std::size_t c = 0; c < species_.size(); ++c) {
                double D = d0_[c];
                if (limiter_ != Limiter::none) {
                  double e1 = u(ivar_[c], i, j, k), e0 = u(ivar_[c], im[0], im[1], im[2]);
                  double h = g.dx[a];
                  if (valued) {
                    std::array<double, 3> x{g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))};
                    x[a] = low ? g.lo[a] : g.lo[a] + s.ni(a) * g.dx[a];
                    const double gv =
                        boundary_ == "exact" ? exact(int(c), x, time_) : boundary_value_;
                    (low ? e0 : e1) = gv;
                    h = 0.5 * g.dx[a];
                  }
                  const double grad = std::fabs(e1 - e0) / h;
                  const double ef = 0.5 * (e0 + e1) * chi_[c];
                  const double R = ef > 0.0
                                       ? grad / ef
                                       : (grad > 0.0 ? std::numeric_limits<double>::max() : 0.0);
                  D *= 3.0 * lambda(limiter_, R);
                }
                w(face_[std::size_t(a)].vars[c], i, j, k) = D;
              }
            }
      }
    }
  });
}

void Diffusion::apply(const solvers::Field& X, const solvers::Field& Y, double wgt,
                      bool with_values, double bt) {
  auto& m = *mesh_;
  m.fill_scratch_guards(mesh::VarSet(X.vars));
  const auto& s = m.shape();
  const int nd = m.ndim(), ns = static_cast<int>(species_.size());
  auto& fr = m.flux_register();
  std::array<std::vector<double>, 3> flo, fhi;  // A/V of each zone's low and high faces
  const int n0 = s.ni(0), g0 = s.g(0);
  std::vector<double> gx(std::size_t(n0 + 1));  // the x-faces of one row
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto w = m.scratch_view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      const auto phys = physical_faces(m, id);
      for (int a = 0; a < nd; ++a) face_factors(g, a, s.ni(a), flo[a], fhi[a]);
      // E on a physical face (Dirichlet) at the face under zone (i, j, k) along a.
      auto face_value = [&](int c, int a, int side, int i, int j, int k) {
        if (!with_values) return 0.0;
        if (boundary_ == "dirichlet" || boundary_ == "marshak") return boundary_value_;
        std::array<double, 3> x{g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))};
        x[a] = side ? g.lo[a] + s.ni(a) * g.dx[a] : g.lo[a];
        return exact(c, x, bt);
      };
      // The flux on the low face of zone (i, j, k) along a (index g + n: the block's high
      // face), physical faces by their condition.
      auto flux = [&](int c, int a, int i, int j, int k) {
        const int I[3] = {i, j, k};
        int im[3] = {i, j, k};
        im[a] -= 1;
        const double D = w(face_[std::size_t(a)].vars[c], i, j, k), dx = g.dx[a];
        const int xv = X.vars[std::size_t(c)];
        const bool low = I[a] == s.g(a) && phys[a][0];
        const bool high = I[a] == s.g(a) + s.ni(a) && phys[a][1];
        if (!low && !high) return -D * (w(xv, i, j, k) - w(xv, im[0], im[1], im[2])) / dx;
        if (!valued_[std::size_t(a)][high]) return 0.0;
        const double gv = face_value(c, a, high, i, j, k);
        const double h = boundary_distance(D, dx);
        return low ? -D * (w(xv, i, j, k) - gv) / h : -D * (gv - w(xv, im[0], im[1], im[2])) / h;
      };
      for (int c = 0; c < ns; ++c) {
        const int xv = X.vars[std::size_t(c)], yv = Y.vars[std::size_t(c)];
        for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
          for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
            const auto x = w.row(xv, j, k);
            const auto y = w.row(yv, j, k);
            // x: the row's faces once each (the ends by their condition), then the
            // divergence.
            {
              const auto f = w.row(face_[0].vars[std::size_t(c)], j, k);
              const double idx = 1.0 / g.dx[0];
              for (int q = 0; q <= n0; ++q) {
                const int i = g0 + q;
                gx[std::size_t(q)] = -f[i] * (x[i] - x[i - 1]) * idx;
              }
              if (phys[0][0]) gx[0] = flux(c, 0, g0, j, k);
              if (phys[0][1]) gx[std::size_t(n0)] = flux(c, 0, g0 + n0, j, k);
              const double* lo = flo[0].data();
              const double* hi = fhi[0].data();
              for (int q = 0; q < n0; ++q)
                y[g0 + q] = x[g0 + q] + wgt * (hi[q] * gx[std::size_t(q) + 1] - lo[q] * gx[q]);
            }
            // y and z: the faces below and above this row.
            for (int a = 1; a < nd; ++a) {
              const int ja = a == 1 ? j + 1 : j, ka = a == 2 ? k + 1 : k;
              const int jb = a == 1 ? j - 1 : j, kb = a == 2 ? k - 1 : k;
              const auto xa = w.row(xv, ja, ka), xb = w.row(xv, jb, kb);
              const auto fl = w.row(face_[std::size_t(a)].vars[std::size_t(c)], j, k);
              const auto fh = w.row(face_[std::size_t(a)].vars[std::size_t(c)], ja, ka);
              const int I = a == 1 ? j : k;
              const bool blo = I == s.g(a) && phys[a][0];
              const bool bhi = I == s.g(a) + s.ni(a) - 1 && phys[a][1];
              const double idx = 1.0 / g.dx[a];
              const double wl = flo[a][std::size_t(I - s.g(a))];
              const double wh = fhi[a][std::size_t(I - s.g(a))];
              if (!blo && !bhi) {
                for (int q = 0; q < n0; ++q) {
                  const int i = g0 + q;
                  const double gl = -fl[i] * (x[i] - xb[i]) * idx;
                  const double gh = -fh[i] * (xa[i] - x[i]) * idx;
                  y[i] += wgt * (wh * gh - wl * gl);
                }
              } else {
                for (int q = 0; q < n0; ++q) {
                  const int i = g0 + q;
                  const double gl = blo ? flux(c, a, i, j, k) : -fl[i] * (x[i] - xb[i]) * idx;
                  const double gh = bhi ? flux(c, a, i, ja, ka) : -fh[i] * (xa[i] - x[i]) * idx;
                  y[i] += wgt * (wh * gh - wl * gl);
                }
              }
            }
            if (sig_on_) {  // the gas coupling's local term
              const auto sg = w.row(sig_.vars[std::size_t(c)], j, k);
              for (int q = 0; q < n0; ++q) y[g0 + q] += sg[g0 + q] * x[g0 + q];
              // Several coupled species: what the others give the gas, re-emitted.
              if (coupled_.size() > 1 && frac_[std::size_t(c)] > 0.0) {
                const auto h = w.row(eh_.vars[0], j, k);
                for (int r : coupled_) {
                  if (r == c) continue;
                  const auto xr = w.row(X.vars[std::size_t(r)], j, k);
                  const double a =
                      acoef_[std::size_t(c)] * frac_[std::size_t(c)] * acoef_[std::size_t(r)];
                  for (int q = 0; q < n0; ++q) y[g0 + q] -= a * h[g0 + q] * xr[g0 + q];
                }
              }
            }
          }
      }
      // The block's boundary-face fluxes into the flux register ([f][t2][t1] per face).
      const int slot = m.slot(id);
      for (int a = 0; a < nd; ++a) {
        const int t1 = a == 0 ? 1 : 0, t2 = a == 2 ? 1 : 2;
        const int n1 = t1 < nd ? s.ni(t1) : 1, n2 = t2 < nd ? s.ni(t2) : 1;
        for (int side = 0; side < 2; ++side) {
          double* F = fr.face(slot, 2 * a + side);
          for (int c = 0; c < ns; ++c)
            for (int q2 = 0; q2 < n2; ++q2)
              for (int q1 = 0; q1 < n1; ++q1) {
                int I[3] = {s.g(0), s.g(1), s.g(2)};
                I[a] += side ? s.ni(a) : 0;
                if (t1 < nd) I[t1] += q1;
                if (t2 < nd) I[t2] += q2;
                F[std::size_t(c) * fr.per_var() + std::size_t(q2) * std::size_t(n1) +
                  std::size_t(q1)] = flux(c, a, I[0], I[1], I[2]);
              }
        }
      }
    }
  });
  if (m.tree().max_level() > 0) fr.correct(m.scratch_storage(), m.tree(), m.comm(), -wgt, Y.vars);
}

void Diffusion::diagonal(double wgt) {
  auto& m = *mesh_;
  const auto& s = m.shape();
  const int nd = m.ndim(), ns = static_cast<int>(species_.size());
  std::array<std::vector<double>, 3> flo, fhi;
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto w = m.scratch_view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      const auto phys = physical_faces(m, id);
      for (int a = 0; a < nd; ++a) face_factors(g, a, s.ni(a), flo[a], fhi[a]);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const int I[3] = {i - s.g(0), j - s.g(1), k - s.g(2)};
        for (int c = 0; c < ns; ++c) {
          double sum = 0.0;
          for (int a = 0; a < nd; ++a) {
            int ip[3] = {i, j, k};
            ip[a] += 1;
            const double dx = g.dx[a];
            const bool low = I[a] == 0 && phys[a][0], high = I[a] == s.ni(a) - 1 && phys[a][1];
            const double Dl = w(face_[std::size_t(a)].vars[c], i, j, k);
            const double Dh = w(face_[std::size_t(a)].vars[c], ip[0], ip[1], ip[2]);
            const double dl =
                low ? (valued_[std::size_t(a)][0] ? boundary_distance(Dl, dx) : 0.0) : dx;
            const double dh =
                high ? (valued_[std::size_t(a)][1] ? boundary_distance(Dh, dx) : 0.0) : dx;
            if (dl > 0.0) sum += flo[a][std::size_t(I[a])] * Dl / dl;
            if (dh > 0.0) sum += fhi[a][std::size_t(I[a])] * Dh / dh;
          }
          w(d_.vars[c], i, j, k) =
              1.0 + wgt * sum + (sig_on_ ? w(sig_.vars[std::size_t(c)], i, j, k) : 0.0);
        }
      });
    }
  });
}

void Diffusion::rows(double wgt, const solvers::RowSink& sink) const {
  // The homogeneous operator of apply() as matrix rows where the neighbour across a block
  // face is a leaf of the same level; rows next to a coarse-fine face are not right here
  // and are replaced by probed ones (solvers::composite_rows).
  auto& m = *mesh_;
  const auto& s = m.shape();
  const auto& t = m.tree();
  const int nd = m.ndim(), ns = static_cast<int>(species_.size());
  std::array<std::vector<double>, 3> flo, fhi;
  std::vector<solvers::Entry> e;
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto w = const_cast<mesh::Mesh&>(m).scratch_view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      const auto& node = t.node(id);
      for (int a = 0; a < nd; ++a) face_factors(g, a, s.ni(a), flo[a], fhi[a]);
      // The neighbour leaf across each face (-1: a physical face).
      int nb[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
      for (int a = 0; a < nd; ++a)
        for (int side = 0; side < 2; ++side) {
          mesh::IVec pos = node.pos;
          pos[a] += side ? 1 : -1;
          nb[a][side] = t.find(node.level, pos);
        }
      const int n[3] = {s.ni(0), s.ni(1), s.ni(2)};
      for (int c = 0; c < ns; ++c)
        mesh::for_each_zone(s, [&](int i, int j, int k) {
          const int I[3] = {i - s.g(0), j - s.g(1), k - s.g(2)};
          const int zone = I[0] + n[0] * (I[1] + n[1] * I[2]);
          e.clear();
          e.push_back({id, zone, c, 1.0 + (sig_on_ ? w(sig_.vars[std::size_t(c)], i, j, k) : 0.0)});
          if (sig_on_ && coupled_.size() > 1 && frac_[std::size_t(c)] > 0.0)
            for (int r : coupled_)
              if (r != c)
                e.push_back({id, zone, r,
                             -acoef_[std::size_t(c)] * frac_[std::size_t(c)] *
                                 acoef_[std::size_t(r)] * w(eh_.vars[0], i, j, k)});
          for (int a = 0; a < nd; ++a) {
            const double dx = g.dx[a];
            int ip[3] = {i, j, k};
            ip[a] += 1;
            const double dlo = w(face_[std::size_t(a)].vars[std::size_t(c)], i, j, k);
            const double dhi = w(face_[std::size_t(a)].vars[std::size_t(c)], ip[0], ip[1], ip[2]);
            for (int side = 0; side < 2; ++side) {
              const double f = side ? fhi[a][std::size_t(I[a])] : flo[a][std::size_t(I[a])];
              const double D = side ? dhi : dlo;
              int J[3] = {I[0], I[1], I[2]};
              J[a] += side ? 1 : -1;
              int other = id;
              if (J[a] < 0 || J[a] >= n[a]) {
                other = nb[a][side];
                if (other < 0) {  // a physical face: its condition, on the diagonal
                  if (valued_[std::size_t(a)][std::size_t(side)])
                    e[0].value += wgt * f * D / boundary_distance(D, dx);
                  continue;
                }
                J[a] = side ? 0 : n[a] - 1;
              }
              const double coef = wgt * f * D / dx;
              e[0].value += coef;
              e.push_back({other, J[0] + n[0] * (J[1] + n[1] * J[2]), c, -coef});
            }
          }
          sink(id, zone, c, e.data(), static_cast<int>(e.size()));
        });
    }
  });
}

void Diffusion::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("diffusion");
  const int ns = static_cast<int>(species_.size());
  // Copies between the species in unk and a scratch field, over the interiors.
  auto copy = [&](bool to_unk, const solvers::Field& f) {
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const auto u = m.view(id, tag);
        const auto w = m.scratch_view(id, tag);
        mesh::for_each_zone(m.shape(), [&](int i, int j, int k) {
          for (int c = 0; c < ns; ++c) {
            if (to_unk)
              u(ivar_[c], i, j, k) = w(f.vars[c], i, j, k);
            else
              w(f.vars[c], i, j, k) = u(ivar_[c], i, j, k);
          }
        });
      }
    });
  };
  const double wi = theta_ * dt, we = -(1.0 - theta_) * dt;
  if (sopt_.method == "cg" && solvers::is_composite(m.tree()))
    throw Error(
        "solver.method = \"cg\": the diffusion operator on an adaptive mesh is not "
        "symmetric (fine/coarse faces); use \"bicgstab\"");
  // E^n kept in e0 (x = E^n is the first guess too). With a limiter and
  // diffusion.limiter_iterations > 1, the face coefficients are taken again from the last
  // iterate and the step solved again (Picard), else once from E^n (lagged).
  const int passes = limiter_ == Limiter::none ? 1 : limiter_iterations_;
  // The operator is the same as last step's when its coefficients are (constant D, no
  // coupling) and so is the step: hypre then keeps its matrix and setup (the tree is
  // checked there). Its key: the bits of theta dt; 0 (never the same) otherwise.
  std::uint64_t operator_key = 0;
  if (limiter_ == Limiter::none && coupled_.empty()) std::memcpy(&operator_key, &wi, sizeof wi);
  for (int pass = 0; pass < passes; ++pass) {
    if (pass > 0) copy(true, x_);  // the iterate into unk, for its guard fill
    m.fill_guards(m.var_set(species_));
    face_coefficients(m);
    if (pass == 0) {
      copy(false, e0_);
      copy(false, x_);
    }
    // b = E^n + (1 - theta) dt L E^n (boundary values at t^n) - theta dt L_g(t^{n+1}), the
    // last the boundary values' part of the implicit operator (A x = A_0 x + A(0)).
    if (theta_ < 1.0)
      apply(e0_, b_, we, true, time_);
    else
      krylov_.axpby(1.0, e0_, 0.0, b_);
    if (!coupled_.empty()) couple_before(m, dt);
    if (boundary_ != "zero_flux") {
      krylov_.set(0.0, d_);  // d = 0 (the diagonal comes after)
      apply(d_, y_, wi, true, time_ + dt);
      krylov_.axpby(-1.0, y_, 1.0, b_);
    }
    diagonal(wi);
    krylov_.solve(
        [&](const solvers::Field& X, const solvers::Field& Y) { apply(X, Y, wi, false, 0.0); }, b_,
        x_, d_, [&](const solvers::RowSink& sink) { rows(wi, sink); }, operator_key);
  }
  copy(true, x_);
  if (!coupled_.empty()) couple_after(m, dt);
  time_ += dt;
  ++steps_;
}

bool Diffusion::tag_refinement(mesh::Mesh& m, std::vector<mesh::Flag>& votes) const {
  if (refine_above_ >= 1e300 && derefine_below_ <= -1e300) return false;  // no criterion
  physics::band_votes(m, ivar_, refine_above_, derefine_below_, votes);
  return true;
}

physics::BadZone Diffusion::check(mesh::Mesh& m) const {
  return physics::first_non_finite(m, ivar_, species_);
}

std::vector<double> Diffusion::sums() const {
  // Per species the volume integral of E, then the L1 error against the pulse (0 when
  // the problem is not the pulse), then the coupled gas's internal energy, leaf-ordered.
  auto& m = *mesh_;
  const auto& s = m.shape();
  const int ns = static_cast<int>(species_.size());
  return m.leaf_sums(2 * ns + 1, [&](int id, double* out) {
    const mesh::BlockGeom g = m.geom(id);
    m.with_layout([&](auto tag) {
      const auto u = m.view(id, tag);
      double gas = 0.0;  // the coupled gas's internal energy, from its conserved variables
      if (!coupled_.empty())
        mesh::for_each_zone(s, [&](int i, int j, int k) {
          double ke = 0.0;
          for (int a = 0; a < 3; ++a) ke += u(imom_[a], i, j, k) * u(imom_[a], i, j, k);
          gas += (u(ietot_, i, j, k) - 0.5 * ke / u(idens_, i, j, k)) * g.volume(i - s.g(0));
        });
      out[2 * ns] = gas;
      for (int c = 0; c < ns; ++c) {
        double tot = 0.0, err = 0.0;
        mesh::for_each_zone(s, [&](int i, int j, int k) {
          const double v = g.volume(i - s.g(0));
          const double e = u(ivar_[std::size_t(c)], i, j, k);
          tot += e * v;
          if (pulse_)
            err += std::fabs(e -
                             exact(c, {g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))}, time_)) *
                   v;
        });
        out[c] = tot;
        out[ns + c] = err;
      }
    });
  });
}

void Diffusion::total_densities(const mesh::BlockView<mesh::Layout::var_major>& u, int i, int j,
                                int k, double* out) const {
  for (std::size_t c = 0; c < species_.size(); ++c) out[c] = u(ivar_[c], i, j, k);
}

void Diffusion::total_densities(const mesh::BlockView<mesh::Layout::zone_major>& u, int i, int j,
                                int k, double* out) const {
  for (std::size_t c = 0; c < species_.size(); ++c) out[c] = u(ivar_[c], i, j, k);
}

physics::FileRecords Diffusion::file_records() const {
  std::vector<std::pair<std::string, double>> v;
  for (std::size_t c = 0; c < species_.size(); ++c)
    v.emplace_back("integral_start_" + species_[c], integral_start_[c]);
  if (!coupled_.empty()) v.emplace_back("gas_energy_start", gas_start_);
  return {.scalars = std::move(v)};
}

void Diffusion::restore(mesh::Mesh& /*m*/, const physics::CheckpointInfo& c) {
  const auto z = sums();
  integral_start_.assign(species_.size(), 0.0);
  for (std::size_t q = 0; q < species_.size(); ++q) {
    const auto v = c.real_scalar("diffusion_integral_start_" + species_[q]);
    integral_start_[q] = v ? *v : z[q];
  }
  const auto g = c.real_scalar("diffusion_gas_energy_start");
  gas_start_ = g ? *g : z.back();
}

nlohmann::json Diffusion::diagnostics(mesh::Mesh& /*m*/, physics::Diagnostic /*what*/) const {
  const auto z = sums();
  const std::size_t ns = species_.size();
  nlohmann::json j;
  j["species"] = species_;
  j["coefficient"] = d0_;
  j["limiter"] = [&] {
    switch (limiter_) {
      case Limiter::levermore_pomraning:
        return "levermore_pomraning";
      case Limiter::larsen:
        return "larsen";
      case Limiter::minerbo:
        return "minerbo";
      default:
        return "none";
    }
  }();
  j["theta"] = theta_;
  j["boundary"] = boundary_;
  j["time"] = time_;
  j["steps"] = steps_;
  j["integral_start"] = integral_start_;
  j["integral_end"] = std::vector<double>(z.begin(), z.begin() + long(ns));
  if (pulse_) j["l1_error"] = std::vector<double>(z.begin() + long(ns), z.begin() + long(2 * ns));
  if (!coupled_.empty()) {
    // The coupled species and the gas's internal energy: conserved in a closed (zero-flux)
    // box without hydro; faces that let radiation in or out and hydro's work on the gas
    // move it too.
    double e0 = gas_start_, e1 = z.back();
    std::vector<std::string> names;
    for (int c : coupled_) {
      e0 += integral_start_[std::size_t(c)];
      e1 += z[std::size_t(c)];
      names.push_back(species_[std::size_t(c)]);
    }
    j["gas_energy_start"] = gas_start_;
    j["gas_energy_end"] = z.back();
    j["energy_total_change"] = e0 != 0.0 ? (e1 - e0) / e0 : 0.0;
    // One name (the gray case, as before) or the list of coupled species.
    if (names.size() == 1)
      j["coupled_species"] = names[0];
    else
      j["coupled_species"] = names;
    j["emission_fraction"] = frac_;
  }
  const auto& st = krylov_.stats();
  const auto& o = krylov_.options();
  j["solver"] = {{"backend", o.backend},
                 {"method", o.method},
                 {"preconditioner", o.preconditioner},
                 {"rtol", o.rtol},
                 {"solves", st.solves},
                 {"iterations_mean", st.solves ? double(st.iterations) / double(st.solves) : 0.0},
                 {"iterations_max", st.iterations_max},
                 {"residual_max", st.residual_max},
                 {"seconds", st.seconds}};
  return j;
}

}  // namespace tessera::diffusion

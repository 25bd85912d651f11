// The example unit: explicit diffusion of a passive scalar (see scalar.hpp).
#include "physics/scalar/scalar.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/field_rules.hpp"

namespace tessera::scalar {

void Scalar::declare_params(base::Params& p) {
  p.declare_real("scalar.diffusivity", 1.0, 0.0, 1e300, "diffusivity D (length^2 / time)");
  p.declare_real("scalar.cfl", 0.4, 1e-6, 0.5,
                 "time step as a fraction of the explicit limit dx^2 / (2 D ndim) (<= 0.5)");
  p.declare_real("scalar.amplitude", 1.0, -1e300, 1e300, "initial Gaussian's peak value A");
  p.declare_real("scalar.sigma0", 0.05, 1e-300, 1e300, "initial Gaussian's width s0");
  p.declare_real("scalar.x0", 0.5, -1e300, 1e300, "initial Gaussian's centre x");
  p.declare_real("scalar.y0", 0.5, -1e300, 1e300, "initial Gaussian's centre y");
  p.declare_real("scalar.z0", 0.5, -1e300, 1e300, "initial Gaussian's centre z");
  p.declare_real("scalar.refine_above", 1e300, -1e300, 1e300,
                 "the unit's refinement criterion: refine a block where scal exceeds this");
  p.declare_real("scalar.derefine_below", -1e300, -1e300, 1e300,
                 "derefine a block where scal stays below this everywhere");
  p.declare_string_list("scalar.boundary", {},
                        "faces (xl, xr, yl, yr, zl, zr) where scal takes the exact solution "
                        "(Dirichlet); the others keep mesh.*_boundary_type");
}

physics::Registration Scalar::registration() {
  return physics::registration_of<Scalar>(
      "scalar", physics::UnitRole::operator_unit,
      "the example unit: explicit diffusion of a passive scalar (docs/writing-a-unit.md)");
}

Scalar::Scalar(const base::Params& p)
    : diffusivity_(p.get_real("scalar.diffusivity")),
      cfl_(p.get_real("scalar.cfl")),
      amplitude_(p.get_real("scalar.amplitude")),
      sigma0_(p.get_real("scalar.sigma0")),
      centre_{p.get_real("scalar.x0"), p.get_real("scalar.y0"), p.get_real("scalar.z0")},
      refine_above_(p.get_real("scalar.refine_above")),
      derefine_below_(p.get_real("scalar.derefine_below")),
      dirichlet_faces_(p.get_string_list("scalar.boundary")) {
  physics::faces_named("scalar.boundary", dirichlet_faces_);  // refuses unknown names
}

physics::Declarations Scalar::declarations() const {
  // scal: evolved, in checkpoints, in the whole-unk fills (marking, regrid) and filled alone
  // by the unit's own step; prolonged linearly (a smooth field). slap: scratch.
  return {.variables = {mesh::VarInfo("scal", -1, mesh::VarKind::auxiliary, true, true, name())
                            .with_prolong(mesh::Prolong::linear)
                            .checked_by_owner(),
                        mesh::VarInfo("slap", -1, mesh::VarKind::auxiliary, false, false, name())
                            .with_role(mesh::VarRole::scratch)},
          .nguard = 1};
}

void Scalar::bind(mesh::Mesh& m, const physics::Services&, const physics::RunContext& ctx) {
  // The clock the run starts from: a restart's checkpoint time (the exact solution's t).
  time_ = ctx.start_time;
  steps_ = ctx.start_step;
  restarted_ = ctx.restarted;
  if (m.geometry() != mesh::Geometry::cartesian)
    throw Error("scalar: Cartesian geometry only (mesh.geometry = \"cartesian\")");
  mesh_ = &m;
  iscal_ = m.var_index("scal");
  ilap_ = m.scratch_index("slap");
  // Dirichlet from a function: the exact solution at the unit's clock on the faces named.
  for (const auto& f : dirichlet_faces_) {
    const int axis = f[0] - 'x', side = f[1] == 'r';
    if (axis >= m.ndim())
      throw Error("scalar.boundary: face '" + f + "' of a " + std::to_string(m.ndim()) + "-D mesh");
    m.set_var_boundary(iscal_, axis, side, mesh::dirichlet([this](const std::array<double, 3>& x) {
                         return exact(x, time_);
                       }));
  }
}

double Scalar::exact(const std::array<double, 3>& x, double t) const {
  const double s2 = sigma0_ * sigma0_ + 2.0 * diffusivity_ * t;
  const int nd = mesh_ ? mesh_->ndim() : 3;
  double r2 = 0.0;
  for (int a = 0; a < nd; ++a) r2 += (x[a] - centre_[a]) * (x[a] - centre_[a]);
  return amplitude_ * std::pow(sigma0_ * sigma0_ / s2, 0.5 * nd) * std::exp(-0.5 * r2 / s2);
}

void Scalar::initialise(mesh::Mesh& m) {
  // After a restart (the driver's "recompute" path: another EOS, say) the field and the
  // clock are the checkpoint's: nothing to set.
  if (restarted_) return;
  time_ = 0.0;
  const auto& s = m.shape();
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      u(iscal_, i, j, k) = exact({g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))}, 0.0);
    });
  });
  integral_start_ = sums()[1];
}

physics::FileRecords Scalar::file_records() const {
  return {.scalars = {{"integral_start", integral_start_}}};
}

void Scalar::restore(mesh::Mesh& /*m*/, const physics::CheckpointInfo& c) {
  // A checkpoint without it (written before the unit kept it) starts the count afresh.
  if (const auto v = c.real_scalar("scalar_integral_start"))
    integral_start_ = *v;
  else
    integral_start_ = sums()[1];
}

double Scalar::max_dt(mesh::Mesh& m) const {
  if (diffusivity_ == 0.0) return std::numeric_limits<double>::max();
  const auto dx = m.finest_dx();
  double inv = 0.0;
  for (int a = 0; a < m.ndim(); ++a) inv += 1.0 / (dx[a] * dx[a]);
  return cfl_ / (diffusivity_ * inv);
}

void Scalar::advance(mesh::Mesh& m, double dt) {
  TESSERA_REGION("scalar");
  // Step 1: the guard zones of scal alone (the unit's own fill; its Dirichlet faces take
  // the exact solution at t^n).
  m.fill_guards(m.var_set({"scal"}));
  const auto& s = m.shape();
  const int nd = m.ndim();
  // Step 2: the Laplacian into the scratch variable, then the update (so no zone reads a
  // neighbour already updated).
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const auto w = m.scratch_view(id, tag);
      const mesh::BlockGeom g = m.geom(id);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double c = u(iscal_, i, j, k);
        double lap =
            (u(iscal_, i - 1, j, k) - 2.0 * c + u(iscal_, i + 1, j, k)) / (g.dx[0] * g.dx[0]);
        if (nd > 1)
          lap += (u(iscal_, i, j - 1, k) - 2.0 * c + u(iscal_, i, j + 1, k)) / (g.dx[1] * g.dx[1]);
        if (nd > 2)
          lap += (u(iscal_, i, j, k - 1) - 2.0 * c + u(iscal_, i, j, k + 1)) / (g.dx[2] * g.dx[2]);
        w(ilap_, i, j, k) = lap;
      });
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        u(iscal_, i, j, k) += diffusivity_ * dt * w(ilap_, i, j, k);
      });
    }
  });
  time_ += dt;
  ++steps_;
}

bool Scalar::tag_refinement(mesh::Mesh& m, std::vector<mesh::Flag>& votes) const {
  if (refine_above_ >= 1e300 && derefine_below_ <= -1e300) return false;  // no criterion
  physics::band_votes(m, std::vector<int>{iscal_}, refine_above_, derefine_below_, votes);
  return true;
}

physics::BadZone Scalar::check(mesh::Mesh& m) const {
  return physics::first_non_finite(m, std::vector<int>{iscal_}, {"scalar"});
}

std::array<double, 3> Scalar::sums() const {
  // L1 error against the exact solution at the unit's clock, the integral of scal and the
  // volume, leaf-ordered (the same bits on any rank count).
  auto& m = *mesh_;
  const auto& s = m.shape();
  const auto sums = m.leaf_sums(3, [&](int id, double* out) {
    const mesh::BlockGeom g = m.geom(id);
    double dv = 1.0;
    for (int a = 0; a < m.ndim(); ++a) dv *= g.dx[a];
    double err = 0.0, tot = 0.0;
    m.with_layout([&](auto tag) {
      const auto u = m.view(id, tag);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double v = u(iscal_, i, j, k);
        err += std::fabs(v - exact({g.x(i - s.g(0)), g.y(j - s.g(1)), g.z(k - s.g(2))}, time_));
        tot += v;
      });
    });
    out[0] = err * dv;
    out[1] = tot * dv;
    out[2] = dv * static_cast<double>(s.interior_cells());
  });
  return {sums[0], sums[1], sums[2]};
}

nlohmann::json Scalar::diagnostics(mesh::Mesh& /*m*/, physics::Diagnostic /*what*/) const {
  const auto [err, integral, volume] = sums();
  return {{"time", time_},
          {"steps", steps_},
          {"l1_error", err / volume},
          {"integral", integral},
          {"integral_start", integral_start_},
          {"dirichlet_faces", dirichlet_faces_}};
}

}  // namespace tessera::scalar

// The prescribed flow (see flow.hpp).
#include "physics/flow/flow.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.hpp"
#include "base/params.hpp"

namespace tessera::flow {

void Flow::declare_params(base::Params& p) {
  p.declare_string("flow.field", "problem",
                   {"problem", "uniform", "deforming_bubble", "single_vortex", "enright"},
                   "the prescribed velocity (problem: the problem's cell values; the others "
                   "analytic, verification.md §F)");
  p.declare_real("flow.period", 2.0, 1e-300, 1e300,
                 "T of single_vortex and enright: the field is multiplied by cos(pi t / T), "
                 "so the flow reverses at T / 2 and the shape returns at t = T");
  p.declare_real("flow.velx", 1.0, -1e300, 1e300, "x velocity of flow.field = uniform");
  p.declare_real("flow.vely", 0.0, -1e300, 1e300, "y velocity of flow.field = uniform");
  p.declare_real("flow.velz", 0.0, -1e300, 1e300, "z velocity of flow.field = uniform");
}

physics::Registration Flow::registration() {
  physics::Requirements req;
  req.excludes = {"hydro"};
  // The fluid it moves has an EOS state (pres, temp, ... in every output), as hydro's.
  req.needs = {{"eos", false, "the EOS state of the fluid it moves, in every output"},
               {"composition", true, "the species of that fluid"}};
  return physics::registration_of<Flow>("flow", physics::UnitRole::operator_unit,
                                        "a prescribed velocity", req, {"velocity"});
}

Flow::Flow(const base::Params& p)
    : field_name_(p.get_string("flow.field")),
      uniform_{p.get_real("flow.velx"), p.get_real("flow.vely"), p.get_real("flow.velz")},
      period_(p.get_real("flow.period")) {
  if (field_name_ == "uniform") field_ = Field::uniform;
  if (field_name_ == "deforming_bubble") field_ = Field::deforming_bubble;
  if (field_name_ == "single_vortex") field_ = Field::single_vortex;
  if (field_name_ == "enright") field_ = Field::enright;
}

void Flow::bind(mesh::Mesh& m, const physics::Services&, const physics::RunContext& ctx) {
  ndim_ = m.ndim();
  time_ = ctx.start_time;
  if (m.geometry() != mesh::Geometry::cartesian && analytic())
    throw Error("flow.field = \"" + field_name_ + "\": Cartesian geometry only");
  if (field_ == Field::single_vortex && ndim_ != 2)
    throw Error(
        "flow.field = \"single_vortex\" is a 2-D field (mesh.ndim = 2); the 3-D "
        "deformation is flow.field = \"enright\"");
  if (field_ == Field::deforming_bubble && ndim_ == 1)
    throw Error("flow.field = \"deforming_bubble\" needs mesh.ndim = 2 or 3");
  if (field_ == Field::enright && ndim_ != 3)
    throw Error("flow.field = \"enright\" is a 3-D field (mesh.ndim = 3)");
}

void Flow::block_velocity(const mesh::BlockGeom& g, const mesh::BlockShape& s, double t,
                          std::vector<double>& v) const {
  constexpr double pi = std::numbers::pi;
  const int nx = s.ni(0), ny = s.ni(1), nz = s.ni(2);
  const std::size_t n = s.interior_cells();
  v.assign(3 * n, 0.0);
  if (field_ == Field::uniform) {
    for (int a = 0; a < ndim_; ++a)
      std::fill(v.begin() + long(a * n), v.begin() + long((a + 1) * n), uniform_[std::size_t(a)]);
    return;
  }
  if (field_ == Field::problem)
    throw Error("flow: block_velocity of flow.field = \"problem\" (the problem's cell values)");
  // Per axis: s1 = sin^2(pi x), s2 = sin(2 pi x) at the zone centres.
  std::vector<double> f[3][2];
  const int nn[3] = {nx, ny, nz};
  for (int a = 0; a < 3; ++a) {
    f[a][0].resize(std::size_t(nn[a]));
    f[a][1].resize(std::size_t(nn[a]));
    for (int i = 0; i < nn[a]; ++i) {
      const double x = g.lo[std::size_t(a)] + (i + 0.5) * g.dx[std::size_t(a)];
      const double sn = std::sin(pi * x);
      f[a][0][std::size_t(i)] = sn * sn;
      f[a][1][std::size_t(i)] = std::sin(2 * pi * x);
    }
  }
  const double c = (field_ == Field::single_vortex || field_ == Field::enright)
                       ? std::cos(pi * t / period_)
                       : 1.0;
  std::size_t z = 0;
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i, ++z) {
        const double sx1 = f[0][0][std::size_t(i)], sx2 = f[0][1][std::size_t(i)];
        const double sy1 = f[1][0][std::size_t(j)], sy2 = f[1][1][std::size_t(j)];
        const double sz1 = f[2][0][std::size_t(k)], sz2 = f[2][1][std::size_t(k)];
        switch (field_) {
          case Field::deforming_bubble:
            v[z] = sx1 * sy2;
            v[n + z] = -sy1 * sx2;
            break;
          case Field::single_vortex:
            v[z] = -sx1 * sy2 * c;
            v[n + z] = sy1 * sx2 * c;
            break;
          case Field::enright:
            v[z] = 2 * sx1 * sy2 * sz2 * c;
            v[n + z] = -sx2 * sy1 * sz2 * c;
            v[2 * n + z] = -sx2 * sy2 * sz1 * c;
            break;
          default:
            break;
        }
      }
}

void Flow::write_momenta(mesh::Mesh& m, double t) const {
  const int idens = m.var_index("dens"), ietot = m.var_index("etot");
  const int imom[3] = {m.var_index("momx"), m.var_index("momy"), m.var_index("momz")};
  const auto& s = m.shape();
  const std::size_t n = s.interior_cells();
  std::vector<double> v;
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    block_velocity(g, s, t, v);
    std::size_t z = 0;
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      const double rho = u(idens, i, j, k);
      double ke_old = 0, ke_new = 0;
      for (int a = 0; a < 3; ++a) {
        const double mo = u(imom[a], i, j, k), va = v[std::size_t(a) * n + z];
        ke_old += mo * mo;
        ke_new += rho * rho * va * va;
        u(imom[a], i, j, k) = rho * va;
      }
      u(ietot, i, j, k) += 0.5 * (ke_new - ke_old) / rho;
      ++z;
    });
  });
}

void Flow::initialise(mesh::Mesh& m) {
  if (analytic()) write_momenta(m, time_);
}

void Flow::advance(mesh::Mesh& m, double dt) {
  time_ += dt;
  // A steady field's momenta are already there; a changing one's guard zones are stale.
  if (field_ == Field::single_vortex || field_ == Field::enright) {
    write_momenta(m, time_);
    m.invalidate_guards();
  }
}

nlohmann::json Flow::diagnostics(mesh::Mesh& /*m*/, physics::Diagnostic /*what*/) const {
  nlohmann::json j = {{"field", field_name_}};
  if (field_ == Field::single_vortex || field_ == Field::enright) j["period"] = period_;
  return j;
}

}  // namespace tessera::flow

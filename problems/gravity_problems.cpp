// The homogeneous Maclaurin spheroid (verification.md §H; FLASH's Maclaurin set-up):
// density maclaurin.density inside R^2/a^2 + z^2/c^2 < 1, c = a sqrt(1 - e^2), with its
// symmetry axis along z (r-z cylindrical: along y; 3-D: along z), maclaurin.rho_ambient
// outside, one pressure everywhere, at rest. Zones cut by the surface get the volume
// average of the density from nsubzones^ndim sub-samples (weighted by r in cylindrical
// geometry, by r^2 in spherical); a zone wholly inside or outside (the exact minimum and
// maximum of the ellipsoid's quadratic over the zone's box decide) is set directly.
// e = 0 is the uniform sphere (the only shape 1-D spherical geometry holds).
#include "problems/gravity_problems.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.hpp"
#include "base/params.hpp"
#include "physics/hydro/hydro.hpp"
#include "problems/eos_state.hpp"

namespace tessera::problems {

namespace {

class Maclaurin final : public ProblemBase<Maclaurin> {
 public:
  Maclaurin(const base::Params& p, const eos::Eos& eos)
      : rho_(p.get_real("maclaurin.density")),
        amb_(p.get_real("maclaurin.rho_ambient")),
        a_(p.get_real("maclaurin.a1")),
        nsub_(int(p.get_int("maclaurin.nsubzones"))),
        ndim_(int(p.get_int("mesh.ndim"))),
        cyl_(p.get_string("mesh.geometry") == "cylindrical"),
        sph_(p.get_string("mesh.geometry") == "spherical") {
    const double e = p.get_real("maclaurin.eccentricity");
    c_ = a_ * std::sqrt(1.0 - e * e);
    ctr_[0] = p.get_real("maclaurin.xctr");
    ctr_[1] = p.get_real("maclaurin.yctr");
    ctr_[2] = p.get_real("maclaurin.zctr");
    if (cyl_ || sph_) ctr_[0] = 0.0;  // on the axis / at the origin
    if ((ndim_ == 1 && !sph_) || (ndim_ == 2 && !cyl_))
      throw Error(
          "maclaurin: needs 3-D cartesian, 2-D cylindrical or 1-D spherical geometry (a "
          "sphere)");
    if (sph_ && e != 0.0)
      throw Error("maclaurin: 1-D spherical geometry holds a sphere only (e = 0)");
    const double pres = p.get_real("maclaurin.pressure");
    rhoe_in_ = rhoe_of(eos, rho_, pres);
    rhoe_out_ = rhoe_of(eos, amb_, pres);
  }
  std::string name() const override { return "maclaurin"; }

  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    // Semi-axes per axis of the mesh: (r, z) in r-z, (x, y, z) in 3-D.
    const double ax[3] = {a_, cyl_ ? c_ : a_, c_};
    for (int k = 0; k < s.ni(2); ++k)
      for (int j = 0; j < s.ni(1); ++j)
        for (int i = 0; i < s.ni(0); ++i) {
          const int idx[3] = {i, j, k};
          double qmin = 0.0, qmax = 0.0;
          for (int a = 0; a < ndim_; ++a) {
            const double lo = g.lo[a] + idx[a] * g.dx[a] - ctr_[a], hi = lo + g.dx[a];
            const double near = std::clamp(0.0, lo, hi), far = std::max(lo * lo, hi * hi);
            qmin += near * near / (ax[a] * ax[a]);
            qmax += far / (ax[a] * ax[a]);
          }
          double f = qmax <= 1.0 ? 1.0 : 0.0;  // fraction of the zone's volume inside
          if (qmin < 1.0 && qmax > 1.0) {
            double in = 0.0, all = 0.0;
            const int n1 = nsub_, n2 = ndim_ > 1 ? nsub_ : 1, n3 = ndim_ > 2 ? nsub_ : 1;
            for (int c = 0; c < n3; ++c)
              for (int b = 0; b < n2; ++b)
                for (int a = 0; a < n1; ++a) {
                  const double sub[3] = {(a + 0.5) / n1, (b + 0.5) / n2, (c + 0.5) / n3};
                  double q = 0.0, x0 = 0.0;
                  for (int d = 0; d < ndim_; ++d) {
                    const double x = g.lo[d] + (idx[d] + sub[d]) * g.dx[d];
                    if (d == 0) x0 = x;
                    q += (x - ctr_[d]) * (x - ctr_[d]) / (ax[d] * ax[d]);
                  }
                  const double w = cyl_ ? x0 : (sph_ ? x0 * x0 : 1.0);
                  all += w;
                  if (q < 1.0) in += w;
                }
            f = in / all;
          }
          const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
          u(hydro::DENS, I, J, K) = f * rho_ + (1.0 - f) * amb_;
          u(hydro::MOMX, I, J, K) = 0.0;
          u(hydro::MOMY, I, J, K) = 0.0;
          u(hydro::MOMZ, I, J, K) = 0.0;
          u(hydro::ETOT, I, J, K) = f * rhoe_in_ + (1.0 - f) * rhoe_out_;
        }
  }

 private:
  double rho_, amb_, a_, c_ = 0.0;
  int nsub_, ndim_;
  bool cyl_, sph_;
  double ctr_[3];
  double rhoe_in_ = 0.0, rhoe_out_ = 0.0;
};

}  // namespace

void declare_gravity_problem_params(base::Params& p) {
  p.declare_real("maclaurin.density", 1.0, 1e-300, 1e300, "density of the spheroid (g/cm^3)");
  p.declare_real("maclaurin.rho_ambient", 1e-8, 1e-300, 1e300,
                 "density outside the spheroid (its mass is not in the exact potential)");
  p.declare_real("maclaurin.pressure", 1.0, 1e-300, 1e300,
                 "pressure everywhere (erg/cm^3; the spheroid is not in equilibrium)");
  p.declare_real("maclaurin.a1", 0.25, 1e-300, 1e300, "equatorial semi-axis a (cm)");
  p.declare_real("maclaurin.eccentricity", 0.5, 0.0, 0.999,
                 "eccentricity e = sqrt(1 - c^2/a^2) (0: a uniform sphere)");
  p.declare_real("maclaurin.xctr", 0.5, -1e300, 1e300, "centre x (3-D; on the axis in r-z)");
  p.declare_real("maclaurin.yctr", 0.5, -1e300, 1e300, "centre y (r-z: z of the centre)");
  p.declare_real("maclaurin.zctr", 0.5, -1e300, 1e300, "centre z (3-D)");
  p.declare_int("maclaurin.nsubzones", 8, 1, 64,
                "sub-zones per axis for the density average of zones cut by the surface");
}

std::unique_ptr<Problem> make_maclaurin(const base::Params& p, const eos::Eos& eos) {
  return std::make_unique<Maclaurin>(p, eos);
}

}  // namespace tessera::problems

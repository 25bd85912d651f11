// A planar deflagration front in uniform C/O fuel at rest, as Flash-X's Flame1StageNoise
// set-up (one dimension, no noise): the progress variable has the model's profile
// phi = 0.5 [1 - tanh((x - x0) / (0.5 b Delta))] (Delta the zone width, b = 3.2) about
// flame_1d.position, burned (phi = 1) on the low-x side. The burned side is either
//   - "ash": the fuel carbon turned to ash (burn.fuel -> burn.ash) in proportion to phi,
//     at the pressure of the fuel and the enthalpy h_u + phi q_fuel X_fuel (an isobaric
//     burn, so the initial state is in pressure equilibrium and at rest), or
//   - "fuel": every zone holds the fuel state (a pure advection-diffusion-reaction test:
//     no energy release, the front runs through matter at rest);
// "auto" picks "ash" when driver.operators has "burn".
#include "problems/flame_problems.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "physics/composition/nuclides.hpp"
#include "physics/eos/eos.hpp"
#include "physics/flame/adr.hpp"
#include "physics/hydro/hydro.hpp"
#include "problems/eos_state.hpp"

namespace tessera::problems {

namespace {

using hydro::DENS;
using hydro::ETOT;
using hydro::MOMX;
using hydro::MOMY;
using hydro::MOMZ;

/// One EOS state of a mixture (abar, zbar): dens and the mode's variable given.
ZoneState eos_at(const eos::Eos& eos, eos::Mode mode, double dens, double x, double abar,
                 double zbar, double tguess) {
  return eos_state(eos, mode, dens, x, &abar, &zbar, tguess);
}

class Flame1d final : public ProblemBase<Flame1d> {
 public:
  Flame1d(const base::Params& p, const eos::Eos& eos)
      : eos_(eos),
        rho_(p.get_real("flame_1d.dens_fuel")),
        temp_(p.get_real("flame_1d.temp_fuel")),
        x0_(p.get_real("flame_1d.position")),
        q_(p.get_real("burn.q_fuel")),
        vx_(p.get_real("flame_1d.velx")) {
    const auto& mode = p.get_string("flame_1d.burned_state");
    const auto& ops = p.get_string_list("driver.operators");
    ash_ =
        mode == "ash" || (mode == "auto" && std::find(ops.begin(), ops.end(), "burn") != ops.end());
    names_ = p.get_string_list("composition.species");
    const auto& x0 = p.get_string_list("composition.initial");
    for (std::size_t q = 0; q < names_.size(); ++q) {
      const auto n = composition::find_nuclide(names_[q]);
      if (!n) throw Error("flame_1d: unknown species '" + names_[q] + "'");
      a_.push_back(n->a);
      z_.push_back(n->z);
      xu_.push_back(x0.empty() ? 1.0 / double(names_.size()) : std::stod(x0[q]));
    }
    double sum = 0.0;
    for (double x : xu_) sum += x;
    for (double& x : xu_) x /= sum;
    const auto fuel = std::find(names_.begin(), names_.end(), p.get_string("burn.fuel"));
    const auto ash = std::find(names_.begin(), names_.end(), p.get_string("burn.ash"));
    if (ash_ && (fuel == names_.end() || ash == names_.end()))
      throw Error(
          "flame_1d: a burned state of ash needs burn.fuel and burn.ash in "
          "composition.species");
    fuel_ = int(fuel - names_.begin());
    ashi_ = int(ash - names_.begin());
    double ab, zb;
    mixture(0.0, ab, zb);
    const ZoneState u = eos_at(eos_, eos::Mode::dens_temp, rho_, temp_, ab, zb, temp_);
    eu_ = u.eint;
    pu_ = u.pres;
  }
  std::string name() const override { return "flame_1d"; }

  void bind(const mesh::Mesh& m) override {
    iflam_ = m.var_index("flam");
    iqbrn_ = m.var_index("qbrn");
    if (iflam_ < 0) throw Error("flame_1d: no 'flam' in unk (add \"flame\" to driver.operators)");
    idx_.clear();
    for (const auto& n : names_) idx_.push_back(m.var_index(n));
  }

  template <class View>
  void init(const View& u, const mesh::BlockGeom& g, const mesh::BlockShape& s) const {
    const double w = 0.5 * flame::AdrModel{}.b * g.dx[0];
    for (int k = 0; k < s.ni(2); ++k)
      for (int j = 0; j < s.ni(1); ++j)
        for (int i = 0; i < s.ni(0); ++i) {
          // The tails cut where phi or 1 - phi falls below eps0 (about 5.5 zones from
          // x0), as the front's own profile, whose sKPP reaction stops below eps0, has a
          // sharp leading edge: refinement on flam (Loehner's estimator is scale-free)
          // then flags the zones at the front, not an exp(-x/w) tail of 1e-16 values far
          // ahead of it.
          const flame::AdrModel adr;
          double phi = 0.5 * (1.0 - std::tanh((g.x(i) - x0_) / w));
          if (phi < adr.eps0) phi = 0.0;
          if (phi > 1.0 - adr.eps1) phi = 1.0;
          const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
          const double burnt = ash_ ? phi : 0.0;
          double rho = rho_, e = eu_;
          if (burnt > 1e-12) isobaric(burnt, rho, e);
          u(DENS, I, J, K) = rho;
          u(MOMX, I, J, K) = rho * vx_;
          u(MOMY, I, J, K) = 0.0;
          u(MOMZ, I, J, K) = 0.0;
          u(ETOT, I, J, K) = rho * (e + 0.5 * vx_ * vx_);
          u(iflam_, I, J, K) = phi;
          if (iqbrn_ >= 0) u(iqbrn_, I, J, K) = ash_ ? burnt * q_ * xu_[fuel_] : 0.0;
          for (std::size_t q = 0; q < idx_.size(); ++q)
            u(idx_[q], I, J, K) = species(int(q), burnt);
        }
  }

 private:
  const eos::Eos& eos_;
  double rho_, temp_, x0_, q_, vx_;
  bool ash_ = false;
  std::vector<std::string> names_;
  std::vector<double> a_, z_, xu_;
  int fuel_ = -1, ashi_ = -1, iflam_ = -1, iqbrn_ = -1;
  std::vector<int> idx_;
  double eu_ = 0.0, pu_ = 0.0;

  /// Mass fraction of species q where a fraction `burnt` of the fuel became ash.
  double species(int q, double burnt) const {
    if (burnt <= 0.0) return xu_[q];
    if (q == fuel_) return xu_[q] * (1.0 - burnt);
    if (q == ashi_) return xu_[q] + xu_[fuel_] * burnt;
    return xu_[q];
  }
  void mixture(double burnt, double& abar, double& zbar) const {
    double ya = 0.0, yz = 0.0;
    for (std::size_t q = 0; q < xu_.size(); ++q) {
      const double x = species(int(q), burnt);
      ya += x / a_[q];
      yz += x * z_[q] / a_[q];
    }
    abar = 1.0 / ya;
    zbar = abar * yz;
  }
  /// The state at the fuel's pressure with enthalpy h_u + burnt q X_fuel: density and
  /// specific internal energy (bisection on the density: h(rho, p) falls as rho rises).
  void isobaric(double burnt, double& rho, double& e) const {
    double ab, zb;
    mixture(burnt, ab, zb);
    const double h = eu_ + pu_ / rho_ + burnt * q_ * xu_[fuel_];
    auto excess = [&](double r, double& er) {
      er = eos_at(eos_, eos::Mode::dens_pres, r, pu_, ab, zb, temp_).eint;
      return er + pu_ / r - h;
    };
    // Degenerate fuel has no state at its pressure above its density, so hi = rho_u.
    double lo = 0.3 * rho_, hi = rho_, e_lo, e_hi;
    if (!(excess(hi, e_hi) < 0.0)) {  // a trace of ash (phi ~ 1e-12): the fuel's density
      rho = rho_;
      e = e_hi;
      return;
    }
    if (!(excess(lo, e_lo) > 0.0))
      throw Error("flame_1d: no isobaric burned state above 0.3 times the fuel density");
    for (int it = 0; it < 200 && hi - lo > 1e-14 * hi; ++it) {
      const double mid = 0.5 * (lo + hi);
      double em;
      (excess(mid, em) > 0.0 ? lo : hi) = mid;
    }
    rho = 0.5 * (lo + hi);
    excess(rho, e);
  }
};

}  // namespace

void declare_flame_params(base::Params& p) {
  p.declare_real("flame_1d.dens_fuel", 3e8, 1e-300, 1e300, "fuel density (g/cm^3)");
  p.declare_real("flame_1d.temp_fuel", 5e8, 1e3, 1e11, "fuel temperature (K)");
  p.declare_real("flame_1d.position", 0.0, -1e300, 1e300,
                 "x of the front (phi = 1/2; burned below, fuel above) (cm)");
  p.declare_real("flame_1d.velx", 0.0, -1e300, 1e300,
                 "uniform initial velocity along x (cm/s; outflow boundaries then)");
  p.declare_string("flame_1d.burned_state", "auto", {"auto", "ash", "fuel"},
                   "burned side: isobaric ash, fuel (pure ADR), or ash iff burn is an operator");
}

std::unique_ptr<Problem> make_flame_1d(const base::Params& p, const eos::Eos& eos) {
  return std::make_unique<Flame1d>(p, eos);
}

}  // namespace tessera::problems

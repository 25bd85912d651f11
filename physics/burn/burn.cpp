// Stage 1 of the parametric Type Ia burning (Townsley et al. 2007; Calder et al. 2007):
// carbon consumption at the flame. See burn.hpp for the contract and what is not built.
#include "physics/burn/burn.hpp"

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/flame/flame.hpp"

namespace tessera::burn {

void Burn::declare_params(base::Params& p) {
  p.declare_string("burn.fuel", "c12", {}, "species the flame consumes (composition.species)");
  p.declare_string("burn.ash", "mg24", {}, "species the fuel becomes (composition.species)");
  p.declare_real("burn.q_fuel", 5.6016e17, 0.0, 1e20,
                 "energy released per gram of fuel consumed (erg/g; 12C+12C->24Mg: 5.6016e17)");
}

Burn::Burn(const base::Params& p)
    : fuel_name_(p.get_string("burn.fuel")),
      ash_name_(p.get_string("burn.ash")),
      q_fuel_(p.get_real("burn.q_fuel")) {
  if (fuel_name_ == ash_name_) throw Error("burn.fuel and burn.ash are the same species");
}

void Burn::bind(mesh::Mesh& m, physics::Units& units) {
  flame_ = units.find<flame::Flame>();
  if (flame_ == nullptr)
    throw Error(
        "burn needs the flame operator: list \"flame\" before \"burn\" in driver.operators");
  eos_ = units.find<eos::EosUnit>();
  idens_ = m.var_index("dens");
  ietot_ = m.var_index("etot");
  ieint_ = eos_->eint();
  iflam_ = flame_->flam();
  ifdph_ = flame_->fdph();
  const auto* comp = units.find<composition::Composition>();
  auto species = [&](const std::string& n) {
    int at = -1;
    if (comp)
      for (std::size_t q = 0; q < comp->species().size(); ++q)
        if (n == comp->species()[q].name) at = comp->index(q);
    if (at < 0)
      throw Error("burn: species '" + n + "' is not in composition.species (burn.fuel, burn.ash)");
    return at;
  };
  ifuel_ = species(fuel_name_);
  iash_ = species(ash_name_);
}

void Burn::advance(mesh::Mesh& m, double /*dt*/) {
  TESSERA_REGION("burn");
  const auto& s = m.shape();
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& g) {
    const bool curved = g.geometry != mesh::Geometry::cartesian;
    double dv = 1.0;
    for (int a = 0; a < s.ndim; ++a) dv *= g.dx[a];
    for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
        bool burned = false;
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
          const double dphi = u(ifdph_, i, j, k);
          u(ifdph_, i, j, k) = 0.0;  // consumed: a second burn step without a flame step adds 0
          const double dx = fuel_consumed(u(ifuel_, i, j, k), u(iflam_, i, j, k), dphi);
          if (dx <= 0.0) continue;
          burned = true;
          u(ifuel_, i, j, k) -= dx;
          u(iash_, i, j, k) += dx;
          const double de = q_fuel_ * dx;  // erg/g
          const double rho = u(idens_, i, j, k);
          u(ieint_, i, j, k) += de;
          u(ietot_, i, j, k) += rho * de;
          released_ += rho * de * (curved ? g.volume(i - s.g(0)) : dv);
          consumed_ += rho * dx * (curved ? g.volume(i - s.g(0)) : dv);
        }
        // Pressure, temperature and gammas of the heated row (dens_ei, new composition).
        if (burned) eos_->update_row(u, s, id, j, k, eos::Mode::dens_ei);
      }
  });
}

nlohmann::json Burn::summary(MPI_Comm comm) const {
  double v[2] = {released_, consumed_};
  MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM, comm);
  return {{"stage", "carbon consumption only (no QSE/NSE relaxation, Ye fixed)"},
          {"fuel", fuel_name_},
          {"ash", ash_name_},
          {"q_fuel", q_fuel_},
          {"energy_released", v[0]},
          {"fuel_consumed", v[1]}};
}

}  // namespace tessera::burn

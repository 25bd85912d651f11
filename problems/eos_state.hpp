#pragma once
// Set-up helpers shared by the problems: one zone's state from the run's EOS, so that
// energies come from the EOS (pressure or temperature to specific internal energy),
// never from a gamma constant.
#include <string>

#include "base/error.hpp"
#include "physics/eos/eos.hpp"

namespace tessera::problems {

/// One zone's EOS state: dens and the mode's variable (x: eint, temp or pres) given; the
/// mixture (abar, zbar) if given (else the EOS's own), tguess the temperature an
/// iterative EOS starts from. Throws tessera::Error naming the state if it has none.
struct ZoneState {
  double dens, temp, eint, pres, gamc, game;
};
inline ZoneState eos_state(const eos::Eos& eos, eos::Mode mode, double dens, double x,
                           const double* abar = nullptr, const double* zbar = nullptr,
                           double tguess = 1e7) {
  ZoneState z{dens, tguess, 0.0, 0.0, 0.0, 0.0};
  const char* given = "eint";
  if (mode == eos::Mode::dens_ei) z.eint = x;
  if (mode == eos::Mode::dens_temp) z.temp = x, given = "temp";
  if (mode == eos::Mode::dens_pres) z.pres = x, given = "pres";
  eos::Pencil pc;
  pc.n = 1;
  pc.dens = &z.dens;
  pc.temp = &z.temp;
  pc.eint = &z.eint;
  pc.pres = &z.pres;
  pc.gamc = &z.gamc;
  pc.game = &z.game;
  pc.abar = abar;
  pc.zbar = zbar;
  if (eos.apply(mode, pc).failed >= 0)
    throw Error("problem set-up: the EOS has no state with dens = " + std::to_string(dens) +
                " and " + given + " = " + std::to_string(x));
  return z;
}

/// Internal energy density rho*e of (dens, pres) from the run's EOS (dens_pres).
inline double rhoe_of(const eos::Eos& eos, double dens, double pres) {
  const ZoneState z = eos_state(eos, eos::Mode::dens_pres, dens, pres);
  return z.dens * z.eint;
}

}  // namespace tessera::problems

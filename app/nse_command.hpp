#pragma once
// `tessera nse`: the three-stage burn's NSE table (physics/burn/nse_table.hpp) from the
// command line: one lookup, or a one-zone isochoric burn (physics/burn/three_stage.hpp).
//
//   tessera nse --ye Y --dens D --emq E [--table PATH] [--helm-table PATH] [--json]
//   tessera nse --ye Y --pres P --hmq H ...
//       the NSE final state at (Ye, rho, e - qbar), or the isobaric one at (Ye, P,
//       h - qbar): T, qbar, abar, dYe/dt, eps_nu, the density, and which inputs were
//       clamped to the grid;
//   tessera nse --burn --dens D --temp T [--fuel c12=0.5,o16=0.5] [--ash mg24]
//               [--tend S] [--steps N] [--csv FILE] [--json]
//       fuel at (rho, T) burned by the flame at t = 0 (phfa = 1, stage 1 at constant
//       density), then relaxed to quasi-equilibrium and NSE over tend in N equal steps by
//       the burn unit's own zone kernel, with the run's default tau constants: the time
//       series into FILE (CSV) and a summary (the relaxation times at the NSE
//       temperature, when phaq passed 1 - 1/e and phqn 1/2, the final state beside the
//       table's at the final (Ye, rho, e - qbar)).
//
// Bad input is a tessera::Error ("tessera: error: <reason>").
#include <limits>
#include <string>

namespace CLI {
class App;
}

namespace tessera::app {

struct NseOptions {
  double ye = std::numeric_limits<double>::quiet_NaN();
  double dens = std::numeric_limits<double>::quiet_NaN();
  double emq = std::numeric_limits<double>::quiet_NaN();
  double pres = std::numeric_limits<double>::quiet_NaN();
  double hmq = std::numeric_limits<double>::quiet_NaN();
  double temp = std::numeric_limits<double>::quiet_NaN();
  bool burn = false;
  std::string fuel = "c12=0.5,o16=0.5";
  std::string ash = "mg24";
  double tend = 1e-2;
  long steps = 20000;
  std::string csv;
  std::string table;       ///< "" = the build's nse_table.dat
  std::string helm_table;  ///< "" = the build's helm_table.dat
  bool json = false;
};

CLI::App* add_nse_command(CLI::App& app, NseOptions& opt);
int nse_command(const NseOptions& opt);

}  // namespace tessera::app

#pragma once
// `tessera eos`: one Helmholtz EOS call from the command line, printed as Timmes' driver
// prints a state (a table of named quantities with units) or as one JSON object.
//
//   tessera eos --dens D (--temp T | --eint E | --pres P) --abar A --zbar Z
//               [--coulomb 0|1] [--table PATH] [--json]
//   tessera eos --invert-check N [--seed S] [--coulomb 0|1] [--table PATH] [--json]
//
// --invert-check draws N random states inside the table and over white dwarfs and inverts
// their energy and pressure in both kernels (helmholtz/invert_check.hpp): how many
// converge, whether the kernels fail on the same states, the worst vector/scalar
// difference in T (over 1 + the condition number). Exit status 1 if a kernel failed on an
// in-table state or the kernels disagree.
//
// Bad input (a non-positive density or composition, none or more than one of --temp,
// --eint, --pres, a state outside the table, no convergence) is a tessera::Error, which
// main prints as the one line "tessera: error: <reason>".
#include <limits>
#include <string>

namespace CLI {
class App;
}

namespace tessera::app {

/// The options of `tessera eos` (cgs). temp, eint and pres are NaN unless given.
struct EosOptions {
  double dens = std::numeric_limits<double>::quiet_NaN();
  double temp = std::numeric_limits<double>::quiet_NaN();
  double eint = std::numeric_limits<double>::quiet_NaN();
  double pres = std::numeric_limits<double>::quiet_NaN();
  double abar = std::numeric_limits<double>::quiet_NaN();
  double zbar = std::numeric_limits<double>::quiet_NaN();
  int coulomb = 1;
  std::string table;  ///< "" = the build's table (helmholtz::default_table_path)
  bool json = false;
  long invert_check = 0;  ///< > 0: run the random inversion check on this many states
  long seed = 1;          ///< its random seed
};

/// Registers the `eos` subcommand on `app`, its options bound to `opt`; returns it.
CLI::App* add_eos_command(CLI::App& app, EosOptions& opt);

/// Runs `tessera eos` (prints on MPI rank 0 only); returns the exit status. Throws
/// tessera::Error on bad input.
int eos_command(const EosOptions& opt);

}  // namespace tessera::app

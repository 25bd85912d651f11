#pragma once
// Tessera's command line as a function, so that a program may add units of its own before
// it runs (driver::add_unit; tessera_guide, the example of docs/writing-a-unit.md).

namespace tessera::app {

/// Parses argv and runs the subcommand (run, check, plan, params, units, simd, eos, nse);
/// starts and finalises MPI where needed. Returns the exit status.
int main(int argc, char** argv);

}  // namespace tessera::app

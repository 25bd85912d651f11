// tessera: the executable. Subcommands:
//   run FILE [--dir DIR] [section.key=value ...]   run a problem
//   params                                          print every parameter with its doc
// Any error: one line "tessera: error: <reason>" on stderr and a non-zero exit.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "driver/simulation.hpp"

namespace {

int run(const std::string& file, const std::string& dir,
        const std::vector<std::string>& overrides) {
  using namespace tessera;
  base::Params params;
  driver::declare_all_params(params);
  params.load_file(file);
  for (const auto& o : overrides) params.apply_override(o);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create output directory '" + dir + "': " + ec.message());
  if (rank == 0) {
    std::cout << "tessera run " << file << " -> " << std::filesystem::absolute(dir).string()
              << "\n";
    std::cout << "parameters in effect:\n";
    params.print_in_effect(std::cout);
    std::cout.flush();
  }
  driver::Simulation sim(params, MPI_COMM_WORLD, dir);
  sim.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CLI::App app{"Tessera: block-structured AMR hydrodynamics"};
  app.require_subcommand(1);
  std::string file, dir = ".";
  std::vector<std::string> overrides;
  auto* run_cmd = app.add_subcommand("run", "run a problem from a TOML parameter file");
  run_cmd->add_option("file", file, "parameter file")->required();
  run_cmd->add_option("overrides", overrides, "section.key=value overrides");
  run_cmd->add_option("--dir", dir, "output directory (default: current directory)");
  auto* params_cmd = app.add_subcommand("params", "print every runtime parameter with its doc");
  int rc = 0;
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
      if (rank == 0) std::cout << app.help();
      MPI_Finalize();
      return 0;
    } catch (const CLI::CallForAllHelp&) {
      if (rank == 0) std::cout << app.help("", CLI::AppFormatMode::All);
      MPI_Finalize();
      return 0;
    } catch (const CLI::ParseError& e) {
      throw tessera::Error(std::string(e.what()) + " (see tessera --help)");
    }
    if (*params_cmd) {
      tessera::base::Params p;
      tessera::driver::declare_all_params(p);
      if (rank == 0) p.print_reference(std::cout);
    } else if (*run_cmd) {
      rc = run(file, dir, overrides);
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::cerr << "tessera: error: " << e.what() << std::endl;
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}

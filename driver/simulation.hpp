#pragma once
// The time loop: dt from the modules, the operators in order, refinement every nrefs
// steps, outputs when due, one log line per step, and summary.json at the end.
#include <mpi.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/params.hpp"

namespace tessera::mesh {
class Mesh;
}
namespace tessera::hydro {
class Hydro;
}
namespace tessera::problems {
class Problem;
}

namespace tessera::driver {

/// Declare every module's parameters (driver, io, mesh, hydro, problems).
void declare_all_params(base::Params& p);

class Simulation {
 public:
  /// Collective. `run_dir` receives every output.
  Simulation(const base::Params& p, MPI_Comm comm, std::string run_dir);
  ~Simulation();
  /// Collective: run to driver.tmax or driver.nend; returns summary.json's content.
  nlohmann::json run();

 private:
  const base::Params& p_;
  MPI_Comm comm_;
  int rank_ = 0, nranks_ = 1;
  std::string dir_;
  std::unique_ptr<hydro::Hydro> hydro_;
  std::unique_ptr<problems::Problem> problem_;
  std::unique_ptr<mesh::Mesh> mesh_;
  double time_ = 0, dt_ = 0;
  int step_ = 0;
  int plot_count_ = 0, chk_count_ = 0;
  std::vector<std::string> outputs_;

  void initialise();
  void mark_and_regrid();
  void check_state();
  std::array<double, 2> totals();  ///< mass, total energy (rank-independent sum)
  void write(bool checkpoint);
  void log(const std::string& line) const;
};

}  // namespace tessera::driver

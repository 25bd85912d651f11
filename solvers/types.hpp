#pragma once
// The solver layer's types (issue 45: apart from the dispatch in krylov.hpp): a Krylov
// vector, the solver.* options, a solve's result and a run's totals, the operator as a
// function (matrix-free) and as matrix rows (the hypre backend).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessera::base {
class Params;
}

namespace tessera::solvers {

/// A vector of a Krylov method: one scratch variable (Mesh::scratch_index) per component.
struct Field {
  std::vector<int> vars;
  int ncomp() const { return static_cast<int>(vars.size()); }
};

/// solver.* parameters.
struct Options {
  std::string backend = "tessera";        ///< tessera (matrix-free) or hypre (assembled)
  std::string method = "bicgstab";        ///< bicgstab, cg; gmres (hypre only)
  std::string preconditioner = "jacobi";  ///< jacobi, none; boomeramg (hypre only)
  double rtol = 1e-10;                    ///< stop when |r| <= rtol |b|
  int max_iterations = 200;
  bool warn = false;  ///< on_failure = "warn": a warning and the last iterate, not an error
  static void declare_params(base::Params& p);
  /// From the parameters; refuses what this build cannot do, one line (gmres and
  /// boomeramg without hypre, pfmg, hypre when not built in).
  static Options from(const base::Params& p);
};

/// What one solve did.
struct Result {
  int iterations = 0;
  double residual = 0;  ///< final |r| / |b|
  bool converged = false;
};

/// Totals over a run's solves (summary.json "solver").
struct Stats {
  long solves = 0, iterations = 0;
  int iterations_max = 0;
  double residual_max = 0, seconds = 0;
};

/// y = A x on every local leaf's interior (collective); fills x's guard zones itself.
using Apply = std::function<void(const Field& x, const Field& y)>;

/// One entry of a matrix row: the unknown it multiplies (a leaf node, the interior zone
/// number i + ni (j + nj k) from 0, the component) and its coefficient.
struct Entry {
  int node = 0, zone = 0, comp = 0;
  double value = 0;
};
/// Receives one row: the unknown (node, zone, comp) whose equation it is, and its entries.
using RowSink = std::function<void(int node, int zone, int comp, const Entry* e, int n)>;
/// The operator as a matrix, for the backends that assemble it (hypre): calls the sink for
/// every unknown of this rank's leaves, the same operator Apply computes.
using Rows = std::function<void(const RowSink&)>;

}  // namespace tessera::solvers

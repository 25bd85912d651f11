#pragma once
// The hypre backend of the Krylov layer (solver.backend = "hypre"; Debian libhypre-dev):
// the operator, given row by row (solvers::Rows), assembled into a hypre IJ/ParCSR matrix
// over this rank's leaves and solved with hypre's BiCGSTAB, PCG or GMRES, preconditioned
// by BoomerAMG, diagonal scaling (jacobi) or nothing. On an adaptive mesh the rows next to
// coarse-fine faces come from probing the matrix-free operator (solvers/composite.hpp). Unknowns
// are numbered rank by rank, each rank's leaves in canonical order, then component, then zone:
// every rank owns one contiguous range of rows (what IJ requires). hypre's reductions are MPI's:
// the answer agrees with the matrix-free backend to the solver tolerance, not to the bit across
// rank counts. Built when CMake finds hypre (TESSERA_HAVE_HYPRE); without it the backend is refused
// with "unavailable (hypre not built in)".
#include <cstdint>
#include <memory>
#include <string>

#include "solvers/krylov.hpp"

namespace tessera::solvers {

/// Whether this build has the hypre backend.
bool hypre_available();

/// What an assembled matrix is checked against: the matrix-free operator A (x, y: work
/// vectors it may overwrite) applied to one vector must equal the matrix times it to
/// round-off (1e-11 of the largest value), else a one-line Error naming `name`.
struct MatrixCheck {
  Apply A;
  Field x, y;
  std::string name;
};

/// Solves A x = b with hypre (x: first guess in, answer out). Collective. `key` names the
/// operator: with the key of the cached one (and the same tree), the matrix and the setup
/// are reused and only the right-hand side changes; 0 never matches (assemble anew).
/// `check`: compare each newly assembled matrix with the operator (one apply).
Result hypre_solve(mesh::Mesh& m, const Options& o, const Rows& rows, const Field& b,
                   const Field& x, std::uint64_t key,
                   std::unique_ptr<HypreCache, HypreCacheDeleter>& cache,
                   const MatrixCheck* check = nullptr);

}  // namespace tessera::solvers

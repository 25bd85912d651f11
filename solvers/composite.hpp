#pragma once
// The composite matrix of a matrix-free operator on an adaptive mesh, for the backends that
// assemble it (hypre). What the matrix-free apply does at a coarse-fine face (the fine
// block's guard zones prolonged linearly from the coarse block, whose own guards may be
// restrictions of fine zones or prolongations from a coarser level; the coarse flux replaced
// by the fine fluxes through the flux register) is a chain of linear maps that a unit
// should not have to write out again as matrix rows. So the rows of the unknowns next to a
// coarse-fine face are read off the operator itself by probing (Curtis, Powell and Reid
// 1974): apply A to a vector that is 1 on every P-th zone of one level (P = 9 per axis; a
// divisor of the level's zones on a periodic axis) and 0 elsewhere; an entry of a row can
// then only come from the one probed zone within 4 zones (of the probed level) of the row,
// which is further than any coarse-fine chain reaches. Every other row is the unit's own
// (solvers::Rows, written for same-level neighbours). The result is the operator the
// matrix-free backend applies, to round-off, and the backend checks it (assembled matrix
// times a vector against one apply) before it solves.
//
// Cost: levels x components x P^d applies when the matrix is (re)built (P = 9; 2-D, one
// component, two levels: 162 applies; 3-D: 729 per level and component; on a periodic axis
// P is the smallest divisor of the level's zones from 9 up, e.g. 16 for 64 zones), once
// per regrid for an operator that keeps its key (solvers::Krylov::solve's operator_key).
// A coefficient that no probed zone explains (a reach beyond 4 zones) is found on the rank
// that owns the row; every rank finishes the probes (they are collective) and then all
// stop with the same one-line error.
#include <array>
#include <string>

#include "solvers/krylov.hpp"

namespace tessera::solvers {

/// Which faces (axis, low/high) of leaf id border leaves of another level.
std::array<std::array<bool, 2>, 3> coarse_fine_faces(const mesh::Mesh& m, int id);

/// True if the mesh's leaves are on more than one level.
bool is_composite(const mesh::Tree& t);

/// The rows of A for the unknowns of this rank next to a coarse-fine face, by probing
/// (collective; x and y: work vectors of A's shape, overwritten). `name` names the operator
/// in the one-line error a coefficient from nowhere gives.
void probe_rows(mesh::Mesh& m, const Apply& A, const Field& x, const Field& y, const RowSink& sink,
                const std::string& name);

/// The whole composite matrix: the unit's rows where every neighbour is a same-level leaf
/// (rows are filtered), probed rows next to coarse-fine faces.
Rows composite_rows(mesh::Mesh& m, const Apply& A, const Rows& rows, const Field& x, const Field& y,
                    const std::string& name);

}  // namespace tessera::solvers

#pragma once
// Block-to-block transfers: the single mechanism behind guard-cell fills (same-level
// copy, restriction from finer neighbours, prolongation from coarser ones), regrid data
// movement (new children from parents, parents from children, migration between ranks),
// parent restriction before output, and the accumulation of guard-zone deposits into
// neighbours' interiors (the guard fill's transpose). A plan is a list of ops built
// identically on every rank from the replicated tree; each rank keeps the ops it takes
// part in. Local ops read the source block in place; remote ones are packed per peer rank
// in plan order and moved with non-blocking MPI. A destination zone written by several ops
// receives them in plan order (local and remote alike), never in arrival order: an
// accumulate plan therefore sums the same way on any number of ranks.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "mesh/block_storage.hpp"
#include "mesh/geometry.hpp"
#include "mesh/tree.hpp"

namespace tessera::mesh {

/// Half-open box of cells in a block's local array indices (guards included).
struct Box {
  IVec lo{0, 0, 0}, hi{1, 1, 1};
  int extent(int a) const { return hi[a] - lo[a]; }
  long volume() const { return long(extent(0)) * extent(1) * extent(2); }
};

/// copy: dst = src. restrict_avg: dst = mean of 2^d fine src cells. prolong: limited
/// linear from a coarse src with a 1-cell halo. accumulate: dst += src (same shape; the
/// transpose of copy, for guard deposits summed into neighbours' interiors).
enum class OpKind : std::uint8_t { copy, restrict_avg, prolong, accumulate };

struct TransferOp {
  OpKind kind = OpKind::copy;
  int src_rank = 0, dst_rank = 0;
  int src_slot = -1, dst_slot = -1;  ///< known only on the rank that owns that side
  Box src, dst;                      ///< src: cells read (prolong: with a 1-cell halo)
  IVec parity0{0, 0, 0};             ///< prolong: parity of dst.lo in the fine index space
  /// Curvilinear geometry: r of the lower edge of source cell src.lo[0] and its width
  /// (restriction weights fine cells by volume; prolongation offsets by volume centroids).
  double r_lo = 0, r_dx = 0;
};

struct TransferPlan {
  std::vector<TransferOp> ops;  ///< only ops this rank takes part in, in global order
};

/// How a prolong op fills fine cells from a coarse cell of one variable (each variable
/// declares its own): the coarse value plus a quarter of a slope per axis toward the fine
/// cell's half; the average of the fine cells is always the coarse value.
enum class Prolong : std::uint8_t {
  mc,        ///< MC-limited slope (van Leer 1977): no new extrema (hydro's variables)
  linear,    ///< the unlimited central slope: exact for a linear field (a Krylov operand,
             ///< a signed distance)
  injection  ///< no slope: every fine cell takes the coarse value
};

/// A run of contiguous variables [first, first + n) moved by one plan with one prolongation.
struct VarRun {
  int first = 0, n = 0;
  Prolong prolong = Prolong::mc;
};

/// Bytes moved by execute() on this thread since the last reset: `written` counts the
/// doubles written into destination zones (local and remote ops), `sent` those packed for
/// other ranks. For tests and benchmarks (a fill of one variable must move one variable).
struct TransferBytes {
  std::uint64_t written = 0, sent = 0;
};
TransferBytes& transfer_bytes();

/// Execute a plan on `storage` for variables [first, first + nvar) (nvar < 0: all from
/// first on), in geometry `geo` (restriction is the volume-weighted mean and prolongation
/// conserves the volume integral). Ops are applied in plan order on the destination rank.
/// Collective over the ranks that appear in the plan (call it on every rank). `tag`
/// separates concurrent plans.
void execute(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag, int nvar = -1,
             Geometry geo = Geometry::cartesian, int first = 0);
/// The same for several runs of variables in one exchange (one message per peer rank):
/// each op moves run after run, each run with its own prolongation.
void execute(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag,
             const std::vector<VarRun>& runs, Geometry geo = Geometry::cartesian);

}  // namespace tessera::mesh

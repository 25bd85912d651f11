#pragma once
// The communication census (issue 46): every MPI call the code makes itself is counted on
// the calling thread, in its innermost timer region (perf/timers.hpp, TimerNode::comm) and
// in the thread's total: point-to-point messages and bytes sent (MPI_Isend, MPI_Send),
// collective calls and the bytes this rank contributes (its send buffer: MPI_Allreduce,
// MPI_Reduce, MPI_Gather(v), MPI_Allgather(v), MPI_Alltoall(v), a broadcast's root,
// barriers with none). The counting is a PMPI layer: comm_census.cpp defines those MPI
// functions, counts and calls PMPI_*; the MPI-IO calls HDF5 makes go to the MPI library
// directly and are not counted (the writer reports its own bytes). Cost: a type-size query
// and four additions per call.
#include <mpi.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "perf/timers.hpp"

namespace tessera::perf {

/// This thread's counts since it started.
CommCounts comm_total();
/// Per region path ("hydro/guardcell/mpi"; "total" for calls outside every region), this
/// thread's counts.
std::map<std::string, CommCounts> comm_by_region();
CommCounts operator-(const CommCounts& a, const CommCounts& b);
nlohmann::json to_json(const CommCounts& c);

/// summary.json "comm" (collective): {ranks, steps, p2p_messages_per_step_max,
/// p2p_bytes_per_step_max, p2p_bytes_per_step_mean, collectives_per_step_max,
/// collective_bytes_per_step_max, regions {name: {p2p_messages, p2p_bytes, collectives,
/// collective_bytes}}} (regions by path): `loop` the counts of the step loop of `steps` steps
/// (per-step figures exclude the set-up; maxima over ranks); regions over the whole run, the
/// maximum over ranks of each.
nlohmann::json comm_summary(MPI_Comm comm, const CommCounts& loop, long steps);

}  // namespace tessera::perf

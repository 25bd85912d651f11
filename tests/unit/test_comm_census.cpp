// Specification of the communication census (perf/comm_census.hpp, issue 46): a guard fill
// of one variable sends exactly the bytes the mesh's plans say, one message per peer rank,
// counted in the region that made the calls; a reduction counts its send buffer.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "base/params.hpp"
#include "mesh/mesh.hpp"
#include "mesh/transfer.hpp"
#include "perf/comm_census.hpp"
#include "perf/timers.hpp"

namespace tessera::perf {
namespace {

// Given ten variables on a periodic 2-D mesh of 16 blocks spread over the ranks, when one
// variable's guard zones are filled inside a region, then that region's census holds the
// bytes the transfer plans sent and one message per peer rank (none on one rank).
TEST(CommCensus, GivenAGuardFillOfOneVariable_ThenTheCensusIsThePlansBytes) {
  base::Params p;
  mesh::Mesh::declare_params(p);
  for (const char* o :
       {"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=4", "mesh.nblocky=4", "mesh.maxblocks=16",
        "mesh.xl_boundary_type=periodic", "mesh.xr_boundary_type=periodic",
        "mesh.yl_boundary_type=periodic", "mesh.yr_boundary_type=periodic"})
    p.apply_override(o);
  std::vector<mesh::VarInfo> vars;
  for (int n = 0; n < 10; ++n) vars.emplace_back("v" + std::to_string(n));
  mesh::Mesh m(p, MPI_COMM_WORLD, vars, 2);
  const auto set = m.var_set({"v3"});
  m.fill_guards(set);  // plans made and cached before the counted fill
  const CommCounts before = comm_total();
  mesh::transfer_bytes() = {};
  {
    TESSERA_REGION("census_fill");
    m.fill_guards(set);
  }
  const CommCounts d = comm_total() - before;
  const auto sent = mesh::transfer_bytes().sent;
  EXPECT_EQ(d.p2p_bytes, sent);
  EXPECT_EQ(d.collectives, 0u);
  if (m.nranks() == 1) {
    EXPECT_EQ(d.p2p_messages, 0u);
  } else if (m.nranks() == 2) {
    EXPECT_EQ(d.p2p_messages, 1u);  // one message to the one peer
    EXPECT_GT(sent, 0u);
  }
  // The region holds them (by path).
  const auto regions = comm_by_region();
  std::uint64_t in_region = 0;
  for (const auto& [path, c] : regions)
    if (path.rfind("census_fill", 0) == 0) in_region += c.p2p_bytes;
  EXPECT_GE(in_region, sent);
}

// Given an allreduce of three doubles, then it counts one collective of 24 bytes.
TEST(CommCensus, GivenAnAllreduce_ThenItCountsItsSendBuffer) {
  const CommCounts before = comm_total();
  double x[3] = {1, 2, 3};
  MPI_Allreduce(MPI_IN_PLACE, x, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const CommCounts d = comm_total() - before;
  EXPECT_EQ(d.collectives, 1u);
  EXPECT_EQ(d.collective_bytes, 24u);
  EXPECT_EQ(d.p2p_messages, 0u);
}

}  // namespace
}  // namespace tessera::perf

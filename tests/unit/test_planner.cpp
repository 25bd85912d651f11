// Specification of the memory planner (memory/planner.hpp): its items follow the
// allocations they stand for (the arena the block storage really maps, the resident
// bytes the storage and flux register really add), its totals and capacity are
// consistent, and the parameters change what they should.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/error.hpp"
#include "base/params.hpp"
#include "driver/simulation.hpp"
#include "driver/units.hpp"
#include "memory/arena.hpp"
#include "memory/planner.hpp"
#include "mesh/block_storage.hpp"
#include "mesh/flux_register.hpp"
#include "mesh/mesh.hpp"
#include "mesh/transfer.hpp"
#include "mesh/tree.hpp"

namespace tessera::memory {
namespace {

static_assert(sizeof(mesh::Node) == detail::kNodeBytes, "update planner's kNodeBytes");
static_assert(sizeof(mesh::TransferOp) == detail::kTransferOpBytes,
              "update planner's kTransferOpBytes");

// The planner's unk is the mesh's: the variables the active units declare, in the order
// the driver builds unk, with their derived outputs in a checkpoint.
TEST(PlannerDeclarations, UnkIsTheUnionTheMeshIsBuiltFrom) {
  base::Params p;
  driver::declare_all_params(p);
  p.apply_override("composition.species=c12,o16");
  const auto units = driver::make_units(p);
  const auto d = driver::declared(p, units);
  const auto vars = driver::unk_variables(units);
  ASSERT_EQ(d.unk_vars.size(), vars.size());
  for (std::size_t v = 0; v < vars.size(); ++v) EXPECT_EQ(d.unk_vars[v], vars[v].name);
  // hydro's five, two species, the EOS's five; hydro's at 0-4, guard-filled first.
  ASSERT_EQ(vars.size(), 12u);
  EXPECT_EQ(vars[0].name, "dens");
  EXPECT_EQ(vars[4].name, "etot");
  EXPECT_EQ(vars[5].name, "c12");
  EXPECT_EQ(d.nflux, 7);  // 5 conserved + 2 mass scalars
  EXPECT_EQ(d.derived_vars,
            (std::vector<std::string>{"velx", "vely", "velz", "ener", "abar", "zbar", "ye"}));
}

// The parameters the planner reads, declared as their owners declare them (a subset).
class Planner : public ::testing::Test {
 protected:
  void SetUp() override { driver::declare_all_params(p); }
  const nlohmann::json& item(const nlohmann::json& plan, const std::string& prefix) {
    for (const auto& it : plan.at("items"))
      if (it.at("name").get<std::string>().rfind(prefix, 0) == 0) return it;
    ADD_FAILURE() << "no item " << prefix;
    static const nlohmann::json none = {{"bytes", -1}};
    return none;
  }
  double bytes(const nlohmann::json& plan, const std::string& prefix) {
    return item(plan, prefix).at("bytes").get<double>();
  }
  base::Params p;
};

TEST_F(Planner, UnkItemIsTheMappingTheBlockStorageReallyGets) {
  p.apply_override("mesh.maxblocks=37");
  for (const char* policy : {"none", "thp"}) {
    p.apply_override(std::string("memory.pages=") + policy);
    const auto plan = plan_memory(p, driver::declared(p), 1, 1, 64 * kGiB);
    mesh::BlockShape s;  // 3-D, 16^3 + 2 guards, 10 variables (hydro 5, eos 5), as planned
    s.nvar = 10;
    mesh::BlockStorage st(s, 37, 0, config_for(p, "unk"));
    EXPECT_EQ(bytes(plan, "unk arena"), double(st.arena().mapped_bytes())) << policy;
  }
}

TEST_F(Planner, SteadyMeshItemsMatchTheResidentBytesTheyReallyAdd) {
  p.apply_override("memory.pages=none");
  p.apply_override("mesh.maxblocks=600");
  // 600 slots: the flux register (37 MB) is above glibc's largest mmap threshold (32 MiB),
  // so it gets fresh pages whatever earlier tests freed.
  const auto plan = plan_memory(p, driver::declared(p), 1, 1, 64 * kGiB);
  const double predicted = bytes(plan, "unk arena") + bytes(plan, "flux arena");
  mesh::BlockShape s;
  s.nvar = 10;
  const std::size_t before = current_rss_bytes();
  mesh::BlockStorage st(s, 600, 0, config_for(p, "unk"));
  mesh::FluxRegister fr(s, 600, 5, config_for(p, "flux"));
  const double added = double(current_rss_bytes()) - double(before);
  std::cout << "[ info ] unk + flux register: predicted " << predicted << ", RSS grew by " << added
            << "\n";
  EXPECT_NEAR(added, predicted, 0.02 * predicted);
}

// The flux, scratch and Runge-Kutta items are the mappings the mesh and hydro really make
// (parameters declared by their owners, as in a run).
TEST(PlannerArenas, FluxScratchAndRkStageItemsAreTheArenasMeshAndHydroMap) {
  for (const char* pages : {"none", "thp"}) {
    base::Params p;
    driver::declare_all_params(p);
    for (const char* o :
         {"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2", "mesh.maxblocks=50",
          "hydro.reconstruction=ppm", "composition.species=he4"})
      p.apply_override(o);
    p.apply_override(std::string("memory.pages=") + pages);
    auto units = driver::make_units(p);
    const auto plan = plan_memory(p, driver::declared(p, units), 1, 1, 64 * kGiB);
    const auto vars = driver::unk_variables(units);
    mesh::Mesh m(p, MPI_COMM_SELF, vars, driver::unk_nguard(units), driver::unk_nflux(units, vars));
    const physics::RunContext ctx;
    for (const auto& u : units.all()) u->bind(m, driver::services_for(units, *u), ctx);
    const auto live = report_all();
    for (const std::string name : {"unk", "flux", "scratch", "rk_stage"}) {
      const auto it = std::find_if(live.rbegin(), live.rend(),
                                   [&](const ArenaReport& r) { return r.name == name; });
      ASSERT_NE(it, live.rend()) << "no live arena " << name;
      double planned = -1;
      for (const auto& i : plan.at("items"))
        if (i.at("name").get<std::string>().rfind(name + " arena", 0) == 0)
          planned = i.at("bytes").get<double>();
      EXPECT_EQ(planned, double(it->mapped_bytes)) << name << " with pages=" << pages;
      EXPECT_EQ(to_string(it->policy_requested), pages) << name;
    }
  }
}

TEST_F(Planner, PeakIsSteadyPlusTheLargestPhaseAndRssLeavesOutHugetlb) {
  const auto plan = plan_memory(p, driver::declared(p), 4, 4, 64 * kGiB);
  const auto& r = plan.at("per_rank");
  double steady = 0, largest = 0;
  for (const auto& it : plan.at("items"))
    if (it.at("counted").get<bool>() && it.at("phase") == "steady")
      steady += it.at("bytes").get<double>();
  for (const auto& [ph, b] : plan.at("phases").items())
    largest = std::max(largest, b.get<double>());
  EXPECT_NEAR(r.at("steady_bytes").get<double>(), steady, 4);
  EXPECT_NEAR(r.at("peak_bytes").get<double>(), steady + largest, 8);
  EXPECT_EQ(r.at("peak_rss_bytes"), r.at("peak_bytes"));
  EXPECT_GT(bytes(plan, "guard exchange buffers"), 0);  // four ranks exchange

  p.apply_override("memory.pages_unk=hugetlb");
  const auto h = plan_memory(p, driver::declared(p), 4, 4, 64 * kGiB);
  EXPECT_FALSE(item(h, "unk arena").at("in_rss").get<bool>());
  EXPECT_NEAR(h.at("per_rank").at("peak_rss_bytes").get<double>(),
              h.at("per_rank").at("peak_bytes").get<double>() - bytes(h, "unk arena"), 8);
}

TEST_F(Planner, OneRankExchangesNothingAndHancockKeepsNoStageCopy) {
  const auto plan = plan_memory(p, driver::declared(p), 1, 1, 64 * kGiB);
  EXPECT_EQ(bytes(plan, "guard exchange buffers"), 0);
  EXPECT_EQ(bytes(plan, "regrid: migrating blocks"), 0);
  for (const auto& it : plan.at("items"))
    EXPECT_EQ(it.at("name").get<std::string>().find("rk_stage"), std::string::npos);
  EXPECT_EQ(plan.at("inputs").at("nguard"), 2);
}

TEST_F(Planner, PpmMeansThreeGuardsAndAnRk3StageCopyOfEveryLeaf) {
  p.apply_override("hydro.reconstruction=ppm");
  p.apply_override("mesh.nblockx=4");
  p.apply_override("mesh.nblocky=4");
  p.apply_override("mesh.nblockz=4");  // 64 leaves, uniform
  const auto plan = plan_memory(p, driver::declared(p), 1, 1, 64 * kGiB);
  EXPECT_EQ(plan.at("inputs").at("nguard"), 3);
  EXPECT_EQ(plan.at("assumptions").at("tree_nodes").get<double>(), 64);
  // An arena of maxblocks (1000) * 22^3 cells * 10 variables * 8 bytes, on THP pages.
  EXPECT_DOUBLE_EQ(bytes(plan, "rk_stage arena"),
                   double(Arena::mapped_size(1000ull * 22 * 22 * 22 * 10 * 8, PagePolicy::thp)));
  // A checkpoint gathers unk (10) + 4 derived variables of the 64 interiors.
  EXPECT_GE(bytes(plan, "output: checkpoint"), 64.0 * 4096 * 14 * 8);
}

TEST_F(Planner, CapacityIsTheLargestMaxblocksThatFits) {
  p.apply_override("mesh.maxblocks=1000");
  p.apply_override("mesh.nblockx=4096");  // a tree large enough to fill every rank
  p.apply_override("mesh.nblocky=4096");
  const auto big = plan_memory(p, driver::declared(p), 8, 8, 256 * kGiB);
  const long cap = big.at("capacity").at("max_blocks_per_rank").get<long>();
  EXPECT_GT(cap, 1000);
  EXPECT_EQ(big.at("capacity").at("max_blocks_per_node").get<long>(), 8 * cap);
  EXPECT_TRUE(big.at("per_node").at("fits").get<bool>());
  // Planning with exactly that capacity fits; one block more does not. (Each plan
  // measures its own baseline; the comparison takes out the drift between the calls.)
  const double node_mem = 256.0 * kGiB;
  const double base0 = bytes(big, "process baseline");
  auto node_peak = [&](const nlohmann::json& plan) {
    return plan.at("per_node").at("peak_bytes").get<double>() -
           8 * (bytes(plan, "process baseline") - base0);
  };
  p.apply_override("mesh.maxblocks=" + std::to_string(cap));
  EXPECT_LE(node_peak(plan_memory(p, driver::declared(p), 8, 8, 256 * kGiB)), node_mem);
  p.apply_override("mesh.maxblocks=" + std::to_string(cap + 1));
  EXPECT_GT(node_peak(plan_memory(p, driver::declared(p), 8, 8, 256 * kGiB)), node_mem);
  // Half the memory, about half the blocks (the fixed part is small).
  const auto half = plan_memory(p, driver::declared(p), 8, 8, 128 * kGiB);
  const double ratio = half.at("capacity").at("max_blocks_per_rank").get<double>() / double(cap);
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.5);
}

TEST_F(Planner, AsyncHoldsSnapshotsUpToTheBudget) {
  p.apply_override("mesh.nblockx=8");
  p.apply_override("mesh.nblocky=8");
  p.apply_override("mesh.nblockz=8");  // 512 leaves: 14 vars * 512 * 4096 * 8 = 224 MiB
  p.apply_override("io.async=true");
  p.apply_override("io.async_budget=64M");
  const auto small = plan_memory(p, driver::declared(p), 1, 1, 64 * kGiB);
  p.apply_override("io.async_budget=4G");
  const auto large = plan_memory(p, driver::declared(p), 1, 1, 64 * kGiB);
  // 64M: the checkpoint (224 MiB) is written synchronously, the plotfile (112 MiB) too:
  // nothing fits the budget, nothing is held.
  EXPECT_EQ(bytes(small, "async staging"), 0);
  EXPECT_GT(bytes(large, "async staging"), 336.0 * kMiB);
  EXPECT_GT(large.at("per_rank").at("steady_bytes").get<double>(),
            small.at("per_rank").at("steady_bytes").get<double>());
}

TEST_F(Planner, PrintedPlanNamesEveryItemAndTheCapacity) {
  const auto plan = plan_memory(p, driver::declared(p), 2, 2, 16 * kGiB);
  std::ostringstream os;
  print_plan(os, plan);
  const std::string text = os.str();
  for (const auto& it : plan.at("items"))
    EXPECT_NE(text.find(it.at("name").get<std::string>()), std::string::npos) << it.at("name");
  EXPECT_NE(text.find("capacity:"), std::string::npos);
  EXPECT_NE(text.find("per node"), std::string::npos);
}

TEST_F(Planner, BadArgumentsAreErrors) {
  EXPECT_THROW(plan_memory(p, driver::declared(p), 0, 1, kGiB), Error);
  p.apply_override("memory.pages_unk=huge");
  EXPECT_THROW(plan_memory(p, driver::declared(p), 1, 1, kGiB), Error);
}

// Given --blocks (the whole mesh's blocks) on 1,000 ranks, then every rank holds its share,
// the replicated tree is the whole tree at kTreeBytesPerNode, and the scale table says the
// replicated structures pass 10 % of an A64FX rank's share (32 GiB / 48) from the tree size
// the bytes per node give, at every rank count, and not below it.
TEST(PlannerScale, GivenGlobalBlocks_ThenTheRankHoldsItsShareAndTheTreeIsWhole) {
  base::Params p;
  driver::declare_all_params(p);
  p.apply_override("mesh.lrefine_max=3");
  const auto plan = plan_memory(p, driver::declared(p), 1000, 48, 32 * kGiB, 0, 1000000);
  EXPECT_EQ(plan.at("assumptions").at("blocks_per_rank").get<double>(), 1000.0);
  EXPECT_EQ(plan.at("assumptions").at("tree_nodes").get<double>(), 1e6);
  double tree = -1;
  for (const auto& it : plan.at("items"))
    if (it.at("name").get<std::string>().rfind("tree metadata", 0) == 0)
      tree = it.at("bytes").get<double>();
  EXPECT_NEAR(tree, 1e6 * detail::kTreeBytesPerNode, 1.0);
  const auto& s = plan.at("scale");
  const double limit = 0.1 * 32.0 * kGiB / 48, per = s.at("replicated_peak_bytes_per_tree_node");
  EXPECT_GT(per, detail::kTreeBytesPerNode);
  EXPECT_EQ(s.at("passes_limit_at_tree_nodes").get<long>(), std::llround(limit / per));
  for (const auto& r : s.at("table"))
    EXPECT_EQ(r.at("replicated_over_limit").get<bool>(),
              r.at("tree_nodes").get<double>() * per > limit);
  EXPECT_TRUE(s.at("table").back().at("replicated_over_limit").get<bool>());    // 10^7 nodes
  EXPECT_FALSE(s.at("table").front().at("replicated_over_limit").get<bool>());  // 10^4
}
}  // namespace
}  // namespace tessera::memory

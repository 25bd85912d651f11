// Specification of the memory tier layer (memory/tiers, tier_backend, tier_placement,
// tier_model, tier_bench): detection reads what Linux exposes and picks fast and slow
// nodes by the documented rule; a backend reports what it was asked for and what it got,
// and falls back with one line when it cannot place; placement policies plan as the
// WarpX-PM study does; the study's models give its own numbers.
//
// Detection tests build fake sysfs trees in a temporary directory: this VM has one node.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "memory/arena.hpp"
#include "memory/tier_backend.hpp"
#include "memory/tier_bench.hpp"
#include "memory/tier_model.hpp"
#include "memory/tier_placement.hpp"
#include "memory/tiers.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::memory {
namespace {

namespace fs = std::filesystem;
using tessera::testing_util::contains;
using tessera::testing_util::error_of;

constexpr std::size_t kGiBytes = std::size_t(1) << 30;

// A fake sysfs/procfs tree under a fresh temporary directory, removed at the end.
class FakeSys {
 public:
  FakeSys() {
    root_ = fs::temp_directory_path() /
            ("tessera_tiers_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~FakeSys() { fs::remove_all(root_); }
  FakeSys(const FakeSys&) = delete;
  FakeSys& operator=(const FakeSys&) = delete;

  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // A node: memory in GiB, its SLIT row.
  void node(int id, std::size_t gib, const std::string& distance) {
    const std::string d = "sys/devices/system/node/node" + std::to_string(id) + "/";
    write(d + "meminfo", "Node " + std::to_string(id) +
                             " MemTotal:       " + std::to_string(gib * 1024 * 1024) +
                             " kB\nNode " + std::to_string(id) + " MemFree:  1 kB\n");
    write(d + "distance", distance + "\n");
  }
  void tier(int n, const std::string& nodelist) {
    write("sys/devices/virtual/memory_tiering/memory_tier" + std::to_string(n) + "/nodelist",
          nodelist + "\n");
  }
  std::string root() const { return root_.string(); }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  fs::path root_;
};

// ---------------------------------------------------------------------------------------
// Detection

TEST(TierDetection, GivenOneNodeLikeThisVmThenOneFastNodeAndNoSlowTier) {
  FakeSys s;
  s.write("sys/devices/system/node/has_memory", "0\n");
  s.write("sys/devices/system/node/has_cpu", "0\n");
  s.node(0, 16, "10");
  s.tier(4, "0");
  s.write("sys/kernel/mm/numa/demotion_enabled", "false\n");
  s.write("proc/sys/kernel/numa_balancing", "0\n");
  const TierTopology t = detect_tiers(s.root());
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].mem_total, 16 * kGiBytes);
  EXPECT_EQ(t.nodes[0].tier, 4);
  EXPECT_EQ(t.fast_nodes, std::vector<int>{0});
  EXPECT_TRUE(t.slow_nodes.empty());
  EXPECT_FALSE(t.has_slow_tier());
  EXPECT_EQ(t.demotion_enabled, 0);
  EXPECT_EQ(t.numa_balancing, 0);
  EXPECT_TRUE(t.warnings().empty());
  EXPECT_TRUE(contains(t.describe(), "one NUMA node: no slow tier"));
}

TEST(TierDetection, GivenDramPlusCpuLessCxlNodeInASlowerTierThenTheCxlNodeIsSlowWithHmat) {
  FakeSys s;
  s.write("sys/devices/system/node/has_memory", "0-1\n");
  s.write("sys/devices/system/node/has_cpu", "0\n");
  s.node(0, 64, "10 20");
  s.node(1, 256, "20 10");
  s.write("sys/devices/system/node/node1/access0/initiators/read_bandwidth", "39000\n");
  s.write("sys/devices/system/node/node1/access0/initiators/read_latency", "304\n");
  s.tier(1, "0");
  s.tier(4, "1");
  s.write("sys/kernel/mm/numa/demotion_enabled", "true\n");
  s.write("proc/sys/kernel/numa_balancing", "2\n");
  const TierTopology t = detect_tiers(s.root());
  EXPECT_EQ(t.fast_nodes, std::vector<int>{0});
  EXPECT_EQ(t.slow_nodes, std::vector<int>{1});
  EXPECT_EQ(t.bytes_of(t.slow_nodes), 256 * kGiBytes);
  EXPECT_TRUE(t.hmat_present);
  EXPECT_DOUBLE_EQ(t.node(1)->read_bw, 39e9);
  EXPECT_NEAR(t.node(1)->read_latency, 304e-9, 1e-15);
  // The kernel moving pages behind a runtime that places them is worth a warning each.
  EXPECT_EQ(t.warnings().size(), 2u);
  EXPECT_TRUE(contains(t.describe(), "slow = CPU-less or slower-tier nodes"));
  EXPECT_TRUE(contains(t.describe(), "NUMA balancing ON (mode 2)"));
}

TEST(TierDetection, GivenTwoDramSocketsInOneTierThenBothAreFastAndThereIsNoSlowTier) {
  FakeSys s;
  s.write("sys/devices/system/node/has_memory", "0-1\n");
  s.write("sys/devices/system/node/has_cpu", "0-1\n");
  s.node(0, 96, "10 21");
  s.node(1, 96, "21 10");
  s.tier(4, "0-1");
  const TierTopology t = detect_tiers(s.root());
  EXPECT_EQ(t.fast_nodes, (std::vector<int>{0, 1}));
  EXPECT_TRUE(t.slow_nodes.empty());
  EXPECT_TRUE(contains(t.reason, "a remote socket is not a tier"));
}

TEST(TierDetection, GivenTwoSocketsWithOnePmNodeEachThenSlowNodesAreOrderedNearestFirst) {
  // Nodes 0,1: DRAM with CPUs (tier 1); 2,3: CPU-less PM (tier 4), 3 nearer to node 0.
  FakeSys s;
  s.write("sys/devices/system/node/has_memory", "0-3\n");
  s.write("sys/devices/system/node/has_cpu", "0-1\n");
  s.node(0, 96, "10 21 28 17");
  s.node(1, 96, "21 10 17 28");
  s.node(2, 768, "28 17 10 28");
  s.node(3, 768, "17 28 28 10");
  s.tier(1, "0-1");
  s.tier(4, "2-3");
  const TierTopology t = detect_tiers(s.root());
  EXPECT_EQ(t.fast_nodes, (std::vector<int>{0, 1}));
  // Both slow nodes are at 17 from some fast node: the tie is broken by node number.
  EXPECT_EQ(t.slow_nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(t.bytes_of(t.fast_nodes), 192 * kGiBytes);
}

TEST(TierDetection, GivenNoTierFilesThenCpuLessNodesAreSlowByTheRuleAlone) {
  FakeSys s;
  s.write("sys/devices/system/node/has_memory", "0,2\n");
  s.write("sys/devices/system/node/has_cpu", "0\n");
  s.node(0, 32, "10 20 30");
  s.node(2, 128, "30 20 10");
  const TierTopology t = detect_tiers(s.root());
  EXPECT_FALSE(t.tiers_present);
  EXPECT_EQ(t.fast_nodes, std::vector<int>{0});
  EXPECT_EQ(t.slow_nodes, std::vector<int>{2});
  EXPECT_TRUE(contains(t.describe(), "absent (kernel < 6.1)"));
}

TEST(TierDetection, GivenCxlInTheSameTierAsDramThenBeingCpuLessStillMakesItSlow) {
  // Kernels without a driver-set abstract distance put CXL memory in the default tier 4
  // beside DRAM: the tier files cannot tell them apart, the CPU rule can.
  FakeSys s;
  s.write("sys/devices/system/node/has_memory", "0-1\n");
  s.write("sys/devices/system/node/has_cpu", "0\n");
  s.node(0, 64, "10 20");
  s.node(1, 128, "20 10");
  s.tier(4, "0-1");
  const TierTopology t = detect_tiers(s.root());
  EXPECT_EQ(t.fast_nodes, std::vector<int>{0});
  EXPECT_EQ(t.slow_nodes, std::vector<int>{1});
  EXPECT_TRUE(contains(t.reason, "CPU-less")) << t.reason;
}

TEST(TierDetection, GivenAKernelWithoutNodeFilesThenOneFastNodeWithAllOfMemTotal) {
  FakeSys s;
  s.write("proc/meminfo", "MemTotal:        8388608 kB\nMemFree:  1 kB\n");
  const TierTopology t = detect_tiers(s.root());
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_EQ(t.nodes[0].mem_total, 8 * kGiBytes);
  EXPECT_EQ(t.fast_nodes, std::vector<int>{0});
  EXPECT_EQ(t.demotion_enabled, -1);
  EXPECT_EQ(t.numa_balancing, -1);
}

TEST(TierDetection, GivenThisMachineThenDetectionFindsAtLeastOneFastNodeWithMemory) {
  const TierTopology t = detect_tiers();
  ASSERT_FALSE(t.fast_nodes.empty());
  EXPECT_GT(t.bytes_of(t.fast_nodes), 0u);
  std::cout << "[ detected ] " << t.describe() << "\n";
}

TEST(TierDetection, NodeListsRoundTripAndMalformedTextGivesNothing) {
  EXPECT_EQ(parse_node_list("0-2,5\n"), (std::vector<int>{0, 1, 2, 5}));
  EXPECT_EQ(node_list_text({5, 0, 1, 2}), "0-2,5");
  EXPECT_TRUE(parse_node_list("x").empty());
  EXPECT_TRUE(parse_node_list("3-1").empty());
}

// ---------------------------------------------------------------------------------------
// Backends

TierTopology one_node() {
  TierTopology t;
  NumaNode n;
  n.id = 0;
  n.has_cpu = true;
  n.mem_total = 16 * kGiBytes;
  t.nodes.push_back(n);
  t.fast_nodes = {0};
  t.reason = "one NUMA node: no slow tier";
  return t;
}

TEST(TierBackend, GivenNumaOnOneNodeThenItFallsBackToNoneWithOneLineWarning) {
  auto b = make_tier_backend(TierBackendKind::numa, one_node());
  const TierReport r = b->report();
  EXPECT_EQ(r.backend_requested, "numa");
  EXPECT_EQ(r.backend, "none");
#ifdef TESSERA_HAVE_NUMA
  EXPECT_EQ(r.warning, "numa: one NUMA node (0): no slow tier; falling back to none");
#else
  EXPECT_EQ(r.warning, "numa: unavailable (libnuma not built in); falling back to none");
#endif
  EXPECT_EQ(r.warning.find('\n'), std::string::npos);
  std::cout << "[ fallback ] " << r.warning << "\n";
}

TEST(TierBackend, GivenNumaOnThisMachineThenItFallsBackOrPlacesButAlwaysSaysWhich) {
  auto b = make_tier_backend(TierBackendKind::numa, detect_tiers());
  const TierReport r = b->report();
  EXPECT_TRUE(r.backend == "numa" || !r.warning.empty());
}

TEST(TierBackend, GivenTheFallbackThenASlowRequestIsReportedAchievedFastWithAReason) {
  auto b = make_tier_backend(TierBackendKind::numa, one_node());
  TierPlacement p;
  Arena a = make_tiered_arena(*b, "tier_test", 4 * kMiB, ArenaConfig{}, ObjectClass::particle,
                              Tier::slow, &p);
  EXPECT_EQ(p.requested, Tier::slow);
  EXPECT_EQ(p.achieved, Tier::fast);
  EXPECT_FALSE(p.warning.empty());
  const TierReport r = b->report();
  EXPECT_EQ(r.requested[int(ObjectClass::particle)][1], 4 * kMiB);
  EXPECT_EQ(r.achieved[int(ObjectClass::particle)][0], 4 * kMiB);
  EXPECT_EQ(r.achieved[int(ObjectClass::particle)][1], 0u);
}

TEST(TierBackend, GivenAnArenaHookThenItSeesTheMappingBeforeAnyPageIsResident) {
  // The contract binding relies on: the hook runs on a mapping with no page faulted in,
  // and the arena is fully resident afterwards.
  std::size_t resident_in_hook = ~std::size_t(0), seen = 0;
  Arena a("tier_test", 4 * kMiB, PagePolicy::none, 2 * kMiB, [&](void* p, std::size_t n) {
    const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> vec(n / page);
    ASSERT_EQ(::mincore(p, n, vec.data()), 0);
    resident_in_hook = 0;
    for (unsigned char v : vec) resident_in_hook += v & 1;
    seen = n;
  });
  EXPECT_EQ(resident_in_hook, 0u);
  EXPECT_EQ(seen, a.mapped_bytes());
  EXPECT_GE(a.report().rss_bytes, 4 * kMiB);
}

#ifdef TESSERA_HAVE_NUMA
TEST(TierBackend, GivenNumaBindToANodeThisMachineLacksThenVerifyReadsBackPagesOnNodeZero) {
  // A fake two-node topology on a real one-node machine: mbind to node 1 fails (EINVAL),
  // the pages fault on node 0, and the read-back says so page by page.
  TierTopology t = one_node();
  NumaNode slow;
  slow.id = 1;
  slow.mem_total = 64 * kGiBytes;
  t.nodes.push_back(slow);
  t.slow_nodes = {1};
  const TierTopology here = detect_tiers();
  if (here.node(1)) GTEST_SKIP() << "this machine has a node 1";
  auto b = make_tier_backend(TierBackendKind::numa, t);
  ASSERT_EQ(b->report().backend, "numa");
  TierPlacement p;
  const std::size_t bytes = 64 * kMiB;  // 16384 pages: sampled
  Arena a =
      make_tiered_arena(*b, "tier_test", bytes, ArenaConfig{}, ObjectClass::field, Tier::slow, &p);
  EXPECT_TRUE(contains(p.warning, "mbind to nodes {1} failed"));
  EXPECT_EQ(p.pages_checked, detail::kVerifyPages);
  EXPECT_EQ(p.achieved, Tier::fast);
  ASSERT_EQ(p.bytes_per_node.count(0), 1u);
  EXPECT_EQ(p.bytes_per_node.at(0), bytes);
  // Binding to node 0 succeeds and every sampled page is there.
  TierPlacement q;
  Arena f = make_tiered_arena(*b, "tier_test", 8 * kMiB, ArenaConfig{}, ObjectClass::metadata,
                              Tier::fast, &q);
  EXPECT_TRUE(q.warning.empty()) << q.warning;
  EXPECT_EQ(q.achieved_bytes[0], 8 * kMiB);
}
#endif

TEST(TierBackend, GivenEmulatedThenPlacementIsAsAskedAndLabelledEmulated) {
  auto b = make_tier_backend(TierBackendKind::emulated, one_node());
  TierPlacement p;
  Arena a = make_tiered_arena(*b, "tier_test", 2 * kMiB, ArenaConfig{}, ObjectClass::particle,
                              Tier::slow, &p);
  EXPECT_EQ(p.achieved, Tier::slow);
  const TierReport r = b->report();
  EXPECT_TRUE(r.emulated);
  EXPECT_EQ(r.backend, "emulated");
  const nlohmann::json j = r;
  EXPECT_TRUE(j.at("emulated").get<bool>());
  EXPECT_TRUE(
      contains(j.at("emulation").get<std::string>(), "39 GB/s read, 13 GB/s write, 304 ns"));
  EXPECT_EQ(j.at("classes").at("particle").at("achieved").at("slow").get<std::size_t>(), 2 * kMiB);
}

TEST(TierBackend, GivenAThrottledCopyThenItCopiesEveryByteAndTakesTheModelledTime) {
  SlowTierModel m;
  m.read_bw = 2e9;  // slow enough that this VM's memcpy is far faster
  m.write_bw = 1e9;
  const std::size_t bytes = 8 * kMiB;
  std::vector<unsigned char> src(bytes), dst(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  const double in =
      copy_between_tiers(dst.data(), src.data(), bytes, CopyDirection::slow_to_fast, m);
  EXPECT_EQ(std::memcmp(dst.data(), src.data(), bytes), 0);
  // At least the modelled time, less the thread's credit for earlier oversleeping
  // (emulated_sleep: at most 1 ms).
  EXPECT_GE(in, double(bytes) / 2e9 - 1e-3);
  EXPECT_LT(in, 25 * double(bytes) / 2e9);  // throttled, not stalled (loose: shared machine)
  const double out =
      copy_between_tiers(dst.data(), src.data(), bytes, CopyDirection::fast_to_slow, m);
  EXPECT_GE(out, double(bytes) / 1e9 - 1e-3);
}

TEST(TierBackend, GivenTwoHelperThreadsCopyingThenTheReportCountsCopiesBytesAndThreads) {
  SlowTierModel m;
  m.read_bw = 4e9;
  auto b = make_tier_backend(TierBackendKind::emulated, one_node(), m);
  const std::size_t bytes = 2 * kMiB;
  std::vector<char> s1(bytes, 1), d1(bytes), s2(bytes, 2), d2(bytes);
  std::thread t1([&] { b->copy(d1.data(), s1.data(), bytes, CopyDirection::slow_to_fast); });
  std::thread t2([&] { b->copy(d2.data(), s2.data(), bytes, CopyDirection::slow_to_fast); });
  t1.join();
  t2.join();
  const CopyStats c = b->report().copies[0];
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.bytes, 2 * bytes);
  EXPECT_EQ(c.helper_threads, 2);
  EXPECT_GE(c.seconds, 2 * double(bytes) / 4e9);
  EXPECT_EQ(d2[bytes - 1], 2);
}

TEST(TierBackend, GivenTheModelBackendThenCopyTimesArePredictedExactlyAndNothingIsTouched) {
  auto b = make_tier_backend(TierBackendKind::model, one_node());
  const double s = b->copy(nullptr, nullptr, 13'000'000'000, CopyDirection::fast_to_slow);
  EXPECT_DOUBLE_EQ(s, 1.0);  // 13 GB at the default 13 GB/s write
  EXPECT_DOUBLE_EQ(b->copy(nullptr, nullptr, 39'000'000, CopyDirection::slow_to_fast), 1e-3);
  EXPECT_EQ(b->report().copies[1].bytes, 13'000'000'000u);
}

TEST(TierBackend, SlowAccessPenaltyIsTheModelledGapToDramAndZeroForNoBytes) {
  const SlowTierModel m;
  // 1 GB sequential: 1/39 - 1/104 s.
  EXPECT_NEAR(slow_access_penalty(1'000'000'000, AccessPattern::sequential, m),
              1e9 / 39e9 - 1e9 / 104e9, 1e-12);
  // 64 KiB random: 1024 lines at (304 - 87) ns.
  EXPECT_NEAR(slow_access_penalty(64 * 1024, AccessPattern::random, m), 1024 * 217e-9, 1e-12);
  EXPECT_EQ(slow_access_penalty(0, AccessPattern::random, m), 0.0);
  // Writes stream at the slow tier's write bandwidth (13 GB/s against DRAM's 80).
  EXPECT_NEAR(slow_access_penalty(1'000'000'000, AccessPattern::sequential_write, m),
              1.0 / 13 - 1.0 / 80, 1e-12);
}

// ---------------------------------------------------------------------------------------
// Placement

std::vector<TierObject> study_objects() {
  // Allocation order as in WarpX: particles first, then fields, metadata, temporaries.
  return {{ObjectClass::particle, 600, "particles"},
          {ObjectClass::field, 150, "E"},
          {ObjectClass::field, 150, "B"},
          {ObjectClass::metadata, 10, "boxes"},
          {ObjectClass::temporary, 40, "comm"}};
}

TEST(TierPlacement, StaticPutsMetadataThenTemporariesThenFieldsThenParticlesInFastUntilFull) {
  const PlacementPlan p = plan_placement(study_objects(), PlacementPolicy::static_, 220);
  // 10 metadata + 40 temporary + 150 (first field) = 200 <= 220; the second field is
  // split (its first 20 fast), the particles do not fit.
  EXPECT_EQ(p.objects[3].tier, Tier::fast);
  EXPECT_EQ(p.objects[4].tier, Tier::fast);
  EXPECT_EQ(p.objects[1].tier, Tier::fast);
  EXPECT_EQ(p.objects[2].tier, Tier::slow);
  EXPECT_EQ(p.objects[2].fast_bytes, 20u);
  EXPECT_EQ(p.objects[2].slow_bytes, 130u);
  EXPECT_EQ(p.objects[0].tier, Tier::slow);
  EXPECT_EQ(p.objects[0].fast_bytes, 0u);
  EXPECT_EQ(p.fast_used, 220u);
  EXPECT_EQ(p.fast_used + p.slow_used, 950u);
  EXPECT_FALSE(p.prefetch);
}

TEST(TierPlacement, FirstTouchFillsFastInAllocationOrderAndSplitsTheBoundaryObject) {
  const PlacementPlan p = plan_placement(study_objects(), PlacementPolicy::first_touch, 700);
  // The study's failure mode: particles, allocated first, take the fast tier.
  EXPECT_EQ(p.objects[0].fast_bytes, 600u);
  EXPECT_EQ(p.objects[1].fast_bytes, 100u);
  EXPECT_EQ(p.objects[1].slow_bytes, 50u);
  EXPECT_EQ(p.objects[1].tier, Tier::slow);
  EXPECT_EQ(p.objects[3].tier, Tier::slow);  // even the metadata
  EXPECT_EQ(p.fast_used, 700u);
}

TEST(TierPlacement, FastOnlyAndSlowOnlyAreTheBaselinesAndOverflowIsNoted) {
  const PlacementPlan f = plan_placement(study_objects(), PlacementPolicy::fast_only, 500);
  EXPECT_EQ(f.fast_used, 950u);
  EXPECT_TRUE(contains(f.note, "over by"));
  const PlacementPlan s = plan_placement(study_objects(), PlacementPolicy::slow_only, 500);
  EXPECT_EQ(s.fast_used, 0u);
  EXPECT_EQ(s.slow_used, 950u);
}

TEST(TierPlacement, StaticPrefetchPlacesAsStaticAndAsksForPrefetch) {
  const PlacementPlan a = plan_placement(study_objects(), PlacementPolicy::static_, 220);
  const PlacementPlan b = plan_placement(study_objects(), PlacementPolicy::static_prefetch, 220);
  EXPECT_TRUE(b.prefetch);
  for (std::size_t i = 0; i < a.objects.size(); ++i)
    EXPECT_EQ(a.objects[i].tier, b.objects[i].tier);
}

TEST(TierPlacement, DynamicReservesThreeBatchesAndKeepsParticlesSlow) {
  // Batch 50: migration space 150; static gets 400 - 150 = 250: metadata, temporaries and
  // one field (200), and the second field's first 50.
  const PlacementPlan p = plan_placement(study_objects(), PlacementPolicy::dynamic, 400, 50);
  EXPECT_EQ(p.migration_bytes, 150u);
  EXPECT_EQ(p.objects[0].tier, Tier::slow);
  EXPECT_EQ(p.objects[1].tier, Tier::fast);
  EXPECT_EQ(p.objects[2].tier, Tier::slow);
  EXPECT_EQ(p.objects[2].fast_bytes, 50u);
  EXPECT_LE(p.fast_used + p.migration_bytes, 400u);
  EXPECT_TRUE(p.prefetch);
  // A space for one batch (the paper's sizing) would have let the second field in: 3x is
  // what makes i-1, i, i+1 fit.
  const PlacementPlan q = plan_placement(study_objects(), PlacementPolicy::dynamic, 100, 50);
  EXPECT_EQ(q.migration_bytes, 0u);
  EXPECT_TRUE(contains(q.note, "3 batches"));
}

TEST(TierPlacement, PolicyNamesParseAndABadOneIsAnErrorNamingTheChoices) {
  EXPECT_EQ(parse_placement("static"), PlacementPolicy::static_);
  EXPECT_EQ(std::string(to_string(PlacementPolicy::static_prefetch)), "static_prefetch");
  EXPECT_TRUE(contains(error_of([] { parse_placement("statik"); }), "choices: fast_only"));
}

// ---------------------------------------------------------------------------------------
// Models

TEST(TierModel, PrefetchDistanceOfThePapersExampleIsSix) {
  // All fields slow (f = 0), alpha 5 ns, beta2 lat_slow = 304 ns, 60 ns per particle.
  const PrefetchModel m{5e-9, 1.0, 1.0};
  const double t = prefetch_time(m, 0.0, 79e-9, 304e-9);
  EXPECT_NEAR(t, 309e-9, 1e-18);
  EXPECT_EQ(prefetch_distance(t, 60e-9), 6);
  EXPECT_EQ(prefetch_distance(300e-9, 60e-9), 5);  // an exact ratio is not rounded up
}

TEST(TierModel, PrefetchTimeFallsAsMoreFieldsAreFastAndRejectsARatioAboveOne) {
  const PrefetchModel m{5e-9, 1.0, 1.0};
  EXPECT_LT(prefetch_time(m, 1.0, 79e-9, 304e-9), prefetch_time(m, 0.5, 79e-9, 304e-9));
  // The paper's f = fast/slow = 3 would make 1 - f negative.
  EXPECT_TRUE(contains(error_of([&] { prefetch_time(m, 3.0, 79e-9, 304e-9); }), "fraction"));
}

TEST(TierModel, FitRecoversAlphaBetasFromTwoLatencyPairsAndRefusesOne) {
  const PrefetchModel truth{5e-9, 0.8, 1.1};
  std::vector<PrefetchSample> s;
  for (const auto& [lf, ls] : {std::pair{79e-9, 174e-9}, std::pair{87e-9, 304e-9}})
    for (double f : {0.0, 0.25, 0.5, 0.75, 1.0})
      s.push_back({f, lf, ls, prefetch_time(truth, f, lf, ls)});
  const PrefetchModel m = fit_prefetch_model(s);
  EXPECT_NEAR(m.alpha, truth.alpha, 1e-6 * truth.alpha);
  EXPECT_NEAR(m.beta1, truth.beta1, 1e-6);
  EXPECT_NEAR(m.beta2, truth.beta2, 1e-6);
  // With one latency pair the three regressors are collinear.
  std::vector<PrefetchSample> one(s.begin(), s.begin() + 5);
  EXPECT_TRUE(contains(error_of([&] { fit_prefetch_model(one); }), "not identifiable"));
}

TEST(TierModel, TheStudysTypicalInputsGiveTwoHelperThreads) {
  const HelperDecision d = choose_helper_threads(study_typical_inputs());
  ASSERT_TRUE(d.feasible) << d.why;
  EXPECT_EQ(d.n_cp, 2);
  EXPECT_EQ(d.n_comp, 22);
  EXPECT_LE(d.t_cp, d.t_comp);
  EXPECT_LE(d.bw_used, d.bw_budget);
  EXPECT_TRUE(contains(d.why, "n_cp = 1: overlap")) << d.why;
}

TEST(TierModel, WhenComputeIsLongOneHelperThreadSuffices) {
  HelperInputs in = study_typical_inputs();
  for (auto& t : in.t_comp) t *= 2;  // 300 ns per particle: T_comp(23) 3.4 ms > T_out(1) 2.6 ms
  const HelperDecision d = choose_helper_threads(in);
  ASSERT_TRUE(d.feasible);
  EXPECT_EQ(d.n_cp, 1);
  EXPECT_EQ(d.n_comp, 23);
}

TEST(TierModel, WhenTwoRanksShareTheSocketTheBandwidthConstraintBindsAndNothingFits) {
  HelperInputs in = study_typical_inputs();
  in.n_ranks = 2;  // budget 19.5 GB/s: 8 + 16 + 13 does not fit, 1 helper misses overlap
  const HelperDecision d = choose_helper_threads(in);
  EXPECT_FALSE(d.feasible);
  EXPECT_TRUE(contains(d.why, "infeasible")) << d.why;
  EXPECT_TRUE(contains(d.why, "n_cp = 2: bandwidth")) << d.why;
  EXPECT_NEAR(d.bw_budget, 19.5e9, 1);
}

TEST(TierModel, WhenThreeHelpersWouldBeNeededOnFourThreadsTheThreadConstraintBinds) {
  HelperInputs in;
  in.n_max = 4;
  in.data_in = in.data_out = 30e6;
  in.bw_slow_to_fast = {0, 10e9, 20e9, 30e9, 40e9};
  in.bw_fast_to_slow = {0, 10e9, 20e9, 30e9, 40e9};
  in.t_comp = {0, 1.2e-3, 1.2e-3, 1.2e-3, 1.2e-3};  // needs T_cp <= 1.2 ms: 3 helpers (1 ms)
  in.bw_comp = {0, 0, 0, 0, 0};  // the application's own traffic: negligible here
  const HelperDecision d = choose_helper_threads(in);
  EXPECT_FALSE(d.feasible);
  EXPECT_TRUE(contains(d.why, "n_cp = 3: threads")) << d.why;
  // One more hardware thread does not help: n_max = 5 needs n_comp >= 3, so 3 helpers
  // would need 6 threads.
  in.n_max = 5;
  for (auto* v : {&in.bw_slow_to_fast, &in.bw_fast_to_slow}) v->push_back(50e9);
  in.t_comp.push_back(1.2e-3);
  in.bw_comp.push_back(0);
  EXPECT_FALSE(choose_helper_threads(in).feasible);
  // With a longer interval (1.6 ms >= T_cp(2) 1.5 ms) two helpers fit beside n_comp = 2.
  in.n_max = 4;
  in.t_comp = {0, 1.6e-3, 1.6e-3, 1.6e-3, 1.6e-3, 1.6e-3};
  const HelperDecision e = choose_helper_threads(in);
  ASSERT_TRUE(e.feasible) << e.why;
  EXPECT_EQ(e.n_cp, 2);
  EXPECT_EQ(e.n_comp, 2);
}

TEST(TierModel, NoDataToMoveNeedsNoHelperThreads) {
  HelperInputs in = study_typical_inputs();
  in.data_in = in.data_out = 0;
  const HelperDecision d = choose_helper_threads(in);
  EXPECT_TRUE(d.feasible);
  EXPECT_EQ(d.n_cp, 0);
  EXPECT_EQ(d.n_comp, 24);
}

// ---------------------------------------------------------------------------------------
// Benchmark and parameters

TEST(TierBench, SmokeCurveIsPositiveAndFinite) {
  const auto curve = copy_bandwidth_curve(2, kMiB, 2);
  ASSERT_EQ(curve.size(), 2u);
  for (const auto& p : curve) {
    EXPECT_TRUE(std::isfinite(p.bytes_per_second));
    EXPECT_GT(p.bytes_per_second, 0);
    EXPECT_GT(p.seconds, 0);
  }
}

TEST(TierParams, DefaultsAreTheStudysOptaneAndABadValueIsOneLine) {
  base::Params p;
  declare_params(p);
  const TierConfig c = tier_config(p);
  EXPECT_EQ(c.backend, TierBackendKind::none);
  EXPECT_DOUBLE_EQ(c.slow.read_bw, 39e9);
  EXPECT_DOUBLE_EQ(c.slow.write_bw, 13e9);
  EXPECT_DOUBLE_EQ(c.slow.latency, 304e-9);
  EXPECT_EQ(c.fast_bytes, 0u);
  EXPECT_EQ(fast_capacity(c, one_node()), 16 * kGiBytes);  // unset: the fast nodes' memory
  p.apply_override("memory.tier.fast_bytes=8G");
  p.apply_override("memory.tier.placement=dynamic");
  EXPECT_EQ(tier_config(p).fast_bytes, 8 * kGiBytes);
  EXPECT_EQ(tier_config(p).placement, PlacementPolicy::dynamic);
  p.apply_override("memory.tier.fast_bytes=eight");
  const std::string e = error_of([&] { check_params(p); });
  EXPECT_TRUE(contains(e, "memory.tier.fast_bytes"));
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_TRUE(contains(error_of([&] { p.apply_override("memory.tier.backend=cxl"); }),
                       "memory.tier.backend"));
}

}  // namespace
}  // namespace tessera::memory

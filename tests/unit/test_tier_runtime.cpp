// Specification of the tier runtime (memory/tier_runtime) and the batch streamer
// (memory/tier_stream): every arena mapped while a runtime is installed is decided, bound,
// verified and ledgered, and forgotten when unmapped; the placement policies decide as the
// WarpX-PM study does at run time (first touch before the first step, then static by
// class; dynamic keeps particles slow behind a three-batch migration space); charges of
// slow reads are slept (emulated) or added up (model); the prefetch distance is eq (1)-(2)
// with the ledger's field fraction; and streaming a SoA kernel batch by batch through the
// fast slots gives the bits of computing in place, writing back only what was modified.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "memory/arena.hpp"
#include "memory/tier_backend.hpp"
#include "memory/tier_runtime.hpp"
#include "memory/tier_stream.hpp"
#include "memory/tiers.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::memory {
namespace {

using tessera::testing_util::contains;
using tessera::testing_util::error_of;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One node with CPUs and 16 GiB, like this VM.
TierTopology one_node() {
  TierTopology t;
  NumaNode n;
  n.id = 0;
  n.has_cpu = true;
  n.mem_total = std::size_t(16) << 30;
  t.nodes = {n};
  t.fast_nodes = {0};
  t.reason = "one NUMA node: no slow tier";
  return t;
}

TierConfig config(TierBackendKind b, PlacementPolicy p, std::size_t fast_bytes) {
  TierConfig c;
  c.backend = b;
  c.placement = p;
  c.fast_bytes = fast_bytes;
  return c;
}

const LedgerEntry* find(const std::vector<LedgerEntry>& l, const std::string& name) {
  for (const auto& e : l)
    if (e.name == name) return &e;
  return nullptr;
}

using Split = std::array<std::size_t, 2>;

// Threads of this process (/proc/self/status).
int thread_count() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

// ------------------------------------------------------------------------ the runtime

TEST(TierRuntime, GivenTheDefaultsThenNoRuntimeIsWantedAndArenasMeetNoPlacer) {
  EXPECT_FALSE(TierRuntime::wanted(TierConfig{}));
  EXPECT_TRUE(TierRuntime::wanted(config(TierBackendKind::model, PlacementPolicy::fast_only, 0)));
  EXPECT_TRUE(TierRuntime::wanted(config(TierBackendKind::none, PlacementPolicy::static_, 0)));
  EXPECT_EQ(tier_runtime(), nullptr);
  EXPECT_EQ(arena_placer(), nullptr);
}

TEST(TierRuntime, GivenFastOnlyThenEveryArenaIsLedgeredFastAndUnmappingRemovesIt) {
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::fast_only, 0), one_node());
  EXPECT_EQ(tier_runtime(), &rt);
  {
    Arena a("unk", 4 * kMiB, PagePolicy::none);
    Arena b("particles", 2 * kMiB, PagePolicy::none);
    const auto l = rt.ledger();
    ASSERT_EQ(l.size(), 2u);
    EXPECT_EQ(l[0].name, "unk");
    EXPECT_EQ(l[0].cls, ObjectClass::field);
    EXPECT_EQ(l[0].addr, reinterpret_cast<std::uintptr_t>(a.data()));
    EXPECT_EQ(l[0].requested, (Split{4 * kMiB, 0}));
    EXPECT_EQ(l[0].achieved, (Split{4 * kMiB, 0}));
    EXPECT_EQ(l[1].cls, ObjectClass::particle);
    Arena moved = std::move(b);  // a move keeps the mapping: still one entry
    EXPECT_EQ(rt.ledger().size(), 2u);
  }
  EXPECT_TRUE(rt.ledger().empty());
  const auto j = rt.to_json();
  EXPECT_EQ(j["classes"]["field"]["peak"]["fast"], 4 * kMiB);
  EXPECT_EQ(j["classes"]["field"]["peak"]["slow"], 0u);
}

TEST(TierRuntime, GivenSlowOnlyThenNothingIsFast) {
  TierRuntime rt(config(TierBackendKind::emulated, PlacementPolicy::slow_only, 0), one_node());
  Arena a("unk", 2 * kMiB, PagePolicy::none), f("flux", kMiB, PagePolicy::none);
  for (const auto& e : rt.ledger()) {
    EXPECT_EQ(e.requested[0], 0u) << e.name;
    EXPECT_EQ(e.achieved, (Split{0, e.bytes})) << e.name;
  }
}

TEST(TierRuntime, GivenAnArenaWithItsOwnBeforeTouchThenThePlacerLeavesItToItsCaller) {
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::slow_only, 0), one_node());
  bool called = false;
  Arena a("unk", kMiB, PagePolicy::none, 2 * kMiB, [&](void*, std::size_t) { called = true; });
  EXPECT_TRUE(called);
  EXPECT_TRUE(rt.ledger().empty());
}

TEST(TierRuntime, GivenFirstTouchThenMappingOrderFillsFastAndTheBoundaryArenaIsSplitOnAPage) {
  const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::first_touch, 3 * kMiB + 100),
                 one_node());
  Arena unk("unk", 2 * kMiB, PagePolicy::none);
  Arena part("particles", 2 * kMiB, PagePolicy::none);
  auto l = rt.ledger();
  EXPECT_EQ(find(l, "unk")->requested, (Split{2 * kMiB, 0}));
  // 1 MiB + 100 bytes are left: the split falls on the page below.
  EXPECT_EQ(find(l, "particles")->requested, (Split{kMiB, kMiB}));
  EXPECT_EQ((kMiB + 100) / page * page, kMiB);
  {
    Arena flux("flux", kMiB, PagePolicy::none);
    EXPECT_EQ(find(rt.ledger(), "flux")->requested, (Split{0, kMiB}));
  }
  unk = Arena();  // freed fast pages are taken by the next mapping, as the kernel does
  Arena scratch("scratch", kMiB, PagePolicy::none);
  EXPECT_EQ(find(rt.ledger(), "scratch")->requested, (Split{kMiB, 0}));
  EXPECT_FALSE(rt.static_pending());
  EXPECT_EQ(rt.place_static(0), "");
}

TEST(TierRuntime, GivenStaticThenPlaceStaticMovesArenasByClassAndLaterOnesTakeWhatIsLeft) {
  // Particles mapped first take the fast tier by first touch (the study's first-touch
  // failure); after the first step static placement puts temporaries and fields first.
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::static_, 3 * kMiB), one_node());
  Arena part("particles", 2 * kMiB, PagePolicy::none);
  Arena unk("unk", 2 * kMiB, PagePolicy::none);
  Arena flux("flux", kMiB / 2, PagePolicy::none);
  auto l = rt.ledger();
  EXPECT_FALSE(rt.streaming());
  EXPECT_EQ(find(l, "particles")->requested, (Split{2 * kMiB, 0}));
  EXPECT_EQ(find(l, "unk")->requested, (Split{kMiB, kMiB}));
  EXPECT_EQ(find(l, "flux")->requested, (Split{0, kMiB / 2}));
  EXPECT_TRUE(rt.static_pending());

  const std::string line = rt.place_static(0);
  EXPECT_TRUE(contains(line, "memory: tiers (model): static placement (static)"));
  EXPECT_TRUE(contains(line, "3 of 3 arenas moved"));
  EXPECT_FALSE(rt.static_pending());
  l = rt.ledger();
  EXPECT_EQ(find(l, "flux")->requested, (Split{kMiB / 2, 0}));
  EXPECT_EQ(find(l, "unk")->requested, (Split{2 * kMiB, 0}));
  EXPECT_EQ(find(l, "particles")->requested, (Split{0, 2 * kMiB}));
  EXPECT_EQ(find(l, "particles")->achieved, (Split{0, 2 * kMiB}));
  EXPECT_EQ(find(l, "unk")->moves, 1);
  // Moves are copies: model predicts bytes over the slow side's bandwidth.
  const TierReport r = rt.backend().report();
  const auto& in = r.copies[int(CopyDirection::slow_to_fast)];
  const auto& out = r.copies[int(CopyDirection::fast_to_slow)];
  EXPECT_EQ(in.bytes, kMiB / 2 + kMiB);  // flux whole, unk's slow half
  EXPECT_EQ(out.bytes, 2 * kMiB);        // particles
  EXPECT_DOUBLE_EQ(out.seconds, double(2 * kMiB) / 13e9);
  EXPECT_EQ(in.helper_threads, 0);    // moved by the placing thread
  EXPECT_EQ(rt.place_static(0), "");  // once

  // Later mappings: first fit into what is left (0.5 MiB).
  Arena st1("staging", kMiB / 4, PagePolicy::none);
  Arena st2("staging", kMiB, PagePolicy::none);
  l = rt.ledger();
  EXPECT_EQ(l[3].requested, (Split{kMiB / 4, 0}));
  EXPECT_EQ(l[4].requested, (Split{0, kMiB}));
  const auto j = rt.to_json();
  EXPECT_EQ(j["classes"]["particle"]["achieved"]["fast"], 0u);
  EXPECT_EQ(j["classes"]["field"]["achieved"]["fast"], 2 * kMiB);
  EXPECT_EQ(j["static_placement"]["moves"]["to_slow"]["bytes"], 2 * kMiB);
  EXPECT_EQ(j["placement"], "static");
  EXPECT_EQ(j["fast_bytes"], 3 * kMiB);
  EXPECT_EQ(j["emulated"], true);
}

TEST(TierRuntime, GivenDynamicThenParticlesStaySlowAndThreeBatchesAreReservedForMigration) {
  TierConfig c = config(TierBackendKind::model, PlacementPolicy::dynamic, 4 * kMiB);
  c.helper_threads = 1;
  TierRuntime rt(c, one_node());
  Arena unk("unk", 2 * kMiB, PagePolicy::none);
  Arena part("particles", kMiB, PagePolicy::none);
  EXPECT_EQ(find(rt.ledger(), "particles")->requested, (Split{kMiB, 0}));  // first touch
  EXPECT_FALSE(rt.streaming());  // not before the first step's static placement
  rt.place_static(256 * 1024);
  EXPECT_TRUE(rt.streaming());
  EXPECT_EQ(find(rt.ledger(), "particles")->requested, (Split{0, kMiB}));
  EXPECT_EQ(rt.to_json()["plan"]["migration_bytes"], 3 * 256 * 1024);
  // 4 MiB - 2 MiB (unk) - 768 KiB (reserve) = 1.25 MiB left: a field fits, particles never.
  Arena grown("particles", kMiB, PagePolicy::none);
  Arena rk("rk_stage", kMiB, PagePolicy::none);
  Arena slots("migration", 768 * 1024, PagePolicy::none);
  const auto l = rt.ledger();
  EXPECT_EQ(l[2].requested, (Split{0, kMiB}));
  EXPECT_EQ(find(l, "rk_stage")->requested, (Split{kMiB, 0}));
  EXPECT_EQ(find(l, "migration")->requested, (Split{768 * 1024, 0}));
  EXPECT_EQ(find(l, "migration")->cls, ObjectClass::temporary);
}

TEST(TierRuntime, GivenNumaOnThisOneNodeMachineThenItFallsBackToNoneAndSaysSoOnce) {
  const TierTopology topo = detect_tiers();
  if (topo.nodes.size() > 1) GTEST_SKIP() << "this machine has more than one NUMA node";
  TierRuntime rt(config(TierBackendKind::numa, PlacementPolicy::static_, 0), topo);
  EXPECT_EQ(rt.backend_kind(), TierBackendKind::none);
  EXPECT_TRUE(contains(rt.backend_warning(), "numa: ")) << rt.backend_warning();
  EXPECT_TRUE(contains(rt.backend_warning(), "falling back to none"));
  EXPECT_FALSE(rt.emulated());
  EXPECT_EQ(rt.log_prefix(), "memory: tiers: ");
  const auto j = rt.to_json();
  EXPECT_EQ(j["backend"], "none");
  EXPECT_EQ(j["backend_requested"], "numa");
  EXPECT_EQ(j["warning"], rt.backend_warning());
}

TEST(TierRuntime, GivenOneInstalledThenASecondIsAnError) {
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::fast_only, 0), one_node());
  EXPECT_TRUE(contains(error_of([] {
                         TierRuntime again(
                             config(TierBackendKind::model, PlacementPolicy::fast_only, 0),
                             one_node());
                       }),
                       "installed already"));
  EXPECT_EQ(tier_runtime(), &rt);
}

TEST(TierRuntime, GivenEmulationThenEveryLogLineAndTheSummarySayEmulated) {
  TierRuntime rt(config(TierBackendKind::emulated, PlacementPolicy::static_, 0), one_node());
  for (const auto& line : rt.describe()) EXPECT_TRUE(contains(line, "memory: tiers (emulated): "));
  const auto j = rt.to_json();
  EXPECT_EQ(j["emulated"], true);
  EXPECT_TRUE(contains(j["label"].get<std::string>(), "emulated: slow tier modelled"));
}

TEST(TierRuntime, GivenEmulationThenChargedSlowReadsAreSleptByPayAndCountedPerPhase) {
  TierConfig c = config(TierBackendKind::emulated, PlacementPolicy::slow_only, 0);
  c.slow.read_bw = 2e9;
  TierRuntime rt(c, one_node());
  Arena a("particles", 8 * kMiB, PagePolicy::none);
  const double want = slow_access_penalty(8 * kMiB, AccessPattern::sequential, c.slow);
  EXPECT_GT(want, 3e-3);
  rt.charge(static_cast<char*>(a.data()), 4 * kMiB, AccessPattern::sequential);
  rt.charge(static_cast<char*>(a.data()) + 4 * kMiB, 4 * kMiB, AccessPattern::sequential);
  int outside = 0;
  rt.charge(&outside, 4 * kMiB, AccessPattern::sequential);  // not in an arena: free
  const auto t0 = Clock::now();
  const double paid = rt.pay("pic/push");
  const double slept = since(t0);
  EXPECT_NEAR(paid, want, 1e-12);
  EXPECT_GE(slept, 0.95 * want);
  EXPECT_EQ(rt.pay("pic/push"), 0.0);  // settled
  rt.charge(a.data(), kMiB, AccessPattern::random);
  rt.pay("pic/gather");
  const auto ch = rt.charged();
  EXPECT_NEAR(ch.at("pic/push"), want, 1e-12);
  EXPECT_NEAR(ch.at("pic/gather"), slow_access_penalty(kMiB, AccessPattern::random, c.slow), 1e-12);
  EXPECT_NEAR(rt.to_json()["charged_seconds"]["pic/push"].get<double>(), want, 1e-12);
}

TEST(TierRuntime, GivenASplitArenaThenOnlyItsSlowTailIsCharged) {
  TierConfig c = config(TierBackendKind::model, PlacementPolicy::first_touch, kMiB);
  TierRuntime rt(c, one_node());
  Arena a("unk", 4 * kMiB, PagePolicy::none);            // 1 MiB fast, 3 MiB slow
  rt.charge(a.data(), kMiB, AccessPattern::sequential);  // all fast: free
  EXPECT_EQ(rt.pay("x"), 0.0);
  rt.charge(static_cast<char*>(a.data()) + kMiB / 2, kMiB, AccessPattern::sequential);
  const auto t0 = Clock::now();
  const double d = rt.pay("x");
  EXPECT_NEAR(d, slow_access_penalty(kMiB / 2, AccessPattern::sequential, c.slow), 1e-15);
  EXPECT_LT(since(t0), 0.5 * 1e-3 + d);  // model: predicted, not slept (allow scheduling)
}

TEST(TierRuntime, GivenNoneOrNumaThenChargesAreFreeBecauseTheHardwarePays) {
  TierRuntime rt(config(TierBackendKind::none, PlacementPolicy::slow_only, 0), one_node());
  Arena a("unk", kMiB, PagePolicy::none);
  rt.charge(a.data(), kMiB, AccessPattern::random);
  EXPECT_EQ(rt.pay("x"), 0.0);
  EXPECT_TRUE(rt.charged().empty());
  // none has no slow tier: a slow request is reported achieved fast, with the reason.
  const auto l = rt.ledger();
  EXPECT_EQ(l[0].requested, (Split{0, kMiB}));
  EXPECT_EQ(l[0].achieved, (Split{kMiB, 0}));
  EXPECT_TRUE(contains(l[0].warning, "no slow tier"));
}

TEST(TierRuntime, PrefetchDistanceUsesTheLedgersFieldFractionAndTheStudysCoefficients) {
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::static_prefetch, 2 * kMiB),
                 one_node());
  Arena unk("unk", 4 * kMiB, PagePolicy::none);  // first touch: half the fields fast
  // Eq (2): 5 ns + 0.5 * 87 ns + 0.5 * 304 ns = 200.5 ns; eq (1) at 50 ns: ceil(4.01) = 5.
  EXPECT_EQ(rt.prefetch_distance(50e-9), 5);
  const PrefetchRecord p = rt.prefetch_record();
  EXPECT_DOUBLE_EQ(p.f, 0.5);
  EXPECT_NEAR(p.prefetch_time, 200.5e-9, 1e-18);
  EXPECT_EQ(p.latency_source, "emulated model (SlowTierModel)");
  EXPECT_TRUE(contains(error_of([&] { rt.prefetch_distance(0); }), "time_per_particle"));
  rt.place_static(0);  // static splits the 4 MiB field: its first 2 MiB stay fast
  EXPECT_EQ(rt.prefetch_distance(60e-9), 4);  // ceil(200.5 / 60)
  EXPECT_DOUBLE_EQ(rt.prefetch_record().f, 0.5);
}

TEST(TierRuntime, PrefetchDistanceGivesTheStudysExampleWhenTheFieldsAreSlow) {
  // One 4 KiB page of fast memory: f = 1/1024, prefetch time ~ 5 + 304 ns.
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::static_prefetch, 4096),
                 one_node());
  Arena unk("unk", 4 * kMiB, PagePolicy::none);
  EXPECT_EQ(rt.prefetch_distance(60e-9), 6);  // the study's example: ceil(309 / 60)
  EXPECT_NEAR(rt.prefetch_record().f, 1.0 / 1024, 1e-15);
}

TEST(TierRuntime, PrefetchDistanceIsZeroWithoutPrefetchOrWithoutSlowFields) {
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::first_touch, kMiB), one_node());
  Arena unk("unk", 4 * kMiB, PagePolicy::none);
  EXPECT_EQ(rt.prefetch_distance(50e-9), 0);  // first_touch does not prefetch
}

TEST(TierRuntime, PrefetchDistanceIsZeroWhenEveryFieldByteIsFast) {
  TierRuntime rt(config(TierBackendKind::model, PlacementPolicy::dynamic, 64 * kMiB), one_node());
  Arena unk("unk", 4 * kMiB, PagePolicy::none);
  EXPECT_EQ(rt.prefetch_distance(50e-9), 0);
  EXPECT_DOUBLE_EQ(rt.prefetch_record().f, 1.0);
}

// ------------------------------------------------------------------------ the streamer

// A SoA particle set: three f64 arrays (x, v, w), int64 tag, int32 node, of capacity n.
struct Soa {
  std::size_t cap;
  std::vector<double> x, v, w;
  std::vector<std::int64_t> tag;
  std::vector<std::int32_t> node;
  explicit Soa(std::size_t n) : cap(n), x(n), v(n), w(n), tag(n), node(n) {
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = std::sin(0.1 * double(i));
      v[i] = std::cos(0.37 * double(i)) * 1e3;
      w[i] = 1.0 + 1e-3 * double(i % 17);
      tag[i] = std::int64_t(i) * 3 + 1;
      node[i] = std::int32_t(i / 100);
    }
  }
  std::vector<StreamArray> arrays() {
    return {{x.data(), 8}, {v.data(), 8}, {w.data(), 8}, {tag.data(), 8}, {node.data(), 4}};
  }
};
constexpr std::uint64_t kKernelWrites = modified_bit(0) | modified_bit(1) | modified_bit(3);

// The kernel on one batch of n particles: a push-like update of x, v and tag that reads w
// and node. Writes only x, v, tag.
void kernel(double* x, double* v, const double* w, std::int64_t* tag, const std::int32_t* node,
            std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) {
    v[j] = v[j] * 0.999 - x[j] * w[j] * 1e-2 + double(node[j]) * 1e-7;
    x[j] = x[j] + v[j] * 1e-6;
    tag[j] += node[j] + 7;
  }
}

void in_place(Soa& s, const std::vector<BatchRange>& batches) {
  for (const auto& b : batches)
    kernel(s.x.data() + b.begin, s.v.data() + b.begin, s.w.data() + b.begin, s.tag.data() + b.begin,
           s.node.data() + b.begin, b.size());
}

// Streams the kernel; `scribble`: also write into the staged copy of w (declared unmodified).
void streamed(TierStreamer& st, Soa& s, const std::vector<BatchRange>& batches, bool scribble,
              const std::string& phase = "push") {
  st.begin_phase(phase, batches, s.arrays());
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const StagedBatch& b = st.acquire(i);
    EXPECT_EQ(b.begin, batches[i].begin);
    EXPECT_EQ(b.size, batches[i].size());
    kernel(b.array<double>(0), b.array<double>(1), b.array<double>(2), b.array<std::int64_t>(3),
           b.array<std::int32_t>(4), b.size);
    if (scribble)
      for (std::size_t j = 0; j < b.size; ++j) b.array<double>(2)[j] = -1.0;
    st.release(i, kKernelWrites);
  }
  st.end_phase();
}

bool same_bits(const Soa& a, const Soa& b) {
  return std::memcmp(a.x.data(), b.x.data(), a.cap * 8) == 0 &&
         std::memcmp(a.v.data(), b.v.data(), a.cap * 8) == 0 &&
         std::memcmp(a.w.data(), b.w.data(), a.cap * 8) == 0 &&
         std::memcmp(a.tag.data(), b.tag.data(), a.cap * 8) == 0 &&
         std::memcmp(a.node.data(), b.node.data(), a.cap * 4) == 0;
}

// Uneven batches with empty ones, at the start, middle and end, over 300000 particles
// (a batch of up to 170000 particles is 6 MiB: several 1 MiB chunks per array).
const std::vector<BatchRange> kBatches = {{0, 0},           {0, 1000},        {1000, 1000},
                                          {1000, 171000},   {171000, 171013}, {171013, 250000},
                                          {250000, 250000}, {250000, 300000}, {300000, 300000}};
constexpr std::size_t kN = 300000;

std::unique_ptr<TierBackend> fast_emulation() {
  SlowTierModel m;
  m.read_bw = m.write_bw = 1e12;  // throttling never engages: quick
  return make_tier_backend(TierBackendKind::emulated, one_node(), m);
}

TEST(TierStream, StreamingASoaKernelGivesTheBitsOfComputingInPlaceWithOneTwoOrThreeHelpers) {
  Soa ref(kN);
  in_place(ref, kBatches);
  in_place(ref, kBatches);
  for (auto kind : {TierBackendKind::none, TierBackendKind::emulated, TierBackendKind::model})
    for (int helpers : {1, 2, 3}) {
      auto backend = kind == TierBackendKind::emulated ? fast_emulation()
                                                       : make_tier_backend(kind, one_node());
      StreamerOptions o;
      o.helper_threads = helpers;
      Soa s(kN);
      {
        TierStreamer st(*backend, o);
        streamed(st, s, kBatches, false);
        streamed(st, s, kBatches, false);  // a second run reuses the slots
        EXPECT_EQ(st.helper_threads("push"), helpers);
      }
      EXPECT_TRUE(same_bits(s, ref)) << to_string(kind) << " with " << helpers << " helpers";
      const TierReport r = backend->report();
      // Every non-empty batch is fetched whole and its three modified arrays written back.
      const std::size_t fetched = 2 * kN * (8 + 8 + 8 + 8 + 4);
      const std::size_t written = 2 * kN * (8 + 8 + 8);
      EXPECT_EQ(r.copies[0].bytes, fetched) << to_string(kind);
      EXPECT_EQ(r.copies[1].bytes, written) << to_string(kind);
      if (kind != TierBackendKind::model) {
        EXPECT_GE(r.copies[0].helper_threads, 1);
        EXPECT_LE(r.copies[0].helper_threads, helpers);
      }
    }
}

TEST(TierStream, GivenAnArrayNotMarkedModifiedThenItsWriteBackIsReallySkipped) {
  auto backend = fast_emulation();
  StreamerOptions o;
  o.helper_threads = 2;
  TierStreamer st(*backend, o);
  Soa s(kN), ref(kN);
  in_place(ref, kBatches);
  streamed(st, s, kBatches, /*scribble=*/true);  // w's staged copy is overwritten, not marked
  EXPECT_TRUE(same_bits(s, ref));                // so the original w is untouched
  const auto stats = st.phase_stats().at("push");
  EXPECT_EQ(stats.bytes_out, kN * 24);
  EXPECT_EQ(stats.bytes_skipped, kN * (8 + 4));
  EXPECT_EQ(stats.batches, 5);  // the non-empty ones
  EXPECT_EQ(backend->report().copies[1].bytes, kN * 24);
}

TEST(TierStream, GivenTheModelBackendThenAcquireReturnsTheOriginalArraysAndRecordsPredictions) {
  auto backend = make_tier_backend(TierBackendKind::model, one_node());
  StreamerOptions o;
  o.helper_threads = 1;
  TierStreamer st(*backend, o);
  Soa s(kN);
  st.begin_phase("push", kBatches, s.arrays());
  const StagedBatch& b0 = st.acquire(0);
  EXPECT_EQ(b0.size, 0u);
  st.release(0, 0);
  const StagedBatch& b = st.acquire(1);
  EXPECT_EQ(b.array<double>(0), s.x.data());
  EXPECT_EQ(b.array<std::int32_t>(4), s.node.data());
  st.release(1, kAllModified);
  for (std::size_t i = 2; i < kBatches.size(); ++i) {
    const StagedBatch& c = st.acquire(i);
    EXPECT_EQ(c.array<double>(1), s.v.data() + kBatches[i].begin);
    st.release(i, 0);
  }
  st.end_phase();
  const TierReport r = backend->report();
  EXPECT_NEAR(r.copies[0].seconds, double(kN * 36) / 39e9, 1e-12 * double(kN * 36) / 39e9);
  EXPECT_EQ(r.copies[1].bytes, 1000u * 36);
  EXPECT_EQ(st.report()["arena_bytes"], 0u);  // nothing staged: no slots mapped
}

TEST(TierStream, TheProtocolIsCheckedAndErrorsNameTheBatch) {
  auto backend = fast_emulation();
  StreamerOptions o;
  o.helper_threads = 1;
  TierStreamer st(*backend, o);
  Soa s(kN);
  st.begin_phase("deposit", kBatches, s.arrays());
  EXPECT_TRUE(contains(error_of([&] { st.acquire(1); }), "acquire(1) out of order"));
  st.acquire(0);
  EXPECT_TRUE(contains(error_of([&] { st.acquire(1); }), "after release(0)"));
  st.release(0, 0);
  st.acquire(1);
  EXPECT_TRUE(contains(error_of([&] { st.end_phase(); }), "batch 1 not released"));
  // A new phase after an abandoned one starts cleanly.
  streamed(st, s, kBatches, false, "deposit");
}

// Given a kernel that throws with batch 1 acquired, when the phase is abandoned, then the
// copies in flight have finished (the originals are no longer touched), nothing of the
// unreleased batch is written back, and the next phase runs and gives the in-place bits.
TEST(TierStream, GivenAnAbandonedPhaseThenItsCopiesAreDrainedAndTheNextPhaseRunsCleanly) {
  auto backend = fast_emulation();
  StreamerOptions o;
  o.helper_threads = 2;
  TierStreamer st(*backend, o);
  Soa s(kN), before(kN), ref(kN);
  st.begin_phase("push", kBatches, s.arrays());
  st.acquire(0);
  st.release(0, 0);
  const StagedBatch& b = st.acquire(1);  // the kernel writes, then throws before release
  for (std::size_t j = 0; j < b.size; ++j) b.array<double>(0)[j] = -1.0;
  st.abandon_phase();
  st.abandon_phase();                 // a no-op outside a phase
  EXPECT_TRUE(same_bits(s, before));  // nothing released as modified: nothing written back
  in_place(ref, kBatches);
  streamed(st, s, kBatches, false);
  EXPECT_TRUE(same_bits(s, ref));
}

// A backend whose copies fail after `ok` successful ones.
class FailingBackend final : public TierBackend {
 public:
  explicit FailingBackend(int ok) : TierBackend(TierReport{}), ok_(ok) {}
  void bind(void*, std::size_t, Tier) override {}
  TierPlacement verify(const void*, std::size_t, ObjectClass, Tier) override { return {}; }
  double copy(void* dst, const void* src, std::size_t bytes, CopyDirection) override {
    if (ok_.fetch_sub(1) <= 0) throw std::runtime_error("injected copy failure");
    std::memcpy(dst, src, bytes);
    return 0;
  }
  double move(void*, std::size_t, Tier, Tier) override { return 0; }

 private:
  std::atomic<int> ok_;
};

TEST(TierStream, GivenAHelperThatThrowsThenTheKernelThreadGetsATesseraError) {
  for (int ok : {0, 7, 30}) {
    FailingBackend backend(ok);
    StreamerOptions o;
    o.helper_threads = 2;
    TierStreamer st(backend, o);
    Soa s(kN);
    const std::string e = error_of([&] { streamed(st, s, kBatches, false); });
    EXPECT_TRUE(contains(e, "tier streamer: a helper thread failed in phase 'push'")) << ok;
    EXPECT_TRUE(contains(e, "injected copy failure")) << ok;
  }  // and the streamer is destroyed cleanly after the failure
}

TEST(TierStream, GivenNoHelperCountThenTheModelDecidesAfterThePhasesFirstRunFromItsMeasurements) {
  auto backend = fast_emulation();
  StreamerOptions o;
  o.helper_threads = 0;
  o.n_max = 4;
  o.bw_slow_to_fast = {0, 8e9, 16e9, 24e9, 32e9};
  o.bw_fast_to_slow = {0, 4e9, 8e9, 12e9, 16e9};
  TierStreamer st(*backend, o);
  Soa s(kN), ref(kN);
  EXPECT_EQ(st.helper_threads("push"), 1);  // the first run streams with one
  streamed(st, s, kBatches, false);
  in_place(ref, kBatches);
  EXPECT_TRUE(same_bits(s, ref));
  const auto d = st.decisions();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].phase, "push");
  EXPECT_TRUE(d[0].from_model);
  EXPECT_DOUBLE_EQ(d[0].inputs.data_in, double(kN * 36) / 5);  // per non-empty batch
  EXPECT_DOUBLE_EQ(d[0].inputs.data_out, double(kN * 24) / 5);
  EXPECT_GT(d[0].inputs.t_comp[1], 0);
  EXPECT_EQ(d[0].inputs.n_max, 4);
  EXPECT_GE(d[0].helper_threads, 1);
  EXPECT_LE(d[0].helper_threads, 3);
  EXPECT_FALSE(d[0].why.empty());
  EXPECT_EQ(st.helper_threads("push"), d[0].helper_threads);
  streamed(st, s, kBatches, false);  // the decided count
  in_place(ref, kBatches);
  EXPECT_TRUE(same_bits(s, ref));
  EXPECT_EQ(st.report()["decisions"][0]["phase"], "push");
}

TEST(TierStream, TheRuntimesStreamerPlacesItsSlotsFastAndItsHelpersEndWithTheRuntime) {
  const int before = thread_count();
  {
    TierConfig c = config(TierBackendKind::emulated, PlacementPolicy::dynamic, 0);
    c.helper_threads = 3;
    c.slow.read_bw = c.slow.write_bw = 1e12;
    TierRuntime rt(c, one_node());
    Soa s(kN), ref(kN);
    streamed(rt.streamer(), s, kBatches, false);
    in_place(ref, kBatches);
    EXPECT_TRUE(same_bits(s, ref));
    EXPECT_EQ(thread_count(), before + 3);
    const auto* m = find(rt.ledger(), "migration");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->requested, (Split{m->bytes, 0}));
    EXPECT_GE(m->bytes, 3 * rt.streamer().slot_bytes());
    const auto j = rt.to_json();
    EXPECT_EQ(j["streamer"]["phases"]["push"]["batches"], 5);
    EXPECT_EQ(j["copies"]["slow_to_fast"]["bytes"], kN * 36);
  }
  EXPECT_EQ(thread_count(), before);
  EXPECT_EQ(tier_runtime(), nullptr);
}

}  // namespace
}  // namespace tessera::memory

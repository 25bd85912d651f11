// Specification of the per-region counters (perf/counters.hpp). Written to pass on a
// machine with a hardware PMU and on one without (a VM): hardware events are checked to be
// either a number or "unavailable (<reason>)", never assumed to be either.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/counters.hpp"
#include "perf/timers.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::perf {
namespace {

using tessera::testing_util::world_size;

const std::string kUnavailable = "unavailable (";

// A reason is concrete: more than the bare "unavailable ()".
::testing::AssertionResult is_number_or_reason(const nlohmann::json& v) {
  if (v.is_number()) return ::testing::AssertionSuccess();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s.rfind(kUnavailable, 0) == 0 && s.back() == ')' && s.size() > kUnavailable.size() + 5)
      return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << v.dump() << " is neither a number nor a reason";
}

std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Burns `ms` milliseconds of this thread's CPU time (however busy the machine is).
void spin(int ms) {
  const std::uint64_t until = thread_cpu_ns() + static_cast<std::uint64_t>(ms) * 1'000'000u;
  volatile double x = 1.0;
  while (thread_cpu_ns() < until)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
}

// Maps `bytes` of fresh anonymous memory and writes one byte per base page; transparent
// huge pages are declined so that every page faults on its own.
void touch_fresh_memory(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  madvise(p, bytes, MADV_NOHUGEPAGE);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  auto* c = static_cast<volatile char*>(p);
  for (std::size_t off = 0; off < bytes; off += page) c[off] = 1;
  munmap(p, bytes);
}

const CounterInfo& info(const std::string& name) {
  static std::vector<CounterInfo> all;
  all = configured_counters();
  for (const auto& c : all)
    if (c.name == name) return c;
  throw std::runtime_error("not configured: " + name);
}

const ReducedCounterRow& row(const ReducedCounters& r, const std::string& path) {
  for (const auto& x : r.rows)
    if (x.path == path) return x;
  throw std::runtime_error("no row " + path);
}

std::uint64_t count(const ReducedCounters& r, const std::string& path, const std::string& name) {
  for (std::size_t k = 0; k < r.names.size(); ++k)
    if (r.names[k] == name) {
      const auto* v = std::get_if<std::uint64_t>(&row(r, path).values[k]);
      if (v == nullptr) throw std::runtime_error(name + " has no number");
      return *v;
    }
  throw std::runtime_error("no counter " + name);
}

// Each test starts and ends with an empty tree and counting off on this thread.
class CountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    configure_counters({});
    TimerTree::local().reset();
  }
  void TearDown() override {
    configure_counters({});
    TimerTree::local().reset();
  }
};

TEST_F(CountersTest, WithNoCountersConfiguredRegionsCarryNoCountsAndTheJsonIsEmpty) {
  { TESSERA_REGION("a"); }
  EXPECT_EQ(TimerTree::local().counters(), nullptr);
  EXPECT_TRUE(TimerTree::local().counter_rows().empty());
  EXPECT_TRUE(configured_counters().empty());
  const auto reduced = reduce_counters(MPI_COMM_WORLD);
  EXPECT_TRUE(reduced.names.empty());
  EXPECT_EQ(counters_to_json(reduced), nlohmann::json::object());
}

TEST_F(CountersTest, HardwareEventsAreEitherNumbersOrUnavailableWithAConcreteReason) {
  configure_counters({"instructions", "cycles", "PAPI_TOT_INS", "LLC-load-misses"});
  {
    TESSERA_REGION("work");
    spin(5);
  }
  for (const auto& c : configured_counters()) {
    if (c.available()) {
      EXPECT_TRUE(c.reason.empty()) << c.name;
      EXPECT_FALSE(c.source.empty()) << c.name;
    } else {
      EXPECT_EQ(c.reason.rfind(kUnavailable, 0), 0u) << c.reason;
      EXPECT_GT(c.reason.size(), kUnavailable.size() + 5) << c.reason;
    }
    std::cout << "  [counters] " << c.name << ": "
              << (c.available() ? c.backend + " (" + c.source + ")" : c.reason) << '\n';
  }
  const auto j = counters_to_json(MPI_COMM_WORLD);
  for (const auto* name : {"instructions", "cycles", "PAPI_TOT_INS", "LLC-load-misses"})
    EXPECT_TRUE(is_number_or_reason(j["total/work"][name])) << name;
}

TEST_F(CountersTest, SoftwareEventsAreCountedOnEveryLinuxMachine) {
  configure_counters({"task-clock", "page-faults", "context-switches"});
  {
    TESSERA_REGION("work");
    spin(20);
  }
  for (const auto* name : {"task-clock", "page-faults", "context-switches"}) {
    EXPECT_TRUE(info(name).available()) << name << ": " << info(name).reason;
    std::cout << "  [counters] " << name << ": " << info(name).backend << " (" << info(name).source
              << ")\n";
  }
  const auto r = reduce_counters(MPI_COMM_WORLD);
  // task-clock is the thread's CPU time in ns, summed over ranks: at least the 20 ms each
  // rank spun, not much more.
  const auto ranks = static_cast<std::uint64_t>(world_size());
  EXPECT_GE(count(r, "total/work", "task-clock"), ranks * 19'000'000u);
  EXPECT_LT(count(r, "total/work", "task-clock"), ranks * 40'000'000u);
  // page-faults and context-switches may well be 0 in 20 ms of spinning: that they are
  // counted at all (numbers, not reasons) is checked above.
  std::cout << "  [counters] work: task-clock " << count(r, "total/work", "task-clock")
            << " ns, page-faults " << count(r, "total/work", "page-faults") << ", context-switches "
            << count(r, "total/work", "context-switches") << '\n';
}

// Base pages (MADV_NOHUGEPAGE): one fault per page, whatever else is counted beside it
// (with task-clock first, a perf group of software events undercounted page faults by
// 35-80 % on this kernel; each event is now opened alone).
class PageFaultCounts : public CountersTest,
                        public ::testing::WithParamInterface<std::vector<std::string>> {};

TEST_P(PageFaultCounts, TouchingFreshMemoryRaisesPageFaultsByOnePerPage) {
  configure_counters(GetParam());
  constexpr std::size_t kBytes = 16u << 20;
  const auto pages = kBytes / static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  { TESSERA_REGION("idle"); }
  {
    TESSERA_REGION("touch");
    touch_fresh_memory(kBytes);
  }
  const auto r = reduce_counters(MPI_COMM_WORLD);
  const auto faults = count(r, "total/touch", "page-faults");
  std::cout << "  [counters] touching " << pages << " pages: page-faults " << faults
            << ", minor-faults " << count(r, "total/touch", "minor-faults") << "; idle region "
            << count(r, "total/idle", "page-faults") << '\n';
  EXPECT_GE(faults, pages * 95 / 100);
  EXPECT_GE(count(r, "total/touch", "minor-faults"), pages * 95 / 100);
  EXPECT_LT(count(r, "total/idle", "page-faults"), faults);
}

INSTANTIATE_TEST_SUITE_P(
    Orders, PageFaultCounts,
    ::testing::Values(std::vector<std::string>{"page-faults", "minor-faults"},
                      std::vector<std::string>{"task-clock", "page-faults", "minor-faults"},
                      std::vector<std::string>{"context-switches", "minor-faults", "page-faults"}));

TEST_F(CountersTest, NestedRegionsAddUpWithChildrenWithinTheirParent) {
  configure_counters({"task-clock", "page-faults"});
  {
    TESSERA_REGION("parent");
    spin(3);
    {
      TESSERA_REGION("child_a");
      spin(5);
    }
    {
      TESSERA_REGION("child_b");
      touch_fresh_memory(1u << 20);
    }
  }
  const auto r = reduce_counters(MPI_COMM_WORLD);
  for (const auto* name : {"task-clock", "page-faults"}) {
    const auto parent = count(r, "total/parent", name);
    const auto a = count(r, "total/parent/child_a", name);
    const auto b = count(r, "total/parent/child_b", name);
    EXPECT_LE(a, parent) << name;
    EXPECT_LE(b, parent) << name;
    EXPECT_LE(a + b, parent) << name;
    EXPECT_LE(parent, count(r, "total", name)) << name;
  }
  EXPECT_GT(count(r, "total/parent/child_a", "task-clock"), 0u);
}

TEST_F(CountersTest, AnUnknownOrRepeatedNameIsAOneLineErrorThatChangesNothing) {
  configure_counters({"task-clock"});
  try {
    configure_counters({"task-clock", "instrucsions"});
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown counter 'instrucsions'"), std::string::npos) << what;
    EXPECT_NE(what.find("did you mean 'instructions'"), std::string::npos) << what;
    EXPECT_NE(what.find("PAPI_TOT_INS"), std::string::npos) << what;  // lists valid names
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_THROW(configure_counters({"page-faults", "page-faults"}), Error);
  ASSERT_EQ(configured_counters().size(), 1u);
  EXPECT_EQ(configured_counters()[0].name, "task-clock");
}

TEST_F(CountersTest, WithoutPerfEventTheSoftwareBackendStandsIn) {
  CounterBackends software_only;
  software_only.papi = false;
  software_only.perf_event = false;
  configure_counters({"task-clock", "page-faults", "minor-faults", "major-faults",
                      "context-switches", "cpu-migrations", "instructions"},
                     software_only);
  {
    TESSERA_REGION("touch");
    spin(5);
    touch_fresh_memory(4u << 20);
  }
  for (const auto* name :
       {"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches"})
    EXPECT_EQ(info(name).backend, "software") << name;
  EXPECT_FALSE(info("cpu-migrations").available());
  EXPECT_NE(info("cpu-migrations").reason.find("perf_event: not allowed"), std::string::npos);
  EXPECT_NE(info("instructions").reason.find("no software fallback"), std::string::npos);
  const auto r = reduce_counters(MPI_COMM_WORLD);
  EXPECT_GE(count(r, "total/touch", "page-faults"), 512u);  // 1024 pages of 4 KiB
  EXPECT_GT(count(r, "total/touch", "task-clock"), 0u);
  std::cout << "  [counters] software backend, touch: page-faults "
            << count(r, "total/touch", "page-faults") << ", task-clock "
            << count(r, "total/touch", "task-clock") << " ns\n";
}

TEST_F(CountersTest, APapiPerfNativeEventFallsBackToThePerfEventOfTheSameName) {
  // With PAPI, perf::TASK-CLOCK is a PAPI native event; without it (or if PAPI cannot add
  // it) the perf_event task-clock counts instead. Either way it is counted.
  configure_counters({"perf::TASK-CLOCK"});
  {
    TESSERA_REGION("work");
    spin(5);
  }
  ASSERT_TRUE(info("perf::TASK-CLOCK").available()) << info("perf::TASK-CLOCK").reason;
  std::cout << "  [counters] perf::TASK-CLOCK: " << info("perf::TASK-CLOCK").backend << '\n';
  EXPECT_GT(count(reduce_counters(MPI_COMM_WORLD), "total/work", "perf::TASK-CLOCK"), 0u);
  // Another thread gets its own event set, and gives it back when it ends.
  std::uint64_t other = 0;
  std::thread([&] {
    configure_counters({"perf::TASK-CLOCK"});
    {
      TESSERA_REGION("io_work");
      spin(3);
    }
    other = TimerTree::local().counter_rows().at(1).counts.at(0);
  }).join();
  EXPECT_GT(other, 0u);
}

TEST_F(CountersTest, ResetKeepsCountersAttachedAndRestartsThemFromZero) {
  configure_counters({"task-clock"});
  {
    TESSERA_REGION("before");
    spin(10);
  }
  TimerTree::local().reset();
  EXPECT_NE(TimerTree::local().counters(), nullptr);
  const auto rows = TimerTree::local().counter_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_LT(rows[0].counts[0], 10'000'000u);  // the 10 ms spin is forgotten
}

TEST_F(CountersTest, EachThreadCountsOnlyWhenItConfiguredItself) {
  configure_counters({"task-clock"});
  std::vector<CounterInfo> io_before, io_after;
  std::vector<TimerTree::CounterRow> io_rows;
  std::thread([&] {
    io_before = configured_counters();
    configure_counters({"page-faults"});
    {
      TESSERA_REGION("io_write");
      touch_fresh_memory(1u << 20);
    }
    io_after = configured_counters();
    io_rows = TimerTree::local().counter_rows();
  }).join();
  EXPECT_TRUE(io_before.empty());
  ASSERT_EQ(io_after.size(), 1u);
  EXPECT_EQ(io_after[0].name, "page-faults");
  ASSERT_EQ(io_rows.size(), 2u);
  EXPECT_EQ(io_rows[1].path, "total/io_write");
  EXPECT_GE(io_rows[1].counts[0], 128u);  // 256 pages touched on that thread
  ASSERT_EQ(configured_counters().size(), 1u);
  EXPECT_EQ(configured_counters()[0].name, "task-clock");
}

TEST_F(CountersTest, OnAnyNumberOfRanksCountsAreSummedByRegionPath) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // Rank 0 leaves page-faults out: with more than one rank it is then unavailable, and says
  // where.
  configure_counters(rank == 0 ? std::vector<std::string>{"task-clock"}
                               : std::vector<std::string>{"task-clock", "page-faults"});
  {
    TESSERA_REGION("step");
    spin(2);
    if (rank % 2 == 1) {
      TESSERA_REGION("odd_only");
      spin(2);
    }
  }
  std::uint64_t mine[2] = {0, 0};
  for (const auto& r : TimerTree::local().counter_rows()) {
    if (r.path == "total/step") mine[0] = r.counts[0];
    if (r.path == "total/step/odd_only") mine[1] = r.counts[0];
  }
  std::uint64_t sum[2] = {0, 0};
  MPI_Allreduce(mine, sum, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  const auto r = reduce_counters(MPI_COMM_WORLD);
  EXPECT_EQ(count(r, "total/step", "task-clock"), sum[0]);
  if (world_size() > 1) {
    EXPECT_EQ(count(r, "total/step/odd_only", "task-clock"), sum[1]);
    ASSERT_EQ(r.names.size(), 2u);
    EXPECT_EQ(r.status[1], "unavailable (on rank 0: not configured)");
  } else {
    EXPECT_EQ(r.names, std::vector<std::string>{"task-clock"});
  }
}

TEST_F(CountersTest, TheJsonMapsEveryRegionPathToNumbersOrReasonsAndDerivedMetrics) {
  configure_counters({"instructions", "cycles", "task-clock", "page-faults"});
  {
    TESSERA_REGION("step");
    TESSERA_REGION("hydro/riemann");
    spin(5);
  }
  const auto reduced = reduce_counters(MPI_COMM_WORLD);
  EXPECT_EQ(reduced.nranks, world_size());
  const auto j = counters_to_json(reduced);
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j.contains("total"));
  EXPECT_TRUE(j.contains("total/step"));
  EXPECT_TRUE(j.contains("total/step/hydro/riemann"));
  for (const auto& [path, region] : j.items()) {
    for (const auto* name : {"instructions", "cycles", "task-clock", "page-faults"})
      EXPECT_TRUE(is_number_or_reason(region[name])) << path << " " << name;
    EXPECT_TRUE(region["task-clock"].is_number()) << path;
    ASSERT_TRUE(region.contains("derived")) << path;
    // ipc's inputs are configured, so ipc is present: a number or why not.
    EXPECT_TRUE(is_number_or_reason(region["derived"]["ipc"])) << path;
    EXPECT_TRUE(region["derived"]["cpu_utilization"].is_number()) << path;
    EXPECT_FALSE(region["derived"].contains("llc_miss_rate")) << "inputs not configured";
  }
  const auto backends = counter_backends_to_json(reduced);
  for (const auto* name : {"instructions", "cycles", "task-clock", "page-faults"})
    EXPECT_TRUE(backends[name].is_string()) << name;
  std::cout << "  [counters] total/step/hydro/riemann: " << j["total/step/hydro/riemann"].dump()
            << '\n';
  std::cout << "  [counters] backends: " << backends.dump() << '\n';
  std::ostringstream table;
  print_counter_table(table, reduced);
  std::cout << table.str();
}

// Hand-made reduced counters: the derived metrics, independent of this machine.
ReducedCounters sample(bool cycles_available) {
  ReducedCounters r;
  r.nranks = 2;
  r.names = {"instructions",     "cycles",     "LLC-load-misses", "LLC-loads",
             "dTLB-load-misses", "dTLB-loads", "task-clock"};
  r.status.assign(r.names.size(), "");
  r.backends.assign(r.names.size(), "perf_event");
  if (!cycles_available) {
    r.status[1] = "unavailable (no hardware PMU)";
    r.backends[1] = "";
  }
  ReducedCounterRow row{"total/hydro", "hydro", 1, 2.0, 1.5, {}};
  row.values = {std::uint64_t{3000},         std::uint64_t{1000}, std::uint64_t{1'000'000},
                std::uint64_t{4'000'000},    std::uint64_t{50},   std::uint64_t{100'000},
                std::uint64_t{1'500'000'000}};
  if (!cycles_available) row.values[1] = r.status[1];
  r.rows = {row};
  return r;
}

TEST(CounterDerived, RatiosComeFromTheirInputsAndBandwidthFromLlcMissesOverSeconds) {
  const auto j = counters_to_json(sample(true));
  const auto& d = j["total/hydro"]["derived"];
  EXPECT_DOUBLE_EQ(d["ipc"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(d["llc_miss_rate"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(d["dtlb_misses_per_1000_loads"].get<double>(), 0.5);
  // 64-byte lines x 1e6 misses over the region's 2 s (max over ranks).
  EXPECT_DOUBLE_EQ(d["mem_bandwidth_bytes_per_s"].get<double>(), 32e6);
  // 1.5e9 ns of CPU over 2 ranks x 1.5 s average.
  EXPECT_DOUBLE_EQ(d["cpu_utilization"].get<double>(), 0.5);
  EXPECT_FALSE(d.contains("l1_miss_rate"));  // no L1 counter configured
  EXPECT_FALSE(d.contains("l2_miss_rate"));
  EXPECT_EQ(j["total/hydro"]["instructions"], 3000);
}

TEST(CounterDerived, AMetricWithAnUnavailableInputSaysWhichInput) {
  const auto j = counters_to_json(sample(false));
  EXPECT_EQ(j["total/hydro"]["cycles"], "unavailable (no hardware PMU)");
  EXPECT_EQ(j["total/hydro"]["derived"]["ipc"], "unavailable (inputs unavailable: cycles)");
  EXPECT_TRUE(j["total/hydro"]["derived"]["llc_miss_rate"].is_number());
  EXPECT_EQ(counter_backends_to_json(sample(false))["cycles"], "unavailable (no hardware PMU)");
}

TEST(CounterTable, CountedEventsAreColumnsAndUncountedOnesAreListedWithTheirReason) {
  std::ostringstream os;
  print_counter_table(os, sample(false));
  const std::string t = os.str();
  EXPECT_NE(t.find("2 MPI ranks"), std::string::npos) << t;
  EXPECT_NE(t.find("instructions"), std::string::npos) << t;
  EXPECT_NE(t.find("not counted: cycles: unavailable (no hardware PMU)"), std::string::npos) << t;
  std::istringstream lines(t);
  bool saw = false;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("    hydro ", 0) == 0) {
      saw = true;
      std::istringstream f(line.substr(10));
      double instructions = 0;
      f >> instructions;
      EXPECT_DOUBLE_EQ(instructions, 3000);
    }
  EXPECT_TRUE(saw) << t;
}

TEST(CounterParams, PerfCountersIsAStringListThatIsEmptyByDefault) {
  base::Params p;
  declare_params(p);
  EXPECT_TRUE(p.get_string_list("perf.counters").empty());
  p.apply_override("perf.counters=task-clock,page-faults");
  EXPECT_EQ(p.get_string_list("perf.counters"),
            (std::vector<std::string>{"task-clock", "page-faults"}));
}

}  // namespace
}  // namespace tessera::perf

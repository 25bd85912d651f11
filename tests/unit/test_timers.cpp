// Specification of the timer tree and its cross-rank reduction (perf/timers.hpp).
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::perf {
namespace {

std::vector<std::string> paths(const std::vector<TimerTree::Row>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.path);
  return out;
}

const TimerTree::Row& row(const std::vector<TimerTree::Row>& rows, const std::string& path) {
  for (const auto& r : rows)
    if (r.path == path) return r;
  throw std::runtime_error("no row " + path);
}

// Each test starts from an empty tree on this thread.
class TimersTest : public ::testing::Test {
 protected:
  void SetUp() override { TimerTree::local().reset(); }
  void TearDown() override { TimerTree::local().reset(); }
};

TEST_F(TimersTest, NestedRegionsFormPathsUnderTotalDepthFirstInFirstSeenOrder) {
  {
    TESSERA_REGION("step");
    { TESSERA_REGION("hydro"); }
    { TESSERA_REGION("io"); }
    { TESSERA_REGION("hydro"); }
  }
  { TESSERA_REGION("finalize"); }
  const auto rows = TimerTree::local().rows();
  EXPECT_EQ(paths(rows), (std::vector<std::string>{"total", "total/step", "total/step/hydro",
                                                   "total/step/io", "total/finalize"}));
  EXPECT_EQ(row(rows, "total").depth, 0);
  EXPECT_EQ(row(rows, "total/step").depth, 1);
  EXPECT_EQ(row(rows, "total/step/hydro").depth, 2);
}

TEST_F(TimersTest, EachEntryCountsOneCall) {
  for (int i = 0; i < 3; ++i) {
    TESSERA_REGION("a");
    TESSERA_REGION("b");
  }
  const auto rows = TimerTree::local().rows();
  EXPECT_EQ(row(rows, "total").calls, 1);
  EXPECT_EQ(row(rows, "total/a").calls, 3);
  EXPECT_EQ(row(rows, "total/a/b").calls, 3);
}

TEST_F(TimersTest, AParentTakesAtLeastAsLongAsItsChildrenAndTotalAtLeastAsLongAsAll) {
  {
    TESSERA_REGION("a");
    TESSERA_REGION("b");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto rows = TimerTree::local().rows();
  EXPECT_GE(row(rows, "total/a/b").seconds, 0.005);
  EXPECT_GE(row(rows, "total/a").seconds, row(rows, "total/a/b").seconds);
  EXPECT_GE(row(rows, "total").seconds, row(rows, "total/a").seconds);
}

// Given a detached region opened inside two others (the tracers' deferred move inside
// hydro's guard fill), then it is a child of the root and its time is left out of both.
TEST_F(TimersTest, ADetachedRegionIsTopLevelAndLeftOutOfTheRegionsItInterrupted) {
  {
    TESSERA_REGION("hydro");
    TESSERA_REGION("guardcell");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    {
      TESSERA_DETACHED_REGION("particles");
      TESSERA_REGION("advance");
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto rows = TimerTree::local().rows();
  EXPECT_EQ(paths(rows), (std::vector<std::string>{"total", "total/hydro", "total/hydro/guardcell",
                                                   "total/particles", "total/particles/advance"}));
  EXPECT_GE(row(rows, "total/particles/advance").seconds, 0.040);
  EXPECT_GE(row(rows, "total/hydro/guardcell").seconds, 0.010);
  EXPECT_LT(row(rows, "total/hydro").seconds, 0.035);  // 10 ms of its own, not 50
  EXPECT_GE(row(rows, "total/hydro").seconds, row(rows, "total/hydro/guardcell").seconds);
}

TEST_F(TimersTest, AnOpenRegionCountsItsTimeSoFar) {
  TESSERA_REGION("running");
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto rows = TimerTree::local().rows();
  EXPECT_GE(row(rows, "total/running").seconds, 0.002);
  EXPECT_EQ(row(rows, "total/running").calls, 1);
}

TEST_F(TimersTest, ResetForgetsEveryRegion) {
  { TESSERA_REGION("a"); }
  TimerTree::local().reset();
  EXPECT_EQ(paths(TimerTree::local().rows()), std::vector<std::string>{"total"});
  EXPECT_TRUE(TimerTree::local().root().children.empty());
}

TEST_F(TimersTest, EachThreadHasItsOwnTree) {
  { TESSERA_REGION("main_thread"); }
  std::vector<std::string> other;
  std::thread([&] {
    { TESSERA_REGION("io_thread"); }
    other = paths(TimerTree::local().rows());
  }).join();
  EXPECT_EQ(other, (std::vector<std::string>{"total", "total/io_thread"}));
  EXPECT_EQ(paths(TimerTree::local().rows()),
            (std::vector<std::string>{"total", "total/main_thread"}));
}

// A counter whose value the test sets: one reading per read() call.
class FakeCounters : public CounterSource {
 public:
  std::uint64_t value = 0;
  int reads = 0;
  std::size_t size() const override { return 2; }
  void read(std::uint64_t* out) override {
    ++reads;
    out[0] = value;
    out[1] = 2 * value;
  }
};

TEST_F(TimersTest, WithoutCountersAttachedRegionsNeverReadAnyAndCarryNoCounts) {
  FakeCounters fake;
  TimerTree::local().attach_counters(&fake);  // attached and detached again: no more reads
  TimerTree::local().attach_counters(nullptr);
  const int reads_while_attached = fake.reads;
  { TESSERA_REGION("a"); }
  EXPECT_EQ(TimerTree::local().counters(), nullptr);
  EXPECT_TRUE(TimerTree::local().counter_rows().empty());
  EXPECT_TRUE(TimerTree::local().root().children[0]->counts.empty());
  EXPECT_EQ(fake.reads, reads_while_attached);
}

TEST_F(TimersTest, AttachedCountersSumTheirDeltasPerRegionOverCallsAndNest) {
  FakeCounters fake;
  fake.value = 100;  // counts before the attach are not the tree's
  TimerTree::local().attach_counters(&fake);
  for (int call = 0; call < 2; ++call) {
    TESSERA_REGION("step");
    fake.value += 1;
    {
      TESSERA_REGION("hydro");
      fake.value += 10;
    }
    fake.value += 1;
  }
  fake.value += 1000;  // outside every region but the root
  const auto rows = TimerTree::local().counter_rows();
  TimerTree::local().attach_counters(nullptr);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].path, "total");
  EXPECT_EQ(rows[1].path, "total/step");
  EXPECT_EQ(rows[2].path, "total/step/hydro");
  EXPECT_EQ(rows[2].counts, (std::vector<std::uint64_t>{20, 40}));
  EXPECT_EQ(rows[1].counts, (std::vector<std::uint64_t>{24, 48}));
  EXPECT_EQ(rows[0].counts, (std::vector<std::uint64_t>{1024, 2048}));  // the open root
}

TEST_F(TimersTest, AnOpenRegionCountsUpToNowAndARegionOpenAtTheAttachCountsFromThere) {
  FakeCounters fake;
  TESSERA_REGION("open_before_attach");
  fake.value = 7;
  TimerTree::local().attach_counters(&fake);
  fake.value = 12;
  const auto rows = TimerTree::local().counter_rows();
  TimerTree::local().attach_counters(nullptr);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].path, "total/open_before_attach");
  EXPECT_EQ(rows[1].counts[0], 5u);
}

TEST_F(TimersTest, ReducingOnOneRankGivesEqualMaxMinAndAvg) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 1) GTEST_SKIP() << "written for one rank";
  {
    TESSERA_REGION("a");
    { TESSERA_REGION("b"); }
    { TESSERA_REGION("b"); }
  }
  const auto reduced = reduce_timers(MPI_COMM_WORLD);
  ASSERT_EQ(reduced.size(), 3u);
  EXPECT_EQ(reduced[2].path, "total/a/b");
  EXPECT_EQ(reduced[2].depth, 2);
  EXPECT_EQ(reduced[2].calls, 2);
  for (const auto& r : reduced) {
    EXPECT_EQ(r.max_s, r.min_s) << r.path;
    EXPECT_EQ(r.max_s, r.avg_s) << r.path;
  }
}

TEST_F(TimersTest, ReducingOnAnyNumberOfRanksGivesEveryRankTheSameRows) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    TESSERA_REGION("step");
    if (rank % 2 == 1) TESSERA_REGION("odd_only");
  }
  const auto reduced = reduce_timers(MPI_COMM_WORLD);
  // Rank 0's digest of the rows must match everybody's.
  std::string digest;
  for (const auto& r : reduced) digest += r.path + ";";
  EXPECT_EQ(digest, tessera::parallel::broadcast(MPI_COMM_WORLD, digest, 0));
  for (const auto& r : reduced) {
    EXPECT_LE(r.min_s, r.avg_s);
    EXPECT_LE(r.avg_s, r.max_s);
  }
}

// Hand-made rows of two ranks: rank 1 has a region rank 0 never entered.
std::vector<std::vector<TimerTree::Row>> two_ranks() {
  return {{{"total", 0, 10.0, 1}, {"total/hydro", 1, 6.0, 4}, {"total/io", 1, 1.0, 1}},
          {{"total", 0, 12.0, 1},
           {"total/hydro", 1, 8.0, 5},
           {"total/hydro/sweep_y", 2, 3.0, 5},
           {"total/io", 1, 2.0, 1}}};
}

TEST(TimerMerge, RegionsMergeByPathInFirstSeenOrderWithAbsentCountingZero) {
  const auto merged = detail::merge_rows(two_ranks());
  ASSERT_EQ(merged.size(), 4u);
  // A region first seen on rank 1 still sits under its parent, after known siblings.
  EXPECT_EQ(merged[0].path, "total");
  EXPECT_EQ(merged[1].path, "total/hydro");
  EXPECT_EQ(merged[2].path, "total/hydro/sweep_y");
  EXPECT_EQ(merged[3].path, "total/io");

  EXPECT_DOUBLE_EQ(merged[1].max_s, 8.0);
  EXPECT_DOUBLE_EQ(merged[1].min_s, 6.0);
  EXPECT_DOUBLE_EQ(merged[1].avg_s, 7.0);
  EXPECT_EQ(merged[1].calls, 5);

  EXPECT_DOUBLE_EQ(merged[2].max_s, 3.0);
  EXPECT_DOUBLE_EQ(merged[2].min_s, 0.0);
  EXPECT_DOUBLE_EQ(merged[2].avg_s, 1.5);
  EXPECT_EQ(merged[2].depth, 2);
}

TEST(TimerJson, TheTreeNestsUnderTotalWithLeafNames) {
  // A region name may itself contain '/', as in TESSERA_REGION("hydro/riemann").
  const std::vector<ReducedRow> rows{{"total", 0, 10.0, 9.0, 9.5, 1},
                                     {"total/step", 1, 8.0, 7.0, 7.5, 20},
                                     {"total/step/hydro/riemann", 2, 5.0, 4.0, 4.5, 20},
                                     {"total/io", 1, 1.0, 0.5, 0.75, 2}};
  const nlohmann::json j = timers_to_json(rows);
  EXPECT_EQ(j["name"], "total");
  EXPECT_EQ(j["calls"], 1);
  ASSERT_EQ(j["children"].size(), 2u);
  EXPECT_EQ(j["children"][0]["name"], "step");
  EXPECT_EQ(j["children"][1]["name"], "io");
  EXPECT_DOUBLE_EQ(j["children"][1]["avg_s"].get<double>(), 0.75);
  const auto& riemann = j["children"][0]["children"][0];
  EXPECT_EQ(riemann["name"], "hydro/riemann");
  EXPECT_DOUBLE_EQ(riemann["max_s"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(riemann["min_s"].get<double>(), 4.0);
  EXPECT_EQ(riemann["calls"], 20);
  EXPECT_TRUE(riemann["children"].empty());
}

TEST(TimerTable, SummaryShowsRanksIndentedRegionsAndPercentOfTotal) {
  const std::vector<ReducedRow> rows{{"total", 0, 10.0, 10.0, 10.0, 1},
                                     {"total/hydro", 1, 6.0, 4.0, 5.0, 7}};
  std::ostringstream os;
  print_summary_table(os, rows, 10.0, 4);
  const std::string table = os.str();
  EXPECT_NE(table.find("4 MPI ranks"), std::string::npos) << table;
  std::istringstream lines(table);
  bool saw_hydro = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("hydro") == std::string::npos) continue;
    saw_hydro = true;
    EXPECT_EQ(line.rfind("    hydro ", 0), 0u) << line;  // indented one level
    std::istringstream fields(line.substr(10));
    double max_s = 0, min_s = 0, avg_s = 0, percent = 0;
    long calls = 0;
    fields >> max_s >> min_s >> avg_s >> calls >> percent;
    EXPECT_DOUBLE_EQ(max_s, 6.0);
    EXPECT_DOUBLE_EQ(min_s, 4.0);
    EXPECT_DOUBLE_EQ(avg_s, 5.0);
    EXPECT_EQ(calls, 7);
    EXPECT_DOUBLE_EQ(percent, 50.0);
  }
  EXPECT_TRUE(saw_hydro) << table;
}

}  // namespace
}  // namespace tessera::perf

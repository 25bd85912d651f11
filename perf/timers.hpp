#pragma once
// Scoped regions and the timer tree. TESSERA_REGION("hydro/riemann") opens a region
// that closes at the end of the enclosing scope; nested regions form a tree (a region's
// path is its parents' names joined by '/'). The tree is per thread (thread_local), so
// an I/O thread keeps its own. When counters are attached (perf/counters.hpp), every
// region also accumulates the counter deltas between its push and its pop; when they are
// not, the only cost is one branch per push and per pop.
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tessera::perf {

/// MPI traffic a region caused on this rank (perf/comm_census.cpp counts it): point-to-point
/// messages and bytes sent, collective calls and the bytes this rank contributes (its send
/// buffer; a broadcast's root only).
struct CommCounts {
  std::uint64_t p2p_messages = 0, p2p_bytes = 0, collectives = 0, collective_bytes = 0;
  CommCounts& operator+=(const CommCounts& o) {
    p2p_messages += o.p2p_messages, p2p_bytes += o.p2p_bytes;
    collectives += o.collectives, collective_bytes += o.collective_bytes;
    return *this;
  }
};

struct TimerNode {
  std::string name;
  double seconds = 0.0;
  std::int64_t calls = 0;
  std::chrono::steady_clock::time_point started;
  TimerNode* parent = nullptr;
  std::vector<std::unique_ptr<TimerNode>> children;
  std::vector<std::uint64_t> counts;          ///< per attached counter, summed over calls
  std::vector<std::uint64_t> counts_started;  ///< counter readings at the last push
  CommCounts comm{};                          ///< MPI traffic while it was the innermost region
  TimerNode* child(const std::string& n);     ///< find or create
};

/// Reads the calling thread's counters. Implemented by perf/counters.cpp; the timer tree
/// only needs these two calls, so it does not depend on any counter backend.
class CounterSource {
 public:
  virtual ~CounterSource() = default;
  /// Number of counters read().
  virtual std::size_t size() const = 0;
  /// Writes size() cumulative values to out. Each value never decreases between calls on
  /// the same thread (a counter that cannot be read stays 0), so deltas are never negative.
  virtual void read(std::uint64_t* out) = 0;
};

/// The calling thread's timer tree. Not shared between threads.
class TimerTree {
 public:
  static TimerTree& local();
  void push(const char* name);
  void pop();
  /// A top-level region opened inside others (work one unit runs inside another's: the
  /// tracers' deferred move inside hydro's guard fill): timed as a child of the root, and
  /// its time (and counter deltas) left out of every region it interrupted.
  void push_detached(const char* name);
  void pop_detached();
  /// Forgets every region; attached counters stay attached and restart from zero.
  void reset();
  const TimerNode& root() const { return root_; }
  /// The communication census (perf/comm_census.cpp): the innermost open region's counts,
  /// and this thread's counts since it started (reset() does not clear them).
  CommCounts& comm_here() { return current_->comm; }
  CommCounts& comm_total() { return comm_total_; }

  /// Attach `src` (not owned; nullptr detaches) to this tree: every region's counts restart
  /// from zero, and regions open now count from now on. The caller keeps `src` alive until
  /// it detaches it.
  void attach_counters(CounterSource* src);
  CounterSource* counters() const { return counters_; }
  /// Per region (depth-first, same order as rows()), the counter deltas summed over its
  /// calls; open regions (the root always is) include their running interval up to now.
  /// Empty when no counters are attached.
  struct CounterRow {
    std::string path;
    std::vector<std::uint64_t> counts;
  };
  std::vector<CounterRow> counter_rows() const;
  /// Flattened (path, seconds, calls), depth-first, children in first-seen order.
  struct Row {
    std::string path;
    int depth;
    double seconds;
    std::int64_t calls;
  };
  std::vector<Row> rows() const;

 private:
  // Every field named: -Wextra warns on a partial aggregate initializer. The root's clock
  // starts with the tree; it is never pushed or popped.
  TimerNode root_{"total", 0.0, 0, std::chrono::steady_clock::now(), nullptr, {}, {}, {}, {}};
  TimerNode* current_ = &root_;
  CommCounts comm_total_{};
  CounterSource* counters_ = nullptr;
  std::vector<std::uint64_t> reading_;     // scratch for pop(), sized at attach
  std::vector<TimerNode*> detached_from_;  // the open region each detached one interrupted

  void start_counts(TimerNode& n);
  void stop_counts(TimerNode& n);
};

/// RAII region.
class Region {
 public:
  explicit Region(const char* name) { TimerTree::local().push(name); }
  ~Region() { TimerTree::local().pop(); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};

/// RAII detached region (TimerTree::push_detached).
class DetachedRegion {
 public:
  explicit DetachedRegion(const char* name) { TimerTree::local().push_detached(name); }
  ~DetachedRegion() { TimerTree::local().pop_detached(); }
  DetachedRegion(const DetachedRegion&) = delete;
  DetachedRegion& operator=(const DetachedRegion&) = delete;
};

/// Collective over comm: merges every rank's tree by path (a region missing on a rank
/// counts 0 there) and reduces seconds to max/min/avg and calls to max.
struct ReducedRow {
  std::string path;
  int depth;
  double max_s, min_s, avg_s;
  std::int64_t calls;
};
std::vector<ReducedRow> reduce_timers(MPI_Comm comm);
/// The same for rows taken from another thread's tree (e.g. the I/O thread's, handed
/// over by that thread): collective over comm, `mine` is this rank's rows.
std::vector<ReducedRow> reduce_timers(MPI_Comm comm, const std::vector<TimerTree::Row>& mine);

/// FLASH-style summary table (seconds, calls, percent of total; max/min/avg across
/// ranks). `total_seconds` is the wall time the percentages refer to.
void print_summary_table(std::ostream& os, const std::vector<ReducedRow>& rows,
                         double total_seconds, int nranks);
/// The same tree as nested JSON: {"name":..., "max_s":..., "min_s":..., "avg_s":...,
/// "calls":..., "children":[...]}.
nlohmann::json timers_to_json(const std::vector<ReducedRow>& rows);

namespace detail {
/// Each row's own region name: its path less its parent's path (a name may contain '/',
/// as in "hydro/riemann", so splitting the path would be wrong). rows are depth-first.
std::vector<std::string> leaf_names(const std::vector<ReducedRow>& rows);
/// The rank-independent half of reduce_timers: per_rank[r] is rank r's rows(). Exposed so
/// that the merge can be unit-tested without several ranks.
std::vector<ReducedRow> merge_rows(const std::vector<std::vector<TimerTree::Row>>& per_rank);
/// Collective: every rank's byte buffer, on every rank, in rank order.
std::vector<std::vector<char>> allgather_bytes(MPI_Comm comm, const std::vector<char>& mine);
}  // namespace detail

}  // namespace tessera::perf

#define TESSERA_CONCAT_IMPL(a, b) a##b
#define TESSERA_CONCAT(a, b) TESSERA_CONCAT_IMPL(a, b)
/// Time the rest of the enclosing scope as region `name` (a string literal).
#define TESSERA_REGION(name) ::tessera::perf::Region TESSERA_CONCAT(tessera_region_, __LINE__)(name)
/// Time the rest of the enclosing scope as top-level region `name`, excluded from the
/// regions open around it (TimerTree::push_detached).
#define TESSERA_DETACHED_REGION(name) \
  ::tessera::perf::DetachedRegion TESSERA_CONCAT(tessera_detached_, __LINE__)(name)

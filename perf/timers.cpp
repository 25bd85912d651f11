#include "perf/timers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

namespace tessera::perf {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Rows travel between ranks as bytes: (path length, path, depth, seconds, calls) each.
template <class T>
void put(std::vector<char>& buf, const T& v) {
  const auto* p = reinterpret_cast<const char*>(&v);
  buf.insert(buf.end(), p, p + sizeof v);
}

std::vector<char> serialize(const std::vector<TimerTree::Row>& rows) {
  std::vector<char> buf;
  for (const auto& r : rows) {
    put(buf, static_cast<std::uint64_t>(r.path.size()));
    buf.insert(buf.end(), r.path.begin(), r.path.end());
    put(buf, r.depth);
    put(buf, r.seconds);
    put(buf, r.calls);
  }
  return buf;
}

std::vector<TimerTree::Row> deserialize(const char* p, const char* end) {
  auto get = [&p](auto& v) {
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
  };
  std::vector<TimerTree::Row> rows;
  while (p < end) {
    std::uint64_t len = 0;
    get(len);
    TimerTree::Row r{std::string(p, len), 0, 0.0, 0};
    p += len;
    get(r.depth);
    get(r.seconds);
    get(r.calls);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

TimerNode* TimerNode::child(const std::string& n) {
  // Few children per node: a linear search keeps first-seen order for free.
  for (auto& c : children)
    if (c->name == n) return c.get();
  auto& c = children.emplace_back(std::make_unique<TimerNode>());
  c->name = n;
  c->parent = this;
  return c.get();
}

TimerTree& TimerTree::local() {
  thread_local TimerTree tree;
  return tree;
}

void TimerTree::push(const char* name) {
  current_ = current_->child(name);
  ++current_->calls;
  // Counters are read before the clock starts and after it stops, so a region's seconds
  // do not include its own counter reads.
  if (counters_ != nullptr) [[unlikely]]
    start_counts(*current_);
  current_->started = Clock::now();
}

void TimerTree::pop() {
  // A reset() inside open regions leaves their pops unmatched; they end at the root.
  if (current_ == &root_) return;
  current_->seconds += seconds_between(current_->started, Clock::now());
  if (counters_ != nullptr) [[unlikely]]
    stop_counts(*current_);
  current_ = current_->parent;
}

void TimerTree::push_detached(const char* name) {
  detached_from_.push_back(current_);
  current_ = &root_;
  push(name);
}

void TimerTree::pop_detached() {
  if (detached_from_.empty()) return;  // unmatched (a reset() in between)
  TimerNode* n = current_;
  const double before = n->seconds;
  const std::vector<std::uint64_t> counts_before = n->counts;
  pop();
  TimerNode* from = detached_from_.back();
  detached_from_.pop_back();
  current_ = from;
  // The interrupted regions start later by the detached time (and counts), so their pops
  // leave it out.
  const auto shift = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(n->seconds - before));
  for (TimerNode* a = from; a != nullptr && a != &root_; a = a->parent) {
    a->started += shift;
    if (counters_ != nullptr && a->counts_started.size() == n->counts.size() &&
        counts_before.size() == n->counts.size())
      for (std::size_t i = 0; i < n->counts.size(); ++i)
        a->counts_started[i] += n->counts[i] - counts_before[i];
  }
}

void TimerTree::start_counts(TimerNode& n) {
  if (n.counts.size() != reading_.size()) {  // first push since the counters were attached
    n.counts.assign(reading_.size(), 0);
    n.counts_started.resize(reading_.size());
  }
  counters_->read(n.counts_started.data());
}

void TimerTree::stop_counts(TimerNode& n) {
  counters_->read(reading_.data());
  for (std::size_t i = 0; i < reading_.size(); ++i)
    n.counts[i] += reading_[i] - n.counts_started[i];
}

void TimerTree::reset() {
  root_.children.clear();
  root_.seconds = 0.0;
  root_.calls = 0;
  current_ = &root_;
  attach_counters(counters_);  // the root's counts restart too
  root_.started = Clock::now();
}

void TimerTree::attach_counters(CounterSource* src) {
  counters_ = src;
  const std::size_t n = src != nullptr ? src->size() : 0;
  reading_.assign(n, 0);
  if (src != nullptr) src->read(reading_.data());
  // Open regions count from now on; closed ones start again at their next push.
  auto walk = [&](auto&& self, TimerNode& node) -> void {
    node.counts.assign(n, 0);
    node.counts_started.assign(n, 0);
    for (auto& c : node.children) self(self, *c);
  };
  walk(walk, root_);
  for (TimerNode* p = current_; p != nullptr; p = p->parent) p->counts_started = reading_;
}

std::vector<TimerTree::CounterRow> TimerTree::counter_rows() const {
  std::vector<CounterRow> out;
  if (counters_ == nullptr) return out;
  std::vector<std::uint64_t> now(reading_.size());
  counters_->read(now.data());
  auto is_open = [this](const TimerNode* n) {
    for (const TimerNode* p = current_; p != nullptr; p = p->parent)
      if (p == n) return true;
    return false;
  };
  auto walk = [&](auto&& self, const TimerNode& n, const std::string& path) -> void {
    CounterRow row{path, n.counts};
    row.counts.resize(now.size(), 0);  // a region never entered since the attach
    if (is_open(&n))
      for (std::size_t i = 0; i < now.size(); ++i) row.counts[i] += now[i] - n.counts_started[i];
    out.push_back(std::move(row));
    for (const auto& c : n.children) self(self, *c, path + "/" + c->name);
  };
  walk(walk, root_, root_.name);
  return out;
}

std::vector<TimerTree::Row> TimerTree::rows() const {
  const auto now = Clock::now();
  auto is_open = [this](const TimerNode* n) {
    for (const TimerNode* p = current_; p != nullptr; p = p->parent)
      if (p == n) return true;
    return false;
  };
  std::vector<Row> out;
  // Open regions (the root always is) count their running interval up to now.
  auto walk = [&](auto&& self, const TimerNode& n, const std::string& path, int depth) -> void {
    const double running = is_open(&n) ? seconds_between(n.started, now) : 0.0;
    out.push_back({path, depth, n.seconds + running, &n == &root_ ? 1 : n.calls});
    for (const auto& c : n.children) self(self, *c, path + "/" + c->name, depth + 1);
  };
  walk(walk, root_, root_.name, 0);
  return out;
}

namespace detail {

std::vector<std::string> leaf_names(const std::vector<ReducedRow>& rows) {
  std::vector<std::string> names;
  std::vector<const std::string*> ancestors;
  for (const auto& r : rows) {
    ancestors.resize(std::min<std::size_t>(ancestors.size(), std::max(r.depth, 0)));
    const std::string* parent = ancestors.empty() ? nullptr : ancestors.back();
    const bool under = parent && r.path.size() > parent->size() &&
                       r.path.compare(0, parent->size() + 1, *parent + "/") == 0;
    names.push_back(under ? r.path.substr(parent->size() + 1) : r.path);
    ancestors.push_back(&r.path);
  }
  return names;
}

std::vector<ReducedRow> merge_rows(const std::vector<std::vector<TimerTree::Row>>& per_rank) {
  struct Node {
    ReducedRow row;
    double sum = 0.0;
    int ranks = 0;
    std::vector<std::size_t> children;
  };
  // nodes[0] is a virtual parent of the depth-0 rows; ancestors[d] is the parent of depth d.
  std::vector<Node> nodes(1);
  for (const auto& rows : per_rank) {
    std::vector<std::size_t> ancestors{0};
    for (const auto& r : rows) {
      if (r.depth < 0 || static_cast<std::size_t>(r.depth) >= ancestors.size())
        throw std::invalid_argument("merge_rows: rows are not a depth-first tree");
      ancestors.resize(r.depth + 1);
      const std::size_t parent = ancestors.back();
      std::size_t id = 0;  // 0 is never a child, so it means "not seen yet"
      for (const std::size_t c : nodes[parent].children)
        if (nodes[c].row.path == r.path) id = c;
      if (id == 0) {  // first seen: goes after the siblings already known
        id = nodes.size();
        nodes[parent].children.push_back(id);
        nodes.push_back({{r.path, r.depth, r.seconds, r.seconds, 0.0, 0}, 0.0, 0, {}});
      }
      Node& n = nodes[id];
      n.row.max_s = std::max(n.row.max_s, r.seconds);
      n.row.min_s = std::min(n.row.min_s, r.seconds);
      n.row.calls = std::max(n.row.calls, r.calls);
      n.sum += r.seconds;
      ++n.ranks;
      ancestors.push_back(id);
    }
  }

  const int nranks = static_cast<int>(per_rank.size());
  std::vector<ReducedRow> out;
  auto walk = [&](auto&& self, std::size_t id) -> void {
    for (const std::size_t c : nodes[id].children) {
      Node& n = nodes[c];
      if (n.ranks < nranks) n.row.min_s = std::min(n.row.min_s, 0.0);  // absent = 0 s
      n.row.avg_s = n.sum / nranks;
      out.push_back(n.row);
      self(self, c);
    }
  };
  walk(walk, 0);
  return out;
}

}  // namespace detail

namespace detail {
std::vector<std::vector<char>> allgather_bytes(MPI_Comm comm, const std::vector<char>& mine) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  const int my_size = static_cast<int>(mine.size());
  std::vector<int> sizes(nranks), offsets(nranks, 0);
  MPI_Allgather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm);
  for (int r = 1; r < nranks; ++r) offsets[r] = offsets[r - 1] + sizes[r - 1];
  std::vector<char> all(static_cast<std::size_t>(offsets.back()) + sizes.back());
  MPI_Allgatherv(mine.data(), my_size, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                 comm);
  std::vector<std::vector<char>> out;
  for (int r = 0; r < nranks; ++r)
    out.emplace_back(all.begin() + offsets[r], all.begin() + offsets[r] + sizes[r]);
  return out;
}
}  // namespace detail

std::vector<ReducedRow> reduce_timers(MPI_Comm comm) {
  return reduce_timers(comm, TimerTree::local().rows());
}

std::vector<ReducedRow> reduce_timers(MPI_Comm comm, const std::vector<TimerTree::Row>& mine) {
  // Every rank merges the same bytes in the same order, so all get identical rows.
  std::vector<std::vector<TimerTree::Row>> per_rank;
  for (const auto& bytes : detail::allgather_bytes(comm, serialize(mine)))
    per_rank.push_back(deserialize(bytes.data(), bytes.data() + bytes.size()));
  return detail::merge_rows(per_rank);
}

void print_summary_table(std::ostream& os, const std::vector<ReducedRow>& rows,
                         double total_seconds, int nranks) {
  const auto names = detail::leaf_names(rows);
  std::size_t width = 24;
  for (std::size_t i = 0; i < rows.size(); ++i)
    width = std::max(width, 2 * static_cast<std::size_t>(rows[i].depth) + names[i].size());
  const std::string rule(width + 63, '-');

  os << fmt::format(" perf summary: {} MPI rank{}, {:.3f} s wall clock\n", nranks,
                    nranks == 1 ? "" : "s", total_seconds);
  os << ' ' << rule << '\n';
  os << fmt::format("  {:<{}} {:>13} {:>13} {:>13} {:>10} {:>8}\n", "region", width, "max/rank (s)",
                    "min/rank (s)", "avg/rank (s)", "calls", "% total");
  os << ' ' << rule << '\n';
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string name = std::string(2 * static_cast<std::size_t>(r.depth), ' ') + names[i];
    const std::string percent =
        total_seconds > 0.0 ? fmt::format("{:.1f}", 100.0 * r.avg_s / total_seconds) : "-";
    os << fmt::format("  {:<{}} {:>13.3f} {:>13.3f} {:>13.3f} {:>10} {:>8}\n", name, width, r.max_s,
                      r.min_s, r.avg_s, r.calls, percent);
  }
  os << ' ' << rule << '\n';
}

nlohmann::json timers_to_json(const std::vector<ReducedRow>& rows) {
  if (rows.empty()) return nlohmann::json::object();
  const auto names = detail::leaf_names(rows);
  nlohmann::json top;
  // Pointers to the open ancestors stay valid: only the newest array is appended to.
  std::vector<nlohmann::json*> ancestors;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    nlohmann::json node = {{"name", names[i]}, {"max_s", r.max_s},
                           {"min_s", r.min_s}, {"avg_s", r.avg_s},
                           {"calls", r.calls}, {"children", nlohmann::json::array()}};
    if (i == 0 && r.depth == 0) {
      top = std::move(node);
      ancestors = {&top};
      continue;
    }
    if (r.depth < 1 || static_cast<std::size_t>(r.depth) > ancestors.size())
      throw std::invalid_argument("timers_to_json: rows are not one depth-first tree");
    ancestors.resize(r.depth);
    auto& siblings = (*ancestors.back())["children"];
    siblings.push_back(std::move(node));
    ancestors.push_back(&siblings.back());
  }
  return top;
}

}  // namespace tessera::perf

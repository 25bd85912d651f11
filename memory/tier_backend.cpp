#include "memory/tier_backend.hpp"

#include <fmt/format.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/size.hpp"

#ifdef TESSERA_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

namespace tessera::memory {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TierReport base_report(const std::string& requested, const std::string& in_effect,
                       const TierTopology& topo) {
  TierReport r;
  r.backend_requested = requested;
  r.backend = in_effect;
  r.topology = topo.describe();
  r.kernel_warnings = topo.warnings();
  for (const auto& n : topo.nodes) r.nodes.push_back(n.id);
  r.fast_nodes = topo.fast_nodes;
  r.slow_nodes = topo.slow_nodes;
  return r;
}

std::string emulation_text(const char* kind, const SlowTierModel& m) {
  return fmt::format(
      "{}: slow tier modelled on one node at {:.3g} GB/s read, {:.3g} GB/s write, {:.0f} ns "
      "latency; not a measurement of real tiers",
      kind, m.read_bw / 1e9, m.write_bw / 1e9, m.latency * 1e9);
}

// Placement as asked, nothing measured: emulated and model (and none, in the fast tier).
TierPlacement as_recorded(std::size_t bytes, ObjectClass c, Tier requested, Tier achieved) {
  TierPlacement p;
  p.cls = c;
  p.bytes = bytes;
  p.requested = requested;
  p.achieved = achieved;
  p.achieved_bytes[int(achieved)] = bytes;
  return p;
}

double timed_memcpy(void* dst, const void* src, std::size_t bytes) {
  const auto t0 = Clock::now();
  if (bytes) std::memcpy(dst, src, bytes);
  return seconds_since(t0);
}

class NoneBackend final : public TierBackend {
 public:
  explicit NoneBackend(TierReport r) : TierBackend(std::move(r)) {}
  void bind(void*, std::size_t, Tier) override {}
  TierPlacement verify(const void*, std::size_t bytes, ObjectClass c, Tier t) override {
    TierPlacement p = as_recorded(bytes, c, t, Tier::fast);
    if (t == Tier::slow) p.warning = "backend none: no slow tier, placed by first touch";
    record(p);
    return p;
  }
  double copy(void* dst, const void* src, std::size_t bytes, CopyDirection d) override {
    const double s = timed_memcpy(dst, src, bytes);
    record_copy(bytes, s, d);
    return s;
  }
  double move(void*, std::size_t, Tier, Tier) override { return 0; }
};

CopyDirection direction_of(Tier to) {
  return to == Tier::fast ? CopyDirection::slow_to_fast : CopyDirection::fast_to_slow;
}

class EmulatedBackend final : public TierBackend {
 public:
  EmulatedBackend(TierReport r, const SlowTierModel& m) : TierBackend(std::move(r)), model_(m) {}
  void bind(void*, std::size_t, Tier) override {}
  TierPlacement verify(const void*, std::size_t bytes, ObjectClass c, Tier t) override {
    TierPlacement p = as_recorded(bytes, c, t, t);
    record(p);
    return p;
  }
  double copy(void* dst, const void* src, std::size_t bytes, CopyDirection d) override {
    const double s = copy_between_tiers(dst, src, bytes, d, model_);
    record_copy(bytes, s, d);
    return s;
  }
  double move(void*, std::size_t bytes, Tier from, Tier to) override {
    if (from == to || bytes == 0) return 0;
    // One node: the pages stay where they are; the run pays the copy's modelled time.
    const auto t0 = Clock::now();
    const CopyDirection d = direction_of(to);
    emulated_sleep(modelled_copy_seconds(bytes, d, model_));
    const double s = seconds_since(t0);
    record_copy(bytes, s, d, false);
    return s;
  }

 private:
  SlowTierModel model_;
};

class ModelBackend final : public TierBackend {
 public:
  ModelBackend(TierReport r, const SlowTierModel& m) : TierBackend(std::move(r)), model_(m) {}
  void bind(void*, std::size_t, Tier) override {}
  TierPlacement verify(const void*, std::size_t bytes, ObjectClass c, Tier t) override {
    TierPlacement p = as_recorded(bytes, c, t, t);
    record(p);
    return p;
  }
  double copy(void*, const void*, std::size_t bytes, CopyDirection d) override {
    const double s = modelled_copy_seconds(bytes, d, model_);
    record_copy(bytes, s, d);
    return s;
  }
  double move(void*, std::size_t bytes, Tier from, Tier to) override {
    if (from == to || bytes == 0) return 0;
    const CopyDirection d = direction_of(to);
    const double s = modelled_copy_seconds(bytes, d, model_);
    record_copy(bytes, s, d, false);
    return s;
  }
  bool copies_data() const override { return false; }

 private:
  SlowTierModel model_;
};

#ifdef TESSERA_HAVE_NUMA
class NumaBackend final : public TierBackend {
 public:
  NumaBackend(TierReport r, const TierTopology& topo)
      : TierBackend(std::move(r)), fast_(topo.fast_nodes), slow_(topo.slow_nodes) {}

  void bind(void* addr, std::size_t bytes, Tier t) override {
    if (policy(addr, bytes, t, 0) != 0) {
      const int err = errno;
      std::lock_guard<std::mutex> lock(bind_mutex_);
      bind_errors_[addr] =
          fmt::format("numa: mbind to nodes {{{}}} failed: {}; pages left to first touch",
                      node_list_text(t == Tier::fast ? fast_ : slow_), std::strerror(err));
    }
  }

  double move(void* addr, std::size_t bytes, Tier from, Tier to) override {
    if (from == to || bytes == 0) return 0;
    const auto t0 = Clock::now();
    // MPOL_MF_MOVE migrates the pages already faulted in (only this process's, which an
    // arena's are); verify() reads back where they went and reports any that did not.
    if (policy(addr, bytes, to, MPOL_MF_MOVE) != 0) {
      const int err = errno;
      std::lock_guard<std::mutex> lock(bind_mutex_);
      bind_errors_[addr] =
          fmt::format("numa: mbind(MPOL_MF_MOVE) to nodes {{{}}} failed: {}",
                      node_list_text(to == Tier::fast ? fast_ : slow_), std::strerror(err));
    }
    const double s = seconds_since(t0);
    record_copy(bytes, s, direction_of(to), false);
    return s;
  }

  TierPlacement verify(const void* addr, std::size_t bytes, ObjectClass c, Tier t) override {
    TierPlacement p;
    p.cls = c;
    p.bytes = bytes;
    p.requested = t;
    {
      std::lock_guard<std::mutex> lock(bind_mutex_);
      auto it = bind_errors_.find(addr);
      if (it != bind_errors_.end()) {
        p.warning = it->second;
        bind_errors_.erase(it);
      }
    }
    const std::size_t page = std::size_t(::sysconf(_SC_PAGESIZE));
    const std::size_t npages = (bytes + page - 1) / page;
    const std::size_t n = std::min(npages, detail::kVerifyPages);
    std::vector<void*> pages(n);
    std::vector<int> status(n, -1);
    for (std::size_t i = 0; i < n; ++i)
      pages[i] = const_cast<char*>(static_cast<const char*>(addr)) + (i * npages / n) * page;
    std::size_t unknown = 0;
    if (n && ::move_pages(0, n, pages.data(), nullptr, status.data(), 0) != 0) {
      const int err = errno;
      p.warning +=
          (p.warning.empty() ? "" : "; ") +
          fmt::format("numa: move_pages could not read back the pages: {}", std::strerror(err));
      status.assign(n, -1);
    }
    p.pages_checked = n;
    const double scale = n ? double(bytes) / double(n) : 0;
    std::map<int, std::size_t> count;
    for (int s : status) {
      if (s < 0)
        ++unknown;
      else
        ++count[s];
    }
    for (const auto& [node, k] : count) {
      const auto b = std::size_t(std::llround(double(k) * scale));
      p.bytes_per_node[node] = b;
      const bool in_slow = std::find(slow_.begin(), slow_.end(), node) != slow_.end();
      p.achieved_bytes[in_slow ? 1 : 0] += b;
    }
    p.achieved = p.achieved_bytes[1] > p.achieved_bytes[0] ? Tier::slow : Tier::fast;
    if (unknown)
      p.warning += (p.warning.empty() ? "" : "; ") +
                   fmt::format("numa: {} of {} sampled pages not resident", unknown, n);
    else if (p.achieved_bytes[int(t)] < bytes && p.warning.empty())
      p.warning = fmt::format("numa: {} of {} not in the {} tier",
                              format_bytes(double(bytes - p.achieved_bytes[int(t)])),
                              format_bytes(double(bytes)), to_string(t));
    record(p);
    return p;
  }

  double copy(void* dst, const void* src, std::size_t bytes, CopyDirection d) override {
    const double s = timed_memcpy(dst, src, bytes);
    record_copy(bytes, s, d);
    return s;
  }

 private:
  // mbind(MPOL_BIND) of [addr, addr + bytes) to tier t's nodes with `flags`; 0 or -1.
  int policy(void* addr, std::size_t bytes, Tier t, unsigned flags) const {
    const std::vector<int>& nodes = t == Tier::fast ? fast_ : slow_;
    // One bit per node; the kernel reads maxnode - 1 bits.
    constexpr int kMaxNodes = 1024;
    unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
    for (int n : nodes)
      if (n >= 0 && n < kMaxNodes)
        mask[n / (8 * sizeof(unsigned long))] |= 1UL << (n % (8 * sizeof(unsigned long)));
    return int(::mbind(addr, bytes, MPOL_BIND, mask, kMaxNodes + 1, flags));
  }

  std::vector<int> fast_, slow_;
  std::mutex bind_mutex_;
  std::map<const void*, std::string> bind_errors_;  ///< bind() failures, until verify()
};
#endif

}  // namespace

TierBackendKind parse_tier_backend(const std::string& text) {
  for (auto k : {TierBackendKind::none, TierBackendKind::numa, TierBackendKind::emulated,
                 TierBackendKind::model})
    if (text == to_string(k)) return k;
  throw Error(
      fmt::format("unknown tier backend '{}' (choices: none, numa, emulated, model)", text));
}

const char* to_string(TierBackendKind k) {
  switch (k) {
    case TierBackendKind::none:
      return "none";
    case TierBackendKind::numa:
      return "numa";
    case TierBackendKind::emulated:
      return "emulated";
    case TierBackendKind::model:
      return "model";
  }
  return "?";
}

TierReport TierBackend::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return report_;
}

void TierBackend::record(const TierPlacement& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int c = int(p.cls);
  report_.requested[c][int(p.requested)] += p.bytes;
  report_.achieved[c][0] += p.achieved_bytes[0];
  report_.achieved[c][1] += p.achieved_bytes[1];
  for (const auto& [node, b] : p.bytes_per_node) report_.bytes_per_node[node] += b;
}

void TierBackend::record_copy(std::size_t bytes, double seconds, CopyDirection d, bool by_helper) {
  std::lock_guard<std::mutex> lock(mutex_);
  CopyStats& s = report_.copies[int(d)];
  ++s.count;
  s.bytes += bytes;
  s.seconds += seconds;
  if (by_helper) copiers_[int(d)].insert(std::this_thread::get_id());
  s.helper_threads = int(copiers_[int(d)].size());
}

std::unique_ptr<TierBackend> make_tier_backend(TierBackendKind kind, const TierTopology& topo,
                                               const SlowTierModel& slow) {
  const std::string name = to_string(kind);
  switch (kind) {
    case TierBackendKind::none:
      return std::make_unique<NoneBackend>(base_report(name, "none", topo));
    case TierBackendKind::emulated: {
      TierReport r = base_report(name, "emulated", topo);
      r.emulated = true;
      r.emulation = emulation_text("emulated", slow);
      return std::make_unique<EmulatedBackend>(std::move(r), slow);
    }
    case TierBackendKind::model: {
      TierReport r = base_report(name, "model", topo);
      r.emulated = true;
      r.emulation = emulation_text("model", slow);
      return std::make_unique<ModelBackend>(std::move(r), slow);
    }
    case TierBackendKind::numa: {
      TierReport r = base_report(name, "none", topo);
#ifdef TESSERA_HAVE_NUMA
      if (::numa_available() < 0) {
        r.warning =
            "numa: the kernel has no NUMA support (numa_available() < 0); falling back to none";
      } else if (topo.nodes.size() <= 1) {
        r.warning = fmt::format("numa: one NUMA node ({}): no slow tier; falling back to none",
                                node_list_text(topo.fast_nodes));
      } else if (!topo.has_slow_tier()) {
        r.warning =
            fmt::format("numa: {} NUMA nodes ({}) but no slow tier ({}); falling back to none",
                        topo.nodes.size(), node_list_text(r.nodes), topo.reason);
      } else {
        r.backend = "numa";
        return std::make_unique<NumaBackend>(std::move(r), topo);
      }
#else
      r.warning = "numa: unavailable (libnuma not built in); falling back to none";
#endif
      return std::make_unique<NoneBackend>(std::move(r));
    }
  }
  throw Error("make_tier_backend: unknown backend");
}

Arena make_tiered_arena(TierBackend& b, std::string name, std::size_t bytes, const ArenaConfig& cfg,
                        ObjectClass c, Tier t, TierPlacement* placed) {
  Arena a(std::move(name), bytes, cfg.policy, cfg.hugepage_size,
          [&](void* addr, std::size_t n) { b.bind(addr, n, t); });
  TierPlacement p = b.verify(a.data(), a.bytes(), c, t);
  if (placed) *placed = std::move(p);
  return a;
}

double modelled_copy_seconds(std::size_t bytes, CopyDirection d, const SlowTierModel& m) {
  const double bw = d == CopyDirection::slow_to_fast ? m.read_bw : m.write_bw;
  return double(bytes) / bw;
}

double emulated_sleep(double seconds) {
  // Each thread keeps a balance: what it still owes (> 0) or has overslept (< 0). A
  // sleep of tens of microseconds overshoots by the timer slack (50 us by default) plus
  // the wake-up; crediting the overshoot keeps the sum of the sleeps equal to the sum
  // asked, so that many short emulated copies and penalties cost what the model says.
  thread_local double balance = 0;
  thread_local bool slack_set = false;
  if (!slack_set) {
    prctl(PR_SET_TIMERSLACK, 1UL);  // 1 ns: precise wake-ups for this thread
    slack_set = true;
  }
  // Credit is capped at 1 ms: work that ran slower than the model in one place (a copy on
  // a machine slower than the emulated tier) must not excuse a later, unrelated penalty.
  balance = std::max(balance + seconds, -1e-3);
  if (balance <= 0) return 0;
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(balance));
  const double slept = seconds_since(t0);
  balance -= slept;
  return slept;
}

double copy_between_tiers(void* dst, const void* src, std::size_t bytes, CopyDirection d,
                          const SlowTierModel& m) {
  constexpr std::size_t kChunk = kMiB;
  const double bw = d == CopyDirection::slow_to_fast ? m.read_bw : m.write_bw;
  const auto t0 = Clock::now();
  for (std::size_t off = 0; off < bytes; off += kChunk) {
    const std::size_t n = std::min(kChunk, bytes - off);
    const auto c0 = Clock::now();
    std::memcpy(static_cast<char*>(dst) + off, static_cast<const char*>(src) + off, n);
    // Pace chunk by chunk, so that a helper thread's copy stream has the modelled rate
    // throughout and not just on average (a machine slower than the model is not sped
    // up: the balance then goes negative and nothing sleeps).
    emulated_sleep(double(n) / bw - seconds_since(c0));
  }
  return seconds_since(t0);
}

double slow_access_penalty(std::size_t bytes, AccessPattern p, const SlowTierModel& m) {
  if (p == AccessPattern::sequential)
    return std::max(0.0, double(bytes) / m.read_bw - double(bytes) / m.fast_read_bw);
  if (p == AccessPattern::sequential_write)
    return std::max(0.0, double(bytes) / m.write_bw - double(bytes) / m.fast_write_bw);
  const double lines = std::ceil(double(bytes) / 64.0);
  return std::max(0.0, lines * (m.latency - m.fast_latency));
}

void to_json(nlohmann::json& j, const TierReport& r) {
  j = nlohmann::json::object();
  j["backend_requested"] = r.backend_requested;
  j["backend"] = r.backend;
  j["emulated"] = r.emulated;
  j["warning"] = r.warning;
  j["emulation"] = r.emulation;
  j["kernel_warnings"] = r.kernel_warnings;
  j["topology"] = r.topology;
  j["nodes"] = r.nodes;
  j["fast_nodes"] = r.fast_nodes;
  j["slow_nodes"] = r.slow_nodes;
  nlohmann::json classes = nlohmann::json::object();
  for (int c = 0; c < kObjectClasses; ++c)
    classes[to_string(ObjectClass(c))] = {
        {"requested", {{"fast", r.requested[c][0]}, {"slow", r.requested[c][1]}}},
        {"achieved", {{"fast", r.achieved[c][0]}, {"slow", r.achieved[c][1]}}}};
  j["classes"] = std::move(classes);
  nlohmann::json per_node = nlohmann::json::object();
  for (const auto& [node, b] : r.bytes_per_node) per_node[std::to_string(node)] = b;
  j["bytes_per_node"] = std::move(per_node);
  const char* dir[] = {"slow_to_fast", "fast_to_slow"};
  nlohmann::json copies = nlohmann::json::object();
  for (int d = 0; d < 2; ++d)
    copies[dir[d]] = {{"count", r.copies[d].count},
                      {"bytes", r.copies[d].bytes},
                      {"seconds", r.copies[d].seconds},
                      {"helper_threads", r.copies[d].helper_threads}};
  j["copies"] = std::move(copies);
}

// ---------------------------------------------------------------------------------------
// Parameters

void declare_tier_params(base::Params& p) {
  p.declare_string("memory.tier.backend", "none", {"none", "numa", "emulated", "model"},
                   "memory tiers: none, numa (libnuma bind + page read-back), emulated (one node, "
                   "modelled slow tier) or model (accounting only)");
  p.declare_string(
      "memory.tier.placement", "fast_only",
      {"fast_only", "slow_only", "first_touch", "static", "static_prefetch", "dynamic"},
      "which objects go to the fast tier (memory/tier_placement.hpp)");
  p.declare_string(
      "memory.tier.fast_bytes", "", {},
      "fast-tier bytes per rank for placement, e.g. 8G; empty: the fast nodes' memory");
  p.declare_int("memory.tier.helper_threads", 0, 0, 256,
                "copy threads for dynamic placement; 0: chosen by the helper-thread model");
  p.declare_real("memory.tier.slow_read_bw", 39e9, 1e6, 1e13,
                 "emulated/model slow-tier read bandwidth, B/s (default: the study's Optane PM)");
  p.declare_real("memory.tier.slow_write_bw", 13e9, 1e6, 1e13,
                 "emulated/model slow-tier write bandwidth, B/s");
  p.declare_real("memory.tier.slow_latency", 304e-9, 0, 1e-3,
                 "emulated/model slow-tier random-access latency, s");
}

std::size_t fast_capacity(const TierConfig& c, const TierTopology& topo) {
  return c.fast_bytes ? c.fast_bytes : topo.bytes_of(topo.fast_nodes);
}

TierConfig tier_config(const base::Params& p) {
  TierConfig c;
  if (!p.has("memory.tier.backend")) return c;
  c.backend = parse_tier_backend(p.get_string("memory.tier.backend"));
  c.placement = parse_placement(p.get_string("memory.tier.placement"));
  const std::string& fb = p.get_string("memory.tier.fast_bytes");
  if (!fb.empty()) {
    try {
      c.fast_bytes = parse_bytes(fb);
    } catch (const Error& e) {
      throw Error(fmt::format("parameter 'memory.tier.fast_bytes': {}", e.what()));
    }
  }
  c.helper_threads = int(p.get_int("memory.tier.helper_threads"));
  c.slow.read_bw = p.get_real("memory.tier.slow_read_bw");
  c.slow.write_bw = p.get_real("memory.tier.slow_write_bw");
  c.slow.latency = p.get_real("memory.tier.slow_latency");
  return c;
}

}  // namespace tessera::memory

#include "memory/tier_runtime.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/error.hpp"
#include "base/size.hpp"

namespace tessera::memory {

namespace {

std::atomic<TierRuntime*> g_runtime{nullptr};

constexpr const char* kMigrationArena = "migration";

// The copy-bandwidth measurement for the helper-thread model: short (64 MiB per thread,
// tessera_tier_bench's size, past most caches; two timed copies per point), made before
// the runtime places anything.
constexpr std::size_t kBenchBytes = 64 * kMiB;
constexpr int kBenchCopies = 2;

std::size_t round_down(std::size_t x, std::size_t a) {
  return a ? x / a * a : x;
}

bool is_static_family(PlacementPolicy p) {
  return p == PlacementPolicy::static_ || p == PlacementPolicy::static_prefetch ||
         p == PlacementPolicy::dynamic;
}

nlohmann::json tiers_json(const std::array<std::size_t, 2>& b) {
  return {{"fast", b[0]}, {"slow", b[1]}};
}

}  // namespace

TierRuntime* tier_runtime() {
  return g_runtime.load(std::memory_order_acquire);
}

bool TierRuntime::wanted(const TierConfig& c) {
  return c.backend != TierBackendKind::none || c.placement != PlacementPolicy::fast_only;
}

TierRuntime::TierRuntime(const TierConfig& cfg, const TierTopology& topo, Options opt)
    : cfg_(cfg), topo_(topo), opt_(opt) {
  if (tier_runtime() != nullptr) throw Error("tier runtime: one is installed already");
  backend_ = make_tier_backend(cfg_.backend, topo_, cfg_.slow);
  kind_ = parse_tier_backend(backend_->report().backend);
  capacity_ = memory::fast_capacity(cfg_, topo_);
  charging_ = emulated();
  opt_.ranks_per_node = std::max(opt_.ranks_per_node, 1);
  n_max_ = opt_.threads_per_rank > 0
               ? opt_.threads_per_rank
               : std::max(1, int(std::max(1u, std::thread::hardware_concurrency())) /
                                 opt_.ranks_per_node);
  if (cfg_.placement == PlacementPolicy::dynamic && cfg_.helper_threads == 0) {
    // BW(n) for the helper-thread model (eqs 3-7). model: the modelled slow tier alone
    // (deterministic); otherwise this machine's copy, measured now, before anything is
    // placed (on one node it is DRAM to DRAM), and under emulation capped by n copy
    // streams at the modelled slow bandwidths (what copy_between_tiers lets through).
    bw_in_.assign(std::size_t(n_max_) + 1, 0.0);
    bw_out_.assign(std::size_t(n_max_) + 1, 0.0);
    if (kind_ == TierBackendKind::model) {
      for (int n = 1; n <= n_max_; ++n)
        bw_in_[n] = n * cfg_.slow.read_bw, bw_out_[n] = n * cfg_.slow.write_bw;
      bw_source_ = "model: n x the modelled slow read / write bandwidth";
    } else {
      bw_measured_ = copy_bandwidth_curve(n_max_, kBenchBytes, kBenchCopies);
      for (const auto& pt : bw_measured_)
        bw_in_[pt.threads] = bw_out_[pt.threads] = pt.bytes_per_second;
      bw_source_ = fmt::format("measured: memcpy of {} per thread at 1..{} threads{}",
                               format_bytes(double(kBenchBytes)), n_max_,
                               topo_.has_slow_tier() ? "" : " (one tier: DRAM to DRAM)");
      if (kind_ == TierBackendKind::emulated) {
        for (int n = 1; n <= n_max_; ++n) {
          bw_in_[n] = std::min(bw_in_[n], n * cfg_.slow.read_bw);
          bw_out_[n] = std::min(bw_out_[n], n * cfg_.slow.write_bw);
        }
        bw_source_ += ", capped at n x the emulated slow read / write bandwidth";
      }
    }
  }
  g_runtime.store(this, std::memory_order_release);
  set_arena_placer(this);
}

TierRuntime::~TierRuntime() {
  {
    // The streamer's helpers end here; its slots are unmapped while the placer is installed.
    std::lock_guard<std::mutex> lock(streamer_mutex_);
    streamer_.reset();
  }
  if (arena_placer() == static_cast<ArenaPlacer*>(this)) set_arena_placer(nullptr);
  TierRuntime* self = this;
  g_runtime.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

std::string TierRuntime::label() const {
  const TierReport r = backend_->report();
  switch (kind_) {
    case TierBackendKind::emulated:
    case TierBackendKind::model:
      return r.emulation;
    case TierBackendKind::numa:
      return fmt::format("numa: real tiers, fast nodes {{{}}}, slow nodes {{{}}}",
                         node_list_text(topo_.fast_nodes), node_list_text(topo_.slow_nodes));
    case TierBackendKind::none:
      break;
  }
  return "none: no slow tier in use; every byte is in the fast tier (placement decisions are "
         "recorded only)";
}

std::string TierRuntime::log_prefix() const {
  if (kind_ == TierBackendKind::emulated) return "memory: tiers (emulated): ";
  if (kind_ == TierBackendKind::model) return "memory: tiers (model): ";
  return "memory: tiers: ";
}

std::string TierRuntime::backend_warning() const {
  return backend_->report().warning;
}

std::vector<std::string> TierRuntime::describe() const {
  const std::string pre = log_prefix();
  std::vector<std::string> out;
  out.push_back(pre + fmt::format("backend {} (requested {}), placement {}, fast tier {}{}; {}",
                                  to_string(kind_), to_string(cfg_.backend),
                                  to_string(cfg_.placement), format_bytes(double(capacity_)),
                                  cfg_.fast_bytes ? "" : " (the fast nodes' memory)", label()));
  out.push_back(pre + "topology: " + topo_.describe());
  if (!bw_source_.empty()) {
    std::string curve;
    for (std::size_t n = 1; n < bw_in_.size(); ++n)
      curve += fmt::format("{}{}: {:.2f}/{:.2f} GB/s", n > 1 ? ", " : "", n, bw_in_[n] / 1e9,
                           bw_out_[n] / 1e9);
    out.push_back(pre + "copy bandwidth for the helper-thread model (slow->fast/fast->slow) " +
                  curve + "; " + bw_source_);
  }
  return out;
}

std::vector<LedgerEntry> TierRuntime::ledger() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<LedgerEntry> out;
  for (const auto& [a, e] : ledger_) out.push_back(e);
  std::sort(out.begin(), out.end(),
            [](const LedgerEntry& x, const LedgerEntry& y) { return x.order < y.order; });
  return out;
}

bool TierRuntime::static_pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return is_static_family(cfg_.placement) && !static_done_;
}

// ---------------------------------------------------------------------------------------
// Placement of each mapping

std::array<std::size_t, 2> TierRuntime::decide(const LedgerEntry& e) const {
  const std::size_t b = e.bytes;
  if (e.migration) return {b, 0};  // the batch slots are the fast buffer by definition
  switch (cfg_.placement) {
    case PlacementPolicy::fast_only:
      return {b, 0};
    case PlacementPolicy::slow_only:
      return {0, b};
    default:
      break;
  }
  const std::size_t used = live_fast_ + migration_reserve_;
  const std::size_t left = capacity_ > used ? capacity_ - used : 0;
  if (cfg_.placement == PlacementPolicy::first_touch || !static_done_) {
    // First touch: as much as is left, the rest of the arena spills (cut on a page).
    const std::size_t fast = round_down(std::min(b, left), std::max<std::size_t>(e.page, 1));
    return {fast, b - fast};
  }
  // After static placement: the plan's rule, first fit; dynamic streams particles.
  if (cfg_.placement == PlacementPolicy::dynamic && e.cls == ObjectClass::particle) return {0, b};
  return b <= left ? std::array<std::size_t, 2>{b, 0} : std::array<std::size_t, 2>{0, b};
}

void TierRuntime::add_live(const LedgerEntry& e, int sign) {
  const auto apply = [sign](std::size_t& x, std::size_t d) {
    x = sign > 0 ? x + d : x - std::min(x, d);
  };
  if (!e.migration) apply(live_fast_, e.requested[0]);
  if (sign > 0)
    live_slow_.fetch_add(e.requested[1], std::memory_order_relaxed);
  else
    live_slow_.fetch_sub(std::min(live_slow_.load(std::memory_order_relaxed), e.requested[1]),
                         std::memory_order_relaxed);
  auto& live = class_live_[int(e.cls)];
  auto& peak = class_peak_[int(e.cls)];
  for (int t = 0; t < 2; ++t) {
    apply(live[t], e.requested[t]);
    peak[t] = std::max(peak[t], live[t]);
  }
}

void TierRuntime::verify(LedgerEntry& e) {
  e.achieved = {0, 0};
  e.bytes_per_node.clear();
  std::string warn;
  std::size_t at = 0;
  for (int t = 0; t < 2; ++t) {
    const std::size_t n = e.requested[t];
    if (n == 0) continue;
    const TierPlacement p =
        backend_->verify(reinterpret_cast<void*>(e.addr + at), n, e.cls, Tier(t));
    e.achieved[0] += p.achieved_bytes[0];
    e.achieved[1] += p.achieved_bytes[1];
    for (const auto& [node, b] : p.bytes_per_node) e.bytes_per_node[node] += b;
    if (!p.warning.empty()) warn += (warn.empty() ? "" : "; ") + p.warning;
    at += n;
  }
  e.warning = warn;
}

void TierRuntime::before_touch(const std::string& name, void* addr, std::size_t bytes,
                               std::size_t page_size) {
  std::lock_guard<std::mutex> lock(mutex_);
  LedgerEntry e;
  e.name = name;
  e.cls = object_class_of_arena(name);
  e.addr = reinterpret_cast<std::uintptr_t>(addr);
  e.bytes = bytes;
  e.page = page_size;
  e.order = order_++;
  e.migration = name == kMigrationArena;
  e.requested = decide(e);
  // Bind before the pre-fault: fast part first, then the spilled rest.
  if (e.requested[0]) backend_->bind(addr, e.requested[0], Tier::fast);
  if (e.requested[1])
    backend_->bind(static_cast<char*>(addr) + e.requested[0], e.requested[1], Tier::slow);
  add_live(e, +1);
  ledger_[e.addr] = std::move(e);
}

void TierRuntime::after_touch(const std::string&, void* addr, std::size_t) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = ledger_.find(reinterpret_cast<std::uintptr_t>(addr));
  if (it != ledger_.end()) verify(it->second);
}

void TierRuntime::unmapped(void* addr) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = ledger_.find(reinterpret_cast<std::uintptr_t>(addr));
  if (it == ledger_.end()) return;
  add_live(it->second, -1);
  ledger_.erase(it);
}

// ---------------------------------------------------------------------------------------
// Static placement after the first iteration

std::string TierRuntime::place_static(std::size_t batch_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!is_static_family(cfg_.placement) || static_done_) return "";
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<LedgerEntry*> live;
  for (auto& [a, e] : ledger_)
    if (!e.migration) live.push_back(&e);
  std::sort(live.begin(), live.end(),
            [](const LedgerEntry* x, const LedgerEntry* y) { return x->order < y->order; });
  std::vector<TierObject> objs;
  for (const LedgerEntry* e : live) objs.push_back({e->cls, e->bytes, e->name});
  plan_ = plan_placement(objs, cfg_.placement, capacity_, batch_bytes);
  migration_reserve_ = plan_.migration_bytes;
  int moved = 0;
  for (std::size_t i = 0; i < live.size(); ++i) {
    LedgerEntry& e = *live[i];
    // The fast part of an arena is its head (first touch and split fields alike), cut on
    // the arena's page size; what lies between the old and the new cut moves.
    std::size_t head = plan_.objects[i].fast_bytes;
    if (head < e.bytes && e.page > 0) head -= head % e.page;
    const std::array<std::size_t, 2> want{head, e.bytes - head};
    if (want == e.requested) continue;
    const Tier to = want[0] > e.requested[0] ? Tier::fast : Tier::slow;
    const std::size_t off = std::min(want[0], e.requested[0]);
    const std::size_t n = std::max(want[0], e.requested[0]) - off;
    const double s = backend_->move(reinterpret_cast<void*>(e.addr + off), n,
                                    to == Tier::fast ? Tier::slow : Tier::fast, to);
    Moves& m = moves_[int(to)];
    ++m.count;
    m.bytes += n;
    m.seconds += s;
    add_live(e, -1);
    e.requested = want;
    add_live(e, +1);
    ++e.moves;
    verify(e);
    ++moved;
  }
  static_done_ = true;
  static_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::size_t fast = 0, slow = 0;
  for (const LedgerEntry* e : live) fast += e->achieved[0], slow += e->achieved[1];
  static_line_ = fmt::format(
      "{}static placement ({}) after the first step: {} of {} arenas moved ({} to fast, {} to "
      "slow) in {:.3f} s; fast {} of {}, slow {}{}{}",
      log_prefix(), to_string(cfg_.placement), moved, live.size(),
      format_bytes(double(moves_[0].bytes)), format_bytes(double(moves_[1].bytes)), static_seconds_,
      format_bytes(double(fast)), format_bytes(double(capacity_)), format_bytes(double(slow)),
      plan_.migration_bytes ? fmt::format("; migration space {} (3 batches)",
                                          format_bytes(double(plan_.migration_bytes)))
                            : "",
      plan_.note.empty() ? "" : "; " + plan_.note);
  return static_line_;
}

// ---------------------------------------------------------------------------------------
// Penalties

void TierRuntime::charge(const void* addr, std::size_t bytes, AccessPattern pattern) {
  if (!charging_ || bytes == 0 || live_slow_.load(std::memory_order_relaxed) == 0) return;
  const auto x = reinterpret_cast<std::uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ledger_.upper_bound(x);
  if (it == ledger_.begin()) return;
  const LedgerEntry& e = (--it)->second;
  if (x >= e.addr + e.bytes || e.requested[1] == 0) return;
  // The slow part of an arena is its tail [addr + fast bytes, addr + bytes).
  const std::uintptr_t lo = std::max(x, e.addr + e.requested[0]);
  const std::uintptr_t hi = std::min(x + bytes, e.addr + e.bytes);
  if (hi <= lo) return;
  debt_ += slow_access_penalty(std::size_t(hi - lo), pattern, cfg_.slow);
}

double TierRuntime::pay(std::string_view phase) {
  if (!charging_) return 0;
  double d = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    d = debt_;
    debt_ = 0;
    charged_[std::string(phase)] += d;
  }
  if (kind_ == TierBackendKind::emulated && d > 0) emulated_sleep(d);
  return d;
}

std::map<std::string, double> TierRuntime::charged() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return charged_;
}

// ---------------------------------------------------------------------------------------
// Prefetch distance

PrefetchRecord TierRuntime::prefetch_inputs() const {
  PrefetchRecord r;
  // The study's example coefficients (reference/tiered-memory.md): alpha = 5 ns and unit
  // betas, i.e. the prefetch takes the latency of the tier the data is in.
  r.model = PrefetchModel{5e-9, 1.0, 1.0};
  r.model_source = "the study's example (alpha = 5 ns, beta1 = beta2 = 1); not fitted";
  std::size_t fast = 0, slow = 0;
  for (const auto& [a, e] : ledger_)
    if (e.cls == ObjectClass::field) fast += e.achieved[0], slow += e.achieved[1];
  r.f = fast + slow > 0 ? double(fast) / double(fast + slow) : 1.0;
  r.slow_fields = slow > 0;
  r.lat_fast = cfg_.slow.fast_latency;
  r.lat_slow = cfg_.slow.latency;
  r.latency_source = emulated() ? "emulated model (SlowTierModel)" : "model defaults (no HMAT)";
  if (kind_ == TierBackendKind::numa && !topo_.fast_nodes.empty() && !topo_.slow_nodes.empty()) {
    const NumaNode* f = topo_.node(topo_.fast_nodes.front());
    const NumaNode* s = topo_.node(topo_.slow_nodes.front());
    if (f && s && f->read_latency > 0 && s->read_latency > 0) {
      r.lat_fast = f->read_latency;
      r.lat_slow = s->read_latency;
      r.latency_source = "HMAT (firmware rating)";
    }
  }
  r.prefetch_time = prefetch_time(r.model, r.f, r.lat_fast, r.lat_slow);
  return r;
}

long TierRuntime::prefetch_distance(double time_per_particle) {
  std::lock_guard<std::mutex> lock(mutex_);
  PrefetchRecord r = prefetch_inputs();
  const long k = memory::prefetch_distance(r.prefetch_time, time_per_particle);  // validates
  const bool wants = cfg_.placement == PlacementPolicy::static_prefetch ||
                     cfg_.placement == PlacementPolicy::dynamic;
  r.computed = true;
  r.time_per_particle = time_per_particle;
  r.distance = wants && r.slow_fields ? k : 0;
  prefetch_ = r;
  return r.distance;
}

PrefetchRecord TierRuntime::prefetch_record() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return prefetch_;
}

// ---------------------------------------------------------------------------------------
// Streamer

bool TierRuntime::streaming() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cfg_.placement == PlacementPolicy::dynamic && static_done_ && migration_reserve_ > 0;
}

TierStreamer& TierRuntime::streamer() {
  std::lock_guard<std::mutex> lock(streamer_mutex_);
  if (!streamer_) {
    StreamerOptions o;
    o.helper_threads = cfg_.helper_threads;
    o.n_max = n_max_;
    o.n_ranks = opt_.ranks_per_node;
    o.bw_slow_to_fast = bw_in_;
    o.bw_fast_to_slow = bw_out_;
    o.arena_name = kMigrationArena;
    streamer_ = std::make_unique<TierStreamer>(*backend_, o);
  }
  return *streamer_;
}

// ---------------------------------------------------------------------------------------
// Summary

nlohmann::json TierRuntime::to_json() const {
  nlohmann::json j;
  memory::to_json(j, backend_->report());
  j["installed"] = true;
  j["label"] = label();
  j["placement"] = to_string(cfg_.placement);
  j["fast_bytes"] = capacity_;
  j["fast_bytes_requested"] = cfg_.fast_bytes;
  j["slow_model"] = {{"read_bw", cfg_.slow.read_bw},
                     {"write_bw", cfg_.slow.write_bw},
                     {"latency", cfg_.slow.latency},
                     {"fast_read_bw", cfg_.slow.fast_read_bw},
                     {"fast_latency", cfg_.slow.fast_latency}};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Per class: the live arenas now (requested and achieved), and the most bytes live in
    // each tier at once over the run.
    std::array<std::array<std::size_t, 2>, kObjectClasses> req{}, ach{};
    std::map<int, std::size_t> per_node;
    nlohmann::json arenas = nlohmann::json::array();
    std::vector<const LedgerEntry*> live;
    for (const auto& [a, e] : ledger_) live.push_back(&e);
    std::sort(live.begin(), live.end(),
              [](const LedgerEntry* x, const LedgerEntry* y) { return x->order < y->order; });
    for (const LedgerEntry* e : live) {
      for (int t = 0; t < 2; ++t)
        req[int(e->cls)][t] += e->requested[t], ach[int(e->cls)][t] += e->achieved[t];
      for (const auto& [node, b] : e->bytes_per_node) per_node[node] += b;
      arenas.push_back({{"name", e->name},
                        {"class", to_string(e->cls)},
                        {"bytes", e->bytes},
                        {"requested", tiers_json(e->requested)},
                        {"achieved", tiers_json(e->achieved)},
                        {"moves", e->moves},
                        {"warning", e->warning}});
    }
    nlohmann::json classes = nlohmann::json::object();
    for (int c = 0; c < kObjectClasses; ++c)
      classes[to_string(ObjectClass(c))] = {{"requested", tiers_json(req[c])},
                                            {"achieved", tiers_json(ach[c])},
                                            {"peak", tiers_json(class_peak_[c])}};
    j["classes"] = std::move(classes);
    j["arenas"] = std::move(arenas);
    nlohmann::json nodes = nlohmann::json::object();
    for (const auto& [node, b] : per_node) nodes[std::to_string(node)] = b;
    j["bytes_per_node"] = std::move(nodes);
    j["static_placement"] = {{"done", static_done_},
                             {"seconds", static_seconds_},
                             {"log", static_line_},
                             {"moves",
                              {{"to_fast",
                                {{"count", moves_[0].count},
                                 {"bytes", moves_[0].bytes},
                                 {"seconds", moves_[0].seconds}}},
                               {"to_slow",
                                {{"count", moves_[1].count},
                                 {"bytes", moves_[1].bytes},
                                 {"seconds", moves_[1].seconds}}}}}};
    j["plan"] = {{"note", plan_.note},
                 {"fast_used", plan_.fast_used},
                 {"slow_used", plan_.slow_used},
                 {"migration_bytes", plan_.migration_bytes},
                 {"prefetch", plan_.prefetch}};
    nlohmann::json charged = nlohmann::json::object();
    for (const auto& [p, s] : charged_) charged[p] = s;
    j["charged_seconds"] = std::move(charged);
    j["charged_mode"] = kind_ == TierBackendKind::emulated ? "slept (emulated)"
                        : kind_ == TierBackendKind::model  ? "predicted (model: not slept)"
                                                           : "none (the hardware pays)";
    // Until a kernel asks (it brings the time per particle), the inputs as they stand now.
    const PrefetchRecord p = prefetch_.computed ? prefetch_ : prefetch_inputs();
    j["model"]["prefetch"] = {{"computed", p.computed},
                              {"wanted", cfg_.placement == PlacementPolicy::static_prefetch ||
                                             cfg_.placement == PlacementPolicy::dynamic},
                              {"f", p.f},
                              {"lat_fast", p.lat_fast},
                              {"lat_slow", p.lat_slow},
                              {"latency_source", p.latency_source},
                              {"alpha", p.model.alpha},
                              {"beta1", p.model.beta1},
                              {"beta2", p.model.beta2},
                              {"coefficients", p.model_source},
                              {"prefetch_time", p.prefetch_time},
                              {"time_per_particle", p.time_per_particle},
                              {"distance", p.distance}};
  }
  nlohmann::json curve = nlohmann::json::array();
  for (std::size_t n = 1; n < bw_in_.size(); ++n)
    curve.push_back({{"threads", n}, {"slow_to_fast", bw_in_[n]}, {"fast_to_slow", bw_out_[n]}});
  auto& h = j["model"]["helper_threads"];
  h = {{"requested", cfg_.helper_threads}, {"n_max", n_max_},
       {"n_ranks", opt_.ranks_per_node},   {"bandwidth_curve", curve},
       {"bandwidth_source", bw_source_},   {"decisions", nlohmann::json::array()}};
  {
    std::lock_guard<std::mutex> lock(streamer_mutex_);
    if (streamer_) {
      nlohmann::json s = streamer_->report();
      h["decisions"] = s["decisions"];
      j["streamer"] = std::move(s);
    }
  }
  return j;
}

}  // namespace tessera::memory

#pragma once
// Tier backends: put an allocation in the fast or slow tier and report what really
// happened (requested vs achieved, per object class), and copy between tiers.
//
//   none     - no placement: the kernel's default (first touch on the local node); every
//              byte is reported achieved in the fast tier, the only one in use.
//   numa     - real tiers (libnuma): mbind(MPOL_BIND) of a fresh mapping to the tier's
//              nodes BEFORE its pages are touched (Arena's BeforeTouch hook; a later mbind
//              does not move faulted pages), then move_pages(nodes = NULL) reads back the
//              node of every page (at most kVerifyPages pages, evenly sampled, scaled) and
//              the achieved bytes per node and tier are reported. With one NUMA node, or
//              without libnuma, it falls back to none with a one-line warning.
//   emulated - one node; the slow tier is a model (SlowTierModel, parameters
//              memory.tier.slow_*): placement is recorded as asked, copies really copy
//              and are throttled to the modelled slow bandwidth, and a kernel reading slow
//              data directly is charged slow_access_penalty(). Everything it reports is
//              labelled "emulated": nothing measured with it is a tier measurement.
//   model    - byte accounting and predicted copy times only (no copy, no sleep):
//              deterministic, for tests and planning.
//
// A backend's methods are thread-safe (helper threads copy concurrently).
#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "memory/arena.hpp"
#include "memory/tier_placement.hpp"
#include "memory/tiers.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::memory {

enum class TierBackendKind { none, numa, emulated, model };
/// "none" | "numa" | "emulated" | "model"; throws tessera::Error naming the choices.
TierBackendKind parse_tier_backend(const std::string& text);
const char* to_string(TierBackendKind k);

/// The slow tier the emulated and model backends assume, and the fast tier penalties are
/// measured against. Defaults: the study's Optane PM and DRAM, per socket
/// (reference/tiered-memory.md, "The machine"). Bytes/s and seconds.
struct SlowTierModel {
  double read_bw = 39e9;        ///< memory.tier.slow_read_bw
  double write_bw = 13e9;       ///< memory.tier.slow_write_bw
  double latency = 304e-9;      ///< memory.tier.slow_latency (random access)
  double latency_seq = 174e-9;  ///< sequential access (the study's PM)
  double fast_read_bw = 104e9;  ///< the study's DRAM; not a parameter
  double fast_write_bw = 80e9;  ///< the study's DRAM write; not a parameter
  double fast_latency = 87e-9;  ///< random
  double fast_latency_seq = 79e-9;
};

enum class CopyDirection { slow_to_fast, fast_to_slow };
/// How a kernel touches data in place: streaming reads, streaming writes (the slow tier's
/// write bandwidth is its weakest: Optane 13 GB/s against 39 read), or one cache line per
/// dependent access (latency-bound).
enum class AccessPattern { sequential, random, sequential_write };

/// memory.tier.* in effect.
struct TierConfig {
  TierBackendKind backend = TierBackendKind::none;
  PlacementPolicy placement = PlacementPolicy::fast_only;
  std::size_t fast_bytes = 0;  ///< 0: the fast nodes' memory
  int helper_threads = 0;      ///< 0: from the helper-thread model (tier_model.hpp)
  SlowTierModel slow;
};

/// Declares memory.tier.backend, .placement, .fast_bytes, .helper_threads,
/// .slow_read_bw, .slow_write_bw, .slow_latency (called by memory::declare_params).
void declare_tier_params(base::Params& p);
/// Fast-tier bytes placement may use: memory.tier.fast_bytes if set, else the fast nodes'
/// memory (the whole machine on one node).
std::size_t fast_capacity(const TierConfig& c, const TierTopology& topo);
/// The values in effect. Throws tessera::Error with one line naming the key for a value
/// that does not parse. Without memory.tier.* declared: TierConfig{} (backend none).
TierConfig tier_config(const base::Params& p);

/// One allocation as placed.
struct TierPlacement {
  ObjectClass cls = ObjectClass::field;
  std::size_t bytes = 0;
  Tier requested = Tier::fast;
  Tier achieved = Tier::fast;                   ///< the tier holding most of its bytes
  std::array<std::size_t, 2> achieved_bytes{};  ///< [fast, slow]
  std::map<int, std::size_t> bytes_per_node;    ///< numa only: read back (sampled, scaled)
  std::size_t pages_checked = 0;                ///< numa only
  std::string warning;                          ///< why achieved differs, if it does
};

/// Copies in one direction.
struct CopyStats {
  std::size_t count = 0, bytes = 0;
  double seconds = 0;      ///< summed over copies (model: predicted)
  int helper_threads = 0;  ///< distinct threads that copied
};

/// What a backend did, for summary.json.
struct TierReport {
  std::string backend_requested, backend;  ///< backend is the one in effect after fallback
  bool emulated = false;                   ///< true for emulated (and model): not a measurement
  std::string warning;                     ///< the fallback, one line; empty if none
  std::string emulation;  ///< emulated/model: the slow tier assumed, one line; else empty
  std::vector<std::string> kernel_warnings;  ///< demotion / NUMA balancing
  std::string topology;                      ///< TierTopology::describe()
  std::vector<int> nodes, fast_nodes, slow_nodes;
  /// [class][tier] bytes: what placements asked for and what they got.
  std::array<std::array<std::size_t, 2>, kObjectClasses> requested{}, achieved{};
  std::map<int, std::size_t> bytes_per_node;  ///< numa: read back
  std::array<CopyStats, 2> copies{};          ///< [slow_to_fast, fast_to_slow]
};
void to_json(nlohmann::json& j, const TierReport& r);

/// The interface. bind() before the pages are touched, verify() after; copy() at will.
class TierBackend {
 public:
  virtual ~TierBackend() = default;
  /// Applies tier `t` to a fresh, untouched mapping. Failures are not thrown: verify()
  /// reports them.
  virtual void bind(void* addr, std::size_t bytes, Tier t) = 0;
  /// Where the (now touched) pages of [addr, addr + bytes) are; records the placement.
  virtual TierPlacement verify(const void* addr, std::size_t bytes, ObjectClass c, Tier t) = 0;
  /// Copies `bytes` from src to dst across tiers in direction d; returns the seconds it
  /// took (model: the predicted seconds, and nothing is copied).
  virtual double copy(void* dst, const void* src, std::size_t bytes, CopyDirection d) = 0;
  /// Moves the (touched) pages of [addr, addr + bytes) from tier `from` to tier `to` in
  /// place, as static placement does after the first iteration; returns the seconds and
  /// records the move as a copy in its direction (not by a helper thread). numa: mbind
  /// with MPOL_MF_MOVE to the new tier's nodes (verify() reads back where the pages went);
  /// emulated: nothing moves, the modelled time of the copy (modelled_copy_seconds) is
  /// slept so that the run pays it; model: the modelled time is recorded, nothing sleeps;
  /// none: one tier, nothing to move (0 s, nothing recorded).
  virtual double move(void* addr, std::size_t bytes, Tier from, Tier to) = 0;
  /// False when copy() copies nothing (model): a streamer then computes in place.
  virtual bool copies_data() const { return true; }
  /// The report so far (a copy).
  TierReport report() const;

 protected:
  explicit TierBackend(TierReport base) : report_(std::move(base)) {}
  void record(const TierPlacement& p);
  /// `by_helper`: the calling thread counts in CopyStats::helper_threads (placement moves,
  /// made by the thread that places, do not).
  void record_copy(std::size_t bytes, double seconds, CopyDirection d, bool by_helper = true);

 private:
  mutable std::mutex mutex_;
  TierReport report_;
  std::array<std::set<std::thread::id>, 2> copiers_;
};

/// The backend `kind` on `topo` (detect_tiers()). numa on one node or without libnuma,
/// returns the none backend with report().warning saying why (one line, starting "numa:").
std::unique_ptr<TierBackend> make_tier_backend(TierBackendKind kind, const TierTopology& topo,
                                               const SlowTierModel& slow = {});

/// An arena of `bytes` placed by `b` in tier `t`: bound before its pages are pre-faulted,
/// verified after. The placement is recorded in b's report and returned in *placed.
Arena make_tiered_arena(TierBackend& b, std::string name, std::size_t bytes, const ArenaConfig& cfg,
                        ObjectClass c, Tier t, TierPlacement* placed = nullptr);

/// The modelled time of a copy in direction d: bytes over the slow side's bandwidth
/// (read for slow_to_fast, write for fast_to_slow).
double modelled_copy_seconds(std::size_t bytes, CopyDirection d, const SlowTierModel& m);

/// Emulation: really copies (memcpy in 1 MiB chunks) and sleeps so that the copy takes
/// at least modelled_copy_seconds(); returns the achieved seconds. Safe to call from
/// several helper threads at once (each is throttled on its own: the model is per copy
/// stream, as the study's per-thread BW(n) curves are). A machine slower than the model
/// is not sped up: the achieved time is then the machine's.
double copy_between_tiers(void* dst, const void* src, std::size_t bytes, CopyDirection d,
                          const SlowTierModel& m);

/// Emulation: sleeps so that this thread's emulated time adds up to what was asked: the
/// overshoot of each sleep (timer slack, wake-up) is credited against later ones, and so
/// is a negative request (work that ran slower than the model), the credit capped at
/// 1 ms. Returns the seconds slept now. Thread-safe (the balance is per thread).
double emulated_sleep(double seconds);

/// Emulation: the modelled extra seconds a kernel pays for reading `bytes` of slow-tier
/// data in place instead of fast: sequential = bytes/read_bw - bytes/fast_read_bw;
/// sequential_write = bytes/write_bw - bytes/fast_write_bw;
/// random = one 64 B line per access, each paying latency - fast_latency. >= 0.
double slow_access_penalty(std::size_t bytes, AccessPattern p, const SlowTierModel& m);

namespace detail {
/// numa verify reads back at most this many pages (evenly spaced) and scales.
inline constexpr std::size_t kVerifyPages = 4096;
}  // namespace detail

}  // namespace tessera::memory

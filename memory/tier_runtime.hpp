#pragma once
// The tier runtime: one per process, created by the driver from memory.tier.* before the
// mesh maps anything, so that every arena (unk, rk_stage, flux, scratch, staging,
// particles, the streamer's migration slots) is placed. It holds the configuration, the
// topology, the backend (memory/tier_backend.hpp) and the ledger of live arenas, and is
// the arena placer (memory/arena.hpp): a fresh mapping is decided and bound before its
// pages are touched, verified after, and dropped from the ledger when it is unmapped.
//
// Decisions (memory.tier.placement; the WarpX-PM study, reference/tiered-memory.md):
//   fast_only, slow_only - every arena fast / slow.
//   first_touch          - what the kernel's default does: arenas fill the fast tier
//                          (memory.tier.fast_bytes) in mapping order, the one at the
//                          boundary is split (fast part first, cut at a page boundary;
//                          numa binds its two ranges to the two node sets), the rest slow.
//                          Freed fast bytes are taken by later mappings.
//   static, static_prefetch, dynamic - "static placement is done after the first
//                          iteration": arenas mapped before place_static() are placed as
//                          first_touch; place_static() (the driver calls it once, after the
//                          first step) plans the live arenas with plan_placement (metadata,
//                          temporaries, fields, particles; dynamic first reserves three
//                          particle batches for the migration space and keeps particles
//                          slow) and moves each arena whose tier changed (backend move():
//                          numa mbind(MPOL_MF_MOVE) and read back; emulated: the copy's
//                          modelled time is slept; model: predicted only). The plan splits
//                          a field arena that does not fit whole (its head fast, on the
//                          page size). Later mappings go by first fit against the fast
//                          bytes left (fast if the whole arena fits in what live arenas
//                          and the migration reserve leave, else slow; not split, fields
//                          included), particles always slow under dynamic. The streamer's
//                          slots ("migration") are always fast and count against the
//                          migration reserve, not the fast budget; if particles grow past
//                          the batch size measured at static placement, the slots grow
//                          beyond that reserve (not checked).
//
// Kernels that read slow data in place report it with charge() and settle with pay() at
// the end of their phase (inside their timer region): emulated sleeps the modelled extra
// time (slow_access_penalty), model only adds it up, none and numa do nothing (the
// hardware pays). Without a runtime (tier_runtime() == nullptr: backend none and
// placement fast_only, the defaults) nothing of this runs and arenas pay one atomic load.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "memory/arena.hpp"
#include "memory/tier_backend.hpp"
#include "memory/tier_bench.hpp"
#include "memory/tier_model.hpp"
#include "memory/tier_placement.hpp"
#include "memory/tier_stream.hpp"
#include "memory/tiers.hpp"

namespace tessera::memory {

/// One live arena as the runtime placed it. Bytes are the mapping's (mapped_bytes).
struct LedgerEntry {
  std::string name;
  ObjectClass cls = ObjectClass::metadata;
  std::uintptr_t addr = 0;
  std::size_t bytes = 0;
  std::size_t page = 0;  ///< page size of the mapping: a split falls on a multiple of it
  long order = 0;        ///< mapping order in the process
  /// [fast, slow] bytes decided and found. A split arena has its fast bytes first.
  std::array<std::size_t, 2> requested{}, achieved{};
  std::map<int, std::size_t> bytes_per_node;  ///< numa: read back
  int moves = 0;                              ///< times place_static moved it
  bool migration = false;                     ///< the streamer's batch slots
  std::string warning;                        ///< why achieved differs, if it does
};

/// The prefetch distance's inputs and answer (eqs 1-2), as last computed.
struct PrefetchRecord {
  bool computed = false;
  double f = 0;              ///< fraction of field bytes in fast memory (achieved, live arenas)
  bool slow_fields = false;  ///< some field byte is in the slow tier
  double lat_fast = 0, lat_slow = 0;
  std::string latency_source;  ///< "emulated model", "HMAT", "model defaults (no HMAT)"
  PrefetchModel model;
  std::string model_source;
  double prefetch_time = 0;
  double time_per_particle = 0;  ///< the kernel's, as given (0: not asked yet)
  long distance = 0;             ///< 0: no prefetch
};

class TierRuntime final : private ArenaPlacer {
 public:
  struct Options {
    int ranks_per_node = 1;    ///< ranks sharing this node's memory (the model's N_ranks)
    int threads_per_rank = 0;  ///< the model's n_max; 0: hardware threads / ranks_per_node
  };

  /// True when `c` asks for anything (backend other than none, or placement other than
  /// fast_only): the driver creates a runtime only then.
  static bool wanted(const TierConfig& c);

  /// Makes the backend (numa falls back to none where it cannot place; backend_warning()
  /// says why), measures the copy bandwidth when the helper-thread model will need it
  /// (dynamic with memory.tier.helper_threads = 0, backends none, numa, emulated), and
  /// installs itself as the arena placer and as tier_runtime(). Throws tessera::Error if a
  /// runtime is installed already.
  TierRuntime(const TierConfig& cfg, const TierTopology& topo, Options opt);
  TierRuntime(const TierConfig& cfg, const TierTopology& topo)
      : TierRuntime(cfg, topo, Options{}) {}
  /// Joins the streamer's helpers, then uninstalls. Arenas still mapped stay where they are.
  ~TierRuntime() override;
  TierRuntime(const TierRuntime&) = delete;
  TierRuntime& operator=(const TierRuntime&) = delete;

  const TierConfig& config() const { return cfg_; }
  const TierTopology& topology() const { return topo_; }
  TierBackend& backend() { return *backend_; }
  TierBackendKind backend_kind() const { return kind_; }  ///< in effect, after fallback
  std::size_t fast_capacity() const { return capacity_; }
  /// emulated or model: nothing measured with the tiers is a tier measurement.
  bool emulated() const {
    return kind_ == TierBackendKind::emulated || kind_ == TierBackendKind::model;
  }
  /// One line saying what the tiers are: "emulated: slow tier modelled ...", "model: ...",
  /// "numa: real tiers, fast {0}, slow {2}", "none: ...".
  std::string label() const;
  /// "memory: tiers: ", "memory: tiers (emulated): " or "memory: tiers (model): ": the
  /// start of every log line about tiers.
  std::string log_prefix() const;
  /// The backend's fallback warning (numa on one node), one line; empty if none.
  std::string backend_warning() const;
  /// Lines for the log at start-up (backend, placement, topology, kernel warnings).
  std::vector<std::string> describe() const;

  /// The live arenas in mapping order. Thread-safe.
  std::vector<LedgerEntry> ledger() const;

  /// static, static_prefetch and dynamic: true until place_static() has run.
  bool static_pending() const;
  /// Static placement over the live arenas (see the file comment); `batch_bytes` is one
  /// particle batch (dynamic's migration space is three of them; 0: the largest particle
  /// arena). Returns one line for the log ("" when the policy has no static step or it
  /// ran already). Not collective: each rank places its own arenas.
  std::string place_static(std::size_t batch_bytes);

  /// A kernel read `bytes` at `addr` in place: charges the modelled extra time of the part
  /// that lies in the slow tier (slow_access_penalty; emulated and model only). Cheap: one
  /// lock and one ordered lookup; call it per block, not per particle. Addresses outside
  /// every arena are free. Thread-safe.
  void charge(const void* addr, std::size_t bytes, AccessPattern pattern);
  /// Settles the charges since the last pay(): emulated sleeps them, model only records
  /// them; both add them to `phase` (e.g. "pic/push") and return the seconds. none and
  /// numa: 0. Call it at the end of the phase, inside its timer region.
  double pay(std::string_view phase);
  /// Seconds charged per phase so far.
  std::map<std::string, double> charged() const;

  /// Eq (1)-(2) for the fields left in slow memory: k = ceil(prefetch_time /
  /// time_per_particle) with f the fraction of field bytes now in fast memory and the
  /// tiers' random-access latencies (emulated and model: SlowTierModel's; numa: HMAT where
  /// firmware gives it, else SlowTierModel's defaults). Coefficients: the study's example,
  /// alpha = 5 ns, beta1 = beta2 = 1 (not fitted here: this machine has one tier). Returns
  /// 0 (no prefetch) for placements other than static_prefetch and dynamic, and when no
  /// field byte is slow. Throws tessera::Error for time_per_particle <= 0. Records its
  /// inputs for the summary.
  long prefetch_distance(double time_per_particle);
  PrefetchRecord prefetch_record() const;

  /// True when kernels should stream particle batches through streamer(): placement
  /// dynamic, static placement done, and a migration space reserved (the plan found room).
  bool streaming() const;
  /// The streamer of particle batches (created on first use with memory.tier.helper_threads,
  /// the measured BW(n) and the model's n_max and N_ranks); its helper threads end with
  /// the runtime.
  TierStreamer& streamer();
  /// The copy-bandwidth curves given to the helper-thread model (element n: n threads),
  /// and where they came from. Empty when no model needs them.
  const std::vector<double>& bw_slow_to_fast() const { return bw_in_; }
  const std::vector<double>& bw_fast_to_slow() const { return bw_out_; }

  /// summary.json -> memory -> tiers (the README's Contract lists the keys).
  nlohmann::json to_json() const;

 private:
  TierConfig cfg_;
  TierTopology topo_;
  Options opt_;
  std::unique_ptr<TierBackend> backend_;
  TierBackendKind kind_ = TierBackendKind::none;
  std::size_t capacity_ = 0;
  bool charging_ = false;  ///< emulated or model
  int n_max_ = 1;

  mutable std::mutex mutex_;
  std::map<std::uintptr_t, LedgerEntry> ledger_;  ///< by address
  long order_ = 0;
  std::size_t live_fast_ = 0;          ///< requested fast bytes of live arenas (migration excluded)
  std::size_t migration_reserve_ = 0;  ///< dynamic: three batches, after place_static
  std::atomic<std::size_t> live_slow_{0};  ///< requested slow bytes of live arenas
  std::array<std::array<std::size_t, 2>, kObjectClasses> class_live_{}, class_peak_{};
  bool static_done_ = false;
  PlacementPlan plan_;
  std::string static_line_;
  double static_seconds_ = 0;
  struct Moves {
    long count = 0;
    std::size_t bytes = 0;
    double seconds = 0;
  };
  std::array<Moves, 2> moves_{};  ///< [to fast, to slow]
  double debt_ = 0;
  std::map<std::string, double> charged_;
  PrefetchRecord prefetch_;
  std::vector<double> bw_in_, bw_out_;
  std::vector<BandwidthPoint> bw_measured_;
  std::string bw_source_;

  mutable std::mutex streamer_mutex_;
  std::unique_ptr<TierStreamer> streamer_;

  // ArenaPlacer
  void before_touch(const std::string& name, void* addr, std::size_t bytes,
                    std::size_t page_size) override;
  void after_touch(const std::string& name, void* addr, std::size_t bytes) override;
  void unmapped(void* addr) noexcept override;

  std::array<std::size_t, 2> decide(const LedgerEntry& e) const;  ///< caller holds mutex_
  void add_live(const LedgerEntry& e, int sign);                  ///< caller holds mutex_
  void verify(LedgerEntry& e);                                    ///< caller holds mutex_
  PrefetchRecord prefetch_inputs() const;  ///< eq (2) from the ledger; caller holds mutex_
};

/// The installed runtime, or nullptr (no tiers: the default). Callers on hot paths test it
/// once per phase.
TierRuntime* tier_runtime();

}  // namespace tessera::memory

#pragma once
// Dynamic placement's streamer of particle batches (J. Ren et al., ICS '21, "dynamic
// placement"; reference/tiered-memory.md): particles live in slow memory and a phase
// (push, deposit, ...) works through them batch by batch in a fast-tier buffer of three
// batch slots. While the kernel computes on batch i, helper threads fetch batch i+1
// (slow -> fast, TierBackend::copy, so the emulated backend throttles it) and write back
// batch i-1, only the arrays the kernel marked modified. Batches i-1, i and i+1 coexist:
// the buffer holds three (the paper sizes its migration space for one, which cannot).
//
// Data: structure of arrays. A phase names its arrays (base pointer and element size,
// e.g. a ParticleSet's nprop double arrays of stride capacity() and its int64 tag and
// int32 node arrays) and its batches, each one index range [begin, end) applied to every
// array (a run of blocks; ParticleSet keeps a block's particles contiguous). The staged
// copy of batch i holds element begin + j of array q at index j.
//
// Protocol (one kernel thread): begin_phase, then for i = 0, 1, ... in order acquire(i),
// compute, release(i, modified mask), then end_phase (which waits for every write-back).
// Batch i must be released before batch i+1 is acquired. Empty batches are allowed. The
// results are bitwise those of computing in place: the copies are plain byte copies.
//
// Under the model backend (copy() copies nothing) acquire() returns the original arrays
// (the kernel computes in place) and the copies are only recorded, with their predicted
// times. Helper-thread failures surface in the kernel's thread as tessera::Error from
// acquire, release or end_phase. The destructor waits for copies in flight and joins the
// helper threads.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <thread>
#include <vector>

#include "memory/arena.hpp"
#include "memory/tier_backend.hpp"
#include "memory/tier_model.hpp"

namespace tessera::memory {

/// One array of a phase: its first element and the bytes per element (8 for a double).
struct StreamArray {
  void* data = nullptr;
  std::size_t elem_bytes = 0;
};

/// One batch: elements [begin, end) of every array.
struct BatchRange {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end > begin ? end - begin : 0; }
};

/// The staged arrays of one batch (acquire's answer).
struct StagedBatch {
  std::vector<void*> arrays;  ///< per array: element `begin` of the batch
  std::size_t begin = 0, size = 0;
  /// Array q as T (element begin + j of the original at index j).
  template <class T>
  T* array(std::size_t q) const {
    return static_cast<T*>(arrays[q]);
  }
};

/// Bit q of a modified mask: array q was written and must be written back.
inline constexpr std::uint64_t modified_bit(std::size_t q) {
  return std::uint64_t(1) << q;
}
inline constexpr std::uint64_t kAllModified = ~std::uint64_t(0);

struct StreamerOptions {
  /// Helper threads per phase; 0: chosen by the helper-thread model (tier_model.hpp, eqs
  /// 3-9) after the phase's first run, which streams with 1 and measures the compute time
  /// per batch.
  int helper_threads = 0;
  int n_max = 1;    ///< hardware threads of the rank (the model's n_max)
  int n_ranks = 1;  ///< ranks sharing the memory bandwidth (the model's N_ranks)
  /// BW(n) for n = 0..n_max (element 0 unused), bytes/s: the model's copy curves. Empty:
  /// no model (1 helper thread, said so in the decision).
  std::vector<double> bw_slow_to_fast, bw_fast_to_slow;
  std::string arena_name = "migration";  ///< the slots' arena (a temporary, placed fast)
  ArenaConfig arena_config{};
};

/// The helper-thread count of one phase and how it was chosen.
struct StreamDecision {
  std::string phase;
  int helper_threads = 1;
  bool from_model = false;  ///< false: memory.tier.helper_threads, or no curves
  HelperInputs inputs;      ///< the model's inputs (from_model only)
  HelperDecision decision;  ///< the model's answer (from_model only)
  std::string why;          ///< one line
};

/// Per phase name: what streaming did (summed over the phase's runs).
struct StreamPhaseStats {
  long runs = 0, batches = 0;
  std::size_t bytes_in = 0, bytes_out = 0, bytes_skipped = 0;  ///< skipped: unmodified arrays
  double compute_seconds = 0;  ///< acquire -> release, summed over non-empty batches
  double wait_seconds = 0;     ///< the kernel waiting in acquire and end_phase
};

class TierStreamer {
 public:
  /// Copies through `backend` (which must outlive the streamer).
  TierStreamer(TierBackend& backend, StreamerOptions opt);
  ~TierStreamer();
  TierStreamer(const TierStreamer&) = delete;
  TierStreamer& operator=(const TierStreamer&) = delete;

  /// Starts phase `name` over `batches` of `arrays` (at most 64 arrays) and begins
  /// fetching batches 0 and 1. Maps or grows the slot arena to three of the largest batch.
  void begin_phase(const std::string& name, std::vector<BatchRange> batches,
                   std::vector<StreamArray> arrays);
  /// Batch i in fast memory (waits until it is there). i must be the next batch.
  const StagedBatch& acquire(std::size_t i);
  /// Done with batch i: the arrays whose bit is set in `modified` are written back (by a
  /// helper thread, while the kernel goes on); the others are not copied.
  void release(std::size_t i, std::uint64_t modified);
  /// Waits for every copy of the phase (the write-backs included); the originals are then
  /// up to date.
  void end_phase();
  /// Ends a phase its kernel left unfinished (an exception between begin_phase and
  /// end_phase): waits for the copies in flight, then forgets the phase (no write-back of
  /// batches not yet released). A no-op outside a phase. Never throws.
  void abandon_phase() noexcept;

  /// Helper threads the phase `name` uses (its decision; 1 before it has one).
  int helper_threads(const std::string& name) const;
  std::vector<StreamDecision> decisions() const;
  std::map<std::string, StreamPhaseStats> phase_stats() const;
  std::size_t slot_bytes() const { return slot_bytes_; }  ///< one slot (one batch, all arrays)
  /// {"phases": {name: stats}, "decisions": [...], "slot_bytes", "arena_bytes"}.
  nlohmann::json report() const;

 private:
  enum class Kind { fetch, writeback };
  struct Task {
    Kind kind;
    std::size_t batch, array, offset, bytes;  ///< offset, bytes: within the batch's part
  };
  using Clock = std::chrono::steady_clock;

  TierBackend& backend_;
  StreamerOptions opt_;
  Arena slots_;
  std::size_t slot_bytes_ = 0;
  std::vector<std::size_t> slot_offset_;  ///< per array, within a slot

  // Phase state (guarded by mutex_ where helpers see it).
  std::string phase_;
  bool in_phase_ = false;
  std::vector<BatchRange> batches_;
  std::vector<StreamArray> arrays_;
  std::size_t next_ = 0;   ///< the batch acquire expects
  bool acquired_ = false;  ///< batch next_ - 1 is acquired and not yet released
  Clock::time_point t_acquired_{};
  StagedBatch staged_;
  int active_ = 1;  ///< helpers working in this phase

  mutable std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Task> queue_;
  std::vector<int> fetch_left_, wb_left_;  ///< per batch: chunks not yet copied
  long in_flight_ = 0;                     ///< tasks taken and not finished
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> helpers_;

  std::map<std::string, StreamDecision> decided_;
  std::map<std::string, StreamPhaseStats> stats_;

  void ensure_helpers(int n);
  void helper_loop(int index);
  void enqueue(Kind k, std::size_t batch, std::uint64_t mask);  ///< caller holds mutex_
  void* slot_of(std::size_t batch, std::size_t array) const;
  void* original_of(std::size_t batch, std::size_t array) const;
  void raise_if_failed();  ///< caller holds mutex_
  void drain() noexcept;   ///< waits for every queued copy; keeps any error
  void decide(const std::string& name, const StreamPhaseStats& first_run);
};

}  // namespace tessera::memory

#include "memory/tier_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/error.hpp"

namespace tessera::memory {

namespace {
// Copies are cut into chunks of at most this size, so that several helper threads share
// one batch (BW(n) is n threads copying together) and a throttled copy is paced finely.
constexpr std::size_t kChunk = kMiB;
constexpr std::size_t kAlign = 64;  // each array's part of a slot starts on a cache line

std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

TierStreamer::TierStreamer(TierBackend& backend, StreamerOptions opt)
    : backend_(backend), opt_(std::move(opt)) {
  if (opt_.helper_threads < 0) throw Error("tier streamer: helper_threads must be >= 0");
  opt_.n_max = std::max(opt_.n_max, 1);
  opt_.n_ranks = std::max(opt_.n_ranks, 1);
}

TierStreamer::~TierStreamer() {
  drain();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  for (auto& t : helpers_) t.join();
}

void TierStreamer::ensure_helpers(int n) {
  while (int(helpers_.size()) < n) {
    const int index = int(helpers_.size());
    helpers_.emplace_back([this, index] { helper_loop(index); });
  }
}

void* TierStreamer::slot_of(std::size_t batch, std::size_t array) const {
  return static_cast<char*>(slots_.data()) + (batch % 3) * slot_bytes_ + slot_offset_[array];
}

void* TierStreamer::original_of(std::size_t batch, std::size_t array) const {
  const StreamArray& a = arrays_[array];
  return static_cast<char*>(a.data) + batches_[batch].begin * a.elem_bytes;
}

void TierStreamer::raise_if_failed() {
  if (!error_) return;
  try {
    std::rethrow_exception(error_);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("tier streamer: a helper thread failed in phase '{}': {}", phase_, e.what()));
  } catch (...) {
    throw Error(fmt::format("tier streamer: a helper thread failed in phase '{}'", phase_));
  }
}

void TierStreamer::helper_loop(int index) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (!queue_.empty() && index < active_); });
    if (stop_) return;
    const Task t = queue_.front();
    queue_.pop_front();
    ++in_flight_;
    // A fetch goes into the slot batch - 3 used: its write-back must be finished. Those
    // chunks were queued earlier, so they are done or being copied by another helper.
    if (t.kind == Kind::fetch && t.batch >= 3)
      done_cv_.wait(lock, [&] { return wb_left_[t.batch - 3] == 0 || error_ || stop_; });
    if (!error_ && !stop_) {
      void* slot = static_cast<char*>(slot_of(t.batch, t.array)) + t.offset;
      void* orig = static_cast<char*>(original_of(t.batch, t.array)) + t.offset;
      lock.unlock();
      try {
        if (t.kind == Kind::fetch)
          backend_.copy(slot, orig, t.bytes, CopyDirection::slow_to_fast);
        else
          backend_.copy(orig, slot, t.bytes, CopyDirection::fast_to_slow);
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        lock.unlock();
      }
      lock.lock();
    }
    --(t.kind == Kind::fetch ? fetch_left_ : wb_left_)[t.batch];
    --in_flight_;
    done_cv_.notify_all();
  }
}

void TierStreamer::enqueue(Kind k, std::size_t batch, std::uint64_t mask) {
  const BatchRange& b = batches_[batch];
  auto& st = stats_[phase_];
  const bool real = backend_.copies_data();
  for (std::size_t q = 0; q < arrays_.size(); ++q) {
    const std::size_t bytes = b.size() * arrays_[q].elem_bytes;
    if (bytes == 0) continue;
    if (k == Kind::writeback && !(mask & modified_bit(q))) {
      st.bytes_skipped += bytes;
      continue;
    }
    (k == Kind::fetch ? st.bytes_in : st.bytes_out) += bytes;
    if (!real) {
      // model: nothing is copied (the kernel works in place); the copy is recorded with
      // its predicted time.
      backend_.copy(nullptr, nullptr, bytes,
                    k == Kind::fetch ? CopyDirection::slow_to_fast : CopyDirection::fast_to_slow);
      continue;
    }
    for (std::size_t off = 0; off < bytes; off += kChunk) {
      queue_.push_back({k, batch, q, off, std::min(kChunk, bytes - off)});
      ++(k == Kind::fetch ? fetch_left_ : wb_left_)[batch];
    }
  }
  work_cv_.notify_all();
}

void TierStreamer::drain() noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return queue_.empty() && in_flight_ == 0; });
}

void TierStreamer::begin_phase(const std::string& name, std::vector<BatchRange> batches,
                               std::vector<StreamArray> arrays) {
  drain();  // a phase left unfinished (its kernel threw) is finished now
  if (arrays.size() > 64)
    throw Error(
        fmt::format("tier streamer: phase '{}' has {} arrays (at most 64)", name, arrays.size()));
  for (const auto& a : arrays)
    if (a.elem_bytes == 0 || a.data == nullptr)
      throw Error(fmt::format("tier streamer: phase '{}' has an array without data or size", name));
  std::size_t largest = 0;
  for (const auto& b : batches) largest = std::max(largest, b.size());
  slot_offset_.assign(arrays.size(), 0);
  std::size_t slot = 0;
  for (std::size_t q = 0; q < arrays.size(); ++q) {
    slot_offset_[q] = slot;
    slot += round_up(largest * arrays[q].elem_bytes, kAlign);
  }
  const bool real = backend_.copies_data();
  if (real && 3 * slot > slots_.bytes()) {
    slots_ = Arena();  // unmapped before the larger one is mapped: the peak is the new size
    slots_ = Arena(opt_.arena_name, 3 * slot, opt_.arena_config);
  }
  slot_bytes_ = slot;

  int helpers = 1;
  if (opt_.helper_threads > 0) {
    helpers = opt_.helper_threads;
    if (!decided_.count(name)) {
      StreamDecision d;
      d.phase = name;
      d.helper_threads = helpers;
      d.why = fmt::format("memory.tier.helper_threads = {}", helpers);
      decided_[name] = d;
    }
  } else if (auto it = decided_.find(name); it != decided_.end()) {
    helpers = it->second.helper_threads;
  }
  if (real) ensure_helpers(helpers);

  std::lock_guard<std::mutex> lock(mutex_);
  phase_ = name;
  in_phase_ = true;
  batches_ = std::move(batches);
  arrays_ = std::move(arrays);
  next_ = 0;
  acquired_ = false;
  active_ = helpers;
  error_ = nullptr;
  fetch_left_.assign(batches_.size(), 0);
  wb_left_.assign(batches_.size(), 0);
  staged_.arrays.assign(arrays_.size(), nullptr);
  ++stats_[phase_].runs;
  for (std::size_t i = 0; i < std::min<std::size_t>(2, batches_.size()); ++i)
    enqueue(Kind::fetch, i, kAllModified);
}

const StagedBatch& TierStreamer::acquire(std::size_t i) {
  if (!in_phase_) throw Error("tier streamer: acquire outside a phase");
  if (i != next_ || acquired_)
    throw Error(fmt::format(
        "tier streamer: phase '{}': acquire({}) out of order (expected batch {}{})", phase_, i,
        next_, acquired_ ? fmt::format(", after release({})", next_ - 1) : ""));
  if (i >= batches_.size())
    throw Error(fmt::format("tier streamer: phase '{}' has {} batches; acquire({})", phase_,
                            batches_.size(), i));
  const auto t0 = Clock::now();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return fetch_left_[i] == 0 || error_; });
    raise_if_failed();
    stats_[phase_].wait_seconds += since(t0);
  }
  const bool real = backend_.copies_data();
  for (std::size_t q = 0; q < arrays_.size(); ++q)
    staged_.arrays[q] = real && batches_[i].size() > 0 ? slot_of(i, q) : original_of(i, q);
  staged_.begin = batches_[i].begin;
  staged_.size = batches_[i].size();
  ++next_;
  acquired_ = true;
  t_acquired_ = Clock::now();
  return staged_;
}

void TierStreamer::release(std::size_t i, std::uint64_t modified) {
  if (!in_phase_ || !acquired_ || i + 1 != next_)
    throw Error(
        fmt::format("tier streamer: phase '{}': release({}) of a batch not acquired", phase_, i));
  const double compute = since(t_acquired_);
  std::lock_guard<std::mutex> lock(mutex_);
  acquired_ = false;
  auto& st = stats_[phase_];
  if (batches_[i].size() > 0) {
    st.compute_seconds += compute;
    ++st.batches;
  }
  enqueue(Kind::writeback, i, modified);
  if (i + 2 < batches_.size()) enqueue(Kind::fetch, i + 2, kAllModified);
  raise_if_failed();
}

void TierStreamer::end_phase() {
  if (!in_phase_) return;
  const auto t0 = Clock::now();
  drain();
  std::unique_lock<std::mutex> lock(mutex_);
  in_phase_ = false;
  auto& st = stats_[phase_];
  st.wait_seconds += since(t0);
  raise_if_failed();
  if (acquired_ || next_ != batches_.size())
    throw Error(fmt::format("tier streamer: phase '{}' ended with {} of {} batches acquired{}",
                            phase_, next_, batches_.size(),
                            acquired_ ? fmt::format(" and batch {} not released", next_ - 1) : ""));
  if (opt_.helper_threads == 0 && !decided_.count(phase_) && st.batches > 0) {
    const StreamPhaseStats first = st;
    const std::string name = phase_;
    lock.unlock();
    decide(name, first);
  }
}

void TierStreamer::abandon_phase() noexcept {
  if (!in_phase_) return;
  drain();
  std::lock_guard<std::mutex> lock(mutex_);
  in_phase_ = false;
  acquired_ = false;
}

void TierStreamer::decide(const std::string& name, const StreamPhaseStats& run) {
  StreamDecision d;
  d.phase = name;
  d.helper_threads = 1;
  const std::size_t need = std::size_t(opt_.n_max) + 1;
  if (opt_.bw_slow_to_fast.size() < need || opt_.bw_fast_to_slow.size() < need) {
    d.why = "no copy-bandwidth curve: 1 helper thread";
  } else {
    // The first run's means per (non-empty) batch; T_comp measured with the kernel's one
    // thread is reused for every n_comp (the study's practice, reference/tiered-memory.md).
    HelperInputs in;
    const double nb = double(run.batches);
    in.data_in = double(run.bytes_in) / nb;
    in.data_out = double(run.bytes_out) / nb;
    const double t_comp = run.compute_seconds / nb;
    // The kernel's own traffic: it reads its batch and writes what it modified in T_comp.
    const double bw_comp = t_comp > 0 ? (in.data_in + in.data_out) / t_comp : 0.0;
    in.n_max = opt_.n_max;
    in.n_ranks = opt_.n_ranks;
    in.bw_slow_to_fast.assign(opt_.bw_slow_to_fast.begin(),
                              opt_.bw_slow_to_fast.begin() + long(need));
    in.bw_fast_to_slow.assign(opt_.bw_fast_to_slow.begin(),
                              opt_.bw_fast_to_slow.begin() + long(need));
    in.t_comp.assign(need, t_comp);
    in.bw_comp.assign(need, bw_comp);
    d.inputs = in;
    d.from_model = true;
    try {
      d.decision = choose_helper_threads(in);
      if (d.decision.feasible && d.decision.n_cp > 0) {
        d.helper_threads = d.decision.n_cp;
        d.why = d.decision.why;
      } else if (d.decision.feasible) {
        d.why = d.decision.why + "; 1 helper thread for the copies there are";
      } else {
        d.why = d.decision.why + "; streaming with 1 helper thread (copies not hidden)";
      }
    } catch (const Error& e) {
      d.why = std::string(e.what()) + "; 1 helper thread";
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  decided_[name] = d;
}

int TierStreamer::helper_threads(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (opt_.helper_threads > 0) return opt_.helper_threads;
  const auto it = decided_.find(name);
  return it == decided_.end() ? 1 : it->second.helper_threads;
}

std::vector<StreamDecision> TierStreamer::decisions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<StreamDecision> out;
  for (const auto& [n, d] : decided_) out.push_back(d);
  return out;
}

std::map<std::string, StreamPhaseStats> TierStreamer::phase_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

nlohmann::json TierStreamer::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [n, s] : stats_)
    phases[n] = {{"runs", s.runs},
                 {"batches", s.batches},
                 {"bytes_in", s.bytes_in},
                 {"bytes_out", s.bytes_out},
                 {"bytes_skipped", s.bytes_skipped},
                 {"compute_seconds", s.compute_seconds},
                 {"wait_seconds", s.wait_seconds}};
  nlohmann::json dec = nlohmann::json::array();
  for (const auto& [n, d] : decided_) {
    nlohmann::json j = {{"phase", d.phase},
                        {"helper_threads", d.helper_threads},
                        {"from_model", d.from_model},
                        {"why", d.why}};
    if (d.from_model) {
      const auto& in = d.inputs;
      j["inputs"] = {{"data_in", in.data_in},
                     {"data_out", in.data_out},
                     {"t_comp", in.t_comp.empty() ? 0.0 : in.t_comp.back()},
                     {"bw_comp", in.bw_comp.empty() ? 0.0 : in.bw_comp.back()},
                     {"bw_slow_to_fast", in.bw_slow_to_fast},
                     {"bw_fast_to_slow", in.bw_fast_to_slow},
                     {"n_max", in.n_max},
                     {"n_ranks", in.n_ranks}};
      j["n_cp"] = d.decision.n_cp;
      j["n_comp"] = d.decision.n_comp;
      j["feasible"] = d.decision.feasible;
      j["t_cp"] = d.decision.t_cp;
      j["bw_used"] = d.decision.bw_used;
      j["bw_budget"] = d.decision.bw_budget;
    }
    dec.push_back(std::move(j));
  }
  return {{"phases", phases},
          {"decisions", dec},
          {"slot_bytes", slot_bytes_},
          {"arena_bytes", slots_.bytes()},
          {"helper_threads_requested", opt_.helper_threads}};
}

}  // namespace tessera::memory

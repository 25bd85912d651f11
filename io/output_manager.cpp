#include "io/output_manager.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "io/publish.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::io {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The I/O thread's timer region of a kind (string literals: regions keep the pointer).
const char* region_of(OutputKind kind) {
  switch (kind) {
    case OutputKind::checkpoint:
      return "io_thread/checkpoint";
    case OutputKind::plotfile:
      return "io_thread/plotfile";
    case OutputKind::particles:
      return "io_thread/particles";
  }
  return "io_thread/output";
}
}  // namespace

OutputManager::OutputManager(MPI_Comm comm, OutputConfig cfg) : cfg_(std::move(cfg)) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &nranks_);
  MPI_Comm_dup(comm, &comm_);
  MPI_Comm_dup(comm, &step_comm_);
  if (cfg_.async && !cfg_.thread_multiple) {
    cfg_.async = false;
    note_ =
        "io.async requested but MPI does not provide MPI_THREAD_MULTIPLE: writing synchronously";
  }
  if (!cfg_.stage_dir.empty()) {
    std::error_code ec;
    fs::create_directories(cfg_.stage_dir, ec);
    if (ec) throw Error("io.stage_dir: cannot create '" + cfg_.stage_dir + "': " + ec.message());
  }
  if (cfg_.writer == "node" || cfg_.writer == "auto") {
    // Ranks on this node, whether they all share one, and whether some node has a rank on
    // every core it may use (the union of its ranks' CPU affinities: a cpuset, a batch
    // system's binding; oversubscribed counts as full).
    MPI_Comm node;
    MPI_Comm_split_type(step_comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int on_node = 0;
    MPI_Comm_size(node, &on_node);
    cpu_set_t mask;
    CPU_ZERO(&mask);
    int failed = sched_getaffinity(0, sizeof(mask), &mask) == 0 ? 0 : 1;
    MPI_Allreduce(MPI_IN_PLACE, &mask, int(sizeof(mask)), MPI_BYTE, MPI_BOR, node);
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, node);
    long cores = failed ? sysconf(_SC_NPROCESSORS_ONLN) : CPU_COUNT(&mask);
    MPI_Comm_free(&node);
    cores = std::max(1L, cores);
    int flags[2] = {on_node == nranks_ ? 1 : 0, on_node >= cores ? 0 : 1};
    MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MIN, step_comm_);  // the same everywhere
    const bool one_node = flags[0] == 1, full = flags[1] == 0;
    if (!cfg_.async) {
      writer_achieved_ = cfg_.writer == "node" ? "rank (io.writer=node needs io.async)" : "rank";
    } else if (cfg_.writer == "node") {
      writer_achieved_ = one_node ? "node" : "rank (the ranks span more than one node)";
    } else if (nranks_ == 1) {
      writer_achieved_ = "rank";
    } else if (one_node && full && cfg_.particles) {
      // The node writer does not take particles; their collective writes on I/O threads
      // stall beside ranks polling MPI on every core, and plotfiles written beside the
      // synchronous checkpoints cost the loop more than writing them too (Sod with
      // tracers, 2 ranks of 2 cores: 1.11x the synchronous loop).
      cfg_.async = false;
      writer_achieved_ = "rank (synchronous: a full node, with particles)";
      note_ =
          "io.async with io.writer = auto: the ranks fill every core of their node and the run "
          "has particles, whose outputs need collective writes that stall on I/O threads "
          "beside ranks polling MPI: writing synchronously (io.writer = node or rank forces "
          "the I/O threads)";
    } else if (one_node) {
      // A collective write on I/O threads needs every rank's thread on a core at once;
      // beside ranks that poll MPI on every core it stalls (the deforming bubble on 2 ranks
      // of 2 cores: the loop 2.6x slower than with synchronous writes). One writer does not.
      writer_achieved_ = "node";
    } else if (full) {
      cfg_.async = false;
      writer_achieved_ = "rank (synchronous: full nodes)";
      note_ =
          "io.async with io.writer = auto: the ranks fill every core of their nodes and span "
          "more than one node, where collective writes on I/O threads stall beside ranks "
          "polling MPI: writing synchronously (io.writer = rank forces the I/O threads)";
    } else {
      writer_achieved_ = "rank";
    }
  }
  if (cfg_.async && cfg_.mpi_wait == "yield") mpi_wait_achieved_ = set_mpi_yield();
  if (cfg_.async || !cfg_.stage_dir.empty()) thread_ = std::thread([this] { loop(); });
}

std::string OutputManager::set_mpi_yield() {
  // Open MPI decides at MPI_Init (mpi_yield_when_idle) whether its progress engine calls
  // sched_yield() when a wait finds nothing; the same switch is open afterwards in
  // libopen-pal. Found at run time: another MPI simply does not offer it.
  using SetYield = bool (*)(bool);
  auto* set =
      reinterpret_cast<SetYield>(::dlsym(RTLD_DEFAULT, "opal_progress_set_yield_when_idle"));
  if (set == nullptr) return "poll (this MPI offers no yield switch: not Open MPI)";
  set(true);
  return "yield";
}

OutputManager::~OutputManager() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;  // the loop finishes the queue first: nothing queued is lost
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  MPI_Comm_free(&comm_);
  MPI_Comm_free(&step_comm_);
}

void OutputManager::loop() {
  // The priority asked for, applied to this thread only (Linux: nice and the scheduling
  // policy are per thread); what was achieved is reported.
  std::string achieved = "normal";
  if (cfg_.thread_priority == "low") {
    errno = 0;
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 10) == 0)
      achieved = "low";
    else
      achieved = std::string("normal (setpriority: ") + std::strerror(errno) + ")";
  } else if (cfg_.thread_priority == "idle") {
    sched_param sp{};
    sp.sched_priority = 0;
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0)
      achieved = "idle";
    else
      achieved = "normal (SCHED_IDLE refused)";
  }
  {
    std::lock_guard<std::mutex> lk(m_);
    priority_achieved_ = achieved;
  }
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lk(m_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      // Every queued snapshot first: the step loop may be waiting for them. The front
      // goes once its copy is done and write() has finished assembling it.
      for (;;) {
        take_captures(lk);
        const Job& f = queue_.front();
        if (f.ready && f.capture != Job::running && f.capture != Job::pending) break;
        cv_.wait(lk);
      }
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      if (job.type == Job::write && job.cancelled) {
        // assemble threw on the step loop, which reports it; the copy, if started, is dropped
      } else if (job.type == Job::write) {
        TESSERA_REGION(region_of(job.kind));
        execute(job);
      } else {
        do_drain(job.staged, job.name, job.kind);
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lk(m_);
      if (error_.empty()) error_ = e.what();
    }
    auto rows = perf::TimerTree::local().rows();  // this (I/O) thread's tree
    {
      std::lock_guard<std::mutex> lk(m_);
      io_rows_ = std::move(rows);
      if (job.type == Job::write) {
        in_flight_[static_cast<int>(job.kind)] = false;
        held_bytes_ -= job.bytes;
      }
      done_id_ = job.id;
    }
    cv_.notify_all();
  }
}

void OutputManager::execute(Job& job) {
  const auto t0 = Clock::now();
  const std::string final_path = (fs::path(cfg_.dir) / job.name).string();
  if (job.started) job.spec.data = std::move(job.early.data);  // start_capture's copy
  if (job.spec.capture) {  // written by the step loop (a fallback to sync): copy now
    auto capture = std::move(job.spec.capture);
    job.spec.capture = nullptr;
    capture(job.spec);
  }
  if (job.spec.describe) {
    auto describe = std::move(job.spec.describe);
    job.spec.describe = nullptr;
    describe(job.spec);
  }
  const bool alone = !job.rows_of.empty();  // io.writer=node: rank 0 writes every row
  if (alone) lay_out_gathered(job);
  if (job.spec.prepare) {
    TESSERA_REGION("io/prepare");
    auto prepare = std::move(job.spec.prepare);
    prepare(job.spec);
  }
  // The largest snapshot's arena as the kernel backs it now, before it is written and
  // freed (smaps is read only for a snapshot larger than the one already reported). A
  // particle file's snapshot is its particles, a grid file's its variables.
  const bool by_particles = job.spec.particles.size() > job.spec.data.size();
  const double* snapshot = by_particles ? job.spec.particles.data() : job.spec.data.data();
  const std::size_t bytes =
      (by_particles ? job.spec.particles.size() : job.spec.data.size()) * sizeof(double);
  bool larger = false;
  {
    std::lock_guard<std::mutex> lk(m_);
    larger = bytes > 0 && (!staging_ || bytes > staging_->bytes);
  }
  if (larger) {
    auto r = memory::report_of(snapshot);
    std::lock_guard<std::mutex> lk(m_);
    if (r && (!staging_ || r->bytes > staging_->bytes)) staging_ = std::move(r);
  }
  const std::string written = write_and_publish(alone ? MPI_COMM_SELF : comm_, job.spec, final_path,
                                                cfg_.stage_dir, job.inject);
  job.spec = FlashFileSpec{};  // release the snapshot before the (slow) drain
  const double sec = since(t0);
  const int k = static_cast<int>(job.kind);
  {
    std::lock_guard<std::mutex> lk(m_);
    stats_[k].write_seconds += sec;
    stats_[k].count += 1;
    if (job.forced) stats_[k].forced_write_seconds += sec;
    if (rank_ == 0) stats_[k].bytes += file_bytes(written);
  }
  if (cfg_.stage_dir.empty()) {
    if (rank_ == 0) published_one(job.name, job.kind);
    return;
  }
  if (rank_ != 0) return;
  if (cfg_.async) {
    do_drain(written, job.name, job.kind);  // already on the I/O thread
  } else {
    Job d;
    d.type = Job::drain;
    d.kind = job.kind;
    d.name = job.name;
    d.staged = written;
    {
      std::lock_guard<std::mutex> lk(m_);
      d.id = next_id_++;
      queue_.push_back(std::move(d));
    }
    cv_.notify_all();
  }
}

void OutputManager::do_drain(const std::string& staged, const std::string& name, OutputKind kind) {
  const auto t0 = Clock::now();
  drain_staged(staged, (fs::path(cfg_.dir) / name).string());
  {
    std::lock_guard<std::mutex> lk(m_);
    stats_[static_cast<int>(kind)].drain_seconds += since(t0);
  }
  published_one(name, kind);
}

void OutputManager::published_one(const std::string& name, OutputKind kind) {
  std::vector<std::string> remove;
  {
    std::lock_guard<std::mutex> lk(m_);
    published_.push_back(name);
    if (kind == OutputKind::checkpoint && cfg_.keep_checkpoints > 0) {
      kept_checkpoints_.push_back(name);
      while (static_cast<int>(kept_checkpoints_.size()) > cfg_.keep_checkpoints) {
        remove.push_back(kept_checkpoints_.front());
        kept_checkpoints_.pop_front();
        published_.erase(std::find(published_.begin(), published_.end(), remove.back()));
      }
    }
  }
  for (const auto& r : remove) ::unlink((fs::path(cfg_.dir) / r).c_str());
}

void OutputManager::write(OutputKind kind, const std::string& name, std::size_t estimate_bytes,
                          const std::function<FlashFileSpec()>& assemble, bool force_sync) {
  const auto t0 = Clock::now();
  const int k = static_cast<int>(kind);
  const bool inject = ++submitted_ == cfg_.inject_write_error;
  auto new_job = [&] {
    Job job;
    job.kind = kind;
    job.name = name;
    job.inject = inject;
    job.forced = force_sync;
    return job;
  };
  if (!cfg_.async) {
    Job job = new_job();
    job.spec = assemble();
    execute(job);
    std::lock_guard<std::mutex> lk(m_);
    charge_blocked(k, force_sync, since(t0));
    return;
  }
  bool sync = force_sync;
  std::unique_lock<std::mutex> lk(m_);
  // At most one output of each kind in flight.
  {
    TESSERA_REGION("io/wait_previous");
    cv_.wait(lk, [&] { return !in_flight_[k]; });
  }
  if (!sync && held_bytes_ + estimate_bytes > cfg_.budget) {
    if (cfg_.overflow_wait) {
      ++stats_[k].budget_waits;
      cv_.wait(lk, [&] { return held_bytes_ == 0; });
    }
    if (!cfg_.overflow_wait || estimate_bytes > cfg_.budget) {
      sync = true;
      ++stats_[k].sync_fallbacks;
    }
  }
  if (defers_capture()) {
    // Queued before it is assembled: assemble may hand the copy to the I/O thread
    // (start_capture) and describe the tree and the parameters while it runs.
    Job placeholder = new_job();
    placeholder.bytes = sync ? 0 : estimate_bytes;
    placeholder.ready = false;
    placeholder.id = next_id_++;
    const std::uint64_t id = placeholder.id;
    in_flight_[k] = true;
    held_bytes_ += placeholder.bytes;
    queue_.push_back(std::move(placeholder));
    Job& job = queue_.back();  // a deque's elements stay in place
    assembling_ = &job;
    lk.unlock();
    FlashFileSpec spec;
    try {
      spec = assemble();
    } catch (...) {
      lk.lock();
      job.cancelled = job.ready = true;
      assembling_ = nullptr;
      // A copy started and not taken yet is dropped, one under way finishes first: none
      // outlives the failed write (its closure may read what assemble's caller owns).
      if (job.capture == Job::pending) {
        job.capture = Job::taken;
        job.early.capture = nullptr;
        --uncaptured_;
      }
      cv_.wait(lk, [&] { return job.capture != Job::running; });
      lk.unlock();
      cv_.notify_all();
      throw;
    }
    lk.lock();
    assembling_ = nullptr;
    job.spec = std::move(spec);
    if (job.spec.capture && job.capture == Job::none) {  // assemble did not start it
      job.capture = Job::pending;
      ++uncaptured_;
    }
    job.ready = true;
    lk.unlock();
    cv_.notify_all();
    lk.lock();
    if (sync) cv_.wait(lk, [&] { return done_id_ >= id; });
    charge_blocked(k, force_sync, since(t0));
    return;
  }
  lk.unlock();
  Job job = new_job();
  job.spec = assemble();  // the staging copy (a node writer gathers it in the step loop)
  job.bytes = sync ? 0 : estimate_bytes;
  // The same decision on every rank: particle names are global.
  const bool gather = writer_achieved_ == "node" && job.spec.particle_names.empty();
  if (gather) {
    gather_to_writer(job);
    if (rank_ != 0) {  // nothing left to do here: rank 0 writes the file
      lk.lock();
      stats_[k].count += 1;
      charge_blocked(k, force_sync, since(t0));
      return;
    }
  }
  lk.lock();
  if (job.spec.capture) {
    job.capture = Job::pending;
    ++uncaptured_;
  }
  job.id = next_id_++;
  const std::uint64_t id = job.id;
  in_flight_[k] = true;
  held_bytes_ += job.bytes;
  queue_.push_back(std::move(job));
  lk.unlock();
  cv_.notify_all();
  if (sync) {
    lk.lock();
    cv_.wait(lk, [&] { return done_id_ >= id; });
    lk.unlock();
  }
  lk.lock();
  charge_blocked(k, force_sync, since(t0));
}

void OutputManager::charge_blocked(int k, bool forced, double seconds) {
  stats_[k].blocked_seconds += seconds;
  if (!forced) return;
  stats_[k].forced_count += 1;
  stats_[k].forced_blocked_seconds += seconds;  // the same reading: never above the total
}

void OutputManager::gather_to_writer(Job& job) {
  TESSERA_REGION("io/gather");
  FlashFileSpec& f = job.spec;
  if (f.capture) {  // the copy is needed now, on this thread
    auto capture = std::move(f.capture);
    f.capture = nullptr;
    capture(f);
  }
  const int n = static_cast<int>(f.local_rows.size());
  std::vector<int> counts(rank_ == 0 ? nranks_ : 0);
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, step_comm_);
  std::vector<int> displs(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  const int total = rank_ == 0 ? displs.back() + counts.back() : 0;
  std::vector<int> rows(static_cast<std::size_t>(total));
  MPI_Gatherv(f.local_rows.data(), n, MPI_INT, rows.data(), counts.data(), displs.data(), MPI_INT,
              0, step_comm_);
  // The values: vars * cells doubles per row, counted in rows (a datatype of one row), so
  // that counts and displacements stay ints however large the file (in doubles they passed
  // 2^31 at 16 GiB on one node and went negative; issue 48).
  const std::size_t per_row = f.var_names.size() * std::size_t(f.nxb) * f.nyb * f.nzb;
  MPI_Datatype row_type;
  MPI_Type_contiguous(parallel::int_count(std::max<std::size_t>(per_row, 1), "io: a row's doubles"),
                      MPI_DOUBLE, &row_type);
  MPI_Type_commit(&row_type);
  if (rank_ == 0) {
    job.gathered = memory::ArenaVector<double>(f.data.get_allocator());
    job.gathered.resize(std::size_t(total) * per_row);
  }
  MPI_Gatherv(f.data.data(), per_row > 0 ? n : 0, row_type, job.gathered.data(), counts.data(),
              displs.data(), row_type, 0, step_comm_);
  MPI_Type_free(&row_type);
  f.data = memory::ArenaVector<double>(f.data.get_allocator());  // this rank's copy is sent
  if (rank_ != 0) return;
  job.rows_of.resize(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r)
    job.rows_of[r].assign(rows.begin() + displs[r], rows.begin() + displs[r] + counts[r]);
}

void OutputManager::lay_out_gathered(Job& job) {
  TESSERA_REGION("io/lay_out");
  FlashFileSpec& f = job.spec;
  const std::size_t cells = std::size_t(f.nxb) * f.nyb * f.nzb;
  const std::size_t nvar = f.var_names.size();
  f.local_rows.clear();
  for (const auto& r : job.rows_of) f.local_rows.insert(f.local_rows.end(), r.begin(), r.end());
  std::sort(f.local_rows.begin(), f.local_rows.end());
  const std::size_t total = f.local_rows.size();
  f.data = memory::ArenaVector<double>(job.gathered.get_allocator());
  f.data.resize(nvar * total * cells);
  const double* src = job.gathered.data();
  for (const auto& rows : job.rows_of)
    for (std::size_t v = 0; v < nvar; ++v)
      for (const int row : rows) {
        const auto at = static_cast<std::size_t>(
            std::lower_bound(f.local_rows.begin(), f.local_rows.end(), row) - f.local_rows.begin());
        std::copy(src, src + cells, f.data.data() + (v * total + at) * cells);
        src += cells;
      }
  job.gathered = memory::ArenaVector<double>(job.gathered.get_allocator());
  job.rows_of.clear();
}

void OutputManager::take_captures(std::unique_lock<std::mutex>& lk) {
  // By index: the step loop may append while the I/O thread copies (a deque keeps the
  // elements in place), and only the I/O thread removes, after their capture is done.
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    Job& job = queue_[i];
    if (job.capture != Job::pending) continue;
    job.capture = Job::running;
    // start_capture's copy goes into the scratch spec: the step loop may be setting spec.
    FlashFileSpec& target = job.started ? job.early : job.spec;
    auto capture = std::move(target.capture);
    target.capture = nullptr;
    lk.unlock();
    std::string why;
    try {
      capture(target);
    } catch (const std::exception& e) {
      // The snapshot stays incomplete: the writer's checks fail on this rank and every
      // rank agrees on the failure, so nobody waits in a collective.
      target.data = memory::ArenaVector<double>(target.data.get_allocator());
      why = e.what();
    }
    lk.lock();
    if (!why.empty() && error_.empty()) error_ = why;
    job.capture = Job::taken;
    --uncaptured_;
    cv_.notify_all();
  }
}

bool OutputManager::start_capture(std::function<void(FlashFileSpec&)> capture) {
  {
    std::lock_guard<std::mutex> lk(m_);
    if (assembling_ == nullptr || assembling_->started) return false;
    Job& job = *assembling_;
    job.started = true;
    job.early.capture = std::move(capture);
    job.capture = Job::pending;
    ++uncaptured_;
  }
  cv_.notify_all();
  return true;
}

void OutputManager::wait_captures() {
  std::unique_lock<std::mutex> lk(m_);
  if (uncaptured_ == 0) return;
  const auto t0 = Clock::now();
  TESSERA_REGION("io/wait_capture");
  // The time is the step loop's, blocked by the output waited for last (queue order).
  int k = 0;
  for (const auto& job : queue_)
    if (job.capture == Job::pending || job.capture == Job::running) k = static_cast<int>(job.kind);
  // The I/O thread takes them as soon as it is free; if it is busy writing, the step
  // loop copies them itself rather than wait for that write.
  take_captures(lk);
  cv_.wait(lk, [&] { return uncaptured_ == 0; });
  stats_[k].blocked_seconds += since(t0);
}

void OutputManager::drain() {
  std::unique_lock<std::mutex> lk(m_);
  cv_.wait(lk, [&] { return queue_.empty() && done_id_ + 1 >= next_id_; });
}

std::string OutputManager::local_error() const {
  std::lock_guard<std::mutex> lk(m_);
  return error_;
}

std::vector<std::string> OutputManager::published() const {
  std::lock_guard<std::mutex> lk(m_);
  return published_;
}

std::vector<perf::TimerTree::Row> OutputManager::io_thread_rows() const {
  std::lock_guard<std::mutex> lk(m_);
  return io_rows_;
}

std::optional<memory::ArenaReport> OutputManager::staging_report() const {
  std::lock_guard<std::mutex> lk(m_);
  return staging_;
}

nlohmann::json OutputManager::stats_json(MPI_Comm comm) const {
  OutputStats s[kOutputKinds];
  {
    std::lock_guard<std::mutex> lk(m_);
    std::copy(std::begin(stats_), std::end(stats_), std::begin(s));
  }
  nlohmann::json j;
  const char* names[kOutputKinds] = {"checkpoint", "plotfile", "particles"};
  for (int k = 0; k < kOutputKinds; ++k) {
    double t[5] = {s[k].blocked_seconds, s[k].write_seconds, s[k].drain_seconds,
                   s[k].forced_blocked_seconds, s[k].forced_write_seconds};
    MPI_Allreduce(MPI_IN_PLACE, t, 5, MPI_DOUBLE, MPI_MAX, comm);
    // What could be hidden: the outputs not forced synchronous.
    const double blocked = std::max(0.0, t[0] - t[3]), written = t[1] - t[4];
    const double hidden = written > 0 ? std::clamp(1.0 - blocked / written, 0.0, 1.0) : 0.0;
    j[names[k]] = {
        {"count", s[k].count},
        {"bytes", s[k].bytes},
        {"blocked_seconds", t[0]},
        {"write_seconds", t[1]},
        {"drain_seconds", t[2]},
        {"sync_fallbacks", s[k].sync_fallbacks},
        {"budget_waits", s[k].budget_waits},
        {"hidden_fraction", hidden},
        {"forced",
         {{"count", s[k].forced_count}, {"blocked_seconds", t[3]}, {"write_seconds", t[4]}}}};
  }
  j["async"] = cfg_.async;
  {
    std::lock_guard<std::mutex> lk(m_);
    j["thread_priority"] = {{"requested", cfg_.thread_priority},
                            {"achieved", thread_.joinable() ? priority_achieved_ : "no thread"}};
    j["writer"] = {{"requested", cfg_.writer}, {"achieved", writer_achieved_}};
    j["mpi_wait"] = {{"requested", cfg_.mpi_wait},
                     {"achieved", cfg_.async ? mpi_wait_achieved_ : "poll (no I/O thread)"}};
  }
  j["budget_bytes"] = cfg_.budget;
  j["overflow"] = cfg_.overflow_wait ? "wait" : "sync";
  j["stage_dir"] = cfg_.stage_dir;
  if (!note_.empty()) j["note"] = note_;
  return j;
}

}  // namespace tessera::io

#include "perf/counters.hpp"

#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <string_view>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/text.hpp"
#include "perf/timers.hpp"

#if defined(TESSERA_HAVE_PAPI) && TESSERA_HAVE_PAPI
#include <papi.h>
#include <pthread.h>
#define TESSERA_PAPI 1
#else
#define TESSERA_PAPI 0
#endif

namespace tessera::perf {

namespace {

// ---------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------

// The generic events of perf_event_open(2), under the names `perf list` uses.
struct PerfName {
  const char* name;
  std::uint32_t type;
  std::uint64_t config;
};

constexpr std::uint64_t cache(std::uint64_t id, std::uint64_t op, std::uint64_t result) {
  return id | (op << 8) | (result << 16);
}

constexpr std::uint64_t kRead = PERF_COUNT_HW_CACHE_OP_READ;
constexpr std::uint64_t kWrite = PERF_COUNT_HW_CACHE_OP_WRITE;
constexpr std::uint64_t kAccess = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
constexpr std::uint64_t kMiss = PERF_COUNT_HW_CACHE_RESULT_MISS;

constexpr PerfName kPerfNames[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"L1-dcache-loads", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_L1D, kRead, kAccess)},
    {"L1-dcache-load-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_L1D, kRead, kMiss)},
    {"L1-dcache-stores", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_L1D, kWrite, kAccess)},
    {"L1-icache-load-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_L1I, kRead, kMiss)},
    {"LLC-loads", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_LL, kRead, kAccess)},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_LL, kRead, kMiss)},
    {"LLC-stores", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_LL, kWrite, kAccess)},
    {"LLC-store-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_LL, kWrite, kMiss)},
    {"dTLB-loads", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_DTLB, kRead, kAccess)},
    {"dTLB-load-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_DTLB, kRead, kMiss)},
    {"dTLB-stores", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_DTLB, kWrite, kAccess)},
    {"dTLB-store-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_DTLB, kWrite, kMiss)},
    {"iTLB-loads", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_ITLB, kRead, kAccess)},
    {"iTLB-load-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_ITLB, kRead, kMiss)},
    {"branch-loads", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_BPU, kRead, kAccess)},
    {"branch-load-misses", PERF_TYPE_HW_CACHE, cache(PERF_COUNT_HW_CACHE_BPU, kRead, kMiss)},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
};

// perf's short aliases.
constexpr std::pair<const char*, const char*> kPerfAliases[] = {{"cpu-cycles", "cycles"},
                                                                {"branches", "branch-instructions"},
                                                                {"faults", "page-faults"},
                                                                {"cs", "context-switches"},
                                                                {"migrations", "cpu-migrations"}};

// The PAPI standard presets (papiStdEventDefs.h), so that names can be checked and
// reported without PAPI.
constexpr const char* kPapiPresets[] = {
    "PAPI_L1_DCM",  "PAPI_L1_ICM",  "PAPI_L2_DCM",  "PAPI_L2_ICM",  "PAPI_L3_DCM",  "PAPI_L3_ICM",
    "PAPI_L1_TCM",  "PAPI_L2_TCM",  "PAPI_L3_TCM",  "PAPI_CA_SNP",  "PAPI_CA_SHR",  "PAPI_CA_CLN",
    "PAPI_CA_INV",  "PAPI_CA_ITV",  "PAPI_L3_LDM",  "PAPI_L3_STM",  "PAPI_BRU_IDL", "PAPI_FXU_IDL",
    "PAPI_FPU_IDL", "PAPI_LSU_IDL", "PAPI_TLB_DM",  "PAPI_TLB_IM",  "PAPI_TLB_TL",  "PAPI_L1_LDM",
    "PAPI_L1_STM",  "PAPI_L2_LDM",  "PAPI_L2_STM",  "PAPI_BTAC_M",  "PAPI_PRF_DM",  "PAPI_L3_DCH",
    "PAPI_TLB_SD",  "PAPI_CSR_FAL", "PAPI_CSR_SUC", "PAPI_CSR_TOT", "PAPI_MEM_SCY", "PAPI_MEM_RCY",
    "PAPI_MEM_WCY", "PAPI_STL_ICY", "PAPI_FUL_ICY", "PAPI_STL_CCY", "PAPI_FUL_CCY", "PAPI_HW_INT",
    "PAPI_BR_UCN",  "PAPI_BR_CN",   "PAPI_BR_TKN",  "PAPI_BR_NTK",  "PAPI_BR_MSP",  "PAPI_BR_PRC",
    "PAPI_FMA_INS", "PAPI_TOT_IIS", "PAPI_TOT_INS", "PAPI_INT_INS", "PAPI_FP_INS",  "PAPI_LD_INS",
    "PAPI_SR_INS",  "PAPI_BR_INS",  "PAPI_VEC_INS", "PAPI_RES_STL", "PAPI_FP_STAL", "PAPI_TOT_CYC",
    "PAPI_LST_INS", "PAPI_SYC_INS", "PAPI_L1_DCH",  "PAPI_L2_DCH",  "PAPI_L1_DCA",  "PAPI_L2_DCA",
    "PAPI_L3_DCA",  "PAPI_L1_DCR",  "PAPI_L2_DCR",  "PAPI_L3_DCR",  "PAPI_L1_DCW",  "PAPI_L2_DCW",
    "PAPI_L3_DCW",  "PAPI_L1_ICH",  "PAPI_L2_ICH",  "PAPI_L3_ICH",  "PAPI_L1_ICA",  "PAPI_L2_ICA",
    "PAPI_L3_ICA",  "PAPI_L1_ICR",  "PAPI_L2_ICR",  "PAPI_L3_ICR",  "PAPI_L1_ICW",  "PAPI_L2_ICW",
    "PAPI_L3_ICW",  "PAPI_L1_TCH",  "PAPI_L2_TCH",  "PAPI_L3_TCH",  "PAPI_L1_TCA",  "PAPI_L2_TCA",
    "PAPI_L3_TCA",  "PAPI_L1_TCR",  "PAPI_L2_TCR",  "PAPI_L3_TCR",  "PAPI_L1_TCW",  "PAPI_L2_TCW",
    "PAPI_L3_TCW",  "PAPI_FML_INS", "PAPI_FAD_INS", "PAPI_FDV_INS", "PAPI_FSQ_INS", "PAPI_FNV_INS",
    "PAPI_FP_OPS",  "PAPI_SP_OPS",  "PAPI_DP_OPS",  "PAPI_VEC_SP",  "PAPI_VEC_DP",  "PAPI_REF_CYC"};

// Presets whose meaning a generic perf event carries (on x86 the kernel maps
// cache-misses/cache-references to the last-level cache, L1-dcache-loads to retired loads).
constexpr std::pair<const char*, const char*> kPresetToPerf[] = {
    {"PAPI_TOT_INS", "instructions"},         {"PAPI_TOT_CYC", "cycles"},
    {"PAPI_REF_CYC", "ref-cycles"},           {"PAPI_BR_INS", "branch-instructions"},
    {"PAPI_BR_MSP", "branch-misses"},         {"PAPI_L1_DCM", "L1-dcache-load-misses"},
    {"PAPI_L1_LDM", "L1-dcache-load-misses"}, {"PAPI_L1_ICM", "L1-icache-load-misses"},
    {"PAPI_LD_INS", "L1-dcache-loads"},       {"PAPI_SR_INS", "L1-dcache-stores"},
    {"PAPI_L3_TCM", "cache-misses"},          {"PAPI_L3_TCA", "cache-references"},
    {"PAPI_L3_LDM", "LLC-load-misses"},       {"PAPI_L3_DCR", "LLC-loads"},
    {"PAPI_TLB_DM", "dTLB-load-misses"},      {"PAPI_TLB_IM", "iTLB-load-misses"},
};

// Counters that getrusage(RUSAGE_THREAD) or the thread CPU clock can stand in for.
enum class Soft { task_clock, page_faults, minor_faults, major_faults, context_switches };
constexpr std::pair<const char*, Soft> kSoftware[] = {
    {"task-clock", Soft::task_clock},     {"cpu-clock", Soft::task_clock},
    {"page-faults", Soft::page_faults},   {"minor-faults", Soft::minor_faults},
    {"major-faults", Soft::major_faults}, {"context-switches", Soft::context_switches}};

const PerfName* find_perf(std::string_view name) {
  for (const auto& [alias, canonical] : kPerfAliases)
    if (name == alias) name = canonical;
  for (const auto& p : kPerfNames)
    if (name == p.name) return &p;
  return nullptr;
}

bool is_preset(std::string_view name) {
  return std::any_of(std::begin(kPapiPresets), std::end(kPapiPresets),
                     [&](const char* p) { return name == p; });
}

const PerfName* preset_to_perf(std::string_view preset) {
  for (const auto& [p, perf] : kPresetToPerf)
    if (preset == p) return find_perf(perf);
  return nullptr;
}

std::optional<Soft> find_software(std::string_view perf_name) {
  for (const auto& [n, s] : kSoftware)
    if (perf_name == n) return s;
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------
// PAPI: initialised once per process, with thread support; one event set per thread.
// ---------------------------------------------------------------------------------------

#if TESSERA_PAPI
unsigned long papi_thread_id() {
  return static_cast<unsigned long>(pthread_self());
}
#endif

// Empty when PAPI is ready, else why not.
const std::string& papi_unavailable() {
  static std::string why;
  static std::once_flag once;
  std::call_once(once, [] {
#if TESSERA_PAPI
    if (PAPI_is_initialized() == PAPI_NOT_INITED) {
      const int v = PAPI_library_init(PAPI_VER_CURRENT);
      if (v != PAPI_VER_CURRENT) {
        why = v > 0 ? "PAPI_library_init: header and library versions differ"
                    : fmt::format("PAPI_library_init: {}", PAPI_strerror(v));
        return;
      }
    }
    if ((PAPI_is_initialized() & PAPI_THREAD_LEVEL_INITED) != 0) return;  // done by a tool
    const int t = PAPI_thread_init(papi_thread_id);
    if (t != PAPI_OK) why = fmt::format("PAPI_thread_init: {}", PAPI_strerror(t));
#else
    why = "not built in";
#endif
  });
  return why;
}

#if TESSERA_PAPI
void register_papi_thread();

// The PAPI code of `name`, if PAPI knows the name (whether or not this machine can count it).
std::optional<int> papi_code(const std::string& name) {
  if (!papi_unavailable().empty()) return std::nullopt;
  register_papi_thread();  // PAPI 7.0 crashes on name lookups from unregistered threads
  int code = 0;
  if (PAPI_event_name_to_code(name.c_str(), &code) != PAPI_OK) return std::nullopt;
  return code;
}
#endif

// ---------------------------------------------------------------------------------------
// perf_event_open
// ---------------------------------------------------------------------------------------

int perf_event_open(perf_event_attr& attr, int group_fd) {
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any cpu */,
                                  group_fd, PERF_FLAG_FD_CLOEXEC));
}

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// A hardware PMU registers itself under /sys/bus/event_source/devices (cpu, cpu_core,
// armv8_pmuv3_0, ...); the software-only ones there do not count.
bool hardware_pmu_visible() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/sys/bus/event_source/devices", ec)) {
    const std::string n = e.path().filename().string();
    if (n == "cpu" || n.rfind("cpu_", 0) == 0 || n.rfind("armv", 0) == 0) return true;
  }
  return false;
}

std::string perf_failure(const char* what, int err, std::uint32_t type) {
  std::string why = fmt::format("perf_event_open({}): {}", what, std::strerror(err));
  const bool hardware = type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE;
  if (hardware && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV))
    why += hardware_pmu_visible() ? " (this CPU's PMU does not offer it)"
                                  : " (no hardware PMU: none under /sys/bus/event_source/devices)";
  else if (err == EACCES || err == EPERM)
    why += fmt::format(" (kernel.perf_event_paranoid = {})",
                       read_first_line("/proc/sys/kernel/perf_event_paranoid"));
  else if (err == ENOSYS)
    why += " (kernel without perf events, or blocked by seccomp)";
  return why;
}

// ---------------------------------------------------------------------------------------
// One thread's counters
// ---------------------------------------------------------------------------------------

// What configure_counters decided to try for one name.
struct Plan {
  std::string name;
  bool papi = false;               // a PAPI preset or native event
  const PerfName* perf = nullptr;  // perf event, or the preset's perf equivalent
};

class CounterSet final : public CounterSource {
 public:
  CounterSet(const std::vector<Plan>& plans, CounterBackends allowed);
  ~CounterSet() override;
  CounterSet(const CounterSet&) = delete;
  CounterSet& operator=(const CounterSet&) = delete;

  std::size_t size() const override { return slots_.size(); }
  void read(std::uint64_t* out) override;
  const std::vector<CounterInfo>& info() const { return info_; }

 private:
  enum class Kind { none, papi, perf_single, software };
  struct Slot {
    Kind kind = Kind::none;
    std::size_t index = 0;  // into papi_values_, singles_ or the Soft enum
  };
  struct Single {
    int fd;
    std::uint64_t last;
  };

  std::optional<std::string> try_papi(const Plan& p, std::size_t slot);
  std::optional<std::string> try_perf(const Plan& p, std::size_t slot);

  std::vector<CounterInfo> info_;
  std::vector<Slot> slots_;
  std::vector<std::uint64_t> last_;  // keeps every value monotone
#if TESSERA_PAPI
  int papi_set_ = PAPI_NULL;
  bool papi_running_ = false;
  std::vector<int> papi_codes_;
#endif
  std::vector<long long> papi_values_;
  std::vector<Single> singles_;
  bool need_rusage_ = false, need_clock_ = false;
};

CounterSet::CounterSet(const std::vector<Plan>& plans, CounterBackends allowed) {
  info_.resize(plans.size());
  slots_.resize(plans.size());
  last_.assign(plans.size(), 0);
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan& p = plans[i];
    CounterInfo& ci = info_[i];
    ci.name = p.name;
    std::vector<std::string> tried;
    // 1. PAPI
    if (p.papi) {
      if (!allowed.papi) {
        tried.push_back("PAPI: not allowed");
      } else if (!papi_unavailable().empty()) {
        tried.push_back("PAPI: " + papi_unavailable());
      } else if (auto err = try_papi(p, i)) {
        tried.push_back("PAPI: " + *err);
      } else {
        continue;
      }
    }
    // 2. perf_event_open
    if (p.perf != nullptr) {
      if (!allowed.perf_event) {
        tried.push_back("perf_event: not allowed");
      } else if (auto err = try_perf(p, i)) {
        tried.push_back(*err);
      } else {
        continue;
      }
    } else if (p.papi) {
      tried.push_back("no perf_event equivalent");
    }
    // 3. software
    const auto soft = p.perf != nullptr ? find_software(p.perf->name) : std::nullopt;
    if (soft && allowed.software) {
      slots_[i] = {Kind::software, static_cast<std::size_t>(*soft)};
      need_clock_ |= *soft == Soft::task_clock;
      need_rusage_ |= *soft != Soft::task_clock;
      ci.backend = "software";
      ci.source = *soft == Soft::task_clock ? "clock_gettime(CLOCK_THREAD_CPUTIME_ID)"
                                            : "getrusage(RUSAGE_THREAD)";
      std::string before;
      for (const auto& t : tried) before += (before.empty() ? "" : "; ") + t;
      if (!before.empty()) ci.source += " (" + before + ")";
      continue;
    }
    tried.push_back(soft ? "software: not allowed" : "no software fallback");
    // 4. none
    std::string joined;
    for (const auto& t : tried) joined += (joined.empty() ? "" : "; ") + t;
    ci.reason = "unavailable (" + joined + ")";
  }
#if TESSERA_PAPI
  if (!papi_codes_.empty()) {
    const int rc = PAPI_start(papi_set_);
    papi_running_ = rc == PAPI_OK;
    if (!papi_running_)  // each event started alone but not together: none of them counts
      for (std::size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].kind == Kind::papi) {
          slots_[i] = {};
          info_[i].backend.clear();
          info_[i].reason =
              fmt::format("unavailable (PAPI: PAPI_start of the event set: {})", PAPI_strerror(rc));
        }
  }
#endif
  std::vector<std::uint64_t> first(slots_.size());
  read(first.data());  // also seeds last_
}

std::optional<std::string> CounterSet::try_papi([[maybe_unused]] const Plan& p,
                                                [[maybe_unused]] std::size_t slot) {
#if TESSERA_PAPI
  const auto code = papi_code(p.name);
  if (!code) return fmt::format("PAPI does not know {}", p.name);
  if (IS_PRESET(*code)) {
    PAPI_event_info_t info;
    if (PAPI_get_event_info(*code, &info) == PAPI_OK && info.count == 0)
      return fmt::format("{} is not available on this machine", p.name);
  }
  if (papi_set_ == PAPI_NULL) {
    const int rc = PAPI_create_eventset(&papi_set_);
    if (rc != PAPI_OK) {
      papi_set_ = PAPI_NULL;
      return fmt::format("PAPI_create_eventset: {}", PAPI_strerror(rc));
    }
  }
  int rc = PAPI_add_event(papi_set_, *code);
  if (rc != PAPI_OK) return fmt::format("PAPI_add_event({}): {}", p.name, PAPI_strerror(rc));
  // Adding is not enough: an event can be accepted and still fail to start (no PMU, too
  // many events for the counters). Start and stop the set now to find out.
  std::vector<long long> scratch(papi_codes_.size() + 1);
  rc = PAPI_start(papi_set_);
  if (rc == PAPI_OK) rc = PAPI_stop(papi_set_, scratch.data());
  if (rc != PAPI_OK) {
    PAPI_remove_event(papi_set_, *code);
    return fmt::format("PAPI_start with {}: {}", p.name, PAPI_strerror(rc));
  }
  slots_[slot] = {Kind::papi, papi_codes_.size()};
  papi_codes_.push_back(*code);
  papi_values_.push_back(0);
  info_[slot].backend = "papi";
  info_[slot].source = "PAPI " + p.name + " (PAPI's default domain: user space)";
  return std::nullopt;
#else
  return std::string("not built in");
#endif
}

std::optional<std::string> CounterSet::try_perf(const Plan& p, std::size_t slot) {
  const PerfName& e = *p.perf;
  const bool software = e.type == PERF_TYPE_SOFTWARE;
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = e.type;
  attr.config = e.config;
  // Every event is opened alone. Grouping the software events (one read for all) was
  // tried and undercounts (Linux 6.18 here): page-faults in a group led by task-clock (a PMU
  // of its own) counted 826 and 2570 of 4000 faults a single event counted exactly.
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  int fd = perf_event_open(attr, -1);
  int err = fd < 0 ? errno : 0;
  bool user_only = false;
  // Where only user space may be counted (perf_event_paranoid >= 2 without privileges),
  // hardware events are still worth having; software ones are not (context switches
  // happen in the kernel and would read 0), so they go on to the software backend.
  if (fd < 0 && !software && (err == EACCES || err == EPERM)) {
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    fd = perf_event_open(attr, -1);
    err = fd < 0 ? errno : 0;
    user_only = fd >= 0;
  }
  if (fd >= 0) {
    slots_[slot] = {Kind::perf_single, singles_.size()};
    singles_.push_back({fd, 0});
  }
  if (fd < 0) return perf_failure(e.name, err, e.type);
  info_[slot].backend = "perf_event";
  info_[slot].source =
      fmt::format("perf_event {}{}", e.name, user_only ? " (user space only)" : "");
  return std::nullopt;
}

CounterSet::~CounterSet() {
#if TESSERA_PAPI
  if (papi_set_ != PAPI_NULL) {
    if (papi_running_) {
      std::vector<long long> scratch(papi_codes_.size());
      PAPI_stop(papi_set_, scratch.data());
    }
    PAPI_cleanup_eventset(papi_set_);
    PAPI_destroy_eventset(&papi_set_);
  }
#endif
  for (const auto& s : singles_) ::close(s.fd);
}

void CounterSet::read(std::uint64_t* out) {
#if TESSERA_PAPI
  if (papi_running_) PAPI_read(papi_set_, papi_values_.data());  // on failure keep the last
#endif
  for (auto& s : singles_) {
    std::uint64_t v[3] = {0, 0, 0};  // value, time enabled, time running
    if (::read(s.fd, v, sizeof v) != static_cast<ssize_t>(sizeof v)) continue;
    // Multiplexed: scale the count up to the whole time the event was enabled.
    if (v[2] > 0 && v[2] < v[1])
      v[0] = static_cast<std::uint64_t>(static_cast<long double>(v[0]) * v[1] / v[2]);
    s.last = v[0];
  }
  rusage ru{};
  if (need_rusage_) getrusage(RUSAGE_THREAD, &ru);
  std::uint64_t clock_ns = 0;
  if (need_clock_) {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    clock_ns = static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
               static_cast<std::uint64_t>(ts.tv_nsec);
  }
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    std::uint64_t v = 0;
    switch (s.kind) {
      case Kind::none:
        break;
      case Kind::papi:
        v = static_cast<std::uint64_t>(std::max(0LL, papi_values_[s.index]));
        break;
      case Kind::perf_single:
        v = singles_[s.index].last;
        break;
      case Kind::software:
        switch (static_cast<Soft>(s.index)) {
          case Soft::task_clock:
            v = clock_ns;
            break;
          case Soft::page_faults:
            v = static_cast<std::uint64_t>(ru.ru_minflt + ru.ru_majflt);
            break;
          case Soft::minor_faults:
            v = static_cast<std::uint64_t>(ru.ru_minflt);
            break;
          case Soft::major_faults:
            v = static_cast<std::uint64_t>(ru.ru_majflt);
            break;
          case Soft::context_switches:
            v = static_cast<std::uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw);
            break;
        }
        break;
    }
    last_[i] = std::max(last_[i], v);
    out[i] = last_[i];
  }
}

// The calling thread's set. The tree is touched first so that it is constructed before,
// and so destroyed after, the holder, whose destructor detaches the set from it.
struct Holder {
  std::unique_ptr<CounterSet> set;
  bool papi_registered = false;
  ~Holder() {  // at thread exit
    if (set) TimerTree::local().attach_counters(nullptr);
    set.reset();
#if TESSERA_PAPI
    // A thread that ends gives PAPI's record of it back; the main thread keeps it (PAPI
    // 7.0 crashes on later calls from an unregistered main thread).
    if (papi_registered && ::gettid() != ::getpid()) PAPI_unregister_thread();
#endif
  }
};

Holder& holder() {
  (void)TimerTree::local();
  thread_local Holder h;
  return h;
}

#if TESSERA_PAPI
void register_papi_thread() {
  Holder& h = holder();
  if (!h.papi_registered) h.papi_registered = PAPI_register_thread() == PAPI_OK;
}
#endif

std::vector<Plan> plan(const std::vector<std::string>& names) {
  std::vector<Plan> plans;
  std::set<std::string> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second)
      throw Error(fmt::format("perf.counters: '{}' is listed twice", name));
    Plan p{name, false, nullptr};
    if (const PerfName* e = find_perf(name)) {
      p.perf = e;
      plans.push_back(p);
      continue;
    }
#if TESSERA_PAPI
    const bool papi_knows = papi_code(name).has_value();
#else
    const bool papi_knows = false;
#endif
    const bool papi_ready = papi_unavailable().empty();
    const bool looks_native = name.find(':') != std::string::npos;
    // PAPI's perf_event component names generic events "perf::INSTRUCTIONS": the
    // perf_event of the same name counts them where PAPI cannot (no PAPI, or PAPI without
    // its perf_event component, as on a machine with no PMU).
    const PerfName* perf_alias = nullptr;
    if (name.rfind("perf::", 0) == 0) perf_alias = find_perf(to_lower(name.substr(6)));
    if (is_preset(name) || papi_knows || (!papi_ready && looks_native) || perf_alias) {
      p.papi = true;
      p.perf = preset_to_perf(name);
      if (p.perf == nullptr) p.perf = perf_alias;
      plans.push_back(p);
      continue;
    }
    std::string best;
    std::size_t best_d = 4;  // suggest only close names
    for (const auto& k : known_counter_names()) {
      const std::size_t d = edit_distance(to_lower(name), to_lower(k));  // case-blind
      if (d < best_d) best_d = d, best = k;
    }
    throw Error(fmt::format(
        "perf.counters: unknown counter '{}'{}; use perf names (instructions, cycles, "
        "cache-misses, LLC-load-misses, dTLB-load-misses, task-clock, page-faults, ...), PAPI "
        "presets (PAPI_TOT_INS, PAPI_L1_DCM, ...) or PAPI native events{}",
        name, best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best),
        papi_ready ? "" : fmt::format(" (PAPI: {})", papi_unavailable())));
  }
  return plans;
}

// ---------------------------------------------------------------------------------------
// Reduction across ranks
// ---------------------------------------------------------------------------------------

template <class T>
void put(std::vector<char>& buf, const T& v) {
  const auto* p = reinterpret_cast<const char*>(&v);
  buf.insert(buf.end(), p, p + sizeof v);
}

void put_string(std::vector<char>& buf, const std::string& s) {
  put(buf, static_cast<std::uint64_t>(s.size()));
  buf.insert(buf.end(), s.begin(), s.end());
}

struct Reader {
  const char* p;
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    std::string s(p, n);
    p += n;
    return s;
  }
};

struct RankCounters {
  std::vector<CounterInfo> info;
  std::vector<TimerTree::CounterRow> rows;
};

std::vector<char> serialize(const RankCounters& rc) {
  std::vector<char> buf;
  put(buf, static_cast<std::uint64_t>(rc.info.size()));
  for (const auto& c : rc.info) {
    put_string(buf, c.name);
    put_string(buf, c.backend);
    put_string(buf, c.reason);
  }
  put(buf, static_cast<std::uint64_t>(rc.rows.size()));
  for (const auto& r : rc.rows) {
    put_string(buf, r.path);
    for (const auto v : r.counts) put(buf, v);
  }
  return buf;
}

RankCounters deserialize(const char* p) {
  Reader in{p};
  RankCounters rc;
  rc.info.resize(in.get<std::uint64_t>());
  for (auto& c : rc.info) {
    c.name = in.get_string();
    c.backend = in.get_string();
    c.reason = in.get_string();
  }
  rc.rows.resize(in.get<std::uint64_t>());
  for (auto& r : rc.rows) {
    r.path = in.get_string();
    r.counts.resize(rc.info.size());
    for (auto& v : r.counts) v = in.get<std::uint64_t>();
  }
  return rc;
}

// "unavailable (X)" -> "X"
std::string inner_reason(const std::string& reason) {
  const std::string head = "unavailable (";
  if (reason.rfind(head, 0) == 0 && reason.size() > head.size() && reason.back() == ')')
    return reason.substr(head.size(), reason.size() - head.size() - 1);
  return reason;
}

// ---------------------------------------------------------------------------------------
// Derived metrics
// ---------------------------------------------------------------------------------------

// Names that measure the same thing, best first.
const std::vector<std::string> kInstructions = {"instructions", "PAPI_TOT_INS",
                                                "perf::INSTRUCTIONS"};
const std::vector<std::string> kCycles = {"cycles", "cpu-cycles", "PAPI_TOT_CYC", "perf::CYCLES",
                                          "perf::CPU-CYCLES"};
const std::vector<std::string> kLoads = {"L1-dcache-loads", "PAPI_LD_INS"};
const std::vector<std::string> kTlbLoads = {"dTLB-loads", "L1-dcache-loads", "PAPI_LD_INS"};
const std::vector<std::string> kTlbMisses = {"dTLB-load-misses", "PAPI_TLB_DM"};
const std::vector<std::string> kL1Misses = {"L1-dcache-load-misses", "PAPI_L1_DCM", "PAPI_L1_LDM"};
const std::vector<std::string> kL2Misses = {"PAPI_L2_DCM", "PAPI_L2_LDM", "PAPI_L2_TCM"};
// Every L1 miss is an L2 access, so L1 misses stand in for L2 accesses.
const std::vector<std::string> kL2Accesses = {"PAPI_L2_DCA", "PAPI_L2_TCA", "L1-dcache-load-misses",
                                              "PAPI_L1_DCM", "PAPI_L1_LDM"};
const std::vector<std::string> kLlcMisses = {"LLC-load-misses", "cache-misses", "PAPI_L3_TCM",
                                             "PAPI_L3_LDM", "PAPI_L3_DCM"};
const std::vector<std::string> kLlcRefs = {"LLC-loads", "cache-references", "PAPI_L3_TCA",
                                           "PAPI_L3_DCA", "PAPI_L3_DCR"};
const std::vector<std::string> kTaskClock = {"task-clock", "cpu-clock", "perf::TASK-CLOCK"};

struct Input {
  bool configured = false;
  bool available = false;
  double value = 0.0;
  std::string name;  // the configured name used (or the first configured, if none usable)
};

Input input(const ReducedCounters& rc, const ReducedCounterRow& row,
            const std::vector<std::string>& role) {
  Input in;
  for (const auto& want : role)
    for (std::size_t i = 0; i < rc.names.size(); ++i) {
      if (rc.names[i] != want) continue;
      if (!in.configured) in.name = want;
      in.configured = true;
      if (const auto* v = std::get_if<std::uint64_t>(&row.values[i])) {
        in.available = true;
        in.value = static_cast<double>(*v);
        in.name = want;
        return in;
      }
    }
  return in;
}

// num / den × scale, or why not; nothing when an input is not configured at all.
void ratio(nlohmann::json& out, const char* key, const Input& num, const Input& den,
           double scale = 1.0) {
  if (!num.configured || !den.configured) return;
  std::string missing;
  for (const Input* in : {&num, &den})
    if (!in->available) missing += (missing.empty() ? "" : ", ") + in->name;
  if (!missing.empty())
    out[key] = fmt::format("unavailable (inputs unavailable: {})", missing);
  else if (den.value == 0.0)
    out[key] = fmt::format("unavailable ({} = 0)", den.name);
  else
    out[key] = scale * num.value / den.value;
}

nlohmann::json derived(const ReducedCounters& rc, const ReducedCounterRow& row) {
  nlohmann::json d = nlohmann::json::object();
  auto in = [&](const std::vector<std::string>& role) { return input(rc, row, role); };
  ratio(d, "ipc", in(kInstructions), in(kCycles));
  ratio(d, "dtlb_misses_per_1000_loads", in(kTlbMisses), in(kTlbLoads), 1000.0);
  ratio(d, "l1_miss_rate", in(kL1Misses), in(kLoads));
  ratio(d, "l2_miss_rate", in(kL2Misses), in(kL2Accesses));
  ratio(d, "llc_miss_rate", in(kLlcMisses), in(kLlcRefs));
  const Input wall_s{true, true, row.max_s, "region seconds"};
  ratio(d, "mem_bandwidth_bytes_per_s", in(kLlcMisses), wall_s, 64.0);
  // task-clock is in ns, summed over ranks; avg_s × nranks is the ranks' summed seconds.
  const Input rank_ns{true, true, row.avg_s * rc.nranks * 1e9, "region seconds"};
  ratio(d, "cpu_utilization", in(kTaskClock), rank_ns);
  return d;
}

std::string format_count(double v) {
  return v < 1e7 && v == static_cast<double>(static_cast<std::uint64_t>(v))
             ? fmt::format("{}", static_cast<std::uint64_t>(v))
             : fmt::format("{:.4g}", v);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

void declare_params(base::Params& p) {
  p.declare_string_list(
      "perf.counters", {},
      "counters summed per timer region: perf names (instructions, cycles, LLC-load-misses, "
      "dTLB-load-misses, task-clock, page-faults, ...), PAPI presets (PAPI_TOT_INS, ...) or "
      "PAPI native events; unavailable ones are reported, never fatal (empty: off)");
  p.declare_string(
      "perf.simd", "auto",
      {"auto", "avx512", "avx3", "avx2", "sse4", "emu128", "hwy_scalar", "neon", "sve", "sve2",
       "sve_256", "sve2_128", "scalar"},
      "instruction set of the vectorised kernels (hydro rows, PIC particles; base/simd.hpp): "
      "auto (the environment "
      "variable TESSERA_SIMD if set, else the best the processor runs), or a lower one to "
      "force: avx512 (avx3), avx2, sse4, emu128 or hwy_scalar (Highway's portable code), "
      "neon, sve, sve2, scalar (the C++ reference kernels); one the processor or build lacks is an "
      "error");
}

std::vector<std::string> known_counter_names() {
  std::vector<std::string> names;
  for (const auto& p : kPerfNames) names.emplace_back(p.name);
  for (const auto& a : kPerfAliases) names.emplace_back(a.first);
  for (const char* p : kPapiPresets) names.emplace_back(p);
  return names;
}

void configure_counters(const std::vector<std::string>& names, CounterBackends allowed) {
  const std::vector<Plan> plans = plan(names);  // throws before anything changes
  Holder& h = holder();
  TimerTree& tree = TimerTree::local();
  tree.attach_counters(nullptr);
  h.set.reset();
  if (plans.empty()) return;
  h.set = std::make_unique<CounterSet>(plans, allowed);
  tree.attach_counters(h.set.get());
}

std::vector<CounterInfo> configured_counters() {
  const Holder& h = holder();
  return h.set ? h.set->info() : std::vector<CounterInfo>{};
}

ReducedCounters reduce_counters(MPI_Comm comm) {
  return reduce_counters(comm, reduce_timers(comm));
}

ReducedCounters reduce_counters(MPI_Comm comm, const std::vector<ReducedRow>& timer_rows) {
  int nranks = 1;
  MPI_Comm_size(comm, &nranks);
  const std::vector<char> mine =
      serialize(RankCounters{configured_counters(), TimerTree::local().counter_rows()});
  std::vector<RankCounters> ranks;
  for (const auto& bytes : detail::allgather_bytes(comm, mine))
    ranks.push_back(deserialize(bytes.data()));

  ReducedCounters out;
  out.nranks = nranks;
  for (const auto& rc : ranks)
    for (const auto& c : rc.info)
      if (std::find(out.names.begin(), out.names.end(), c.name) == out.names.end())
        out.names.push_back(c.name);
  const std::size_t n = out.names.size();
  if (n == 0) return out;

  // Per name: the backends seen, and the first rank (if any) where it is unavailable.
  out.status.assign(n, "");
  out.backends.assign(n, "");
  std::vector<int> unavailable_on(n, 0);
  std::map<std::string, std::vector<std::uint64_t>> sums;
  for (int r = 0; r < nranks; ++r) {
    const auto& rc = ranks[r];
    for (std::size_t k = 0; k < n; ++k) {
      const auto it = std::find_if(rc.info.begin(), rc.info.end(),
                                   [&](const CounterInfo& c) { return c.name == out.names[k]; });
      const std::string why = it == rc.info.end() ? std::string("not configured")
                              : it->available()   ? std::string()
                                                  : inner_reason(it->reason);
      if (!why.empty() && unavailable_on[k]++ == 0)
        out.status[k] = nranks > 1 ? fmt::format("on rank {}: {}", r, why) : why;
      if (it != rc.info.end() && it->available() &&
          ("+" + out.backends[k] + "+").find("+" + it->backend + "+") == std::string::npos)
        out.backends[k] += (out.backends[k].empty() ? "" : "+") + it->backend;
      if (it == rc.info.end()) continue;
      const auto col = static_cast<std::size_t>(it - rc.info.begin());
      for (const auto& row : rc.rows) {
        auto& s = sums[row.path];
        s.resize(n, 0);
        s[k] += row.counts[col];
      }
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (out.status[k].empty()) continue;
    // When every rank agrees that it is unavailable, the rank does not matter.
    if (unavailable_on[k] == nranks && nranks > 1)
      out.status[k] = out.status[k].substr(out.status[k].find(": ") + 2);
    out.status[k] = "unavailable (" + out.status[k] + ")";
  }

  const auto leaf = detail::leaf_names(timer_rows);
  for (std::size_t i = 0; i < timer_rows.size(); ++i) {
    const auto& t = timer_rows[i];
    ReducedCounterRow row{t.path, leaf[i], t.depth, t.max_s, t.avg_s, {}};
    const auto it = sums.find(t.path);
    for (std::size_t k = 0; k < n; ++k) {
      if (!out.status[k].empty())
        row.values.emplace_back(out.status[k]);
      else
        row.values.emplace_back(it != sums.end() ? it->second[k] : std::uint64_t{0});
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

nlohmann::json counters_to_json(const ReducedCounters& reduced) {
  nlohmann::json j = nlohmann::json::object();
  if (reduced.names.empty()) return j;
  for (const auto& row : reduced.rows) {
    nlohmann::json r = nlohmann::json::object();
    for (std::size_t k = 0; k < reduced.names.size(); ++k)
      std::visit([&](const auto& v) { r[reduced.names[k]] = v; }, row.values[k]);
    auto d = derived(reduced, row);
    if (!d.empty()) r["derived"] = std::move(d);
    j[row.path] = std::move(r);
  }
  return j;
}

nlohmann::json counters_to_json(MPI_Comm comm) {
  return counters_to_json(reduce_counters(comm));
}

nlohmann::json counter_backends_to_json(const ReducedCounters& reduced) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t k = 0; k < reduced.names.size(); ++k)
    j[reduced.names[k]] = reduced.status[k].empty() ? reduced.backends[k] : reduced.status[k];
  return j;
}

void print_counter_table(std::ostream& os, const ReducedCounters& reduced) {
  if (reduced.names.empty()) return;
  // Columns: the counters that have numbers, then the derived metrics that do anywhere.
  std::vector<std::size_t> counted;
  for (std::size_t k = 0; k < reduced.names.size(); ++k)
    if (reduced.status[k].empty()) counted.push_back(k);
  std::vector<nlohmann::json> derived_rows;
  std::vector<std::string> metrics;
  for (const auto& row : reduced.rows) {
    derived_rows.push_back(derived(reduced, row));
    for (const auto& [key, v] : derived_rows.back().items())
      if (v.is_number() && std::find(metrics.begin(), metrics.end(), key) == metrics.end())
        metrics.push_back(key);
  }
  std::size_t width = 24;
  for (const auto& r : reduced.rows)
    width = std::max(width, 2 * static_cast<std::size_t>(r.depth) + r.name.size());
  std::vector<std::size_t> col;
  for (const auto k : counted) col.push_back(std::max<std::size_t>(11, reduced.names[k].size()));
  for (const auto& m : metrics) col.push_back(std::max<std::size_t>(11, m.size()));
  std::size_t line = width + 2;
  for (const auto c : col) line += c + 1;
  const std::string rule(line, '-');

  os << fmt::format(
      " perf counters: {} MPI rank{}, summed over ranks (task-clock, cpu-clock: ns)\n",
      reduced.nranks, reduced.nranks == 1 ? "" : "s");
  os << ' ' << rule << '\n';
  std::string head = fmt::format("  {:<{}}", "region", width);
  std::size_t c = 0;
  for (const auto k : counted) head += fmt::format(" {:>{}}", reduced.names[k], col[c++]);
  for (const auto& m : metrics) head += fmt::format(" {:>{}}", m, col[c++]);
  os << head << '\n' << ' ' << rule << '\n';
  for (std::size_t i = 0; i < reduced.rows.size(); ++i) {
    const auto& r = reduced.rows[i];
    std::string s = fmt::format(
        "  {:<{}}", std::string(2 * static_cast<std::size_t>(r.depth), ' ') + r.name, width);
    c = 0;
    for (const auto k : counted)
      s += fmt::format(" {:>{}}",
                       format_count(static_cast<double>(std::get<std::uint64_t>(r.values[k]))),
                       col[c++]);
    for (const auto& m : metrics) {
      const auto it = derived_rows[i].find(m);
      const bool num = it != derived_rows[i].end() && it->is_number();
      s += fmt::format(" {:>{}}", num ? fmt::format("{:.4g}", it->get<double>()) : "-", col[c++]);
    }
    os << s << '\n';
  }
  os << ' ' << rule << '\n';
  for (std::size_t k = 0; k < reduced.names.size(); ++k)
    if (!reduced.status[k].empty())
      os << fmt::format("  not counted: {}: {}\n", reduced.names[k], reduced.status[k]);
}

}  // namespace tessera::perf

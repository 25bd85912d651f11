#include "memory/arena.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <sstream>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/size.hpp"
#include "base/text.hpp"
#include "memory/tier_backend.hpp"

namespace tessera::memory {

namespace {

constexpr const char* kHugepagesDir = "/sys/kernel/mm/hugepages";
constexpr const char* kThpDir = "/sys/kernel/mm/transparent_hugepage";
// Arenas that have an override key memory.pages_<name>.
constexpr const char* kArenaNames[] = {"unk", "flux", "scratch", "staging", "particles"};

std::size_t base_page() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

bool power_of_two(std::size_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}

int log2_of(std::size_t x) {
  int n = 0;
  while (x > 1) x >>= 1, ++n;
  return n;
}

std::string read_text(const std::string& path) {
  return read_text_file(path);
}

bool read_count(const std::string& path, std::size_t& out) {
  const std::string t = read_text(path);
  std::size_t pos = 0;
  while (pos < t.size() && t[pos] == ' ') ++pos;
  const auto [ptr, ec] = std::from_chars(t.data() + pos, t.data() + t.size(), out);
  return ec == std::errc() && ptr != t.data() + pos;
}

std::string pool_dir(std::size_t page_size) {
  return fmt::format("{}/hugepages-{}kB", kHugepagesDir, page_size / 1024);
}

// "always", "madvise" or "never" (the bracketed choice); "" when the kernel has no THP.
std::string thp_mode() {
  const std::string t = read_text(std::string(kThpDir) + "/enabled");
  const auto a = t.find('['), b = t.find(']');
  if (a == std::string::npos || b == std::string::npos || b < a) return "";
  return t.substr(a + 1, b - a - 1);
}

std::string strerr(int err) {
  return std::strerror(err);
}

// Lines "Key:   value kB" -> value in bytes (or the bare number when there is no unit).
bool parse_kv(const std::string& line, std::string& key, std::size_t& value) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return false;
  key = line.substr(0, colon);
  std::size_t pos = colon + 1;
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  const auto [ptr, ec] = std::from_chars(line.data() + pos, line.data() + line.size(), value);
  if (ec != std::errc()) return false;
  if (std::string_view(ptr, line.data() + line.size()).find("kB") != std::string_view::npos)
    value *= 1024;
  return true;
}

// One /proc/self/smaps entry, only the fields arenas need.
struct Vma {
  std::uintptr_t start = 0, end = 0;
  std::size_t rss = 0, anon_huge = 0, hugetlb = 0;
  std::string flags;
};

std::vector<Vma> read_smaps() {
  std::vector<Vma> out;
  std::ifstream in("/proc/self/smaps");
  std::string line, key;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const char c = line[0];
    // Entry headers start with the lower-case hex start address; fields with a capital.
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
      Vma v;
      const char* p = line.data();
      const char* e = p + line.size();
      auto r1 = std::from_chars(p, e, v.start, 16);
      if (r1.ec != std::errc() || r1.ptr == e || *r1.ptr != '-') continue;
      auto r2 = std::from_chars(r1.ptr + 1, e, v.end, 16);
      if (r2.ec != std::errc()) continue;
      out.push_back(std::move(v));
      continue;
    }
    if (out.empty()) continue;
    Vma& v = out.back();
    if (line.compare(0, 8, "VmFlags:") == 0) {
      std::size_t pos = 8;
      while (pos < line.size() && line[pos] == ' ') ++pos;
      v.flags = line.substr(pos);
      while (!v.flags.empty() && v.flags.back() == ' ') v.flags.pop_back();
      continue;
    }
    std::size_t value = 0;
    if (!parse_kv(line, key, value)) continue;
    if (key == "Rss")
      v.rss += value;
    else if (key == "AnonHugePages")
      v.anon_huge += value;
    else if (key == "Private_Hugetlb" || key == "Shared_Hugetlb")
      v.hugetlb += value;
  }
  return out;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

// Never destroyed: arenas with static storage may outlive any other static.
std::vector<const Arena*>& registry() {
  static auto* r = new std::vector<const Arena*>;
  return *r;
}

// Per-name statistics of every mapping (arena_stats), under registry_mutex().
struct NameStats {
  long count = 0, live = 0;
  std::size_t live_bytes = 0, peak_bytes = 0, total_bytes = 0;
  double seconds = 0;
};
std::map<std::string, NameStats>& name_stats() {
  static auto* m = new std::map<std::string, NameStats>;
  return *m;
}

// The arena placer (set_arena_placer). The pointer is read without a lock first, so that
// a process without one pays an atomic load per arena; calls into an installed placer hold
// the shared lock, and replacing it takes the exclusive one, so a placer is never called
// after set_arena_placer has replaced it.
std::atomic<ArenaPlacer*> g_placer{nullptr};
std::shared_mutex& placer_mutex() {
  static auto* m = new std::shared_mutex;
  return *m;
}

// Writes one byte in every `stride` bytes: each page is faulted in now, on this thread.
void prefault(void* p, std::size_t n, std::size_t stride) {
  auto* c = static_cast<volatile char*>(p);
  for (std::size_t off = 0; off < n; off += stride) c[off] = 0;
}

// smaps shows "[anon:tessera:NAME]" for the arena where the kernel supports it (5.17+,
// CONFIG_ANON_VMA_NAME). Best effort: only a convenience for people reading smaps.
void name_mapping(void* addr, std::size_t len, const std::string& name) {
#if defined(PR_SET_VMA) && defined(PR_SET_VMA_ANON_NAME)
  std::string label = "tessera:";
  for (char ch : name.substr(0, 64))
    label +=
        (ch > ' ' && ch < 127 && ch != '[' && ch != ']' && ch != '\\' && ch != '$' && ch != '`')
            ? ch
            : '_';
  ::prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, reinterpret_cast<unsigned long>(addr), len,
          reinterpret_cast<unsigned long>(label.c_str()));
#else
  (void)addr, (void)len, (void)name;
#endif
}

// Private anonymous mapping of `mapped` bytes aligned to `align`, followed by one
// PROT_NONE guard page. The guard keeps the arena's VMA from merging with an adjacent
// mapping of the same flags (smaps counts per VMA, so a merged one could not be
// attributed). Over-allocates by `align` and trims both ends. nullptr + errno on failure.
void* map_aligned(std::size_t mapped, std::size_t align, std::size_t& unmap_bytes) {
  const std::size_t guard = base_page();
  const std::size_t len = mapped + align + guard;
  void* raw = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto r = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t a = round_up(r, align);
  if (a > r) ::munmap(raw, a - r);
  const std::uintptr_t tail = a + mapped + guard;
  if (r + len > tail) ::munmap(reinterpret_cast<void*>(tail), r + len - tail);
  ::mprotect(reinterpret_cast<void*>(a + mapped), guard, PROT_NONE);
  unmap_bytes = mapped + guard;
  return reinterpret_cast<void*>(a);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Policies

PagePolicy parse_policy(const std::string& text) {
  if (text == "none") return PagePolicy::none;
  if (text == "thp") return PagePolicy::thp;
  if (text == "hugetlb") return PagePolicy::hugetlb;
  throw Error(fmt::format("'{}' is not a page policy (choices: none, thp, hugetlb)", text));
}

std::string to_string(PagePolicy p) {
  switch (p) {
    case PagePolicy::thp:
      return "thp";
    case PagePolicy::hugetlb:
      return "hugetlb";
    default:
      return "none";
  }
}

std::string page_size_text(std::size_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} B", bytes);
}

std::size_t thp_size() {
  // Fixed for the life of the kernel: read once (the planner asks hundreds of times).
  static const std::size_t size = [] {
    std::size_t s = 0;
    if (read_count(std::string(kThpDir) + "/hpage_pmd_size", s) && power_of_two(s)) return s;
    return 2 * kMiB;
  }();
  return size;
}

HugePool read_pool(std::size_t page_size) {
  HugePool p;
  p.page_size = page_size;
  if (page_size < 1024) return p;
  const std::string d = pool_dir(page_size);
  std::error_code ec;
  p.offered = std::filesystem::is_directory(d, ec);
  if (!p.offered) return p;
  read_count(d + "/nr_hugepages", p.total);
  read_count(d + "/free_hugepages", p.free);
  read_count(d + "/resv_hugepages", p.resv);
  read_count(d + "/surplus_hugepages", p.surplus);
  read_count(d + "/nr_overcommit_hugepages", p.overcommit);
  return p;
}

std::vector<std::size_t> offered_hugepage_sizes() {
  std::vector<std::size_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kHugepagesDir, ec)) {
    const std::string n = e.path().filename().string();  // hugepages-2048kB
    std::size_t kb = 0;
    if (n.rfind("hugepages-", 0) != 0) continue;
    const auto [ptr, err] = std::from_chars(n.data() + 10, n.data() + n.size(), kb);
    if (err == std::errc() && std::string_view(ptr) == "kB") out.push_back(kb * 1024);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------------------------------
// Arena

std::size_t Arena::mapped_size(std::size_t bytes, PagePolicy policy, std::size_t hugepage_size) {
  if (bytes == 0) return 0;
  switch (policy) {
    case PagePolicy::hugetlb:
      return round_up(bytes, power_of_two(hugepage_size) ? hugepage_size : 2 * kMiB);
    case PagePolicy::thp:
      return round_up(bytes, thp_size());
    default:
      return round_up(bytes, base_page());
  }
}

Arena::Arena(std::string name, std::size_t bytes, PagePolicy requested, std::size_t hugepage_size,
             const BeforeTouch& before_touch)
    : name_(std::move(name)),
      bytes_(bytes),
      requested_(requested),
      achieved_(requested),
      created_(std::chrono::steady_clock::now()) {  // a lifetime includes mapping it
  std::vector<std::string> why;                     // one reason per policy that could not be had
  // The process-wide placer (a tier runtime), unless the caller places this arena itself.
  std::shared_lock<std::shared_mutex> placer_lock;
  ArenaPlacer* placer = nullptr;
  if (!before_touch && bytes > 0 && g_placer.load(std::memory_order_acquire) != nullptr) {
    placer_lock = std::shared_lock<std::shared_mutex>(placer_mutex());
    placer = g_placer.load(std::memory_order_acquire);
  }
  // Placement (a tier's mbind) must see the mapping before its first write: a policy set
  // later does not move pages that are already faulted in.
  const auto prefault = [&](void* p, std::size_t n, std::size_t stride, std::size_t page) {
    if (before_touch) before_touch(p, n);
    if (placer) placer->before_touch(name_, p, n, page);
    memory::prefault(p, n, stride);
    if (placer) placer->after_touch(name_, p, n);
    placed_ = placer != nullptr;
  };
  PagePolicy p = requested;
  const std::size_t align = std::max(2 * kMiB, thp_size());

  if (bytes == 0) {
    // Nothing to map; an empty arena is still listed so reports show it was asked for.
  } else {
    if (p == PagePolicy::hugetlb) {
      const HugePool pool = read_pool(hugepage_size);
      const std::size_t mapped = round_up(bytes, power_of_two(hugepage_size) ? hugepage_size : 1);
      const std::size_t need = power_of_two(hugepage_size) ? mapped / hugepage_size : 0;
      std::string reason;
      if (!power_of_two(hugepage_size) || hugepage_size < base_page()) {
        reason = fmt::format("hugetlb: {} is not a page size", hugepage_size);
      } else if (!pool.offered) {
        std::string offered;
        for (std::size_t s : offered_hugepage_sizes())
          offered += (offered.empty() ? "" : ", ") + page_size_text(s);
        reason = offered.empty()
                     ? "hugetlb: this kernel offers no huge pages (no " +
                           std::string(kHugepagesDir) + ")"
                     : fmt::format("hugetlb: this kernel offers no {} pages (offered: {})",
                                   page_size_text(hugepage_size), offered);
      } else if (pool.available() < need) {
        reason = fmt::format("hugetlb: pool has {} free {} pages, need {}", pool.available(),
                             page_size_text(hugepage_size), need);
      } else {
        // No MAP_NORESERVE: the pages are reserved now, so mmap fails here rather than
        // a later fault killing the run with SIGBUS.
        const int flags =
            MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (log2_of(hugepage_size) << MAP_HUGE_SHIFT);
        void* a = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (a == MAP_FAILED) {
          const int err = errno;
          reason = fmt::format("hugetlb: mmap of {} {} pages failed: {}", need,
                               page_size_text(hugepage_size), strerr(err));
        } else {
          addr_ = a;
          mapped_ = unmap_bytes_ = mapped;
          hugepage_size_ = hugepage_size;
          prefault(addr_, mapped_, hugepage_size, hugepage_size);
        }
      }
      if (!addr_) {
        why.push_back(reason);
        p = PagePolicy::thp;
      }
    }

    if (!addr_ && p == PagePolicy::thp) {
      const std::string mode = thp_mode();
      std::string reason;
      if (mode.empty()) {
        reason = "thp: this kernel has no transparent huge pages";
      } else if (mode == "never") {
        reason = "thp: " + std::string(kThpDir) + "/enabled is 'never'";
      } else {
        const std::size_t ts = thp_size();
        const std::size_t mapped = round_up(bytes, ts);
        std::size_t unmap = 0;
        void* a = map_aligned(mapped, std::max(align, ts), unmap);
        if (!a) {
          const int err = errno;
          reason =
              fmt::format("thp: mmap of {} failed: {}", format_bytes(double(mapped)), strerr(err));
        } else if (::madvise(a, mapped, MADV_HUGEPAGE) != 0) {
          const int err = errno;
          reason = "thp: madvise(MADV_HUGEPAGE) failed: " + strerr(err);
          ::munmap(a, unmap);
        } else {
          addr_ = a;
          mapped_ = mapped;
          unmap_bytes_ = unmap;
          hugepage_size_ = ts;
          name_mapping(addr_, mapped_, name_);
          prefault(addr_, mapped_, base_page(), ts);
        }
      }
      if (!addr_) {
        why.push_back(reason);
        p = PagePolicy::none;
      }
    }

    if (!addr_) {
      const std::size_t mapped = round_up(bytes, base_page());
      std::size_t unmap = 0;
      void* a = map_aligned(mapped, align, unmap);
      if (!a) {
        const int err = errno;
        throw Error(fmt::format("cannot map {} for arena '{}': {}{}", format_bytes(double(bytes)),
                                name_, strerr(err), why.empty() ? "" : " (" + why[0] + ")"));
      }
      // EINVAL here means a kernel without THP: base pages are all it can give anyway.
      ::madvise(a, mapped, MADV_NOHUGEPAGE);
      addr_ = a;
      mapped_ = mapped;
      unmap_bytes_ = unmap;
      hugepage_size_ = 0;
      name_mapping(addr_, mapped_, name_);
      prefault(addr_, mapped_, base_page(), base_page());
    }
    achieved_ = p;
  }

  if (!why.empty()) {
    for (const auto& w : why) warning_ += w + "; ";
    warning_ += "fell back to " + to_string(achieved_);
  }
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(this);
  registered_ = true;
  auto& st = name_stats()[name_];
  ++st.count;
  ++st.live;
  st.live_bytes += bytes_;
  st.total_bytes += bytes_;
  st.peak_bytes = std::max(st.peak_bytes, st.live_bytes);
}

Arena::~Arena() {
  release();
}

Arena::Arena(Arena&& other) noexcept {
  std::lock_guard<std::mutex> lock(registry_mutex());
  take(other);
}

Arena& Arena::operator=(Arena&& other) noexcept {
  if (this != &other) {
    release();
    std::lock_guard<std::mutex> lock(registry_mutex());
    take(other);
  }
  return *this;
}

void Arena::take(Arena& o) noexcept {
  name_ = std::move(o.name_);
  addr_ = o.addr_;
  bytes_ = o.bytes_;
  mapped_ = o.mapped_;
  unmap_bytes_ = o.unmap_bytes_;
  hugepage_size_ = o.hugepage_size_;
  requested_ = o.requested_;
  achieved_ = o.achieved_;
  warning_ = std::move(o.warning_);
  registered_ = o.registered_;
  placed_ = o.placed_;
  created_ = o.created_;
  if (registered_) std::replace(registry().begin(), registry().end(), &o, this);
  o.name_.clear();
  o.warning_.clear();
  o.addr_ = nullptr;
  o.bytes_ = o.mapped_ = o.unmap_bytes_ = o.hugepage_size_ = 0;
  o.registered_ = false;
  o.placed_ = false;
}

void Arena::release() noexcept {
  if (registered_) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto& r = registry();
    r.erase(std::remove(r.begin(), r.end(), this), r.end());
    registered_ = false;
    auto& st = name_stats()[name_];
    --st.live;
    st.live_bytes -= std::min(st.live_bytes, bytes_);
    st.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - created_).count();
  }
  if (placed_) {
    std::shared_lock<std::shared_mutex> lock(placer_mutex());
    if (ArenaPlacer* p = g_placer.load(std::memory_order_acquire)) p->unmapped(addr_);
    placed_ = false;
  }
  if (addr_) ::munmap(addr_, unmap_bytes_);
  addr_ = nullptr;
  bytes_ = mapped_ = unmap_bytes_ = hugepage_size_ = 0;
}

ArenaPlacer* set_arena_placer(ArenaPlacer* p) {
  std::unique_lock<std::shared_mutex> lock(placer_mutex());
  return g_placer.exchange(p, std::memory_order_acq_rel);
}

ArenaPlacer* arena_placer() {
  return g_placer.load(std::memory_order_acquire);
}

namespace {

ArenaReport make_report(const Arena& a, const std::vector<Vma>& vmas) {
  ArenaReport r;
  r.name = a.name();
  r.bytes = a.bytes();
  r.mapped_bytes = a.mapped_bytes();
  r.policy_requested = a.requested();
  r.policy_achieved = a.achieved();
  r.hugepage_size = a.hugepage_size();
  r.warning = a.warning();
  if (!a.data()) return r;
  const auto lo = reinterpret_cast<std::uintptr_t>(a.data());
  const std::uintptr_t hi = lo + a.mapped_bytes();
  for (const Vma& v : vmas) {
    if (v.end <= lo || v.start >= hi) continue;
    r.huge_bytes += v.anon_huge + v.hugetlb;
    r.rss_bytes += v.rss + v.hugetlb;
    if (r.vm_flags.empty()) r.vm_flags = v.flags;
  }
  return r;
}

}  // namespace

ArenaReport Arena::report() const {
  return make_report(*this, read_smaps());
}

std::optional<ArenaReport> report_of(const void* addr) {
  const auto x = reinterpret_cast<std::uintptr_t>(addr);
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (const Arena* a : registry()) {
    const auto lo = reinterpret_cast<std::uintptr_t>(a->data());
    if (a->data() && x >= lo && x < lo + a->bytes()) return make_report(*a, read_smaps());
  }
  return std::nullopt;
}

namespace detail {

namespace {
std::mutex& owned_mutex() {
  static std::mutex m;
  return m;
}
// An arena of the table with the configuration it was asked for.
struct Owned {
  std::unique_ptr<Arena> arena;
  ArenaConfig cfg;
};
// Never destroyed, like the registry: a static container may free into it at exit.
std::map<void*, Owned>& owned() {
  static auto* m = new std::map<void*, Owned>;
  return *m;
}
// Freed arenas kept mapped (and faulted) for the next allocation of the same name and
// configuration: outputs snapshot the same sizes again and again, and a fresh arena
// costs the kernel's zeroing of every page (most of the step loop's share of an
// asynchronous checkpoint). At most kSpare are kept; an allocation none of them fits
// unmaps them all first (the peak stays what it was without spares); release_spare()
// unmaps them.
constexpr std::size_t kSpare = 2;
std::vector<Owned>& spare() {
  static auto* v = new std::vector<Owned>;
  return *v;
}
}  // namespace

void* arena_allocate(const std::string& name, std::size_t bytes, const ArenaConfig& cfg) {
  bytes = std::max<std::size_t>(bytes, 1);
  std::vector<Owned> unfit;
  {
    std::lock_guard<std::mutex> lock(owned_mutex());
    auto& s = spare();
    // The smallest spare arena that fits and wastes at most half of itself.
    auto best = s.end();
    for (auto it = s.begin(); it != s.end(); ++it) {
      const Arena& a = *it->arena;
      if (a.name() != name || it->cfg.policy != cfg.policy ||
          it->cfg.hugepage_size != cfg.hugepage_size || a.bytes() < bytes || a.bytes() > 2 * bytes)
        continue;
      if (best == s.end() || a.bytes() < best->arena->bytes()) best = it;
    }
    if (best != s.end()) {
      void* p = best->arena->data();
      owned().emplace(p, std::move(*best));
      s.erase(best);
      return p;
    }
    // None fits: unmap the spares before mapping anew, so that keeping them never raises
    // the peak above what the same allocations cost without them.
    unfit.swap(s);
  }
  unfit.clear();
  Owned o{std::make_unique<Arena>(name, bytes, cfg), cfg};
  void* p = o.arena->data();
  std::lock_guard<std::mutex> lock(owned_mutex());
  owned().emplace(p, std::move(o));
  return p;
}

void arena_deallocate(void* p) noexcept {
  if (!p) return;
  Owned o;
  {
    std::lock_guard<std::mutex> lock(owned_mutex());
    auto it = owned().find(p);
    if (it == owned().end()) return;
    o = std::move(it->second);
    owned().erase(it);
    if (spare().size() < kSpare) {
      spare().push_back(std::move(o));
      return;
    }
  }
}  // o's arena unmaps here, outside the lock

void release_spare() noexcept {
  std::vector<Owned> out;
  {
    std::lock_guard<std::mutex> lock(owned_mutex());
    out.swap(spare());
  }
}  // unmapped here, outside the lock

}  // namespace detail

std::vector<ArenaStats> arena_stats() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  const auto now = std::chrono::steady_clock::now();
  std::map<std::string, double> alive;  // live mappings' time so far
  for (const Arena* a : registry())
    alive[a->name()] += std::chrono::duration<double>(now - a->created()).count();
  std::vector<ArenaStats> out;
  for (const auto& [name, st] : name_stats())
    out.push_back(
        {name, st.count, st.peak_bytes, st.total_bytes, st.seconds + alive[name], st.live});
  return out;
}

std::vector<ArenaReport> report_all() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  const std::vector<Vma> vmas = read_smaps();
  std::vector<ArenaReport> out;
  out.reserve(registry().size());
  for (const Arena* a : registry()) out.push_back(make_report(*a, vmas));
  return out;
}

void to_json(nlohmann::json& j, const ArenaReport& r) {
  j = nlohmann::json{{"name", r.name},
                     {"bytes", r.bytes},
                     {"mapped_bytes", r.mapped_bytes},
                     {"policy_requested", to_string(r.policy_requested)},
                     {"policy_achieved", to_string(r.policy_achieved)},
                     {"huge_bytes", r.huge_bytes},
                     {"hugepage_size", r.hugepage_size},
                     {"rss_bytes", r.rss_bytes},
                     {"vm_flags", r.vm_flags},
                     {"warning", r.warning}};
}

nlohmann::json to_json(const ArenaReport& r) {
  nlohmann::json j;
  to_json(j, r);
  return j;
}

// ---------------------------------------------------------------------------------------
// Process and system memory

namespace {
// /proc/meminfo key, JSON key, field: read_meminfo and its JSON from one list.
struct MemInfoField {
  const char* proc;
  const char* json;
  std::size_t MemInfo::*field;
};
constexpr MemInfoField kMemInfoFields[] = {
    {"HugePages_Total", "hugepages_total", &MemInfo::hugepages_total},
    {"HugePages_Free", "hugepages_free", &MemInfo::hugepages_free},
    {"HugePages_Rsvd", "hugepages_rsvd", &MemInfo::hugepages_rsvd},
    {"HugePages_Surp", "hugepages_surp", &MemInfo::hugepages_surp},
    {"Hugepagesize", "hugepagesize", &MemInfo::hugepagesize},
    {"AnonHugePages", "anon_huge_bytes", &MemInfo::anon_huge_bytes},
    {"Hugetlb", "hugetlb_bytes", &MemInfo::hugetlb_bytes},
    {"MemTotal", "mem_total", &MemInfo::mem_total},
    {"MemAvailable", "mem_available", &MemInfo::mem_available},
};
}  // namespace

MemInfo read_meminfo() {
  MemInfo m;
  std::ifstream in("/proc/meminfo");
  std::string line, key;
  while (std::getline(in, line)) {
    std::size_t v = 0;
    if (!parse_kv(line, key, v)) continue;
    for (const auto& f : kMemInfoFields)
      if (key == f.proc) m.*f.field = v;
  }
  return m;
}

void to_json(nlohmann::json& j, const MemInfo& m) {
  j = nlohmann::json::object();
  for (const auto& f : kMemInfoFields) j[f.json] = m.*f.field;
}

namespace {
std::size_t status_field(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line, key;
  while (std::getline(in, line)) {
    std::size_t v = 0;
    if (parse_kv(line, key, v) && key == name) return v;
  }
  return 0;
}
}  // namespace

std::size_t peak_rss_bytes() {
  return status_field("VmHWM");
}

std::size_t current_rss_bytes() {
  return status_field("VmRSS");
}

// ---------------------------------------------------------------------------------------
// Parameters

void declare_params(base::Params& p) {
  // Default "thp": the arenas are large and long-lived, the case THP is for; it needs no
  // administrator (unlike hugetlb), most distributions ship THP in "madvise" mode where
  // only an madvise'd region gets huge pages (so "none" would leave the TLB benefit on
  // the table), and where THP is off the arena falls back to none with a logged warning.
  // "none" remains the baseline of page-size studies and the choice for exact RSS.
  p.declare_string("memory.pages", "thp", {"none", "thp", "hugetlb"},
                   "page policy of every arena: none, thp (transparent huge pages) or hugetlb "
                   "(reserved pool; falls back to thp, then none, with a warning)");
  p.declare_string("memory.hugepage_size", "2M", {},
                   "hugetlb page size, e.g. 2M or 1G (a size listed in /sys/kernel/mm/hugepages)");
  p.declare_string("memory.pages_unk", "", {},
                   "page policy of the block storage (unk) arena; empty: memory.pages");
  p.declare_string("memory.pages_flux", "", {},
                   "page policy of the flux register arena; empty: memory.pages");
  p.declare_string("memory.pages_scratch", "", {},
                   "page policy of the hydro work arrays and Runge-Kutta stage copy; empty: "
                   "memory.pages");
  p.declare_string("memory.pages_staging", "", {},
                   "page policy of the I/O staging arena; empty: memory.pages");
  p.declare_string("memory.pages_particles", "", {},
                   "page policy of the particle arena; empty: memory.pages");
  p.declare_bool("memory.refuse_over_plan", true,
                 "refuse to start a run whose memory plan (tessera plan) exceeds the node's "
                 "memory (MemTotal), with the plan's numbers; false: run anyway");
  declare_tier_params(p);
}

ArenaConfig config_for(const base::Params& p, const std::string& arena_name) {
  ArenaConfig c;
  if (!p.has("memory.pages")) return c;
  std::string key = "memory.pages";
  const std::string over = "memory.pages_" + arena_name;
  if (p.has(over) && !p.get_string(over).empty()) key = over;
  try {
    c.policy = parse_policy(p.get_string(key));
  } catch (const Error& e) {
    throw Error(fmt::format("parameter '{}': {}", key, e.what()));
  }
  const std::string& size_text = p.get_string("memory.hugepage_size");
  try {
    c.hugepage_size = parse_bytes(size_text);
  } catch (const Error& e) {
    throw Error(fmt::format("parameter 'memory.hugepage_size': {}", e.what()));
  }
  if (!power_of_two(c.hugepage_size) || c.hugepage_size < base_page())
    throw Error(fmt::format(
        "parameter 'memory.hugepage_size' = \"{}\" is not a page size (a power of two, e.g. 2M "
        "or 1G)",
        size_text));
  if (c.policy == PagePolicy::hugetlb) {
    // A size the kernel offers none of is a configuration error; an empty pool is not
    // (the arena falls back and says so). Without /sys/kernel/mm/hugepages at all there
    // is nothing to check against, and the arena reports the fallback.
    const auto offered = offered_hugepage_sizes();
    if (!offered.empty() &&
        std::find(offered.begin(), offered.end(), c.hugepage_size) == offered.end()) {
      std::string list;
      for (std::size_t s : offered) list += (list.empty() ? "" : ", ") + page_size_text(s);
      throw Error(fmt::format(
          "parameter 'memory.hugepage_size' = \"{}\" is not a huge page size this kernel offers "
          "(offered: {})",
          size_text, list));
    }
  }
  return c;
}

void check_params(const base::Params& p) {
  for (const char* n : kArenaNames) config_for(p, n);
  tier_config(p);
}

}  // namespace tessera::memory

#pragma once
// Arenas: large, long-lived, 2 MiB-aligned anonymous mappings (block storage, fluxes,
// scratch, I/O staging) allocated with a page policy, pre-faulted, and verified. What a
// run asked for and what the kernel really gave are both reported: `achieved` says which
// policy was applied after any fallback (hugetlb -> thp -> none, each fallback recorded
// as a one-line warning), and report() reads /proc/self/smaps at the time of the call
// for the bytes actually backed by huge pages.
//
// Linux only (mmap, madvise, /proc, /sys).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera::base {
class Params;
}

namespace tessera::memory {

inline constexpr std::size_t kMiB = std::size_t(1) << 20;
inline constexpr std::size_t kGiB = std::size_t(1) << 30;

/// n rounded up to 4 significant bits (steps of 1/8 to 1/16 of n): the room an output
/// snapshot asks of the staging arena, so that the next snapshot of a mesh that grew a
/// little asks for the same room and a freed arena (memory::detail's spares) serves it.
/// Scale-free: room(8 n) = 8 room(n), in doubles or in bytes alike.
inline std::size_t snapshot_room(std::size_t n) {
  int width = 0;
  for (std::size_t x = n; x != 0; x >>= 1) ++width;
  const int shift = width > 4 ? width - 4 : 0;
  return ((n + (std::size_t(1) << shift) - 1) >> shift) << shift;
}

/// How an arena's pages are backed.
///   none    - base pages; MADV_NOHUGEPAGE so THP "always" mode does not change it;
///   thp     - transparent huge pages (MADV_HUGEPAGE), size rounded to the THP size;
///   hugetlb - pages from the hugetlbfs pool (MAP_HUGETLB), 2 MiB or 1 GiB.
enum class PagePolicy { none, thp, hugetlb };

/// "none" | "thp" | "hugetlb". Throws tessera::Error naming the bad value and the choices.
PagePolicy parse_policy(const std::string& text);
/// The name parse_policy accepts.
std::string to_string(PagePolicy p);

/// What a module asks of one arena. hugepage_size is used by hugetlb only (THP always
/// uses the kernel's PMD size, 2 MiB on x86-64).
struct ArenaConfig {
  PagePolicy policy = PagePolicy::none;
  std::size_t hugepage_size = 2 * kMiB;
};

/// One arena as it stands now (smaps read at the time of the report).
struct ArenaReport {
  std::string name;
  std::size_t bytes = 0;         ///< usable size, as requested
  std::size_t mapped_bytes = 0;  ///< size of the mapping (rounded to the page size in use)
  PagePolicy policy_requested = PagePolicy::none;
  PagePolicy policy_achieved = PagePolicy::none;
  /// Bytes of the mapping backed by huge pages: AnonHugePages + Private_Hugetlb +
  /// Shared_Hugetlb of the smaps entries that overlap it.
  std::size_t huge_bytes = 0;
  /// Huge page size in effect: the hugetlb page size, the THP size, or 0 for none.
  std::size_t hugepage_size = 0;
  /// Resident bytes of the mapping: Rss plus hugetlb pages (which smaps keeps out of Rss).
  std::size_t rss_bytes = 0;
  std::string vm_flags;  ///< smaps VmFlags of the mapping ("hg" = MADV_HUGEPAGE, "nh", "ht")
  std::string warning;   ///< empty, or the one-line reason a fallback happened
};

/// Keys name, bytes, policy_requested, policy_achieved, huge_bytes; extras
/// mapped_bytes, hugepage_size, rss_bytes, vm_flags, warning.
nlohmann::json to_json(const ArenaReport& r);
void to_json(nlohmann::json& j, const ArenaReport& r);  ///< for nlohmann's conversions

/// Where a process-wide tier runtime (memory/tier_runtime.hpp) sees every arena: told of a
/// fresh mapping before its pages are touched (to bind it), again after the pre-fault (to
/// verify and record it), and before it is unmapped. At most one is installed; none by
/// default, and then an arena pays one atomic load for it. Calls may come from any thread
/// that maps or unmaps an arena; an implementation must not map or unmap arenas itself.
class ArenaPlacer {
 public:
  virtual ~ArenaPlacer() = default;
  /// [addr, addr + bytes) of arena `name` is mapped with pages of `page_size` bytes and no
  /// page is resident yet.
  virtual void before_touch(const std::string& name, void* addr, std::size_t bytes,
                            std::size_t page_size) = 0;
  /// The same mapping, now pre-faulted.
  virtual void after_touch(const std::string& name, void* addr, std::size_t bytes) = 0;
  /// The mapping at `addr` (as given to before_touch) is about to be unmapped.
  virtual void unmapped(void* addr) noexcept = 0;
};
/// Installs `p` (nullptr: none) for arenas constructed from now on and returns the one it
/// replaces. Waits for placer calls in progress, so after set_arena_placer(nullptr) the old
/// placer may be destroyed. Arenas given an explicit BeforeTouch are placed by their
/// caller (make_tiered_arena) and never reach the placer.
ArenaPlacer* set_arena_placer(ArenaPlacer* p);
/// The installed placer, or nullptr.
ArenaPlacer* arena_placer();

/// A pre-faulted anonymous mapping with a page policy. Move-only; the destructor unmaps.
/// Every constructed arena is listed by report_all() until it is destroyed (or moved
/// from). Construction and destruction may happen on any thread; one Arena object is not
/// itself safe to move or destroy while another thread uses it.
class Arena {
 public:
  Arena() = default;
  /// Called with the fresh mapping (address, mapped bytes) after its page policy is set
  /// and before any page is touched: where a tier backend binds it (memory/tier_backend).
  using BeforeTouch = std::function<void(void*, std::size_t)>;
  /// Maps at least `bytes` bytes, 2 MiB-aligned (hugetlb: aligned to its page size),
  /// writes every page once (so RSS is real and a hugetlb fault cannot SIGBUS later), and
  /// registers the arena. Falls back hugetlb -> thp -> none when a policy cannot be had,
  /// recording why in warning(). Throws tessera::Error if no memory can be mapped at all.
  /// `before_touch`, if given, is called before the pre-fault (once, on this thread).
  Arena(std::string name, std::size_t bytes, PagePolicy requested,
        std::size_t hugepage_size = 2 * kMiB, const BeforeTouch& before_touch = {});
  Arena(std::string name, std::size_t bytes, const ArenaConfig& cfg)
      : Arena(std::move(name), bytes, cfg.policy, cfg.hugepage_size) {}
  ~Arena();
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&& other) noexcept;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* data() const { return addr_; }  ///< nullptr when empty (bytes() == 0)
  std::size_t bytes() const { return bytes_; }
  std::size_t mapped_bytes() const { return mapped_; }
  const std::string& name() const { return name_; }
  /// When the mapping was made (for the lifetime statistics of arena_stats).
  std::chrono::steady_clock::time_point created() const { return created_; }
  PagePolicy requested() const { return requested_; }
  PagePolicy achieved() const { return achieved_; }
  std::size_t hugepage_size() const { return hugepage_size_; }  ///< as in ArenaReport
  const std::string& warning() const { return warning_; }

  /// Reads /proc/self/smaps now. Cost grows with the number of mappings in the process
  /// (milliseconds); call it for reports, not in loops.
  ArenaReport report() const;

  /// The size of the mapping an arena of `bytes` gets under `policy` when that policy is
  /// achieved: what the memory planner charges. 0 for 0.
  static std::size_t mapped_size(std::size_t bytes, PagePolicy policy,
                                 std::size_t hugepage_size = 2 * kMiB);

 private:
  std::string name_;
  void* addr_ = nullptr;
  std::size_t bytes_ = 0, mapped_ = 0;
  std::size_t unmap_bytes_ = 0;  ///< mapped_ plus a trailing PROT_NONE guard page
  std::size_t hugepage_size_ = 0;
  PagePolicy requested_ = PagePolicy::none, achieved_ = PagePolicy::none;
  std::string warning_;
  bool registered_ = false;
  bool placed_ = false;  ///< the arena placer saw the mapping (and is told of its unmapping)
  std::chrono::steady_clock::time_point created_{};  ///< when mapped (lifetime statistics)
  void release() noexcept;
  void take(Arena& other) noexcept;  ///< caller holds the registry lock
};

/// Reports of every live arena, in construction order; one smaps read. Thread-safe.
std::vector<ArenaReport> report_all();

/// Every arena mapped so far in this process, by name (the data objects of the run): how
/// many were mapped, the most bytes live at once, and the seconds they were alive (the
/// live ones counted up to now). Thread-safe; no smaps read.
struct ArenaStats {
  std::string name;
  long count = 0;               ///< arenas mapped under this name
  std::size_t peak_bytes = 0;   ///< most usable bytes live at once
  std::size_t total_bytes = 0;  ///< usable bytes of every mapping, summed
  double seconds = 0;           ///< sum of the mappings' lifetimes
  long live = 0;                ///< mapped now
};
std::vector<ArenaStats> arena_stats();
/// The report of the live arena whose usable range contains `addr`; nullopt if none.
/// One smaps read. Thread-safe.
std::optional<ArenaReport> report_of(const void* addr);

namespace detail {
/// A new Arena(name, bytes, cfg) owned by a process-wide table keyed by its address.
void* arena_allocate(const std::string& name, std::size_t bytes, const ArenaConfig& cfg);
/// Frees the arena arena_allocate returned at p (no-op for nullptr): kept mapped as a
/// spare for the next arena_allocate of its name and policy (at most two spares), else
/// unmapped.
void arena_deallocate(void* p) noexcept;
/// Unmaps the spare arenas.
void release_spare() noexcept;
}  // namespace detail

/// A standard allocator whose every allocation is an Arena of its own (named, with a
/// page policy, pre-faulted, listed by report_all while it lives), for large buffers
/// that come and go: the I/O staging snapshots. Any two ArenaAllocators can free each
/// other's memory (the table finds the arena by address); the name and policy travel
/// with the container on copy and move. Not for small or growing containers: each
/// allocation is an mmap of at least one page.
template <class T>
class ArenaAllocator {
 public:
  using value_type = T;
  using is_always_equal = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;

  ArenaAllocator() : ArenaAllocator("buffer", ArenaConfig{}) {}
  ArenaAllocator(std::string name, const ArenaConfig& cfg)
      : spec_(std::make_shared<const Spec>(Spec{std::move(name), cfg})) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& o) : spec_(o.spec_) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(detail::arena_allocate(spec_->name, n * sizeof(T), spec_->cfg));
  }
  void deallocate(T* p, std::size_t) noexcept { detail::arena_deallocate(p); }
  /// Elements are default-initialised (a vector's resize(n) of doubles leaves them
  /// unset): every user overwrites the whole buffer, and a second pass over a large
  /// snapshot is what the step loop waits for.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }

  const std::string& name() const { return spec_->name; }
  const ArenaConfig& config() const { return spec_->cfg; }

  template <class U>
  bool operator==(const ArenaAllocator<U>&) const {
    return true;
  }

 private:
  template <class U>
  friend class ArenaAllocator;
  struct Spec {
    std::string name;
    ArenaConfig cfg;
  };
  std::shared_ptr<const Spec> spec_;
};

/// A vector whose buffer is one arena (see ArenaAllocator).
template <class T>
using ArenaVector = std::vector<T, ArenaAllocator<T>>;

/// System-wide huge page state from /proc/meminfo (counts are of the default huge page
/// size, Hugepagesize). Sizes in bytes.
struct MemInfo {
  std::size_t hugepages_total = 0, hugepages_free = 0, hugepages_rsvd = 0, hugepages_surp = 0;
  std::size_t hugepagesize = 0;
  std::size_t anon_huge_bytes = 0;  ///< AnonHugePages: THP in use, whole system
  std::size_t hugetlb_bytes = 0;    ///< Hugetlb: pool pages of every size, whole system
  std::size_t mem_total = 0, mem_available = 0;
};
MemInfo read_meminfo();
void to_json(nlohmann::json& j, const MemInfo& m);

/// One hugetlb pool (/sys/kernel/mm/hugepages/hugepages-<N>kB). offered = the kernel
/// has pages of this size; available() = pages a new reserving mmap may take.
struct HugePool {
  std::size_t page_size = 0;
  bool offered = false;
  std::size_t total = 0, free = 0, resv = 0, surplus = 0, overcommit = 0;
  std::size_t available() const {
    const std::size_t unreserved = free > resv ? free - resv : 0;
    return unreserved + (overcommit > surplus ? overcommit - surplus : 0);
  }
};
HugePool read_pool(std::size_t page_size);
/// Huge page sizes this kernel offers, ascending (empty without hugetlb support).
std::vector<std::size_t> offered_hugepage_sizes();
/// The THP size (hpage_pmd_size), 2 MiB if the kernel does not say.
std::size_t thp_size();
/// "2 MiB", "1 GiB", "64 KiB": a page size in words.
std::string page_size_text(std::size_t bytes);

/// Peak resident set of this process (VmHWM), bytes; 0 if /proc is unreadable.
std::size_t peak_rss_bytes();
/// Current resident set of this process (VmRSS), bytes; 0 if /proc is unreadable.
std::size_t current_rss_bytes();

/// Declare memory.* parameters: memory.pages, memory.hugepage_size and the per-arena
/// overrides memory.pages_unk, memory.pages_flux, memory.pages_scratch,
/// memory.pages_staging, memory.pages_particles; and memory.tier.* (declare_tier_params).
void declare_params(base::Params& p);
/// The configuration of arena `arena_name`: memory.pages_<name> if that key is declared
/// and not empty, else memory.pages; memory.hugepage_size. Throws tessera::Error for a
/// bad policy or a size that does not parse, and, when the policy is hugetlb, for a size
/// this kernel does not offer. Without memory.* declared (some unit tests) it returns
/// ArenaConfig{} (none).
ArenaConfig config_for(const base::Params& p, const std::string& arena_name);
/// config_for every arena that has an override key, and tier_config, so a bad value stops
/// the run before it starts.
void check_params(const base::Params& p);

}  // namespace tessera::memory

// Specification of memory arenas (memory/arena.hpp): an arena gets the page policy it
// asks for or says why not, what it got is read back from /proc/self/smaps, its pages
// are resident from the start, and the registry lists exactly the arenas alive now.
//
// The hugetlb tests with a pool reserve one by writing
// /sys/kernel/mm/hugepages/hugepages-<N>kB/nr_hugepages (root) and restore the old
// count afterwards; without permission they are skipped, saying so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "memory/arena.hpp"
#include "mesh/block_storage.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::memory {
namespace {

using tessera::testing_util::contains;
using tessera::testing_util::error_of;

std::string thp_enabled() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto a = t.find('['), b = t.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : t.substr(a + 1, b - a - 1);
}

bool has_vm_flag(const std::string& flags, const std::string& f) {
  return (" " + flags + " ").find(" " + f + " ") != std::string::npos;
}

// Writes a distinct value into every 4 KiB page and reads all of them back.
bool usable(const Arena& a) {
  auto* p = static_cast<std::uint64_t*>(a.data());
  const std::size_t step = 4096 / sizeof(std::uint64_t);
  const std::size_t n = a.bytes() / sizeof(std::uint64_t);
  for (std::size_t i = 0; i < n; i += step) p[i] = i * 2654435761u + 1;
  for (std::size_t i = 0; i < n; i += step)
    if (p[i] != i * 2654435761u + 1) return false;
  return true;
}

// ctest -j runs tests as separate processes: tests that read or change the hugetlb pool
// hold this lock, so one test's restore cannot pull the pool from under another.
class PoolLock {
 public:
  PoolLock() : fd_(::open("/tmp/tessera_test_hugepages.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0666)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~PoolLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  PoolLock(const PoolLock&) = delete;
  PoolLock& operator=(const PoolLock&) = delete;

 private:
  int fd_;
};

// Reserves `extra` more pages of `page_size` in the hugetlb pool for the lifetime of the
// object; ok() is false (with why()) when that is not possible here.
class PoolReservation {
 public:
  PoolReservation(std::size_t page_size, std::size_t extra)
      : path_("/sys/kernel/mm/hugepages/hugepages-" + std::to_string(page_size / 1024) +
              "kB/nr_hugepages") {
    const HugePool before = read_pool(page_size);
    if (!before.offered) {
      why_ = "this kernel offers no " + page_size_text(page_size) + " pages";
      return;
    }
    old_ = before.total;
    if (!write(old_ + extra)) {
      why_ = "cannot write " + path_ + " (" + std::strerror(errno) + "; needs root)";
      return;
    }
    written_ = true;
    const HugePool after = read_pool(page_size);
    if (after.available() < extra) {
      why_ = "asked the kernel for " + std::to_string(extra) + " more " +
             page_size_text(page_size) + " pages, pool has " + std::to_string(after.available()) +
             " available (memory too fragmented?)";
      return;
    }
    ok_ = true;
  }
  ~PoolReservation() {
    if (written_) write(old_);
  }
  PoolReservation(const PoolReservation&) = delete;
  PoolReservation& operator=(const PoolReservation&) = delete;
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }

 private:
  bool write(std::size_t n) {
    std::ofstream out(path_);
    if (!out) return false;
    out << n << '\n';
    out.flush();
    return static_cast<bool>(out);
  }
  std::string path_;
  std::size_t old_ = 0;
  PoolLock lock_;  // held from before the constructor reads the pool to after the restore
  bool written_ = false, ok_ = false;
  std::string why_;
};

std::size_t count_named(const std::vector<ArenaReport>& rs, const std::string& name) {
  return std::count_if(rs.begin(), rs.end(), [&](const ArenaReport& r) { return r.name == name; });
}

bool aligned(const void* p, std::size_t a) {
  return reinterpret_cast<std::uintptr_t>(p) % a == 0;
}

// ---------------------------------------------------------------------------------------

TEST(PagePolicy, NamesRoundTripAndABadNameListsTheChoices) {
  for (PagePolicy p : {PagePolicy::none, PagePolicy::thp, PagePolicy::hugetlb})
    EXPECT_EQ(parse_policy(to_string(p)), p);
  const std::string e = error_of([] { parse_policy("huge"); });
  EXPECT_TRUE(contains(e, "'huge'"));
  EXPECT_TRUE(contains(e, "none, thp, hugetlb"));
  EXPECT_TRUE(contains(error_of([] { parse_policy(""); }), "''"));
  EXPECT_TRUE(contains(error_of([] { parse_policy("THP"); }), "not a page policy"));
}

// Given arenas mapped and released under one name, then arena_stats counts the mappings,
// the most bytes live at once (not their sum over time), the live ones, and a lifetime.
TEST(Arena, StatisticsCountMappingsPeakLiveBytesAndLifetimes) {
  const std::string name = "stats_test_arena";
  auto find = [&] {
    for (const auto& s : arena_stats())
      if (s.name == name) return s;
    return ArenaStats{};
  };
  {
    Arena a(name, 3 * kMiB, PagePolicy::none);
    {
      Arena b(name, 5 * kMiB, PagePolicy::none);
      EXPECT_EQ(find().live, 2);
      EXPECT_EQ(find().peak_bytes, 8 * kMiB);
    }
    Arena c(name, 1 * kMiB, PagePolicy::none);  // 4 MiB live: the peak stays 8
    EXPECT_EQ(find().count, 3);
    EXPECT_EQ(find().peak_bytes, 8 * kMiB);
  }
  const auto s = find();
  EXPECT_EQ(s.live, 0);
  EXPECT_EQ(s.total_bytes, 9 * kMiB);
  EXPECT_GT(s.seconds, 0.0);
}

TEST(Arena, GivenThpWhenTouchedThenAtLeast90PercentIsBackedByHugePages) {
  const std::string mode = thp_enabled();
  if (mode != "always" && mode != "madvise")
    GTEST_SKIP() << "transparent huge pages are '" << mode << "' on this machine";
  const std::size_t bytes = 64 * kMiB;
  Arena a("test_thp", bytes, PagePolicy::thp);
  EXPECT_EQ(a.achieved(), PagePolicy::thp);
  EXPECT_EQ(a.warning(), "");
  EXPECT_TRUE(aligned(a.data(), 2 * kMiB));
  EXPECT_EQ(a.mapped_bytes(), Arena::mapped_size(bytes, PagePolicy::thp));
  const ArenaReport r = a.report();
  RecordProperty("thp_huge_bytes", std::to_string(r.huge_bytes));
  std::cout << "[ info ] thp arena: bytes " << r.bytes << ", huge_bytes " << r.huge_bytes
            << ", rss " << r.rss_bytes << ", VmFlags " << r.vm_flags << "\n";
  EXPECT_GE(double(r.huge_bytes), 0.9 * double(bytes));
  EXPECT_LE(r.huge_bytes, r.mapped_bytes);
  EXPECT_TRUE(has_vm_flag(r.vm_flags, "hg")) << r.vm_flags;
  EXPECT_EQ(r.hugepage_size, thp_size());
  EXPECT_TRUE(usable(a));
}

TEST(Arena, GivenNoneThenNoHugePagesAndEveryPageIsAlreadyResident) {
  const std::size_t bytes = 64 * kMiB + 12345;
  const std::size_t rss0 = current_rss_bytes();
  Arena a("test_none", bytes, PagePolicy::none);
  const std::size_t rss1 = current_rss_bytes();
  EXPECT_EQ(a.achieved(), PagePolicy::none);
  EXPECT_EQ(a.warning(), "");
  EXPECT_TRUE(aligned(a.data(), 2 * kMiB));
  EXPECT_EQ(a.mapped_bytes() % 4096, 0u);
  EXPECT_GE(a.mapped_bytes(), bytes);
  EXPECT_LT(a.mapped_bytes(), bytes + 4096);
  const ArenaReport r = a.report();
  std::cout << "[ info ] none arena: bytes " << r.bytes << ", huge_bytes " << r.huge_bytes
            << ", rss " << r.rss_bytes << ", VmFlags " << r.vm_flags << "\n";
  EXPECT_EQ(r.huge_bytes, 0u);
  EXPECT_TRUE(has_vm_flag(r.vm_flags, "nh")) << r.vm_flags;
  // Pre-faulted in the constructor: resident before anyone touched it.
  EXPECT_EQ(r.rss_bytes, a.mapped_bytes());
  EXPECT_GE(rss1, rss0 + bytes - kMiB);
  EXPECT_TRUE(usable(a));
}

TEST(Arena, GivenHugetlbWithAnEmptyPoolThenItFallsBackSaysWhyAndIsUsable) {
  PoolLock lock;
  const HugePool pool = read_pool(2 * kMiB);
  if (!pool.offered) GTEST_SKIP() << "no 2 MiB hugetlb pages on this kernel";
  if (pool.available() > 256)
    GTEST_SKIP() << "the 2 MiB pool has " << pool.available()
                 << " pages available; an empty pool cannot be arranged";
  const std::size_t need = pool.available() + 12;  // more than the pool can give
  const std::size_t bytes = need * 2 * kMiB;
  Arena a("test_hugetlb_empty", bytes, PagePolicy::hugetlb);
  EXPECT_NE(a.achieved(), PagePolicy::hugetlb);
  EXPECT_FALSE(a.warning().empty());
  std::cout << "[ info ] warning: " << a.warning() << "\n";
  EXPECT_TRUE(contains(a.warning(), "hugetlb: pool has " + std::to_string(pool.available()) +
                                        " free 2 MiB pages, need " + std::to_string(need)));
  EXPECT_TRUE(contains(a.warning(), "fell back to " + to_string(a.achieved())));
  EXPECT_EQ(a.warning().find('\n'), std::string::npos);
  const ArenaReport r = a.report();
  EXPECT_EQ(r.policy_requested, PagePolicy::hugetlb);
  EXPECT_EQ(r.policy_achieved, a.achieved());
  EXPECT_EQ(r.warning, a.warning());
  std::cout << "[ info ] hugetlb (empty pool) arena: achieved " << to_string(r.policy_achieved)
            << ", huge_bytes " << r.huge_bytes << " of " << r.mapped_bytes << "\n";
  EXPECT_TRUE(usable(a));
}

TEST(Arena, GivenOneGiBPagesThatCannotBeHadThenTheWarningNamesThePageSize) {
  PoolLock lock;
  const HugePool pool = read_pool(kGiB);
  if (pool.offered && pool.available() > 0) GTEST_SKIP() << "1 GiB pool has pages available";
  Arena a("test_hugetlb_1g", 4 * kMiB, PagePolicy::hugetlb, kGiB);
  EXPECT_NE(a.achieved(), PagePolicy::hugetlb);
  EXPECT_TRUE(contains(a.warning(), "1 GiB")) << a.warning();
  EXPECT_TRUE(usable(a));
}

TEST(Arena, GivenAReservedPoolThenHugetlbIsAchievedAndTheWholeMappingIsHuge) {
  const std::size_t need = 12;
  PoolReservation res(2 * kMiB, need);
  if (!res.ok()) GTEST_SKIP() << res.why();
  const std::size_t bytes = need * 2 * kMiB - 100;
  const MemInfo before = read_meminfo();
  {
    Arena a("test_hugetlb", bytes, PagePolicy::hugetlb, 2 * kMiB);
    EXPECT_EQ(a.achieved(), PagePolicy::hugetlb);
    EXPECT_EQ(a.warning(), "");
    EXPECT_EQ(a.mapped_bytes(), need * 2 * kMiB);
    EXPECT_EQ(a.mapped_bytes(), Arena::mapped_size(bytes, PagePolicy::hugetlb, 2 * kMiB));
    EXPECT_TRUE(aligned(a.data(), 2 * kMiB));
    const ArenaReport r = a.report();
    std::cout << "[ info ] hugetlb arena: mapped " << r.mapped_bytes << ", huge_bytes "
              << r.huge_bytes << ", VmFlags " << r.vm_flags << "\n";
    EXPECT_EQ(r.huge_bytes, r.mapped_bytes);
    EXPECT_EQ(r.rss_bytes, r.mapped_bytes);
    EXPECT_EQ(r.hugepage_size, 2 * kMiB);
    EXPECT_TRUE(has_vm_flag(r.vm_flags, "ht")) << r.vm_flags;
    // Pre-faulted: the pages are taken from the pool, not merely reserved.
    const MemInfo during = read_meminfo();
    if (before.hugepagesize == 2 * kMiB) {
      EXPECT_GE(during.hugepages_total, need);
      EXPECT_LE(during.hugepages_free + need, before.hugepages_free)
          << "free " << before.hugepages_free << " -> " << during.hugepages_free;
    }
    EXPECT_TRUE(usable(a));
  }
}

TEST(Arena, GivenAReservedOneGiBPoolThenOneGiBPagesBackIt) {
  PoolReservation res(kGiB, 1);
  if (!res.ok()) GTEST_SKIP() << res.why();
  Arena a("test_hugetlb_1g_pool", 3 * kMiB, PagePolicy::hugetlb, kGiB);
  EXPECT_EQ(a.achieved(), PagePolicy::hugetlb) << a.warning();
  EXPECT_EQ(a.mapped_bytes(), kGiB);
  EXPECT_TRUE(aligned(a.data(), kGiB));
  EXPECT_EQ(a.report().huge_bytes, kGiB);
  EXPECT_TRUE(usable(a));
}

TEST(Arena, RegistryListsLiveArenasOnlyAndFollowsMoves) {
  auto listed = [](const std::string& n) { return count_named(report_all(), n); };
  {
    Arena a("reg_a", kMiB, PagePolicy::none);
    EXPECT_EQ(listed("reg_a"), 1u);
    EXPECT_EQ(listed("reg_b"), 0u);
    Arena b("reg_b", 3 * kMiB, PagePolicy::none);
    EXPECT_EQ(listed("reg_a"), 1u);
    EXPECT_EQ(listed("reg_b"), 1u);
    void* const p = b.data();
    Arena c(std::move(b));  // the moved-from arena is no longer listed; c is, once
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(b.bytes(), 0u);
    EXPECT_EQ(c.data(), p);
    EXPECT_EQ(listed("reg_b"), 1u);
    a = std::move(c);  // a's old mapping goes away, a now holds reg_b
    EXPECT_EQ(listed("reg_a"), 0u);
    EXPECT_EQ(listed("reg_b"), 1u);
    EXPECT_EQ(a.name(), "reg_b");
    EXPECT_EQ(a.data(), p);
    EXPECT_EQ(a.bytes(), 3 * kMiB);
    const auto all = report_all();
    const auto it = std::find_if(all.begin(), all.end(),
                                 [](const ArenaReport& r) { return r.name == "reg_b"; });
    ASSERT_NE(it, all.end());
    EXPECT_EQ(it->bytes, 3 * kMiB);
    EXPECT_EQ(it->rss_bytes, 3 * kMiB);
  }
  EXPECT_EQ(listed("reg_a"), 0u);
  EXPECT_EQ(listed("reg_b"), 0u);
}

TEST(Arena, AnArenaMadeOnAnotherThreadIsListedWhileItLives) {
  Arena made;
  std::thread t([&] { made = Arena("reg_io_thread", 2 * kMiB, PagePolicy::none); });
  t.join();
  EXPECT_EQ(count_named(report_all(), "reg_io_thread"), 1u);
  made = Arena();
  EXPECT_EQ(count_named(report_all(), "reg_io_thread"), 0u);
}

TEST(Arena, AnEmptyArenaHasNoMappingButIsListed) {
  Arena a("reg_empty", 0, PagePolicy::thp);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.mapped_bytes(), 0u);
  const auto r = a.report();
  EXPECT_EQ(r.huge_bytes, 0u);
  EXPECT_EQ(count_named(report_all(), "reg_empty"), 1u);
}

TEST(Arena, ReportJsonHasTheDocumentedKeys) {
  Arena a("test_json", kMiB, PagePolicy::none);
  const nlohmann::json j = to_json(a.report());
  for (const char* k : {"name", "bytes", "policy_requested", "policy_achieved", "huge_bytes"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["name"], "test_json");
  EXPECT_EQ(j["bytes"], kMiB);
  EXPECT_EQ(j["policy_requested"], "none");
  EXPECT_EQ(j["policy_achieved"], "none");
  EXPECT_EQ(j["huge_bytes"], 0u);
  const nlohmann::json all = report_all();  // through nlohmann's conversion
  int named = 0;
  for (const auto& e : all) named += e.at("name") == "test_json";
  EXPECT_EQ(named, 1);
}

// ArenaVector: each buffer is an arena of its own, listed while it lives, found by
// report_of from any address inside it, gone when the vector frees it; the name and
// policy travel with moves.
TEST(ArenaAllocator, EachBufferIsANamedArenaThatReportOfFindsAndFreeingRemoves) {
  const std::size_t n = (3 * kMiB) / sizeof(double);
  ArenaVector<double> v(ArenaAllocator<double>("alloc_stage", ArenaConfig{PagePolicy::none}));
  v.resize(n, 1.5);
  EXPECT_EQ(count_named(report_all(), "alloc_stage"), 1u);
  const auto r = report_of(v.data() + n / 2);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->name, "alloc_stage");
  EXPECT_EQ(r->bytes, n * sizeof(double));
  EXPECT_EQ(r->policy_requested, PagePolicy::none);
  EXPECT_EQ(r->rss_bytes, r->mapped_bytes);  // pre-faulted
  EXPECT_FALSE(report_of(&n).has_value());   // a stack address is in no arena

  ArenaVector<double> w(n, 0.0, v.get_allocator());  // same name and policy
  EXPECT_EQ(count_named(report_all(), "alloc_stage"), 2u);
  const void* old = v.data();
  v = std::move(w);  // v's old buffer is freed (kept as a spare, still mapped); w's moves over
  EXPECT_EQ(count_named(report_all(), "alloc_stage"), 2u);
  EXPECT_EQ(v.get_allocator().name(), "alloc_stage");
  // The next buffer of that name, policy and size is the spare: no new mapping.
  ArenaVector<double> x(n, v.get_allocator());
  EXPECT_EQ(static_cast<const void*>(x.data()), old);
  EXPECT_EQ(count_named(report_all(), "alloc_stage"), 2u);
  // A size no spare fits unmaps the spares first.
  x = ArenaVector<double>(v.get_allocator());  // x's buffer becomes the spare
  ArenaVector<double> big(4 * n, v.get_allocator());
  EXPECT_EQ(count_named(report_all(), "alloc_stage"), 2u);  // v and big
  big = ArenaVector<double>(v.get_allocator());
  v.clear();
  v.shrink_to_fit();
  tessera::memory::detail::release_spare();
  EXPECT_EQ(count_named(report_all(), "alloc_stage"), 0u);
}

TEST(ArenaAllocator, ThpBufferIsBackedByHugePages) {
  if (thp_enabled() != "madvise" && thp_enabled() != "always") GTEST_SKIP() << "THP is off";
  ArenaVector<double> v(ArenaAllocator<double>("alloc_thp", ArenaConfig{PagePolicy::thp}));
  v.resize(4 * kMiB / sizeof(double));
  const auto r = report_of(v.data());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->policy_achieved, PagePolicy::thp);
  EXPECT_GE(double(r->huge_bytes), 0.9 * double(r->bytes));
}

TEST(MemInfo, ReadsHugePageStateAndOurOwnResidentSet) {
  const MemInfo m = read_meminfo();
  EXPECT_GT(m.mem_total, 0u);
  EXPECT_GT(m.hugepagesize, 0u);
  EXPECT_EQ(m.hugepagesize % 4096, 0u);
  EXPECT_LE(m.hugepages_free, m.hugepages_total);
  const std::size_t now = current_rss_bytes(), peak = peak_rss_bytes();
  EXPECT_GT(now, 0u);
  EXPECT_GE(peak, now);
  const nlohmann::json j = m;
  EXPECT_TRUE(j.contains("hugepages_total"));
}

TEST(MemInfo, OfferedSizesIncludeTheDefaultHugePageSize) {
  const auto sizes = offered_hugepage_sizes();
  const MemInfo m = read_meminfo();
  if (sizes.empty()) GTEST_SKIP() << "no hugetlb support";
  EXPECT_NE(std::find(sizes.begin(), sizes.end(), m.hugepagesize), sizes.end());
  EXPECT_TRUE(std::is_sorted(sizes.begin(), sizes.end()));
  EXPECT_EQ(page_size_text(2 * kMiB), "2 MiB");
  EXPECT_EQ(page_size_text(kGiB), "1 GiB");
}

TEST(BlockStorageArena, BlockStorageLivesInAnArenaNamedUnkWithTheRequestedPolicy) {
  mesh::BlockShape s;
  s.ndim = 3;
  s.nx = 8;
  s.ng = 2;
  s.nvar = 5;
  const int maxblocks = 40;  // 40 * 12^3 * 5 * 8 B = 2.6 MiB
  const std::size_t unk_before = count_named(report_all(), "unk");
  mesh::BlockStorage st(s, maxblocks, 0, ArenaConfig{PagePolicy::none, 2 * kMiB});
  EXPECT_EQ(st.arena().name(), "unk");
  EXPECT_EQ(st.arena().bytes(), st.bytes());
  EXPECT_EQ(st.arena().achieved(), PagePolicy::none);
  EXPECT_EQ(static_cast<const void*>(st.data(0)), st.arena().data());
  EXPECT_TRUE(aligned(st.data(0), 2 * kMiB));
  EXPECT_EQ(count_named(report_all(), "unk"), unk_before + 1);
  // Every slot lies inside the arena and comes back zeroed after a previous user.
  std::vector<int> slots;
  for (int b = 0; b < maxblocks; ++b) slots.push_back(st.acquire());
  EXPECT_THROW(st.acquire(), Error);
  const auto* lo = static_cast<const char*>(st.arena().data());
  for (int b : slots) {
    const auto* p = reinterpret_cast<const char*>(st.data(b));
    EXPECT_GE(p, lo);
    EXPECT_LE(p + s.doubles() * sizeof(double), lo + st.arena().bytes());
  }
  st.data(slots[3])[17] = 42.0;
  st.release(slots[3]);
  const int again = st.acquire();
  EXPECT_EQ(again, slots[3]);
  EXPECT_EQ(st.data(again)[17], 0.0);

  mesh::BlockStorage moved;
  moved = std::move(st);  // as Mesh does: storage_ = BlockStorage(...)
  EXPECT_EQ(count_named(report_all(), "unk"), unk_before + 1);
  EXPECT_EQ(moved.arena().bytes(), std::size_t(maxblocks) * s.doubles() * sizeof(double));
}

TEST(BlockStorageArena, ThpBlockStorageIsBackedByHugePages) {
  const std::string mode = thp_enabled();
  if (mode != "always" && mode != "madvise")
    GTEST_SKIP() << "transparent huge pages are '" << mode << "' on this machine";
  mesh::BlockShape s;  // 16^3 + 2 guards, 5 variables: 0.4 MiB per block
  s.nvar = 5;
  mesh::BlockStorage st(s, 100, 0, ArenaConfig{PagePolicy::thp, 2 * kMiB});
  const ArenaReport r = st.arena().report();
  EXPECT_EQ(r.policy_achieved, PagePolicy::thp);
  EXPECT_GE(double(r.huge_bytes), 0.9 * double(st.bytes()));
}

// ---------------------------------------------------------------------------------------
// Parameters

class MemoryParams : public ::testing::Test {
 protected:
  void SetUp() override { declare_params(p); }
  base::Params p;
};

TEST_F(MemoryParams, DefaultsAreThp2MiBAndOverridesFollowMemoryPages) {
  EXPECT_EQ(p.get_string("memory.pages"), "thp");
  for (const char* a : {"unk", "flux", "scratch", "staging"}) {
    const ArenaConfig c = config_for(p, a);
    EXPECT_EQ(c.policy, PagePolicy::thp) << a;
    EXPECT_EQ(c.hugepage_size, 2 * kMiB);
  }
  p.apply_override("memory.pages=none");
  p.apply_override("memory.pages_unk=hugetlb");
  EXPECT_EQ(config_for(p, "unk").policy, PagePolicy::hugetlb);
  EXPECT_EQ(config_for(p, "scratch").policy, PagePolicy::none);
  EXPECT_EQ(config_for(p, "staging").policy, PagePolicy::none);
  p.apply_override("memory.pages_flux=thp");
  EXPECT_EQ(config_for(p, "flux").policy, PagePolicy::thp);
  EXPECT_EQ(config_for(p, "unk").policy, PagePolicy::hugetlb);
  EXPECT_NO_THROW(check_params(p));
}

TEST_F(MemoryParams, ABadPolicyIsRejectedNamingTheKey) {
  EXPECT_THROW(p.apply_override("memory.pages=huge"), Error);
  p.apply_override("memory.pages_scratch=huge");
  const std::string e = error_of([&] { config_for(p, "scratch"); });
  EXPECT_TRUE(contains(e, "memory.pages_scratch"));
  EXPECT_TRUE(contains(e, "'huge'"));
  EXPECT_THROW(check_params(p), Error);
}

TEST_F(MemoryParams, HugePageSizeIsParsedAndCheckedAgainstTheKernel) {
  p.apply_override("memory.pages=hugetlb");
  p.apply_override("memory.hugepage_size=2MiB");
  EXPECT_EQ(config_for(p, "unk").hugepage_size, 2 * kMiB);
  p.apply_override("memory.hugepage_size=potato");
  EXPECT_TRUE(contains(error_of([&] { config_for(p, "unk"); }), "memory.hugepage_size"));
  p.apply_override("memory.hugepage_size=3M");
  EXPECT_TRUE(contains(error_of([&] { config_for(p, "unk"); }), "not a page size"));
  const auto offered = offered_hugepage_sizes();
  if (offered.empty()) GTEST_SKIP() << "no hugetlb support: sizes cannot be checked";
  p.apply_override("memory.hugepage_size=1G");
  if (std::find(offered.begin(), offered.end(), kGiB) != offered.end())
    EXPECT_EQ(config_for(p, "unk").hugepage_size, kGiB);
  else
    EXPECT_TRUE(contains(error_of([&] { config_for(p, "unk"); }), "offered"));
  // 128 GiB pages exist nowhere: an error with hugetlb, ignored with other policies.
  p.apply_override("memory.hugepage_size=128G");
  EXPECT_TRUE(contains(error_of([&] { config_for(p, "unk"); }), "offered: "));
  p.apply_override("memory.pages=thp");
  EXPECT_EQ(config_for(p, "unk").policy, PagePolicy::thp);
}

TEST(MemoryParamsUndeclared, ConfigForWithoutMemoryParametersIsNone) {
  base::Params p;
  const ArenaConfig c = config_for(p, "unk");
  EXPECT_EQ(c.policy, PagePolicy::none);
}

}  // namespace
}  // namespace tessera::memory

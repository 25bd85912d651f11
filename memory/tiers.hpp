#pragma once
// Memory tiers as Linux exposes them: which NUMA nodes hold memory and which have CPUs,
// the kernel's memory tiers (kernel >= 6.1; smaller tier number = faster), SLIT
// distances, HMAT access attributes where firmware provides them, and whether the kernel
// itself moves pages (demotion, NUMA balancing) behind a runtime that places data.
//
// The fast/slow choice (rule of reference/tiered-memory.md, "Tiers on Linux today"):
// fast = the nodes with memory and CPUs in the lowest tier that has a node with CPUs;
// slow = every other node with memory (CPU-less expanders: CXL, persistent memory; nodes
// of a slower tier). Without tier files all nodes count as one tier, so the rule reduces
// to CPUs vs CPU-less. Each set is ordered nearest first by SLIT distance from the fast
// nodes (ties broken by node number). Two sockets of plain DRAM are two fast nodes and
// no slow tier: a remote socket is a placement mistake, not a tier.
//
// Everything is read under a root directory so that tests can point the reader at a fake
// sysfs tree (root + "sys/devices/system/node/...").
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tessera::memory {

/// The two tiers a placement chooses between.
enum class Tier { fast, slow };
/// "fast" | "slow".
const char* to_string(Tier t);

/// What an allocation holds, in the order static placement serves them (metadata first:
/// long-lived and hot; particles last: the largest and streamed batch by batch).
enum class ObjectClass { metadata, temporary, field, particle };
inline constexpr int kObjectClasses = 4;
/// "metadata" | "temporary" | "field" | "particle".
const char* to_string(ObjectClass c);
/// The class of one of Tessera's arenas, by name (the study's characterisation applied to
/// its own data): unk and rk_stage hold fields; particles particles; flux, scratch, the
/// I/O staging buffers and the tier streamer's batch slots ("migration") are temporaries
/// (rewritten every step or every output); anything else is metadata.
ObjectClass object_class_of_arena(const std::string& name);

/// One NUMA node with memory.
struct NumaNode {
  int id = 0;
  bool has_cpu = false;
  std::size_t mem_total = 0;  ///< bytes (nodeN/meminfo MemTotal)
  int tier = -1;              ///< memory_tierN that lists it; -1 when the kernel has no tiers
  std::vector<int> distance;  ///< SLIT row (nodeN/distance), indexed by node id; may be empty
  /// HMAT attributes of the best initiator (nodeN/access0/initiators): bytes/s and seconds;
  /// 0 where firmware gives none. Rated by firmware, not measured.
  double read_bw = 0, write_bw = 0, read_latency = 0, write_latency = 0;
};

/// What detect_tiers found, and the fast and slow node sets chosen from it.
struct TierTopology {
  std::string root = "/";       ///< the tree that was read
  std::vector<NumaNode> nodes;  ///< nodes with memory, ascending id
  std::vector<int> fast_nodes;  ///< nearest first; empty only if no node was readable
  std::vector<int> slow_nodes;  ///< nearest first; empty: no slow tier on this machine
  bool tiers_present = false;   ///< /sys/devices/virtual/memory_tiering exists
  bool hmat_present = false;    ///< some node has access0 attributes
  int demotion_enabled = -1;    ///< /sys/kernel/mm/numa/demotion_enabled: 1, 0, -1 unknown
  int numa_balancing = -1;      ///< /proc/sys/kernel/numa_balancing: 0 off, 1 normal, 2
                                ///< memory tiering (promotion), -1 unknown
  std::string reason;           ///< why the sets are what they are (one clause)

  bool has_slow_tier() const { return !slow_nodes.empty(); }
  const NumaNode* node(int id) const;                       ///< nullptr if `id` has no memory
  std::size_t bytes_of(const std::vector<int>& ids) const;  ///< summed mem_total
  /// One line: nodes (memory, CPUs, tier), tiers, HMAT, the sets chosen and why, and the
  /// kernel's own page movers (a warning clause when demotion or balancing is on).
  std::string describe() const;
  /// Warnings a runtime that places data itself should log (demotion, NUMA balancing);
  /// empty when the kernel leaves pages alone.
  std::vector<std::string> warnings() const;
};

/// Reads the topology under `root` ("/" for this machine; a fake tree in tests). Never
/// throws: what is missing is reported as absent (a tree without node files gives one
/// node 0 with MemTotal from root/proc/meminfo, CPUs assumed).
TierTopology detect_tiers(const std::string& root = "/");

/// "0-2,5" -> {0,1,2,5}; empty or malformed text -> {}.
std::vector<int> parse_node_list(const std::string& text);
/// {0,1,2,5} -> "0-2,5".
std::string node_list_text(const std::vector<int>& ids);

void to_json(nlohmann::json& j, const TierTopology& t);

}  // namespace tessera::memory

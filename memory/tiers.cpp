#include "memory/tiers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/size.hpp"
#include "base/text.hpp"

namespace tessera::memory {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  return read_text_file(path.string());
}

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// First number in the file; `fallback` if there is none.
double read_number(const fs::path& path, double fallback) {
  const std::string t = read_text(path);
  std::size_t pos = 0;
  while (pos < t.size() && (t[pos] == ' ' || t[pos] == '\n')) ++pos;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(t.data() + pos, t.data() + t.size(), v);
  return ec == std::errc() && ptr != t.data() + pos ? v : fallback;
}

std::vector<int> parse_ints(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  int v = 0;
  while (in >> v) out.push_back(v);
  return out;
}

// "Node 0 MemTotal:  15952076 kB" -> bytes; also the plain /proc/meminfo form.
std::size_t mem_total_of(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    const auto k = line.find("MemTotal:");
    if (k == std::string::npos) continue;
    std::istringstream rest(line.substr(k + 9));
    std::size_t v = 0;
    std::string unit;
    rest >> v >> unit;
    return unit == "kB" ? v * 1024 : v;
  }
  return 0;
}

int nearest_distance(const NumaNode& n, const std::vector<int>& from) {
  int best = INT_MAX;
  for (int f : from)
    if (f >= 0 && std::size_t(f) < n.distance.size()) best = std::min(best, n.distance[f]);
  return best;
}

}  // namespace

const char* to_string(Tier t) {
  return t == Tier::fast ? "fast" : "slow";
}

ObjectClass object_class_of_arena(const std::string& name) {
  if (name == "unk" || name == "rk_stage") return ObjectClass::field;
  if (name == "particles") return ObjectClass::particle;
  if (name == "flux" || name == "scratch" || name == "staging" || name == "buffer" ||
      name == "migration")
    return ObjectClass::temporary;
  return ObjectClass::metadata;
}

const char* to_string(ObjectClass c) {
  switch (c) {
    case ObjectClass::metadata:
      return "metadata";
    case ObjectClass::temporary:
      return "temporary";
    case ObjectClass::field:
      return "field";
    case ObjectClass::particle:
      return "particle";
  }
  return "?";
}

std::vector<int> parse_node_list(const std::string& text) {
  std::vector<int> out;
  std::string t;
  for (char c : text)
    if (c != '\n' && c != ' ') t += c;
  std::istringstream in(t);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    int a = 0, b = 0;
    const char* s = part.data();
    const char* e = s + part.size();
    if (dash == std::string::npos) {
      if (std::from_chars(s, e, a).ec != std::errc()) return {};
      b = a;
    } else {
      if (std::from_chars(s, s + dash, a).ec != std::errc() ||
          std::from_chars(s + dash + 1, e, b).ec != std::errc() || b < a)
        return {};
    }
    for (int i = a; i <= b; ++i) out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string node_list_text(const std::vector<int>& ids) {
  std::vector<int> v = ids;
  std::sort(v.begin(), v.end());
  std::string out;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(v[i]) : fmt::format("{}-{}", v[i], v[j]);
    i = j + 1;
  }
  return out;
}

const NumaNode* TierTopology::node(int id) const {
  for (const auto& n : nodes)
    if (n.id == id) return &n;
  return nullptr;
}

std::size_t TierTopology::bytes_of(const std::vector<int>& ids) const {
  std::size_t s = 0;
  for (int id : ids)
    if (const NumaNode* n = node(id)) s += n->mem_total;
  return s;
}

TierTopology detect_tiers(const std::string& root_text) {
  TierTopology t;
  t.root = root_text.empty() ? "/" : root_text;
  const fs::path root(t.root);
  const fs::path node_dir = root / "sys/devices/system/node";

  std::vector<int> mem = parse_node_list(read_text(node_dir / "has_memory"));
  const std::vector<int> cpu = parse_node_list(read_text(node_dir / "has_cpu"));
  if (mem.empty()) {
    // Kernels without CONFIG_NUMA have no node directory: one node, everything local.
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(node_dir, ec)) {
      const std::string name = e.path().filename().string();
      int id = 0;
      if (name.rfind("node", 0) == 0 &&
          std::from_chars(name.data() + 4, name.data() + name.size(), id).ec == std::errc())
        mem.push_back(id);
    }
    std::sort(mem.begin(), mem.end());
  }
  const bool no_node_files = mem.empty();
  if (no_node_files) mem.push_back(0);

  for (int id : mem) {
    NumaNode n;
    n.id = id;
    const fs::path d = node_dir / ("node" + std::to_string(id));
    n.has_cpu = no_node_files || std::find(cpu.begin(), cpu.end(), id) != cpu.end();
    n.mem_total = mem_total_of(read_text(d / "meminfo"));
    if (n.mem_total == 0 && no_node_files)
      n.mem_total = mem_total_of(read_text(root / "proc/meminfo"));
    n.distance = parse_ints(read_text(d / "distance"));
    const fs::path hmat = d / "access0/initiators";
    // sysfs gives MB/s and ns.
    n.read_bw = read_number(hmat / "read_bandwidth", 0) * 1e6;
    n.write_bw = read_number(hmat / "write_bandwidth", 0) * 1e6;
    n.read_latency = read_number(hmat / "read_latency", 0) * 1e-9;
    n.write_latency = read_number(hmat / "write_latency", 0) * 1e-9;
    if (n.read_bw > 0 || n.read_latency > 0) t.hmat_present = true;
    t.nodes.push_back(std::move(n));
  }

  const fs::path tier_dir = root / "sys/devices/virtual/memory_tiering";
  t.tiers_present = path_exists(tier_dir);
  if (t.tiers_present) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tier_dir, ec)) {
      const std::string name = e.path().filename().string();
      int tier = 0;
      if (name.rfind("memory_tier", 0) != 0 ||
          std::from_chars(name.data() + 11, name.data() + name.size(), tier).ec != std::errc())
        continue;
      for (int id : parse_node_list(read_text(e.path() / "nodelist")))
        for (auto& n : t.nodes)
          if (n.id == id) n.tier = tier;
    }
  }
  t.demotion_enabled = [&] {
    const std::string s = read_text(root / "sys/kernel/mm/numa/demotion_enabled");
    if (s.rfind("true", 0) == 0 || s.rfind("1", 0) == 0) return 1;
    if (s.rfind("false", 0) == 0 || s.rfind("0", 0) == 0) return 0;
    return -1;
  }();
  t.numa_balancing = int(read_number(root / "proc/sys/kernel/numa_balancing", -1));

  // The rule: the lowest tier that has a node with CPUs is fast (its CPU nodes); every
  // other node with memory is slow. A node the tier files do not list counts as the
  // fast tier's (so a tree without tiers reduces to CPUs vs CPU-less).
  int fast_tier = INT_MAX;
  for (const auto& n : t.nodes)
    if (n.has_cpu && n.tier >= 0) fast_tier = std::min(fast_tier, n.tier);
  const auto tier_of = [&](const NumaNode& n) { return n.tier >= 0 ? n.tier : fast_tier; };
  for (const auto& n : t.nodes)
    (n.has_cpu && tier_of(n) == fast_tier ? t.fast_nodes : t.slow_nodes).push_back(n.id);
  if (t.fast_nodes.empty() && !t.nodes.empty()) {
    // No node with CPUs has memory (CPUs on memoryless nodes): the lowest tier is fast.
    int lowest = INT_MAX;
    for (const auto& n : t.nodes) lowest = std::min(lowest, tier_of(n));
    t.slow_nodes.clear();
    for (const auto& n : t.nodes)
      (tier_of(n) == lowest ? t.fast_nodes : t.slow_nodes).push_back(n.id);
  }
  // Nearest first: distance from the fast nodes (slow set), resp. from the CPU nodes.
  const auto order = [&](std::vector<int>& ids, const std::vector<int>& from) {
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
      const int da = nearest_distance(*t.node(a), from), db = nearest_distance(*t.node(b), from);
      return da != db ? da < db : a < b;
    });
  };
  order(t.fast_nodes, t.fast_nodes);
  order(t.slow_nodes, t.fast_nodes);

  bool cpuless = false, slower_tier = false;
  for (const auto& n : t.nodes) {
    if (std::find(t.slow_nodes.begin(), t.slow_nodes.end(), n.id) == t.slow_nodes.end()) continue;
    if (!n.has_cpu) cpuless = true;
    if (tier_of(n) > fast_tier) slower_tier = true;
  }
  if (t.nodes.size() == 1)
    t.reason = "one NUMA node: no slow tier";
  else if (t.slow_nodes.empty())
    t.reason =
        fmt::format("{} nodes with CPUs in one tier: no slow tier (a remote socket is not a tier)",
                    t.nodes.size());
  else
    t.reason = fmt::format("slow = {}{}{}", cpuless ? "CPU-less" : "",
                           cpuless && slower_tier ? " or " : "", slower_tier ? "slower-tier" : "") +
               " nodes";
  return t;
}

std::vector<std::string> TierTopology::warnings() const {
  std::vector<std::string> w;
  if (demotion_enabled == 1)
    w.push_back(
        "the kernel demotes pages to slower tiers (/sys/kernel/mm/numa/demotion_enabled = "
        "true): placement may be undone under memory pressure");
  if (numa_balancing > 0)
    w.push_back(
        fmt::format("NUMA balancing is on (/proc/sys/kernel/numa_balancing = {}{}): the "
                    "kernel migrates pages behind the placement",
                    numa_balancing, numa_balancing == 2 ? ", tiering promotion" : ""));
  return w;
}

std::string TierTopology::describe() const {
  std::string nodes_text;
  for (const auto& n : nodes) {
    if (!nodes_text.empty()) nodes_text += ", ";
    nodes_text += fmt::format("{}: {} {}", n.id, format_bytes(double(n.mem_total)),
                              n.has_cpu ? "CPUs" : "CPU-less");
    if (n.tier >= 0) nodes_text += fmt::format(" tier {}", n.tier);
    if (n.read_bw > 0) nodes_text += fmt::format(" HMAT read {:.0f} GB/s", n.read_bw / 1e9);
    if (n.read_latency > 0) nodes_text += fmt::format(" {:.0f} ns", n.read_latency * 1e9);
  }
  std::string s = fmt::format(
      "{} NUMA node{} with memory ({}); memory tiers {}; HMAT {}; fast = {{{}}} ({}), slow = "
      "{{{}}} ({}): {}",
      nodes.size(), nodes.size() == 1 ? "" : "s", nodes_text,
      tiers_present ? "present" : "absent (kernel < 6.1)", hmat_present ? "present" : "absent",
      node_list_text(fast_nodes), format_bytes(double(bytes_of(fast_nodes))),
      node_list_text(slow_nodes), format_bytes(double(bytes_of(slow_nodes))), reason);
  s += fmt::format("; demotion {}; NUMA balancing {}",
                   demotion_enabled < 0 ? "unknown"
                   : demotion_enabled   ? "ON"
                                        : "off",
                   numa_balancing < 0    ? "unknown"
                   : numa_balancing == 0 ? "off"
                                         : fmt::format("ON (mode {})", numa_balancing));
  if (root != "/") s += fmt::format(" [read under {}]", root);
  return s;
}

void to_json(nlohmann::json& j, const TierTopology& t) {
  j = nlohmann::json::object();
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : t.nodes)
    nodes.push_back({{"id", n.id},
                     {"has_cpu", n.has_cpu},
                     {"mem_total", n.mem_total},
                     {"tier", n.tier},
                     {"distance", n.distance},
                     {"hmat_read_bw", n.read_bw},
                     {"hmat_write_bw", n.write_bw},
                     {"hmat_read_latency", n.read_latency},
                     {"hmat_write_latency", n.write_latency}});
  j["nodes"] = std::move(nodes);
  j["fast_nodes"] = t.fast_nodes;
  j["slow_nodes"] = t.slow_nodes;
  j["tiers_present"] = t.tiers_present;
  j["hmat_present"] = t.hmat_present;
  j["demotion_enabled"] = t.demotion_enabled;
  j["numa_balancing"] = t.numa_balancing;
  j["describe"] = t.describe();
}

}  // namespace tessera::memory

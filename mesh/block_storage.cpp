#include "mesh/block_storage.hpp"

#include <cstring>
#include <string>

#include "base/error.hpp"

namespace tessera::mesh {

const char* layout_name(Layout l) {
  return l == Layout::zone_major ? "zone_major" : "var_major";
}

Layout parse_layout(const std::string& s) {
  if (s == "var_major") return Layout::var_major;
  if (s == "zone_major") return Layout::zone_major;
  throw Error("unknown block layout '" + s + "' (var_major or zone_major)");
}

BlockStorage::BlockStorage(const BlockShape& shape, int maxblocks, int rank,
                           memory::ArenaConfig cfg, Layout layout, const std::string& arena_name)
    : shape_(shape), layout_(layout), maxblocks_(maxblocks), rank_(rank) {
  try {
    arena_ = memory::Arena(arena_name, bytes(), cfg);
  } catch (const Error& e) {
    throw Error("rank " + std::to_string(rank) +
                ": cannot allocate block storage (mesh.maxblocks = " + std::to_string(maxblocks) +
                "): " + e.what());
  }
  free_.reserve(maxblocks);
  for (int s = maxblocks - 1; s >= 0; --s) free_.push_back(s);
}

int BlockStorage::acquire() {
  if (free_.empty())
    throw Error("rank " + std::to_string(rank_) + " needs more than mesh.maxblocks = " +
                std::to_string(maxblocks_) + " blocks; raise mesh.maxblocks or run on more ranks");
  const int s = free_.back();
  free_.pop_back();
  std::memset(data(s), 0, shape_.doubles() * sizeof(double));
  return s;
}

void BlockStorage::release(int slot) {
  free_.push_back(slot);
}

}  // namespace tessera::mesh

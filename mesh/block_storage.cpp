#include "mesh/block_storage.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.hpp"

namespace tessera::mesh {

void BlockStorage::FreeDeleter::operator()(double* p) const {
  std::free(p);
}

const char* layout_name(Layout l) {
  return l == Layout::zone_major ? "zone_major" : "var_major";
}

Layout parse_layout(const std::string& s) {
  if (s == "var_major") return Layout::var_major;
  if (s == "zone_major") return Layout::zone_major;
  throw Error("unknown block layout '" + s + "' (var_major or zone_major)");
}

BlockStorage::BlockStorage(const BlockShape& shape, int maxblocks, int rank, Layout layout)
    : shape_(shape), layout_(layout), maxblocks_(maxblocks), rank_(rank) {
  // 2 MiB alignment so a later page policy (THP / hugetlb arenas) can back it whole.
  constexpr std::size_t align = std::size_t(2) << 20;
  std::size_t bytes = this->bytes();
  bytes = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, bytes == 0 ? align : bytes);
  if (!p)
    throw Error("rank " + std::to_string(rank) + ": cannot allocate block storage of " +
                std::to_string(bytes) + " bytes (mesh.maxblocks = " + std::to_string(maxblocks) +
                ")");
  base_.reset(static_cast<double*>(p));
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

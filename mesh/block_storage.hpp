#pragma once
// Block storage (`unk`): one arena per rank holding `maxblocks` slots of
// shape.doubles() each, every slot in the same layout (block_view.hpp), allocated with the
// page policy of memory.pages_unk (or memory.pages) and pre-faulted, so its resident size
// is its full size from the start. Slots are handed out and returned by the mesh; running
// out is an Error naming the rank, the count and `mesh.maxblocks`.
#include <cassert>
#include <cstddef>
#include <string>
#include <vector>

#include "memory/arena.hpp"
#include "mesh/block_view.hpp"

namespace tessera::mesh {

class BlockStorage {
 public:
  BlockStorage() = default;
  /// Maps the arena `arena_name` (maxblocks * shape.doubles() doubles) with policy cfg; a
  /// policy that cannot be had falls back as memory::Arena does (see arena().warning()).
  BlockStorage(const BlockShape& shape, int maxblocks, int rank, memory::ArenaConfig cfg = {},
               Layout layout = Layout::var_major, const std::string& arena_name = "unk");
  const BlockShape& shape() const { return shape_; }
  Layout layout() const { return layout_; }
  /// with_layout(layout(), f): f(LayoutTag<L>{}) for this storage's layout.
  template <class F>
  decltype(auto) with_layout(F&& f) const {
    return mesh::with_layout(layout_, static_cast<F&&>(f));
  }
  int maxblocks() const { return maxblocks_; }
  int used() const { return maxblocks_ - static_cast<int>(free_.size()); }
  /// A free slot (zeroed); throws tessera::Error when all maxblocks are in use.
  int acquire();
  void release(int slot);
  double* data(int slot) { return base() + std::size_t(slot) * shape_.doubles(); }
  const double* data(int slot) const { return base() + std::size_t(slot) * shape_.doubles(); }
  /// View of a slot; L must be layout() (checked in debug builds).
  template <Layout L>
  BlockView<L> view(int slot, LayoutTag<L> = {}) {
    assert(L == layout_);
    return BlockView<L>(data(slot), shape_);
  }
  std::size_t bytes() const { return std::size_t(maxblocks_) * shape_.doubles() * sizeof(double); }
  /// The arena behind the slots: requested and achieved page policy, smaps report.
  const memory::Arena& arena() const { return arena_; }

 private:
  BlockShape shape_;
  Layout layout_ = Layout::var_major;
  int maxblocks_ = 0;
  int rank_ = 0;
  memory::Arena arena_;
  std::vector<int> free_;  ///< stack, lowest slot on top
  double* base() const { return static_cast<double*>(arena_.data()); }
};

}  // namespace tessera::mesh

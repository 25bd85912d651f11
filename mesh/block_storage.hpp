#pragma once
// Block storage (`unk`): one arena per rank holding `maxblocks` slots of
// shape.doubles() each, every slot in the same layout (block_view.hpp). Slots are handed
// out and returned by the mesh; running out is an Error naming the rank, the count and
// `mesh.maxblocks`.
#include <cassert>
#include <cstddef>
#include <memory>
#include <vector>

#include "mesh/block_view.hpp"

namespace tessera::mesh {

class BlockStorage {
 public:
  BlockStorage() = default;
  BlockStorage(const BlockShape& shape, int maxblocks, int rank, Layout layout = Layout::var_major);
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
  double* data(int slot) { return base_.get() + std::size_t(slot) * shape_.doubles(); }
  const double* data(int slot) const { return base_.get() + std::size_t(slot) * shape_.doubles(); }
  /// View of a slot; L must be layout() (checked in debug builds).
  template <Layout L>
  BlockView<L> view(int slot, LayoutTag<L> = {}) {
    assert(L == layout_);
    return BlockView<L>(data(slot), shape_);
  }
  std::size_t bytes() const { return std::size_t(maxblocks_) * shape_.doubles() * sizeof(double); }

 private:
  BlockShape shape_;
  Layout layout_ = Layout::var_major;
  int maxblocks_ = 0;
  int rank_ = 0;
  struct FreeDeleter {
    void operator()(double* p) const;
  };
  std::unique_ptr<double[], FreeDeleter> base_;
  std::vector<int> free_;  ///< stack, lowest slot on top
};

}  // namespace tessera::mesh

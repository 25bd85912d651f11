#pragma once
// Small pieces the mesh's plans share (mesh.cpp's guard fill, regrid.cpp's regrid and
// restriction): keeping an op this rank takes part in, a block's interior box, a child's
// restriction into its parent's octant.
#include "mesh/mesh.hpp"
#include "mesh/transfer.hpp"

namespace tessera::mesh::detail {

// Keep op if this rank takes part in it, with the local slot of each side it owns.
inline void push_op(TransferPlan& plan, TransferOp op, int me, int src_rank, int src_slot,
                    int dst_rank, int dst_slot) {
  if (src_rank != me && dst_rank != me) return;
  op.src_rank = src_rank;
  op.dst_rank = dst_rank;
  op.src_slot = src_rank == me ? src_slot : -1;
  op.dst_slot = dst_rank == me ? dst_slot : -1;
  plan.ops.push_back(op);
}

inline Box interior_box(const BlockShape& s) {
  Box b;
  for (int a = 0; a < 3; ++a) b.lo[a] = s.g(a), b.hi[a] = s.g(a) + s.ni(a);
  return b;
}

// The whole block, guard zones included.
inline Box whole_box(const BlockShape& s) {
  Box b;
  for (int a = 0; a < 3; ++a) b.lo[a] = 0, b.hi[a] = s.n(a);
  return b;
}

// Child c's interior averaged into its octant of the parent's interior.
inline TransferOp child_to_parent(const BlockShape& s, int c) {
  TransferOp op;
  op.kind = OpKind::restrict_avg;
  op.src = interior_box(s);
  op.dst = op.src;
  for (int a = 0; a < s.ndim; ++a) {
    op.dst.lo[a] = s.ng + ((c >> a) & 1) * s.nx / 2;
    op.dst.hi[a] = op.dst.lo[a] + s.nx / 2;
  }
  return op;
}

}  // namespace tessera::mesh::detail

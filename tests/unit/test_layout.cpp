// Specifications for the two block layouts (mesh/block_view.hpp) and for the transfer
// ops (mesh/transfer.cpp) run on each: the layout moves values in memory, never changes
// them.
#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <vector>

#include "mesh/block_storage.hpp"
#include "mesh/transfer.hpp"

namespace {

using tessera::mesh::BlockShape;
using tessera::mesh::BlockStorage;
using tessera::mesh::BlockView;
using tessera::mesh::Box;
using tessera::mesh::Layout;
using tessera::mesh::OpKind;
using tessera::mesh::TransferOp;
using tessera::mesh::TransferPlan;

BlockShape shape3d() {
  BlockShape s;
  s.ndim = 3;
  s.nx = 8;
  s.ng = 2;
  s.nvar = 5;
  return s;
}

TEST(BlockView, GivenEitherLayout_ThenOffsetsFollowTheDocumentedOrder) {
  const BlockShape s = shape3d();
  std::vector<double> a(s.doubles());
  const BlockView<Layout::var_major> vm(a.data(), s);
  const BlockView<Layout::zone_major> zm(a.data(), s);
  const std::size_t n0 = s.n(0), n1 = s.n(1), cells = s.cells();
  for (int v : {0, 3})
    for (int k : {0, 5})
      for (int j : {1, 11})
        for (int i : {0, 7}) {
          const std::size_t c = (k * n1 + j) * n0 + i;
          EXPECT_EQ(&vm(v, i, j, k), a.data() + v * cells + c);
          EXPECT_EQ(&zm(v, i, j, k), a.data() + c * s.nvar + v);
          // Rows and fields address the same doubles as operator().
          EXPECT_EQ(&vm.row(v, j, k)[i], &vm(v, i, j, k));
          EXPECT_EQ(&zm.row(v, j, k)[i], &zm(v, i, j, k));
          EXPECT_EQ(&(zm.row(v, j, k) + 2)[i - 2], &zm(v, i, j, k));
          vm(v, i, j, k) = 1.5 + c;
          EXPECT_EQ(vm.field(v)[c], 1.5 + c);
          zm(v, i, j, k) = 2.5 + c;
          EXPECT_EQ(zm.field(v)[c], 2.5 + c);
        }
}

TEST(BlockView, GivenARuntimeLayout_WithLayoutHandsTheMatchingTag) {
  EXPECT_EQ(tessera::mesh::parse_layout("zone_major"), Layout::zone_major);
  EXPECT_STREQ(tessera::mesh::layout_name(Layout::var_major), "var_major");
  EXPECT_THROW(tessera::mesh::parse_layout("zone-major"), std::exception);
  for (Layout l : {Layout::var_major, Layout::zone_major})
    EXPECT_EQ(tessera::mesh::with_layout(l, [](auto tag) { return decltype(tag)::value; }), l);
}

// Slot 1 after `plan` ran on storage whose slot 0 holds the values value(v, i, j, k),
// read back in (v, k, j, i) order.
template <Layout L>
std::vector<double> run_ops(const BlockShape& s, const TransferPlan& plan) {
  BlockStorage st(s, 2, 0, {}, L);
  const int a = st.acquire(), b = st.acquire();
  const auto src = st.view<L>(a);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (int v = 0; v < s.nvar; ++v)
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) src(v, i, j, k) = u(rng);
  TransferPlan p = plan;
  for (auto& op : p.ops) op.src_slot = a, op.dst_slot = b;
  tessera::mesh::execute(p, st, MPI_COMM_SELF, 900);
  std::vector<double> out;
  const auto dst = st.view<L>(b);
  for (int v = 0; v < s.nvar; ++v)
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) out.push_back(dst(v, i, j, k));
  return out;
}

TEST(Transfer, GivenTheSameValuesInEitherLayout_ThenCopyRestrictAndProlongAgreeToTheBit) {
  const BlockShape s = shape3d();
  TransferPlan plan;
  TransferOp copy;  // a face guard slab from the opposite interior edge
  copy.kind = OpKind::copy;
  copy.src = Box{{8, 2, 2}, {10, 10, 10}};
  copy.dst = Box{{0, 2, 2}, {2, 10, 10}};
  TransferOp restrict_op;  // an octant of the interior from the whole interior
  restrict_op.kind = OpKind::restrict_avg;
  restrict_op.src = Box{{2, 2, 2}, {10, 10, 10}};
  restrict_op.dst = Box{{6, 6, 6}, {10, 10, 10}};
  TransferOp prolong;  // a fine edge region from coarse zones with a one-zone halo
  prolong.kind = OpKind::prolong;
  prolong.dst = Box{{2, 0, 10}, {10, 2, 12}};
  prolong.src = Box{{3, 1, 6}, {9, 4, 9}};
  prolong.parity0 = {0, 0, 1};
  plan.ops = {copy, restrict_op, prolong};
  const auto vm = run_ops<Layout::var_major>(s, plan);
  const auto zm = run_ops<Layout::zone_major>(s, plan);
  ASSERT_EQ(vm.size(), zm.size());
  int written = 0;
  for (std::size_t n = 0; n < vm.size(); ++n) {
    EXPECT_EQ(vm[n], zm[n]) << n;
    written += vm[n] != 0.0;
  }
  const long expected = (copy.dst.volume() + restrict_op.dst.volume() + prolong.dst.volume()) * 5;
  EXPECT_EQ(written, expected);
}

}  // namespace

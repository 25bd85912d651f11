// Specifications for the two block layouts (mesh/block_view.hpp) and for the transfer
// ops (mesh/transfer.cpp) run on each: the layout moves values in memory, never changes
// them.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "mesh/block_storage.hpp"
#include "mesh/transfer.hpp"

namespace {

using tessera::mesh::BlockShape;
using tessera::mesh::BlockStorage;
using tessera::mesh::BlockView;
using tessera::mesh::Box;
using tessera::mesh::IVec;
using tessera::mesh::Layout;
using tessera::mesh::OpKind;
using tessera::mesh::Prolong;
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

// The documented formulas zone by zone (transfer.hpp): restriction sums the 2^d fine zones
// (z, y, x order, from 0) times 1/2^d; prolongation gives fine zone t the coarse value plus
// -1/4 or +1/4 (by the parity of t) of the MC-limited slope per active axis, x, y, z in that
// order.
double mc_reference(double qm, double q0, double qp) {
  const double dl = q0 - qm, dr = qp - q0;
  if (dl * dr <= 0.0) return 0.0;
  return std::copysign(1.0, dl) *
         std::min({0.5 * std::fabs(dl + dr), 2.0 * std::fabs(dl), 2.0 * std::fabs(dr)});
}

template <Layout L>
void expect_formulas(int nd) {
  BlockShape s;
  s.ndim = nd;
  s.nx = 12;
  s.ng = 2;
  s.nvar = 3;
  BlockStorage st(s, 2, 0, {}, L);
  const int a = st.acquire(), b = st.acquire();
  const auto src = st.view<L>(a), dst = st.view<L>(b);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (int v = 0; v < s.nvar; ++v)
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) src(v, i, j, k) = u(rng);
  auto same_bits = [](double x, double y) {
    return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
  };
  const int fy = nd > 1 ? 2 : 1, fz = nd > 2 ? 2 : 1;
  // Restriction of odd- and even-sized boxes, prolongation with every parity, odd and even
  // extents and each of the three slopes: x rows of 1 to 4 cells take the short-row code, 5
  // and 7 the row loops. The destination block starts as NaN: a cell left unwritten, or
  // written outside its box, shows.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const Prolong kind : {Prolong::mc, Prolong::linear, Prolong::injection})
    for (int parity = 0; parity < 8 * 6; ++parity) {
      const int nx = std::array{7, 1, 2, 3, 4, 5}[parity / 8];
      const int nr = std::array{3, 1, 2, 4, 5, 7}[parity / 8];
      TransferOp r;
      r.kind = OpKind::restrict_avg;
      r.dst = Box{{9, nd > 1 ? 2 : 0, nd > 2 ? 3 : 0}, {9 + nr, nd > 1 ? 5 : 1, nd > 2 ? 5 : 1}};
      r.src =
          Box{{2, nd > 1 ? 1 : 0, nd > 2 ? 2 : 0}, {2 + 2 * nr, nd > 1 ? 7 : 1, nd > 2 ? 6 : 1}};
      TransferOp p;
      p.kind = OpKind::prolong;
      p.parity0 = {parity & 1, nd > 1 ? (parity >> 1) & 1 : 0, nd > 2 ? (parity >> 2) & 1 : 0};
      p.dst = Box{{2, 0, nd > 2 ? 9 : 0}, {2 + nx, nd > 1 ? 3 : 1, nd > 2 ? 12 : 1}};
      p.src = Box{{2, nd > 1 ? 1 : 0, nd > 2 ? 3 : 0}, {8, nd > 1 ? 5 : 1, nd > 2 ? 7 : 1}};
      TransferPlan plan;
      plan.ops = {r, p};
      for (auto& op : plan.ops) op.src_slot = a, op.dst_slot = b;
      for (int v = 0; v < s.nvar; ++v)
        for (int k = 0; k < s.n(2); ++k)
          for (int j = 0; j < s.n(1); ++j)
            for (int i = 0; i < s.n(0); ++i) dst(v, i, j, k) = nan;
      tessera::mesh::execute(plan, st, MPI_COMM_SELF, 901, {{0, s.nvar, kind}});
      const std::string what =
          std::string("prolong ") +
          (kind == Prolong::mc ? "mc" : (kind == Prolong::linear ? "linear" : "injection")) +
          " parity " + std::to_string(parity & 7) + " nx " + std::to_string(nx);
      auto slope = [&](double qm, double q0, double qp) {
        return kind == Prolong::mc ? mc_reference(qm, q0, qp)
                                   : (kind == Prolong::linear ? 0.5 * (qp - qm) : 0.0);
      };
      auto inside = [](const Box& bx, int i, int j, int k) {
        return i >= bx.lo[0] && i < bx.hi[0] && j >= bx.lo[1] && j < bx.hi[1] && k >= bx.lo[2] &&
               k < bx.hi[2];
      };
      for (int v = 0; v < s.nvar; ++v) {
        const IVec& o = r.src.lo;
        for (int k = 0; k < r.dst.extent(2); ++k)
          for (int j = 0; j < r.dst.extent(1); ++j)
            for (int i = 0; i < r.dst.extent(0); ++i) {
              double sum = 0.0;
              for (int c = 0; c < fz; ++c)
                for (int bb = 0; bb < fy; ++bb)
                  for (int aa = 0; aa < 2; ++aa)
                    sum += src(v, o[0] + 2 * i + aa, o[1] + fy * j + bb, o[2] + fz * k + c);
              const double want = sum * (1.0 / (2 * fy * fz));
              EXPECT_TRUE(
                  same_bits(dst(v, r.dst.lo[0] + i, r.dst.lo[1] + j, r.dst.lo[2] + k), want))
                  << "restrict nx " << nr << " v " << v << " at " << i << "," << j << "," << k;
            }
        const IVec& q = p.src.lo;
        for (int k = 0; k < p.dst.extent(2); ++k)
          for (int j = 0; j < p.dst.extent(1); ++j)
            for (int i = 0; i < p.dst.extent(0); ++i) {
              const int t[3] = {i, j, k};
              int c[3];
              double sg[3];
              for (int ax = 0; ax < 3; ++ax) {
                c[ax] = ax < nd ? q[ax] + ((p.parity0[ax] + t[ax]) >> 1) + 1 : q[ax];
                sg[ax] = ((p.parity0[ax] + t[ax]) & 1) ? 0.25 : -0.25;
              }
              const double q0 = src(v, c[0], c[1], c[2]);
              double want = q0;
              for (int ax = 0; ax < nd; ++ax) {
                int m[3] = {c[0], c[1], c[2]}, pl[3] = {c[0], c[1], c[2]};
                --m[ax];
                ++pl[ax];
                want += sg[ax] * slope(src(v, m[0], m[1], m[2]), q0, src(v, pl[0], pl[1], pl[2]));
              }
              EXPECT_TRUE(
                  same_bits(dst(v, p.dst.lo[0] + i, p.dst.lo[1] + j, p.dst.lo[2] + k), want))
                  << what << " v " << v << " at " << i << "," << j << "," << k;
            }
        // Nothing written outside the two boxes.
        int written = 0;
        for (int k = 0; k < s.n(2); ++k)
          for (int j = 0; j < s.n(1); ++j)
            for (int i = 0; i < s.n(0); ++i)
              if (!inside(r.dst, i, j, k) && !inside(p.dst, i, j, k))
                written += !std::isnan(dst(v, i, j, k));
        EXPECT_EQ(written, 0) << what << " restrict nx " << nr << " v " << v;
      }
    }
}

TEST(Transfer, GivenAnyParityAndDimension_ThenRestrictAndProlongGiveTheDocumentedFormulasToTheBit) {
  for (int nd = 1; nd <= 3; ++nd) {
    expect_formulas<Layout::var_major>(nd);
    expect_formulas<Layout::zone_major>(nd);
  }
}

}  // namespace

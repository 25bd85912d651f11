// Specifications for guard fills of chosen variables (Mesh::fill_guards(VarSet)) and the
// prolongation each variable declares (VarInfo::prolong, mesh/transfer.hpp): a fill moves
// the variables of its set and no others, in one exchange; a linear prolongation is exact
// for linear data, the MC one still clips slopes at a kink, injection copies the coarse
// value; every kind keeps the coarse value as the mean of its fine cells.
//
// Collective on MPI_COMM_WORLD and correct for any number of ranks, as test_mesh.cpp.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "mesh/mesh.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::mesh {
namespace {

using testing_util::contains;
using testing_util::error_of;

base::Params params(const std::vector<std::string>& overrides) {
  base::Params p;
  Mesh::declare_params(p);
  for (const auto& o : overrides) p.apply_override(o);
  return p;
}

template <class F>
void for_local_leaves(Mesh& m, F&& f) {
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) f(id, m.view(id, tag));
  });
}

std::vector<VarInfo> ten_variables() {
  std::vector<VarInfo> v;
  for (int n = 0; n < 10; ++n) v.push_back(VarInfo("v" + std::to_string(n)));
  return v;
}

// Given ten variables on a periodic 2-D mesh of 16 blocks whose guard zones hold a marker,
// when one variable is filled, then its guard zones hold the neighbours' values and every
// other variable's still hold the marker; and the fill wrote exactly a tenth of the bytes
// a fill of all ten writes (transfer_bytes counts what the plans write).
TEST(MeshVarSetFill, GivenOneOfTenVariables_ThenOnlyItMovesAndATenthOfTheBytes) {
  for (const char* layout : {"var_major", "zone_major"}) {
    auto o = std::vector<std::string>{"mesh.ndim=2",       "mesh.nxb=8",
                                      "mesh.nblockx=4",    "mesh.nblocky=4",
                                      "mesh.maxblocks=16", std::string("mesh.layout=") + layout};
    for (const char* f : {"xl", "xr", "yl", "yr"})
      o.push_back(std::string("mesh.") + f + "_boundary_type=periodic");
    Mesh m(params(o), MPI_COMM_WORLD, ten_variables(), 2);
    const BlockShape& s = m.shape();
    auto reset = [&] {
      for_local_leaves(m, [&](int id, auto u) {
        for (int v = 0; v < s.nvar; ++v)
          for (int j = 0; j < s.n(1); ++j)
            for (int i = 0; i < s.n(0); ++i) {
              const bool interior =
                  i >= s.g(0) && i < s.g(0) + s.ni(0) && j >= s.g(1) && j < s.g(1) + s.ni(1);
              u(v, i, j, 0) = interior ? 100.0 * v + id : -1.0;
            }
      });
    };
    reset();
    const VarSet one = m.var_set({"v3"});
    transfer_bytes() = {};
    m.fill_guards(one);
    const TransferBytes b1 = transfer_bytes();
    long filled = 0, untouched = 0, wrong = 0;
    for_local_leaves(m, [&](int, auto u) {
      for (int v = 0; v < s.nvar; ++v)
        for (int j = 0; j < s.n(1); ++j)
          for (int i = 0; i < s.n(0); ++i) {
            const bool interior =
                i >= s.g(0) && i < s.g(0) + s.ni(0) && j >= s.g(1) && j < s.g(1) + s.ni(1);
            if (interior) continue;
            const double x = u(v, i, j, 0);
            if (v == 3) {
              // A neighbour's interior value of v3 (300 + its id): every guard, corners too.
              filled += x >= 300.0 && x < 400.0;
              wrong += !(x >= 300.0 && x < 400.0);
            } else {
              untouched += x == -1.0;
              wrong += x != -1.0;
            }
          }
    });
    EXPECT_EQ(wrong, 0) << layout;
    EXPECT_GT(filled, 0) << layout;
    EXPECT_GT(untouched, 9 * filled - 1) << layout;
    reset();
    transfer_bytes() = {};
    m.fill_guards();
    const TransferBytes b10 = transfer_bytes();
    EXPECT_GT(b1.written, 0u);
    EXPECT_EQ(b10.written, 10 * b1.written) << layout;
    EXPECT_EQ(b10.sent, 10 * b1.sent) << layout;
    std::printf("[ measured ] %s: one variable wrote %llu bytes, all ten %llu\n", layout,
                static_cast<unsigned long long>(b1.written),
                static_cast<unsigned long long>(b10.written));
  }
}

// Given ten guard-filled variables whose first four a fill left current (the tracers'
// move: mark_guards_current(4)), when the whole set is filled, then it moves the other six
// alone, each guard zone as a complete fill gives it, and forgets the mark; a partial fill
// inside the mark moves nothing and keeps it; invalidate_guards(2) keeps only v0 and v1.
TEST(MeshVarSetFill, GivenAPrefixMarkedCurrent_ThenAFillMovesTheOthersAlone) {
  auto o = std::vector<std::string>{"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=4", "mesh.nblocky=4",
                                    "mesh.maxblocks=16"};
  for (const char* f : {"xl", "xr", "yl", "yr"})
    o.push_back(std::string("mesh.") + f + "_boundary_type=periodic");
  Mesh m(params(o), MPI_COMM_WORLD, ten_variables(), 2);
  const BlockShape& s = m.shape();
  for_local_leaves(m, [&](int id, auto u) {
    for (int v = 0; v < s.nvar; ++v)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) u(v, i, j, 0) = 100.0 * v + id + 0.01 * i;
  });
  m.fill_guards(1);
  transfer_bytes() = {};
  m.fill_guards(1);
  const auto one = transfer_bytes().written;
  m.fill_guards();  // every guard zone as a complete fill gives it
  std::vector<double> want;
  for_local_leaves(m, [&](int, auto u) {
    for (int v = 0; v < s.nvar; ++v)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) want.push_back(u(v, i, j, 0));
  });
  m.mark_guards_current(4);
  transfer_bytes() = {};
  m.fill_guards(3);  // inside the mark: nothing moves, the mark stays
  EXPECT_EQ(transfer_bytes().written, 0u);
  m.fill_guards();
  EXPECT_EQ(transfer_bytes().written, 6 * one);
  transfer_bytes() = {};
  m.fill_guards();  // the mark is gone: all ten
  EXPECT_EQ(transfer_bytes().written, 10 * one);
  m.mark_guards_current(4);
  m.invalidate_guards(2);
  transfer_bytes() = {};
  m.fill_guards();
  EXPECT_EQ(transfer_bytes().written, 8 * one);
  std::size_t n = 0, differ = 0;
  for_local_leaves(m, [&](int, auto u) {
    for (int v = 0; v < s.nvar; ++v)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) differ += u(v, i, j, 0) != want[n++];
  });
  EXPECT_EQ(differ, 0u);
}

// Given variables v1, v4 (not contiguous) with different prolongations, when they are
// filled as one set, then both are filled and the variables between them are not.
TEST(MeshVarSetFill, GivenASetWithGaps_ThenEachMemberIsFilledAndNothingBetween) {
  auto vars = ten_variables();
  vars[4] = vars[4].with_prolong(Prolong::linear);
  Mesh m(
      params({"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2", "mesh.maxblocks=8"}),
      MPI_COMM_WORLD, vars, 2);
  const BlockShape& s = m.shape();
  for_local_leaves(m, [&](int, auto u) {
    for (int v = 0; v < s.nvar; ++v)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) u(v, i, j, 0) = -1.0;
    for (int v = 0; v < s.nvar; ++v)
      for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
        for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) u(v, i, j, 0) = 1.0 + v;
  });
  m.fill_guards(m.var_set({"v4", "v1"}));
  long bad = 0;
  for_local_leaves(m, [&](int, auto u) {
    // The guard zone left of the interior's first row: outflow or a neighbour, never -1
    // for a member; untouched for the others.
    const int i = s.g(0) - 1, j = s.g(1) + 2;
    for (int v = 0; v < s.nvar; ++v) {
      const bool member = v == 1 || v == 4;
      bad += member ? u(v, i, j, 0) != 1.0 + v : u(v, i, j, 0) != -1.0;
    }
  });
  EXPECT_EQ(bad, 0);
  EXPECT_TRUE(contains(error_of([&] { m.var_set({"v1", "nosuch"}); }), "no variable 'nosuch'"));
}

// Given one root block of a 2-D mesh (of two), guard zones included, holding, in four variables, a
// field linear in x and y (MC and linear prolongation), a ramp max(x - c, 0) with its kink at a
// coarse zone centre (MC, linear) and the ramp again (injection), when the block is refined, then:
// linear data is exact in its children under MC and linear prolongation; at the kink MC
// clips the slope to zero while linear keeps the central difference (fine = coarse +- 1/4
// of it); injection copies the coarse value; and every coarse zone's fine zones average to
// it.
TEST(MeshProlongation, GivenLinearAndKinkedData_ThenEachVariablesOwnProlongationApplies) {
  std::vector<VarInfo> vars = {VarInfo("lmc"), VarInfo("llin").with_prolong(Prolong::linear),
                               VarInfo("kmc"), VarInfo("klin").with_prolong(Prolong::linear),
                               VarInfo("kinj").with_prolong(Prolong::injection)};
  Mesh m(params({"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=1", "mesh.xmin=0",
                 "mesh.xmax=2", "mesh.ymin=0", "mesh.ymax=1", "mesh.lrefine_max=2",
                 "mesh.maxblocks=8"}),
         MPI_COMM_WORLD, vars, 2);
  const BlockShape& s = m.shape();
  const double h = 1.0 / 8;  // coarse zone width
  const double c = 4.5 * h;  // the kink: the centre of coarse zone 4 of block 0
  auto lin = [](double x, double y) { return 1.0 + 2.0 * x - 3.0 * y; };
  auto ramp = [&](double x) { return std::max(x - c, 0.0); };
  // Guard zones too, from the same functions (a physical boundary's outflow guards would
  // not keep the data linear; prolongation reads a one-zone halo of the parent).
  for_local_leaves(m, [&](int id, auto u) {
    const BlockGeom g = m.geom(id);
    for (int j = 0; j < s.n(1); ++j)
      for (int i = 0; i < s.n(0); ++i) {
        const double x = g.x(i - s.g(0)), y = g.y(j - s.g(1));
        u(0, i, j, 0) = u(1, i, j, 0) = lin(x, y);
        u(2, i, j, 0) = u(3, i, j, 0) = u(4, i, j, 0) = ramp(x);
      }
  });
  std::vector<Flag> flags(m.tree().size(), Flag::keep);
  for (int id : m.local_leaves())
    if (m.tree().block_lo(id)[0] < 0.5) flags[id] = Flag::refine;
  ASSERT_TRUE(m.regrid(flags));
  long checked = 0, bad = 0;
  for_local_leaves(m, [&](int id, auto u) {
    if (m.tree().node(id).level != 1) return;
    const BlockGeom g = m.geom(id);
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
      for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i) {
        const double x = g.x(i - s.g(0)), y = g.y(j - s.g(1));
        // The coarse zone under this fine zone and the side of it the fine zone is on.
        const double xc = (std::floor(x / h) + 0.5) * h;
        const double side = x < xc ? -1.0 : 1.0;
        const double q0 = ramp(xc);
        const double central = 0.5 * (ramp(xc + h) - ramp(xc - h));
        const double mc = std::fabs(xc - c) < 1e-12 ? 0.0 : central;  // the kink's zone
        const double want[5] = {lin(x, y), lin(x, y), q0 + 0.25 * side * mc,
                                q0 + 0.25 * side * central, q0};
        for (int v = 0; v < 5; ++v) {
          ++checked;
          if (std::fabs(u(v, i, j, 0) - want[v]) > 1e-13) {
            ++bad;
            if (bad < 5)
              ADD_FAILURE() << vars[v].name << " at x " << x << ": " << u(v, i, j, 0) << ", want "
                            << want[v];
          }
        }
      }
  });
  double n = static_cast<double>(checked);
  MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(n, 4.0 * 64 * 5);  // four children of 8 x 8 zones, five variables
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace tessera::mesh

namespace tessera::mesh {
namespace {

// Refines the leaves in the corner x, y < 1/4 (the mesh's guard zones filled first) and
// returns the bytes the regrid's transfers wrote.
std::size_t refine_first(Mesh& mm) {
  std::vector<Flag> f(mm.tree().size(), Flag::keep);
  for (int id : mm.local_leaves())
    if (mm.tree().block_lo(id)[0] < 0.25 && mm.tree().block_lo(id)[1] < 0.25) f[id] = Flag::refine;
  mm.fill_guards();
  transfer_bytes() = {};
  EXPECT_TRUE(mm.regrid(f));
  return transfer_bytes().written;
}

// Given a mesh whose variables include a scratch one, then it is not in unk (vars(), so
// never written), it has its own storage and arena, its guard fill works alone, and a
// regrid moves exactly the bytes it moves without it (scratch is not prolonged).
TEST(MeshScratch, GivenAScratchVariable_ThenItLivesApartAndARegridDoesNotMoveIt) {
  const auto p = params({"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2",
                         "mesh.lrefine_max=2", "mesh.maxblocks=16"});
  std::vector<VarInfo> with = {VarInfo("a"), VarInfo("s").with_role(VarRole::scratch)};
  Mesh m(p, MPI_COMM_WORLD, with, 2);
  Mesh plain(p, MPI_COMM_WORLD, {VarInfo("a")}, 2);
  ASSERT_EQ(m.vars().size(), 1u);
  EXPECT_EQ(m.var_index("s"), -1);
  ASSERT_EQ(m.scratch_vars().size(), 1u);
  EXPECT_EQ(m.scratch_index("s"), 0);
  EXPECT_EQ(m.scratch_storage().arena().name(), "scratch_vars");
  EXPECT_EQ(m.storage().shape().nvar, 1);
  // The scratch variable's guard fill: every guard zone of an interior face gets a
  // neighbour's value (7 everywhere), the unk variable's stay untouched (-1).
  const BlockShape& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      auto u = m.view(id, tag);
      auto w = m.scratch_view(id, tag);
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) {
          const bool in =
              i >= s.g(0) && i < s.g(0) + s.ni(0) && j >= s.g(1) && j < s.g(1) + s.ni(1);
          u(0, i, j, 0) = in ? 1.0 : -1.0;
          w(0, i, j, 0) = in ? 7.0 : -1.0;
        }
    }
  });
  m.fill_scratch_guards(m.scratch_set({"s"}));
  long bad = 0;
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      auto u = m.view(id, tag);
      auto w = m.scratch_view(id, tag);
      bad += w(0, s.g(0) - 1, s.g(1), 0) != 7.0;  // outflow or a neighbour: 7
      bad += u(0, s.g(0) - 1, s.g(1), 0) != -1.0;
    }
  });
  EXPECT_EQ(bad, 0);
  const auto with_scratch = refine_first(m), without = refine_first(plain);
  EXPECT_GT(without, 0u);
  EXPECT_EQ(with_scratch, without);
  EXPECT_TRUE(contains(error_of([&] { m.scratch_set({"a"}); }), "no scratch variable 'a'"));
}

// Given a mesh with a derived variable besides an independent one, when a regrid refines a
// block, then it moves exactly the bytes it moves without the derived variable (the unit
// that recomputes it does so after the regrid): the new children's independent variable
// is prolonged (3), their derived one holds the zeros of a fresh slot, not the parent's
// -5; and the derived variable is in unk (so written to files).
TEST(MeshDerived, GivenADerivedVariable_ThenARegridDoesNotMoveIt) {
  const auto p = params({"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2",
                         "mesh.lrefine_max=2", "mesh.maxblocks=16"});
  Mesh m(p, MPI_COMM_WORLD, {VarInfo("a"), VarInfo("d").with_role(VarRole::derived)}, 2);
  Mesh plain(p, MPI_COMM_WORLD, {VarInfo("a")}, 2);
  ASSERT_EQ(m.vars().size(), 2u);
  EXPECT_EQ(m.var_index("d"), 1);
  // Every slot of the storage holds the marker -5 in d; the leaves hold 3 in a.
  m.with_layout([&](auto tag) {
    for (int slot = 0; slot < m.storage().maxblocks(); ++slot) {
      auto u = m.storage().view(slot, tag);
      const BlockShape& s = m.shape();
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) {
          u(0, i, j, 0) = 3.0;
          u(1, i, j, 0) = -5.0;
        }
    }
  });
  const auto with_derived = refine_first(m), without = refine_first(plain);
  EXPECT_GT(without, 0u);
  EXPECT_EQ(with_derived, without);
  const BlockShape& s = m.shape();
  long children = 0, bad = 0;
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      if (m.tree().node(id).level != 1) continue;
      ++children;
      auto u = m.view(id, tag);
      bad += u(0, s.g(0), s.g(1), 0) != 3.0;  // prolonged (uniform data: exact)
      bad += u(1, s.g(0), s.g(1), 0) != 0.0;  // not moved: a fresh slot's zero
    }
  });
  EXPECT_EQ(bad, 0);
  int total = 0;
  MPI_Allreduce(&children, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, 4);
}

}  // namespace
}  // namespace tessera::mesh

// Specifications for Mesh::accumulate_guards (mesh/mesh.hpp), the transpose of the
// same-level guard fill that particle-in-cell deposition needs: what a block deposited in
// its guard zones is summed into the interiors it overlaps, nothing is lost or created on
// periodic and reflecting faces, outflow faces absorb, the result is bitwise the same on
// any number of ranks and in either layout, and a mesh with more than one leaf level is a
// one-line error.
//
// Every test is collective on MPI_COMM_WORLD and correct for any number of ranks (as in
// test_mesh.cpp): results that depend on other ranks' data are gathered with MPI_Allreduce
// into arrays indexed by node id in which exactly one rank writes each entry, and summed
// in node order, so every rank checks the same numbers.
#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/mesh.hpp"
#include "mesh/tree.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::mesh {
namespace {

using testing_util::contains;
using testing_util::error_of;

const char* const kAxes = "xyz";

void sum_over_ranks(std::vector<double>& v) {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);
}

// Every mesh.* key declared at its default, then `overrides` ("mesh.key=value").
base::Params mesh_params(const std::vector<std::string>& overrides) {
  base::Params p;
  Mesh::declare_params(p);
  for (const auto& o : overrides) p.apply_override(o);
  return p;
}

// Both faces of `axis` set to `lower` and `upper`.
std::vector<std::string> faces(int axis, const std::string& lower, const std::string& upper) {
  const std::string ax(1, kAxes[axis]);
  return {"mesh." + ax + "l_boundary_type=" + lower, "mesh." + ax + "r_boundary_type=" + upper};
}

// A scalar and the three components of a vector, as a PIC unit declares rho and J.
std::vector<VarInfo> scalar_and_vector() {
  return {{"rho", -1}, {"jx", 0}, {"jy", 1}, {"jz", 2}};
}

// f(id, u) for every local leaf; u is the block's view in the run's layout.
template <class F>
void for_local_leaves(Mesh& m, F&& f) {
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) f(id, m.view(id, tag));
  });
}

bool interior(const BlockShape& s, int i, int j, int k) {
  const int x[3] = {i, j, k};
  for (int a = 0; a < 3; ++a)
    if (x[a] < s.g(a) || x[a] >= s.g(a) + s.ni(a)) return false;
  return true;
}

// f(v, i, j, k) for every zone of a block array, guards included.
template <class F>
void for_all_zones(const BlockShape& s, F&& f) {
  for (int v = 0; v < s.nvar; ++v)
    for (int k = 0; k < s.n(2); ++k)
      for (int j = 0; j < s.n(1); ++j)
        for (int i = 0; i < s.n(0); ++i) f(v, i, j, k);
}

// A value that depends only on (seed, node id, variable, array index), spread over 2^-20
// .. 2^20 so that summing the same numbers in another order changes the last bits.
double pattern(std::uint64_t seed, int id, int v, int i, int j, int k) {
  std::uint64_t h = seed;
  for (std::uint64_t x : {std::uint64_t(id), std::uint64_t(v), std::uint64_t(i), std::uint64_t(j),
                          std::uint64_t(k)}) {
    h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  const double mant = 1.0 + double(h >> 11) * 0x1.0p-53;
  return std::ldexp((h & 1) ? -mant : mant, int(h % 41) - 20);
}

// Interior-only and guard-only sums per (node, variable), gathered: [id * nvar + v].
struct Sums {
  std::vector<double> interior, guards;
};
Sums node_sums(Mesh& m) {
  const BlockShape& s = m.shape();
  Sums out{std::vector<double>(std::size_t(m.tree().size()) * s.nvar, 0.0),
           std::vector<double>(std::size_t(m.tree().size()) * s.nvar, 0.0)};
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      auto& to = interior(s, i, j, k) ? out.interior : out.guards;
      to[std::size_t(id) * s.nvar + v] += u(v, i, j, k);
    });
  });
  sum_over_ranks(out.interior);
  sum_over_ranks(out.guards);
  return out;
}

// Count of guard zones holding anything but +0.0, over all ranks.
long nonzero_guards(Mesh& m) {
  const BlockShape& s = m.shape();
  long bad = 0;
  for_local_leaves(m, [&](int, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      if (!interior(s, i, j, k) && u(v, i, j, k) != 0.0) ++bad;
    });
  });
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return bad;
}

struct AccCase {
  int ndim;
  const char* layout;
  int nguard;
};

std::ostream& operator<<(std::ostream& os, const AccCase& c) {
  return os << c.ndim << "d_" << c.layout << "_ng" << c.nguard;
}

// 3 x 2 (x 1) roots of 8^d zones: 1, 2 and 4 ranks all hold leaves with remote neighbours
// and in 3-D the one root along z is its own periodic neighbour.
std::vector<std::string> case_params(const AccCase& c, const std::string& bc) {
  std::vector<std::string> o = {"mesh.ndim=" + std::to_string(c.ndim),
                                "mesh.nxb=8",
                                "mesh.nblockx=3",
                                "mesh.nblocky=2",
                                "mesh.nblockz=1",
                                std::string("mesh.layout=") + c.layout,
                                "mesh.maxblocks=64"};
  for (int a = 0; a < 3; ++a)
    for (const auto& f : faces(a, bc, bc)) o.push_back(f);
  return o;
}

// Expected interior value after every guard zone held 1 and every interior 0: the number of
// guard zones (of this block, folded, and of its neighbours) landing on zone (i, j, k) with
// their signs. On each active axis a zone within nguard of its lower face receives one layer
// from that side: +1 from a neighbour (periodic too), the vector sign across a reflecting
// face, 0 across an outflow face; the same at the upper face. Guard zones map axis by axis,
// so the count is the product over axes of (1 + lower + upper), less the zone itself.
double expected_count(const Mesh& m, int id, int v, int i, int j, int k) {
  const BlockShape& s = m.shape();
  const Node& n = m.tree().node(id);
  const int x[3] = {i, j, k};
  double prod = 1.0;
  for (int a = 0; a < m.ndim(); ++a) {
    const int li = x[a] - s.ng;
    double f = 1.0;
    for (int side = 0; side < 2; ++side) {
      const bool near = side ? li >= s.nx - s.ng : li < s.ng;
      if (!near) continue;
      const bool edge = n.pos[a] == (side ? m.tree().geometry().nblocks_at(a, n.level) - 1 : 0);
      const Boundary bc = m.boundary(a, side);
      if (!edge || bc == Boundary::periodic)
        f += 1.0;
      else if (bc == Boundary::reflecting)
        f += m.vars()[v].vector_axis == a ? -1.0 : 1.0;
    }
    prod *= f;
  }
  return prod - 1.0;
}

// Every guard zone 1, every interior 0; accumulate; count interiors that differ from
// expected_count (over all ranks).
long unit_deposit_mismatches(Mesh& m) {
  const BlockShape& s = m.shape();
  for_local_leaves(m, [&](int, auto u) {
    for_all_zones(
        s, [&](int v, int i, int j, int k) { u(v, i, j, k) = interior(s, i, j, k) ? 0.0 : 1.0; });
  });
  m.accumulate_guards(0, s.nvar);
  long bad = 0;
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      if (interior(s, i, j, k) && u(v, i, j, k) != expected_count(m, id, v, i, j, k)) {
        if (bad < 5)
          ADD_FAILURE() << "node " << id << " var " << v << " zone (" << i << "," << j << "," << k
                        << "): " << u(v, i, j, k) << " != " << expected_count(m, id, v, i, j, k);
        ++bad;
      }
    });
  });
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return bad;
}

class MeshAccumulate : public ::testing::TestWithParam<AccCase> {};

// Given a periodic uniform mesh with rough values in every guard zone and interior, when
// guards are accumulated, then the global sum of the interiors equals the global sum of
// everything before (to round-off; sums taken per node and added in node order, so every
// rank count computes the same numbers), and every guard zone is zero.
TEST_P(MeshAccumulate, GivenPeriodicRoughDeposits_ThenTheTotalIsConservedAndGuardsAreZero) {
  const AccCase c = GetParam();
  Mesh m(mesh_params(case_params(c, "periodic")), MPI_COMM_WORLD, scalar_and_vector(), c.nguard);
  const BlockShape& s = m.shape();
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s,
                  [&](int v, int i, int j, int k) { u(v, i, j, k) = pattern(11, id, v, i, j, k); });
  });
  const Sums before = node_sums(m);
  m.accumulate_guards(0, s.nvar);
  const Sums after = node_sums(m);
  for (int v = 0; v < s.nvar; ++v) {
    double total = 0.0, scale = 0.0, got = 0.0;
    for (int id : m.tree().leaves()) {
      const std::size_t e = std::size_t(id) * s.nvar + v;
      total += before.interior[e] + before.guards[e];
      scale += std::fabs(before.interior[e]) + std::fabs(before.guards[e]);
      got += after.interior[e];
    }
    EXPECT_NEAR(got, total, 1e-13 * scale) << "variable " << v;
  }
  EXPECT_EQ(nonzero_guards(m), 0);
}

// Given a periodic mesh in which every block wrote 1 into every guard zone (interiors 0),
// when guards are accumulated, then each interior zone holds exactly the number of guard
// zones overlapping it: 1 near a face, 3 near an edge, 7 near a corner (3-D), 0 elsewhere.
TEST_P(MeshAccumulate, GivenUnitDepositsInEveryGuard_ThenEachZoneCountsTheGuardsOverIt) {
  const AccCase c = GetParam();
  Mesh m(mesh_params(case_params(c, "periodic")), MPI_COMM_WORLD, scalar_and_vector(), c.nguard);
  EXPECT_EQ(unit_deposit_mismatches(m), 0);
  EXPECT_EQ(nonzero_guards(m), 0);
  // The corner zone of a 3-D block receives from all 7 neighbours.
  if (c.ndim == 3 && !m.local_leaves().empty())
    m.with_layout([&](auto tag) {
      const int id = m.local_leaves()[0], g = m.shape().ng;
      EXPECT_EQ(m.view(id, tag)(0, g, g, g), 7.0);
    });
}

// Given a fixed pseudo-random pattern (a function of node id and array index, spread over
// 40 binary orders of magnitude) in every zone, when guards are accumulated on all ranks of
// MPI_COMM_WORLD and, on every rank, on a serial copy of the same mesh (MPI_COMM_SELF,
// var-major), then every zone of every leaf is bitwise identical: contributions are summed
// in plan order, not in arrival order, whatever the rank count and layout.
TEST_P(MeshAccumulate, GivenAFixedPattern_ThenEveryZoneIsBitwiseTheSerialVarMajorResult) {
  const AccCase c = GetParam();
  auto o = case_params(c, "periodic");
  // x periodic, y reflecting, z (3-D) periodic: remote sums, folds and corners together.
  for (const auto& f : faces(1, "reflecting", "reflecting")) o.push_back(f);
  Mesh m(mesh_params(o), MPI_COMM_WORLD, scalar_and_vector(), c.nguard);
  o.push_back("mesh.layout=var_major");
  Mesh serial(mesh_params(o), MPI_COMM_SELF, scalar_and_vector(), c.nguard);
  ASSERT_EQ(serial.tree().size(), m.tree().size());
  const BlockShape& s = m.shape();
  for (Mesh* x : {&m, &serial})
    for_local_leaves(*x, [&](int id, auto u) {
      for_all_zones(
          s, [&](int v, int i, int j, int k) { u(v, i, j, k) = pattern(29, id, v, i, j, k); });
    });
  m.accumulate_guards(0, s.nvar);
  serial.accumulate_guards(0, s.nvar);
  std::vector<double> differing(m.tree().size(), 0.0);
  serial.with_layout([&](auto stag) {
    for_local_leaves(m, [&](int id, auto u) {
      const auto r = serial.view(id, stag);
      for_all_zones(s, [&](int v, int i, int j, int k) {
        if (u(v, i, j, k) != r(v, i, j, k) ||
            std::signbit(u(v, i, j, k)) != std::signbit(r(v, i, j, k)))
          differing[id] += 1.0;
      });
    });
  });
  sum_over_ranks(differing);
  for (int id : m.tree().leaves()) EXPECT_EQ(differing[id], 0.0) << "node " << id;
}

// Given outflow faces on x and y (and periodic z in 3-D), when unit guard deposits are
// accumulated, then deposits beyond an outflow face are dropped (absorbing) and the rest
// are counted as on a periodic mesh; the total falls by exactly the dropped guards.
TEST_P(MeshAccumulate, GivenOutflowFaces_ThenDepositsBeyondThemAreDropped) {
  const AccCase c = GetParam();
  auto o = case_params(c, "outflow");
  for (const auto& f : faces(2, "periodic", "periodic")) o.push_back(f);
  Mesh m(mesh_params(o), MPI_COMM_WORLD, scalar_and_vector(), c.nguard);
  EXPECT_EQ(unit_deposit_mismatches(m), 0);
  EXPECT_EQ(nonzero_guards(m), 0);
}

// Given reflecting faces (x: reflecting both; y: outflow below, reflecting above), when
// unit guard deposits are accumulated, then each deposit beyond a reflecting face lands on
// its mirror zone with +1 for the scalar and the tangential components and -1 for the
// normal component (corners take the product of the signs, and a corner beyond a reflecting
// face next to a neighbour reaches that neighbour); the scalar is conserved except for
// what the outflow face drops.
TEST_P(MeshAccumulate, GivenReflectingFaces_ThenDepositsFoldOntoMirrorZonesWithVectorSigns) {
  const AccCase c = GetParam();
  auto o = case_params(c, "reflecting");
  for (const auto& f : faces(1, "outflow", "reflecting")) o.push_back(f);
  Mesh m(mesh_params(o), MPI_COMM_WORLD, scalar_and_vector(), c.nguard);
  EXPECT_EQ(unit_deposit_mismatches(m), 0);
  EXPECT_EQ(nonzero_guards(m), 0);
}

// Given periodic and reflecting faces (no outflow), interiors u and guard deposits G, then
// accumulate_guards is the transpose of fill_guards: the sum over guard zones of
// fill(u) * G equals the sum over interior zones of u * accumulate(G), for every variable
// (to round-off). This is what makes a fill after an accumulate consistent.
TEST_P(MeshAccumulate, GivenPeriodicAndReflectingFaces_ThenAccumulateIsTheTransposeOfTheFill) {
  const AccCase c = GetParam();
  auto o = case_params(c, "periodic");
  for (const auto& f : faces(0, "reflecting", "reflecting")) o.push_back(f);
  Mesh m(mesh_params(o), MPI_COMM_WORLD, scalar_and_vector(), c.nguard);
  const BlockShape& s = m.shape();
  const std::size_t nn = std::size_t(m.tree().size()) * s.nvar;
  std::vector<double> lhs(nn, 0.0), rhs(nn, 0.0), scale(nn, 0.0);
  // <fill(u), G> over guard zones.
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      u(v, i, j, k) = interior(s, i, j, k) ? pattern(3, id, v, i, j, k) : 0.0;
    });
  });
  m.fill_guards();
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      if (interior(s, i, j, k)) return;
      const double t = u(v, i, j, k) * pattern(5, id, v, i, j, k);
      lhs[std::size_t(id) * s.nvar + v] += t;
      scale[std::size_t(id) * s.nvar + v] += std::fabs(t);
    });
  });
  // <u, accumulate(G)> over interior zones.
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      u(v, i, j, k) = interior(s, i, j, k) ? 0.0 : pattern(5, id, v, i, j, k);
    });
  });
  m.accumulate_guards(0, s.nvar);
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      if (interior(s, i, j, k))
        rhs[std::size_t(id) * s.nvar + v] += u(v, i, j, k) * pattern(3, id, v, i, j, k);
    });
  });
  sum_over_ranks(lhs);
  sum_over_ranks(rhs);
  sum_over_ranks(scale);
  for (int v = 0; v < s.nvar; ++v) {
    double l = 0.0, r = 0.0, sc = 0.0;
    for (int id : m.tree().leaves()) {
      l += lhs[std::size_t(id) * s.nvar + v];
      r += rhs[std::size_t(id) * s.nvar + v];
      sc += scale[std::size_t(id) * s.nvar + v];
    }
    EXPECT_NEAR(l, r, 1e-13 * sc) << "variable " << v;
  }
}

INSTANTIATE_TEST_SUITE_P(MeshAccumulate, MeshAccumulate,
                         ::testing::Values(AccCase{2, "var_major", 2}, AccCase{2, "zone_major", 3},
                                           AccCase{3, "var_major", 3}, AccCase{3, "zone_major", 2}),
                         [](const auto& info) {
                           std::ostringstream os;
                           os << info.param;
                           return os.str();
                         });

// Given variables [1, 3) only, when guards are accumulated, then those variables move and
// the others (guards and interiors) are untouched; a range outside the variables is a
// one-line error.
TEST(MeshAccumulateRange, GivenASubrangeOfVariables_ThenOnlyThoseMove) {
  auto o = faces(0, "periodic", "periodic");
  for (const auto& f : faces(1, "periodic", "periodic")) o.push_back(f);
  o.insert(o.end(), {"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2"});
  Mesh m(mesh_params(o), MPI_COMM_WORLD, scalar_and_vector(), 2);
  const BlockShape& s = m.shape();
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s,
                  [&](int v, int i, int j, int k) { u(v, i, j, k) = pattern(7, id, v, i, j, k); });
  });
  m.accumulate_guards(1, 2);
  long changed_outside = 0, unchanged_guards_inside = 0;
  for_local_leaves(m, [&](int id, auto u) {
    for_all_zones(s, [&](int v, int i, int j, int k) {
      const bool in_range = v >= 1 && v < 3;
      if (!in_range && u(v, i, j, k) != pattern(7, id, v, i, j, k)) ++changed_outside;
      if (in_range && !interior(s, i, j, k) && u(v, i, j, k) != 0.0) ++unchanged_guards_inside;
    });
  });
  EXPECT_EQ(changed_outside, 0);
  EXPECT_EQ(unchanged_guards_inside, 0);
  const std::string e = error_of([&] { m.accumulate_guards(3, 2); });
  EXPECT_TRUE(contains(e, "accumulate_guards(3, 2) is outside the 4 variables"));
  EXPECT_EQ(e.find('\n'), std::string::npos);
}

// Given a tree with leaves on two levels, when guards are accumulated, then every rank
// throws the same one-line tessera::Error naming the levels; after derefining back to one
// level it works again.
TEST(MeshAccumulateLevels, GivenLeavesOnTwoLevels_ThenAccumulateIsAOneLineError) {
  auto o = faces(0, "periodic", "periodic");
  for (const auto& f : faces(1, "periodic", "periodic")) o.push_back(f);
  o.insert(o.end(),
           {"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2", "mesh.lrefine_max=2"});
  Mesh m(mesh_params(o), MPI_COMM_WORLD, {{"rho", -1}}, 2);
  m.fill_guards();
  std::vector<Flag> flags(m.tree().size(), Flag::keep);
  flags[m.tree().leaves()[0]] = Flag::refine;
  ASSERT_TRUE(m.regrid(flags));
  const std::string e = error_of([&] { m.accumulate_guards(0, 1); });
  EXPECT_TRUE(contains(e, "one refinement level"));
  EXPECT_TRUE(contains(e, "leaves on 2 levels"));
  EXPECT_EQ(e.find('\n'), std::string::npos);
  m.fill_guards();
  std::vector<Flag> back(m.tree().size(), Flag::derefine);
  ASSERT_TRUE(m.regrid(back));
  EXPECT_EQ(error_of([&] { m.accumulate_guards(0, 1); }), "(no tessera::Error thrown)");
}

}  // namespace
}  // namespace tessera::mesh

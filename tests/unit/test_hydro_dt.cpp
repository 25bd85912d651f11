// Hydro's time step from its end-of-step check (hydro.hpp: check, max_dt). With a
// uniform-gamma EOS the check computes the time-step rate leaf by leaf while the leaf is in
// cache, and the next max_dt takes it as long as the mesh's state epoch is unchanged
// (Mesh::state_epoch). These tests hold the contract: the kept rate is the rate max_dt
// computes itself, to the bit; a touch (the driver's, before each operator), a regrid that
// moves data, or another SIMD target makes max_dt compute it afresh. In a one-stage step
// the sweep makes check()'s test and takes the rate row by row as it finishes each row, and
// check() takes that result: the same rate bits and the same bad zone as its own pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/params.hpp"
#include "base/simd.hpp"
#include "driver/simulation.hpp"
#include "driver/units.hpp"
#include "mesh/mesh.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/unit.hpp"
#include "simd_targets.hpp"

namespace tessera {
namespace {

using hydro::Hydro;

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// A 2-D gamma-law run's units on a 2 x 2 mesh of 8^2 blocks (two levels allowed), bound
// as in a run, with a smooth flow whose fastest zone is not at a block's edge.
struct HydroDt : ::testing::Test {
  base::Params p;
  physics::Units units;
  std::vector<physics::Unit*> order;
  std::unique_ptr<mesh::Mesh> m;
  Hydro* h = nullptr;

  std::vector<std::string> extra;  // more parameters (a derived fixture's)

  void SetUp() override {
    driver::declare_all_params(p);
    for (const char* o : {"mesh.ndim=2", "mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2",
                          "mesh.lrefine_max=2", "mesh.maxblocks=40"})
      p.apply_override(o);
    for (const auto& o : extra) p.apply_override(o);
    std::vector<physics::Unit*> operators;
    units = driver::make_units(p, &operators);
    // The driver's order: the services (the EOS), then the operators (hydro).
    for (const auto& u : units.all())
      if (std::find(operators.begin(), operators.end(), u.get()) == operators.end())
        order.push_back(u.get());
    order.insert(order.end(), operators.begin(), operators.end());
    const auto vars = driver::unk_variables(units);
    m = std::make_unique<mesh::Mesh>(p, MPI_COMM_SELF, vars, driver::unk_nguard(units),
                                     driver::unk_nflux(units, vars));
    const physics::RunContext ctx;
    for (auto* u : order) u->bind(*m, driver::services_for(units, *u), ctx);
    h = dynamic_cast<Hydro*>(units.find("hydro"));
    ASSERT_NE(h, nullptr);
    set_flow(1.0);
  }

  // rho = 1 + 0.5 sin, u = a (0.3 + x y), v = -0.2 a, p = 1 (gamma 1.4; conserved form), then the
  // units' initialise (eint and the EOS state), as a problem's initial conditions.
  void set_flow(double a) {
    const int dens = m->var_index("dens"), momx = m->var_index("momx"), momy = m->var_index("momy"),
              momz = m->var_index("momz"), etot = m->var_index("etot");
    ASSERT_TRUE(dens >= 0 && momx >= 0 && momy >= 0 && momz >= 0 && etot >= 0);
    m->for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
      const auto& s = m->shape();
      for (int k = 0; k < s.n(2); ++k)
        for (int j = 0; j < s.n(1); ++j)
          for (int i = 0; i < s.n(0); ++i) {
            const double x = g.x(i - s.g(0)), y = g.y(j - s.g(1));
            const double rho = 1.0 + 0.5 * std::sin(6.0 * x + 1.0), vx = a * (0.3 + x * y),
                         vy = -0.2 * a;
            u(dens, i, j, k) = rho;
            u(momx, i, j, k) = rho * vx;
            u(momy, i, j, k) = rho * vy;
            u(momz, i, j, k) = 0.0;
            u(etot, i, j, k) = 1.0 / 0.4 + 0.5 * rho * (vx * vx + vy * vy);
          }
    });
    for (auto* u : order) u->initialise(*m);
  }

  // max_dt computed afresh (the state as the epoch has never seen it).
  double fresh_dt() {
    m->touch_state();
    return h->max_dt(*m);
  }
};

// Given a good state, when hydro's check has run, then max_dt gives the bits it computes
// itself; without a touch it keeps that value even if unk changed (the caller's contract),
// and after one it computes the new state's.
TEST_F(HydroDt, GivenTheCheckedState_ThenMaxDtIsTheSameBitsUntilTheStateIsTouched) {
  const double want = fresh_dt();
  ASSERT_FALSE(h->check(*m).bad());
  EXPECT_TRUE(same_bits(h->max_dt(*m), want));
  // Twice the velocities: a faster flow, a shorter step; not seen until a touch.
  set_flow(2.0);
  const double faster = fresh_dt();
  EXPECT_LT(faster, want);
  set_flow(1.0);
  m->touch_state();
  ASSERT_FALSE(h->check(*m).bad());
  set_flow(2.0);  // written without a touch: the check's rate is still taken
  EXPECT_TRUE(same_bits(h->max_dt(*m), want));
  m->touch_state();
  EXPECT_TRUE(same_bits(h->max_dt(*m), faster));
}

// Given the checked state, when a regrid moves data (refines a leaf: dx halves there), then
// max_dt computes the new leaves' rate; a regrid that moves nothing keeps the check's.
TEST_F(HydroDt, GivenARegridThatMovesData_ThenMaxDtComputesItAfresh) {
  ASSERT_FALSE(h->check(*m).bad());
  const double before = h->max_dt(*m);
  auto before_move = [&] {
    for (auto* u : order) u->before_regrid(*m);
  };
  std::vector<mesh::Flag> keep(m->tree().size(), mesh::Flag::keep);
  m->fill_guards();
  set_flow(2.0);  // unseen (no touch): a regrid that moves nothing must not reveal it
  const auto epoch0 = m->state_epoch();
  EXPECT_FALSE(m->regrid(keep, before_move));
  EXPECT_EQ(m->state_epoch(), epoch0);
  EXPECT_TRUE(same_bits(h->max_dt(*m), before));
  set_flow(1.0);
  m->fill_guards();
  std::vector<mesh::Flag> flags(m->tree().size(), mesh::Flag::keep);
  flags[m->local_leaves().front()] = mesh::Flag::refine;
  ASSERT_TRUE(m->regrid(flags, before_move));
  EXPECT_NE(m->state_epoch(), epoch0);
  for (auto* u : order) u->after_regrid(*m);
  const double after = h->max_dt(*m);
  EXPECT_LT(after, before);
  EXPECT_TRUE(same_bits(after, fresh_dt()));
}

// Given the checked state, when another SIMD target is forced, then max_dt computes the
// rate with that target (targets may round it differently): here of a state the check did
// not see, so the kept rate would show.
TEST_F(HydroDt, GivenAnotherSimdTarget_ThenMaxDtComputesItWithThatTarget) {
  test::ForceGuard guard;
  const double faster = [&] {
    set_flow(2.0);
    simd::force("scalar");
    const double dt = fresh_dt();
    simd::force("auto");
    set_flow(1.0);
    return dt;
  }();
  m->touch_state();
  ASSERT_FALSE(h->check(*m).bad());
  const double kept = h->max_dt(*m);
  set_flow(2.0);  // no touch
  EXPECT_TRUE(same_bits(h->max_dt(*m), kept));
  simd::force("scalar");
  EXPECT_TRUE(same_bits(h->max_dt(*m), faster));
}

// Given a rate kept from one mesh, when hydro is asked about another mesh at the same
// epoch, then it computes that mesh's own.
TEST_F(HydroDt, GivenAnotherMeshAtTheSameEpoch_ThenMaxDtComputesItsOwn) {
  ASSERT_FALSE(h->check(*m).bad());
  const double kept = h->max_dt(*m);
  auto other = std::make_unique<mesh::Mesh>(p, MPI_COMM_SELF, driver::unk_variables(units),
                                            driver::unk_nguard(units),
                                            driver::unk_nflux(units, driver::unk_variables(units)));
  std::swap(m, other);
  set_flow(2.0);
  while (m->state_epoch() < other->state_epoch()) m->touch_state();  // the kept rate's epoch
  ASSERT_EQ(m->state_epoch(), other->state_epoch());
  const double dt = h->max_dt(*m);
  EXPECT_LT(dt, kept);
  std::swap(m, other);
}

bool same_zone(const physics::BadZone& a, const physics::BadZone& b) {
  return a.node == b.node && a.i == b.i && a.j == b.j && a.k == b.k && a.what == b.what &&
         same_bits(a.value, b.value);
}

// The same fixture with each integrator (the one-stage sweep checks rows as it finishes
// them, the Runge-Kutta schemes blocks as their last stage's blend finishes them), in 2-D
// var-major and 3-D zone-major storage (2 x 2 x 2 blocks of 8^3: the row hook's 3-D order).
struct HydroDtSwept : HydroDt,
                      ::testing::WithParamInterface<std::tuple<const char*, int, const char*>> {
  void SetUp() override {
    const auto [integrator, nd, layout] = GetParam();
    extra = {std::string("hydro.integrator=") + integrator, "mesh.ndim=" + std::to_string(nd),
             std::string("mesh.layout=") + layout};
    if (nd == 3) extra.push_back("mesh.nblockz=2");
    HydroDt::SetUp();
  }
};
INSTANTIATE_TEST_SUITE_P(Integrators, HydroDtSwept,
                         ::testing::Values(std::make_tuple("hancock", 2, "var_major"),
                                           std::make_tuple("rk2", 2, "var_major"),
                                           std::make_tuple("rk3", 2, "var_major"),
                                           std::make_tuple("hancock", 3, "zone_major"),
                                           std::make_tuple("rk2", 3, "zone_major")));

// Given a step (uniform gamma, no mass scalars), when hydro's check runs, then it takes
// what the step found as it wrote the leaves: the rate max_dt gets is the bits check()'s
// own pass over the leaves gives, and without a touch check() does not look at unk again.
TEST_P(HydroDtSwept, GivenAStep_ThenTheCheckTakesWhatTheStepFound) {
  const double dt = 0.5 * fresh_dt();
  m->touch_state();
  h->advance(*m, dt);
  ASSERT_FALSE(h->check(*m).bad());
  const double swept = h->max_dt(*m);
  m->touch_state();  // check()'s own pass over the leaves
  ASSERT_FALSE(h->check(*m).bad());
  EXPECT_TRUE(same_bits(h->max_dt(*m), swept));
  // Another step, then a faster flow written without a touch: the sweep's result stands.
  m->touch_state();
  h->advance(*m, dt);
  set_flow(2.0);
  const auto epoch = m->state_epoch();
  ASSERT_FALSE(h->check(*m).bad());
  const double kept = h->max_dt(*m);
  ASSERT_EQ(m->state_epoch(), epoch);
  EXPECT_FALSE(same_bits(kept, fresh_dt()));
  EXPECT_GT(kept, fresh_dt());
}

// Given a NaN density planted in one zone, when a step spreads it, then the step's check
// names the zone check()'s own pass names (the first bad zone in leaf order,
// then k, j, i), with the same value.
TEST_P(HydroDtSwept, GivenAStepThatGoesBad_ThenTheStepsCheckNamesTheZoneTheFullCheckNames) {
  const double dt = 0.5 * fresh_dt();
  const int dens = m->var_index("dens");
  const int leaf = m->local_leaves()[2];
  const int kk = m->shape().ndim == 3 ? 2 : 0;  // the planted zone's k (interior)
  m->with_layout([&](auto tag) {
    const auto& s = m->shape();
    m->view(leaf, tag)(dens, s.g(0) + 5, s.g(1) + 3, s.g(2) + kk) = std::nan("");
  });
  m->touch_state();
  h->advance(*m, dt);
  const physics::BadZone swept = h->check(*m);
  ASSERT_TRUE(swept.bad());
  m->touch_state();
  const physics::BadZone full = h->check(*m);
  ASSERT_TRUE(full.bad());
  EXPECT_TRUE(same_zone(swept, full))
      << swept.what << " in " << swept.node << " (" << swept.i << "," << swept.j << ") against "
      << full.what << " in " << full.node << " (" << full.i << "," << full.j << ")";
  // The NaN reaches the zones next to it: the first bad one is below or left of it.
  EXPECT_EQ(full.node, leaf);
  EXPECT_LT((full.k * 8 + full.j) * 8 + full.i, (kk * 8 + 3) * 8 + 5);
}

}  // namespace
}  // namespace tessera

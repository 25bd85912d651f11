// Specifications of the flux limiters of physics/diffusion (verification.md §E): with
// F = -c lambda(R) / chi grad E and R = |grad E| / (chi E), every limiter tends to the
// diffusion limit lambda = 1/3 as R -> 0, never lets the flux exceed c E (lambda R <= 1
// for every R), and reaches free streaming (lambda R -> 1) as R -> infinity. And the
// Krylov layer's refusals: what this build cannot do is one line.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/params.hpp"
#include "physics/diffusion/diffusion.hpp"
#include "solvers/hypre_backend.hpp"
#include "solvers/krylov.hpp"
#include "tests/unit/test_util.hpp"

namespace tessera::diffusion {
namespace {

using testing_util::contains;
using testing_util::error_of;

constexpr Limiter kLimiters[] = {Limiter::levermore_pomraning, Limiter::larsen, Limiter::minerbo};

TEST(FluxLimiter, GivenSmallR_ThenEveryLimiterGivesTheDiffusionLimit) {
  for (const auto l : kLimiters) {
    EXPECT_NEAR(lambda(l, 0.0), 1.0 / 3.0, 1e-15);
    EXPECT_NEAR(lambda(l, 1e-6), 1.0 / 3.0, 1e-6);
  }
  EXPECT_EQ(lambda(Limiter::none, 1e6), 1.0 / 3.0);
}

TEST(FluxLimiter, GivenAnyR_ThenTheFluxNeverExceedsCE) {
  // lambda R <= 1 on a logarithmic sweep from 1e-8 to 1e8 (and it rises monotonically).
  for (const auto l : kLimiters) {
    double prev = 0.0;
    for (int q = -800; q <= 800; ++q) {
      const double R = std::pow(10.0, q / 100.0);
      const double f = lambda(l, R) * R;
      EXPECT_LE(f, 1.0 + 1e-15) << "R = " << R;
      EXPECT_GE(f, prev * (1 - 1e-14)) << "R = " << R;  // rising, up to round-off near 1
      prev = f;
    }
  }
}

TEST(FluxLimiter, GivenLargeR_ThenTheFluxTendsToFreeStreaming) {
  for (const auto l : kLimiters) EXPECT_NEAR(lambda(l, 1e8) * 1e8, 1.0, 1e-3);
  // Minerbo's two branches meet at R = 3/2.
  EXPECT_NEAR(lambda(Limiter::minerbo, 1.5 - 1e-12), lambda(Limiter::minerbo, 1.5 + 1e-12), 1e-11);
}

TEST(FluxLimiter, GivenAnUnknownName_ThenOneLineNamesTheChoices) {
  const auto e = error_of([] { limiter_named("wilson"); });
  EXPECT_TRUE(contains(e, "unknown limiter 'wilson'")) << e;
  EXPECT_TRUE(contains(e, "levermore_pomraning")) << e;
}

TEST(SolverOptions, GivenWhatABackendLacks_ThenOneLineRefusesIt) {
  base::Params p;
  solvers::Options::declare_params(p);
  EXPECT_EQ(solvers::Options::from(p).method, "bicgstab");
  p.apply_override("solver.method=gmres");
  EXPECT_TRUE(contains(error_of([&] { solvers::Options::from(p); }), "only with solver.backend"));
  p.apply_override("solver.method=cg");
  p.apply_override("solver.preconditioner=pfmg");
  EXPECT_TRUE(contains(error_of([&] { solvers::Options::from(p); }), "Struct interface"));
  p.apply_override("solver.preconditioner=boomeramg");
  p.apply_override("solver.backend=hypre");
  if (solvers::hypre_available())
    EXPECT_EQ(solvers::Options::from(p).preconditioner, "boomeramg");
  else
    EXPECT_TRUE(contains(error_of([&] { solvers::Options::from(p); }), "hypre not built in"));
}

}  // namespace
}  // namespace tessera::diffusion

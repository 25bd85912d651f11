#pragma once
// Self-gravity set-ups (problems/gravity_problems.cpp): the homogeneous Maclaurin
// spheroid (verification.md §H), a uniform sphere when its eccentricity is 0.
#include <memory>

#include "problems/problem.hpp"

namespace tessera::problems {

/// Declare the maclaurin.* parameters.
void declare_gravity_problem_params(base::Params& p);
/// The Maclaurin spheroid (problem.name = "maclaurin").
std::unique_ptr<Problem> make_maclaurin(const base::Params& p, const eos::Eos& eos);

}  // namespace tessera::problems

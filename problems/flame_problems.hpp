#pragma once
// Flame set-ups (problems/flame_problems.cpp): "flame_1d", a planar deflagration front.
#include <memory>

#include "problems/problem.hpp"

namespace tessera::problems {

/// Declare the flame_1d.* parameters.
void declare_flame_params(base::Params& p);
/// The flame_1d set-up with the run's EOS (kept by reference).
std::unique_ptr<Problem> make_flame_1d(const base::Params& p, const eos::Eos& eos);

}  // namespace tessera::problems

#pragma once
// The Gaussian pulse of verification.md §E (pulse.*): E(x, t) = E_bg + A (t0 / (t0 + t))^(d/2)
// exp(-|x - x0|^2 / (4 D (t0 + t))), the exact solution of the linear diffusion equation
// with constant coefficient D in d dimensions (3 in r-z: a pulse on the axis is a spherical
// one) from a Gaussian of age t0. The diffusion pulse problem hands it to the diffusion
// unit (its initial species, its exact boundary values, its L1 error); the M1 unit's
// radiation pulse starts from it at t = 0.
#include <array>
#include <cmath>

#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::problems {

struct GaussianPulse final : physics::ExactSolution {
  /// pulse.t0, pulse.amplitude, pulse.background, pulse.x0, y0, z0.
  explicit GaussianPulse(const base::Params& p);
  double t0 = 0, amplitude = 0, background = 0;
  std::array<double, 3> x0{};
  /// pulse.period: 0 for one pulse; L > 0 for a lattice of pulses L apart along every axis
  /// (Cartesian), the solution on a periodic box of any whole number of periods. Its
  /// value sums the nearest image and the two beside it per axis: the next ones weigh
  /// exp(-(3L/2)^2 / (4 D (t0 + t))) of the peak or less.
  double period = 0;
  double diffusing(const std::array<double, 3>& x, double t, double D, int nd,
                   int d) const override {
    const double tt = t0 + t, w = 4.0 * D * tt;
    double g = 1.0, r2 = 0.0;
    for (int a = 0; a < nd; ++a) {
      double dx = x[a] - x0[a];
      if (period > 0.0) {
        dx -= period * std::nearbyint(dx / period);
        g *= std::exp(-dx * dx / w) + std::exp(-(dx - period) * (dx - period) / w) +
             std::exp(-(dx + period) * (dx + period) / w);
      } else {
        r2 += dx * dx;
      }
    }
    if (period <= 0.0) g = std::exp(-r2 / w);
    return background + amplitude * std::pow(t0 / tt, 0.5 * d) * g;
  }
};

}  // namespace tessera::problems

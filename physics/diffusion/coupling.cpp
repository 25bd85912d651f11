// The diffusion unit's coupling to the gas (see diffusion.hpp): emission and absorption
// linearised in T about the step's start, before the implicit solve (the species' right
// sides and the coupled system's weights) and after it (the gas's energy from the
// radiation's change, so that radiation + gas energy is conserved).
#include <algorithm>
#include <cmath>
#include <utility>

#include "mesh/mesh.hpp"
#include "perf/timers.hpp"
#include "physics/diffusion/diffusion.hpp"
#include "physics/eos/eos_unit.hpp"

namespace tessera::diffusion {

template <class View>
std::pair<double, double> Diffusion::coupling_terms(const View& u, int i, int j, int k) const {
  const double rho = u(idens_, i, j, k), e = u(ieint_, i, j, k), T = u(itemp_, i, j, k);
  const double cv = T > 0.0 ? e / T : 0.0;
  const double eta = cv > 0.0 ? 4.0 * arad_ * T * T * T / (rho * cv) : 0.0;
  return {eta, 1.0 + af_sum_ * eta};
}

void Diffusion::couple_before(mesh::Mesh& m, double dt) {
  // Backward Euler in the coupling with a T^4 linearised about T^n (Fleck): for the gas
  // u = rho e, a T'^4 = a T^4 + eta (u' - u), eta = 4 a T^3 / (rho c_v), c_v = e / T
  // (ideal gas). The gas takes u' - u = -sum_s A_s (f_s a T'^4 - E_s') (A_s = dt c
  // kappa_s), so u' - u = -sum_s A_s (f_s a T^4 - E_s') / D, D = 1 + eta sum_s A_s f_s;
  // eliminating u' leaves in species s's equation the local term sig_s E_s' - A_s f_s
  // (eta / D) sum_{r != s} A_r E_r' and the source A_s f_s a T^4 / D. One species:
  // sig = A / (1 + A eta), Fleck's factor.
  const std::size_t ns = species_.size();
  acoef_.assign(ns, 0.0);
  for (int c : coupled_) acoef_[std::size_t(c)] = dt * (speed_ * kappa_a_[std::size_t(c)]);
  af_sum_ = 0.0;
  af_other_.assign(ns, 0.0);
  for (int r : coupled_) af_sum_ += acoef_[std::size_t(r)] * frac_[std::size_t(r)];
  for (int c : coupled_)
    for (int r : coupled_)
      if (r != c) af_other_[std::size_t(c)] += acoef_[std::size_t(r)] * frac_[std::size_t(r)];
  const auto& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      const auto w = m.scratch_view(id, tag);
      eos_->from_total_energy(u, s, id);  // T^n from the conserved variables
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (std::size_t c = 0; c < ns; ++c) w(sig_.vars[c], i, j, k) = 0.0;
        const double T = u(itemp_, i, j, k);
        const auto [eta, D] = coupling_terms(u, i, j, k);
        for (int c : coupled_) {
          const auto cc = std::size_t(c);
          // (One species: 1, not 1 + eta * 0, which is NaN where eta is infinite.)
          const double keep = coupled_.size() > 1 ? 1.0 + eta * af_other_[cc] : 1.0;
          w(sig_.vars[cc], i, j, k) = acoef_[cc] * keep / D;
          const double emit = acoef_[cc] * frac_[cc] / D;
          w(b_.vars[cc], i, j, k) += emit * arad_ * T * T * T * T;
        }
        if (coupled_.size() > 1) w(eh_.vars[0], i, j, k) = eta / D;
      });
    }
  });
  sig_on_ = true;
}

void Diffusion::couple_after(mesh::Mesh& m, double) {
  // The gas gives what the radiation took: du = -sum_s (A_s / D) (f_s a T^4 - E_s^{n+1})
  // per zone (T^n: the gas's state is unchanged since couple_before), so that the species
  // and u change together only by the diffusion fluxes.
  const auto& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        const double T = u(itemp_, i, j, k);
        const double aT4 = arad_ * T * T * T * T;
        const double D = coupling_terms(u, i, j, k).second;
        double gain = 0.0;  // what the species gain from the gas
        for (int c : coupled_) {
          const auto cc = std::size_t(c);
          gain += acoef_[cc] / D * (frac_[cc] * aT4 - u(ivar_[cc], i, j, k));
        }
        u(ietot_, i, j, k) -= gain;
      });
      eos_->from_total_energy(u, s, id);  // eint, temp, pres from the new total energy
    }
  });
  sig_on_ = false;
}

}  // namespace tessera::diffusion

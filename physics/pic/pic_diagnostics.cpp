// The PIC unit's diagnostics: species segments of a block, the kinetic and field energies,
// Ex's mode, and the charge-conservation error (see pic_unit.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "memory/tier_runtime.hpp"
#include "physics/particle_needs.hpp"
#include "physics/pic/pic_unit.hpp"
#include "physics/pic/unit_helpers.hpp"

namespace tessera::pic {

std::vector<std::size_t> Pic::segments_of(const double* type, std::size_t n) const {
  // The same split on a block's own (possibly staged) type array, relative to its start.
  std::vector<std::size_t> first(species_.size() + 1, n);
  first[0] = 0;
  for (std::size_t sp = 1; sp < species_.size(); ++sp)
    first[sp] = std::size_t(std::partition_point(type + first[sp - 1], type + n,
                                                 [&](double t) { return t <= double(sp); }) -
                            type);
  return first;
}

std::vector<std::size_t> Pic::segments(std::size_t b, std::size_t e) const {
  // Within a block the types are non-decreasing (species-major bins or tags).
  const double* type = set_->prop(kType);
  std::vector<std::size_t> first(species_.size() + 1, e);
  first[0] = b;
  for (std::size_t sp = 1; sp < species_.size(); ++sp)
    first[sp] = std::size_t(std::partition_point(type + first[sp - 1], type + e,
                                                 [&](double t) { return t <= double(sp); }) -
                            type);
  return first;
}

double Pic::kinetic() const {
  // Per species sum w (gamma - 1), times m c^2: per leaf in storage order (the leaf's
  // particles in the canonical order), the leaves' partials added in the tree's order, so that the
  // same bits come on any rank count (issue 48: a sum per rank added by MPI_SUM did not).
  const double* w = set_->prop(kWeight);
  const double* type = set_->prop(kType);
  const double* u[3] = {set_->prop(particles::VELX), set_->prop(particles::VELY),
                        set_->prop(particles::VELZ)};
  const int ns = int(species_.size());
  const auto ks = mesh_->leaf_sums(ns, [&](int id, double* out) {
    std::fill(out, out + ns, 0.0);
    for (std::size_t p = set_->begin(id); p < set_->end(id); ++p)
      out[std::size_t(type[p]) - 1] += w[p] * (lorentz_gamma({u[0][p], u[1][p], u[2][p]}) - 1.0);
  });
  double k = 0;
  for (std::size_t sp = 0; sp < species_.size(); ++sp)
    k += ks[sp] * (species_[sp].mass * cst::c * cst::c);
  return k;
}

Pic::Diag Pic::diagnose(mesh::Mesh& m) const {
  const auto& s = m.shape();
  const auto& tg = m.tree().geometry();
  const double k = 2 * cst::pi * mode_ / (tg.hi[0] - tg.lo[0]);
  // Per-leaf partials added exactly (Mesh::leaf_sums): the same bits on any
  // rank count.
  const auto d =
      m.leaf_sums_of_views(3, [&](int id, const auto& u, const mesh::BlockGeom&, double* out) {
        const Grid g = grid_of(m, id);
        // cos and sin of k x at Ex's positions, once per x index of the block.
        std::vector<double> cs(2 * std::size_t(s.n(0)));
        for (int i = 0; i < s.n(0); ++i) {
          const double x = g.x0[0] + (i + 0.5) * g.dx[0] - tg.lo[0];
          cs[2 * std::size_t(i)] = std::cos(k * x);
          cs[2 * std::size_t(i) + 1] = std::sin(k * x);
        }
        double e2 = 0, b2 = 0, c = 0, sn = 0;
        for_each_zone(s, [&](int i, int j, int kk) {
          double e = 0, b = 0;
          for (int a = 0; a < 3; ++a) {
            const double ea = u(ie_ + a, i, j, kk), ba = u(ib_ + a, i, j, kk);
            e += ea * ea, b += ba * ba;
          }
          e2 += e, b2 += b;
          const double ex = u(ie_, i, j, kk);
          c += ex * cs[2 * std::size_t(i)];
          sn -= ex * cs[2 * std::size_t(i) + 1];
        });
        out[0] = (0.5 * cst::eps0 * e2 + 0.5 / cst::mu0 * b2) * g.volume();
        out[1] = c;
        out[2] = sn;
      });
  return {d[0], d[1], d[2]};
}

double Pic::charge_error(mesh::Mesh& m) {
  const auto& s = m.shape();
  const int nd = m.ndim();
  const std::size_t ns = species_.size();
  const std::size_t cells = std::size_t(s.n(0)) * s.n(1) * s.n(2);
  // rhoq: the charge of every species at nodes, one species at a time (guards included,
  // then folded into their owners), so that the error can be relative to the largest
  // single-species density; with several species their sum is kept in `sum` meanwhile.
  double r[2] = {0, 0};
  std::vector<double> sum(ns > 1 ? m.local_leaves().size() * cells : 0);
  for (std::size_t sp = 0; sp < ns; ++sp) {
    const double q = species_[sp].charge;
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
      const Field rho = field_of(u, irho_);
      for (int kk = 0; kk < s.n(2); ++kk)
        for (int j = 0; j < s.n(1); ++j)
          for (int i = 0; i < s.n(0); ++i) rho(i, j, kk) = 0.0;
      const Grid g = grid_of(m, id);
      const double* x[3] = {set_->prop(particles::POSX), set_->prop(particles::POSY),
                            set_->prop(particles::POSZ)};
      const double* w = set_->prop(kWeight);
      const auto seg = segments(set_->begin(id), set_->end(id));
      for (std::size_t p = seg[sp]; p < seg[sp + 1]; ++p) {
        const Vec3 xp{x[0][p], x[1][p], x[2][p]};
        const double qw = q * w[p];
        dispatch(nd, order_, true, [&]<int D, int P, GatherScheme S>() {
          if constexpr (S == GatherScheme::energy_conserving) deposit_rho<D, P>(rho, g, xp, qw);
        });
      }
    });
    m.accumulate_guards(irho_, 1);
    std::size_t slot = 0;
    m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
      double* acc = ns > 1 ? sum.data() + slot * cells : nullptr;
      ++slot;
      for_each_zone(s, [&](int i, int j, int kk) {
        const double rho = u(irho_, i, j, kk);
        r[1] = std::max(r[1], std::abs(rho / cst::eps0));
        if (acc) {
          double& a = acc[i + std::size_t(s.n(0)) * (j + std::size_t(s.n(1)) * kk)];
          a = sp == 0 ? rho : a + rho;
        }
      });
    });
  }
  if (ns > 1) {
    std::size_t slot = 0;
    m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom&) {
      const double* acc = sum.data() + (slot++) * cells;
      for_each_zone(s, [&](int i, int j, int kk) {
        u(irho_, i, j, kk) = acc[i + std::size_t(s.n(0)) * (j + std::size_t(s.n(1)) * kk)];
      });
    });
  }
  // max |div E - rho_net/eps0| / max_s |rho_s/eps0| (as the kernel test: relative to one
  // species' charge density), div E by backward differences (E's guards are current),
  // rho_net = rhoq + the ion background. Next to an absorbing face the first order/2 + 1
  // node layers are left out: there the current of particles leaving is dropped beyond the
  // face while their shape still reaches these nodes, Mur sets the boundary nodes' E, and
  // a lower face's boundary node has no current from outside.
  const int skip = order_ / 2 + 1;
  m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom&) {
    const Grid g = grid_of(m, id);
    const mesh::Node& node = m.tree().node(id);
    std::array<int, 3> lo{0, 0, 0}, hi{0, 0, 0};  // node layers left out at each end
    for (int a = 0; a < nd; ++a)
      if (absorbing_[std::size_t(a)]) {
        if (node.pos[a] == 0) lo[std::size_t(a)] = skip;
        if (node.pos[a] == m.tree().geometry().nblocks_at(a, node.level) - 1)
          hi[std::size_t(a)] = skip;
      }
    for_each_zone(s, [&](int i, int j, int kk) {
      const int idx[3] = {i, j, kk};
      for (int a = 0; a < nd; ++a)
        if (idx[a] < s.g(a) + lo[std::size_t(a)] || idx[a] >= s.g(a) + s.ni(a) - hi[std::size_t(a)])
          return;
      double div = (u(ie_, i, j, kk) - u(ie_, i - 1, j, kk)) / g.dx[0];
      if (nd > 1) div += (u(ie_ + 1, i, j, kk) - u(ie_ + 1, i, j - 1, kk)) / g.dx[1];
      if (nd > 2) div += (u(ie_ + 2, i, j, kk) - u(ie_ + 2, i, j, kk - 1)) / g.dx[2];
      const double re = u(irho_, i, j, kk) / cst::eps0;
      r[0] = std::max(r[0], std::abs(div - (re + background_ / cst::eps0)));
    });
  });
  MPI_Allreduce(MPI_IN_PLACE, r, 2, MPI_DOUBLE, MPI_MAX, m.comm());
  return r[1] > 0 ? r[0] / r[1] : r[0];
}

}  // namespace tessera::pic

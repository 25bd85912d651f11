#include "mesh/flux_register.hpp"

#include <algorithm>
#include <map>

#include "base/error.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

namespace {
// The two transverse axes of `axis` in increasing order.
void transverse(int axis, int& t1, int& t2) {
  t1 = axis == 0 ? 1 : 0;
  t2 = axis == 2 ? 1 : 2;
}
}  // namespace

FluxRegister::FluxRegister(const BlockShape& s, int maxblocks, int nflux, memory::ArenaConfig cfg)
    : shape_(s), nflux_(nflux) {
  const int nt = s.nx;
  const std::size_t per = s.ndim == 1 ? 1 : (s.ndim == 2 ? nt : std::size_t(nt) * nt);
  face_size_ = per * std::size_t(nflux);
  arena_ = memory::Arena("flux", std::size_t(maxblocks) * 6 * face_size_ * sizeof(double), cfg);
}

void FluxRegister::build(const Tree& t, const std::vector<int>& slot_of, int me, Geometry geo) {
  me_ = me;
  geo_ = geo;
  ops_.clear();
  corrected_.clear();
  const int nd = t.geometry().ndim;
  const int half = shape_.nx / 2;
  for (int f = 0; f < t.size(); ++f) {
    const Node& n = t.node(f);
    if (!n.leaf() || n.level == 0) continue;
    for (int axis = 0; axis < nd; ++axis)
      for (int side = 0; side < 2; ++side) {
        IVec p = n.pos;
        p[axis] += side ? 1 : -1;
        if (t.outside(n.level, p) || t.find(n.level, p) >= 0) continue;
        // Covered by a coarser leaf one level up (2:1).
        const int c = t.find_coarser(n.level, p);
        const Node& cn = t.node(c);
        if (n.owner != me && cn.owner != me) continue;
        int t1, t2;
        transverse(axis, t1, t2);
        FaceOp op{};
        op.fine_rank = n.owner;
        op.coarse_rank = cn.owner;
        op.fine_slot = n.owner == me ? slot_of[f] : -1;
        op.coarse_slot = cn.owner == me ? slot_of[c] : -1;
        op.coarse_node = c;
        op.axis = axis;
        op.coarse_side = 1 - side;
        op.off1 = t1 < nd ? (n.pos[t1] & 1) * half : 0;
        op.off2 = t2 < nd ? (n.pos[t2] & 1) * half : 0;
        ops_.push_back(op);
      }
  }
  for (const auto& op : ops_)
    if (op.coarse_rank == me_) corrected_.push_back(op.coarse_slot);
  std::sort(corrected_.begin(), corrected_.end());
  corrected_.erase(std::unique(corrected_.begin(), corrected_.end()), corrected_.end());
}

void FluxRegister::correct(BlockStorage& storage, const Tree& t, MPI_Comm comm, double dt_weight,
                           const std::vector<int>& vars, bool store_applied) {
  TESSERA_REGION("flux_correction");
  const int nd = shape_.ndim, nx = shape_.nx, ng = shape_.ng;
  const int nvar = static_cast<int>(vars.size());
  if (nvar > nflux_) throw Error("flux register: more flux variables than it holds");
  const int half = nx / 2;
  const int n1 = nd > 1 ? half : 1, n2 = nd > 2 ? half : 1;  // coarse cells per quadrant
  const int ft1 = nd > 1 ? nx : 1;                           // fine face row length
  const double w = nd == 1 ? 1.0 : (nd == 2 ? 0.5 : 0.25);
  const std::size_t pv = per_var();  // once: it divides
  std::map<int, std::vector<double>> send, recv;
  for (const auto& op : ops_) {
    if (op.fine_rank == me_ && op.coarse_rank != me_) send[op.coarse_rank];
    if (op.coarse_rank == me_ && op.fine_rank != me_)
      recv[op.fine_rank].resize(recv[op.fine_rank].size() + std::size_t(nvar) * n1 * n2);
  }
  // Area-averaged fine fluxes over one coarse face cell. In curvilinear geometry the
  // faces across r (axis 1, t1 = r) differ in area: weight the two fine faces by area.
  const bool curved = geo_ != Geometry::cartesian;
  auto averaged = [&](const FaceOp& op, int v, int a, int b) {
    const double* F = face(op.fine_slot, 2 * op.axis + (1 - op.coarse_side));
    const double* Fv = F + std::size_t(v) * pv;
    if (curved && op.axis != 0) {
      const double dr = t.block_size(op.coarse_node)[0] / nx;
      const double r0 = t.block_lo(op.coarse_node)[0] + (op.off1 + a) * dr;
      const double w0 = geometry::shell_volume(geo_, r0, r0 + 0.5 * dr);
      const double w1 = geometry::shell_volume(geo_, r0 + 0.5 * dr, r0 + dr);
      return (w0 * Fv[2 * a] + w1 * Fv[2 * a + 1]) / (w0 + w1);
    }
    double s = 0.0;
    for (int bb = 0; bb < (nd > 2 ? 2 : 1); ++bb)
      for (int aa = 0; aa < (nd > 1 ? 2 : 1); ++aa) s += Fv[(2 * b + bb) * ft1 + (2 * a + aa)];
    return s * w;
  };
  for (const auto& op : ops_) {
    if (op.fine_rank != me_ || op.coarse_rank == me_) continue;
    auto& buf = send[op.coarse_rank];
    for (int v = 0; v < nvar; ++v)
      for (int b = 0; b < n2; ++b)
        for (int a = 0; a < n1; ++a) buf.push_back(averaged(op, v, a, b));
  }
  parallel::exchange(comm, send, recv, 7001);
  // The correction loop is compiled for both layouts; the layout is chosen once here.
  storage.with_layout([&](auto tag) {
    std::map<int, std::size_t> cursor;
    for (const auto& op : ops_) {
      if (op.coarse_rank != me_) continue;
      const double* remote = nullptr;
      if (op.fine_rank != me_) {
        remote = recv[op.fine_rank].data() + cursor[op.fine_rank];
        cursor[op.fine_rank] += std::size_t(nvar) * n1 * n2;
      }
      const auto dxs = t.block_size(op.coarse_node);
      const double dx = dxs[op.axis] / nx;
      double coef = dt_weight / dx * (op.coarse_side ? 1.0 : -1.0);
      if (curved && op.axis == 0) {
        // dt A / V of the coarse cell next to the face (per unit length along z).
        const double r0 = t.block_lo(op.coarse_node)[0] + (op.coarse_side ? nx - 1 : 0) * dx;
        const double rf = op.coarse_side ? r0 + dx : r0;
        coef = dt_weight * geometry::radial_area(geo_, rf) /
               geometry::shell_volume(geo_, r0, r0 + dx) * (op.coarse_side ? 1.0 : -1.0);
      }
      double* Fc = face(op.coarse_slot, 2 * op.axis + op.coarse_side);
      const auto U = storage.view(op.coarse_slot, tag);
      int t1, t2;
      transverse(op.axis, t1, t2);
      for (int v = 0; v < nvar; ++v)
        for (int b = 0; b < n2; ++b)
          for (int a = 0; a < n1; ++a) {
            const double ff =
                remote ? remote[(std::size_t(v) * n2 + b) * n1 + a] : averaged(op, v, a, b);
            const int c1 = op.off1 + a, c2 = op.off2 + b;
            const double fc = Fc[std::size_t(v) * pv + std::size_t(c2) * ft1 + c1];
            IVec idx{0, 0, 0};
            idx[op.axis] = op.coarse_side ? ng + nx - 1 : ng;
            if (t1 < nd) idx[t1] = ng + c1;
            if (t2 < nd) idx[t2] = ng + c2;
            // +face: U -= dt/dx (F_fine - F_coarse); -face: U += dt/dx (F_fine - F_coarse).
            U(vars[v], idx[0], idx[1], idx[2]) -= coef * (ff - fc);
            if (store_applied) Fc[std::size_t(v) * pv + std::size_t(c2) * ft1 + c1] = ff;
          }
    }
  });
}

}  // namespace tessera::mesh

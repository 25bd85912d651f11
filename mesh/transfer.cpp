#include "mesh/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

namespace {

// Read-only access to the source cells of an op: either a block array in place or a
// packed buffer laid out [v][k][j][i] over the op's src box.
struct Source {
  const double* p;
  long sv, sk, sj;
  IVec origin;  // index that maps to p
  double operator()(int v, int i, int j, int k) const {
    return p[v * sv + (k - origin[2]) * sk + (j - origin[1]) * sj + (i - origin[0])];
  }
};

Source block_source(const BlockStorage& st, int slot) {
  const auto& s = st.shape();
  return Source{st.data(slot), long(s.cells()), long(s.n(0)) * s.n(1), long(s.n(0)), IVec{0, 0, 0}};
}

Source buffer_source(const double* p, const Box& b) {
  const long nx = b.extent(0), ny = b.extent(1), nz = b.extent(2);
  return Source{p, nx * ny * nz, nx * ny, nx, b.lo};
}

// Monotonised-central slope (van Leer 1977) of the full-cell difference.
inline double mc_slope(double qm, double q0, double qp) {
  const double dl = q0 - qm, dr = qp - q0;
  if (dl * dr <= 0.0) return 0.0;
  const double s = std::copysign(1.0, dl);
  return s * std::min({0.5 * std::fabs(dl + dr), 2.0 * std::fabs(dl), 2.0 * std::fabs(dr)});
}

void apply(const TransferOp& op, const Source& src, BlockView<> dst, int nvar, int ndim) {
  const Box& d = op.dst;
  switch (op.kind) {
    case OpKind::copy:
      for (int v = 0; v < nvar; ++v)
        for (int k = 0; k < d.extent(2); ++k)
          for (int j = 0; j < d.extent(1); ++j) {
            double* out = dst.row(v, d.lo[1] + j, d.lo[2] + k) + d.lo[0];
            for (int i = 0; i < d.extent(0); ++i)
              out[i] = src(v, op.src.lo[0] + i, op.src.lo[1] + j, op.src.lo[2] + k);
          }
      break;
    case OpKind::restrict_avg: {
      const int fx = 2, fy = ndim > 1 ? 2 : 1, fz = ndim > 2 ? 2 : 1;
      const double w = 1.0 / (fx * fy * fz);
      for (int v = 0; v < nvar; ++v)
        for (int k = 0; k < d.extent(2); ++k)
          for (int j = 0; j < d.extent(1); ++j)
            for (int i = 0; i < d.extent(0); ++i) {
              double sum = 0.0;
              for (int c = 0; c < fz; ++c)
                for (int b = 0; b < fy; ++b)
                  for (int a = 0; a < fx; ++a)
                    sum += src(v, op.src.lo[0] + fx * i + a, op.src.lo[1] + fy * j + b,
                               op.src.lo[2] + fz * k + c);
              dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k) = sum * w;
            }
      break;
    }
    case OpKind::prolong:
      // Conservative limited linear prolongation: each fine cell takes the coarse value
      // plus a quarter of the MC-limited slope per axis toward its half; the average of
      // the 2^d fine cells is the coarse value.
      for (int v = 0; v < nvar; ++v)
        for (int k = 0; k < d.extent(2); ++k)
          for (int j = 0; j < d.extent(1); ++j)
            for (int i = 0; i < d.extent(0); ++i) {
              const int t[3] = {i, j, k};
              IVec c{0, 0, 0};
              double sgn[3] = {0, 0, 0};
              for (int a = 0; a < 3; ++a) {
                if (a < ndim) {
                  c[a] = op.src.lo[a] + ((op.parity0[a] + t[a]) >> 1) + 1;
                  sgn[a] = ((op.parity0[a] + t[a]) & 1) ? 0.25 : -0.25;
                } else {
                  c[a] = op.src.lo[a];
                }
              }
              const double q0 = src(v, c[0], c[1], c[2]);
              double val = q0;
              for (int a = 0; a < ndim; ++a) {
                IVec m = c, p = c;
                m[a] -= 1;
                p[a] += 1;
                val += sgn[a] * mc_slope(src(v, m[0], m[1], m[2]), q0, src(v, p[0], p[1], p[2]));
              }
              dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k) = val;
            }
      break;
  }
}

}  // namespace

void execute(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag) {
  const int me = parallel::rank(comm);
  const int nvar = storage.shape().nvar;
  const int ndim = storage.shape().ndim;
  std::map<int, std::vector<double>> send, recv;
  {
    TESSERA_REGION("pack");
    // Sizes first so buffers are allocated once.
    std::map<int, std::size_t> ssize, rsize;
    for (const auto& op : plan.ops) {
      if (op.src_rank == me && op.dst_rank != me) ssize[op.dst_rank] += op.src.volume() * nvar;
      if (op.dst_rank == me && op.src_rank != me) rsize[op.src_rank] += op.src.volume() * nvar;
    }
    for (auto& [r, n] : ssize) send[r].reserve(n);
    for (auto& [r, n] : rsize) recv[r].resize(n);
    for (const auto& op : plan.ops) {
      if (op.src_rank != me || op.dst_rank == me) continue;
      auto& buf = send[op.dst_rank];
      const Source s = block_source(storage, op.src_slot);
      const Box& b = op.src;
      for (int v = 0; v < nvar; ++v)
        for (int k = b.lo[2]; k < b.hi[2]; ++k)
          for (int j = b.lo[1]; j < b.hi[1]; ++j)
            for (int i = b.lo[0]; i < b.hi[0]; ++i) buf.push_back(s(v, i, j, k));
    }
  }
  {
    TESSERA_REGION("mpi");
    parallel::exchange(comm, send, recv, tag);
  }
  TESSERA_REGION("apply");
  std::map<int, std::size_t> cursor;
  for (const auto& op : plan.ops) {
    if (op.dst_rank != me) continue;
    BlockView<> dst = storage.view(op.dst_slot);
    if (op.src_rank == me) {
      apply(op, block_source(storage, op.src_slot), dst, nvar, ndim);
    } else {
      std::size_t& at = cursor[op.src_rank];
      const double* p = recv[op.src_rank].data() + at;
      apply(op, buffer_source(p, op.src), dst, nvar, ndim);
      at += op.src.volume() * nvar;
    }
  }
}

}  // namespace tessera::mesh

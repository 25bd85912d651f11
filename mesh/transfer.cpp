#include "mesh/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

namespace {

// Visit every (v, i, j, k) of box b for nvar variables in the memory order of layout L
// (variable outermost for var-major, innermost for zone-major), so that the innermost loop
// walks contiguous doubles in either layout. Within one op each destination zone is
// written once, from source zones only, so the visiting order never changes a result.
template <Layout L, class F>
inline void for_box(const Box& b, int nvar, F&& f) {
  if constexpr (L == Layout::var_major) {
    for (int v = 0; v < nvar; ++v)
      for (int k = 0; k < b.extent(2); ++k)
        for (int j = 0; j < b.extent(1); ++j)
          for (int i = 0; i < b.extent(0); ++i) f(v, i, j, k);
  } else {
    for (int k = 0; k < b.extent(2); ++k)
      for (int j = 0; j < b.extent(1); ++j)
        for (int i = 0; i < b.extent(0); ++i)
          for (int v = 0; v < nvar; ++v) f(v, i, j, k);
  }
}

// Every contiguous run of box b's doubles in layout L for variables [0, nv) of an array
// of nvar, as f(v, i, j, k, n): the n doubles from (v, b.lo[0] + i, j, k) on. Var-major:
// one x-row of one variable; zone-major: one x-row of all variables (v = 0, i = 0) when
// nv = nvar, else the nv variables of one zone. Only a plain copy or accumulate may use
// runs.
template <Layout L, class F>
inline void for_box_runs(const Box& b, int nv, int nvar, F&& f) {
  if constexpr (L == Layout::var_major) {
    for (int v = 0; v < nv; ++v)
      for (int k = 0; k < b.extent(2); ++k)
        for (int j = 0; j < b.extent(1); ++j) f(v, 0, j, k, b.extent(0));
  } else if (nv == nvar) {
    for (int k = 0; k < b.extent(2); ++k)
      for (int j = 0; j < b.extent(1); ++j) f(0, 0, j, k, b.extent(0) * nvar);
  } else {
    for (int k = 0; k < b.extent(2); ++k)
      for (int j = 0; j < b.extent(1); ++j)
        for (int i = 0; i < b.extent(0); ++i) f(0, i, j, k, nv);
  }
}

// Read-only access to the source cells of an op: either a block array in place or a
// packed buffer over the op's src box, both in layout L (a buffer is packed by for_box).
template <Layout L>
struct Source {
  const double* p;
  long sv, sk, sj, si;
  IVec origin;  // index that maps to p
  const double* ptr(int v, int i, int j, int k) const {
    const long c = (k - origin[2]) * sk + (j - origin[1]) * sj;
    if constexpr (L == Layout::var_major)
      return p + v * sv + c + (i - origin[0]);
    else
      return p + c + (i - origin[0]) * si + v;
  }
  double operator()(int v, int i, int j, int k) const { return *ptr(v, i, j, k); }
};

// Strides of an nx x ny x nz array of nvar variables in layout L.
template <Layout L>
Source<L> make_source(const double* p, long nx, long ny, long nz, int nvar, IVec origin) {
  if constexpr (L == Layout::var_major)
    return Source<L>{p, nx * ny * nz, nx * ny, nx, 1, origin};
  else
    return Source<L>{p, 1, nvar * nx * ny, nvar * nx, nvar, origin};
}

// A block's array in place, variable `first` seen as variable 0 (in either layout the
// variable stride is sv, so shifting the base by first * sv is enough).
template <Layout L>
Source<L> block_source(const BlockStorage& st, int slot, int first) {
  const auto& s = st.shape();
  Source<L> src = make_source<L>(st.data(slot), s.n(0), s.n(1), s.n(2), s.nvar, IVec{0, 0, 0});
  src.p += first * src.sv;
  return src;
}

// A block's view with variable `first` seen as variable 0 (strides unchanged).
template <Layout L>
BlockView<L> block_dest(BlockStorage& st, int slot, int first) {
  BlockView<L> v = st.view<L>(slot);
  v.p += v.offset(first, 0, 0, 0);
  return v;
}

template <Layout L>
Source<L> buffer_source(const double* p, const Box& b, int nvar) {
  return make_source<L>(p, b.extent(0), b.extent(1), b.extent(2), nvar, b.lo);
}

// Monotonised-central slope (van Leer 1977) of the full-cell difference.
inline double mc_slope(double qm, double q0, double qp) {
  const double dl = q0 - qm, dr = qp - q0;
  if (dl * dr <= 0.0) return 0.0;
  const double s = std::copysign(1.0, dl);
  return s * std::min({0.5 * std::fabs(dl + dr), 2.0 * std::fabs(dl), 2.0 * std::fabs(dr)});
}

// Variables [0, nvar) of op; the source's and the destination's own strides apply (a
// packed buffer holds nvar variables per zone, a block array all of its own).
template <Layout L>
void apply(const TransferOp& op, const Source<L>& src, const BlockView<L>& dst, int nvar, int ndim,
           Geometry geo) {
  const Box& d = op.dst;
  const IVec& o = op.src.lo;
  switch (op.kind) {
    case OpKind::copy:
      // A run of zone-major doubles spans whole zones only when source and destination
      // both hold exactly nvar variables per zone.
      for_box_runs<L>(d, nvar, src.si == nvar && dst.nvar == nvar ? nvar : nvar + 1,
                      [&](int v, int i, int j, int k, int n) {
                        double* __restrict out = &dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k);
                        const double* __restrict in = src.ptr(v, o[0] + i, o[1] + j, o[2] + k);
                        for (int c = 0; c < n; ++c) out[c] = in[c];
                      });
      break;
    case OpKind::accumulate:
      for_box_runs<L>(d, nvar, src.si == nvar && dst.nvar == nvar ? nvar : nvar + 1,
                      [&](int v, int i, int j, int k, int n) {
                        double* __restrict out = &dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k);
                        const double* __restrict in = src.ptr(v, o[0] + i, o[1] + j, o[2] + k);
                        for (int c = 0; c < n; ++c) out[c] += in[c];
                      });
      break;
    case OpKind::restrict_avg: {
      const int fx = 2, fy = ndim > 1 ? 2 : 1, fz = ndim > 2 ? 2 : 1;
      const double w = 1.0 / (fx * fy * fz);
      if (geo != Geometry::cartesian) {
        // Volume-weighted mean: the two fine cells along r weigh by their shell volumes,
        // those along the other axes equally.
        const double wo = 1.0 / (fy * fz);
        for_box<L>(d, nvar, [&](int v, int i, int j, int k) {
          const double r0 = op.r_lo + 2 * i * op.r_dx;
          const double v0 = geometry::shell_volume(geo, r0, r0 + op.r_dx);
          const double v1 = geometry::shell_volume(geo, r0 + op.r_dx, r0 + 2 * op.r_dx);
          double sum[2] = {0.0, 0.0};
          for (int c = 0; c < fz; ++c)
            for (int b = 0; b < fy; ++b)
              for (int a = 0; a < fx; ++a)
                sum[a] += src(v, o[0] + fx * i + a, o[1] + fy * j + b, o[2] + fz * k + c);
          dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k) =
              (v0 * sum[0] + v1 * sum[1]) * wo / (v0 + v1);
        });
        break;
      }
      for_box<L>(d, nvar, [&](int v, int i, int j, int k) {
        double sum = 0.0;
        for (int c = 0; c < fz; ++c)
          for (int b = 0; b < fy; ++b)
            for (int a = 0; a < fx; ++a)
              sum += src(v, o[0] + fx * i + a, o[1] + fy * j + b, o[2] + fz * k + c);
        dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k) = sum * w;
      });
      break;
    }
    case OpKind::prolong:
      // Conservative limited linear prolongation: each fine cell takes the coarse value
      // plus a quarter of the MC-limited slope per axis toward its half; the average of
      // the 2^d fine cells is the coarse value.
      // In curvilinear geometry the radial offset is (centroid of the fine cell - centroid
      // of the coarse cell) / coarse width, which keeps the volume integral.
      for_box<L>(d, nvar, [&](int v, int i, int j, int k) {
        const int t[3] = {i, j, k};
        IVec c{0, 0, 0};
        double sgn[3] = {0, 0, 0};
        for (int a = 0; a < 3; ++a) {
          if (a < ndim) {
            c[a] = o[a] + ((op.parity0[a] + t[a]) >> 1) + 1;
            sgn[a] = ((op.parity0[a] + t[a]) & 1) ? 0.25 : -0.25;
          } else {
            c[a] = o[a];
          }
        }
        if (geo != Geometry::cartesian) {
          const double r0 = op.r_lo + (c[0] - o[0]) * op.r_dx;
          const double rf = r0 + ((op.parity0[0] + i) & 1) * 0.5 * op.r_dx;
          sgn[0] = (geometry::centroid(geo, rf, rf + 0.5 * op.r_dx) -
                    geometry::centroid(geo, r0, r0 + op.r_dx)) /
                   op.r_dx;
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
      });
      break;
  }
}

template <Layout L>
void run_plan(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag, int nvar,
              Geometry geo, int first) {
  const int me = parallel::rank(comm);
  const int nall = storage.shape().nvar;
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
      const Source<L> s = block_source<L>(storage, op.src_slot, first);
      const Box& b = op.src;
      for_box_runs<L>(b, nvar, nall, [&](int v, int i, int j, int k, int n) {
        const double* in = s.ptr(v, b.lo[0] + i, b.lo[1] + j, b.lo[2] + k);
        buf.insert(buf.end(), in, in + n);
      });
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
    const BlockView<L> dst = block_dest<L>(storage, op.dst_slot, first);
    if (op.src_rank == me) {
      apply(op, block_source<L>(storage, op.src_slot, first), dst, nvar, ndim, geo);
    } else {
      std::size_t& at = cursor[op.src_rank];
      const double* p = recv[op.src_rank].data() + at;
      apply(op, buffer_source<L>(p, op.src, nvar), dst, nvar, ndim, geo);
      at += op.src.volume() * nvar;
    }
  }
}

}  // namespace

void execute(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag, int nvar,
             Geometry geo, int first) {
  const int nall = storage.shape().nvar;
  const int f = std::clamp(first, 0, nall);
  const int nv = nvar < 0 || nvar > nall - f ? nall - f : nvar;
  storage.with_layout(
      [&](auto L) { run_plan<decltype(L)::value>(plan, storage, comm, tag, nv, geo, f); });
}

}  // namespace tessera::mesh

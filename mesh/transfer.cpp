#include "mesh/transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>
#include <vector>

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
  const double s = std::copysign(1.0, dl);
  // std::min({a, b, c}) as written out (the first of equal values), and the zero of an
  // extremum as a select, so that a loop over cells vectorises.
  double m = 0.5 * std::fabs(dl + dr);
  const double b = 2.0 * std::fabs(dl), c = 2.0 * std::fabs(dr);
  m = b < m ? b : m;
  m = c < m ? c : m;
  const double r = s * m;
  return dl * dr <= 0.0 ? 0.0 : r;
}

// copy (dst = src) or accumulate (dst += src) of box d, a contiguous run at a time. A run
// of zone-major doubles spans whole zones only when source and destination both hold
// exactly nvar variables per zone. Its own function: the guard fill's most frequent op
// keeps its registers to itself.
template <bool Acc, Layout L>
[[gnu::noinline]] void copy_runs(const Box& d, const IVec& o, const Source<L>& src,
                                 const BlockView<L>& dst, int nvar) {
  for_box_runs<L>(d, nvar, src.si == nvar && dst.nvar == nvar ? nvar : nvar + 1,
                  [&](int v, int i, int j, int k, int n) {
                    double* __restrict out = &dst(v, d.lo[0] + i, d.lo[1] + j, d.lo[2] + k);
                    const double* __restrict in = src.ptr(v, o[0] + i, o[1] + j, o[2] + k);
                    if constexpr (Acc)
                      for (int c = 0; c < n; ++c) out[c] += in[c];
                    else
                      for (int c = 0; c < n; ++c) out[c] = in[c];
                  });
}

// Cartesian restriction of box d, one destination x-row at a time: NR = fy * fz fine
// rows (z outer, y inner) of 2 fine cells per destination cell, summed in that order. N > 0:
// rows of N cells (a guard fill's x faces, edges, corners), a loop of compile-time length
// (a runtime one costs more than these rows' arithmetic); N = 0: d's own length.
template <int NR, int N, Layout L>
[[gnu::noinline]] void restrict_rows(const Box& d, const IVec& o, const Source<L>& src,
                                     const BlockView<L>& dst, int nvar, double w) {
  constexpr int fy = NR > 1 ? 2 : 1, fz = NR > 2 ? 2 : 1;
  // Var-major x rows are contiguous in source and destination: known at compile time, a
  // row's sums vectorise.
  const long sx = L == Layout::var_major ? 1 : src.si;
  const std::ptrdiff_t xs =
      L == Layout::var_major ? 1 : dst.offset(0, 1, 0, 0) - dst.offset(0, 0, 0, 0);
  const int n = N > 0 ? N : d.extent(0);
  for (int v = 0; v < nvar; ++v)
    for (int k = 0; k < d.extent(2); ++k)
      for (int j = 0; j < d.extent(1); ++j) {
        const double* r0 = src.ptr(v, o[0], o[1] + fy * j, o[2] + fz * k);
        const double* r[NR];
        for (int c = 0, q = 0; c < fz; ++c)
          for (int b = 0; b < fy; ++b) r[q++] = r0 + b * src.sj + c * src.sk;
        double* out = &dst(v, d.lo[0], d.lo[1] + j, d.lo[2] + k);
        for (int i = 0; i < n; ++i) {
          double sum = 0.0;
#pragma GCC unroll 4
          for (int m = 0; m < NR; ++m) {
            sum += r[m][2 * i * sx];
            sum += r[m][(2 * i + 1) * sx];
          }
          out[i * xs] = sum * w;
        }
      }
}

// f(std::integral_constant<int, N>) with N = n for rows of 1 to 4 cells (a guard fill's x
// faces, edges and corners, whose loops run at compile-time length), else N = 0.
template <class F>
void by_row_length(int n, F&& f) {
  switch (n) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    case 4:
      return f(std::integral_constant<int, 4>{});
    default:
      return f(std::integral_constant<int, 0>{});
  }
}

// restrict_rows for fy * fz = NR fine rows per destination row, by the row's length.
template <int NR, Layout L>
void restrict_box(const Box& d, const IVec& o, const Source<L>& src, const BlockView<L>& dst,
                  int nvar, double w) {
  by_row_length(d.extent(0),
                [&](auto n) { restrict_rows<NR, decltype(n)::value>(d, o, src, dst, nvar, w); });
}

// The slope of one coarse cell along one axis (qm, q0, qp: its neighbours and itself).
inline double prolong_slope(Prolong kind, double qm, double q0, double qp) {
  switch (kind) {
    case Prolong::mc:
      return mc_slope(qm, q0, qp);
    case Prolong::linear:
      return 0.5 * (qp - qm);
    case Prolong::injection:
      break;
  }
  return 0.0;
}

// prolong() for boxes of N0 <= 4 fine cells per x row (a guard fill's x faces,
// edges and corners), a coarse z plane at a time: its cells' values and slopes at fine x
// resolution, then the plane's fine rows in memory order. The arithmetic per fine cell is
// the row path's (the x term first, then + the y term + the z term); the row loops are of
// compile-time length, which the row path's are not (their set-up costs more than these
// rows' arithmetic). ci, sg: prolong()'s per-axis tables; st: the source strides.
template <int N0, Layout L>
[[gnu::noinline]] void prolong_short(const TransferOp& op, const Source<L>& src,
                                     const BlockView<L>& dst, int nvar, int ndim, Prolong kind,
                                     const int nc[3], const int clo[3], const int* const ci[3],
                                     const double* const sg[3], const long st[3]) {
  const Box& d = op.dst;
  // One coarse plane at fine x resolution: the x value and the y and z slopes.
  const std::ptrdiff_t xs =
      L == Layout::var_major ? 1 : dst.offset(0, 1, 0, 0) - dst.offset(0, 0, 0, 0);
  thread_local std::vector<double> plane;
  plane.resize(3 * std::size_t(nc[1]) * N0);
  double* const X = plane.data();
  double* const EY = X + std::size_t(nc[1]) * N0;
  double* const EZ = EY + std::size_t(nc[1]) * N0;
  for (int v = 0; v < nvar; ++v)
    for (int ck = 0; ck < nc[2]; ++ck) {
      for (int cj = 0; cj < nc[1]; ++cj) {
        const double* q = src.ptr(v, clo[0], clo[1] + cj, clo[2] + ck);
        double s[3][N0] = {};  // the slopes of the row's coarse cells (at most N0 of them)
        for (int cx = 0; cx < nc[0]; ++cx)
          for (int a = 0; a < 3; ++a)
            s[a][cx] = a < ndim ? prolong_slope(kind, q[cx * st[0] - st[a]], q[cx * st[0]],
                                                q[cx * st[0] + st[a]])
                                : 0.0;
        for (int t = 0; t < N0; ++t) {
          const int c = ci[0][t];
          X[cj * N0 + t] = q[c * st[0]] + sg[0][t] * s[0][c];
          EY[cj * N0 + t] = s[1][c];
          EZ[cj * N0 + t] = s[2][c];
        }
      }
      for (int k = 0; k < d.extent(2); ++k) {
        if (ci[2][k] != ck) continue;
        const double gz = sg[2][k];
        for (int j = 0; j < d.extent(1); ++j) {
          const int r = ci[1][j] * N0;
          const double gy = sg[1][j];
          double* out = &dst(v, d.lo[0], d.lo[1] + j, d.lo[2] + k);
          for (int t = 0; t < N0; ++t)
            out[t * xs] = ndim > 2   ? X[r + t] + gy * EY[r + t] + gz * EZ[r + t]
                          : ndim > 1 ? X[r + t] + gy * EY[r + t]
                                     : X[r + t];
        }
      }
    }
}

// Conservative linear prolongation of op.dst from a coarse source with a 1-cell
// halo: each fine cell takes the coarse value plus a quarter of the slope per axis toward
// its half (MC-limited, the unlimited central difference, or none: `kind`) (val = q0, then + sgn_a
// * slope_a for a = x, y, z in that order); the average of the 2^d fine cells is the coarse value.
// In curvilinear geometry the radial offset is (centroid of the fine cell - centroid of the coarse
// cell) / coarse width, which keeps the volume integral. Step 1: per variable, q0 and the slopes of
// every coarse cell under the box, once (a coarse cell has up to 2^d fine cells in it). Step 2:
// every fine cell from its coarse cell's values. The arithmetic per fine cell is the same as
// evaluating it cell by cell.
template <Layout L>
[[gnu::noinline]] void prolong(const TransferOp& op, const Source<L>& src, const BlockView<L>& dst,
                               int nvar, int ndim, Geometry geo, Prolong kind) {
  const Box& d = op.dst;
  const IVec& o = op.src.lo;
  // Per axis and fine index t: the coarse cell (relative to the coarse sub-box) and the
  // offset factor; an inactive axis has one cell and no term.
  thread_local std::vector<int> cidx;
  thread_local std::vector<double> sgn, coarse;
  const int ext[3] = {d.extent(0), d.extent(1), d.extent(2)};
  cidx.resize(std::size_t(ext[0]) + ext[1] + ext[2]);
  sgn.resize(cidx.size());
  int* ci[3] = {cidx.data(), cidx.data() + ext[0], cidx.data() + ext[0] + ext[1]};
  double* sg[3] = {sgn.data(), sgn.data() + ext[0], sgn.data() + ext[0] + ext[1]};
  int clo[3], nc[3];
  for (int a = 0; a < 3; ++a) {
    if (a >= ndim) {
      clo[a] = o[a];
      nc[a] = 1;
      for (int t = 0; t < ext[a]; ++t) ci[a][t] = 0, sg[a][t] = 0.0;
      continue;
    }
    clo[a] = o[a] + (op.parity0[a] >> 1) + 1;
    nc[a] = o[a] + ((op.parity0[a] + ext[a] - 1) >> 1) + 1 - clo[a] + 1;
    for (int t = 0; t < ext[a]; ++t) {
      ci[a][t] = o[a] + ((op.parity0[a] + t) >> 1) + 1 - clo[a];
      sg[a][t] = ((op.parity0[a] + t) & 1) ? 0.25 : -0.25;
    }
  }
  if (geo != Geometry::cartesian) {
    for (int i = 0; i < ext[0]; ++i) {
      const double r0 = op.r_lo + (clo[0] + ci[0][i] - o[0]) * op.r_dx;
      const double rf = r0 + ((op.parity0[0] + i) & 1) * 0.5 * op.r_dx;
      sg[0][i] = (geometry::centroid(geo, rf, rf + 0.5 * op.r_dx) -
                  geometry::centroid(geo, r0, r0 + op.r_dx)) /
                 op.r_dx;
    }
  }
  // Source strides along x, y, z (either layout, packed buffer or block array).
  const long sx = L == Layout::var_major ? 1 : src.si;
  const long st[3] = {sx, src.sj, src.sk};
  if (ext[0] <= 4) {  // short x rows (a guard fill's x faces, edges, corners)
    by_row_length(ext[0], [&](auto n) {
      if constexpr (decltype(n)::value > 0)
        prolong_short<decltype(n)::value>(op, src, dst, nvar, ndim, kind, nc, clo, ci, sg, st);
    });
    return;
  }
  // Per coarse row (nc2 x nc1 of them), at fine x resolution (ext0 cells): the coarse
  // value plus the x term, and the y and z slopes of the coarse cell under each fine cell.
  const int nrow = nc[1] * nc[2], n0 = ext[0];
  const std::size_t NR = std::size_t(nrow) * n0;
  coarse.resize(3 * NR + 4 * std::size_t(nc[0]));
  double* const X = coarse.data();
  double* const EY = X + NR;
  double* const EZ = X + 2 * NR;
  double* const tq = X + 3 * NR;  // one coarse row: q0 and the slopes along x, y, z
  double* const ts[3] = {tq + nc[0], tq + 2 * nc[0], tq + 3 * nc[0]};
  for (int v = 0; v < nvar; ++v) {
    // Step 1: coarse values and MC slopes, then the x term at fine resolution.
    for (int k = 0; k < nc[2]; ++k)
      for (int j = 0; j < nc[1]; ++j) {
        const double* q = src.ptr(v, clo[0], clo[1] + j, clo[2] + k);
        for (int i = 0; i < nc[0]; ++i) tq[i] = q[i * sx];
        for (int a = 0; a < ndim; ++a) {
          const long sa = st[a];
          double* __restrict out = ts[a];
          // One loop per kind (a constant kind in each: the loop vectorises).
          auto slopes = [&](auto k) {
            for (int i = 0; i < nc[0]; ++i)
              out[i] = prolong_slope(k.value, q[i * sx - sa], q[i * sx], q[i * sx + sa]);
          };
          switch (kind) {
            case Prolong::mc:
              slopes(std::integral_constant<Prolong, Prolong::mc>{});
              break;
            case Prolong::linear:
              slopes(std::integral_constant<Prolong, Prolong::linear>{});
              break;
            case Prolong::injection:
              slopes(std::integral_constant<Prolong, Prolong::injection>{});
              break;
          }
        }
        const std::size_t r = (std::size_t(k) * nc[1] + j) * n0;
        for (int i = 0; i < n0; ++i) {
          const int c = ci[0][i];
          X[r + i] = tq[c] + sg[0][i] * ts[0][c];
          if (ndim > 1) EY[r + i] = ts[1][c];
          if (ndim > 2) EZ[r + i] = ts[2][c];
        }
      }
    // Step 2: the fine cells, + y term, + z term.
    for (int k = 0; k < ext[2]; ++k)
      for (int j = 0; j < ext[1]; ++j) {
        const std::size_t r = (std::size_t(ci[2][k]) * nc[1] + ci[1][j]) * n0;
        const double* __restrict x = X + r;
        const double* __restrict ey = EY + r;
        const double* __restrict ez = EZ + r;
        const double gy = sg[1][j], gz = sg[2][k];
        auto row = [&](auto out) {
          if (ndim > 2)
            for (int i = 0; i < n0; ++i) out[i] = x[i] + gy * ey[i] + gz * ez[i];
          else if (ndim > 1)
            for (int i = 0; i < n0; ++i) out[i] = x[i] + gy * ey[i];
          else
            for (int i = 0; i < n0; ++i) out[i] = x[i];
        };
        if constexpr (L == Layout::var_major)
          row(static_cast<double* __restrict>(&dst(v, d.lo[0], d.lo[1] + j, d.lo[2] + k)));
        else
          row(dst.row(v, d.lo[1] + j, d.lo[2] + k) + d.lo[0]);
      }
  }
}

// Variables [0, nvar) of op; the source's and the destination's own strides apply (a
// packed buffer holds nvar variables per zone, a block array all of its own).
template <Layout L>
void apply(const TransferOp& op, const Source<L>& src, const BlockView<L>& dst, int nvar, int ndim,
           Geometry geo, Prolong kind) {
  const Box& d = op.dst;
  const IVec& o = op.src.lo;
  switch (op.kind) {
    case OpKind::copy:
      copy_runs<false>(d, o, src, dst, nvar);
      break;
    case OpKind::accumulate:
      copy_runs<true>(d, o, src, dst, nvar);
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
      // A destination row at a time from its fy * fz fine rows, each cell's sum in the
      // order z, y, x of its fine cells (from 0.0, as a sum of no terms).
      switch (fy * fz) {
        case 1:
          restrict_box<1>(d, o, src, dst, nvar, w);
          break;
        case 2:
          restrict_box<2>(d, o, src, dst, nvar, w);
          break;
        default:
          restrict_box<4>(d, o, src, dst, nvar, w);
          break;
      }
      break;
    }
    case OpKind::prolong:
      prolong(op, src, dst, nvar, ndim, geo, kind);
      break;
  }
}

template <Layout L>
void run_plan(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag,
              const std::vector<VarRun>& runs, Geometry geo) {
  const int me = parallel::rank(comm);
  const int nall = storage.shape().nvar;
  const int ndim = storage.shape().ndim;
  int nvar = 0;  // doubles per zone in a packed buffer: every run's, run after run
  for (const auto& r : runs) nvar += r.n;
  TransferBytes& bytes = transfer_bytes();
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
      const Box& b = op.src;
      for (const auto& run : runs) {
        const Source<L> s = block_source<L>(storage, op.src_slot, run.first);
        for_box_runs<L>(b, run.n, nall, [&](int v, int i, int j, int k, int n) {
          const double* in = s.ptr(v, b.lo[0] + i, b.lo[1] + j, b.lo[2] + k);
          buf.insert(buf.end(), in, in + n);
        });
      }
      bytes.sent += sizeof(double) * op.src.volume() * nvar;
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
    bytes.written += sizeof(double) * op.dst.volume() * nvar;
    if (op.src_rank == me) {
      for (const auto& run : runs)
        apply(op, block_source<L>(storage, op.src_slot, run.first),
              block_dest<L>(storage, op.dst_slot, run.first), run.n, ndim, geo, run.prolong);
    } else {
      std::size_t& at = cursor[op.src_rank];
      for (const auto& run : runs) {
        const double* p = recv[op.src_rank].data() + at;
        apply(op, buffer_source<L>(p, op.src, run.n),
              block_dest<L>(storage, op.dst_slot, run.first), run.n, ndim, geo, run.prolong);
        at += op.src.volume() * run.n;
      }
    }
  }
}

}  // namespace

TransferBytes& transfer_bytes() {
  thread_local TransferBytes b;
  return b;
}

void execute(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag, int nvar,
             Geometry geo, int first) {
  const int nall = storage.shape().nvar;
  const int f = std::clamp(first, 0, nall);
  const int nv = nvar < 0 || nvar > nall - f ? nall - f : nvar;
  execute(plan, storage, comm, tag, std::vector<VarRun>{{f, nv, Prolong::mc}}, geo);
}

void execute(const TransferPlan& plan, BlockStorage& storage, MPI_Comm comm, int tag,
             const std::vector<VarRun>& runs, Geometry geo) {
  storage.with_layout(
      [&](auto L) { run_plan<decltype(L)::value>(plan, storage, comm, tag, runs, geo); });
}

}  // namespace tessera::mesh

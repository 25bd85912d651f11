// The hypre backend (see hypre_backend.hpp).
#include "solvers/hypre_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "perf/timers.hpp"

#ifdef TESSERA_HAVE_HYPRE
#include <HYPRE.h>
#include <HYPRE_parcsr_ls.h>
#endif

namespace tessera::solvers {

#ifndef TESSERA_HAVE_HYPRE

bool hypre_available() {
  return false;
}

struct HypreCache {};
void HypreCacheDeleter::operator()(HypreCache* c) const {
  delete c;
}

Result hypre_solve(mesh::Mesh&, const Options&, const Rows&, const Field&, const Field&,
                   std::uint64_t, std::unique_ptr<HypreCache, HypreCacheDeleter>&,
                   const MatrixCheck*) {
  throw Error("solver.backend = \"hypre\": unavailable (hypre not built in)");
}

#else

bool hypre_available() {
  return true;
}

namespace {

/// hypre's error flag after a call, as a one-line Error.
void check(HYPRE_Int code, const char* what) {
  if (code != 0 && HYPRE_GetError() != 0) {
    char msg[256] = {0};
    HYPRE_DescribeError(HYPRE_GetError(), msg);
    HYPRE_ClearAllErrors();
    // A solver that stops at max_iterations flags HYPRE_ERROR_CONV: that is a result, not
    // an error (the caller sees the residual).
    if (HYPRE_CheckError(code, HYPRE_ERROR_CONV)) return;
    throw Error(std::string("solver: hypre ") + what + " failed: " + msg);
  }
}

struct Numbering {
  std::vector<HYPRE_BigInt> first;     ///< per tree node: its first row (leaves), else -1
  HYPRE_BigInt lower = 0, upper = -1;  ///< this rank's rows
};

/// Rows rank by rank, each rank's leaves in canonical order, component, then zone.
Numbering number(const mesh::Mesh& m, int ncomp) {
  Numbering n;
  const auto& t = m.tree();
  const HYPRE_BigInt per = HYPRE_BigInt(m.shape().interior_cells()) * ncomp;
  n.first.assign(std::size_t(t.size()), -1);
  HYPRE_BigInt next = 0;
  for (int r = 0; r < m.nranks(); ++r) {
    if (r == m.rank()) n.lower = next;
    for (int id = 0; id < t.size(); ++id)
      if (t.node(id).leaf() && t.node(id).owner == r) {
        n.first[std::size_t(id)] = next;
        next += per;
      }
    if (r == m.rank()) n.upper = next - 1;
  }
  return n;
}

/// A value in [0.5, 1.5) from a row number (splitmix64): the check's vector (rows are
/// numbered rank by rank, so it differs between rank counts; it only has to be known).
double check_value(HYPRE_BigInt row) {
  std::uint64_t z = static_cast<std::uint64_t>(row) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return 0.5 + double(z >> 11) * 0x1.0p-53;
}

}  // namespace

/// What stays between solves of one operator: the numbering, the matrix, the vectors and
/// the solver with its preconditioner set up.
struct HypreCache {
  std::uint64_t key = 0, generation = 0;
  Numbering num;
  HYPRE_IJMatrix A = nullptr;
  HYPRE_IJVector B = nullptr, X = nullptr;
  HYPRE_Solver solver = nullptr, pc = nullptr;
  std::string method;
  ~HypreCache() {
    if (solver) {
      if (method == "cg")
        HYPRE_ParCSRPCGDestroy(solver);
      else if (method == "gmres")
        HYPRE_ParCSRGMRESDestroy(solver);
      else
        HYPRE_ParCSRBiCGSTABDestroy(solver);
    }
    if (pc) HYPRE_BoomerAMGDestroy(pc);
    if (A) HYPRE_IJMatrixDestroy(A);
    if (B) HYPRE_IJVectorDestroy(B);
    if (X) HYPRE_IJVectorDestroy(X);
  }
};

void HypreCacheDeleter::operator()(HypreCache* c) const {
  delete c;
}

Result hypre_solve(mesh::Mesh& m, const Options& o, const Rows& rows, const Field& b,
                   const Field& x, std::uint64_t key,
                   std::unique_ptr<HypreCache, HypreCacheDeleter>& cache,
                   const MatrixCheck* verify) {
  static const bool initialised = [] {
    HYPRE_Init();
    return true;
  }();
  (void)initialised;
  const int ncomp = b.ncomp();
  const auto& s = m.shape();
  const HYPRE_BigInt nzone = HYPRE_BigInt(s.interior_cells());
  MPI_Comm comm = m.comm();
  const bool reuse =
      key != 0 && cache && cache->key == key && cache->generation == m.tree_generation();
  if (!reuse) {
    cache.reset(new HypreCache);
    cache->key = key;
    cache->generation = m.tree_generation();
    cache->method = o.method;
    cache->num = number(m, ncomp);
  }
  HypreCache& c = *cache;
  const Numbering& num = c.num;
  auto row_of = [&](int node, int zone, int comp) {
    return num.first[std::size_t(node)] + HYPRE_BigInt(comp) * nzone + zone;
  };
  const HYPRE_Int nlocal = HYPRE_Int(num.upper - num.lower + 1);
  const auto nl = static_cast<std::size_t>(nlocal);
  std::vector<HYPRE_BigInt> idx(nl);
  std::vector<HYPRE_Real> bv(nl), xv(nl);
  // f(w, var of component cc, i, j, k, q) for every unknown of this rank (q: its row
  // less this rank's first).
  auto each_unknown = [&](const Field& f, auto&& body) {
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const auto w = m.scratch_view(id, tag);
        for (int cc = 0; cc < ncomp; ++cc) {
          int zone = 0;
          const int var = f.vars[std::size_t(cc)];
          mesh::for_each_zone(s, [&](int i, int j, int k) {
            body(w, var, i, j, k, std::size_t(row_of(id, zone, cc) - num.lower));
            ++zone;
          });
        }
      }
    });
  };
  for (HYPRE_BigInt r = num.lower; r <= num.upper; ++r) idx[std::size_t(r - num.lower)] = r;
  each_unknown(b,
               [&](auto& w, int v, int i, int j, int k, std::size_t q) { bv[q] = w(v, i, j, k); });
  each_unknown(x,
               [&](auto& w, int v, int i, int j, int k, std::size_t q) { xv[q] = w(v, i, j, k); });
  if (!reuse) {
    TESSERA_REGION("solver/hypre_setup");
    check(HYPRE_IJMatrixCreate(comm, num.lower, num.upper, num.lower, num.upper, &c.A),
          "IJMatrixCreate");
    check(HYPRE_IJMatrixSetObjectType(c.A, HYPRE_PARCSR), "IJMatrixSetObjectType");
    check(HYPRE_IJMatrixInitialize(c.A), "IJMatrixInitialize");
    std::vector<HYPRE_BigInt> cols;
    std::vector<HYPRE_Real> vals;
    rows([&](int node, int zone, int comp, const Entry* e, int n) {
      cols.resize(std::size_t(n));
      vals.resize(std::size_t(n));
      for (int q = 0; q < n; ++q) {
        cols[std::size_t(q)] = row_of(e[q].node, e[q].zone, e[q].comp);
        vals[std::size_t(q)] = e[q].value;
      }
      HYPRE_BigInt r = row_of(node, zone, comp);
      HYPRE_Int nc = n;
      check(HYPRE_IJMatrixAddToValues(c.A, 1, &nc, &r, cols.data(), vals.data()),
            "IJMatrixAddToValues");
    });
    check(HYPRE_IJMatrixAssemble(c.A), "IJMatrixAssemble");
    for (auto* v : {&c.B, &c.X}) {
      check(HYPRE_IJVectorCreate(comm, num.lower, num.upper, v), "IJVectorCreate");
      check(HYPRE_IJVectorSetObjectType(*v, HYPRE_PARCSR), "IJVectorSetObjectType");
      check(HYPRE_IJVectorInitialize(*v), "IJVectorInitialize");
    }
  } else {
    check(HYPRE_IJVectorInitialize(c.B), "IJVectorInitialize");
    check(HYPRE_IJVectorInitialize(c.X), "IJVectorInitialize");
  }
  check(HYPRE_IJVectorSetValues(c.B, nlocal, idx.data(), bv.data()), "IJVectorSetValues");
  check(HYPRE_IJVectorSetValues(c.X, nlocal, idx.data(), xv.data()), "IJVectorSetValues");
  check(HYPRE_IJVectorAssemble(c.B), "IJVectorAssemble");
  check(HYPRE_IJVectorAssemble(c.X), "IJVectorAssemble");
  HYPRE_ParCSRMatrix pA = nullptr;
  HYPRE_ParVector pb = nullptr, px = nullptr;
  HYPRE_IJMatrixGetObject(c.A, reinterpret_cast<void**>(&pA));
  HYPRE_IJVectorGetObject(c.B, reinterpret_cast<void**>(&pb));
  HYPRE_IJVectorGetObject(c.X, reinterpret_cast<void**>(&px));
  if (!reuse && verify) {
    // The assembled matrix times one vector against the operator applied to it.
    TESSERA_REGION("solver/hypre_setup");
    std::vector<HYPRE_Real> v(nl), av(nl), yv(nl);
    for (std::size_t q = 0; q < nl; ++q) v[q] = check_value(idx[q]);
    each_unknown(verify->x, [&](auto& w, int var, int i, int j, int k, std::size_t q) {
      w(var, i, j, k) = v[q];
    });
    verify->A(verify->x, verify->y);
    each_unknown(verify->y, [&](auto& w, int var, int i, int j, int k, std::size_t q) {
      yv[q] = w(var, i, j, k);
    });
    HYPRE_IJVector V = nullptr, W = nullptr;
    for (auto* u : {&V, &W}) {
      check(HYPRE_IJVectorCreate(comm, num.lower, num.upper, u), "IJVectorCreate");
      check(HYPRE_IJVectorSetObjectType(*u, HYPRE_PARCSR), "IJVectorSetObjectType");
      check(HYPRE_IJVectorInitialize(*u), "IJVectorInitialize");
    }
    check(HYPRE_IJVectorSetValues(V, nlocal, idx.data(), v.data()), "IJVectorSetValues");
    check(HYPRE_IJVectorAssemble(V), "IJVectorAssemble");
    check(HYPRE_IJVectorAssemble(W), "IJVectorAssemble");
    HYPRE_ParVector pv = nullptr, pw = nullptr;
    HYPRE_IJVectorGetObject(V, reinterpret_cast<void**>(&pv));
    HYPRE_IJVectorGetObject(W, reinterpret_cast<void**>(&pw));
    check(HYPRE_ParCSRMatrixMatvec(1.0, pA, pv, 0.0, pw), "ParCSRMatrixMatvec");
    check(HYPRE_IJVectorGetValues(W, nlocal, idx.data(), av.data()), "IJVectorGetValues");
    HYPRE_IJVectorDestroy(V);
    HYPRE_IJVectorDestroy(W);
    double d[2] = {0.0, 0.0};  // the largest difference and the largest value
    for (std::size_t q = 0; q < nl; ++q) {
      d[0] = std::max(d[0], std::abs(av[q] - yv[q]));
      d[1] = std::max(d[1], std::abs(yv[q]));
    }
    MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_DOUBLE, MPI_MAX, comm);
    if (!(d[0] <= 1e-11 * d[1]))
      throw Error("solver: the " + verify->name +
                  " operator's assembled matrix differs from its matrix-free form by " +
                  fmt::format("{:.2e}", d[0] / d[1]) +
                  " of its largest value (bound 1e-11); use solver.backend = \"tessera\"");
  }
  if (!reuse) {
    TESSERA_REGION("solver/hypre_setup");
    if (o.preconditioner == "boomeramg") {
      HYPRE_BoomerAMGCreate(&c.pc);
      HYPRE_BoomerAMGSetPrintLevel(c.pc, 0);
      HYPRE_BoomerAMGSetMaxIter(c.pc, 1);  // one V-cycle per application
      HYPRE_BoomerAMGSetTol(c.pc, 0.0);
    }
    auto set_pc = [&](auto setprecond, HYPRE_Solver sv) {
      if (o.preconditioner == "boomeramg")
        setprecond(sv, HYPRE_BoomerAMGSolve, HYPRE_BoomerAMGSetup, c.pc);
      else if (o.preconditioner == "jacobi")
        setprecond(sv, HYPRE_ParCSRDiagScale, HYPRE_ParCSRDiagScaleSetup, nullptr);
    };
    if (o.method == "cg") {
      HYPRE_ParCSRPCGCreate(comm, &c.solver);
      HYPRE_PCGSetTol(c.solver, o.rtol);
      HYPRE_PCGSetMaxIter(c.solver, o.max_iterations);
      HYPRE_PCGSetTwoNorm(c.solver, 1);
      set_pc(HYPRE_ParCSRPCGSetPrecond, c.solver);
      check(HYPRE_ParCSRPCGSetup(c.solver, pA, pb, px), "PCG setup");
    } else if (o.method == "gmres") {
      HYPRE_ParCSRGMRESCreate(comm, &c.solver);
      HYPRE_GMRESSetKDim(c.solver, 30);
      HYPRE_GMRESSetTol(c.solver, o.rtol);
      HYPRE_GMRESSetMaxIter(c.solver, o.max_iterations);
      set_pc(HYPRE_ParCSRGMRESSetPrecond, c.solver);
      check(HYPRE_ParCSRGMRESSetup(c.solver, pA, pb, px), "GMRES setup");
    } else {
      HYPRE_ParCSRBiCGSTABCreate(comm, &c.solver);
      HYPRE_BiCGSTABSetTol(c.solver, o.rtol);
      HYPRE_BiCGSTABSetMaxIter(c.solver, o.max_iterations);
      set_pc(HYPRE_ParCSRBiCGSTABSetPrecond, c.solver);
      check(HYPRE_ParCSRBiCGSTABSetup(c.solver, pA, pb, px), "BiCGSTAB setup");
    }
  }
  HYPRE_Int iters = 0;
  HYPRE_Real rel = 0;
  {
    TESSERA_REGION("solver/hypre_solve");
    if (o.method == "cg") {
      check(HYPRE_ParCSRPCGSolve(c.solver, pA, pb, px), "PCG solve");
      HYPRE_ParCSRPCGGetNumIterations(c.solver, &iters);
      HYPRE_ParCSRPCGGetFinalRelativeResidualNorm(c.solver, &rel);
    } else if (o.method == "gmres") {
      check(HYPRE_ParCSRGMRESSolve(c.solver, pA, pb, px), "GMRES solve");
      HYPRE_ParCSRGMRESGetNumIterations(c.solver, &iters);
      HYPRE_ParCSRGMRESGetFinalRelativeResidualNorm(c.solver, &rel);
    } else {
      check(HYPRE_ParCSRBiCGSTABSolve(c.solver, pA, pb, px), "BiCGSTAB solve");
      HYPRE_ParCSRBiCGSTABGetNumIterations(c.solver, &iters);
      HYPRE_ParCSRBiCGSTABGetFinalRelativeResidualNorm(c.solver, &rel);
    }
  }
  Result res;
  res.iterations = int(iters);
  res.residual = double(rel);
  res.converged = rel <= o.rtol;
  // The answer back into x.
  check(HYPRE_IJVectorGetValues(c.X, nlocal, idx.data(), xv.data()), "IJVectorGetValues");
  each_unknown(x,
               [&](auto& w, int v, int i, int j, int k, std::size_t q) { w(v, i, j, k) = xv[q]; });
  if (key == 0) cache.reset();  // an operator nobody will ask for again
  return res;
}

#endif

}  // namespace tessera::solvers

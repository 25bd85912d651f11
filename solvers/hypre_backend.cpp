// The hypre backend (see hypre_backend.hpp).
#include "solvers/hypre_backend.hpp"

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

Result hypre_solve(mesh::Mesh&, const Options&, const Rows&, const Field&, const Field&) {
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

}  // namespace

Result hypre_solve(mesh::Mesh& m, const Options& o, const Rows& rows, const Field& b,
                   const Field& x) {
  static const bool initialised = [] {
    HYPRE_Init();
    return true;
  }();
  (void)initialised;
  const auto& t = m.tree();
  int lo_level = t.max_level();
  for (int id : t.leaves()) lo_level = std::min(lo_level, t.node(id).level);
  if (lo_level != t.max_level())
    throw Error(
        "solver.backend = \"hypre\": uniform meshes only (every leaf on one level); "
        "this mesh has leaves on levels " +
        std::to_string(lo_level + 1) + " to " + std::to_string(t.max_level() + 1) +
        " (use solver.backend = \"tessera\")");
  const int ncomp = b.ncomp();
  const auto& s = m.shape();
  const HYPRE_BigInt nzone = HYPRE_BigInt(s.interior_cells());
  const Numbering num = number(m, ncomp);
  MPI_Comm comm = m.comm();
  auto row_of = [&](int node, int zone, int comp) {
    return num.first[std::size_t(node)] + HYPRE_BigInt(comp) * nzone + zone;
  };

  // The matrix.
  HYPRE_IJMatrix A = nullptr;
  HYPRE_IJVector B = nullptr, X = nullptr;
  HYPRE_Solver solver = nullptr, pc = nullptr;
  Result res;
  {
    TESSERA_REGION("solver/hypre_setup");
    check(HYPRE_IJMatrixCreate(comm, num.lower, num.upper, num.lower, num.upper, &A),
          "IJMatrixCreate");
    check(HYPRE_IJMatrixSetObjectType(A, HYPRE_PARCSR), "IJMatrixSetObjectType");
    check(HYPRE_IJMatrixInitialize(A), "IJMatrixInitialize");
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
      check(HYPRE_IJMatrixAddToValues(A, 1, &nc, &r, cols.data(), vals.data()),
            "IJMatrixAddToValues");
    });
    check(HYPRE_IJMatrixAssemble(A), "IJMatrixAssemble");
    // The vectors, from the scratch fields.
    const HYPRE_Int nlocal = HYPRE_Int(num.upper - num.lower + 1);
    const auto nl = static_cast<std::size_t>(nlocal);
    std::vector<HYPRE_BigInt> idx(nl);
    std::vector<HYPRE_Real> bv(nl), xv(nl);
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const auto w = m.scratch_view(id, tag);
        for (int c = 0; c < ncomp; ++c) {
          int zone = 0;
          mesh::for_each_zone(s, [&](int i, int j, int k) {
            const auto q = std::size_t(row_of(id, zone, c) - num.lower);
            idx[q] = row_of(id, zone, c);
            bv[q] = w(b.vars[std::size_t(c)], i, j, k);
            xv[q] = w(x.vars[std::size_t(c)], i, j, k);
            ++zone;
          });
        }
      }
    });
    for (auto* v : {&B, &X}) {
      check(HYPRE_IJVectorCreate(comm, num.lower, num.upper, v), "IJVectorCreate");
      check(HYPRE_IJVectorSetObjectType(*v, HYPRE_PARCSR), "IJVectorSetObjectType");
      check(HYPRE_IJVectorInitialize(*v), "IJVectorInitialize");
    }
    check(HYPRE_IJVectorSetValues(B, nlocal, idx.data(), bv.data()), "IJVectorSetValues");
    check(HYPRE_IJVectorSetValues(X, nlocal, idx.data(), xv.data()), "IJVectorSetValues");
    check(HYPRE_IJVectorAssemble(B), "IJVectorAssemble");
    check(HYPRE_IJVectorAssemble(X), "IJVectorAssemble");

    HYPRE_ParCSRMatrix pA = nullptr;
    HYPRE_ParVector pb = nullptr, px = nullptr;
    HYPRE_IJMatrixGetObject(A, reinterpret_cast<void**>(&pA));
    HYPRE_IJVectorGetObject(B, reinterpret_cast<void**>(&pb));
    HYPRE_IJVectorGetObject(X, reinterpret_cast<void**>(&px));

    if (o.preconditioner == "boomeramg") {
      HYPRE_BoomerAMGCreate(&pc);
      HYPRE_BoomerAMGSetPrintLevel(pc, 0);
      HYPRE_BoomerAMGSetMaxIter(pc, 1);  // one V-cycle per application
      HYPRE_BoomerAMGSetTol(pc, 0.0);
    }
    auto set_pc = [&](auto setprecond, HYPRE_Solver sv) {
      if (o.preconditioner == "boomeramg")
        setprecond(sv, HYPRE_BoomerAMGSolve, HYPRE_BoomerAMGSetup, pc);
      else if (o.preconditioner == "jacobi")
        setprecond(sv, HYPRE_ParCSRDiagScale, HYPRE_ParCSRDiagScaleSetup, nullptr);
    };
    HYPRE_Int iters = 0;
    HYPRE_Real rel = 0;
    {
      TESSERA_REGION("solver/hypre_solve");
      if (o.method == "cg") {
        HYPRE_ParCSRPCGCreate(comm, &solver);
        HYPRE_PCGSetTol(solver, o.rtol);
        HYPRE_PCGSetMaxIter(solver, o.max_iterations);
        HYPRE_PCGSetTwoNorm(solver, 1);
        set_pc(HYPRE_ParCSRPCGSetPrecond, solver);
        check(HYPRE_ParCSRPCGSetup(solver, pA, pb, px), "PCG setup");
        check(HYPRE_ParCSRPCGSolve(solver, pA, pb, px), "PCG solve");
        HYPRE_ParCSRPCGGetNumIterations(solver, &iters);
        HYPRE_ParCSRPCGGetFinalRelativeResidualNorm(solver, &rel);
        HYPRE_ParCSRPCGDestroy(solver);
      } else if (o.method == "gmres") {
        HYPRE_ParCSRGMRESCreate(comm, &solver);
        HYPRE_GMRESSetKDim(solver, 30);
        HYPRE_GMRESSetTol(solver, o.rtol);
        HYPRE_GMRESSetMaxIter(solver, o.max_iterations);
        set_pc(HYPRE_ParCSRGMRESSetPrecond, solver);
        check(HYPRE_ParCSRGMRESSetup(solver, pA, pb, px), "GMRES setup");
        check(HYPRE_ParCSRGMRESSolve(solver, pA, pb, px), "GMRES solve");
        HYPRE_ParCSRGMRESGetNumIterations(solver, &iters);
        HYPRE_ParCSRGMRESGetFinalRelativeResidualNorm(solver, &rel);
        HYPRE_ParCSRGMRESDestroy(solver);
      } else {
        HYPRE_ParCSRBiCGSTABCreate(comm, &solver);
        HYPRE_BiCGSTABSetTol(solver, o.rtol);
        HYPRE_BiCGSTABSetMaxIter(solver, o.max_iterations);
        set_pc(HYPRE_ParCSRBiCGSTABSetPrecond, solver);
        check(HYPRE_ParCSRBiCGSTABSetup(solver, pA, pb, px), "BiCGSTAB setup");
        check(HYPRE_ParCSRBiCGSTABSolve(solver, pA, pb, px), "BiCGSTAB solve");
        HYPRE_ParCSRBiCGSTABGetNumIterations(solver, &iters);
        HYPRE_ParCSRBiCGSTABGetFinalRelativeResidualNorm(solver, &rel);
        HYPRE_ParCSRBiCGSTABDestroy(solver);
      }
    }
    if (pc) HYPRE_BoomerAMGDestroy(pc);
    res.iterations = int(iters);
    res.residual = double(rel);
    res.converged = rel <= o.rtol;
    // The answer back into x.
    check(HYPRE_IJVectorGetValues(X, nlocal, idx.data(), xv.data()), "IJVectorGetValues");
    m.with_layout([&](auto tag) {
      for (int id : m.local_leaves()) {
        const auto w = m.scratch_view(id, tag);
        for (int c = 0; c < ncomp; ++c) {
          int zone = 0;
          mesh::for_each_zone(s, [&](int i, int j, int k) {
            w(x.vars[std::size_t(c)], i, j, k) = xv[std::size_t(row_of(id, zone, c) - num.lower)];
            ++zone;
          });
        }
      }
    });
    HYPRE_IJMatrixDestroy(A);
    HYPRE_IJVectorDestroy(B);
    HYPRE_IJVectorDestroy(X);
  }
  return res;
}

#endif

}  // namespace tessera::solvers

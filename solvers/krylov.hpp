#pragma once
// Krylov solvers over the leaves of the mesh (issue 21): BiCGSTAB (van der Vorst 1992,
// right-preconditioned) and preconditioned CG, with Jacobi or no preconditioning, for an
// operator given as a function (matrix-free: its apply fills the guard zones of its
// operand and applies a stencil). Why a layer of its own (solvers/, between mesh/ and
// physics/): a Krylov method needs the mesh (scratch variables, guard fills, leaf-ordered
// sums) but no physics, and more than one unit will solve with it (radiation diffusion,
// implicit transport); the mesh must not know about it.
//
// Vectors are scratch variables (mesh::VarRole::scratch: never written, restarted or
// regridded), one per component: a system of ncomp unknowns per zone (species) is one
// vector of ncomp variables. Dot products and norms are per-leaf partial sums added in
// canonical leaf order (Mesh::leaf_sums): the iterates, the iteration counts and the
// answer are the same bits on any number of ranks.
//
// A solve that does not reach solver.rtol in solver.max_iterations (or breaks down) is a
// one-line Error naming the operator, the iterations and the residual, or with
// on_failure = "warn" a warning line on rank 0 and the last iterate.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mesh/mesh.hpp"
#include "solvers/types.hpp"

namespace tessera::solvers {

/// The hypre backend's matrix and setup kept between solves (solvers/hypre_backend.cpp).
struct HypreCache;
struct HypreCacheDeleter {
  void operator()(HypreCache* c) const;
};

class Krylov {
 public:
  /// The scratch variables the work vectors need: `prefix` + letter + component digit
  /// (prefix of at most 2 characters, ncomp <= 10), role scratch, linear prolongation.
  static std::vector<mesh::VarInfo> work_variables(const std::string& prefix, int ncomp,
                                                   const std::string& owner);
  Krylov() = default;
  /// Looks the work vectors up (after the mesh exists).
  Krylov(mesh::Mesh& m, Options o, const std::string& prefix, int ncomp, std::string name);

  /// Solves A x = b; x holds the first guess on entry and the answer on return. diag:
  /// the diagonal of A (Jacobi), unused without preconditioning; rows: the same operator
  /// as a matrix (solver.backend = "hypre" needs it). Collective.
  /// operator_key: nonzero when the caller knows the operator is the same as in the last
  /// solve with that key (on the same tree): the hypre backend then reuses its matrix and
  /// setup; 0: a new operator.
  Result solve(const Apply& A, const Field& b, const Field& x, const Field& diag,
               const Rows& rows = {}, std::uint64_t operator_key = 0);

  const Stats& stats() const { return stats_; }
  const Options& options() const { return opt_; }

  /// The binary exponent of the largest |element| of b and x when it lies outside
  /// 2^+-200 (solve scales both by its inverse power of two), else 0. Collective.
  int scale_exponent(const Field& b, const Field& x);
  /// y *= 2^e, exactly (but for elements pushed into or out of the subnormals).
  void scale(const Field& y, int e);

  // Vector operations over the local leaves' interiors (collective where they reduce).
  /// y = value everywhere
  void set(double value, const Field& y);
  /// y = a x + b y
  void axpby(double a, const Field& x, double b, const Field& y);
  /// z = x + a y
  void xpay(const Field& x, double a, const Field& y, const Field& z);
  /// y = x / d (component by component); or y = x without preconditioning.
  void precondition(const Field& x, const Field& d, const Field& y);
  /// Dot products (x_k, y_k) of the pairs, leaf-ordered, all in one reduction; with
  /// `by_volume`, each zone's term times its volume (see weight_by_volume).
  std::vector<double> dots(const std::vector<std::pair<const Field*, const Field*>>& pairs,
                           bool by_volume = false);
  /// CG's inner products weighted by zone volume: an operator in divergence form on a
  /// curvilinear mesh, V^-1 (sum of face fluxes), is symmetric only after scaling by the
  /// volumes V, i.e. self-adjoint in (x, y)_V = sum V x y, and CG in that inner product is
  /// CG on V A x = V b with Jacobi M = V diag(A) (z = diag(A)^-1 r as before). The
  /// stopping test stays |r| <= rtol |b| in the plain 2-norm. Off by default (Cartesian:
  /// the weights are one constant and would only change the bits).
  void weight_by_volume(bool on) { by_volume_ = on; }

 private:
  mesh::Mesh* m_ = nullptr;
  Options opt_;
  std::string name_;
  Field r_, rh_, p_, v_, s_, t_, ph_, sh_;
  Stats stats_;
  bool by_volume_ = false;
  std::unique_ptr<HypreCache, HypreCacheDeleter> hypre_;
  /// solve() on b and x in range, bn = |b| (its time counted from t0).
  Result solve_scaled(const Apply& A, const Field& b, const Field& x, const Field& diag,
                      const Rows& rows, std::uint64_t operator_key, double bn,
                      std::chrono::steady_clock::time_point t0);
  Result bicgstab(const Apply& A, const Field& b, const Field& x, const Field& diag, double bn);
  Result cg(const Apply& A, const Field& b, const Field& x, const Field& diag, double bn);
  void fail(const Result& r, const std::string& why);
};

}  // namespace tessera::solvers

// Krylov solvers over the mesh's leaves (see krylov.hpp).
#include "solvers/krylov.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "solvers/composite.hpp"
#include "solvers/hypre_backend.hpp"

namespace tessera::solvers {

namespace {
constexpr const char* kLetters = "rhpvstPS";  // r, r-hat, p, v, s, t, p-hat, s-hat
}

void Options::declare_params(base::Params& p) {
  p.declare_string("solver.backend", "tessera", {"tessera", "hypre"},
                   "linear solver backend: tessera (matrix-free Krylov over the leaves) or hypre "
                   "(the same operator assembled into a ParCSR matrix; on an adaptive mesh the "
                   "coarse-fine rows are probed from the matrix-free operator)");
  p.declare_string("solver.method", "bicgstab", {"bicgstab", "cg", "gmres"},
                   "Krylov method: bicgstab, cg (symmetric operators), gmres (hypre only)");
  p.declare_string("solver.preconditioner", "jacobi", {"jacobi", "boomeramg", "pfmg", "none"},
                   "preconditioner: jacobi, none, boomeramg (hypre only); pfmg is refused (it "
                   "needs hypre's Struct interface, not built)");
  p.declare_real("solver.rtol", 1e-10, 1e-16, 1.0,
                 "stop when the residual's 2-norm is at most rtol times the right-hand side's");
  p.declare_int("solver.max_iterations", 200, 1, 1000000,
                "iterations per solve before it fails (see solver.on_failure)");
  p.declare_string("solver.on_failure", "error", {"error", "warn"},
                   "a solve that does not converge: error (one line, the run stops) or warn "
                   "(a warning line; the run goes on with the last iterate)");
}

Options Options::from(const base::Params& p) {
  Options o;
  o.backend = p.get_string("solver.backend");
  o.method = p.get_string("solver.method");
  o.preconditioner = p.get_string("solver.preconditioner");
  o.rtol = p.get_real("solver.rtol");
  o.max_iterations = static_cast<int>(p.get_int("solver.max_iterations"));
  o.warn = p.get_string("solver.on_failure") == "warn";
  if (o.backend == "hypre" && !hypre_available())
    throw Error(
        "solver.backend = \"hypre\": unavailable (hypre not built in: install "
        "libhypre-dev and rebuild)");
  if (o.preconditioner == "pfmg")
    throw Error(
        "solver.preconditioner = \"pfmg\": needs hypre's Struct interface, which "
        "tessera does not build (use \"boomeramg\" or \"jacobi\")");
  if (o.backend == "tessera" && o.method == "gmres")
    throw Error(
        "solver.method = \"gmres\": only with solver.backend = \"hypre\" (use "
        "\"bicgstab\" or \"cg\")");
  if (o.backend == "tessera" && o.preconditioner == "boomeramg")
    throw Error(
        "solver.preconditioner = \"boomeramg\": only with solver.backend = \"hypre\" "
        "(use \"jacobi\" or \"none\")");
  return o;
}

std::vector<mesh::VarInfo> Krylov::work_variables(const std::string& prefix, int ncomp,
                                                  const std::string& owner) {
  if (prefix.empty() || prefix.size() > 2 || ncomp < 1 || ncomp > 10)
    throw Error("solver work vectors: prefix of 1-2 characters and 1-10 components");
  std::vector<mesh::VarInfo> v;
  for (const char* l = kLetters; *l; ++l)
    for (int c = 0; c < ncomp; ++c)
      v.push_back(mesh::VarInfo(prefix + *l + std::to_string(c), -1, mesh::VarKind::auxiliary,
                                false, false, owner)
                      .with_role(mesh::VarRole::scratch)
                      .with_prolong(mesh::Prolong::linear));
  return v;
}

Krylov::Krylov(mesh::Mesh& m, Options o, const std::string& prefix, int ncomp, std::string name)
    : m_(&m), opt_(std::move(o)), name_(std::move(name)) {
  Field* f[8] = {&r_, &rh_, &p_, &v_, &s_, &t_, &ph_, &sh_};
  for (int k = 0; k < 8; ++k)
    for (int c = 0; c < ncomp; ++c) {
      const std::string n = prefix + kLetters[k] + std::to_string(c);
      const int i = m.scratch_index(n);
      if (i < 0) throw Error("solver: no scratch variable '" + n + "' (work_variables missing?)");
      f[k]->vars.push_back(i);
    }
}

namespace {
/// f(view, j, k, i0, i1) for every interior x-row of every local leaf (scratch storage):
/// the callee loops i over [i0, i1) through view.row(var, j, k), a plain pointer in the
/// var-major layout (the loops vectorise), a strided row in the zone-major one.
template <class F>
void rows_of(mesh::Mesh& m, F&& f) {
  const auto& s = m.shape();
  const int i0 = s.g(0), i1 = s.g(0) + s.ni(0);
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto w = m.scratch_view(id, tag);
      for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
        for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) f(w, j, k, i0, i1);
    }
  });
}
}  // namespace

void Krylov::set(double value, const Field& y) {
  rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
    for (int c = 0; c < y.ncomp(); ++c) {
      const auto Y = w.row(y.vars[c], j, k);
      for (int i = i0; i < i1; ++i) Y[i] = value;
    }
  });
}

void Krylov::axpby(double a, const Field& x, double b, const Field& y) {
  rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
    for (int c = 0; c < x.ncomp(); ++c) {
      const auto X = w.row(x.vars[c], j, k);
      const auto Y = w.row(y.vars[c], j, k);
      for (int i = i0; i < i1; ++i) Y[i] = a * X[i] + b * Y[i];
    }
  });
}

void Krylov::xpay(const Field& x, double a, const Field& y, const Field& z) {
  rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
    for (int c = 0; c < x.ncomp(); ++c) {
      const auto X = w.row(x.vars[c], j, k);
      const auto Y = w.row(y.vars[c], j, k);
      const auto Z = w.row(z.vars[c], j, k);
      for (int i = i0; i < i1; ++i) Z[i] = X[i] + a * Y[i];
    }
  });
}

void Krylov::precondition(const Field& x, const Field& d, const Field& y) {
  TESSERA_REGION("solver/precond");
  const bool jacobi = opt_.preconditioner == "jacobi";
  rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
    for (int c = 0; c < x.ncomp(); ++c) {
      const auto X = w.row(x.vars[c], j, k);
      const auto D = w.row(d.vars[c], j, k);
      const auto Y = w.row(y.vars[c], j, k);
      if (jacobi)
        for (int i = i0; i < i1; ++i) Y[i] = X[i] / D[i];
      else
        for (int i = i0; i < i1; ++i) Y[i] = X[i];
    }
  });
}

std::vector<double> Krylov::dots(const std::vector<std::pair<const Field*, const Field*>>& pairs,
                                 bool by_volume) {
  TESSERA_REGION("solver/reduce");
  auto& m = *m_;
  const auto& s = m.shape();
  const int n = static_cast<int>(pairs.size());
  const int i0 = s.g(0), i1 = s.g(0) + s.ni(0);
  // Per leaf and pair one partial sum in a fixed order (rows, components, i); the leaves'
  // partials added exactly (Mesh::leaf_sums, parallel/exact_sum.hpp).
  thread_local std::vector<double> vol;
  return m.leaf_sums(n, [&](int id, double* out) {
    if (by_volume) {  // zone volumes along x (BlockGeom::volume; the same for every j, k)
      const mesh::BlockGeom g = m.geom(id);
      vol.resize(std::size_t(i1 - i0));
      for (int i = i0; i < i1; ++i) vol[std::size_t(i - i0)] = g.volume(i - i0);
    }
    m.with_layout([&](auto tag) {
      const auto w = m.scratch_view(id, tag);
      for (int q = 0; q < n; ++q) {
        const Field& x = *pairs[q].first;
        const Field& y = *pairs[q].second;
        double acc = 0.0;
        for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
          for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j)
            for (int c = 0; c < x.ncomp(); ++c) {
              const auto X = w.row(x.vars[c], j, k);
              const auto Y = w.row(y.vars[c], j, k);
              if (by_volume)
                for (int i = i0; i < i1; ++i) acc += vol[std::size_t(i - i0)] * (X[i] * Y[i]);
              else
                for (int i = i0; i < i1; ++i) acc += X[i] * Y[i];
            }
        out[q] = acc;
      }
    });
  });
}

int Krylov::scale_exponent(const Field& b, const Field& x) {
  double big = 0.0;
  rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
    for (const Field* f : {&b, &x})
      for (int c = 0; c < f->ncomp(); ++c) {
        const auto Y = w.row(f->vars[c], j, k);
        for (int i = i0; i < i1; ++i) big = std::max(big, std::fabs(Y[i]));
      }
  });
  MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_DOUBLE, MPI_MAX, m_->comm());
  if (!(big > 0.0) || !std::isfinite(big)) return 0;
  // |b|^2 and the recurrences' products stay normal doubles while the largest element
  // lies within 2^+-200 (a sum over 2^100 zones of products of operators' entries up to
  // 2^300 included); outside, a power of two brings it to 1, exactly.
  const int e = std::ilogb(big);
  return e > 200 || e < -200 ? e : 0;
}

void Krylov::scale(const Field& y, int e) {
  rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
    for (int c = 0; c < y.ncomp(); ++c) {
      const auto Y = w.row(y.vars[c], j, k);
      for (int i = i0; i < i1; ++i) Y[i] = std::ldexp(Y[i], e);
    }
  });
}

Result Krylov::solve(const Apply& A, const Field& b, const Field& x, const Field& diag,
                     const Rows& rows, std::uint64_t operator_key) {
  // A x = b is linear: where b and the first guess are so small or so large that |b|^2
  // would underflow or overflow (a pulse of amplitude 1e-170 "converged" to x = 0 in no
  // iteration; one of 1e160 broke down on a NaN residual), both are scaled by a power of
  // two before the solve and x and b back after it (issue 48). |b| decides whether to look:
  // in range (2^+-200) the solve goes on as ever, without another pass or reduction.
  const auto t0 = std::chrono::steady_clock::now();
  const double bn = std::sqrt(dots({{&b, &b}})[0]);
  if (bn >= 0x1p-200 && bn <= 0x1p200)
    return solve_scaled(A, b, x, diag, rows, operator_key, bn, t0);
  const int e = scale_exponent(b, x);
  if (e == 0) return solve_scaled(A, b, x, diag, rows, operator_key, bn, t0);
  scale(b, -e);
  scale(x, -e);
  Result r;
  try {
    r = solve_scaled(A, b, x, diag, rows, operator_key, std::sqrt(dots({{&b, &b}})[0]), t0);
  } catch (...) {
    scale(b, e);
    scale(x, e);
    throw;
  }
  scale(b, e);
  scale(x, e);
  return r;
}

Result Krylov::solve_scaled(const Apply& A, const Field& b, const Field& x, const Field& diag,
                            const Rows& rows, std::uint64_t operator_key, double bn,
                            std::chrono::steady_clock::time_point t0) {
  Result r;
  if (bn == 0.0) {
    set(0.0, x);  // A x = 0: x = 0
    r.converged = true;
  } else if (opt_.backend == "hypre") {
    if (!rows) throw Error("solver: the " + name_ + " operator has no matrix form for hypre");
    // On an adaptive mesh the rows next to coarse-fine faces are probed from A; every
    // new matrix is checked against A (p and v are free until a Krylov method runs).
    const MatrixCheck verify{A, p_, v_, name_};
    const bool composite = is_composite(m_->tree());
    r = hypre_solve(*m_, opt_, composite ? composite_rows(*m_, A, rows, p_, v_, name_) : rows, b, x,
                    operator_key, hypre_, A ? &verify : nullptr);
    if (!r.converged) fail(r, "did not converge");
  } else {
    r = opt_.method == "cg" ? cg(A, b, x, diag, bn) : bicgstab(A, b, x, diag, bn);
  }
  ++stats_.solves;
  stats_.iterations += r.iterations;
  stats_.iterations_max = std::max(stats_.iterations_max, r.iterations);
  stats_.residual_max = std::max(stats_.residual_max, r.residual);
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void Krylov::fail(const Result& r, const std::string& why) {
  const std::string line = fmt::format(
      "solver: the {} solve ({}, {} preconditioning) {} after {} iterations "
      "(relative residual {:.3e}, solver.rtol {:.1e})",
      name_, opt_.method, opt_.preconditioner, why, r.iterations, r.residual, opt_.rtol);
  if (!opt_.warn) throw Error(line);
  if (m_->rank() == 0) std::cerr << "tessera: warning: " << line << "\n";
}

Result Krylov::bicgstab(const Apply& A, const Field& b, const Field& x, const Field& diag,
                        double bn) {
  // van der Vorst (1992), right-preconditioned: A M^-1 (M x) = b, M = diag(A) (Jacobi).
  // Convergence of the recurrence's residual is confirmed with the true one, b - A x (one
  // more apply); if that is above the tolerance, or on a breakdown, the method restarts
  // from the true residual (r-hat = r), a few times at most.
  Result res;
  constexpr int kMaxRestarts = 5;
  int restarts = 0;
  std::vector<double> rr;
  // r = b - A x, its norm; returns |r| / |b|.
  auto true_residual = [&] {
    {
      TESSERA_REGION("solver/apply");
      A(x, r_);
    }
    axpby(1.0, b, -1.0, r_);
    rr = dots({{&r_, &r_}});
    return std::sqrt(rr[0]) / bn;
  };
  double rho = 1.0, alpha = 1.0, omega = 1.0, rho1 = 0.0;
  // From the true residual: r-hat = r, p = v = 0.
  auto start = [&] {
    axpby(1.0, r_, 0.0, rh_);
    set(0.0, p_);
    set(0.0, v_);
    rho = alpha = omega = 1.0;
    rho1 = rr[0];
  };
  res.residual = true_residual();
  if (res.residual <= opt_.rtol) {
    res.converged = true;
    return res;
  }
  start();
  // The recurrence says converged, or broke down: true if the true residual agrees (done),
  // false after a restart; a failure once the restarts are spent.
  auto confirm = [&](const char* why) {
    res.residual = true_residual();
    if (res.residual <= opt_.rtol) {
      res.converged = true;
      return true;
    }
    if (++restarts > kMaxRestarts || rr[0] == 0.0) {
      fail(res, why);
      return true;
    }
    start();
    return false;
  };
  while (res.iterations < opt_.max_iterations) {
    ++res.iterations;
    if (rho1 == 0.0 || omega == 0.0) {
      if (confirm("broke down (rho or omega = 0)")) return res;
    }
    const double beta = (rho1 / rho) * (alpha / omega);
    // p = r + beta (p - omega v)
    rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
      for (int c = 0; c < p_.ncomp(); ++c) {
        const auto P = w.row(p_.vars[c], j, k);
        const auto R = w.row(r_.vars[c], j, k);
        const auto V = w.row(v_.vars[c], j, k);
        for (int i = i0; i < i1; ++i) P[i] = R[i] + beta * (P[i] - omega * V[i]);
      }
    });
    precondition(p_, diag, ph_);
    {
      TESSERA_REGION("solver/apply");
      A(ph_, v_);
    }
    const double rhv = dots({{&rh_, &v_}})[0];
    if (rhv == 0.0) {
      if (confirm("broke down ((r-hat, v) = 0)")) return res;
      continue;
    }
    alpha = rho1 / rhv;
    xpay(r_, -alpha, v_, s_);  // s = r - alpha v
    precondition(s_, diag, sh_);
    {
      TESSERA_REGION("solver/apply");
      A(sh_, t_);
    }
    const auto ts = dots({{&t_, &s_}, {&t_, &t_}, {&s_, &s_}});
    if (std::sqrt(ts[2]) / bn <= opt_.rtol) {  // s is small enough: x += alpha p-hat
      axpby(alpha, ph_, 1.0, x);
      if (confirm("stagnated (the true residual stays above the tolerance)")) return res;
      continue;
    }
    omega = ts[1] > 0.0 ? ts[0] / ts[1] : 0.0;
    // x += alpha p-hat + omega s-hat; r = s - omega t
    rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
      for (int c = 0; c < x.ncomp(); ++c) {
        const auto X = w.row(x.vars[c], j, k), PH = w.row(ph_.vars[c], j, k),
                   SH = w.row(sh_.vars[c], j, k), R = w.row(r_.vars[c], j, k),
                   S = w.row(s_.vars[c], j, k), T = w.row(t_.vars[c], j, k);
        for (int i = i0; i < i1; ++i) {
          X[i] += alpha * PH[i] + omega * SH[i];
          R[i] = S[i] - omega * T[i];
        }
      }
    });
    rr = dots({{&r_, &r_}, {&rh_, &r_}});
    res.residual = std::sqrt(rr[0]) / bn;
    if (res.residual <= opt_.rtol) {
      if (confirm("stagnated (the true residual stays above the tolerance)")) return res;
      continue;
    }
    rho = rho1;
    rho1 = rr[1];
  }
  fail(res, "did not converge");
  return res;
}

Result Krylov::cg(const Apply& A, const Field& b, const Field& x, const Field& diag, double bn) {
  // Preconditioned conjugate gradients (symmetric positive definite A): z = M^-1 r.
  Result res;
  {
    TESSERA_REGION("solver/apply");
    A(x, r_);
  }
  axpby(1.0, b, -1.0, r_);
  precondition(r_, diag, ph_);  // z
  // |r|^2 and (r, z): the second in the volume-weighted inner product when asked
  // (weight_by_volume); one reduction when both are plain.
  auto residual_and_rz = [&] {
    if (!by_volume_) return dots({{&r_, &r_}, {&r_, &ph_}});
    return std::vector<double>{dots({{&r_, &r_}})[0], dots({{&r_, &ph_}}, true)[0]};
  };
  auto rz = residual_and_rz();
  res.residual = std::sqrt(rz[0]) / bn;
  if (res.residual <= opt_.rtol) {
    res.converged = true;
    return res;
  }
  axpby(1.0, ph_, 0.0, p_);
  double rho = rz[1];
  while (res.iterations < opt_.max_iterations) {
    ++res.iterations;
    {
      TESSERA_REGION("solver/apply");
      A(p_, v_);  // q = A p
    }
    const double pq = dots({{&p_, &v_}}, by_volume_)[0];
    if (pq <= 0.0) {
      fail(res, "broke down ((p, A p) <= 0: the operator is not positive definite)");
      return res;
    }
    const double alpha = rho / pq;
    rows_of(*m_, [&](const auto& w, int j, int k, int i0, int i1) {
      for (int c = 0; c < x.ncomp(); ++c) {
        const auto X = w.row(x.vars[c], j, k), P = w.row(p_.vars[c], j, k),
                   R = w.row(r_.vars[c], j, k), V = w.row(v_.vars[c], j, k);
        for (int i = i0; i < i1; ++i) {
          X[i] += alpha * P[i];
          R[i] -= alpha * V[i];
        }
      }
    });
    precondition(r_, diag, ph_);
    rz = residual_and_rz();
    res.residual = std::sqrt(rz[0]) / bn;
    if (res.residual <= opt_.rtol) {
      res.converged = true;
      return res;
    }
    const double beta = rz[1] / rho;
    rho = rz[1];
    xpay(ph_, beta, p_, p_);  // p = z + beta p
  }
  fail(res, "did not converge");
  return res;
}

}  // namespace tessera::solvers

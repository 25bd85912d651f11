// The mesh's deterministic sums over leaves: per-leaf partials added in the canonical leaf
// order, so that every rank count gives the same bits (Mesh::leaf_sums).
#include <algorithm>
#include <numeric>
#include <string>

#include "base/error.hpp"
#include "mesh/flux_register.hpp"
#include "mesh/mesh.hpp"
#include "mesh/plan_ops.hpp"
#include "parallel/comm.hpp"
#include "perf/timers.hpp"

namespace tessera::mesh {

std::vector<double> Mesh::leaf_sums(int n, const std::function<void(int, double*)>& f) const {
  const std::size_t nn = static_cast<std::size_t>(n);
  std::vector<double> all(nn * tree_.size(), 0.0);
  for (int id : local_leaves_) f(id, all.data() + nn * std::size_t(id));
  return add_leaf_partials(n, all);
}

std::vector<double> Mesh::add_leaf_partials(int n, const std::vector<double>& all) const {
  const std::size_t nn = static_cast<std::size_t>(n);
  std::vector<double> red(nn * tree_.size(), 0.0);
  // Exactly one rank holds each entry, the others 0: the sum over ranks is exact.
  MPI_Allreduce(all.data(), red.data(), static_cast<int>(red.size()), MPI_DOUBLE, MPI_SUM, comm_);
  std::vector<double> tot(nn, 0.0);
  for (int id = 0; id < tree_.size(); ++id)
    for (std::size_t q = 0; q < nn; ++q) tot[q] += red[nn * std::size_t(id) + q];
  return tot;
}

}  // namespace tessera::mesh

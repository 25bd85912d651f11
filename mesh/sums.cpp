// The mesh's deterministic sums over leaves: per-leaf partials added exactly and reduced
// exactly (parallel/exact_sum.hpp), so that every rank count gives the same bits with a
// payload that depends on the number of sums alone (Mesh::leaf_sums).
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
  std::vector<double> part(static_cast<std::size_t>(n));
  std::vector<parallel::ExactSum> acc(static_cast<std::size_t>(n));
  for (int id : local_leaves_) {
    std::fill(part.begin(), part.end(), 0.0);
    f(id, part.data());
    for (std::size_t q = 0; q < part.size(); ++q) acc[q].add(part[q]);
  }
  return parallel::exact_allreduce(comm_, acc);
}

}  // namespace tessera::mesh

// tessera_fill_bench: the cost of a guard fill of one variable against the whole fill of
// a ten-variable unk (Mesh::fill_guards(VarSet) against fill_guards()), bytes written and
// sent (mesh::transfer_bytes) and wall time, median of R alternating repeats. 3-D,
// 4 x 4 x 4 root blocks of 16^3 zones, 2 guard zones, periodic; with --amr the middle
// root blocks refined once (so the fill restricts and prolongs too). Runs on any number of
// ranks (mpirun -n 2 ...): times are the slowest rank's.
//
//   tessera_fill_bench [--amr] [--repeats R] [--layout var_major|zone_major]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "mesh/mesh.hpp"

namespace {

using namespace tessera;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  bool amr = false;
  int repeats = 11;
  std::string layout = "var_major";
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--amr")) amr = true;
    if (!std::strcmp(argv[a], "--repeats") && a + 1 < argc) repeats = std::atoi(argv[++a]);
    if (!std::strcmp(argv[a], "--layout") && a + 1 < argc) layout = argv[++a];
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  base::Params p;
  mesh::Mesh::declare_params(p);
  for (const std::string o : {"mesh.ndim=3", "mesh.nxb=16", "mesh.nblockx=4", "mesh.nblocky=4",
                              "mesh.nblockz=4", "mesh.lrefine_max=2", "mesh.maxblocks=200"})
    p.apply_override(o);
  p.apply_override("mesh.layout=" + layout);
  for (const char* f : {"xl", "xr", "yl", "yr", "zl", "zr"})
    p.apply_override(std::string("mesh.") + f + "_boundary_type=periodic");
  std::vector<mesh::VarInfo> vars;
  for (int v = 0; v < 10; ++v) vars.emplace_back("v" + std::to_string(v));
  mesh::Mesh m(p, MPI_COMM_WORLD, vars, 2);
  if (amr) {
    std::vector<mesh::Flag> flags(m.tree().size(), mesh::Flag::keep);
    for (int id : m.local_leaves()) {
      const auto lo = m.tree().block_lo(id);
      if (lo[0] > 0.2 && lo[0] < 0.6 && lo[1] > 0.2 && lo[1] < 0.6 && lo[2] > 0.2 && lo[2] < 0.6)
        flags[id] = mesh::Flag::refine;
    }
    m.fill_guards();
    m.regrid(flags);
  }
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      auto u = m.view(id, tag);
      const auto& s = m.shape();
      for (int v = 0; v < s.nvar; ++v)
        for (int k = 0; k < s.n(2); ++k)
          for (int j = 0; j < s.n(1); ++j)
            for (int i = 0; i < s.n(0); ++i) u(v, i, j, k) = 1.0 + 0.01 * (v + i + 2 * j + 3 * k);
    }
  });
  const mesh::VarSet one = m.var_set({"v3"});
  auto timed = [&](auto&& fill, mesh::TransferBytes& bytes) {
    MPI_Barrier(MPI_COMM_WORLD);
    mesh::transfer_bytes() = {};
    const auto t0 = std::chrono::steady_clock::now();
    fill();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bytes = mesh::transfer_bytes();
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
  };
  std::vector<double> t_all, t_one;
  mesh::TransferBytes b_all, b_one;
  for (int r = 0; r < repeats + 1; ++r) {  // the first pair warms the caches up
    const double a = timed([&] { m.fill_guards(); }, b_all);
    const double o = timed([&] { m.fill_guards(one); }, b_one);
    if (r > 0) t_all.push_back(a), t_one.push_back(o);
  }
  unsigned long long w[4] = {b_all.written, b_all.sent, b_one.written, b_one.sent};
  MPI_Allreduce(MPI_IN_PLACE, w, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("guard fill, 3-D %s, %d leaves of 16^3 (%s), %d rank(s), median of %d\n",
                amr ? "AMR" : "uniform", m.tree().num_leaves(), layout.c_str(), size, repeats);
    std::printf("%-22s %14s %14s %12s\n", "fill", "bytes written", "bytes sent", "ms");
    std::printf("%-22s %14llu %14llu %12.3f\n", "all 10 variables", w[0], w[1],
                1e3 * median(t_all));
    std::printf("%-22s %14llu %14llu %12.3f\n", "1 variable (VarSet)", w[2], w[3],
                1e3 * median(t_one));
    std::printf("ratio all/one: bytes written %.2f, time %.2f\n", double(w[0]) / double(w[2]),
                median(t_all) / median(t_one));
  }
  MPI_Finalize();
  return 0;
}

// The communication census (comm_census.hpp): a PMPI layer over the MPI calls the code
// makes, and the summary of what it counted.
#include "perf/comm_census.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace tessera::perf {

namespace {

std::uint64_t bytes_of(std::int64_t count, MPI_Datatype t) {
  int size = 0;
  PMPI_Type_size(t, &size);
  return count > 0 && size > 0 ? std::uint64_t(count) * std::uint64_t(size) : 0;
}

void p2p(std::int64_t count, MPI_Datatype t) {
  auto& tree = TimerTree::local();
  const CommCounts c{1, bytes_of(count, t), 0, 0};
  tree.comm_here() += c;
  tree.comm_total() += c;
}

void collective(std::int64_t count, MPI_Datatype t) {
  auto& tree = TimerTree::local();
  const CommCounts c{0, 0, 1, count > 0 ? bytes_of(count, t) : 0};
  tree.comm_here() += c;
  tree.comm_total() += c;
}

// Regions by path ("hydro/guardcell/mpi"), as the perf summary names them; the root is
// "total" (calls outside every region).
void add_region(const TimerNode& n, const std::string& path,
                std::map<std::string, CommCounts>& out) {
  if (n.comm.p2p_messages + n.comm.collectives > 0) out[path] += n.comm;
  for (const auto& c : n.children)
    add_region(*c, n.parent == nullptr ? c->name : path + "/" + c->name, out);
}

}  // namespace

CommCounts comm_total() {
  return TimerTree::local().comm_total();
}

std::map<std::string, CommCounts> comm_by_region() {
  std::map<std::string, CommCounts> out;
  add_region(TimerTree::local().root(), "total", out);
  return out;
}

CommCounts operator-(const CommCounts& a, const CommCounts& b) {
  return {a.p2p_messages - b.p2p_messages, a.p2p_bytes - b.p2p_bytes, a.collectives - b.collectives,
          a.collective_bytes - b.collective_bytes};
}

nlohmann::json to_json(const CommCounts& c) {
  return {{"p2p_messages", c.p2p_messages},
          {"p2p_bytes", c.p2p_bytes},
          {"collectives", c.collectives},
          {"collective_bytes", c.collective_bytes}};
}

nlohmann::json comm_summary(MPI_Comm comm, const CommCounts& loop, long steps) {
  int nranks = 1;
  PMPI_Comm_size(comm, &nranks);
  const double n = double(std::max(1L, steps));
  // Maxima over ranks of the per-step figures, and the mean of the bytes sent.
  double mx[4] = {double(loop.p2p_messages) / n, double(loop.p2p_bytes) / n,
                  double(loop.collectives) / n, double(loop.collective_bytes) / n};
  double sum_bytes = mx[1];
  PMPI_Allreduce(MPI_IN_PLACE, mx, 4, MPI_DOUBLE, MPI_MAX, comm);
  PMPI_Allreduce(MPI_IN_PLACE, &sum_bytes, 1, MPI_DOUBLE, MPI_SUM, comm);
  // Regions: every rank's names (they may differ), then each figure's maximum over ranks.
  const auto mine = comm_by_region();
  std::vector<char> names;
  for (const auto& [k, v] : mine) names.insert(names.end(), k.c_str(), k.c_str() + k.size() + 1);
  std::vector<std::string> keys;
  for (const auto& theirs : detail::allgather_bytes(comm, names))
    for (std::size_t a = 0; a < theirs.size(); a += keys.back().size() + 1)
      keys.emplace_back(theirs.data() + a);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<double> v(4 * keys.size(), 0.0);
  for (std::size_t q = 0; q < keys.size(); ++q)
    if (const auto it = mine.find(keys[q]); it != mine.end()) {
      v[4 * q] = double(it->second.p2p_messages);
      v[4 * q + 1] = double(it->second.p2p_bytes);
      v[4 * q + 2] = double(it->second.collectives);
      v[4 * q + 3] = double(it->second.collective_bytes);
    }
  PMPI_Allreduce(MPI_IN_PLACE, v.data(), int(v.size()), MPI_DOUBLE, MPI_MAX, comm);
  nlohmann::json regions = nlohmann::json::object();
  for (std::size_t q = 0; q < keys.size(); ++q)
    regions[keys[q]] = {{"p2p_messages", v[4 * q]},
                        {"p2p_bytes", v[4 * q + 1]},
                        {"collectives", v[4 * q + 2]},
                        {"collective_bytes", v[4 * q + 3]}};
  return {{"ranks", nranks},
          {"steps", steps},
          {"p2p_messages_per_step_max", mx[0]},
          {"p2p_bytes_per_step_max", mx[1]},
          {"p2p_bytes_per_step_mean", sum_bytes / nranks},
          {"collectives_per_step_max", mx[2]},
          {"collective_bytes_per_step_max", mx[3]},
          {"regions", regions}};
}

}  // namespace tessera::perf

// The PMPI layer: the MPI functions the code calls, counted, then the library's.
extern "C" {

int MPI_Isend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request* req) {
  tessera::perf::p2p(count, t);
  return PMPI_Isend(buf, count, t, dest, tag, comm, req);
}

int MPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  tessera::perf::p2p(count, t);
  return PMPI_Send(buf, count, t, dest, tag, comm);
}

int MPI_Allreduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  tessera::perf::collective(count, t);
  return PMPI_Allreduce(s, r, count, t, op, comm);
}

int MPI_Reduce(const void* s, void* r, int count, MPI_Datatype t, MPI_Op op, int root,
               MPI_Comm comm) {
  tessera::perf::collective(count, t);
  return PMPI_Reduce(s, r, count, t, op, root, comm);
}

int MPI_Bcast(void* buf, int count, MPI_Datatype t, int root, MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  tessera::perf::collective(rank == root ? count : 0, t);
  return PMPI_Bcast(buf, count, t, root, comm);
}

int MPI_Gather(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt, int root,
               MPI_Comm comm) {
  tessera::perf::collective(sc, st);
  return PMPI_Gather(s, sc, st, r, rc, rt, root, comm);
}

int MPI_Gatherv(const void* s, int sc, MPI_Datatype st, void* r, const int rc[], const int d[],
                MPI_Datatype rt, int root, MPI_Comm comm) {
  tessera::perf::collective(sc, st);
  return PMPI_Gatherv(s, sc, st, r, rc, d, rt, root, comm);
}

int MPI_Allgather(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt,
                  MPI_Comm comm) {
  tessera::perf::collective(sc, st);
  return PMPI_Allgather(s, sc, st, r, rc, rt, comm);
}

int MPI_Allgatherv(const void* s, int sc, MPI_Datatype st, void* r, const int rc[], const int d[],
                   MPI_Datatype rt, MPI_Comm comm) {
  tessera::perf::collective(sc, st);
  return PMPI_Allgatherv(s, sc, st, r, rc, d, rt, comm);
}

int MPI_Alltoall(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt,
                 MPI_Comm comm) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  tessera::perf::collective(std::int64_t(sc) * size, st);
  return PMPI_Alltoall(s, sc, st, r, rc, rt, comm);
}

int MPI_Alltoallv(const void* s, const int sc[], const int sd[], MPI_Datatype st, void* r,
                  const int rc[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
  int size = 1;
  PMPI_Comm_size(comm, &size);
  std::int64_t n = 0;
  for (int q = 0; q < size; ++q) n += sc[q];
  tessera::perf::collective(n, st);
  return PMPI_Alltoallv(s, sc, sd, st, r, rc, rd, rt, comm);
}

int MPI_Barrier(MPI_Comm comm) {
  tessera::perf::collective(0, MPI_BYTE);
  return PMPI_Barrier(comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request* req) {
  tessera::perf::collective(0, MPI_BYTE);
  return PMPI_Ibarrier(comm, req);
}

}  // extern "C"

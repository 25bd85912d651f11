#include "parallel/comm.hpp"

#include <algorithm>

namespace tessera::parallel {

void exchange(MPI_Comm comm, const std::map<int, std::vector<double>>& send,
              std::map<int, std::vector<double>>& recv, int tag) {
  const int me = rank(comm);
  std::vector<MPI_Request> reqs;
  reqs.reserve(send.size() + recv.size());
  for (auto& [r, buf] : recv) {
    if (r == me || buf.empty()) continue;
    reqs.emplace_back();
    MPI_Irecv(buf.data(), static_cast<int>(buf.size()), MPI_DOUBLE, r, tag, comm, &reqs.back());
  }
  for (const auto& [r, buf] : send) {
    if (buf.empty()) continue;
    if (r == me) {
      auto& dst = recv[r];
      std::copy(buf.begin(), buf.end(), dst.begin());
      continue;
    }
    reqs.emplace_back();
    MPI_Isend(buf.data(), static_cast<int>(buf.size()), MPI_DOUBLE, r, tag, comm, &reqs.back());
  }
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
}

}  // namespace tessera::parallel

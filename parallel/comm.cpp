#include "parallel/comm.hpp"

#include <algorithm>
#include <cstdint>

#include "base/error.hpp"

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

std::string broadcast(MPI_Comm comm, std::string text, int root) {
  std::uint64_t n = text.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm);
  text.resize(static_cast<std::size_t>(n));
  constexpr std::uint64_t kPiece = std::uint64_t{1} << 30;
  for (std::uint64_t at = 0; at < n; at += kPiece) {
    MPI_Bcast(text.data() + at, static_cast<int>(std::min(kPiece, n - at)), MPI_CHAR, root, comm);
  }
  return text;
}

std::pair<int, std::string> first_message(MPI_Comm comm, const std::string& message) {
  const int n = size(comm);
  const int mine = message.empty() ? n : rank(comm);
  int first = n;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == n) return {-1, {}};
  return {first, broadcast(comm, message, first)};
}

void agree(MPI_Comm comm, const std::string& message) {
  auto [first, text] = first_message(comm, message);
  if (first >= 0) throw Error(text);
}

}  // namespace tessera::parallel

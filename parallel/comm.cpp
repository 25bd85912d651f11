#include "parallel/comm.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <thread>

#include "base/error.hpp"

namespace tessera::parallel {

std::vector<std::pair<std::size_t, int>> pieces(std::size_t n, std::size_t max_piece) {
  std::vector<std::pair<std::size_t, int>> out;
  max_piece = std::clamp<std::size_t>(max_piece, 1, std::size_t(std::numeric_limits<int>::max()));
  for (std::size_t at = 0; at < n; at += max_piece)
    out.emplace_back(at, static_cast<int>(std::min(max_piece, n - at)));
  return out;
}

int int_count(std::size_t n, const char* what) {
  if (n > std::size_t(std::numeric_limits<int>::max()))
    throw Error(std::string(what) + ": " + std::to_string(n) +
                " elements exceed an MPI count (2^31 - 1)");
  return static_cast<int>(n);
}

void exchange(MPI_Comm comm, const std::map<int, std::vector<double>>& send,
              std::map<int, std::vector<double>>& recv, int tag, std::size_t max_piece) {
  const int me = rank(comm);
  std::vector<MPI_Request> reqs;
  reqs.reserve(send.size() + recv.size());
  // Messages over max_piece doubles go in pieces (an int count stops at 2^31 - 1: 16 GiB),
  // matched in order (MPI does not overtake between one pair on one tag).
  for (auto& [r, buf] : recv) {
    if (r == me || buf.empty()) continue;
    for (const auto& [at, n] : pieces(buf.size(), max_piece)) {
      reqs.emplace_back();
      MPI_Irecv(buf.data() + at, n, MPI_DOUBLE, r, tag, comm, &reqs.back());
    }
  }
  for (const auto& [r, buf] : send) {
    if (buf.empty()) continue;
    if (r == me) {
      auto& dst = recv[r];
      std::copy(buf.begin(), buf.end(), dst.begin());
      continue;
    }
    for (const auto& [at, n] : pieces(buf.size(), max_piece)) {
      reqs.emplace_back();
      MPI_Isend(buf.data() + at, n, MPI_DOUBLE, r, tag, comm, &reqs.back());
    }
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

MPI_Comm error_exit_comm() {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  return c;
}

void end_with_error(MPI_Comm comm, const std::string& message, double grace_seconds) {
  int on = 0, off = 0;
  MPI_Initialized(&on);
  MPI_Finalized(&off);
  if (on == 0 || off != 0 || comm == MPI_COMM_NULL || size(comm) == 1) {
    if (on == 0 || off != 0 || world_rank() == 0)
      std::cerr << "tessera: error: " << message << std::endl;
    return;
  }
  // Every rank failed (the barrier completes): one line, from rank 0.
  MPI_Request req;
  MPI_Ibarrier(comm, &req);
  const double t0 = MPI_Wtime();
  int done = 0;
  while (done == 0 && MPI_Wtime() - t0 < grace_seconds) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (done != 0) {
    if (rank(comm) == 0) std::cerr << "tessera: error: " << message << std::endl;
    return;
  }
  std::cerr << "tessera: error (rank " << rank(comm) << "): " << message
            << "\ntessera: the other ranks did not fail with it: aborting the job" << std::endl;
  MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace tessera::parallel

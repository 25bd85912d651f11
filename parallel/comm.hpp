#pragma once
// Thin MPI helpers: rank/size, a point-to-point buffer exchange in which both sides
// know the message sizes in advance (they come from a plan built on the replicated tree),
// the one string broadcast, and agreement on a failure.
#include <mpi.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tessera::parallel {

inline int rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
/// This process's rank in MPI_COMM_WORLD; 0 where MPI was not started (tessera's serial
/// commands, eos, nse, units, params, simd and check, run without MPI unless an MPI
/// launcher started them: app/main.cpp).
inline int world_rank() {
  int on = 0;
  MPI_Initialized(&on);
  return on != 0 ? rank(MPI_COMM_WORLD) : 0;
}
inline int size(MPI_Comm c) {
  int s = 1;
  MPI_Comm_size(c, &s);
  return s;
}

/// The pieces [offset, count) of a message of n elements, each at most max_piece (and an
/// int, which MPI counts are): one piece below the limit, none for n = 0.
std::vector<std::pair<std::size_t, int>> pieces(std::size_t n, std::size_t max_piece);

/// n as an MPI count, or tessera::Error naming `what` where it exceeds 2^31 - 1.
int int_count(std::size_t n, const char* what);

/// Messages of more doubles go in pieces (1 GiB of 8 GiB's worth of doubles each).
inline constexpr std::size_t kMaxPiece = std::size_t{1} << 30;

/// Collective in effect (every rank that appears as a peer must call it): sends
/// send[r] to rank r and receives recv[r].size() doubles from rank r, with sizes
/// pre-set by the caller, each message in pieces of at most max_piece doubles (any size:
/// an int count alone stops at 16 GiB). Self-messages are copied. Deterministic: results
/// do not depend on arrival order.
void exchange(MPI_Comm comm, const std::map<int, std::vector<double>>& send,
              std::map<int, std::vector<double>>& recv, int tag, std::size_t max_piece = kMaxPiece);

/// Collective: `text` as given on `root`, on every rank (the argument is ignored elsewhere).
/// Any length and any bytes (NULs included): the size goes as 64 bits, the characters in
/// pieces of at most 2^30 (MPI counts are int). The only place a string is broadcast.
std::string broadcast(MPI_Comm comm, std::string text, int root);

/// Collective: the lowest rank whose `message` is not empty, and that message, on every
/// rank; {-1, ""} if every message is empty. How a failure on some ranks becomes the same
/// decision on all of them (no rank left waiting in the next collective).
std::pair<int, std::string> first_message(MPI_Comm comm, const std::string& message);

/// Collective: if any rank's message is not empty, every rank throws tessera::Error with
/// the lowest such rank's message.
void agree(MPI_Comm comm, const std::string& message);

/// Collective over MPI_COMM_WORLD, once after MPI starts: the communicator end_with_error
/// takes (a duplicate, so that its barrier cannot match a message of the run's).
MPI_Comm error_exit_comm();

/// After an error on this rank (issue 48): an error thrown on every rank (a parameter, an
/// agree()) reaches this on every rank of `comm` within `grace_seconds`: rank 0 prints
/// "tessera: error: MESSAGE" and it returns, for MPI_Finalize and exit code 1. An error
/// thrown on some ranks only would leave the others waiting in a collective for ever: the
/// rank prints "tessera: error (rank R): MESSAGE" and calls MPI_Abort(1), which ends the
/// job within seconds. Without MPI, or with MPI_COMM_NULL (MPI not started): rank 0 prints
/// and it returns.
void end_with_error(MPI_Comm comm, const std::string& message, double grace_seconds = 3.0);

}  // namespace tessera::parallel

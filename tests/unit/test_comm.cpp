// parallel/comm: the string broadcast and agreement on a failure, on any number of ranks
// (ctest runs one; `mpirun -n 2 tessera_unit --gtest_filter=Comm*` runs several).
#include <gtest/gtest.h>
#include <mpi.h>

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "parallel/comm.hpp"
#include "tests/unit/test_util.hpp"

namespace {

using tessera::parallel::broadcast;
using tessera::parallel::first_message;
using tessera::testing_util::world_rank;
using tessera::testing_util::world_size;

/// What rank r holds before a broadcast: differs on every rank, in length and content.
std::string local_text(int r) {
  return "rank " + std::to_string(r) + std::string(static_cast<std::size_t>(r) * 7, 'x');
}

TEST(CommBroadcast, GivenATextOnTheRootThenEveryRankReturnsThatText) {
  for (int root = 0; root < world_size(); ++root) {
    EXPECT_EQ(broadcast(MPI_COMM_WORLD, local_text(world_rank()), root), local_text(root))
        << "root " << root;
  }
}

TEST(CommBroadcast, GivenAnEmptyTextOnTheRootThenLongerTextsElsewhereBecomeEmpty) {
  const std::string mine = world_rank() == 0 ? std::string() : local_text(world_rank());
  EXPECT_EQ(broadcast(MPI_COMM_WORLD, mine, 0), "");
}

TEST(CommBroadcast, GivenBytesWithNulsAndAllCharValuesThenTheyArriveUnchanged) {
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  bytes += std::string(3, '\0') + "tail";
  const std::string got =
      broadcast(MPI_COMM_WORLD, world_rank() == 0 ? bytes : std::string("?"), 0);
  EXPECT_EQ(got.size(), bytes.size());
  EXPECT_EQ(got, bytes);
}

TEST(CommBroadcast, GivenSeveralMegabytesThenEveryRankGetsTheWholeText) {
  std::string big(5u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  const std::string got = broadcast(MPI_COMM_WORLD, world_rank() == 0 ? big : std::string(), 0);
  EXPECT_EQ(got, big);
}

TEST(CommFirstMessage, GivenMessagesOnSomeRanksThenEveryRankGetsTheLowestSuchRanksMessage) {
  const int n = world_size();
  const int from = n - 1;  // only the highest rank has something to say
  const std::string mine = world_rank() == from ? "failed on rank " + std::to_string(from) : "";
  const auto [first, text] = first_message(MPI_COMM_WORLD, mine);
  EXPECT_EQ(first, from);
  EXPECT_EQ(text, "failed on rank " + std::to_string(from));

  const auto [none, empty] = first_message(MPI_COMM_WORLD, "");
  EXPECT_EQ(none, -1);
  EXPECT_EQ(empty, "");
}

}  // namespace

namespace {

// Issue 48: MPI counts are ints; a message of 2^31 doubles or more (16 GiB) went negative.
// Given any size, then its pieces are ints no larger than the limit, in order, covering it.
TEST(CommPieces, GivenSizesBeyondAnIntThenEveryPieceIsAnIntCoveringTheMessageInOrder) {
  using tessera::parallel::pieces;
  EXPECT_TRUE(pieces(0, 8).empty());
  const auto small = pieces(5, 2);
  ASSERT_EQ(small.size(), 3u);
  EXPECT_EQ(small[2], (std::pair<std::size_t, int>{4, 1}));
  for (const std::size_t n :
       {(std::size_t{1} << 31) + 5, (std::size_t{1} << 33) + 7, std::size_t{1} << 30}) {
    std::size_t next = 0;
    for (const auto& [at, k] : pieces(n, tessera::parallel::kMaxPiece)) {
      EXPECT_EQ(at, next);
      EXPECT_GT(k, 0);
      EXPECT_LE(std::size_t(k), tessera::parallel::kMaxPiece);
      next += std::size_t(k);
    }
    EXPECT_EQ(next, n);
  }
  // A limit beyond an int is clamped to one (all pieces but the last that large).
  const auto big = pieces(std::size_t{1} << 33, std::size_t{1} << 40);
  for (std::size_t q = 0; q + 1 < big.size(); ++q)
    EXPECT_EQ(big[q].second, std::numeric_limits<int>::max()) << q;
  EXPECT_THROW(tessera::parallel::int_count(std::size_t{1} << 31, "x"), tessera::Error);
  EXPECT_EQ(tessera::parallel::int_count((std::size_t{1} << 31) - 1, "x"),
            std::numeric_limits<int>::max());
}

// Given messages cut into pieces of 3 doubles, when every rank exchanges with every other,
// then each receives its peers' data whole and in order.
TEST(CommExchange, GivenMessagesInSmallPiecesThenTheyArriveWholeAndInOrder) {
  const int me = world_rank(), n = world_size();
  std::map<int, std::vector<double>> send, recv;
  for (int r = 0; r < n; ++r) {
    const std::size_t len = std::size_t(7 + r + me);
    for (std::size_t i = 0; i < len; ++i) send[r].push_back(1000.0 * me + 10.0 * r + double(i));
    recv[r].assign(std::size_t(7 + me + r), -1.0);
  }
  tessera::parallel::exchange(MPI_COMM_WORLD, send, recv, 77, 3);
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < recv[r].size(); ++i)
      ASSERT_EQ(recv[r][i], 1000.0 * r + 10.0 * me + double(i)) << "from " << r << " at " << i;
}

}  // namespace

// parallel/comm: the string broadcast and agreement on a failure, on any number of ranks
// (ctest runs one; `mpirun -n 2 tessera_unit --gtest_filter=Comm*` runs several).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

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

// GoogleTest main for the unit binary: MPI is initialised once so that modules which
// take a communicator can be tested on MPI_COMM_WORLD (size 1 under ctest).
#include <gtest/gtest.h>
#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}

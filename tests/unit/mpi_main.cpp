// GoogleTest main for the unit binary: MPI is initialised once so that modules which
// take a communicator can be tested on MPI_COMM_WORLD (size 1 under ctest; the tests'
// environment asks for an isolated singleton, parallel/singleton.hpp).
#include <gtest/gtest.h>
#include <mpi.h>

#include "parallel/singleton.hpp"

int main(int argc, char** argv) {
  tessera::parallel::prepare_singleton();  // TESSERA_MPI_SINGLETON=isolated: no orted
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}

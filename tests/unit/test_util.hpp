#pragma once
// Helpers shared by the unit tests.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "base/error.hpp"

namespace tessera::testing_util {

/// This process's rank and the number of ranks in MPI_COMM_WORLD.
inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// The message of the tessera::Error thrown by f, or a marker that makes a test fail.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no tessera::Error thrown)";
}

/// Assertion with a readable failure: text contains part.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace tessera::testing_util

#pragma once
// Shared by the tests of the Highway kernels (test_hydro_simd.cpp, test_pic_simd.cpp; also
// cross-built for aarch64 by tools/arm/test_arm.sh, so nothing here needs MPI or HDF5).
#include <string>
#include <vector>

#include "base/simd.hpp"

namespace tessera::test {

/// The Highway targets available here (every one but the C++ reference, "scalar").
inline std::vector<std::string> highway_targets() {
  std::vector<std::string> t;
  for (const auto& name : tessera::simd::available())
    if (name != "scalar") t.push_back(name);
  return t;
}

/// Restores the best target when a test ends, whatever it forced.
struct ForceGuard {
  ~ForceGuard() { tessera::simd::force("auto"); }
};

}  // namespace tessera::test

#pragma once
// The instruction set of the explicitly vectorised kernels (Google Highway, runtime
// dispatch): which one runs, which ones this build can run on this machine, and forcing a
// lower one for tests and studies.
//
// The kernels are compiled once per Highway target (x86: EMU128, SSE4, AVX2, AVX3 =
// AVX-512; Arm: NEON, SVE, SVE2) in the same binary, and the best the processor supports
// is chosen at the first call. "scalar" is not a Highway target: it selects the C++
// reference kernels (physics/hydro/reconstruct.hpp, riemann.hpp; physics/pic/gather.hpp,
// boris.hpp, esirkepov.hpp), which the compiler may
// vectorise by itself for the build's -march, and which the tests compare the Highway
// kernels with.
//
// Forcing: the environment variable TESSERA_SIMD, or the parameter perf.simd, names a
// target ("avx512" is AVX3's other name; case does not matter); "auto" (or empty) is the
// best one. A target the processor or the build lacks is a one-line error listing those
// available.
#include <string>
#include <vector>

namespace tessera::simd {

/// What the kernels run with: Highway's target name ("AVX2", "AVX3", "SSE4", "NEON",
/// "SVE", "EMU128"; its one-lane HWY_SCALAR is "hwy_scalar") or "scalar", and the number of doubles
/// per vector (1 for scalar; for SVE the hardware's length).
struct Target {
  std::string name;
  int lanes = 1;
};

/// The target the kernels dispatch to now.
Target current();
/// True when "scalar" is forced: the callers run their C++ reference kernels.
bool reference();
/// Targets this build holds and this processor runs, best first, then "scalar".
std::vector<std::string> available();
/// Force a target by name (see above); "auto" or "" restores the best. Throws Error
/// naming the available targets if `name` is not one of them.
void force(const std::string& name);
/// force(TESSERA_SIMD) if that variable is set (the app calls it at start).
void force_from_environment();
/// What the code outside the dispatched kernels was compiled for: "portable" (no -march,
/// the default), "native" (TESSERA_NATIVE) or TESSERA_ARCH's -march value.
std::string compiled_for();

}  // namespace tessera::simd

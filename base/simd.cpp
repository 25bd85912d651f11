// Highway target selection (base/simd.hpp). This file is compiled once per target
// (foreach_target.h) for Probe(), which reports the target and vector length that a
// dispatched call actually gets.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "base/simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace tessera::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// The target this copy was compiled for and its number of doubles per vector.
void Probe(long long* target, int* lanes) {
  *target = HWY_TARGET;
  *lanes = int(hn::Lanes(hn::ScalableTag<double>()));
}
}  // namespace HWY_NAMESPACE
}  // namespace tessera::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/error.hpp"
#include "base/simd.hpp"

namespace tessera::simd {

HWY_EXPORT(Probe);

namespace {
bool g_reference = false;

// What this build holds and the processor runs (read once, before any forcing mocks it).
long long runnable() {
  static const long long r = hwy::SupportedTargets() & HWY_TARGETS;
  return r;
}

// Highway's name of target t; its one-lane HWY_SCALAR is "hwy_scalar" here ("scalar" is
// the C++ reference kernels).
std::string target_name(long long t) {
  return t == HWY_SCALAR ? std::string("hwy_scalar") : std::string(hwy::TargetName(t));
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

Target current() {
  if (g_reference) return {"scalar", 1};
  long long t = 0;
  int lanes = 1;
  HWY_DYNAMIC_DISPATCH(Probe)(&t, &lanes);
  return {target_name(t), lanes};
}

bool reference() {
  return g_reference;
}

std::vector<std::string> available() {
  std::vector<std::string> out;
  // Lower bits are better targets.
  for (long long t = runnable(); t != 0; t &= t - 1) out.push_back(target_name(t & -t));
  out.push_back("scalar");
  return out;
}

void force(const std::string& name) {
  const std::string want = lower(name) == "avx512" ? "avx3" : lower(name);
  const long long all = runnable();
  // The Highway target asked for (0: auto or scalar); an unknown name changes nothing.
  long long bit = 0;
  for (long long t = all; t != 0; t &= t - 1)
    if (lower(target_name(t & -t)) == want) bit = t & -t;
  const bool known = bit != 0 || want.empty() || want == "auto" || want == "scalar";
  if (known) {
    g_reference = want == "scalar";
    // This target and every worse one (the dispatcher takes the best of them), or all.
    hwy::SetSupportedTargetsForTest(bit != 0 ? all & ~(bit - 1) : 0);
    hwy::GetChosenTarget().Update(hwy::SupportedTargets());
    return;
  }
  std::string list;
  for (long long t = all; t != 0; t &= t - 1) list += lower(target_name(t & -t)) + ", ";
  throw Error(
      fmt::format("simd: target '{}' is not available here (this build on this "
                  "processor runs: {}scalar)",
                  name, list));
}

void force_from_environment() {
  if (const char* e = std::getenv("TESSERA_SIMD")) force(e);
}

std::string compiled_for() {
#ifdef TESSERA_MARCH
  return TESSERA_MARCH;
#else
  return "unknown";  // built outside CMake (tools/arm/test_arm.sh)
#endif
}

}  // namespace tessera::simd
#endif  // HWY_ONCE

#!/usr/bin/env bash
# make test-arm: the Highway hydro and PIC kernels and their unit tests (tests/unit/
# test_hydro_simd.cpp and test_pic_simd.cpp, against the C++ reference kernels) cross-built for aarch64 with
# Debian's g++-aarch64-linux-gnu and run under qemu-user on an emulated processor with
# 512-bit SVE (qemu-aarch64 -cpu max,sve512=on: the A64FX's vector length), every target
# Highway finds there (SVE2, SVE, NEON, its scalar code) and the C++ reference.
#
# The kernels need no MPI or HDF5: base/simd.cpp, physics/hydro/kernels_simd.cpp,
# physics/pic/kernels_simd.cpp and the tests, with fmt header-only. Highway's and GoogleTest's arm64 libraries come from
# Debian's arm64 packages, downloaded and unpacked into build-arm/sysroot (apt-get
# download; the machine's own packages are not changed, but apt must know the arm64
# architecture: dpkg --add-architecture arm64, which this script runs when needed).
#
# Usage: tools/arm/test_arm.sh [build-dir]   (default build-arm)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/build-arm}")
SYSROOT=$OUT/sysroot
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
start=$(date +%s)

need=""
for p in g++-aarch64-linux-gnu qemu-user; do
  dpkg-query -W -f='${Status}' $p 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
  echo "test-arm: installing$need"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
mkdir -p "$OUT/debs" "$SYSROOT"
if [ ! -f "$SYSROOT/.unpacked" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "test-arm: adding the arm64 architecture to apt (for apt-get download)"
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
  (cd "$OUT/debs" && apt-get download -qq libhwy1:arm64 libhwy-dev:arm64 libgtest-dev:arm64 \
     2>/dev/null)
  for d in "$OUT"/debs/*.deb; do dpkg-deb -x "$d" "$SYSROOT"; done
  touch "$SYSROOT/.unpacked"
fi

LIB=$SYSROOT/usr/lib/aarch64-linux-gnu
echo "test-arm: building the kernels and tests/unit/test_{hydro,pic}_simd.cpp for aarch64"
aarch64-linux-gnu-g++ -std=c++20 -O2 -fno-math-errno -Wall -Wextra \
  -I"$ROOT" -isystem "$SYSROOT/usr/include" -DFMT_HEADER_ONLY \
  -DHWY_COMPILE_ALL_ATTAINABLE "-DHWY_DISABLED_TARGETS=(HWY_SSSE3|HWY_AVX3_DL)" \
  "$ROOT/base/simd.cpp" "$ROOT/physics/hydro/kernels_simd.cpp" \
  "$ROOT/physics/pic/kernels_simd.cpp" \
  "$ROOT/tests/unit/test_hydro_simd.cpp" "$ROOT/tests/unit/test_pic_simd.cpp" \
  -L"$LIB" -Wl,-rpath,"$LIB" -lhwy -lgtest_main -lgtest -lpthread -o "$OUT/test_hydro_simd"

echo "test-arm: running under qemu-aarch64 -cpu max,sve512=on"
qemu-aarch64 -cpu max,sve512=on -L /usr/aarch64-linux-gnu "$OUT/test_hydro_simd" \
  --gtest_color=no
echo "test-arm: passed in $(( $(date +%s) - start )) s"

#!/usr/bin/env bash
# make test-arm: the Highway hydro and PIC kernels, the level set's WENO5 rows and the
# Helmholtz EOS kernels, and their unit tests (tests/unit/test_hydro_simd.cpp,
# test_pic_simd.cpp, test_levelset_rows.cpp and the kernel tests of test_helmholtz.cpp,
# against the C++ reference kernels) cross-built for aarch64 with
# Debian's g++-aarch64-linux-gnu and run under qemu-user on an emulated processor with
# 512-bit SVE (qemu-aarch64 -cpu max,sve512=on: the A64FX's vector length), every target
# Highway finds there (SVE2, SVE, NEON, its scalar code) and the C++ reference.
#
# The kernels need no MPI or HDF5: base/simd.cpp, physics/hydro/kernels_simd.cpp,
# physics/pic/kernels_simd.cpp and deposit_simd.cpp, physics/levelset/rows.cpp, physics/eos/helmholtz/*.cpp and
# the tests, with fmt
# header-only. The Helmholtz tests read the table the host build generated (the second
# argument; make test-arm runs `make helm-table` first): its bytes are the same on any
# little-endian machine. Highway's, GoogleTest's and OpenSSL's (the table's SHA-256) arm64 libraries come from
# Debian's arm64 packages, downloaded and unpacked into build-arm/sysroot (apt-get
# download; the machine's own packages are not changed, but apt must know the arm64
# architecture: dpkg --add-architecture arm64, which this script runs when needed).
#
# Usage: tools/arm/test_arm.sh [build-dir] [helm-table]   (default build-arm, build/helm_table.dat)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/build-arm}")
TABLE=$(realpath -m "${2:-$ROOT/build/helm_table.dat}")
if [ ! -f "$TABLE" ]; then
  echo "test-arm: no Helmholtz table at $TABLE: run make helm-table first" >&2
  exit 1
fi
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
if [ ! -f "$SYSROOT/.unpacked-2" ]; then  # -2: libssl added
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "test-arm: adding the arm64 architecture to apt (for apt-get download)"
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
  rm -f "$OUT"/debs/*.deb  # only this download's packages go into the sysroot
  if ! (cd "$OUT/debs" && apt-get download -qq libhwy1:arm64 libhwy-dev:arm64 \
          libgtest-dev:arm64 libssl3:arm64 libssl-dev:arm64); then
    echo "test-arm: apt-get download of the arm64 packages failed (names as in Debian 12)" >&2
    exit 1
  fi
  for d in "$OUT"/debs/*.deb; do dpkg-deb -x "$d" "$SYSROOT"; done
  touch "$SYSROOT/.unpacked-2"
fi

LIB=$SYSROOT/usr/lib/aarch64-linux-gnu
echo "test-arm: building the kernels and tests/unit/test_{hydro,pic}_simd.cpp, test_levelset_rows.cpp, test_helmholtz.cpp for aarch64"
# The level set's WENO5 rows without FMA contraction, as CMakeLists.txt builds them.
aarch64-linux-gnu-g++ -std=c++20 -O3 -fno-math-errno -ffp-contract=off -Wall -Wextra \
  -I"$ROOT" -isystem "$SYSROOT/usr/include" \
  -DHWY_COMPILE_ALL_ATTAINABLE "-DHWY_DISABLED_TARGETS=(HWY_SSSE3|HWY_AVX3_DL)" \
  -c "$ROOT/physics/levelset/rows.cpp" -o "$OUT/levelset_rows.o"
# -O3 as the Release build (GCC vectorises and inlines differently at -O2), asserts kept.
aarch64-linux-gnu-g++ -std=c++20 -O3 -fno-math-errno -Wall -Wextra \
  -I"$ROOT" -isystem "$SYSROOT/usr/include" -DFMT_HEADER_ONLY \
  -DHWY_COMPILE_ALL_ATTAINABLE "-DHWY_DISABLED_TARGETS=(HWY_SSSE3|HWY_AVX3_DL)" \
  "$ROOT/base/simd.cpp" "$ROOT/physics/hydro/kernels_simd.cpp" \
  "$ROOT/physics/pic/kernels_simd.cpp" "$ROOT/physics/pic/deposit_simd.cpp" \
  "$ROOT/tests/unit/test_hydro_simd.cpp" "$ROOT/tests/unit/test_pic_simd.cpp" \
  "$OUT/levelset_rows.o" "$ROOT/tests/unit/test_levelset_rows.cpp" \
  -L"$LIB" -Wl,-rpath,"$LIB" -lhwy -lgtest_main -lgtest -lpthread -o "$OUT/test_hydro_simd"
# The Helmholtz kernels with the Release build's flags (-O3 -DNDEBUG -fno-math-errno; the
# vector kernel without trapping math, the generator without FMA contraction, as
# CMakeLists.txt sets them: per file, so one object each), in their own program.
HELM=$ROOT/physics/eos/helmholtz
mkdir -p "$OUT/helm"
cxx() {  # source, extra flags...
  local src=$1; shift
  aarch64-linux-gnu-g++ -std=c++20 -O3 -DNDEBUG -fno-math-errno -Wall -Wextra \
    -I"$ROOT" -isystem "$SYSROOT/usr/include" \
    -isystem "$SYSROOT/usr/include/aarch64-linux-gnu" -DFMT_HEADER_ONLY \
    -DHWY_COMPILE_ALL_ATTAINABLE "-DHWY_DISABLED_TARGETS=(HWY_SSSE3|HWY_AVX3_DL)" \
    "-DTESSERA_HELM_TABLE_DEFAULT=\"$TABLE\"" "$@" -c "$src" \
    -o "$OUT/helm/$(basename "$src" .cpp).o"
}
rm -f "$OUT"/helm/*.o
for f in helmholtz helm_table scalar_kernel invert_check; do cxx "$HELM/$f.cpp"; done
cxx "$HELM/vector_kernel.cpp" -fno-trapping-math
for f in table_generator fermi_dirac; do cxx "$HELM/$f.cpp" -ffp-contract=off; done
cxx "$ROOT/base/simd.cpp"
cxx "$ROOT/base/sha256.cpp"
cxx "$ROOT/tests/unit/test_helmholtz.cpp"
objs=()
for f in helmholtz helm_table sha256 scalar_kernel invert_check vector_kernel table_generator \
         fermi_dirac simd test_helmholtz; do objs+=("$OUT/helm/$f.o"); done
aarch64-linux-gnu-g++ "${objs[@]}" -L"$LIB" -Wl,-rpath,"$LIB" -lhwy -lcrypto \
  -lgtest_main -lgtest -lpthread -o "$OUT/test_helmholtz"

echo "test-arm: running under qemu-aarch64 -cpu max,sve512=on"
qemu-aarch64 -cpu max,sve512=on -L /usr/aarch64-linux-gnu "$OUT/test_hydro_simd" \
  --gtest_color=no
# The kernel tests of test_helmholtz.cpp, vector against scalar under every target. Left to
# the host: the generator's and the table file's tests, and the 800,000 random inversions
# (287 s under emulation).
qemu-aarch64 -cpu max,sve512=on -L /usr/aarch64-linux-gnu "$OUT/test_helmholtz" \
  --gtest_color=no \
  --gtest_filter='Helmholtz.*:-Helmholtz.GivenRandomInTableStates_EveryInversionConvergesInBothKernels'
echo "test-arm: passed in $(( $(date +%s) - start )) s"

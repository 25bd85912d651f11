#pragma once
// TESSERA_CLONES: the compiler's own vector loops for several x86 instruction sets in one
// binary. A portable build (no -march; CMake defines TESSERA_PORTABLE) compiles the
// functions marked with it three times, for baseline x86-64, x86-64-v3 (AVX2, FMA) and
// x86-64-v4 (AVX-512), and the loader picks the one the processor runs (GCC's
// target_clones, an ifunc). For the hot loops that are not Highway kernels (primitives,
// the conservative update, the checks, the guard fill's copies): the Highway kernels
// dispatch themselves. A native build (-march=native or TESSERA_ARCH) needs none of it,
// and other compilers and processors get plain functions.
#if defined(TESSERA_PORTABLE) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TESSERA_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TESSERA_CLONES
#endif

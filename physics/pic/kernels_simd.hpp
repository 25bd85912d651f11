#pragma once
// The particle kernels of a PIC step written with Google Highway (kernels_simd.cpp; the deposit
// deposit_simd.cpp), dispatched at run time to the best instruction set of the processor
// (base/simd.hpp), on vectors of particles: the field gather (gather.hpp), the Boris push with the
// position update (boris.hpp) and the Esirkepov current deposit (esirkepov.hpp). Each computes, per
// particle, what the C++ reference named beside it computes, with the same operations in
// the same order (the deposit's sums excepted, below); results differ from the reference
// only where the compiler fuses a multiply and an add (round-off; tests/unit/test_pic_simd.cpp
// bounds it for every target the machine runs). Every lane does the same arithmetic, lanes
// never mix, and the partial last vector runs through the same code as whole ones (on a
// padded copy), so a particle's result does not depend on where in a vector it falls (the
// tests check it to the bit).
//
// The deposit computes the windows (Esirkepov's S0 and DS per axis) in vector lanes, then
// each particle's current as rows along x (4-lane vectors), and sums the current of a run
// of consecutive particles whose windows start at the same point before it goes into J, run
// after run in the order of the arrays (RunSums in kernels_simd.cpp). J's sums follow the
// particles' order, which is canonical (pic.sort: by cell, so the runs are long), and are
// bitwise the same on any rank count for a fixed target. They are not the reference's sums
// (each particle into J in turn): the two agree to round-off of the particles' currents.
//
// Particle arrays are structure-of-arrays (one array of n doubles per component).
#include <cstddef>
#include <cstdint>

#include "physics/pic/fields.hpp"

namespace tessera::pic::simd {

/// E and B (gather<D, P, S>, energy-conserving if `energy`) at the n positions x[0..2][p]
/// into eb[c * n + p], c = 0..5 (Ex, Ey, Ez, Bx, By, Bz). With ahead > 0, before each vector
/// of particles the fields of the particles `ahead` places after each of them (those below
/// n) are prefetched (prefetch_fields): the reference loop's prefetches, issued a vector at
/// a time.
/// With `runs`, consecutive particles whose shapes start at the same points are gathered
/// together, a stencil value broadcast to a vector of them (the particles sorted by cell:
/// pic.sort = "cell"); without, a particle's stencil is summed per lane. The two agree to
/// round-off; each gives a particle the same bits wherever it falls.
void gather(int D, int P, bool energy, bool runs, const EMFields& f, const Grid& g, std::size_t n,
            const double* const x[3], long ahead, double* eb);

/// For each of n particles: u^{n-1/2} -> u^{n+1/2} in E, B (eb as gather writes it) for
/// charge/mass qm (boris_push), xo = x^n, then x^n -> x^{n+1} (push_position); u and x in
/// place, xo[c * n + p].
void push(std::size_t n, double* const u[3], double* const x[3], const double* eb, double qm,
          double dt, double* xo);

/// J += the current of n macro-particles of charge q w[p] moving from xo (xo[c * n + p]) to
/// x in dt (deposit_current<D, P>; u = gamma v at n+1/2 gives v along inactive axes), summed
/// by runs of consecutive particles whose windows start at the same point, in the order p =
/// 0, 1, ..., n - 1.
void deposit(int D, int P, const Currents& J, const Grid& g, std::size_t n, const double* xo,
             const double* const x[3], const double* const u[3], const double* w, double q,
             double dt);

/// Bins of n particles of one block for ParticleSet::set_bins: (type - 1) cells (type
/// clamped to [1, ntypes]: a restart's unknown species sorts with the last, and is then
/// refused or dropped) + the grid point floor((x_a - x0[a]) inv[a] + shift) per active axis
/// a < D, clamped to [0, ext[a]), x fastest (cells = ext[0] ext[1] ext[2]). A particle's
/// bin does not depend on its place in the arrays.
void bins(int D, std::size_t n, const double* const x[3], const double* type, int ntypes,
          const double* x0, const double* inv, double shift, const int* ext, std::int32_t* out);

}  // namespace tessera::pic::simd

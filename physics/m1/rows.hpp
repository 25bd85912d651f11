// M1's transport across a plane of lines of a block (rows.cpp), compiled once per Highway
// target and dispatched at run time, so that a portable build runs it with the
// processor's vectors (issue 49). The lines of a plane are the vector lanes: each step
// along the sweep works on a row of nl cells at once (the block's interior along x for
// the y and z sweeps; along y, from a transposed copy, for the x sweep), instead of one
// short line at a time.
#pragma once

#include "physics/m1/closure.hpp"

namespace tessera::m1 {

/// nl lines of one species and group (cells g0 - 2 .. g0 + n + 1 read), swept along
/// `axis`: the moment q (E, Fx, Fy, Fz) of cell s of line l is u[q][s * ss + l]; chi (the
/// same indexing; null: no thick faces) is kappa_a + kappa_s, dx the zone width along the
/// sweep. `scratch`: at least 26 nl doubles the call may overwrite.
struct Plane {
  const double* u[4];
  const double* chi;
  long ss;
  int g0, n, nl, axis;
  double c, dx;
  Closure closure;
  bool mc;  ///< MC-limited slopes (else the unlimited central difference)
  double* scratch;
};

/// The flux through face s - 1/2 of every moment and line, f[q][(s - g0) nl + l] for s in
/// [g0, g0 + n] (not divided by dx): PLM face states (each cell's slopes scaled down where
/// a face state would leave the realizable set, by bisection on the scale), the closure's
/// fluxes of both states and the Lax-Friedrichs flux 0.5 (F_l + F_r) - 0.5 eps c (u_r -
/// u_l), eps = 1 / (chi dx) on a thick face (chi dx > 1, chi the two cells' mean), else 1.
/// Per face the IEEE operations of the line-by-line form, in its order (no fused
/// multiply-adds): the same bits on every target.
void plane_fluxes(const Plane& p, double* const f[4]);

}  // namespace tessera::m1

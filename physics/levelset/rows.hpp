// The level set's WENO5 row kernels, compiled once per Highway target and dispatched at run
// time (rows.cpp), so that a portable build runs them with the processor's vectors.
#pragma once

namespace tessera::levelset {

/// The backward (dm) and forward (dp) WENO5 derivatives of a row of n zones of a block
/// copy p from element c0 on, along an axis of stride st (three neighbours read each
/// side), 1 / dx = idx.
void one_sided_row(const double* p, long c0, long st, int n, double idx, double* dm, double* dp);

/// acc[i] -= v[i] dphi/dx_upwind for a row as one_sided_row reads it: the WENO5 derivative
/// from the side the velocity comes from (backward where v > 0, else forward). The value
/// taken is one_sided_row's, the same bits.
void upwind_row(const double* p, long c0, long st, int n, double idx, const double* v, double* acc);

}  // namespace tessera::levelset

#pragma once
// The hydro row kernels written with Google Highway (kernels_simd.cpp), dispatched at run
// time to the best instruction set of the processor (base/simd.hpp). Each computes what
// the C++ reference kernel named beside it in kernels_ref.hpp (or hydro.cpp, max_rate)
// computes (reconstruct.hpp, riemann.hpp per zone), with the same operations in the same
// order; results differ from the reference only where the compiler or Highway fuses a
// multiply and an add (round-off; tests/unit/test_hydro_simd.cpp bounds it for every
// target the machine runs). Every lane does the same arithmetic (whole vectors, the last
// one overlapping the one before; no scalar remainder loop), so a zone's result does not
// depend on where its row starts.
#include <cstddef>

#include "physics/hydro/kernels_ref.hpp"

namespace tessera::hydro::simd {

/// One row of faces (kernels_ref.hpp).
using RiemannRow = hydro::RiemannRow;

/// HLLC (hllc) or HLLE fluxes through r.n faces (ref::riemann).
void riemann(bool hllc, bool uniform, const RiemannRow& r);

/// Limited slopes of channels [0, nr) of W ([nr][N], the row from cell rb) along stride
/// st, zones [i0, i1), into d ([nr][n0]); limiter 0 minmod, 1 van Leer, 2 MC (slopes_row).
void slopes(int limiter, const double* W, std::size_t N, std::size_t rb, std::ptrdiff_t st, int i0,
            int i1, double* d, int n0, int nr);

/// The MUSCL-Hancock half step of one row over nd axes (hancock_row); uniform: Gamma1 is
/// ugc instead of W's channel nr.
void hancock(int nd, bool uniform, const double* W, std::size_t N, std::size_t rb, const double* sl,
             int i0, int i1, int n0, const double f[3], int nr, double ugc, double* H);

/// PLM face states B -/+ d/2 of channels [0, nr), then the fallback of both faces to the zone
/// average W ([nr][N] from the row's first cell) where the face's density or pressure is not
/// positive, every channel (mass scalars too): plm_states_row, fallback_scalar_row and fallback_row
/// in one call.
void plm_faces(const double* B, std::size_t bs, const double* d, const double* W, std::size_t N,
               int i0, int i1, int n0, int nr, double smalld, double smallp, double* lo,
               double* hi);

/// PPM face states (ppm_faces, CW84) of channels [0, nr) of W ([nr][N], the row from cell rb)
/// along stride st, zones [i0, i1), into lo and hi ([nr][n0]), then the fallback of both
/// faces to the zone average where the face's density or pressure is not positive, every
/// channel: ppm_states_row, fallback_scalar_row and fallback_row in one call. ds: scratch of
/// nr (n0 + 2) doubles (along x, st = 1: the slopes of zones [i0 - 1, i1 + 1)).
void ppm_faces(const double* W, std::size_t N, std::size_t rb, std::ptrdiff_t st, int i0, int i1,
               int n0, int nr, double smalld, double smallp, double* ds, double* lo, double* hi);

/// One interior row for max_rate(): n zones of the conserved variables (and, not uniform,
/// the EOS's pres and gamc), contiguous; 1/dx per axis, or per zone in rad for the radial
/// axis of curvilinear geometry.
struct MaxRateRow {
  int n = 0;
  const double *d, *mx, *my, *mz, *e;
  const double *pres = nullptr, *gamc = nullptr, *rad = nullptr;
  bool uniform = true;
  double ugc = 0, gm1 = 0, smallp = 0;
  double idx[3] = {0, 0, 0};
  /// If set: true when a zone of the row fails hydro's check (check_row in hydro.cpp:
  /// density not > 0, or a non-finite energy or momentum, uniform; a non-finite pres or
  /// energy otherwise), false when none does. The loads are the rate's.
  bool* bad = nullptr;
};

/// The largest over the row of sum_a (|u_a| + c) / dx_a, c = sqrt(Gamma1 p / rho), p from
/// the conserved variables (uniform: (game - 1) rho e) or unk's (max_rate in hydro.cpp).
double max_rate(const MaxRateRow& r);

/// The conservative update of nv rows of n zones in place (hydro.cpp, step 6): kind 0
/// q_v[t] += c (F_v[t] - F_v[t+1]) (add_divergence), 1 q_v[t] += c F_v[t] (add_flux), 2
/// q_v[t] -= c F_v[t] (sub_flux), t in [0, n), v in [0, nv).
void update_rows(int kind, int nv, double* const* q, const double* const* F, int n, double c);

/// Step 1 of hydro.cpp over n zones, every array contiguous: rho = max(d, smalld), v = m / rho,
/// and (uniform) p = max(gm1 rho (e / rho - |v|^2 / 2), smallp), or p = max(pres, smallp), gamc
/// and 1 / (game - 1) from unk's EOS state (primitives in hydro.cpp). An output may be the
/// array of its own input (wr of d, wx of mx, ..., wp of e or pres, wgc of gamc, wge of game).
struct PrimitivesRow {
  std::size_t n = 0;
  const double *d = nullptr, *mx = nullptr, *my = nullptr, *mz = nullptr, *e = nullptr;
  const double *pres = nullptr, *gamc = nullptr, *game = nullptr;  // not uniform
  double *wr = nullptr, *wx = nullptr, *wy = nullptr, *wz = nullptr, *wp = nullptr;
  double *wgc = nullptr, *wge = nullptr;  // not uniform
  bool uniform = true;
  double gm1 = 0, smalld = 0, smallp = 0;
};
void primitives(const PrimitivesRow& r);

/// out[c] = num[c] / den[c] for c in [0, n) (mass fractions from rho X); out may be num.
void divide(std::size_t n, const double* num, const double* den, double* out);

/// First order where a face state's density or pressure is not positive (fallback_row):
/// s0..s4 become w0..w4 there.
void fallback(double* s0, double* s1, double* s2, double* s3, double* s4, const double* w0,
              const double* w1, const double* w2, const double* w3, const double* w4, int i0,
              int i1, double smalld, double smallp);

}  // namespace tessera::hydro::simd

#pragma once
// The numerical kernels of the electromagnetic particle-in-cell unit (SI units, as WarpX):
// header-only, per block and per particle, with no mesh, driver or parameter code. The
// unit that declares variables and parameters and runs the step on the block mesh is
// pic_unit.hpp (the operator "pic").
//
// Files
//   constants.hpp  c, eps0, mu0, q_e, m_e, m_p, k_B (CODATA 2018).
//   fields.hpp     Field (strided view of one component over a block array with guards,
//                  field_of(BlockView, var) for either layout), EMFields, Currents, Grid
//                  (node-0 position and cell size), Box; the staggering convention.
//   shape.hpp      B-spline shapes of order 0-3, node-centred and half-cell staggered.
//   yee.hpp        yee::advance_b (Faraday, called with dt/2 twice per step), advance_e
//                  (Ampere with J/eps0), max_dt (CFL), dispersion_omega.
//   boris.hpp      boris_push (relativistic, u = gamma v), push_position, lorentz_gamma.
//   esirkepov.hpp  deposit_current (Esirkepov 2001, orders 1-3, 1-3 D), deposit_rho.
//   gather.hpp     gather<D, P, GatherScheme> (energy- or momentum-conserving).
//   species.hpp    PlasmaLoad, CellNumbering, load_uniform (global tags; a particle depends
//                  only on (seed, tag), not on the block split),
//                  macro_weight, splitmix64 / uniform01 / normal01; the species table
//                  (electron, positron, proton), find_species, response_factor.
//   absorbing.hpp  Mur's first-order absorbing condition on tangential E at a domain face
//                  (absorbing::Face, mur_coefficient, mur_step, mur_save, mur_apply).
//   pulse.hpp      Pulse, set_pulse: a divergence-free vacuum pulse (the boundary tests).
//
// Staggering (fields.hpp): array index (i, j, k) is the node at the lower corner of cell
// (i, j, k); Ex(i,j,k) at (i+1/2, j, k), Ey at (i, j+1/2, k), Ez at (i, j, k+1/2); Bx at
// (i, j+1/2, k+1/2), By at (i+1/2, j, k+1/2), Bz at (i+1/2, j+1/2, k); J as E; rho at
// nodes. Inactive axes (D < 3) have extent 1, index 0 and no staggering. A block owns
// indices [g, g+n) on each active axis.
//
// One step, as tests/unit/test_pic.cpp's pic_step runs it on one periodic block:
//   1. fill the guards of E and B (E^n, B^n);
//   2. per particle: gather -> boris_push (u^{n+1/2}) -> push_position (x^{n+1}) ->
//      deposit_current (J^{n+1/2}, into guards near a face);
//   3. sum the J guard deposits into the neighbours' interiors, in a fixed order, and zero
//      the guards; 4. advance_b(dt/2), fill B guards, advance_e(dt), fill E guards,
//      advance_b(dt/2); 5. migrate particles that left the block (ParticleSet).
//
// What the integration must provide: the guard fill of E and B before the gather and
// before each field half-step (width >= 1 for Yee; >= P/2 + 2 (integer division) for the gather and
// deposit of order P, 3 is enough for P <= 3 with moves under a cell); the fold of J (and, for
// diagnostics, rho) guard deposits into neighbours in a fixed order, so results do not
// depend on rank count; boundaries: periodic (tested here), absorbing (Mur's first order,
// absorbing.hpp; a PML is not written), particle outflow/reflection (ParticleSet's); the time step
// from yee::max_dt times a Courant factor, also keeping every particle's move under a cell. At
// refinement jumps the Yee fields need prolongation that keeps div B = 0 and the deposit a
// coarse/fine current sum: neither is written.
//
// Tested (tests/unit/test_pic.cpp, bars from verification.md §G and WarpX CI): Yee
// plane-wave phase velocity against the discrete dispersion (1-D and oblique 2-D, 1e-4),
// Esirkepov continuity (orders 1-3, 1-3 D, 1e-11) and Gauss's law through 40 2-D and 3-D
// PIC steps (1e-11), gather of linear fields, loading independent of the block split,
// Boris gyration (|u| and the 2 arctan(w_c dt/2) phase, 1e-12) and E x B drift, 1-D
// Langmuir (frequency 1 %, field 5 %), two-stream growth (10 %), thermal-plasma energy
// with the energy-conserving gather (0.3 % over 500 steps); a 1-D pulse through Mur faces
// (energy left 3.5e-8 at c dt = 0.95 dx, none at c dt = dx), the pulse's div E = div B = 0.
#include "physics/pic/boris.hpp"
#include "physics/pic/constants.hpp"
#include "physics/pic/esirkepov.hpp"
#include "physics/pic/fields.hpp"
#include "physics/pic/gather.hpp"
#include "physics/pic/shape.hpp"
#include "physics/pic/species.hpp"
#include "physics/pic/yee.hpp"

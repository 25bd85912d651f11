#pragma once
// First-order absorbing boundary for the Yee fields: Mur's condition on the components of
// E tangential to a domain face.
//
// References
//   Mur, G. 1981, IEEE Trans. Electromagn. Compat. 23, 377: the one-way wave equation
//     (d/dn + (1/c) d/dt) E_t = 0 at a face of outward normal n, discretised half a cell
//     inside the face and half a step before the new time level, which gives for the
//     boundary node b and its inner neighbour b' (one cell inside):
//       E_b^{n+1} = E_b'^n + (c dt - dx)/(c dt + dx) (E_b'^{n+1} - E_b^n).
//   Taflove, A. & Hagness, S. C. 2005, Computational Electrodynamics, 3rd ed., ch. 6 (the
//     Engquist-Majda one-way wave equations and Mur's discretisation): the first-order
//     condition is exact at normal incidence and reflects R(theta) = (cos theta - 1) /
//     (cos theta + 1) in amplitude at incidence angle theta (0.072 at 30 degrees, 0.17 at
//     45 degrees; the discretisation adds O((k dx)^2)).
//
// Where it sits in the PIC step (physics/pic/pic_unit.hpp): E^{n+1} is advanced over the
// block interior and its guards filled (an outflow fill copies the edge value outward);
// then mur_apply overwrites the tangential E at the boundary nodes, over the whole array
// range across the face (guard rows included, so that blocks side by side along the face
// compute the same values for their shared nodes). The boundary nodes along the normal
// axis a, in array indices (fields.hpp: a block owns [g, g + n)):
//   lower face: node g (the first interior node, on the face), inner neighbour g + 1;
//   upper face: node g + n (on the face: a guard index), inner neighbour g + n - 1.
// The next B half steps read these values (Faraday at the cells next to the face), which
// is how the condition reaches the interior. The normal component of E and all of B are
// left to the Yee update. Corners where two absorbing faces meet get the later face's
// value (faces in the order x, y, z; lower before upper): first-order Mur is crude there.
//
// Known limitation: the condition's memory is E_b^n, which on an upper face lives in a
// guard zone; a checkpoint holds interiors only, so a restart of a run with absorbing
// faces restarts that memory from the guard fill (not bitwise with the uninterrupted run).
#include <cstddef>

#include "physics/pic/constants.hpp"
#include "physics/pic/fields.hpp"

namespace tessera::pic::absorbing {

/// One absorbing domain face of a block array: the normal axis, the side (0 lower, 1
/// upper) and the array index along the axis of its boundary nodes (lower: g, upper: g+n).
struct Face {
  int axis = 0;
  int side = 0;
  int node = 0;
  /// The inner neighbour of the boundary nodes (one cell inside the domain).
  int inner() const { return side ? node - 1 : node + 1; }
};

/// Mur's coefficient (c dt - dx)/(c dt + dx) for cell size dx along the face normal: zero
/// at c dt = dx (the update is then exact transport), in (-1, 0) below.
inline double mur_coefficient(double dt, double dx) {
  const double cdt = constants::c * dt;
  return (cdt - dx) / (cdt + dx);
}

/// Mur's first-order update of one boundary node from its old value, its inner
/// neighbour's old and new values and the coefficient k.
constexpr double mur_step(double eb_old, double in_old, double in_new, double k) {
  return in_old + k * (in_new - eb_old);
}

/// Component q (0 x, 1 y, 2 z) of E in f.
inline const Field& e_component(const EMFields& f, int q) {
  return q == 0 ? f.ex : (q == 1 ? f.ey : f.ez);
}

/// Values mur_save stores for face f over box b: 2 tangential components x 2 layers x
/// the box's extent across the face (its extent along the normal is ignored).
inline std::size_t state_size(const Face& f, const Box& b) {
  std::size_t n = 4;
  for (int a = 0; a < 3; ++a)
    if (a != f.axis) n *= std::size_t(b.hi[a] - b.lo[a]);
  return n;
}

namespace detail {
/// Call fn(q, i_b, i_in, slot) for each tangential component q and each point of b across
/// the face, with (i, j, k) of the boundary node and of its inner neighbour.
template <class Fn>
void for_face(const Face& f, const Box& b, Fn&& fn) {
  std::size_t slot = 0;
  for (int t = 1; t <= 2; ++t) {
    const int q = (f.axis + t) % 3;
    Box c = b;
    c.lo[f.axis] = 0, c.hi[f.axis] = 1;
    for (int k = c.lo[2]; k < c.hi[2]; ++k)
      for (int j = c.lo[1]; j < c.hi[1]; ++j)
        for (int i = c.lo[0]; i < c.hi[0]; ++i, ++slot) {
          int nb[3] = {i, j, k}, ni[3] = {i, j, k};
          nb[f.axis] = f.node, ni[f.axis] = f.inner();
          fn(q, nb, ni, slot);
        }
  }
}
}  // namespace detail

/// Before E is advanced (time n): store the tangential E at the boundary nodes and at their
/// inner neighbours over b (state_size(f, b) values).
inline void mur_save(const EMFields& e, const Face& f, const Box& b, double* state) {
  const std::size_t half = state_size(f, b) / 2;
  detail::for_face(f, b, [&](int q, const int* nb, const int* ni, std::size_t s) {
    const Field& c = e_component(e, q);
    state[s] = c(nb[0], nb[1], nb[2]);
    state[half + s] = c(ni[0], ni[1], ni[2]);
  });
}

/// Once E^{n+1} is complete (advanced inside, guards filled): Mur's tangential E at the
/// boundary nodes over b, from the state mur_save stored at time n and coefficient k
/// (mur_coefficient of the normal cell size).
inline void mur_apply(const EMFields& e, const Face& f, const Box& b, const double* state,
                      double k) {
  const std::size_t half = state_size(f, b) / 2;
  detail::for_face(f, b, [&](int q, const int* nb, const int* ni, std::size_t s) {
    const Field& c = e_component(e, q);
    c(nb[0], nb[1], nb[2]) = mur_step(state[s], state[half + s], c(ni[0], ni[1], ni[2]), k);
  });
}

}  // namespace tessera::pic::absorbing

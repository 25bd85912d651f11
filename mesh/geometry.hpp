#pragma once
// Coordinate systems of the mesh (verification.md §I; FLASH's geometry names):
//   cartesian    1-3-D (x, y, z);
//   cylindrical  2-D (r, z) with x as r, axisymmetric: cell volume pi (r+^2 - r-^2) dz,
//                radial face area 2 pi r dz, z face area pi (r+^2 - r-^2);
//   spherical    1-D (r): cell volume 4/3 pi (r+^3 - r-^3), face area 4 pi r^2.
// The full 2 pi (4 pi) is kept so that volume integrals are physical totals. Only axis 0
// (r) is curvilinear. Header-only per-cell formulas, shared by the mesh (conservative
// restriction and prolongation, flux correction), hydro and the totals.
#include <numbers>
#include <string>

namespace tessera::mesh {

enum class Geometry { cartesian, cylindrical, spherical };

/// "cartesian" / "cylindrical" / "spherical" (the names FLASH files carry).
inline const char* geometry_name(Geometry g) {
  return g == Geometry::cylindrical ? "cylindrical"
                                    : (g == Geometry::spherical ? "spherical" : "cartesian");
}

namespace geometry {

/// Volume of the radial shell [r0, r1] per unit length of the other active axes
/// (cartesian: r1 - r0).
inline double shell_volume(Geometry g, double r0, double r1) {
  constexpr double pi = std::numbers::pi;
  switch (g) {
    case Geometry::cylindrical:
      return pi * (r1 * r1 - r0 * r0);
    case Geometry::spherical:
      return 4.0 / 3.0 * pi * (r1 * r1 * r1 - r0 * r0 * r0);
    default:
      return r1 - r0;
  }
}

/// Area of the radial face at r per unit length of the other active axes (cartesian: 1).
inline double radial_area(Geometry g, double r) {
  constexpr double pi = std::numbers::pi;
  switch (g) {
    case Geometry::cylindrical:
      return 2.0 * pi * r;
    case Geometry::spherical:
      return 4.0 * pi * r * r;
    default:
      return 1.0;
  }
}

/// The volume centroid of the shell [r0, r1] along r (the point a linear profile's cell
/// average is taken at): cartesian the midpoint; cylindrical 2/3 (r1^3-r0^3)/(r1^2-r0^2);
/// spherical 3/4 (r1^4-r0^4)/(r1^3-r0^3).
inline double centroid(Geometry g, double r0, double r1) {
  switch (g) {
    case Geometry::cylindrical:
      return 2.0 / 3.0 * (r1 * r1 * r1 - r0 * r0 * r0) / (r1 * r1 - r0 * r0);
    case Geometry::spherical: {
      const double r02 = r0 * r0, r12 = r1 * r1;
      return 0.75 * (r12 * r12 - r02 * r02) / (r12 * r1 - r02 * r0);
    }
    default:
      return 0.5 * (r0 + r1);
  }
}

/// The geometric source factor alpha of the radial primitive equations
/// (d rho/dt += -alpha rho u_r / r): 0, 1 (cylindrical), 2 (spherical).
inline double alpha(Geometry g) {
  return g == Geometry::cylindrical ? 1.0 : (g == Geometry::spherical ? 2.0 : 0.0);
}

}  // namespace geometry

}  // namespace tessera::mesh

// The hydro unit's coupling to gravity: which of gravity's terms enter its step (the field
// inside the Hancock step, hydro.gravity_coupling; the face mass fluxes of gravity's flux
// energy source), and those mass fluxes at every leaf's boundary faces, from the flux
// register after correction (the interior faces are written by the block update:
// block_update.hpp's MassFluxOut).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/simd.hpp"
#include "mesh/flux_register.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/eos_unit.hpp"
#include "physics/gravity/gravity.hpp"
#include "physics/hydro/hydro.hpp"
#include "physics/hydro/scratch.hpp"

namespace tessera::hydro {

void Hydro::bind_gravity(mesh::Mesh& m, gravity::Gravity* g) {
  grav_ = nullptr;
  gfield_.clear();
  mflux_ = nullptr;
  if (g != nullptr && g->wants_mass_fluxes()) mflux_ = g;
  if (g != nullptr && g->kind() != gravity::Kind::none && opt_.integrator == Integrator::hancock &&
      opt_.gravity != GravityCoupling::split) {
    grav_ = g;
    g->set_hydro_coupled(true);
    for (int a = 0; a < m.shape().ndim; ++a) {
      at_.gac[a] = m.var_index(std::string("gac") + "xyz"[a]);
      if (at_.gac[a] < 0) throw Error("hydro: the gravity unit declares no gacx..gacz");
    }
    gfield_.assign(std::size_t(m.shape().ndim) * m.shape().cells(), 0.0);
  }
}

void Hydro::store_boundary_mass_fluxes(mesh::Mesh& m, double w, bool add) {
  const auto& s = m.shape();
  const int nd = s.ndim;
  auto& fr = m.flux_register();
  const gravity::FaceLayout& L = mflux_->face_layout();
  for (int id : m.local_leaves()) {
    const int slot = m.slot(id);
    double* f = mflux_->mass_fluxes(slot);
    for (int a = 0; a < nd; ++a) {
      // The register's face layout [v][t2][t1]; dens is v = 0.
      for (int side = 0; side < 2; ++side) {
        const double* R = fr.face(slot, 2 * a + side);
        L.boundary_faces(a, side, [&](std::size_t r, std::size_t i) {
          double& d = f[i];
          d = add ? d + w * R[r] : w * R[r];
        });
      }
    }
  }
}

}  // namespace tessera::hydro

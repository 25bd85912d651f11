#pragma once
// Unsplit second-order finite-volume hydrodynamics for a gamma-law gas.
//   - PLM (minmod, van Leer, MC) with the MUSCL-Hancock predictor (Toro 2009, §14.4;
//     the fully unsplit primitive-variable form of Colella 1990 without transverse
//     Riemann problems), one stage per step;
//   - or PPM (Colella & Woodward 1984) / PLM face values with SSP Runge-Kutta stages
//     (Shu & Osher 1988), the method of lines;
//   - HLLC or HLLE fluxes; positivity fallback to first order at any face whose
//     reconstructed density or pressure is not positive.
// The module owns the conserved variables dens, momx, momy, momz, etot in `unk` and
// provides FLASH's derived output variables (velx vely velz pres ener eint temp gamc game).
#include <memory>
#include <string>
#include <vector>

#include "memory/arena.hpp"
#include "mesh/mesh.hpp"
#include "physics/eos/gamma_law.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::hydro {

enum Var : int { DENS = 0, MOMX = 1, MOMY = 2, MOMZ = 3, ETOT = 4, NVAR = 5 };

enum class Recon { plm, ppm };
enum class Riemann { hllc, hlle };
enum class Integrator { hancock, rk2, rk3 };

struct Options {
  Recon recon = Recon::plm;
  int limiter = 2;  ///< 0 minmod, 1 van Leer, 2 MC
  Riemann riemann = Riemann::hllc;
  Integrator integrator = Integrator::hancock;
  double cfl = 0.8;
  double gamma = 1.4;
  double mu = 1.0;
  double smallp = 1e-30;
  double smalld = 1e-30;
};

/// A NaN or non-positive density/pressure found after a step.
struct BadZone {
  int node = -1, i = 0, j = 0, k = 0;
  double value = 0;
  const char* what = "";
};

class Hydro {
 public:
  static void declare_params(base::Params& p);
  explicit Hydro(const base::Params& p);
  ~Hydro();

  const Options& options() const { return opt_; }
  const eos::GammaLaw& eos() const { return eos_; }
  /// The variables this module keeps in unk.
  static std::vector<mesh::VarInfo> variables();
  /// Guard zones the reconstruction needs.
  int nguard() const { return opt_.recon == Recon::ppm ? 3 : 2; }
  /// Number of guard fills per step (stages).
  int stages() const;

  /// Map this module's arenas for mesh m with policy cfg (memory.pages_scratch): the work
  /// arrays of one block update ("scratch") and, for Runge-Kutta integrators, the stage-0
  /// copy of maxblocks blocks ("rk_stage"). Called once after the mesh exists; advance()
  /// maps them itself (policy none) if it was not.
  void allocate(const mesh::Mesh& m, const memory::ArenaConfig& cfg);

  /// Largest stable time step over this rank's leaves (not reduced).
  double max_dt(mesh::Mesh& m) const;
  /// Advance every local leaf by dt (collective: fills guards, corrects fluxes).
  void advance(mesh::Mesh& m, double dt);
  /// First bad zone on this rank, if any (node < 0 if none).
  BadZone check(mesh::Mesh& m) const;

  /// Derived variables FLASH files carry.
  static const std::vector<std::string>& derived_names();
  /// Fill `out` (x fastest) with derived variable `name` of block view u: interior cells,
  /// or the whole block array with guards (for refinement). False if `name` is not one.
  /// Instantiated for both layouts.
  template <mesh::Layout L>
  bool derived(const std::string& name, const mesh::BlockView<L>& u, const mesh::BlockShape& s,
               double* out, bool with_guards = false) const;

  /// Per-block work arrays of the update kernel (hydro.cpp); sized once, reused.
  struct Scratch;

 private:
  Options opt_;
  eos::GammaLaw eos_;
  std::unique_ptr<Scratch> scratch_;
  memory::Arena u0_;  ///< "rk_stage": stage-0 copy for Runge-Kutta, one block array per leaf
};

extern template bool Hydro::derived(const std::string&,
                                    const mesh::BlockView<mesh::Layout::var_major>&,
                                    const mesh::BlockShape&, double*, bool) const;
extern template bool Hydro::derived(const std::string&,
                                    const mesh::BlockView<mesh::Layout::zone_major>&,
                                    const mesh::BlockShape&, double*, bool) const;

}  // namespace tessera::hydro

#pragma once
// Problem set-ups: initial conditions and the parameters that describe them. Each
// problem fills the conserved hydro variables of one block (interior cells), with cell
// averages computed by sub-zone sampling or exact integrals so that refining a block
// and re-initialising it gives the same averages the initial refinement expects. Energies
// come from the run's EOS (pressure or temperature to specific internal energy), never
// from a gamma constant; the EOS unit fills pres, temp, gamc, game afterwards.
#include <memory>
#include <string>

#include "mesh/mesh.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}
namespace tessera::eos {
class Eos;
}

namespace tessera::problems {

class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string name() const = 0;
  /// Once unk exists: look up the indices of variables the problem sets besides hydro's
  /// (species, scalars). Throws tessera::Error if one it needs is missing.
  virtual void bind(const mesh::Mesh& /*m*/) {}
  /// Collective, after the initial state is complete (refinement included): scale what
  /// the set-up deposited so that the volume integral is exactly what it asked for
  /// (the sub-zone average of a deposit holds only about 0.98-0.997 of it). Returns the
  /// factor applied (1: nothing to do).
  virtual double normalise_deposit(mesh::Mesh& /*m*/) { return 1.0; }
  /// A line for the log about what the set-up built (a star's radius and mass), or "".
  virtual std::string describe() const { return {}; }
  /// The problem's exact solution for the units (RunContext::exact), or null.
  virtual const physics::ExactSolution* exact_solution() const { return nullptr; }
  /// Fill the interior cells of u (dens, momx, momy, momz, etot); one overload per
  /// layout, both implemented by ProblemBase from one template.
  virtual void init_block(const mesh::BlockView<mesh::Layout::var_major>& u,
                          const mesh::BlockGeom& g, const mesh::BlockShape& s) const = 0;
  virtual void init_block(const mesh::BlockView<mesh::Layout::zone_major>& u,
                          const mesh::BlockGeom& g, const mesh::BlockShape& s) const = 0;
};

/// Implements Problem's per-layout init_block overloads with Derived::init(u, g, s), a
/// template over the view type, so that a set-up is written once for every layout.
template <class Derived>
class ProblemBase : public Problem {
 public:
  void init_block(const mesh::BlockView<mesh::Layout::var_major>& u, const mesh::BlockGeom& g,
                  const mesh::BlockShape& s) const final {
    static_cast<const Derived*>(this)->init(u, g, s);
  }
  void init_block(const mesh::BlockView<mesh::Layout::zone_major>& u, const mesh::BlockGeom& g,
                  const mesh::BlockShape& s) const final {
    static_cast<const Derived*>(this)->init(u, g, s);
  }
};

/// Declare problem.name and every problem's section.
void declare_params(base::Params& p);
/// The problem named by problem.name, with the run's EOS (kept by reference: it must
/// outlive the problem).
std::unique_ptr<Problem> make(const base::Params& p, const eos::Eos& eos);
/// The problem of a run without an EOS (driver.operators = ["pic"]): "pic" only, else a
/// one-line error.
std::unique_ptr<Problem> make_without_eos(const base::Params& p);

}  // namespace tessera::problems

#pragma once
// Problem set-ups: initial conditions and the parameters that describe them. Each
// problem fills the conserved hydro variables of one block (interior cells), with cell
// averages computed by sub-zone sampling or exact integrals so that refining a block
// and re-initialising it gives the same averages the initial refinement expects.
#include <memory>
#include <string>

#include "mesh/mesh.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::problems {

class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string name() const = 0;
  /// Fill the interior cells of u (dens, momx, momy, momz, etot).
  virtual void init_block(const mesh::BlockView<>& u, const mesh::BlockGeom& g,
                          const mesh::BlockShape& s) const = 0;
};

/// Declare problem.name and every problem's section.
void declare_params(base::Params& p);
/// The problem named by problem.name.
std::unique_ptr<Problem> make(const base::Params& p);

}  // namespace tessera::problems

#pragma once
// Assemble a FLASH file from the mesh and the parameter registry. The caller supplies
// the variables as named fill functions, so this layer never sees a physics module.
#include <functional>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "mesh/mesh.hpp"

namespace tessera::io {

/// A variable to write: fill(node, out) writes that block's interior cells (x fastest).
struct OutputVar {
  std::string name;
  std::function<void(int node, double* out)> fill;
};

struct OutputInfo {
  double time = 0, dt = 0;
  int step = 0;
};

/// Collective: write every block (parents restricted first by the caller) to `path`.
void write_mesh_file(mesh::Mesh& m, const base::Params& p, const std::string& path,
                     bool double_precision, const std::vector<OutputVar>& vars,
                     const OutputInfo& info);

}  // namespace tessera::io

#pragma once
// Assemble a FLASH file from the mesh and the parameter registry. The caller supplies
// the variables as named fill functions, so this layer never sees a physics module.
#include <functional>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "io/flash_file.hpp"
#include "memory/arena.hpp"
#include "mesh/mesh.hpp"

namespace tessera::io {

/// A variable to write: fill(node, out) writes that block's interior cells (x fastest).
/// An empty fill leaves the variable's rows unset, for FlashFileSpec::prepare to compute.
struct OutputVar {
  std::string name;
  std::function<void(int node, double* out)> fill;
};

struct OutputInfo {
  double time = 0, dt = 0;
  int step = 0;
  /// Further state for restart (output counters, next output times, ...), stored in
  /// `integer scalars` / `real scalars` under these names.
  std::vector<std::pair<std::string, int>> int_state;
  std::vector<std::pair<std::string, double>> real_state;
  /// Provenance strings (the EOS table's SHA-256, say), in `string scalars`.
  std::vector<std::pair<std::string, std::string>> str_state;
};

/// The snapshot of every block (parents restricted first by the caller) as a FLASH file
/// description: this rank's rows, tree, parameters. Local (no communication); the copy
/// it makes is what an asynchronous write holds on to. `deferred`: the tree and the
/// parameters are taken now, but the variables are allocated and copied by
/// FlashFileSpec::capture (run by the writer: the I/O thread in asynchronous mode), so
/// `vars`' fill functions must stay valid and the blocks unmodified until it has run.
FlashFileSpec mesh_file_spec(const mesh::Mesh& m, const base::Params& p, bool double_precision,
                             const std::vector<OutputVar>& vars, const OutputInfo& info,
                             bool deferred = false);

/// The allocator of every staging buffer of a snapshot (FlashFileSpec::data and
/// ::particles): arena "staging" with memory.pages_staging's page policy. The driver
/// allocates `particles` with it, as mesh_file_spec does `data`.
memory::ArenaAllocator<double> staging_allocator(const base::Params& p);

/// Bytes of the variable data this rank's snapshot holds for `nvars` variables.
std::size_t snapshot_bytes(const mesh::Mesh& m, std::size_t nvars);

}  // namespace tessera::io

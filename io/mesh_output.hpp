#pragma once
// Assemble a FLASH file from the mesh and the parameter registry. The caller supplies
// the variables as named fill functions, so this layer never sees a physics module.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/params.hpp"
#include "io/flash_file.hpp"
#include "memory/arena.hpp"
#include "mesh/mesh.hpp"

namespace tessera::io {

/// The snapshot's copy of one block: the first variables of the file's layout, variable
/// q at out + q * plane (the driver's stored unk variables, which come first in
/// `var_names`; the rest, derived by the writer, are left to FlashFileSpec::prepare). One
/// call per block, every variable in it (bubble, 8^2 blocks, 10 variables: 284 calls a
/// checkpoint, not 2,840).
using BlockFill = std::function<void(int node, double* out, std::size_t plane)>;
/// Takes a deferred snapshot's copy as soon as the rows are known, before the tree and the
/// parameters are described (OutputManager::start_capture: the I/O thread copies while
/// the step loop goes on); false: not taken, the copy goes into FlashFileSpec::capture.
using StartCapture = std::function<bool(std::function<void(FlashFileSpec&)>)>;

/// FLASH's runtime parameter lists of a file: every declared parameter under its key,
/// then the names FLASH's readers look for (the domain, its faces, the root grid, the
/// refinement bounds, gamma, the geometry). Fixed for a run (parameters are set before it
/// starts): the driver makes them once (runtime_lists) for every file.
struct RuntimeLists {
  std::vector<std::pair<std::string, int>> int_runtime;
  std::vector<std::pair<std::string, double>> real_runtime;
  std::vector<std::pair<std::string, std::string>> str_runtime;
  std::vector<std::pair<std::string, bool>> log_runtime;
};
RuntimeLists runtime_lists(const mesh::Mesh& m, const base::Params& p);

struct OutputInfo {
  double time = 0, dt = 0;
  int step = 0;
  /// Further state for restart (output counters, next output times, ...), stored in
  /// `integer scalars` / `real scalars` under these names.
  std::vector<std::pair<std::string, int>> int_state;
  std::vector<std::pair<std::string, double>> real_state;
  /// Provenance strings (the EOS table's SHA-256, say), in `string scalars`.
  std::vector<std::pair<std::string, std::string>> str_state;
  /// The run's runtime_lists, made once by the caller; null: mesh_file_spec makes them
  /// (bubble, 1 rank: 0.05 ms of the step loop's 0.07 ms per checkpoint in the snapshot).
  std::shared_ptr<const RuntimeLists> runtime;
};

/// The snapshot of every block (parents restricted first by the caller) as a FLASH file
/// description: this rank's rows, tree, parameters. Local (no communication); the copy
/// it makes is what an asynchronous write holds on to. `deferred`: the rows are taken now
/// (and, when `start` takes the copy and info.runtime is set, a copy of the tree, which
/// FlashFileSpec::describe turns into the tree's datasets and the parameter lists on the
/// writer; otherwise the tree and the parameters are described now), but the variables
/// are allocated (var_names.size() per zone) and copied by `fill_block` in
/// FlashFileSpec::capture (run by the writer: the I/O thread in asynchronous mode), or by
/// `start`'s taker, which fills `data` itself; `fill_block` must stay valid and the blocks
/// unmodified until it has run. No `fill_block`: no variables (a particle file).
FlashFileSpec mesh_file_spec(const mesh::Mesh& m, const base::Params& p, bool double_precision,
                             const std::vector<std::string>& var_names, const OutputInfo& info,
                             bool deferred = false, BlockFill fill_block = nullptr,
                             const StartCapture& start = nullptr);

/// The allocator of every staging buffer of a snapshot (FlashFileSpec::data and
/// ::particles): arena "staging" with memory.pages_staging's page policy. The driver
/// allocates `particles` with it, as mesh_file_spec does `data`.
memory::ArenaAllocator<double> staging_allocator(const base::Params& p);

/// Bytes of the variable data this rank's snapshot holds for `nvars` variables.
std::size_t snapshot_bytes(const mesh::Mesh& m, std::size_t nvars);

}  // namespace tessera::io

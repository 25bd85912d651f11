#pragma once
// Writer and reader for FLASH HDF5 file format version 9
// (shared/reference/flash-hdf5-format.md), the layout yt's FLASH frontend and VisIt's
// FLASH reader open. This layer knows nothing of the mesh classes or physics: the
// caller describes the whole tree (replicated on every rank, in file order) and hands
// over this rank's rows of every variable. Parallel HDF5, collective writes.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "memory/arena.hpp"

namespace tessera::io {

/// Everything that goes into one FLASH file. Tree arrays are global (N = number of
/// blocks, every tree node, parents included) and identical on every rank.
struct FlashFileSpec {
  std::string path;              ///< file to create (truncated if it exists)
  bool double_precision = true;  ///< f64 (checkpoint) or f32 (plotfile) for variables
  int ndim = 3;
  int nxb = 1, nyb = 1, nzb = 1;  ///< interior zones per block (1 for unused dims)

  // Tree, N rows each (see reference §4).
  std::vector<int> refine_level;      ///< 1-based
  std::vector<int> node_type;         ///< 1 leaf, 2 parent of a leaf, 3 other
  std::vector<int> gid;               ///< N * (2*ndim + 1 + 2^ndim), 1-based block numbers
  std::vector<double> bounding_box;   ///< N * 3 * 2: [b][axis][lo,hi]
  std::vector<double> coordinates;    ///< N * 3 block centres
  std::vector<double> block_size;     ///< N * 3
  std::vector<int> processor_number;  ///< N

  // Parameter lists (reference §3). Names are written as given (<= 79 chars).
  // `real_scalars` must start with {"time", t}.
  std::vector<std::pair<std::string, int>> int_scalars, int_runtime;
  std::vector<std::pair<std::string, double>> real_scalars, real_runtime;
  std::vector<std::pair<std::string, std::string>> str_scalars, str_runtime;
  std::vector<std::pair<std::string, bool>> log_scalars, log_runtime;

  // Variables: names (<= 4 chars each, written as `unknown names` with string size 4)
  // and this rank's data. `local_rows` are the file rows (0-based, ascending) this rank
  // provides; `data` holds, for each variable v, for each local row r (in local_rows
  // order), nzb*nyb*nxb doubles with x fastest:
  //   data[((v * local_rows.size() + r) * nzb + k) * nyb * nxb + j * nxb + i].
  std::vector<std::string> var_names;
  std::vector<int> local_rows;
  /// One arena per buffer ("staging", memory.pages_staging when the writer's caller sets
  /// the allocator; see mesh_file_spec).
  memory::ArenaVector<double> data;

  // Writing options (not stored in the file as such).
  /// MPI-IO hints (romio_cb_write, cb_buffer_size, cb_nodes, ...) for the file access.
  std::vector<std::pair<std::string, std::string>> hints;
  /// HDF5 deflate level 1..9 for the variables (chunked one block per chunk); 0: off.
  int deflate = 0;
  /// Run by whoever writes the file, just before writing (the I/O thread in asynchronous
  /// mode): completes var_names/data, e.g. derived variables computed from a snapshot of
  /// the conserved ones, so the step loop only copies. Empty: nothing to do.
  std::function<void(FlashFileSpec&)> prepare;
};

/// One entry of the checksum manifest that every written file carries in the dataset
/// `tessera manifest` (a JSON string): CRC-32 (zlib) of the dataset's elements as stored
/// (file datatype, row-major, uncompressed), and their size in bytes.
struct ManifestEntry {
  std::string name;
  std::uint32_t crc32 = 0;
  std::uint64_t bytes = 0;
};

/// Name of the manifest dataset (written last).
inline constexpr const char* kManifestName = "tessera manifest";

/// What `tessera check` reports for one file.
struct FileCheck {
  bool ok = false;
  int datasets_checked = 0;
  std::uint64_t bytes_checked = 0;
  std::vector<std::string> problems;  ///< one line each; empty when ok
};

/// Serial: recompute every manifest entry's checksum and compare; report missing,
/// extra or unreadable datasets. Never throws for a bad file (it reports it).
FileCheck check_flash_file(const std::string& path);

/// Collective over comm: write spec.path. Throws tessera::Error naming the file and the
/// failing HDF5 call on any error (every rank throws).
void write_flash_file(MPI_Comm comm, const FlashFileSpec& spec);

/// What a reader gets back (used by restart later and by tests): everything in
/// FlashFileSpec, with all rows (local_rows = 0..N-1) read on the calling rank.
/// Serial (MPI_COMM_SELF) read; variables returned as f64.
FlashFileSpec read_flash_file(const std::string& path);

}  // namespace tessera::io

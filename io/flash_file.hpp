#pragma once
// Writer and reader for FLASH HDF5 file format version 9
// (shared/reference/flash-hdf5-format.md), the layout yt's FLASH frontend and VisIt's
// FLASH reader open. This layer knows nothing of the mesh classes or physics: the
// caller describes the whole tree (replicated on every rank, in file order) and hands
// over this rank's rows of every variable. Parallel HDF5, collective writes.
//
// This header is the whole public API; each job has its own source file:
//   io/flash_writer.cpp        write_flash_file (collective)
//   io/flash_reader.cpp        read_flash_file (serial, whole file)
//   io/flash_check.cpp         check_flash_file (`tessera check`)
//   io/flash_restart_read.cpp  read_flash_metadata + read_flash_rows (restart)
// beside io/manifest.* (the checksum manifest), io/flash_format.* (the byte layout) and
// io/hdf5_util.* (HDF5 plumbing).
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/manifest.hpp"
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

/// What a reader gets back (used by tools and tests): everything in FlashFileSpec, with
/// all rows (local_rows = 0..N-1) read on the calling rank.
/// Serial (MPI_COMM_SELF) read; variables returned as f64.
FlashFileSpec read_flash_file(const std::string& path);

// --- Distributed, verified read (restart) ----------------------------------------------
// read_flash_metadata gives every rank the small part of a file; read_flash_rows then
// reads each rank's own rows of the variables, so no rank holds the whole file.

/// A file without its variable data: what every rank needs before read_flash_rows.
struct FlashFileMeta {
  /// Everything but the variable data: var_names set, local_rows and data empty;
  /// double_precision from the stored types (false for a plotfile).
  FlashFileSpec spec;
  /// The manifest's entries for spec.var_names, in that order.
  std::vector<ManifestEntry> variables;
};

/// Collective over comm. Rank 0 reads `path` except the variable data, verifies every
/// other dataset against the checksum manifest (as check_flash_file does; the variables
/// only for presence) and broadcasts the result. On any problem every rank throws the
/// same one-line tessera::Error: the first problem as check_flash_file words it (e.g.
/// "dataset 'gid': checksum mismatch (stored 1a2b3c4d, computed 5e6f7a8b)"), followed by
/// " (+k more)" when there are more.
FlashFileMeta read_flash_metadata(MPI_Comm comm, const std::string& path);

/// Receives one row from read_flash_rows: variable names[var], file row rows[row], as
/// nzb*nyb*nxb doubles with x fastest; the pointer is valid during the call only. It runs
/// between collective calls, so it must not throw.
using RowSink = std::function<void(std::size_t var, std::size_t row, const double* values)>;

/// Collective over comm; every rank calls it, a rank without rows too. Reads exactly
/// `rows` (0-based file rows, strictly ascending) of each variable in `names` from
/// meta.spec.path with MPI-IO (collective transfers, `hints` as for writing), one variable
/// at a time: a rank holds one variable's rows, never the file. Every row of the file must
/// be read by exactly one rank. Verified as read: each rank computes the CRC-32 of each of
/// its rows as stored (little-endian f64), rank 0 chains them in file order
/// (crc32_combine) and compares with the manifest, which is how the writer computed it.
/// A failed read throws at once; checksum mismatches throw after every variable was read.
/// Either way every rank throws the same one-line tessera::Error naming the dataset
/// ("dataset 'dens': checksum mismatch (stored ..., computed ...)", then " (+k more)" if
/// other datasets failed too). Rows handed to `sink` before a throw are unverified.
void read_flash_rows(MPI_Comm comm, const FlashFileMeta& meta,
                     const std::vector<std::string>& names, const std::vector<int>& rows,
                     const RowSink& sink,
                     const std::vector<std::pair<std::string, std::string>>& hints = {});

}  // namespace tessera::io

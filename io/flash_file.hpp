#pragma once
// Writer and reader for FLASH HDF5 file format version 9
// (shared/reference/flash-hdf5-format.md), the layout yt's FLASH frontend and VisIt's
// FLASH reader open. This layer knows nothing of the mesh classes or physics: the
// caller describes the whole tree (replicated on every rank, in file order) and hands
// over this rank's rows of every variable. Parallel HDF5, collective writes.
//
// Particles (§6) go into checkpoints beside the grid, or alone into particle files
// (FlashFileSpec::grid false).
//
// This header is the whole public API; each job has its own source file:
//   io/flash_writer.cpp        write_flash_file (collective)
//   io/flash_reader.cpp        read_flash_file (serial, whole file)
//   io/flash_check.cpp         check_flash_file (`tessera check`)
//   io/flash_restart_read.cpp  read_flash_metadata + read_flash_rows + read_flash_particles
//                              (restart)
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
  /// the allocator; see mesh_file_spec and staging_allocator in io/mesh_output.hpp).
  memory::ArenaVector<double> data;

  // Particles (reference §6), optional: particle_names empty = no particle datasets.
  // Written as `particle names` ((nprop,1), strings of size 24), `localnp` (int32 (N,),
  // every file row's count) and `tracer particles` (f64 (sum of localnp, nprop)), whose
  // rows are grouped by block in file order: block b's particles start at the sum of
  // localnp over the rows before b. Every particle belongs to a block (FLASH's blockless
  // particles, after the grouped rows, are neither written nor read). The file content
  // does not depend on how the rows are spread over ranks.
  /// Property names in FLASH's column order as given (the caller sorts them: blk posx posy
  /// posz proc tag velx vely velz; yt needs posx posy posz blk, posz even in 2-D), each
  /// 1 to 23 characters, no duplicates.
  std::vector<std::string> particle_names;
  /// Particles in each of this rank's rows, in local_rows order (size == local_rows.size()
  /// when particle_names is not empty, else empty). The readers return it for all N rows.
  std::vector<int> localnp;
  /// This rank's particles, row-major: particle p, property q at [p * nprop + q]; grouped
  /// by local row in local_rows order (localnp[r] consecutive particles for local row r).
  /// Allocate it with the staging allocator as `data`.
  memory::ArenaVector<double> particles;
  /// false: a particle file <base>_hdf5_part_NNNN: `sim info`, the parameter lists and the
  /// particle datasets; no tree datasets (no `bounding box`, so yt opens it as a
  /// particle-only dataset) and no variables (var_names and data must be empty). The tree
  /// vectors are still given and checked (N = refine_level.size()), but not written; the
  /// serial reader leaves them empty and takes N from `localnp`.
  bool grid = true;

  // Writing options (not stored in the file as such).
  /// MPI-IO hints (romio_cb_write, cb_buffer_size, cb_nodes, ...) for the file access.
  std::vector<std::pair<std::string, std::string>> hints;
  /// HDF5 deflate level 1..9 for the variables (chunked one block per chunk); 0: off.
  int deflate = 0;
  /// Run by whoever writes the file, first (the I/O thread in asynchronous mode): fills
  /// `data` from live state (unk) the caller left in place. The caller must not modify
  /// that state until the capture has run (OutputManager::wait_captures). Empty: `data`
  /// is complete already.
  std::function<void(FlashFileSpec&)> capture;
  /// Run by whoever writes the file, after `capture` (the I/O thread in asynchronous
  /// mode): fills the tree's datasets and the runtime parameter lists from copies the
  /// step loop took, so that it only copies the tree. Empty: they are filled already.
  std::function<void(FlashFileSpec&)> describe;
  /// Run by whoever writes the file, after `capture`, just before writing (the I/O thread
  /// in asynchronous mode): completes var_names/data, e.g. derived variables computed from a
  /// snapshot of the conserved ones, so the step loop only copies. Empty: nothing to do.
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
/// extra or unreadable datasets. For a plotfile `X_hdf5_plt_cnt_NNNN` whose particle file
/// `X_hdf5_part_NNNN` is in the same directory, also compare the first row of `real
/// scalars` (the time) of both as yt does (np.isclose): yt silently ignores a particle
/// file whose time differs, so that is a problem ("particle file 'X_hdf5_part_0003' has
/// time 0.25, its plotfile 0.2"). Never throws for a bad file (it reports it).
FileCheck check_flash_file(const std::string& path);

/// Collective over comm: write spec.path. Throws tessera::Error naming the file and the
/// failing HDF5 call on any error (every rank throws).
void write_flash_file(MPI_Comm comm, const FlashFileSpec& spec);

/// What a reader gets back (used by tools and tests): everything in FlashFileSpec, with
/// all rows (local_rows = 0..N-1) read on the calling rank: the variables, and
/// particle_names, localnp (N) and every particle in file order when the file has
/// particles (all three empty otherwise). A particle file (no `bounding box`, has
/// `localnp`) reads with grid false, N = localnp's length, the tree vectors and variables
/// empty, nxb/nyb/nzb and ndim from the scalars (1 and a guess where missing).
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
  /// The manifest's entry for `tracer particles` (name empty when the file has none).
  ManifestEntry particles;
};

/// Collective over comm. Rank 0 reads `path` except the variable data and the particles,
/// verifies every other dataset against the checksum manifest (as check_flash_file does;
/// the variables and `tracer particles` only for presence) and broadcasts the result:
/// spec.particle_names and spec.localnp (all N rows) are set when the file has particles. On any
/// problem every rank throws the same one-line tessera::Error: the first problem as
/// check_flash_file words it (e.g. "dataset 'gid': checksum mismatch (stored 1a2b3c4d, computed
/// 5e6f7a8b)"), followed by " (+k more)" when there are more.
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

/// Collective over comm; every rank calls it, a rank without rows too. This rank's
/// particles of file rows `rows` (0-based, strictly ascending; every row with particles
/// must be read by exactly one rank), row-major as FlashFileSpec::particles, grouped by
/// row in `rows` order; the counts per row are meta.spec.localnp. Read with collective
/// MPI-IO (`hints` as for writing) and verified against the manifest's CRC of `tracer
/// particles`: each rank takes the CRC-32 of each of its rows' particles as stored, rank 0
/// chains them in file order with each block's own byte length (chain_crcs), as the writer
/// did. Same error contract as read_flash_rows: every rank throws the same one-line
/// tessera::Error ("dataset 'tracer particles': checksum mismatch (stored ..., computed
/// ...)"). Empty, without communication, when the file has no particles.
std::vector<double> read_flash_particles(
    MPI_Comm comm, const FlashFileMeta& meta, const std::vector<int>& rows,
    const std::vector<std::pair<std::string, std::string>>& hints = {});

}  // namespace tessera::io

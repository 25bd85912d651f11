#pragma once
// Crash-safe publication of one output file. Nothing is ever visible under its final name
// unless every rank wrote its part, the bytes reached the disk and the manifest is in the
// file:
//   1. every rank writes `<name>.tmp` collectively (in the run directory, or in the
//      staging directory),
//   2. the ranks agree that every one succeeded (else every rank throws, the .tmp is
//      removed),
//   3. rank 0 fsyncs the file (HDF5 1.10 does not fsync on close), renames it to the
//      final name and fsyncs the directory, and tells the others how that went.
// With staging, step 3 becomes a drain: rank 0 copies the staged file to
// `<dir>/<name>.tmp`, fsyncs, renames and fsyncs the directory — see drain_staged().
#include <mpi.h>

#include <cstdint>
#include <string>

#include "io/flash_file.hpp"

namespace tessera::io {

/// Collective over comm. Writes `spec` (its path is ignored) and publishes it as
/// `final_path`, or, when `stage_dir` is not empty, as `<stage_dir>/<file name>` ready to
/// be drained (returned path). Returns the path written. Throws tessera::Error on every
/// rank on failure; nothing partial is left under a final name.
/// `inject_failure` (tests): the last rank reports a failure after writing its part.
std::string write_and_publish(MPI_Comm comm, FlashFileSpec& spec, const std::string& final_path,
                              const std::string& stage_dir, bool inject_failure = false);

/// Rank 0 only (no MPI, no HDF5): copy a staged file to `<final_path>.tmp`, fsync,
/// rename to `final_path`, fsync the directory, remove the staged file. Throws
/// tessera::Error with the reason.
void drain_staged(const std::string& staged_path, const std::string& final_path);

/// fsync a file or directory by path; throws tessera::Error naming the path.
void fsync_path(const std::string& path, bool directory);

/// Bytes of a file (0 if it does not exist).
std::uint64_t file_bytes(const std::string& path);

}  // namespace tessera::io

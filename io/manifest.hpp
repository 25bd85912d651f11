#pragma once
// The checksum manifest every Tessera file carries (dataset `tessera manifest`): its
// entries, the CRC-32 arithmetic behind them, and the one serialiser between the entries
// and the JSON text stored in the file. Reads and writes no file: the writer
// (io/flash_writer.cpp) stores the text, the checker and the restart read
// (io/flash_check.cpp, io/flash_restart_read.cpp) get it back from the file.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::io {

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

/// The manifest's JSON text for `entries` (in that order), compact, keys sorted:
///   {"algorithm":"crc32","datasets":[{"bytes":B,"crc32":C,"name":"N"},...],
///    "format":"tessera-manifest-1"}
/// Files store exactly this text; it has not changed since the format was introduced.
std::string manifest_json(const std::vector<ManifestEntry>& entries);

/// The entries of a manifest's JSON text, in stored order; nullopt (and the reason in
/// `why`, when given) if the text is not JSON, has no "datasets", or its "format" is not
/// "tessera-manifest-1" or its "algorithm" not "crc32" (a manifest this code cannot
/// verify is no manifest). A missing member of an entry reads as "" or 0 (it then fails
/// the comparison with the dataset). Never throws.
std::optional<std::vector<ManifestEntry>> parse_manifest(const std::string& text,
                                                         std::string* why = nullptr);

/// "<what>: checksum mismatch (stored 1a2b3c4d, computed 5e6f7a8b)": the one wording the
/// checker and the restart read give (tests compare it).
std::string checksum_mismatch(const std::string& what, std::uint32_t stored,
                              std::uint32_t computed);

/// CRC-32 (zlib) of a byte buffer.
std::uint32_t crc_of_bytes(const void* buf, std::size_t bytes);

/// The CRC-32 of a dataset of rows of row_bytes each, from its rows' CRCs in file order
/// (how the manifest checksums distributed variables, independent of the rank count).
std::uint32_t chain_row_crcs(const std::vector<std::uint32_t>& by_row, std::size_t row_bytes);

/// The same for pieces of different lengths: the CRC-32 of the concatenation of pieces
/// whose CRCs are by_piece[i] and whose lengths are bytes[i] (same size), in that order.
/// An empty piece (0 bytes, CRC 0) leaves the chain unchanged. How the manifest
/// checksums `tracer particles` (one piece per block: its localnp rows).
std::uint32_t chain_crcs(const std::vector<std::uint32_t>& by_piece,
                         const std::vector<std::uint64_t>& bytes);

}  // namespace tessera::io

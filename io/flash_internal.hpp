#pragma once
// Entry points one io/flash_*.cpp file offers another (the restart read checks and reads
// a file's metadata the way the checker and the serial reader do). Internal to io/.
#include <functional>
#include <string>
#include <vector>

#include "io/flash_file.hpp"

namespace tessera::io::detail {

/// check_flash_file, except that the checksums of the datasets `deferred` selects are left
/// to the caller (their presence is still checked); `entries` receives the manifest.
/// (io/flash_check.cpp)
FileCheck check_file(const std::string& path,
                     const std::function<bool(const std::string&)>& deferred,
                     std::vector<ManifestEntry>& entries);

/// read_flash_file without the variables' values and the particles: var_names,
/// particle_names and localnp (all rows) set, local_rows, data and particles empty,
/// double_precision from the stored types.
/// Serial; throws tessera::Error.
/// (io/flash_reader.cpp)
FlashFileSpec read_flash_file_without_data(const std::string& path);

}  // namespace tessera::io::detail

#pragma once
// Small text helpers: close names for a typo, and reading a small file (/proc, /sys).
#include <cstddef>
#include <string>
#include <string_view>

namespace tessera {

/// Levenshtein distance (insertions, deletions, substitutions cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// s in lower case (ASCII).
std::string to_lower(std::string_view s);

/// The whole file, or "" if it cannot be read (the /proc and /sys readers' one helper).
std::string read_text_file(const std::string& path);

}  // namespace tessera

#pragma once
// Small text helpers shared by the modules that suggest a close name for a typo.
#include <cstddef>
#include <string>
#include <string_view>

namespace tessera {

/// Levenshtein distance (insertions, deletions, substitutions cost 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

/// s in lower case (ASCII).
std::string to_lower(std::string_view s);

}  // namespace tessera

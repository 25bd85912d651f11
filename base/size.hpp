#pragma once
// Byte sizes written the way people write them in parameter files: "512", "64K", "2M",
// "1.5G" (binary multiples: K = 1024). Used by io.async_budget, memory.hugepage_size and
// the memory planner.
#include <string>
#include <string_view>

namespace tessera {

/// Parses a byte count with an optional K/M/G/T suffix (optionally followed by "B" or
/// "iB", any case). Throws tessera::Error naming the text when it is not a size.
std::size_t parse_bytes(std::string_view text);

/// "1.50 GiB", "512 B": for logs.
std::string format_bytes(double bytes);

}  // namespace tessera

#include "base/size.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "base/error.hpp"

namespace tessera {

std::size_t parse_bytes(std::string_view text) {
  auto bad = [&] {
    return Error(fmt::format("'{}' is not a byte size (examples: 4096, 64K, 2M, 1.5G)", text));
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  std::size_t pos = 0;
  while (pos < s.size() && (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.'))
    ++pos;
  if (pos == 0) throw bad();
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + pos, value);
  if (ec != std::errc() || ptr != s.data() + pos) throw bad();
  std::string suffix;
  for (char c : s.substr(pos))
    suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  while (!suffix.empty() && suffix.front() == ' ') suffix.erase(0, 1);
  double mult = 1;
  if (!suffix.empty() && suffix != "B") {
    switch (suffix[0]) {
      case 'K':
        mult = 1024.0;
        break;
      case 'M':
        mult = 1024.0 * 1024;
        break;
      case 'G':
        mult = 1024.0 * 1024 * 1024;
        break;
      case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        throw bad();
    }
    std::string rest = suffix.substr(1);
    if (!(rest.empty() || rest == "B" || rest == "IB")) throw bad();
  }
  double bytes = value * mult;
  if (!std::isfinite(bytes) || bytes < 0 || bytes > 1.8e19) throw bad();
  return static_cast<std::size_t>(std::llround(bytes));
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

}  // namespace tessera

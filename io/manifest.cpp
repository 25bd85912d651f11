// The checksum manifest's JSON text and CRC-32 arithmetic (see io/manifest.hpp).
#include "io/manifest.hpp"

#include <zlib.h>

#include <cstdio>
#include <nlohmann/json.hpp>

namespace tessera::io {

std::string manifest_json(const std::vector<ManifestEntry>& entries) {
  // nlohmann::json objects keep their keys sorted, and dump() without indent is compact:
  // the text below is byte-for-byte what every Tessera file so far holds.
  nlohmann::json j;
  j["format"] = "tessera-manifest-1";
  j["algorithm"] = "crc32";
  j["datasets"] = nlohmann::json::array();
  for (const auto& e : entries)
    j["datasets"].push_back({{"name", e.name}, {"crc32", e.crc32}, {"bytes", e.bytes}});
  return j.dump();
}

std::optional<std::vector<ManifestEntry>> parse_manifest(const std::string& text,
                                                         std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<std::vector<ManifestEntry>> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return refuse("is not valid JSON");
  if (!j.contains("datasets")) return refuse("has no \"datasets\"");
  for (const auto& [key, want] :
       {std::pair<const char*, const char*>{"format", "tessera-manifest-1"},
        {"algorithm", "crc32"}}) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_string() || it->get<std::string>() != want)
      return refuse(std::string("has ") + key + " " + (it == j.end() ? "missing" : it->dump()) +
                    ", not \"" + want + "\"");
  }
  std::vector<ManifestEntry> entries;
  try {
    for (const auto& e : j["datasets"]) {
      entries.push_back({e.value("name", ""), e.value("crc32", std::uint32_t{0}),
                         e.value("bytes", std::uint64_t{0})});
    }
  } catch (const nlohmann::json::exception&) {
    return refuse("has \"datasets\" that are not objects");
  }
  return entries;
}

std::uint32_t crc_of_bytes(const void* buf, std::size_t bytes) {
  const uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<std::uint32_t>(
      crc32_z(crc, static_cast<const Bytef*>(buf), static_cast<z_size_t>(bytes)));
}

std::string checksum_mismatch(const std::string& what, std::uint32_t stored,
                              std::uint32_t computed) {
  char hex[64];
  std::snprintf(hex, sizeof hex, "stored %08x, computed %08x", stored, computed);
  return what + ": checksum mismatch (" + hex + ")";
}

std::uint32_t chain_row_crcs(const std::vector<std::uint32_t>& by_row, std::size_t row_bytes) {
  return chain_crcs(by_row, std::vector<std::uint64_t>(by_row.size(), row_bytes));
}

std::uint32_t chain_crcs(const std::vector<std::uint32_t>& by_piece,
                         const std::vector<std::uint64_t>& bytes) {
  uLong chained = crc32_z(0L, Z_NULL, 0);
  for (std::size_t i = 0; i < by_piece.size() && i < bytes.size(); ++i) {
    // zlib before 1.2.12 returns crc1 for a zero length anyway; skip it to be explicit.
    if (bytes[i] == 0) continue;
    chained = crc32_combine(chained, by_piece[i], static_cast<z_off_t>(bytes[i]));
  }
  return static_cast<std::uint32_t>(chained);
}

}  // namespace tessera::io

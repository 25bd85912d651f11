// io/manifest: the checksum manifest's JSON text, which every file stores and `tessera
// check` reads back, and its CRC-32 chaining.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/manifest.hpp"

namespace {

using tessera::io::ManifestEntry;

TEST(Manifest, GivenEntriesThenTheTextIsTheOneFilesHaveAlwaysStored) {
  // The first two entries of a Sod checkpoint written before io/manifest existed; the
  // text must not change, or files written earlier would read differently.
  const std::vector<ManifestEntry> entries{{"refine level", 1048209040u, 100},
                                           {"gid", 1097434573u, 500}};
  EXPECT_EQ(tessera::io::manifest_json(entries),
            R"({"algorithm":"crc32","datasets":[{"bytes":100,"crc32":1048209040,)"
            R"("name":"refine level"},{"bytes":500,"crc32":1097434573,"name":"gid"}],)"
            R"("format":"tessera-manifest-1"})");
  EXPECT_EQ(tessera::io::manifest_json({}),
            R"({"algorithm":"crc32","datasets":[],"format":"tessera-manifest-1"})");
}

TEST(Manifest, GivenItsOwnTextThenParsingGivesBackTheEntriesInOrder) {
  const std::vector<ManifestEntry> entries{
      {"dens", 0xffffffffu, std::uint64_t{1} << 40}, {"a \"quoted\" name", 0, 0}, {"velx", 7, 8}};
  const auto back = tessera::io::parse_manifest(tessera::io::manifest_json(entries));
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ((*back)[i].name, entries[i].name);
    EXPECT_EQ((*back)[i].crc32, entries[i].crc32);
    EXPECT_EQ((*back)[i].bytes, entries[i].bytes);
  }
}

TEST(Manifest, GivenTextThatIsNoManifestThenParsingSaysSoWithoutThrowing) {
  for (const std::string text :
       {"", "{", "not json", R"({"format":"x"})", R"({"datasets":5})", R"({"datasets":[1,2]})"}) {
    EXPECT_FALSE(tessera::io::parse_manifest(text).has_value()) << text;
  }
  // A manifest this code cannot verify is refused, with the reason (issue 48): another
  // algorithm, a damaged or missing format tag.
  const std::string tags = R"("format":"tessera-manifest-1")";
  for (const auto& [text, reason] : std::vector<std::pair<std::string, std::string>>{
           {R"({"algorithm":"crc33","datasets":[],)" + tags + "}", "algorithm \"crc33\""},
           {R"({"algorithm":"crc32","datasets":[],"format":"tessera-manifesu-1"})",
            "format \"tessera-manifesu-1\""},
           {R"({"algorithm":"crc32","datasets":[]})", "format missing"},
           {R"({"datasets":[],)" + tags + "}", "algorithm missing"}}) {
    std::string why;
    EXPECT_FALSE(tessera::io::parse_manifest(text, &why).has_value()) << text;
    EXPECT_NE(why.find(reason), std::string::npos) << why;
  }
  // A missing member reads as empty: the comparison with the dataset then fails.
  const auto partial = tessera::io::parse_manifest(
      R"({"algorithm":"crc32","datasets":[{"name":"gid"}],"format":"tessera-manifest-1"})");
  ASSERT_TRUE(partial.has_value());
  ASSERT_EQ(partial->size(), 1u);
  EXPECT_EQ((*partial)[0].bytes, 0u);
}

TEST(Manifest, GivenRowChecksumsThenTheirChainIsTheChecksumOfTheWholeDataset) {
  std::vector<unsigned char> data(3 * 16);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 37);
  std::vector<std::uint32_t> rows;
  for (std::size_t r = 0; r < 3; ++r) rows.push_back(tessera::io::crc_of_bytes(&data[r * 16], 16));
  EXPECT_EQ(tessera::io::chain_row_crcs(rows, 16),
            tessera::io::crc_of_bytes(data.data(), data.size()));
}

TEST(Manifest, GivenPiecesOfDifferentLengthsThenTheirChainIsTheChecksumOfTheWholeDataset) {
  // Pieces of 24, 0, 40 and 8 bytes (a block without particles is an empty piece).
  std::vector<unsigned char> data(72);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 53 + 7);
  const std::vector<std::uint64_t> bytes{24, 0, 40, 8};
  std::vector<std::uint32_t> crcs;
  std::size_t at = 0;
  for (const std::uint64_t n : bytes) {
    crcs.push_back(tessera::io::crc_of_bytes(data.data() + at, n));
    at += n;
  }
  EXPECT_EQ(tessera::io::chain_crcs(crcs, bytes),
            tessera::io::crc_of_bytes(data.data(), data.size()));
  // Equal lengths: the same as chain_row_crcs.
  EXPECT_EQ(tessera::io::chain_crcs({crcs[0], crcs[0]}, {24, 24}),
            tessera::io::chain_row_crcs({crcs[0], crcs[0]}, 24));
  EXPECT_EQ(tessera::io::chain_crcs({}, {}), tessera::io::crc_of_bytes(nullptr, 0));
}

}  // namespace

#include "physics/composition/nuclides.hpp"

namespace tessera::composition {

const std::vector<Nuclide>& nuclides() {
  static const std::vector<Nuclide> table = {
      {"neut", 1, 0},   {"h1", 1, 1},     {"prot", 1, 1},   {"h2", 2, 1},     {"he3", 3, 2},
      {"he4", 4, 2},    {"li7", 7, 3},    {"be7", 7, 4},    {"b8", 8, 5},     {"c12", 12, 6},
      {"c13", 13, 6},   {"n13", 13, 7},   {"n14", 14, 7},   {"n15", 15, 7},   {"o15", 15, 8},
      {"o16", 16, 8},   {"o17", 17, 8},   {"f18", 18, 9},   {"ne20", 20, 10}, {"ne22", 22, 10},
      {"na23", 23, 11}, {"mg24", 24, 12}, {"al27", 27, 13}, {"si28", 28, 14}, {"p31", 31, 15},
      {"s32", 32, 16},  {"cl35", 35, 17}, {"ar36", 36, 18}, {"k39", 39, 19},  {"ca40", 40, 20},
      {"sc43", 43, 21}, {"ti44", 44, 22}, {"v47", 47, 23},  {"cr48", 48, 24}, {"mn51", 51, 25},
      {"fe52", 52, 26}, {"fe54", 54, 26}, {"fe56", 56, 26}, {"co55", 55, 27}, {"co56", 56, 27},
      {"ni56", 56, 28}, {"ni58", 58, 28}, {"cu59", 59, 29}, {"zn60", 60, 30}};
  return table;
}

std::optional<Nuclide> find_nuclide(const std::string& name) {
  for (const auto& n : nuclides())
    if (name == n.name) return n;
  return std::nullopt;
}

}  // namespace tessera::composition

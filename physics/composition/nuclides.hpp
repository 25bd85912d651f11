#pragma once
// A built-in table of the nuclides stellar-matter problems name, with FLASH's species
// names (at most 4 characters). A and Z are the integer mass and charge numbers FLASH's
// Multispecies unit uses for abar and zbar (not atomic masses).
#include <optional>
#include <string>
#include <vector>

namespace tessera::composition {

struct Nuclide {
  const char* name;
  double a;  ///< mass number
  double z;  ///< charge number
};

/// Every nuclide of the table, lightest first.
const std::vector<Nuclide>& nuclides();
/// The nuclide called `name` (case-sensitive FLASH name: "c12", "ne22"), if known.
std::optional<Nuclide> find_nuclide(const std::string& name);

}  // namespace tessera::composition

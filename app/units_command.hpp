#pragma once
// `tessera units [FILE] [section.key=value ...] [--json]`: every registered physics unit
// (driver/units.cpp, physics/registry.hpp) with its role, requirements, the variables it
// declares in unk (name, role independent / derived / scratch, kind, guard fill, plotted,
// prolongation) under the parameters of FILE (default: every parameter's default; a unit's
// variables may follow its parameters, as composition's species do), its derived outputs,
// conserved totals, history columns, the services it provides and needs, and the hooks it
// implements. `--markdown`: the hook table and unit list of docs/DESIGN.md.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::app {

/// The description of every registered unit under the parameters of `file` ("" = defaults)
/// and `overrides`. Throws tessera::Error on a bad file or override.
nlohmann::json describe_units(const std::string& file, const std::vector<std::string>& overrides);

/// The hook table (every hook, what for, the units that implement it) and the unit list
/// (role, services provided and needed, variables, hooks) as Markdown: the map in
/// docs/DESIGN.md (`make docs` writes it there; tests/python/test_docs_map.py compares).
std::string units_markdown(const nlohmann::json& all);

/// Prints describe_units as text, JSON or Markdown on rank 0; returns the exit status.
int units_command(const std::string& file, const std::vector<std::string>& overrides, bool json,
                  bool markdown = false);

}  // namespace tessera::app

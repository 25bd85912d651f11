// `tessera units` (see units_command.hpp).
#include "app/units_command.hpp"

#include <mpi.h>

#include <iostream>
#include <sstream>

#include "base/error.hpp"
#include "base/params.hpp"
#include "driver/simulation.hpp"
#include "driver/units.hpp"
#include "parallel/comm.hpp"

namespace tessera::app {

namespace {

const char* role_name(physics::UnitRole r) {
  switch (r) {
    case physics::UnitRole::operator_unit:
      return "operator";
    case physics::UnitRole::particles:
      return "particles";
    case physics::UnitRole::service:
      return "service";
  }
  return "?";
}

const char* kind_name(mesh::VarKind k) {
  switch (k) {
    case mesh::VarKind::conserved:
      return "conserved";
    case mesh::VarKind::mass_scalar:
      return "mass_scalar";
    case mesh::VarKind::auxiliary:
      return "auxiliary";
  }
  return "?";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

nlohmann::json describe_units(const std::string& file, const std::vector<std::string>& overrides) {
  base::Params p;
  driver::declare_all_params(p);
  if (!file.empty()) p.load_file(file);
  for (const auto& o : overrides) p.apply_override(o);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : driver::registry()) {
    // A unit whose parameters at these values do not make a unit (the tracers need a
    // lattice) is listed without what only the made unit knows.
    std::unique_ptr<physics::Unit> u;
    std::string unmade;
    try {
      u = r.make(p);
    } catch (const Error& e) {
      unmade = e.what();
    }
    // The per-layout template hooks, told by what the unit declares.
    const physics::Declarations d = u ? u->declarations() : physics::Declarations{};
    std::vector<std::string> hooks = r.hooks;
    if (!d.derived.empty()) hooks.emplace_back("derived");
    if (!d.totals.empty()) hooks.emplace_back("total_densities");
    nlohmann::json needs = nlohmann::json::array();
    for (const auto& n : r.requires_.needs)
      needs.push_back({{"service", n.service}, {"optional", n.optional}, {"why", n.why}});
    nlohmann::json vars = nlohmann::json::array();
    if (u)
      for (const auto& v : d.variables)
        vars.push_back({{"name", v.name},
                        {"role", mesh::to_string(v.role)},
                        {"kind", kind_name(v.kind)},
                        {"guard_fill", v.guard_fill},
                        {"plotted", v.plot},
                        {"vector_axis", v.vector_axis},
                        {"prolong", mesh::to_string(v.prolong)}});
    all.push_back({{"name", r.name},
                   {"role", role_name(r.role)},
                   {"doc", r.doc},
                   {"requires",
                    {{"after", r.requires_.after},
                     {"excludes", r.requires_.excludes},
                     {"alone", r.requires_.alone}}},
                   {"provides", r.provides},
                   {"needs", needs},
                   {"variables", vars},
                   {"derived", d.derived},
                   {"totals", d.totals},
                   {"history", d.history},
                   {"hooks", hooks}});
    if (!unmade.empty())
      all.back()["not_made"] = unmade + " (give a problem file: tessera units FILE)";
  }
  return all;
}

std::string units_markdown(const nlohmann::json& all) {
  std::ostringstream o;
  auto names = [](const nlohmann::json& list) {
    std::vector<std::string> v;
    for (const auto& x : list)
      v.push_back(x.is_string() ? x.get<std::string>() : x["name"].get<std::string>());
    return v;
  };
  o << "| hook | what for | units |\n|---|---|---|\n";
  for (const auto& h : physics::hook_docs()) {
    std::vector<std::string> by;
    for (const auto& u : all)
      for (const auto& x : u["hooks"])
        if (x.get<std::string>() == h.name) by.push_back(u["name"].get<std::string>());
    o << "| `" << h.name << "` | " << h.what << " | " << join(by) << " |\n";
  }
  o << "\n| unit | role | provides | needs | variables | hooks |\n|---|---|---|---|---|---|\n";
  for (const auto& u : all) {
    std::vector<std::string> needs;
    for (const auto& n : u["needs"])
      needs.push_back(n["service"].get<std::string>() +
                      (n["optional"].get<bool>() ? " (opt.)" : ""));
    o << "| " << u["name"].get<std::string>() << " | " << u["role"].get<std::string>() << " | "
      << join(names(u["provides"])) << " | " << join(needs) << " | "
      << (u.contains("not_made") ? std::string("(with a problem's parameters)")
                                 : join(names(u["variables"])))
      << " | " << join(names(u["hooks"])) << " |\n";
  }
  return o.str();
}

int units_command(const std::string& file, const std::vector<std::string>& overrides, bool json,
                  bool markdown) {
  const auto all = describe_units(file, overrides);
  const int rank = parallel::world_rank();
  if (rank != 0) return 0;
  if (json) {
    std::cout << all.dump(2) << "\n";
    return 0;
  }
  if (markdown) {
    std::cout << units_markdown(all);
    return 0;
  }
  std::ostringstream o;
  for (const auto& u : all) {
    o << u["name"].get<std::string>() << " (" << u["role"].get<std::string>()
      << "): " << u["doc"].get<std::string>() << "\n";
    std::vector<std::string> req;
    for (const auto& a : u["requires"]["after"]) req.push_back("after " + a.get<std::string>());
    for (const auto& x : u["requires"]["excludes"])
      req.push_back("not with " + x.get<std::string>());
    if (u["requires"]["alone"].get<bool>()) req.push_back("alone");
    if (!req.empty()) o << "  requires:  " << join(req) << "\n";
    if (!u["provides"].empty())
      o << "  provides:  " << join(u["provides"].get<std::vector<std::string>>()) << "\n";
    std::vector<std::string> needs;
    for (const auto& n : u["needs"])
      needs.push_back(n["service"].get<std::string>() +
                      (n["optional"].get<bool>() ? " (optional)" : "") + ": " +
                      n["why"].get<std::string>());
    for (const auto& n : needs) o << "  needs:     " << n << "\n";
    if (u.contains("not_made"))
      o << "  variables: unknown with these parameters: " << u["not_made"].get<std::string>()
        << "\n";
    for (const auto& v : u["variables"]) {
      std::string flags = v["kind"].get<std::string>();
      if (v["guard_fill"].get<bool>()) flags += ", guard fill";
      if (v["plotted"].get<bool>()) flags += ", plotted";
      if (v["vector_axis"].get<int>() >= 0)
        flags += std::string(", vector ") + "xyz"[v["vector_axis"].get<int>()];
      flags += ", prolong " + v["prolong"].get<std::string>();
      o << "  variable   " << v["name"].get<std::string>() << "  " << v["role"].get<std::string>()
        << " (" << flags << ")\n";
    }
    if (!u["derived"].empty())
      o << "  derived:   " << join(u["derived"].get<std::vector<std::string>>()) << "\n";
    if (!u["totals"].empty())
      o << "  totals:    " << join(u["totals"].get<std::vector<std::string>>()) << "\n";
    if (!u["history"].empty())
      o << "  history:   " << join(u["history"].get<std::vector<std::string>>()) << "\n";
    o << "  hooks:     " << join(u["hooks"].get<std::vector<std::string>>()) << "\n\n";
  }
  std::cout << o.str();
  return 0;
}

}  // namespace tessera::app

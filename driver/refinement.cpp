// The driver's refinement job: refinement marking (the Loehner criteria and the units'
// own votes) and the regrid it asks for.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "driver/simulation.hpp"
#include "mesh/lohner.hpp"
#include "mesh/mesh.hpp"
#include "perf/timers.hpp"

namespace tessera::driver {

const physics::Unit* Simulation::marking_provider(const std::string& name) const {
  for (auto* u : services_first_) {
    const auto& d = decl(*u).derives;
    if (std::find(d.begin(), d.end(), name) != d.end()) return u;
  }
  return nullptr;
}

bool Simulation::marking_skips_refresh() const {
  const auto& vars = mesh_->vars();
  auto derived = [&](const std::string& name) {
    const int v = mesh_->var_index(name);
    return v >= 0 && vars[static_cast<std::size_t>(v)].role == mesh::VarRole::derived;
  };
  // The refreshes write derived variables alone ...
  for (auto* u : services_first_)
    for (const auto& name : decl(*u).refresh_writes)
      if (mesh_->var_index(name) >= 0 && !derived(name)) return false;
  // ... and the marking reads every refinement variable without them.
  for (int n = 1; n <= 4; ++n) {
    const auto& name = p_.get_string("mesh.refine_var_" + std::to_string(n));
    if (name == "none" || name.empty()) continue;
    const int v = mesh_->var_index(name);
    if (v < 0) return false;  // a derived output: its unit reads unk after the refreshes
    const bool readable = derived(name) ? marking_provider(name) != nullptr
                                        : vars[static_cast<std::size_t>(v)].guard_fill;
    if (!readable) return false;
  }
  return true;
}

bool Simulation::mark_and_regrid(bool lean) {
  TESSERA_REGION("mark_refine");
  const auto& s = mesh_->shape();
  std::vector<mesh::Flag> flags(mesh_->tree().size(), mesh::Flag::keep);
  std::vector<double> scratch(s.cells());
  struct Crit {
    int var;
    std::string name;
    double refine, derefine, filter;
    const physics::Unit* computed_by = nullptr;  // lean marking: not guard-filled
  };
  std::vector<Crit> crit;
  // With one refinement level the criteria decide nothing (the bounds override every
  // flag; a regrid can only bring leaves up to lrefine_min): they are not evaluated, so a
  // run without their variables (pic) needs no mesh.refine_var settings.
  const bool decide = mesh_->lrefine_max() > mesh_->lrefine_min();
  for (int n = 1; n <= 4 && decide; ++n) {
    const std::string k = std::to_string(n);
    const auto& name = p_.get_string("mesh.refine_var_" + k);
    if (name == "none" || name.empty()) continue;
    const int v = mesh_->var_index(name);
    crit.push_back(
        {v, name, p_.get_real("mesh.refine_cutoff_" + k), p_.get_real("mesh.derefine_cutoff_" + k),
         p_.get_real("mesh.refine_filter_" + k),
         lean && v >= 0 && mesh_->vars()[v].role == mesh::VarRole::derived ? marking_provider(name)
                                                                           : nullptr});
  }
  // An unknown variable is an error whether or not a leaf gets to evaluate it.
  for (const auto& c : crit)
    if (c.var < 0 && c.computed_by == nullptr && deriver(c.name) == nullptr)
      throw Error("mesh.refine_var: unknown variable '" + c.name + "'");
  const int ext = static_cast<int>(p_.get_int("mesh.derefine_guard_layers"));
  // The units' own criteria: one vote per local leaf from each unit that has one.
  std::vector<std::vector<mesh::Flag>> votes;
  for (auto* u : services_first_) {
    if (!decide) break;
    std::vector<mesh::Flag> v(mesh_->tree().size(), mesh::Flag::keep);
    if (u->tag_refinement(*mesh_, v)) votes.push_back(std::move(v));
  }
  mesh_->with_layout([&](auto tag) {
    for (int id : mesh_->local_leaves()) {
      auto u = mesh_->view(id, tag);
      bool refine = false, derefine = true;
      // Once a criterion refines the leaf, nothing else changes its flag: the scan of that
      // criterion stops there (stop_above) and the later criteria are not evaluated.
      for (const auto& c : crit) {
        if (refine) break;
        mesh::LohnerErrors e;
        if (c.computed_by != nullptr) {
          c.computed_by->derived(c.name, u, s, scratch.data(), true);
          e = mesh::lohner_errors(scratch.data(), s, c.filter, ext, c.refine);
        } else if (c.var >= 0) {
          e = mesh::lohner_errors(u.field(c.var), s, c.filter, ext, c.refine);
        } else {  // a derived output (its unit checked above)
          deriver(c.name)->derived(c.name, u, s, scratch.data(), true);
          e = mesh::lohner_errors(scratch.data(), s, c.filter, ext, c.refine);
        }
        refine |= e.interior > c.refine;
        derefine &= e.widened < c.derefine;
      }
      for (const auto& v : votes) {
        refine |= v[id] == mesh::Flag::refine;
        derefine &= v[id] == mesh::Flag::derefine;
      }
      const bool any = !crit.empty() || !votes.empty();
      flags[id] =
          refine ? mesh::Flag::refine : (derefine && any ? mesh::Flag::derefine : mesh::Flag::keep);
    }
  });
  const bool changed = mesh_->regrid(flags, [&] {
    for (auto* u : services_first_) u->before_regrid(*mesh_);
  });
  ++regrid_checks_;
  if (changed) {
    if (!mesh_->moved_only()) ++regrid_changes_;  // moves are summary.json balance.moves
    for (auto* u : services_first_) u->after_regrid(*mesh_);
  }
  return changed;
}

bool Simulation::rebalance() {
  std::vector<mesh::Flag> keep(std::size_t(mesh_->tree().size()), mesh::Flag::keep);
  const bool moved = mesh_->regrid(std::move(keep), [&] {
    for (auto* u : services_first_) u->before_regrid(*mesh_);
  });
  if (moved)
    for (auto* u : services_first_) u->after_regrid(*mesh_);
  return moved;
}

}  // namespace tessera::driver

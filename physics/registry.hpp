#pragma once
// How a unit registers itself (its name, factory, parameters and requirements), so that the
// driver builds a run's units from driver.operators by reading registrations instead of an
// if/else chain that names each unit (driver/units.cpp holds the list of registrations;
// `tessera units` prints it). Each unit defines its registration next to its code
// (`Hydro::registration()` in hydro.cpp).
//
// The rules the driver applies, in this order, with their one-line errors:
//   an empty driver.operators; a name listed twice; an unknown name (the known operators
//   listed); `alone` with any other operator; `excludes` an operator that is listed;
//   `after` an operator that is not listed before it; a required service (Requirements::
//   needs) that no unit of the run provides, or that two provide.
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::physics {

/// Where a unit stands in a run.
enum class UnitRole {
  operator_unit,  ///< named in driver.operators, advanced each step in that order
  particles,      ///< appended after every operator when enabled(p) (the tracers)
  service         ///< called by the operators (composition, eos); added, after the
                  ///< operators and particles, when an active unit needs what it provides
};

/// What a unit needs of the others; the driver checks it before it builds the units.
struct Requirements {
  std::vector<std::string> after{};     ///< operators that must come before it
  std::vector<std::string> excludes{};  ///< operators it cannot run with
  bool alone = false;                   ///< the only operator of its run (pic)
  /// The services it calls (Need): a run's service units (composition, eos) are added when
  /// an active unit names what they provide; a needed operator's service (gravity, flame)
  /// must be listed in driver.operators unless the need is optional. Handed over at bind
  /// (Services).
  std::vector<Need> needs{};
};

namespace detail {
template <class M>
struct member_of;
template <class R, class C>
struct member_of<R C::*> {
  using type = C;
};
/// Whether member pointer `m` names a member declared in T itself (T overrides the hook).
template <class T, class M>
constexpr bool declared_in(M) {
  return std::is_same_v<typename member_of<M>::type, T>;
}
}  // namespace detail

/// The hooks of physics::Unit that T overrides itself, read from T's declarations (a hook
/// T does not override names the base class's member). The per-layout templates
/// (`derived`, `total_densities`) are told by Declarations::derived and derives, and by
/// Declarations::totals instead (`tessera units` adds them).
template <class T>
std::vector<std::string> own_hooks() {
  using detail::declared_in;
  std::vector<std::string> h;
  auto add = [&](bool own, const char* name) {
    if (own) h.emplace_back(name);
  };
  add(declared_in<T>(&T::declarations), "declarations");
  add(declared_in<T>(&T::memory_needs), "memory_needs");
  add(declared_in<T>(&T::bind), "bind");
  add(declared_in<T>(&T::initialise), "initialise");
  add(declared_in<T>(&T::restore), "restore");
  add(declared_in<T>(&T::file_records), "file_records");
  add(declared_in<T>(&T::max_dt), "max_dt");
  add(declared_in<T>(&T::advance), "advance");
  add(declared_in<T>(&T::refresh), "refresh");
  add(declared_in<T>(&T::before_regrid), "before_regrid");
  add(declared_in<T>(&T::after_regrid), "after_regrid");
  add(declared_in<T>(&T::check), "check");
  add(declared_in<T>(&T::tag_refinement), "tag_refinement");
  add(declared_in<T>(&T::diagnostics), "diagnostics");
  return h;
}

/// Every hook of physics::Unit (but name) with what it is for, in unit.hpp's order: the
/// hook table of docs/DESIGN.md is written from it (`tessera units --markdown`).
struct HookDoc {
  const char* name;
  const char* what;
};
inline const std::vector<HookDoc>& hook_docs() {
  static const std::vector<HookDoc> d = {
      {"declarations",
       "its variables (role, kind, guard fill, prolongation), guard zones, "
       "flux variables, derived outputs, totals, history columns, the "
       "deferred-state metadata, restart state keys, its particles"},
      {"memory_needs", "arenas per rank and per block slot, for the planner"},
      {"bind", "indices, the services it needs, arenas; the run's context"},
      {"initialise", "after the problem filled the interior"},
      {"restore",
       "after a restart read unk and the particles: rebuild what it keeps outside "
       "unk, read back its scalars"},
      {"file_records", "scalars a restart gives back; strings every output records"},
      {"max_dt", "its largest stable time step"},
      {"advance", "one step of an operator (fills its guards, corrects its fluxes)"},
      {"refresh", "deferred work of a kind, before its readers"},
      {"before_regrid", "before a regrid moves data: conserved form"},
      {"after_regrid", "after the tree changed: back, and auxiliary state"},
      {"check", "the first bad zone, agreed over ranks after every step"},
      {"tag_refinement", "its own refinement criterion beside the Loehner criteria"},
      {"derived", "derived outputs (and derived unk variables per block)"},
      {"total_densities", "densities of its conserved totals"},
      {"diagnostics", "its summary.json object; its history.csv values"}};
  return d;
}

/// One unit's registration.
struct Registration {
  std::string name;  ///< the name in driver.operators and summary.json "units"
  UnitRole role = UnitRole::operator_unit;
  std::string doc;  ///< one line: what the unit is ("a prescribed velocity field")
  Requirements requires_;
  /// The services it provides to the others ("eos", "gravity"; see physics::Services).
  std::vector<std::string> provides;
  /// Declares the unit's parameters (null: none).
  std::function<void(base::Params&)> declare_params;
  /// Makes the unit from the run's parameters (nothing large allocated).
  std::function<std::unique_ptr<Unit>(const base::Params&)> make;
  /// For UnitRole::particles: whether the run has it (null: always).
  std::function<bool(const base::Params&)> enabled;
  /// The hooks the unit implements (own_hooks<T>()), for `tessera units` and DESIGN.md.
  std::vector<std::string> hooks;
};

/// The registration of unit T (a constructor from base::Params, a static declare_params):
/// its factory, parameters and the hooks it overrides filled in.
template <class T>
Registration registration_of(std::string name, UnitRole role, std::string doc,
                             Requirements req = {}, std::vector<std::string> provides = {}) {
  Registration r;
  r.name = std::move(name);
  r.role = role;
  r.doc = std::move(doc);
  r.requires_ = std::move(req);
  r.provides = std::move(provides);
  r.declare_params = &T::declare_params;
  r.make = [](const base::Params& p) { return std::make_unique<T>(p); };
  r.hooks = own_hooks<T>();
  return r;
}

}  // namespace tessera::physics

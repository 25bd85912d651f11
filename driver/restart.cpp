// The driver's restart job: the tree, this rank's blocks, the scalars and the particles
// from a checkpoint, and what the units rebuild.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "driver/simulation.hpp"
#include "driver/units.hpp"
#include "io/flash_file.hpp"
#include "mesh/mesh.hpp"
#include "particles/particle_io.hpp"
#include "particles/particle_set.hpp"

namespace tessera::driver {

std::vector<std::string> checkpoint_list(const std::string& v) {
  // io/mesh_output.cpp joins a list with commas; "" is the empty list.
  std::vector<std::string> list;
  std::size_t at = 0;
  while (!v.empty() && at <= v.size()) {
    const auto comma = v.find(',', at);
    list.push_back(v.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return list;
}

void checkpoint_params(base::Params& params, const io::FlashFileSpec& f) {
  std::map<std::string, base::ParamType> type;
  for (const auto* s : params.all()) type[s->key] = s->type;
  auto known = [&](const std::string& k) { return type.count(k) != 0; };
  for (const auto& [k, v] : f.int_runtime)
    if (known(k)) params.set(k, static_cast<std::int64_t>(v), "checkpoint");
  for (const auto& [k, v] : f.real_runtime)
    if (known(k)) params.set(k, v, "checkpoint");
  for (const auto& [k, v] : f.log_runtime)
    if (known(k)) params.set(k, v, "checkpoint");
  for (const auto& [k, v] : f.str_runtime) {
    if (!known(k)) continue;
    if (type[k] == base::ParamType::Int) {
      // A 64-bit integer beyond int32, stored as its decimal text (io/mesh_output.cpp).
      std::int64_t x = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc{} || end != v.data() + v.size())
        throw Error("checkpoint parameter '" + k + "' = '" + v + "' is not an integer");
      params.set(k, x, "checkpoint");
    } else if (type[k] == base::ParamType::StringList) {
      params.set(k, checkpoint_list(v), "checkpoint");
    } else {
      params.set(k, v, "checkpoint");
    }
  }
}

namespace {

/// What a restart from checkpoint f would drop of it: each file variable this run's unk
/// lacks (named with the unit that owned it, from the units the checkpoint's parameters
/// make) and the file's particles when no unit of this run owns particles. Refused with
/// one line unless driver.restart_drop names each loss (the variable, or the unit that
/// owned it); what is allowed is logged.
std::vector<std::string> restart_losses(const io::FlashFileSpec& f,
                                        const std::vector<mesh::VarInfo>& unk, bool has_particles,
                                        const base::Params& now,
                                        const std::function<bool(const std::string&)>& is_allowed,
                                        std::string* refused) {
  std::map<std::string, std::string> owner;  // file variable -> its unit in the checkpoint
  std::vector<std::string> old_units;
  // What the file holds that nothing is lost without: derived outputs (hydro's velx..)
  // and state its units recompute from the rest.
  std::vector<std::string> recomputable;
  auto note_derived = [&](const physics::Units& units) {
    for (const auto& u : units.all())
      for (const auto& d : u->declarations().derived) recomputable.push_back(d);
  };
  try {
    base::Params old;
    declare_all_params(old);
    checkpoint_params(old, f);
    const auto units = make_units(old);
    for (const auto& v : unk_variables(units)) {
      owner[v.name] = v.owner;
      if (v.role == mesh::VarRole::derived || v.recomputable) recomputable.push_back(v.name);
    }
    for (const auto& u : units.all()) old_units.push_back(u->name());
    note_derived(units);
  } catch (const Error&) {
    // A checkpoint whose parameters no longer make units: the losses go unattributed,
    // and only this run's derived outputs are known as such.
    note_derived(make_units(now));
  }
  const auto now_units = active_unit_names(now);
  std::map<std::string, std::vector<std::string>> by_unit;  // unit ("" unknown) -> variables
  for (const auto& name : f.var_names) {
    const bool kept =
        std::any_of(unk.begin(), unk.end(), [&](const mesh::VarInfo& v) { return v.name == name; });
    const bool derived =
        std::find(recomputable.begin(), recomputable.end(), name) != recomputable.end();
    if (!kept && !derived) by_unit[owner.count(name) ? owner[name] : std::string()].push_back(name);
  }
  std::vector<std::string> lost, refuse;
  for (const auto& [unit, vars] : by_unit) {
    const bool unit_gone =
        !unit.empty() && std::find(now_units.begin(), now_units.end(), unit) == now_units.end();
    std::vector<std::string> names;
    for (const auto& v : vars) names.push_back("'" + v + "'");
    const std::string list =
        fmt::format("variable{} {}", vars.size() > 1 ? "s" : "", fmt::join(names, ", "));
    const std::string what = unit_gone      ? fmt::format("unit {} ({})", unit, list)
                             : unit.empty() ? list
                                            : fmt::format("{} of unit {}", list, unit);
    lost.push_back(what);
    bool ok = !unit.empty() && is_allowed(unit);
    if (!ok) ok = std::all_of(vars.begin(), vars.end(), is_allowed);
    if (!ok) refuse.push_back(what);
  }
  if (!f.particle_names.empty() && !has_particles) {
    // The unit that owned them (the tracers' "particles", or pic) or the word particles.
    std::string unit = "particles";
    for (const auto& u : old_units)
      if (std::find(now_units.begin(), now_units.end(), u) == now_units.end() &&
          (u == "particles" || u == "pic"))
        unit = u;
    const std::string what = fmt::format("the particles of unit {}", unit);
    lost.push_back(what);
    if (!is_allowed(unit) && !is_allowed("particles")) refuse.push_back(what);
  }
  if (!refuse.empty())
    *refused = fmt::format(
        "it would drop {}; to drop it, name it (the unit or each variable) in "
        "driver.restart_drop",
        fmt::join(refuse, "; "));
  return lost;
}

}  // namespace

void Simulation::restore(const io::FlashFileMeta& m) {
  const io::FlashFileSpec& f = m.spec;
  const std::string what = "cannot restart from '" + opt_.restart_path + "': ";
  if (!f.double_precision)
    throw Error(what + "it holds single-precision data (a plotfile?); restart needs a checkpoint");
  if (f.ndim != mesh_->ndim())
    throw Error(what + fmt::format("it is {}-D but mesh.ndim = {}", f.ndim, mesh_->ndim()));
  if (f.nxb != mesh_->nxb())
    throw Error(what +
                fmt::format("its blocks have nxb = {} but mesh.nxb = {}", f.nxb, mesh_->nxb()));
  if (f.nyb != mesh_->shape().ni(1) || f.nzb != mesh_->shape().ni(2))
    throw Error(what + fmt::format("its blocks have nyb = {}, nzb = {}; expected {}, {}", f.nyb,
                                   f.nzb, mesh_->shape().ni(1), mesh_->shape().ni(2)));
  const auto& geo = mesh_->tree().geometry();
  const std::size_t N = f.refine_level.size();
  std::vector<std::pair<int, mesh::IVec>> refined;
  std::vector<std::pair<int, mesh::IVec>> node(N);
  for (std::size_t b = 0; b < N; ++b) {
    mesh::IVec pos{0, 0, 0};
    for (int a = 0; a < geo.ndim; ++a) {
      const double w = f.block_size[b * 3 + a];
      pos[a] = static_cast<int>(std::lround((f.bounding_box[b * 6 + a * 2] - geo.lo[a]) / w));
    }
    node[b] = {f.refine_level[b] - 1, pos};
    if (f.node_type[b] != 1) refined.push_back(node[b]);
  }
  mesh_->restore(refined);
  const auto& t = mesh_->tree();
  if (static_cast<std::size_t>(t.size()) != N)
    throw Error(what + fmt::format("its tree has {} blocks, rebuilt {} (different root blocks?)", N,
                                   t.size()));
  for (std::size_t b = 0; b < N; ++b) {
    const auto& n = t.node(static_cast<int>(b));
    if (n.level != node[b].first || n.pos != node[b].second)
      throw Error(what + fmt::format("block {} is not where the canonical order puts it", b + 1));
    const auto lo = t.block_lo(static_cast<int>(b));
    const auto w = t.block_size(static_cast<int>(b));
    for (int a = 0; a < geo.ndim; ++a)
      if (std::abs(lo[a] - f.bounding_box[b * 6 + a * 2]) > 1e-12 * std::abs(w[a]) ||
          std::abs(w[a] - f.block_size[b * 3 + a]) > 1e-12 * std::abs(w[a]))
        throw Error(what + fmt::format("block {} does not match the domain of the parameters "
                                       "(mesh.{}min/{}max or nblock{} changed?)",
                                       b + 1, "xyz"[a], "xyz"[a], "xyz"[a]));
  }
  // Fields: every variable the mesh holds must be in the file, except the EOS state and
  // gravity's field, which are recomputed from the conserved variables when missing. Derived
  // variables (VarRole::derived) are not taken from the file (their units recompute them
  // in restore); a file without them restarts.
  // Nothing of the checkpoint is dropped unless driver.restart_drop names it.
  const auto allowed = p_.get_string_list("driver.restart_drop");
  const std::function<bool(const std::string&)> may_drop = [&allowed](const std::string& name) {
    return std::find(allowed.begin(), allowed.end(), name) != allowed.end();
  };
  {
    std::string refused;
    const auto lost =
        restart_losses(f, mesh_->vars(), particles_ != nullptr, p_, may_drop, &refused);
    if (!refused.empty()) throw Error(what + refused);
    for (const auto& l : lost) log("restart: dropped " + l + " (driver.restart_drop)");
  }
  const auto& s = mesh_->shape();
  std::vector<int> dst(f.var_names.size(), -1);  // file variable -> unk variable, or -1
  std::vector<int> derived;
  std::string recompute;
  for (int v = 0; v < static_cast<int>(mesh_->vars().size()); ++v) {
    const auto& var = mesh_->vars()[v];
    if (var.role == mesh::VarRole::derived) {
      derived.push_back(v);
      continue;
    }
    const auto it = std::find(f.var_names.begin(), f.var_names.end(), var.name);
    if (it == f.var_names.end()) {
      // Only state the units recompute from the rest may be missing (VarInfo::recomputable:
      // the "recompute" path below); a unit's own evolved field may not.
      if (!var.recomputable) throw Error(what + "variable '" + var.name + "' is missing");
      recompute = "it has no '" + var.name + "'";
      continue;
    }
    dst[static_cast<std::size_t>(it - f.var_names.begin())] = v;
  }
  // A unit's state in unk that the file holds as computed with other values (the EOS
  // unit's: another type, table or gamma; Declarations::state_keys) is recomputed; the
  // first difference says why.
  physics::CheckpointInfo info;
  info.string_value = [&f](const std::string& key) {
    for (const auto* l : {&f.str_scalars, &f.str_runtime})
      for (const auto& [k, v] : *l)
        if (k == key) {
          std::string x = v;
          while (!x.empty() && (x.back() == ' ' || x.back() == '\0')) x.pop_back();
          return x;
        }
    return std::string();
  };
  info.real_parameter = [&f](const std::string& key) -> std::optional<double> {
    for (const auto& [k, v] : f.real_runtime)
      if (k == key) return v;
    return std::nullopt;
  };
  info.real_scalar = [&f](const std::string& key) -> std::optional<double> {
    for (const auto& [k, v] : f.real_scalars)
      if (k == key) return v;
    return std::nullopt;
  };
  info.string_list = [&info](const std::string& key) {
    return checkpoint_list(info.string_value(key));
  };
  info.may_drop = may_drop;
  info.dropped = [this](const std::string& line) {
    log("restart: dropped " + line + " (driver.restart_drop)");
  };
  std::string differs;
  for (const auto& u : units_.all())
    for (const auto& k : decl(*u).state_keys) {
      std::string was = info.string_value(k.key);
      if (was.empty())
        if (const auto r = info.real_parameter(k.key)) was = fmt::format("{}", *r);
      if (differs.empty() && (was.empty() ? k.required : was != k.value))
        differs = "its " + k.key + " was " + (was.empty() ? "unrecorded" : was);
    }
  if (!differs.empty()) recompute = differs;  // before a missing variable's reason
  info.initialised = !recompute.empty();
  // This rank's blocks (parents included), read straight from the file into unk, every
  // row verified as it is read. The derived variables are read and verified too, so a
  // restart refuses what `tessera check` refuses; no rank holds more than one variable of
  // its own rows besides unk.
  std::vector<int> rows;
  for (int id = 0; id < t.size(); ++id)
    if (mesh_->slot(id) >= 0) rows.push_back(id);
  try {
    mesh_->with_layout([&](auto tag) {
      io::read_flash_rows(
          comm_, m, f.var_names, rows,
          [&](std::size_t v, std::size_t r, const double* q) {
            if (dst[v] < 0) return;
            auto u = mesh_->view(rows[r], tag);
            std::size_t c = 0;
            mesh::for_each_zone(s, [&](int i, int j, int k) { u(dst[v], i, j, k) = q[c++]; });
          },
          hints_);
    });
  } catch (const Error& e) {
    throw Error("refusing to restart from '" + opt_.restart_path + "': " + e.what());
  }
  // Derived variables hold NaN until their units recompute them: a unit that did not would
  // leave NaN in its outputs, not a stale value that looks right.
  if (!derived.empty())
    mesh_->with_layout([&](auto tag) {
      for (const int id : rows) {
        auto u = mesh_->view(id, tag);
        for (const int v : derived)
          mesh::for_each_zone(s, [&](int i, int j, int k) {
            u(v, i, j, k) = std::numeric_limits<double>::quiet_NaN();
          });
      }
    });
  // Scalars.
  auto real = [&](const char* name) {
    for (const auto& [k, v] : f.real_scalars)
      if (k == name) return v;
    throw Error(what + "real scalar '" + name + "' is missing (not a tessera checkpoint?)");
  };
  auto integer = [&](const char* name) {
    for (const auto& [k, v] : f.int_scalars)
      if (k == name) return v;
    throw Error(what + "integer scalar '" + name + "' is missing (not a tessera checkpoint?)");
  };
  time_ = real("time");
  dt_ = real("dt");
  dt_prev_ = real("dtold");
  step_ = integer("nstep");
  chk_count_ = integer("checkpointfilenumber");
  plot_count_ = integer("plotfilenumber");
  next_plot_time_ = real("nextplotfiletime");
  next_chk_time_ = real("nextcheckpointtime");
  totals0_.clear();
  for (const auto& t : total_names_) totals0_.push_back(real((t + "_initial").c_str()));
  if (!recompute.empty()) {
    log("restart: " + recompute +
        ": the EOS state (pres, temp, gamc, game, eint) is "
        "recomputed from the conserved variables");
    initialise_units();
  }
  // Particles (a unit's initialise above may have placed fresh ones): this rank's blocks'
  // particles, verified against the manifest, then their leaves and order; before the
  // units' scalars, so that a unit can check (and drop, where allowed) what it owns.
  if (particles_ != nullptr) {
    if (f.particle_names.empty())
      throw Error(what + "it holds no particles, but particles.tracers is on");
    std::vector<double> values;
    try {
      values = io::read_flash_particles(comm_, m, rows, hints_);
    } catch (const Error& e) {
      throw Error("refusing to restart from '" + opt_.restart_path + "': " + e.what());
    }
    particles_->clear();
    particles::from_file(*particles_, f.particle_names, values);
    particles_->redistribute(*mesh_);
  }
  // The units rebuild what they keep outside unk (unless they were initialised) and read
  // back their scalars (FileRecords::scalars), last: after the particles, so that a unit
  // can check (and drop, where allowed) what it owns.
  for (auto* u : services_first_) u->restore(*mesh_, info);
}

}  // namespace tessera::driver

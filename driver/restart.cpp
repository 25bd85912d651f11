// The driver's restart job: the tree, this rank's blocks, the scalars and the particles
// from a checkpoint, and what the units rebuild.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "driver/simulation.hpp"
#include "io/flash_file.hpp"
#include "mesh/mesh.hpp"
#include "particles/particle_io.hpp"
#include "particles/particle_set.hpp"

namespace tessera::driver {

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
  // in after_restart); a file without them restarts.
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
  // A unit whose state in unk the file cannot give as it is (the EOS unit: the state of
  // another EOS) says why (Unit::restore_check); the first reason recomputes it.
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
  for (const auto& u : units_.all())
    if (const auto why = u->restore_check(info); !why.empty()) recompute = why;
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
  } else {
    // unk is the checkpoint's: units rebuild only what they keep outside it.
    for (auto* u : services_first_) u->after_restart(*mesh_);
  }
  // What the units keep outside unk (Unit::checkpoint_scalars), last.
  for (auto* u : services_first_) u->restore_scalars(info);
  // Particles last (a unit's initialise above may have placed fresh ones): this rank's
  // blocks' particles, verified against the manifest, then their leaves and order.
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
  } else if (!f.particle_names.empty()) {
    log("restart: the checkpoint's particles are not used (particles.tracers is false)");
  }
}

}  // namespace tessera::driver

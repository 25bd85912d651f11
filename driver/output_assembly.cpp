// The driver's output job: which variables a plotfile or checkpoint holds (from the
// units' declarations), the snapshot of unk and the derived variables its writer computes.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "driver/simulation.hpp"
#include "io/mesh_output.hpp"
#include "io/output_manager.hpp"
#include "memory/arena.hpp"
#include "mesh/mesh.hpp"
#include "particles/particle_io.hpp"
#include "particles/particle_set.hpp"
#include "perf/timers.hpp"
#include "physics/eos/eos_unit.hpp"

namespace tessera::driver {

void Simulation::write(bool checkpoint, bool force_sync) {
  // The particles' move (outside the region); an output of this step still copying unk
  // finishes its copy first (refresh_units waits for it).
  refresh_units(physics::Deferred::outside_unk);
  TESSERA_REGION(checkpoint ? "io/checkpoint" : "io/plotfile");
  refresh_units(physics::Deferred::unk_state);
  check_derived();  // no NaN or inf reaches a file (the independents: check_state)
  std::vector<std::string> names;
  if (checkpoint) {
    for (const auto& v : mesh_->vars()) names.push_back(v.name);
    for (const auto& u : units_.all())
      for (const auto& d : decl(*u).derived) names.push_back(d);
  } else {
    // "unk" stands for every unk variable its unit marks as plotted.
    for (const auto& n : p_.get_string_list("io.plot_vars")) {
      if (n != "unk") {
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
        continue;
      }
      for (const auto& v : mesh_->vars())
        if (v.plot && std::find(names.begin(), names.end(), v.name) == names.end())
          names.push_back(v.name);
    }
  }
  // The step loop snapshots unk's variables only (a copy); derived variables are computed
  // from that snapshot by whoever writes the file (the I/O thread in asynchronous mode),
  // with the same function on the same doubles, so sync and async files are identical.
  bool any_derived = false;
  for (const auto& n : names) any_derived |= mesh_->var_index(n) < 0;
  std::vector<std::string> stored;
  std::vector<int> unk_index;  // per stored variable, its unk index
  for (int v = 0; v < static_cast<int>(mesh_->vars().size()); ++v) {
    const std::string& name = mesh_->vars()[v].name;
    const bool wanted = std::find(names.begin(), names.end(), name) != names.end();
    if (!wanted && !any_derived) continue;
    stored.push_back(name);  // copied by fill_block, a block at a time
    unk_index.push_back(v);
  }
  // The snapshot's copy: every stored unk variable of a block in one call, its interior
  // x-rows (contiguous in var-major) in turn.
  io::BlockFill fill_block = [this, unk_index](int node, double* out, std::size_t plane) {
    const auto& s = mesh_->shape();
    mesh_->with_layout([&](auto tag) {
      auto u = mesh_->view(node, tag);
      const int i0 = s.g(0), n = s.ni(0);
      for (std::size_t q = 0; q < unk_index.size(); ++q) {
        double* o = out + q * plane;
        for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
          for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
            const auto r = u.row(unk_index[q], j, k);
            for (int i = 0; i < n; ++i) o[i] = r[i0 + i];
            o += n;
          }
      }
    });
  };
  // Runs on the writer: rebuild data in the order of `names`, deriving what is missing.
  std::vector<const physics::Unit*> derivers;  // per name: the unit deriving it, or null
  for (const auto& n : names) derivers.push_back(mesh_->var_index(n) < 0 ? deriver(n) : nullptr);
  mesh::BlockShape interior = mesh_->shape();
  interior.ng = 0;
  const int nstored = static_cast<int>(stored.size());
  // When the stored variables are the first of `names`, in order (checkpoints: unk, then
  // the derived variables), the snapshot is laid out as the file: the derived rows are
  // left empty for the writer to compute in place, and nothing is copied twice.
  bool in_place = stored.size() <= names.size();
  for (std::size_t n = 0; in_place && n < stored.size(); ++n) in_place = stored[n] == names[n];
  if (in_place)
    for (std::size_t n = stored.size(); n < names.size(); ++n) stored.push_back(names[n]);
  auto prepare = [derivers, names, interior, nstored, in_place](io::FlashFileSpec& f) {
    const std::size_t rows = f.local_rows.size();
    const std::size_t cells = interior.interior_cells();
    if (in_place) {
      for (std::size_t n = nstored; n < names.size(); ++n)
        for (std::size_t r = 0; r < rows; ++r) {
          // A view of row r of the snapshot: unk's variables are nstored planes apart.
          mesh::BlockView<> u(f.data.data() + r * cells, interior);
          u.sv = rows * cells;
          u.nvar = nstored;
          derivers[n]->derived(names[n], u, interior, f.data.data() + (n * rows + r) * cells,
                               false);
        }
      return;
    }
    memory::ArenaVector<double> data(names.size() * rows * cells, f.data.get_allocator());
    for (std::size_t n = 0; n < names.size(); ++n) {
      double* dst = data.data() + n * rows * cells;
      const auto it = std::find(f.var_names.begin(), f.var_names.end(), names[n]);
      if (it != f.var_names.end()) {
        const double* src = f.data.data() + std::size_t(it - f.var_names.begin()) * rows * cells;
        std::copy(src, src + rows * cells, dst);
        continue;
      }
      for (std::size_t r = 0; r < rows; ++r) {
        // A view of row r of the snapshot: unk's variables are nstored planes apart.
        mesh::BlockView<> u(f.data.data() + r * cells, interior);
        u.sv = rows * cells;
        u.nvar = nstored;
        derivers[n]->derived(names[n], u, interior, dst + r * cells, false);
      }
    }
    f.var_names = names;
    f.data = std::move(data);
  };
  const auto& base = p_.get_string("io.basename");
  const int number = checkpoint ? chk_count_++ : plot_count_++;
  const std::string fname = checkpoint ? fmt::format("{}_hdf5_chk_{:04d}", base, number)
                                       : fmt::format("{}_hdf5_plt_cnt_{:04d}", base, number);
  // Everything a restart needs besides the tree, the fields and the parameters.
  io::OutputInfo info;
  if (!runtime_lists_)
    runtime_lists_ = std::make_shared<const io::RuntimeLists>(io::runtime_lists(*mesh_, p_));
  info.runtime = runtime_lists_;
  info.time = time_;
  info.dt = dt_;
  info.step = step_;
  info.int_state = {{"checkpointfilenumber", chk_count_}, {"plotfilenumber", plot_count_}};
  info.real_state = {{"dtold", dt_prev_},
                     {"nextplotfiletime", next_plot_time_},
                     {"nextcheckpointtime", next_chk_time_}};
  for (std::size_t t = 0; t < total_names_.size(); ++t)
    info.real_state.emplace_back(total_names_[t] + "_initial", totals0_[t]);
  std::vector<physics::FileRecords> records;
  for (auto* u : services_first_) records.push_back(u->file_records());
  for (std::size_t n = 0; n < records.size(); ++n)
    for (const auto& [key, value] : records[n].scalars)
      info.real_state.emplace_back(services_first_[n]->name() + "_" + key, value);
  for (const auto& r : records)
    for (const auto& kv : r.strings) info.str_state.push_back(kv);
  const int deflate = checkpoint ? 0 : static_cast<int>(p_.get_int("io.plotfile_deflate"));
  // Particles go into checkpoints, and into a particle file of the plotfile's number and
  // time (yt pairs _plt_cnt_NNNN with _part_NNNN by name and time).
  const std::size_t particle_bytes =
      particles_ ? particles_->size() * particles::file_columns(*particles_).size() * sizeof(double)
                 : 0;
  out_->write(
      checkpoint ? io::OutputKind::checkpoint : io::OutputKind::plotfile, fname,
      io::snapshot_bytes(*mesh_, std::max(names.size(), stored.size())) +
          (checkpoint ? particle_bytes : 0),
      [&] {
        mesh_->restrict_parents();
        // Asynchronous (normal priority): the I/O thread copies unk while the step loop
        // describes the tree and computes the next dt; the loop waits for that copy
        // (wait_captures) before anything modifies unk.
        io::FlashFileSpec f =
            io::mesh_file_spec(*mesh_, p_, checkpoint, stored, info, out_->defers_capture(),
                               fill_block, [this](std::function<void(io::FlashFileSpec&)> c) {
                                 return out_->start_capture(std::move(c));
                               });
        f.hints = hints_;
        f.deflate = deflate;
        f.prepare = prepare;
        if (checkpoint && particles_) particles::to_file(*particles_, *mesh_, f);
        return f;
      },
      force_sync);
  log(fmt::format("  {} {}", out_->async() && !force_sync ? "queued" : "wrote", fname));
  if (checkpoint || particles_ == nullptr) return;
  const std::string pname = fmt::format("{}_hdf5_part_{:04d}", base, number);
  out_->write(
      io::OutputKind::particles, pname, particle_bytes,
      [&] {
        io::FlashFileSpec f = io::mesh_file_spec(*mesh_, p_, true, {}, info);
        f.grid = false;
        f.hints = hints_;
        particles::to_file(*particles_, *mesh_, f);
        return f;
      },
      force_sync);
  log(fmt::format("  {} {}", out_->async() && !force_sync ? "queued" : "wrote", pname));
}

}  // namespace tessera::driver

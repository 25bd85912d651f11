// The PIC unit's restart (its fields' guards, the checkpoint's species against this run's)
// and what it declares to the memory planner (see pic_unit.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "memory/tier_runtime.hpp"
#include "physics/particle_needs.hpp"
#include "physics/pic/pic_unit.hpp"
#include "physics/pic/unit_helpers.hpp"

namespace tessera::pic {

void Pic::restore(mesh::Mesh& m, const physics::CheckpointInfo& c) {
  field_next_valid_ = false;
  if (!c.initialised) resume(m);
  check_species(c);
}

void Pic::resume(mesh::Mesh& m) {
  m.fill_guards(nfill_);
  need_k_prev_ = true;  // the kinetic energy of the loaded particles, at the next step
  if (m.rank() == 0) {
    // Appended to: the run's context gave the checkpoint's step and time (bind).
    const auto path = std::filesystem::path(run_dir_.empty() ? "." : run_dir_) / "pic_history.csv";
    const bool fresh = !std::filesystem::exists(path);
    history_ = std::ofstream(path, std::ios::app);
    if (fresh)
      history_ << "step,time,field_energy,kinetic_energy,total_energy,ex_mode_sin,ex_mode_abs\n";
  }
}

std::vector<physics::ArenaNeed> Pic::memory_needs(const std::vector<mesh::VarInfo>& /*unk*/,
                                                  const mesh::BlockShape& s,
                                                  long /*maxblocks*/) const {
  // Particles per block as initialise() loads them (a pulse starts in vacuum), and the
  // bytes of one in the ParticleSet (8 properties, tag, node).
  const double nbeams = init_ == "two_stream" ? 2 : 1;
  const double nspecies = init_ == "pulse" ? 0 : double(species_.size());
  const double per_species = double(ppc_) * double(s.interior_cells()) * nbeams;
  const double ppb = per_species * nspecies;
  // File columns: blk posx posy posz proc tag velx vely velz weight type.
  auto v = physics::particle_set_needs(ppb, true, particles::NBASE + 2, 11,
                                       "particles per block: pic.particles_per_cell x I x "
                                       "beams x species",
                                       sort_ == "cell");
  v.push_back({"pic: a block's work arrays", "", 9 * 8 * per_species, 0.0,
               "9*8 per particle of one species of one block"});
  return v;
}

void Pic::check_species(const physics::CheckpointInfo& c) {
  const std::vector<std::string> old = c.string_list("pic.species");
  if (old.empty()) return;  // a checkpoint of another unit's particles: nothing to compare
  std::vector<std::string> now;
  for (const auto& sp : species_) now.push_back(sp.name);
  if (old == now) return;
  // Each species of this run must be the checkpoint's, in the checkpoint's order (the
  // particles' types and their species-major tags index that list).
  std::vector<int> to(old.size(), -1);  // checkpoint species -> this run's, or -1
  int last = -1;
  for (std::size_t n = 0; n < now.size(); ++n) {
    const auto it = std::find(old.begin(), old.end(), now[n]);
    if (it == old.end())
      throw Error(
          fmt::format("pic: the checkpoint has no particles of species '{}' (its "
                      "pic.species = [{}]); a restart cannot add a species",
                      now[n], fmt::join(old, ", ")));
    const int o = int(it - old.begin());
    if (o < last)
      throw Error(
          fmt::format("pic: pic.species = [{}] reorders the checkpoint's [{}]; a "
                      "restart keeps its order",
                      fmt::join(now, ", "), fmt::join(old, ", ")));
    last = o;
    to[std::size_t(o)] = int(n);
  }
  std::vector<std::string> gone;
  for (std::size_t o = 0; o < old.size(); ++o)
    if (to[o] < 0 && !c.may_drop(old[o])) gone.push_back(old[o]);
  if (!gone.empty())
    throw Error(
        fmt::format("pic: the restart would drop the particles of species {} (not in "
                    "pic.species); to drop them, name them in driver.restart_drop",
                    fmt::join(gone, ", ")));
  // Remove the dropped species' particles and renumber the types of the others.
  std::vector<double> keep, row(std::size_t(set_->nprop()));
  std::vector<std::int64_t> tags;
  std::vector<long> removed(old.size(), 0);
  for (std::size_t i = 0; i < set_->size(); ++i) {
    const auto o = std::size_t(set_->prop(kType)[i]) - 1;  // types count from 1
    if (o >= old.size() || to[o] < 0) {
      ++removed[std::min(o, old.size() - 1)];
      continue;
    }
    for (int q = 0; q < set_->nprop(); ++q) row[std::size_t(q)] = set_->prop(q)[i];
    row[std::size_t(kType)] = double(to[o] + 1);
    keep.insert(keep.end(), row.begin(), row.end());
    tags.push_back(set_->tag()[i]);
  }
  MPI_Allreduce(MPI_IN_PLACE, removed.data(), int(removed.size()), MPI_LONG, MPI_SUM,
                mesh_->comm());
  set_->clear();
  set_->reserve(tags.size());
  for (std::size_t i = 0; i < tags.size(); ++i) set_->push(keep.data() + i * row.size(), tags[i]);
  set_->redistribute(*mesh_);
  for (std::size_t o = 0; o < old.size(); ++o)
    if (to[o] < 0) c.dropped(fmt::format("pic species {} ({} particles)", old[o], removed[o]));
}

}  // namespace tessera::pic

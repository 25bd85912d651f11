#pragma once
// What a unit that owns a particle set (PIC, the tracers) declares to the memory planner
// (physics::Unit::memory_needs): the set's arena, its sort and migration buffers, the
// arena's growth when a migration brings more particles than it holds, and the copies a
// checkpoint and a particle file make.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "particles/particle_set.hpp"
#include "physics/unit.hpp"

namespace tessera::physics {

/// The planner's items of a particle set with `nprop` properties (ParticleSet: nprop
/// doubles, a tag and a node each) and `file_cols` columns in a file: `n` particles per
/// block a rank holds (per_block) or in the whole run, shared evenly by the ranks. `what`
/// says what n is, for the plan's table.
inline std::vector<ArenaNeed> particle_set_needs(double n, bool per_block, int nprop, int file_cols,
                                                 const std::string& what, bool binned = false) {
  const double bpp = 8.0 * nprop + 8 + 4;
  const char* per = per_block ? "" : "/ranks";
  auto scaled = [&](ArenaNeed a, double bytes_per_particle) {
    (per_block ? a.bytes_per_block : a.bytes_shared) = n * bytes_per_particle;
    return a;
  };
  std::vector<ArenaNeed> v;
  v.push_back(scaled({"particles", "particles", 1024 * bpp, 0.0,
                      fmt::format("P*{}{} + 1024*{} (P = {:g} {})", bpp, per, bpp, n, what)},
                     bpp));
  // A migration that brings more than the arena holds maps one 1.5 times larger beside it.
  ArenaNeed grow = scaled({"particles: growth in a migration", "", 0.0, 0.0,
                           fmt::format("1.5*P*{}{} (a new arena beside the old)", bpp, per)},
                          1.5 * bpp);
  grow.phase = "step";
  grow.multi_rank = true;  // one rank: nothing arrives
  v.push_back(grow);
  // ParticleSet::sort_canonical keeps its permutation and a column buffer (8 + 8 bytes
  // per particle); redistribute's destinations and moved flags (4 + 1, and 1 measured
  // beyond: pic_langmuir_1d at 25000 and 50000 particles per cell peaked 6.1 bytes per
  // particle above the plan without them, at every size).
  v.push_back(scaled({"particles: sort and migration buffers", "", 0.0, 0.0,
                      fmt::format("P*22{} (order 8, permutation 8, destination 4, flags 1, "
                                  "1 measured)",
                                  per)},
                     22));
  // Sorted by bins (ParticleSet::set_bins): the bins at the last sort and now, the (node,
  // bin) keys and the mover flags, and the sort keys (key, tag, index) of the particles that
  // changed bin (every particle at worst: 4 + 4 + 8 + 1 + 24).
  if (binned)
    v.push_back(scaled({"particles: bins and sort keys", "", 0.0, 0.0,
                        fmt::format("P*41{} (bins 4 + 4, keys 8, flags 1, sort keys 24)", per)},
                       41));
  for (const char* phase : {"checkpoint", "plotfile"}) {
    ArenaNeed out = scaled({std::string("particles: ") + phase + " copy", "", 0.0, 0.0,
                            fmt::format("P*{}*8{} (the file's columns)", file_cols, per)},
                           8.0 * file_cols);
    out.phase = phase;
    v.push_back(out);
  }
  return v;
}

}  // namespace tessera::physics

#pragma once
// Particles to and from the FLASH file layer (io/flash_file.hpp, reference §6): the
// columns in FLASH's order (every property name sorted: blk posx posy posz proc tag velx
// vely velz, and a type's own among them), each local row's count, and the rows grouped by
// block in file order. io/ never sees the container; the driver calls these around it.
#include <string>
#include <vector>

#include "io/flash_file.hpp"
#include "particles/particle_set.hpp"

namespace tessera::mesh {
class Mesh;
}

namespace tessera::particles {

/// The file's columns for set s: its properties with blk, proc and tag, sorted.
std::vector<std::string> file_columns(const ParticleSet& s);

/// Fill f.particle_names, f.localnp (one entry per f.local_rows, 0 for parents) and
/// f.particles (allocated with f.data's allocator: the staging arena) from this rank's
/// particles. blk is the 1-based file row, proc this rank, tag the global tag.
void to_file(const ParticleSet& s, const mesh::Mesh& m, io::FlashFileSpec& f);

/// Append the particles of `values` (row-major, columns `names` as stored) to s. Throws a
/// one-line error naming a property s needs that the file lacks. Call redistribute after.
void from_file(ParticleSet& s, const std::vector<std::string>& names,
               const std::vector<double>& values);

}  // namespace tessera::particles

#include "particles/particle_io.hpp"

#include <algorithm>
#include <cstdint>

#include "base/error.hpp"
#include "mesh/mesh.hpp"

namespace tessera::particles {

std::vector<std::string> file_columns(const ParticleSet& s) {
  auto n = s.prop_names();
  n.insert(n.end(), {"blk", "proc", "tag"});
  std::sort(n.begin(), n.end());
  return n;
}

void to_file(const ParticleSet& s, const mesh::Mesh& m, io::FlashFileSpec& f) {
  f.particle_names = file_columns(s);
  const int nc = static_cast<int>(f.particle_names.size());
  // Column c's source: a property index, or -1 blk, -2 proc, -3 tag.
  const auto props = s.prop_names();
  std::vector<int> src(std::size_t(nc), 0);
  for (int c = 0; c < nc; ++c) {
    const auto& name = f.particle_names[std::size_t(c)];
    if (name == "blk") {
      src[std::size_t(c)] = -1;
    } else if (name == "proc") {
      src[std::size_t(c)] = -2;
    } else if (name == "tag") {
      src[std::size_t(c)] = -3;
    } else {
      src[std::size_t(c)] =
          static_cast<int>(std::find(props.begin(), props.end(), name) - props.begin());
    }
  }
  f.localnp.assign(f.local_rows.size(), 0);
  std::size_t total = 0;
  for (std::size_t r = 0; r < f.local_rows.size(); ++r) {
    const int id = f.local_rows[r];
    f.localnp[r] = static_cast<int>(s.end(id) - s.begin(id));
    total += std::size_t(f.localnp[r]);
  }
  f.particles = memory::ArenaVector<double>(f.data.get_allocator());
  f.particles.resize(total * std::size_t(nc));
  double* out = f.particles.data();
  const double rank = m.rank();
  for (const int id : f.local_rows)
    for (std::size_t i = s.begin(id); i < s.end(id); ++i)
      for (int c = 0; c < nc; ++c) {
        const int q = src[std::size_t(c)];
        *out++ = q >= 0    ? s.prop(q)[i]
                 : q == -1 ? double(id + 1)
                 : q == -2 ? rank
                           : double(s.tag()[i]);
      }
}

void from_file(ParticleSet& s, const std::vector<std::string>& names,
               const std::vector<double>& values) {
  const auto props = s.prop_names();
  std::vector<std::size_t> col(props.size());
  for (std::size_t q = 0; q < props.size(); ++q) {
    const auto it = std::find(names.begin(), names.end(), props[q]);
    if (it == names.end())
      throw Error("particles: the file has no particle property '" + props[q] + "'");
    col[q] = std::size_t(it - names.begin());
  }
  const auto it = std::find(names.begin(), names.end(), "tag");
  if (it == names.end()) throw Error("particles: the file has no particle property 'tag'");
  const std::size_t tc = std::size_t(it - names.begin()), nc = names.size();
  s.reserve(s.size() + values.size() / nc);
  std::vector<double> v(props.size());
  for (std::size_t at = 0; at + nc <= values.size(); at += nc) {
    for (std::size_t q = 0; q < props.size(); ++q) v[q] = values[at + col[q]];
    s.push(v.data(), static_cast<std::int64_t>(values[at + tc]));
  }
}

}  // namespace tessera::particles

// Rules units share about their own variables (see field_rules.hpp).
#include "physics/field_rules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"

namespace tessera::physics {

void band_votes(mesh::Mesh& m, const std::vector<int>& vars, double above, double below,
                std::vector<mesh::Flag>& votes) {
  const auto& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      const auto u = m.view(id, tag);
      double hi = -std::numeric_limits<double>::max();
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (int v : vars) hi = std::max(hi, u(v, i, j, k));
      });
      votes[id] = hi > above   ? mesh::Flag::refine
                  : hi < below ? mesh::Flag::derefine
                               : mesh::Flag::keep;
    }
  });
}

std::array<std::array<bool, 2>, 3> faces_named(const std::string& key,
                                               const std::vector<std::string>& names) {
  std::array<std::array<bool, 2>, 3> on{};
  for (const auto& f : names) {
    if (f.size() != 2 || std::string("xyz").find(f[0]) == std::string::npos ||
        (f[1] != 'l' && f[1] != 'r'))
      throw Error(key + ": unknown face '" + f + "' (xl, xr, yl, yr, zl, zr)");
    on[std::size_t(f[0] - 'x')][f[1] == 'r'] = true;
  }
  return on;
}

BadZone first_non_finite(mesh::Mesh& m, const std::vector<int>& vars,
                         const std::vector<std::string>& names) {
  BadZone bad;
  const auto& s = m.shape();
  m.with_layout([&](auto tag) {
    for (int id : m.local_leaves()) {
      if (bad.bad()) return;
      const auto u = m.view(id, tag);
      // First a branch-free pass over the block (x - x is 0 for a finite x, NaN for inf
      // and NaN; an int OR, which vectorises where a double sum would not); only a block
      // that fails it is searched zone by zone for the first bad value, in the order below.
      int nonfinite = 0;
      for (const int v : vars)
        for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
          for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) {
            const auto r = u.row(v, j, k);
            for (int i = s.g(0); i < s.g(0) + s.ni(0); ++i)
              nonfinite |= (r[i] - r[i] == 0.0) ? 0 : 1;
          }
      if (nonfinite == 0) continue;
      mesh::for_each_zone(s, [&](int i, int j, int k) {
        for (std::size_t q = 0; q < vars.size() && !bad.bad(); ++q)
          if (!std::isfinite(u(vars[q], i, j, k))) {
            bad.node = id;
            bad.i = i - s.g(0);
            bad.j = j - s.g(1);
            bad.k = k - s.g(2);
            bad.value = u(vars[q], i, j, k);
            bad.what = names[q];
          }
      });
    }
  });
  return bad;
}

}  // namespace tessera::physics

#include "io/mesh_output.hpp"

#include <limits>
#include <nlohmann/json.hpp>

#include "io/flash_file.hpp"
#include "perf/timers.hpp"

namespace tessera::io {

namespace {
const char* kAxis = "xyz";

// FLASH's PARAMESH block-face codes for physical boundaries.
int bc_code(mesh::Boundary b) {
  return b == mesh::Boundary::reflecting ? -31 : -32;
}
}  // namespace

memory::ArenaAllocator<double> staging_allocator(const base::Params& p) {
  return memory::ArenaAllocator<double>("staging", memory::config_for(p, "staging"));
}

std::size_t snapshot_bytes(const mesh::Mesh& m, std::size_t nvars) {
  std::size_t rows = 0;
  for (const auto& n : m.tree().nodes()) rows += n.owner == m.rank();
  return rows * m.shape().interior_cells() * nvars * sizeof(double);
}

FlashFileSpec mesh_file_spec(const mesh::Mesh& m, const base::Params& p, bool double_precision,
                             const std::vector<OutputVar>& vars, const OutputInfo& info,
                             bool deferred) {
  TESSERA_REGION("io/snapshot");
  const auto& t = m.tree();
  const int nd = m.ndim(), nx = m.nxb(), N = t.size();
  FlashFileSpec f;
  f.double_precision = double_precision;
  f.ndim = nd;
  f.nxb = nx;
  f.nyb = nd > 1 ? nx : 1;
  f.nzb = nd > 2 ? nx : 1;
  const int ncol = 2 * nd + 1 + (1 << nd);
  f.refine_level.resize(N);
  f.node_type.resize(N);
  f.gid.assign(std::size_t(N) * ncol, -1);
  f.bounding_box.resize(std::size_t(N) * 6);
  f.coordinates.resize(std::size_t(N) * 3);
  f.block_size.resize(std::size_t(N) * 3);
  f.processor_number.resize(N);
  for (int b = 0; b < N; ++b) {
    const auto& n = t.node(b);
    f.refine_level[b] = n.level + 1;
    if (n.leaf()) {
      f.node_type[b] = 1;
    } else {
      bool leaf_child = false;
      for (int c = 0; c < (1 << nd); ++c) leaf_child |= t.node(n.child[c]).leaf();
      f.node_type[b] = leaf_child ? 2 : 3;
    }
    const auto lo = t.block_lo(b);
    const auto w = t.block_size(b);
    for (int a = 0; a < 3; ++a) {
      f.bounding_box[b * 6 + a * 2] = lo[a];
      f.bounding_box[b * 6 + a * 2 + 1] = lo[a] + w[a];
      f.coordinates[b * 3 + a] = lo[a] + 0.5 * w[a];
      f.block_size[b * 3 + a] = w[a];
    }
    f.processor_number[b] = n.owner;
    int* g = f.gid.data() + std::size_t(b) * ncol;
    for (int a = 0; a < nd; ++a)
      for (int side = 0; side < 2; ++side) {
        mesh::IVec q = n.pos;
        q[a] += side ? 1 : -1;
        int v;
        if (t.outside(n.level, q)) {
          v = bc_code(m.boundary(a, side));
        } else {
          const int nb = t.find(n.level, q);
          v = nb >= 0 ? nb + 1 : -1;
        }
        g[2 * a + side] = v;
      }
    g[2 * nd] = n.parent >= 0 ? n.parent + 1 : -1;
    for (int c = 0; c < (1 << nd); ++c) g[2 * nd + 1 + c] = n.leaf() ? -1 : n.child[c] + 1;
  }

  // Parameters: every declared key under its full name, then the FLASH names readers need.
  for (const auto* s : p.all()) {
    switch (s->type) {
      case base::ParamType::Int: {
        // FLASH's "integer runtime parameters" are 32-bit: a value beyond goes, as its
        // decimal text, into the string ones, which a restart reads back (issue 48: a seed
        // of 3e9 came back as -1294967296, 2^32 + 7 as 7).
        const std::int64_t v = std::get<std::int64_t>(s->value);
        if (v >= std::numeric_limits<std::int32_t>::min() &&
            v <= std::numeric_limits<std::int32_t>::max())
          f.int_runtime.emplace_back(s->key, static_cast<int>(v));
        else
          f.str_runtime.emplace_back(s->key, std::to_string(v));
        break;
      }
      case base::ParamType::Real:
        f.real_runtime.emplace_back(s->key, std::get<double>(s->value));
        break;
      case base::ParamType::Bool:
        f.log_runtime.emplace_back(s->key, std::get<bool>(s->value));
        break;
      case base::ParamType::String:
        f.str_runtime.emplace_back(s->key, std::get<std::string>(s->value));
        break;
      case base::ParamType::StringList: {
        std::string joined;
        for (const auto& x : std::get<std::vector<std::string>>(s->value))
          joined += (joined.empty() ? "" : ",") + x;
        f.str_runtime.emplace_back(s->key, joined);
        break;
      }
    }
  }
  const auto& geo = t.geometry();
  for (int a = 0; a < 3; ++a) {
    const std::string ax(1, kAxis[a]);
    f.real_runtime.emplace_back(ax + "min", geo.lo[a]);
    f.real_runtime.emplace_back(ax + "max", geo.hi[a]);
    const char* names[3] = {"periodic", "reflecting", "outflow"};
    for (int side = 0; side < 2; ++side) {
      const auto b = m.boundary(a, side);
      f.str_runtime.emplace_back(
          ax + (side ? "r" : "l") + "_boundary_type",
          names[b == mesh::Boundary::periodic ? 0 : (b == mesh::Boundary::reflecting ? 1 : 2)]);
    }
  }
  f.int_runtime.emplace_back("nblockx", geo.nroot[0]);
  f.int_runtime.emplace_back("nblocky", geo.nroot[1]);
  f.int_runtime.emplace_back("nblockz", geo.nroot[2]);
  f.int_runtime.emplace_back("lrefine_min", m.lrefine_min());
  f.int_runtime.emplace_back("lrefine_max", m.lrefine_max());
  // FLASH's `gamma` describes a gamma-law gas only: a Helmholtz file does not carry one.
  if (p.has("eos.type") && p.get_string("eos.type") == "gamma")
    f.real_runtime.emplace_back("gamma", p.get_real("eos.gamma"));
  f.str_runtime.emplace_back("geometry", mesh::geometry_name(m.geometry()));
  f.str_runtime.emplace_back("unitsystem", "cgs");

  f.real_scalars = {{"time", info.time}, {"dt", info.dt}};
  f.int_scalars = {{"nxb", f.nxb},         {"nyb", f.nyb},       {"nzb", f.nzb},
                   {"globalnumblocks", N}, {"nstep", info.step}, {"dimensionality", nd},
                   {"nprocs", m.nranks()}};
  f.str_scalars = {{"geometry", mesh::geometry_name(m.geometry())}};
  for (const auto& kv : info.int_state) f.int_scalars.push_back(kv);
  for (const auto& kv : info.real_state) f.real_scalars.push_back(kv);
  for (const auto& kv : info.str_state) f.str_scalars.push_back(kv);

  // This rank's rows: every node it owns, in file (canonical) order.
  for (int b = 0; b < N; ++b)
    if (t.node(b).owner == m.rank()) f.local_rows.push_back(b);
  for (const auto& v : vars) f.var_names.push_back(v.name);
  auto capture = [vars, alloc = staging_allocator(p)](FlashFileSpec& s) {
    TESSERA_REGION("io/snapshot/copy");
    const std::size_t cells = std::size_t(s.nxb) * s.nyb * s.nzb;
    const std::size_t rows = s.local_rows.size();
    {
      TESSERA_REGION("io/snapshot/alloc");
      s.data = memory::ArenaVector<double>(alloc);
      s.data.resize(vars.size() * rows * cells);
    }
    // Block by block, every variable of a block in turn: the block's slot is one
    // contiguous range of unk, read once in address order.
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t v = 0; v < vars.size(); ++v)
        if (vars[v].fill) vars[v].fill(s.local_rows[r], s.data.data() + (v * rows + r) * cells);
  };
  if (deferred)
    f.capture = std::move(capture);
  else
    capture(f);
  return f;
}

}  // namespace tessera::io

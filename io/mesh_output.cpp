#include "io/mesh_output.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
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
  // The room the snapshot asks for (memory::snapshot_room), which the budget holds.
  return memory::snapshot_room(rows * m.shape().interior_cells() * nvars) * sizeof(double);
}

RuntimeLists runtime_lists(const mesh::Mesh& m, const base::Params& p) {
  RuntimeLists r;
  const auto& t = m.tree();
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
          r.int_runtime.emplace_back(s->key, static_cast<int>(v));
        else
          r.str_runtime.emplace_back(s->key, std::to_string(v));
        break;
      }
      case base::ParamType::Real:
        r.real_runtime.emplace_back(s->key, std::get<double>(s->value));
        break;
      case base::ParamType::Bool:
        r.log_runtime.emplace_back(s->key, std::get<bool>(s->value));
        break;
      case base::ParamType::String:
        r.str_runtime.emplace_back(s->key, std::get<std::string>(s->value));
        break;
      case base::ParamType::StringList: {
        std::string joined;
        for (const auto& x : std::get<std::vector<std::string>>(s->value))
          joined += (joined.empty() ? "" : ",") + x;
        r.str_runtime.emplace_back(s->key, joined);
        break;
      }
    }
  }
  const auto& geo = t.geometry();
  for (int a = 0; a < 3; ++a) {
    const std::string ax(1, kAxis[a]);
    r.real_runtime.emplace_back(ax + "min", geo.lo[a]);
    r.real_runtime.emplace_back(ax + "max", geo.hi[a]);
    const char* names[3] = {"periodic", "reflecting", "outflow"};
    for (int side = 0; side < 2; ++side) {
      const auto b = m.boundary(a, side);
      r.str_runtime.emplace_back(
          ax + (side ? "r" : "l") + "_boundary_type",
          names[b == mesh::Boundary::periodic ? 0 : (b == mesh::Boundary::reflecting ? 1 : 2)]);
    }
  }
  r.int_runtime.emplace_back("nblockx", geo.nroot[0]);
  r.int_runtime.emplace_back("nblocky", geo.nroot[1]);
  r.int_runtime.emplace_back("nblockz", geo.nroot[2]);
  r.int_runtime.emplace_back("lrefine_min", m.lrefine_min());
  r.int_runtime.emplace_back("lrefine_max", m.lrefine_max());
  // FLASH's `gamma` describes a gamma-law gas only: a Helmholtz file does not carry one.
  if (p.has("eos.type") && p.get_string("eos.type") == "gamma")
    r.real_runtime.emplace_back("gamma", p.get_real("eos.gamma"));
  r.str_runtime.emplace_back("geometry", mesh::geometry_name(m.geometry()));
  r.str_runtime.emplace_back("unitsystem", "cgs");
  return r;
}

namespace {

// The tree's datasets of a file (refine level, node type, gid, bounding boxes,
// coordinates, block sizes, owners) from tree t; bc: the FLASH code of each face
// (2 axis + side).
void describe_tree(FlashFileSpec& f, const mesh::Tree& t, const std::array<int, 6>& bc) {
  TESSERA_REGION("io/describe_tree");
  const int nd = f.ndim, N = t.size();
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
          v = bc[2 * a + side];
        } else {
          const int nb = t.find(n.level, q);
          v = nb >= 0 ? nb + 1 : -1;
        }
        g[2 * a + side] = v;
      }
    g[2 * nd] = n.parent >= 0 ? n.parent + 1 : -1;
    for (int c = 0; c < (1 << nd); ++c) g[2 * nd + 1 + c] = n.leaf() ? -1 : n.child[c] + 1;
  }
}

void copy_runtime(FlashFileSpec& f, const RuntimeLists& r) {
  f.int_runtime = r.int_runtime;
  f.real_runtime = r.real_runtime;
  f.str_runtime = r.str_runtime;
  f.log_runtime = r.log_runtime;
}

}  // namespace

FlashFileSpec mesh_file_spec(const mesh::Mesh& m, const base::Params& p, bool double_precision,
                             const std::vector<std::string>& var_names, const OutputInfo& info,
                             bool deferred, BlockFill fill_block, const StartCapture& start) {
  if (!var_names.empty() && !fill_block)
    throw Error("mesh_file_spec: variables without the copy that fills them");
  TESSERA_REGION("io/snapshot");
  const auto& t = m.tree();
  const int nd = m.ndim(), nx = m.nxb(), N = t.size();
  FlashFileSpec f;
  f.double_precision = double_precision;
  f.ndim = nd;
  f.nxb = nx;
  f.nyb = nd > 1 ? nx : 1;
  f.nzb = nd > 2 ? nx : 1;
  // This rank's rows: every node it owns, in file (canonical) order.
  for (int b = 0; b < N; ++b)
    if (t.node(b).owner == m.rank()) f.local_rows.push_back(b);
  f.var_names = var_names;
  // The copy of the variables: it fills `data` of the spec it is given and reads nothing
  // else of it (the rows and the shape are its own), so an output manager may run it on a
  // scratch spec while this function goes on (start).
  auto capture = [nvars = var_names.size(), fill_block = std::move(fill_block),
                  rows_of = f.local_rows, cells = std::size_t(f.nxb) * f.nyb * f.nzb,
                  alloc = staging_allocator(p)](FlashFileSpec& s) {
    TESSERA_REGION("io/snapshot/copy");
    const std::size_t rows = rows_of.size();
    {
      // Room rounded up to 4 significant bits (steps of 1/8 to 1/16): the staging arena's
      // spares (memory::detail) serve the next snapshot when it fits, so a mesh that grows
      // a little between outputs asks for the same room and costs no new mapping, whose
      // page zeroing the step loop would wait for (bubble, 1 rank: 0.09 ms a checkpoint).
      TESSERA_REGION("io/snapshot/alloc");
      const std::size_t n = nvars * rows * cells;
      s.data = memory::ArenaVector<double>(alloc);
      s.data.reserve(memory::snapshot_room(n));
      s.data.resize(n);  // default-initialised: every element is written below
    }
    // Block by block, every variable of a block in turn: the block's slot is one
    // contiguous range of unk, read once in address order.
    if (fill_block)
      for (std::size_t r = 0; r < rows; ++r)
        fill_block(rows_of[r], s.data.data() + r * cells, rows * cells);
  };
  // Deferred: handed to the output manager now if it takes it (start), else with the spec.
  const bool started = deferred && start && start(capture);
  std::array<int, 6> bc{};
  for (int a = 0; a < nd; ++a)
    for (int side = 0; side < 2; ++side) bc[2 * a + side] = bc_code(m.boundary(a, side));
  if (started && info.runtime) {
    // The copy runs on the I/O thread already: the description of the tree and the
    // parameter lists follow it there, from a copy of the tree (the step loop may
    // regrid once it has waited for the copy).
    f.describe = [tree = std::make_shared<const mesh::Tree>(t), bc,
                  runtime = info.runtime](FlashFileSpec& s) {
      describe_tree(s, *tree, bc);
      copy_runtime(s, *runtime);
    };
  } else {
    describe_tree(f, t, bc);
    copy_runtime(f, info.runtime ? *info.runtime : runtime_lists(m, p));
  }

  f.real_scalars = {{"time", info.time}, {"dt", info.dt}};
  f.int_scalars = {{"nxb", f.nxb},         {"nyb", f.nyb},       {"nzb", f.nzb},
                   {"globalnumblocks", N}, {"nstep", info.step}, {"dimensionality", nd},
                   {"nprocs", m.nranks()}};
  f.str_scalars = {{"geometry", mesh::geometry_name(m.geometry())}};
  for (const auto& kv : info.int_state) f.int_scalars.push_back(kv);
  for (const auto& kv : info.real_state) f.real_scalars.push_back(kv);
  for (const auto& kv : info.str_state) f.str_scalars.push_back(kv);

  if (deferred && !started) f.capture = std::move(capture);
  if (!deferred) capture(f);
  return f;
}

}  // namespace tessera::io

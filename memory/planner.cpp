// Memory planner: what a run holds per rank, derived from the code that allocates it.
// Notation below: d = mesh.ndim, nx = mesh.nxb, g = guard zones (2 for PLM, 3 for PPM),
// n = nx + 2g, C = n^d cells per block array, I = nx^d interior cells, F = nx^(d-1)
// cells per block face, V = variables in unk (the units' declarations), Vf = flux
// variables, M = mesh.maxblocks, B = blocks held by
// a rank (leaves and parents), L = leaves held by a rank, N = nodes in the (replicated)
// tree, P = ranks.
#include "memory/planner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/params.hpp"
#include "base/size.hpp"
#include "memory/arena.hpp"

namespace tessera::memory {

namespace {

/// Bytes per global tree node a regrid holds beside the tree (mesh/regrid.cpp): on an
/// adaptive mesh the rebuilt tree (a copy of nodes + index) with origin, kind, flags and
/// new slots (14 bytes a node); with mesh.balance = "cost" the weighted candidate and the
/// weights (16) too, on one level as well (a copy and the candidate, 14 + 16).
double regrid_bytes_per_node(double tree, bool amr, bool cost) {
  return amr ? tree + 14 + (cost ? tree + 16 : 0.0) : (cost ? 2 * tree + 30 : 0.0);
}

using namespace detail;

std::int64_t int_or(const base::Params& p, const std::string& k, std::int64_t def) {
  return p.has(k) ? p.get_int(k) : def;
}
std::string string_or(const base::Params& p, const std::string& k, const std::string& def) {
  return p.has(k) ? p.get_string(k) : def;
}
bool bool_or(const base::Params& p, const std::string& k, bool def) {
  return p.has(k) ? p.get_bool(k) : def;
}
double real_or(const base::Params& p, const std::string& k, double def) {
  return p.has(k) ? p.get_real(k) : def;
}

// Everything the formulas need, read once from the parameters.
struct Model {
  int ndim = 3, nx = 16, ng = 2, nvar = 5, nflux = 5;
  std::vector<Declared::ArenaNeed> unit_arenas;
  double C = 0, I = 0, F = 0;
  long maxblocks = 1;
  double roots = 1;
  int lrefine_min = 1, lrefine_max = 1;
  double full_tree_nodes = 1;
  bool round_robin = false;
  bool cost = false;  ///< mesh.balance = "cost"
  int nranks = 1;
  ArenaConfig unk, flux, scratch, staging, particles;
  bool checkpoints = true, plotfiles = true;
  int checkpoint_vars = 5, plot_vars = 7;
  int plot_stored_vars = 5;  ///< unk variables a plotfile snapshot copies
  bool async = false;
  std::size_t async_budget = 0;
  double baseline = 0;
  int children() const { return 1 << ndim; }
  // FlashFileSpec tree arrays per node (io/flash_file.hpp): refine_level, node_type,
  // processor_number (int each), gid (2d + 1 + 2^d ints), bounding_box (6 doubles),
  // coordinates and block_size (3 doubles each), plus check_rows' int count.
  double tree_array_bytes() const {
    return 4.0 * (3 + (2 * ndim + 1 + children()) + 1) + 8.0 * (6 + 3 + 3);
  }
};

Model model_from(const base::Params& p, const Declared& dcl, int nranks) {
  Model m;
  m.ndim = static_cast<int>(int_or(p, "mesh.ndim", 3));
  m.nx = static_cast<int>(int_or(p, "mesh.nxb", 16));
  m.ng = dcl.nguard;
  m.nvar = static_cast<int>(dcl.unk_vars.size());
  m.nflux = dcl.nflux;  // 0: no unit stores fluxes, no register is mapped
  m.unit_arenas = dcl.arenas;
  m.checkpoint_vars = static_cast<int>(dcl.unk_vars.size() + dcl.derived_vars.size());
  m.plot_stored_vars = m.nvar;
  const double n = m.nx + 2.0 * m.ng;
  m.C = std::pow(n, m.ndim);
  m.I = std::pow(double(m.nx), m.ndim);
  m.F = std::pow(double(m.nx), m.ndim - 1);
  m.maxblocks = static_cast<long>(int_or(p, "mesh.maxblocks", 4000));
  m.roots = 1;
  const char* nb[3] = {"mesh.nblockx", "mesh.nblocky", "mesh.nblockz"};
  for (int a = 0; a < m.ndim; ++a) m.roots *= double(int_or(p, nb[a], 1));
  m.lrefine_min = static_cast<int>(int_or(p, "mesh.lrefine_min", 1));
  m.lrefine_max = static_cast<int>(int_or(p, "mesh.lrefine_max", 1));
  // Every block refined down to lrefine_max: roots * sum_{l<Lmax} 2^(d l).
  m.full_tree_nodes = 0;
  for (int l = 0; l < m.lrefine_max; ++l) m.full_tree_nodes += m.roots * std::pow(2.0, m.ndim * l);
  m.round_robin = string_or(p, "mesh.distribution", "morton") == "round_robin";
  m.cost = string_or(p, "mesh.balance", "blocks") == "cost";
  m.nranks = nranks;
  m.unk = config_for(p, "unk");
  m.flux = config_for(p, "flux");
  m.scratch = config_for(p, "scratch");
  m.particles = config_for(p, "particles");
  m.staging = config_for(p, "staging");

  const bool final = bool_or(p, "io.write_final", true);
  m.checkpoints = final || int_or(p, "io.checkpoint_interval_steps", 0) > 0 ||
                  real_or(p, "io.checkpoint_interval_time", 0) > 0 ||
                  real_or(p, "io.checkpoint_interval_wall", 0) > 0;
  m.plotfiles = final || int_or(p, "io.plotfile_interval_steps", 0) > 0 ||
                real_or(p, "io.plotfile_interval_time", 0) > 0;
  if (p.has("io.plot_vars")) {
    // driver/simulation.cpp write(): the step loop copies the unk variables a file names,
    // or all of them when it names a derived one (derived ones are computed from them).
    // "unk" (every unk variable its unit plots) is counted as all of unk: an upper bound.
    const auto names = p.get_string_list("io.plot_vars");
    m.plot_vars = 0;
    bool derived = false;
    for (const auto& n : names) {
      if (n == "unk") {
        m.plot_vars += m.nvar;
        continue;
      }
      ++m.plot_vars;
      derived |= std::find(dcl.unk_vars.begin(), dcl.unk_vars.end(), n) == dcl.unk_vars.end();
    }
    m.plot_stored_vars = derived ? m.nvar : m.plot_vars;
  }
  m.async = bool_or(p, "io.async", false);
  if (m.async && p.has("io.async_budget")) {
    try {
      m.async_budget = parse_bytes(p.get_string("io.async_budget"));
    } catch (const Error& e) {
      throw Error(std::string("io.async_budget: ") + e.what());
    }
  }
  m.baseline = double(current_rss_bytes());
  return m;
}

struct Item {
  std::string name;
  double bytes = 0;
  std::string phase;      ///< "steady", "step", "regrid", "checkpoint", "plotfile", "restart"
  std::string residency;  ///< measured | prefaulted | touched | transient
  std::string scales;     ///< what it grows with
  bool in_rss = true;
  bool counted = true;  ///< false: shown for information, not in the totals
  std::string formula;
};

// The items of a rank that holds B blocks (L leaves) of an N-node tree, with M slots.
std::vector<Item> items_for(const Model& m, double M, double B, double N) {
  std::vector<Item> out;
  const double V = m.nvar, d = m.ndim, ng = m.ng;
  // Leaves: each refinement turns 1 leaf into 2^d, so L/N -> (2^d - 1)/2^d.
  const double leaves_total =
      N <= m.roots ? N : m.roots + (N - m.roots) * (m.children() - 1) / m.children();
  const double L = N > 0 ? B * leaves_total / N : 0;
  const bool multi = m.nranks > 1;

  out.push_back({"process baseline", m.baseline, "steady", "measured", "fixed", true, true,
                 "VmRSS of this process at plan time (libraries, MPI, parameters)"});

  // An arena item: mapped size under its policy (Arena::mapped_size), pre-faulted when it
  // is created, out of VmRSS if hugetlb.
  auto arena_item = [&](const std::string& name, double bytes, const ArenaConfig& c,
                        const std::string& scales, const std::string& formula) {
    const std::string page =
        c.policy == PagePolicy::none
            ? std::string("base page")
            : page_size_text(c.policy == PagePolicy::thp ? thp_size() : c.hugepage_size);
    out.push_back(
        {name + " arena (" + to_string(c.policy) + ")",
         double(Arena::mapped_size(static_cast<std::size_t>(bytes), c.policy, c.hugepage_size)),
         "steady", "prefaulted", scales, c.policy != PagePolicy::hugetlb, true,
         formula + " rounded to the " + page + " size"});
  };

  // mesh/block_storage.cpp: Arena "unk" of M * C * V doubles.
  arena_item("unk", M * m.C * V * 8, m.unk, "maxblocks", "M*C*V*8");

  // mesh/flux_register.cpp: Arena "flux" of M * 6 * F * Vf doubles: six faces per slot in
  // every dimensionality, room for the most flux variables one operator stores.
  arena_item("flux", M * 6 * m.F * m.nflux * 8, m.flux, "maxblocks",
             fmt::format("M*6*F*{}*8", m.nflux));

  // The units' own arenas, as they declare them (physics::Unit::memory_needs); an item
  // with no page-policy config is plain memory (the Helmholtz table, say).
  // Particles scale with the blocks the rank holds (bytes_per_block), and their outputs'
  // copies are transient items of their phase.
  for (const auto& a : m.unit_arenas) {
    const double bytes = a.multi_rank && !multi
                             ? 0.0
                             : a.bytes + a.bytes_per_slot * M + a.bytes_per_block * B +
                                   a.bytes_shared / double(m.nranks);
    const std::string scales = a.bytes_shared > 0      ? "ranks"
                               : a.bytes_per_block > 0 ? "blocks"
                               : a.bytes_per_slot > 0  ? "maxblocks"
                                                       : "declared by its unit";
    if (a.phase != "steady") {
      out.push_back({a.name, bytes, a.phase, "transient", scales, true, true, a.formula});
      continue;
    }
    if (a.config.empty()) {
      out.push_back({a.name, bytes, "steady", "touched", scales, true, true, a.formula});
      continue;
    }
    const ArenaConfig& c = a.config == "scratch"     ? m.scratch
                           : a.config == "unk"       ? m.unk
                           : a.config == "particles" ? m.particles
                                                     : m.flux;
    arena_item(a.name, bytes, c, scales, a.formula);
  }

  // mesh/tree.hpp: nodes_ (sizeof(Node) each) + index_ (hash node + 2 buckets) on every
  // rank, Mesh::slot_ (int per node) and Mesh::work_ (double per node).
  const double tree_per_node = kTreeBytesPerNode;
  out.push_back({"tree metadata (replicated)", N * tree_per_node, "steady", "touched", "tree nodes",
                 true, true,
                 fmt::format("N*{} (Node {}, index {}, slot 4, work 8)", tree_per_node, kNodeBytes,
                             kIndexBytesPerNode)});

  // mesh/mesh.cpp build_guard_plan: per local leaf one op per neighbour direction
  // (3^d - 1; split into children at finer neighbours), sizeof(TransferOp) each, vector
  // capacity ~1.5x size on average; FluxRegister ops_ up to 2d per leaf; local_leaves_.
  const double dirs = std::pow(3.0, d) - 1;
  out.push_back(
      {"mesh plans", L * (1.5 * dirs * kTransferOpBytes + 2 * d * kFaceOpBytes + 4), "steady",
       "touched", "leaves", true, true,
       fmt::format("L*(1.5*{}*{} + {}*{} + 4)", dirs, kTransferOpBytes, 2 * m.ndim, kFaceOpBytes)});

  // mesh/transfer.cpp execute: per peer send (reserve + push_back) and recv (resize)
  // vectors of the guard cells that cross ranks, freed at the end of each fill. Morton
  // runs: remote cells ~ the surface of a cube of L blocks, times a shape factor, g deep;
  // round robin (or the bound): every guard cell of every leaf. Zero on one rank.
  {
    const double all_guards = L * (m.C - m.I) * V * 8;
    const double surface =
        kMortonSurfaceFactor * 2 * d * std::pow(L, (d - 1) / d) * m.F * ng * V * 8;
    const double per_dir =
        !multi ? 0 : (m.round_robin ? all_guards : std::min(all_guards, surface));
    out.push_back(
        {"guard exchange buffers", 2 * per_dir, "step", "transient", "leaves^((d-1)/d)", true, true,
         !multi ? std::string("one rank: every copy is local")
                : (m.round_robin ? "2*L*(C-I)*V*8 (round robin: all guards remote)"
                                 : fmt::format("2*{}*2d*L^((d-1)/d)*F*g*V*8 (send + recv)",
                                               kMortonSurfaceFactor))});
  }

  // mesh/mesh.cpp regrid: the rebuilt tree (a second copy of nodes + index) with origin,
  // kind, flags and new slots (~14 bytes per node) live next to the old one; blocks that
  // change owner travel as interior cells, packed on the sender and unpacked on the
  // receiver (a share kMigratingShare of L).
  // A uniform grid (lrefine_min = lrefine_max) never rebuilds its tree. With
  // mesh.balance = "cost" (more than one rank) the weights (8 bytes per node, twice) and
  // a third copy (the weighted candidate) join, on one level too.
  {
    const bool amr = m.lrefine_max > m.lrefine_min;
    const bool cost = m.cost && multi;
    const double tree_copy = N * regrid_bytes_per_node(tree_per_node, amr, cost);
    const double moving = (amr || cost) && multi ? kMigratingShare * L * m.I * V * 8 * 2 : 0;
    out.push_back(
        {"regrid: second tree", tree_copy, "regrid", "transient", "tree nodes", true, true,
         fmt::format("{}{}", amr ? fmt::format("N*({}+14)", tree_per_node) : "",
                     cost ? (amr ? fmt::format(" + N*({}+16) (cost balance)", tree_per_node)
                                 : fmt::format("N*(2*{}+30) (cost balance)", tree_per_node))
                          : (amr ? "" : "uniform grid"))});
    out.push_back({"regrid: migrating blocks", moving, "regrid", "transient", "leaves", true, true,
                   !amr && !cost ? std::string("uniform grid")
                   : multi       ? fmt::format("{}*L*I*V*8*2 (send + recv)", kMigratingShare)
                                 : std::string("one rank: nothing moves")});
  }

  // io/mesh_output.cpp mesh_file_spec: data = vars * B * I doubles (plotfiles too: they
  // are converted to f32 one variable at a time when written) + the tree arrays on every
  // rank. io/flash_writer.cpp write_variable: a plotfile's f32 copy of one variable (B*I*4)
  // and write_reals' f32 copies of the tree reals (6N*4 at most).
  const double tree_arrays = N * m.tree_array_bytes();
  // Staging buffers are arenas of their own ("staging", ArenaAllocator): mapped sizes.
  auto staged = [&](double bytes) {
    return double(Arena::mapped_size(static_cast<std::size_t>(bytes), m.staging.policy,
                                     m.staging.hugepage_size));
  };
  // driver/simulation.cpp write(): the step loop copies unk's variables (the snapshot);
  // the writer's `prepare` builds the file's variables (unk + derived) in a second buffer
  // and frees the snapshot before HDF5 opens the file.
  const double chk_data = B * m.I * m.checkpoint_vars * 8;
  const double plt_data = B * m.I * m.plot_vars * 8;
  // The snapshot asks for its size rounded up to 4 significant bits (snapshot_room).
  auto room = [](double bytes) { return double(snapshot_room(static_cast<std::size_t>(bytes))); };
  const double chk_copy = m.checkpoints ? staged(room(B * m.I * V * 8)) : 0;
  const double plt_copy = m.plotfiles ? staged(room(B * m.I * m.plot_stored_vars * 8)) : 0;
  const double chk_spec = m.checkpoints ? staged(chk_data) + tree_arrays + 4 * B : 0;
  const double plt_spec =
      m.plotfiles ? staged(plt_data) + tree_arrays + 4 * B + B * m.I * 4 + 6 * N * 4 : 0;
  const std::string chk_formula =
      fmt::format("B*I*{}*8 + N*{} (f64, unk + derived)", m.checkpoint_vars, m.tree_array_bytes());
  const std::string plt_formula = fmt::format("B*I*{}*8 + B*I*4 + N*{} (gathered f64 + f32 copy)",
                                              m.plot_vars, m.tree_array_bytes() + 24);
  // The snapshot and HDF5's own memory never coexist: the phase holds the larger.
  const double hdf5_chk = m.checkpoints ? double(kHdf5Bytes) : 0;
  const double hdf5_plt = m.plotfiles ? double(kHdf5Bytes) : 0;
  if (!m.async) {
    out.push_back({"output: checkpoint snapshot", chk_spec, "checkpoint", "transient", "blocks",
                   true, true, m.checkpoints ? chk_formula : "no checkpoints"});
    out.push_back(
        {"output: checkpoint's unk copy beyond hdf5", std::max(0.0, chk_copy - hdf5_chk),
         "checkpoint", "transient", "blocks", true, true,
         fmt::format("B*I*{}*8 less the hdf5 item (freed before the file opens)", m.nvar)});
    out.push_back({"output: plotfile snapshot", plt_spec, "plotfile", "transient", "blocks", true,
                   true, m.plotfiles ? plt_formula : "no plotfiles"});
    out.push_back({"output: plotfile's unk copy beyond hdf5", std::max(0.0, plt_copy - hdf5_plt),
                   "plotfile", "transient", "blocks", true, true,
                   fmt::format("B*I*{}*8 less the hdf5 item (freed before the file opens)",
                               m.plot_stored_vars)});
  } else {
    // io/output_manager.cpp: the step loop copies snapshots the I/O thread writes; the
    // ones in flight (at most one per kind) hold at most io.async_budget bytes of data
    // while stepping continues, and the I/O thread builds each file's variables beside
    // its snapshot. A snapshot over the budget, and the final checkpoint, are written
    // synchronously.
    double held = 0;
    if (m.checkpoints && chk_data <= double(m.async_budget)) held += chk_spec + chk_copy;
    if (m.plotfiles && plt_data <= double(m.async_budget)) held += plt_spec + plt_copy;
    held = std::min(held, 2 * double(m.async_budget) + 2 * tree_arrays);
    out.push_back({"async staging (io.async_budget " + format_bytes(double(m.async_budget)) + ")",
                   held, "steady", "prefaulted", "blocks", true, true,
                   "snapshots in flight and the files' variables built from them, at most the "
                   "budget of data each (+ their tree arrays)"});
    out.push_back(
        {"output: synchronous checkpoint", chk_spec, "checkpoint", "transient", "blocks", true,
         true, m.checkpoints ? chk_formula + "; the final one is synchronous" : "no checkpoints"});
  }

  // Writing a file also costs what the HDF5 library holds while a file is open (state,
  // metadata cache, MPI-IO file handle) and, in a checkpoint that follows a plotfile, the
  // plotfile's f32 copy of one variable: glibc keeps freed chunks under its mmap
  // threshold (at most 32 MiB) in the heap, so that copy stays resident. kHdf5Bytes and
  // how it was measured: planner.hpp.
  if (m.checkpoints || m.plotfiles) {
    const double f32_copy = B * m.I * 4;
    const double retained = m.plotfiles && f32_copy <= 32.0 * kMiB ? f32_copy : 0;
    if (m.checkpoints)
      out.push_back(
          {"output: hdf5 + heap kept from a plotfile", kHdf5Bytes + retained, "checkpoint",
           "transient", "blocks", true, true,
           fmt::format("{} (hdf5, measured on Debian 12){}", format_bytes(double(kHdf5Bytes)),
                       retained > 0 ? " + B*I*4 (f32 copy kept by malloc)" : "")});
    if (m.plotfiles)
      out.push_back({"output: hdf5 (plotfile)", double(kHdf5Bytes), "plotfile", "transient",
                     "fixed", true, true,
                     format_bytes(double(kHdf5Bytes)) + " (hdf5, measured on Debian 12)"});
  }

  // Restart (io::read_flash_metadata, io::read_flash_rows from Simulation::restore): the
  // checkpoint's tree arrays on every rank, and this rank's rows of one variable at a time
  // (each of the checkpoint_vars is read into one buffer, then copied into unk). Not part
  // of a fresh run's total.
  out.push_back(
      {"restart: own rows of one var + tree", B * m.I * 8 + tree_arrays, "restart", "touched",
       "blocks", true, false,
       fmt::format("B*I*8 + N*{} (only with --restart; not in the totals)", m.tree_array_bytes())});
  return out;
}

struct Totals {
  double steady = 0, peak = 0, peak_rss = 0, transient = 0;
  std::string peak_phase = "steady";
  std::vector<std::pair<std::string, double>> phases;  // transient bytes per phase
};

Totals totals_of(const std::vector<Item>& items) {
  Totals t;
  double steady_rss = 0;
  for (const auto& it : items) {
    if (!it.counted || it.phase != "steady") continue;
    t.steady += it.bytes;
    if (it.in_rss) steady_rss += it.bytes;
  }
  double best_rss = 0;
  for (const char* ph : {"step", "regrid", "checkpoint", "plotfile"}) {
    double sum = 0, rss = 0;
    for (const auto& it : items)
      if (it.counted && it.phase == ph) sum += it.bytes, rss += it.in_rss ? it.bytes : 0;
    t.phases.emplace_back(ph, sum);
    if (sum > t.transient) t.transient = sum, t.peak_phase = ph;
    best_rss = std::max(best_rss, rss);
  }
  t.peak = t.steady + t.transient;
  t.peak_rss = steady_rss + best_rss;
  return t;
}

// Peak per rank when every rank is full: M = B = blocks, N = blocks * P.
double full_rank_peak(const Model& m, double blocks) {
  return totals_of(items_for(m, blocks, blocks, blocks * m.nranks)).peak;
}

}  // namespace

nlohmann::json scale_table(const base::Params& p, const Declared& dcl) {
  const Model m = model_from(p, dcl, 1);
  // One rank's share of a 48-core, 32 GiB A64FX node (Ookami's FX700), and a tenth of it.
  const double share = 32.0 * 1024 * 1024 * 1024 / 48, limit = 0.1 * share;
  const bool amr = m.lrefine_max > m.lrefine_min;
  const double tree = kTreeBytesPerNode, arrays = m.tree_array_bytes();
  // Per global tree node, on every rank: what grows with the whole mesh, not the rank's part.
  struct Rep {
    const char* name;
    double per_node;
    const char* phase;
    const char* change;
  };
  const std::vector<Rep> reps = {
      {"tree (nodes, index, slot, work)", tree, "steady",
       "a distributed tree: each rank its own leaves, their parents and one layer of "
       "neighbours (p4est's forest), the Morton ranges of the others"},
      {"regrid: second tree, flags, weights", regrid_bytes_per_node(tree, amr, m.cost), "regrid",
       "rebuild only the rank's part and its neighbours; flags exchanged with neighbours "
       "(2:1 balance is local), weights as one prefix sum over ranks"},
      {"output: a snapshot's tree arrays", arrays * (m.async ? 2 : 1), "output",
       "each rank builds and writes only its own rows of refine level, gid, bounding box "
       "(hyperslabs), the row check by ranges"},
      {"restart: the checkpoint's tree arrays", arrays, "restart",
       "read the tree arrays in ranges and build the distributed tree"}};
  double steady = 0, peak = 0;
  for (const auto& r : reps) {
    if (std::string(r.phase) == "steady")
      steady += r.per_node;
    else
      peak = std::max(peak, r.per_node);
  }
  nlohmann::json j;
  j["rank_share_bytes"] = std::llround(share);
  j["limit_bytes"] = std::llround(limit);
  j["limit_rule"] = "10 % of one rank's share of a 32 GiB, 48-core A64FX node";
  nlohmann::json items = nlohmann::json::array();
  for (const auto& r : reps)
    items.push_back(
        {{"name", r.name},
         {"bytes_per_tree_node", r.per_node},
         {"phase", r.phase},
         {"passes_limit_at_tree_nodes", r.per_node > 0 ? std::llround(limit / r.per_node) : 0},
         {"what_would_change_it", r.change}});
  j["replicated"] = items;
  j["replicated_peak_bytes_per_tree_node"] = steady + peak;
  j["passes_limit_at_tree_nodes"] = std::llround(limit / (steady + peak));
  // Per rank at P ranks and N tree nodes: the replicated structures (steady + the largest
  // transient) beside the rank's share of the blocks (N / P of unk's block arrays).
  nlohmann::json rows = nlohmann::json::array();
  for (double P : {48.0, 480.0, 4800.0, 48000.0, 100000.0})
    for (double N : {1e4, 1e5, 1e6, 1e7}) {
      const double rep = N * (steady + peak), own = std::ceil(N / P) * m.C * m.nvar * 8;
      rows.push_back({{"ranks", P},
                      {"tree_nodes", N},
                      {"replicated_bytes", std::llround(rep)},
                      {"own_blocks_bytes", std::llround(own)},
                      {"replicated_over_limit", rep > limit},
                      {"replicated_share_of_rank", rep / share}});
    }
  j["table"] = rows;
  return j;
}

void print_scale(std::ostream& os, const nlohmann::json& s) {
  os << fmt::format("per-rank structures that grow with the global tree ({}: {})\n\n",
                    s.at("limit_rule").get<std::string>(),
                    format_bytes(s.at("limit_bytes").get<double>()));
  os << fmt::format("  {:<40} {:>10}  {:<8} {:>16}\n", "structure", "B/node", "phase",
                    "passes at nodes");
  for (const auto& r : s.at("replicated"))
    os << fmt::format("  {:<40} {:>10.0f}  {:<8} {:>16}\n", r.at("name").get<std::string>(),
                      r.at("bytes_per_tree_node").get<double>(), r.at("phase").get<std::string>(),
                      r.at("passes_limit_at_tree_nodes").get<long>());
  os << fmt::format(
      "\n  together (steady + the largest transient): {:.0f} B per node, past the limit from "
      "{} tree nodes on, at any rank count\n\n",
      s.at("replicated_peak_bytes_per_tree_node").get<double>(),
      s.at("passes_limit_at_tree_nodes").get<long>());
  os << fmt::format("  {:>8} {:>10} {:>14} {:>14} {:>8}\n", "ranks", "nodes", "replicated",
                    "own blocks", "> limit");
  for (const auto& r : s.at("table"))
    os << fmt::format("  {:>8.0f} {:>10.0e} {:>14} {:>14} {:>8}\n", r.at("ranks").get<double>(),
                      r.at("tree_nodes").get<double>(),
                      format_bytes(r.at("replicated_bytes").get<double>()),
                      format_bytes(r.at("own_blocks_bytes").get<double>()),
                      r.at("replicated_over_limit").get<bool>() ? "yes" : "no");
  os << "\nwhat would change each:\n";
  for (const auto& r : s.at("replicated"))
    os << "  " << r.at("name").get<std::string>() << ": "
       << r.at("what_would_change_it").get<std::string>() << '\n';
}

nlohmann::json plan_memory(const base::Params& p, const Declared& dcl, int nranks,
                           int ranks_per_node, std::size_t memory_per_node, long blocks_per_rank,
                           long total_blocks) {
  if (nranks < 1) throw Error("plan: the number of ranks must be at least 1");
  if (ranks_per_node <= 0) ranks_per_node = nranks;
  if (memory_per_node == 0) memory_per_node = read_meminfo().mem_total;
  if (memory_per_node == 0)
    throw Error("plan: memory per node not given and /proc/meminfo is unreadable");
  const Model m = model_from(p, dcl, nranks);

  // Nodes: the tree refined everywhere to lrefine_max, but no more than all slots hold;
  // or the global count given (then every rank holds its share, and at least that many
  // slots).
  if (total_blocks < 0) throw Error("plan: --blocks must be positive");
  const double given = double(total_blocks);
  const double M = total_blocks > 0 ? std::max(double(m.maxblocks), std::ceil(given / nranks))
                                    : double(m.maxblocks);
  const double N = total_blocks > 0 ? given : std::min(M * nranks, m.full_tree_nodes);
  const double B =
      blocks_per_rank > 0 ? double(blocks_per_rank) : std::min(M, std::ceil(N / nranks));
  const auto items = items_for(m, M, B, N);
  const Totals t = totals_of(items);

  // Capacity: the largest maxblocks for which ranks_per_node full ranks fit in a node.
  const double budget = double(memory_per_node) / ranks_per_node;
  long lo = 0, hi = 100000000;  // mesh.maxblocks' declared maximum
  if (full_rank_peak(m, 1) > budget) {
    hi = 0;
  } else {
    lo = 1;
    while (lo < hi) {
      const long mid = lo + (hi - lo + 1) / 2;
      if (full_rank_peak(m, double(mid)) <= budget)
        lo = mid;
      else
        hi = mid - 1;
    }
  }
  const long max_blocks = lo;
  const double per_block = (full_rank_peak(m, M + 1000) - full_rank_peak(m, M)) / 1000;

  nlohmann::json j;
  j["inputs"] = {{"nranks", nranks},
                 {"ranks_per_node", ranks_per_node},
                 {"memory_per_node", memory_per_node},
                 {"ndim", m.ndim},
                 {"nxb", m.nx},
                 {"nguard", m.ng},
                 {"nvar", m.nvar},
                 {"maxblocks", m.maxblocks},
                 {"root_blocks", m.roots},
                 {"lrefine_min", m.lrefine_min},
                 {"lrefine_max", m.lrefine_max},
                 {"nflux", m.nflux},
                 {"distribution", m.round_robin ? "round_robin" : "morton"},
                 {"unk_policy", to_string(m.unk.policy)},
                 {"hugepage_size", m.unk.hugepage_size},
                 {"checkpoint_vars", m.checkpoints ? m.checkpoint_vars : 0},
                 {"plot_vars", m.plotfiles ? m.plot_vars : 0},
                 {"async", m.async},
                 {"async_budget", m.async_budget}};
  j["assumptions"] = {{"tree_nodes", N},
                      {"full_tree_nodes", m.full_tree_nodes},
                      {"blocks_per_rank", B},
                      {"blocks_per_rank_source", blocks_per_rank > 0 ? "given"
                                                 : total_blocks > 0  ? "--blocks / ranks"
                                                                     : "estimated"},
                      {"block_array_bytes", m.C * m.nvar * 8},
                      {"migrating_share", kMigratingShare},
                      {"morton_surface_factor", kMortonSurfaceFactor}};
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& it : items)
    arr.push_back({{"name", it.name},
                   {"bytes", std::llround(it.bytes)},
                   {"phase", it.phase},
                   {"residency", it.residency},
                   {"scales", it.scales},
                   {"in_rss", it.in_rss},
                   {"counted", it.counted},
                   {"formula", it.formula}});
  j["items"] = arr;
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& [ph, b] : t.phases) phases[ph] = std::llround(b);
  j["phases"] = phases;
  j["per_rank"] = {
      {"steady_bytes", std::llround(t.steady)},     {"transient_bytes", std::llround(t.transient)},
      {"peak_bytes", std::llround(t.peak)},         {"peak_phase", t.peak_phase},
      {"peak_rss_bytes", std::llround(t.peak_rss)}, {"budget_bytes", std::llround(budget)}};
  const double node_peak = t.peak * ranks_per_node;
  j["per_node"] = {{"peak_bytes", std::llround(node_peak)},
                   {"memory_per_node", memory_per_node},
                   {"fits", node_peak <= double(memory_per_node)},
                   {"headroom_bytes", std::llround(double(memory_per_node) - node_peak)}};
  j["capacity"] = {{"max_blocks_per_rank", max_blocks},
                   {"max_blocks_per_node", max_blocks * ranks_per_node},
                   {"bytes_per_block", std::llround(per_block)},
                   {"fixed_bytes_per_rank", std::llround(full_rank_peak(m, 0))}};
  nlohmann::json notes = nlohmann::json::array();
  if (m.maxblocks > max_blocks)
    notes.push_back(fmt::format(
        "mesh.maxblocks = {} does not fit: at most {} per rank with {} "
        "ranks per node in {}",
        m.maxblocks, max_blocks, ranks_per_node, format_bytes(double(memory_per_node))));
  double hugetlb_bytes = 0;  // steady arenas in hugetlb pages (every arena shares the size)
  for (const auto& it : items)
    if (it.counted && !it.in_rss) hugetlb_bytes += it.bytes;
  if (hugetlb_bytes > 0)
    notes.push_back(fmt::format(
        "arenas in hugetlb pages: need {} free {} pages per node in the pool "
        "(tools/reserve_hugepages.sh); they are not counted in VmRSS/VmHWM",
        std::llround(std::ceil(hugetlb_bytes / double(m.unk.hugepage_size)) * ranks_per_node),
        page_size_text(m.unk.hugepage_size)));
  if (total_blocks > 0 && M > double(m.maxblocks))
    notes.push_back(
        fmt::format("--blocks {} on {} ranks: {} blocks per rank, above mesh.maxblocks "
                    "= {} (planned with that many slots)",
                    total_blocks, nranks, M, m.maxblocks));
  j["scale"] = scale_table(p, dcl);
  if (blocks_per_rank <= 0 && total_blocks <= 0 && m.lrefine_max > m.lrefine_min)
    notes.push_back(
        "AMR: blocks per rank estimated from a tree refined everywhere to lrefine_max (an upper "
        "bound); pass the expected count for a tighter plan");
  notes.push_back(
      "capacity assumes every rank full (maxblocks = blocks per rank, tree = that times the "
      "ranks); leave room for the OS and page cache");
  j["notes"] = notes;
  return j;
}

void print_plan(std::ostream& os, const nlohmann::json& plan) {
  const auto& in = plan.at("inputs");
  const auto bytes = [](const nlohmann::json& v) { return format_bytes(v.get<double>()); };
  os << fmt::format(
      "memory plan: {}-D, {}^{} zones + {} guards, {} variables, mesh.maxblocks = {}, {} rank(s), "
      "{} per node, {} per node\n",
      in.at("ndim").get<int>(), in.at("nxb").get<int>(), in.at("ndim").get<int>(),
      in.at("nguard").get<int>(), in.at("nvar").get<int>(), in.at("maxblocks").get<long>(),
      in.at("nranks").get<int>(), in.at("ranks_per_node").get<int>(),
      bytes(in.at("memory_per_node")));
  const auto& as = plan.at("assumptions");
  os << fmt::format("assuming {:.0f} tree nodes, {:.0f} blocks per rank ({})\n\n",
                    as.at("tree_nodes").get<double>(), as.at("blocks_per_rank").get<double>(),
                    as.at("blocks_per_rank_source").get<std::string>());
  os << fmt::format("  {:<40} {:>12}  {:<7} {:<11} {}\n", "per rank", "bytes", "phase", "residency",
                    "formula");
  for (const auto& it : plan.at("items")) {
    std::string name = it.at("name").get<std::string>();
    if (!it.at("counted").get<bool>()) name = "(" + name + ")";
    os << fmt::format("  {:<40} {:>12}  {:<7} {:<11} {}{}\n", name, bytes(it.at("bytes")),
                      it.at("phase").get<std::string>(), it.at("residency").get<std::string>(),
                      it.at("formula").get<std::string>(),
                      it.at("in_rss").get<bool>() ? "" : " [hugetlb: not in RSS]");
  }
  const auto& r = plan.at("per_rank");
  const auto& n = plan.at("per_node");
  const auto& c = plan.at("capacity");
  os << '\n'
     << fmt::format("  {:<40} {:>12}\n", "steady", bytes(r.at("steady_bytes")))
     << fmt::format("  {:<40} {:>12}\n", "peak (" + r.at("peak_phase").get<std::string>() + ")",
                    bytes(r.at("peak_bytes")))
     << fmt::format("  {:<40} {:>12}\n", "peak RSS expected (VmHWM)", bytes(r.at("peak_rss_bytes")))
     << fmt::format("  {:<40} {:>12}  of {} ({})\n", "per node", bytes(n.at("peak_bytes")),
                    bytes(n.at("memory_per_node")),
                    n.at("fits").get<bool>() ? "fits" : "DOES NOT FIT")
     << fmt::format(
            "\ncapacity: {} blocks per rank, {} per node ({} per block, {} fixed per rank)\n",
            c.at("max_blocks_per_rank").get<long>(), c.at("max_blocks_per_node").get<long>(),
            bytes(c.at("bytes_per_block")), bytes(c.at("fixed_bytes_per_rank")));
  for (const auto& note : plan.at("notes")) os << "note: " << note.get<std::string>() << '\n';
}

}  // namespace tessera::memory

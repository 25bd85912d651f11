#pragma once
// The memory planner (`tessera plan`): per-rank bytes of a run predicted from its
// parameters, item by item, and how many blocks fit in a node's memory.
//
// Every item says when its memory becomes resident, because that decides what a
// measured peak RSS (VmHWM) sees:
//   "measured"   - the process baseline: this process's RSS when the plan is made
//                  (libraries, MPI, parameters), the same binary after MPI_Init;
//   "prefaulted" - an arena, written page by page when it is created (its full size);
//   "touched"    - a std::vector that is value-initialised when allocated (full size
//                  from its first use, kept for the run);
//   "transient"  - allocated and freed within one phase (a step's guard exchange, a
//                  regrid, an output); only the largest phase counts toward the peak.
// Items backed by hugetlb pages are marked in_rss = false: the kernel keeps hugetlb
// pages out of VmRSS/VmHWM, so a comparison with the measured peak must leave them out
// (per_rank.peak_rss_bytes does).
//
// The planner knows the allocations of mesh/ and io/ by their formulas (documented beside
// each item in planner.cpp); what the physics units put in `unk` and which arenas they map
// comes from their own declarations (Declared, filled by driver::declared()), so it runs
// before anything is allocated and mirrors no unit.
#include <cstddef>
#include <iosfwd>
#include <iterator>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tessera::base {
class Params;
}

namespace tessera::memory {

/// What the active physics units declare, as the planner needs it.
struct Declared {
  std::vector<std::string> unk_vars;      ///< every variable of unk, in unk order
  std::vector<std::string> derived_vars;  ///< derived outputs (a checkpoint writes them)
  int nguard = 2;                         ///< guard zones per side
  int nflux = 5;                          ///< flux-register variables per face
  struct ArenaNeed {
    std::string name, config;   ///< arena name; memory.pages_<config> is its policy
    double bytes = 0;           ///< per rank, fixed
    double bytes_per_slot = 0;  ///< per rank and block slot (scales with mesh.maxblocks)
    std::string formula;
    double bytes_per_block = 0;    ///< per block the rank holds (particles)
    std::string phase = "steady";  ///< steady: an arena; else a transient item of that phase
    bool multi_rank = false;       ///< only on more than one rank (a migration's buffers)
    double bytes_shared = 0;       ///< the whole run's, shared evenly by the ranks
  };
  std::vector<ArenaNeed> arenas;  ///< arenas the units map (scratch, rk_stage, ...)
};

/// Predicts per-rank memory for the run `p` describes on `nranks` ranks,
/// `ranks_per_node` of them per node (<= 0: all on one node) with `memory_per_node`
/// bytes each (0: this machine's MemTotal). `blocks_per_rank` > 0 overrides the
/// estimate of blocks a rank holds (default: the tree refined everywhere to
/// mesh.lrefine_max, capped by mesh.maxblocks, shared evenly). Reads this process's RSS
/// as the baseline, so call it in the process whose footprint the run will share (after
/// MPI_Init). Throws tessera::Error for an invalid argument or memory.* parameter.
///
/// Result: {"inputs", "assumptions", "items": [{name, bytes, phase, residency, scales,
/// in_rss, formula}], "phases", "per_rank": {steady_bytes, peak_bytes, peak_phase,
/// peak_rss_bytes, ...}, "per_node", "capacity": {max_blocks_per_rank,
/// max_blocks_per_node, bytes_per_block}, "notes"}.
nlohmann::json plan_memory(const base::Params& p, const Declared& d, int nranks, int ranks_per_node,
                           std::size_t memory_per_node, long blocks_per_rank = 0,
                           long total_blocks = 0);

/// The per-rank structures that grow with the global tree, not with the rank's part of it
/// (issue 46, item 5): bytes per tree node of each, the tree size at which each passes 10 %
/// of one rank's share of a 32 GiB, 48-core A64FX node, what would change it, and a table
/// of per-rank bytes for 48 to 10^5 ranks and 10^4 to 10^7 tree nodes. plan_memory's
/// "scale".
nlohmann::json scale_table(const base::Params& p, const Declared& d);
/// scale_table's result for people.
void print_scale(std::ostream& os, const nlohmann::json& scale);

/// The plan as a table for people (sizes via format_bytes).
void print_plan(std::ostream& os, const nlohmann::json& plan);

namespace detail {
// Sizes of the per-node structures the planner charges (x86-64, libstdc++). Unit tests
// check the first two against the real types.
inline constexpr std::size_t kNodeBytes = 56;        ///< sizeof(mesh::Node)
inline constexpr std::size_t kTransferOpBytes = 96;  ///< sizeof(mesh::TransferOp)
inline constexpr std::size_t kFaceOpBytes = 36;      ///< sizeof(mesh::FluxRegister::FaceOp)
/// Tree::index_ (unordered_map<uint64_t, int>): a 24-byte hash node in a 32-byte malloc
/// chunk, plus 8-byte buckets, reserved at 2 per node.
inline constexpr std::size_t kIndexBytesPerNode = 32 + 2 * 8;
/// The replicated tree per node: Node, index, Mesh::slot_ (int) and Mesh::work_ (double).
inline constexpr double kTreeBytesPerNode = double(kNodeBytes + kIndexBytesPerNode + 4 + 8);
/// Share of a rank's blocks assumed to change owner in one regrid (rebalancing after
/// refinement moves the Morton cut points; an estimate, not a bound).
inline constexpr double kMigratingShare = 0.25;
/// What the HDF5 library (and MPI-IO) add while a file is written, on Debian 12 (HDF5
/// 1.10, Open MPI 4.1): peak RSS of a run with a final plotfile + checkpoint minus the
/// same run without outputs, less the checkpoint's buffers (unk copy + file variables).
/// sedov_3d_uniform.toml, driver.nend=1, memory.pages=none, 4x4xN roots of 16^3, 1 rank
/// (re-measured 2026-11-21): 16/32/64 blocks -> 13.74/23.46/42.89 MiB more, of which
/// 9.50/19.00/38.00 MiB buffers -> 4.24/4.46/4.89 MiB. Recalibrate the same way elsewhere.
inline constexpr std::size_t kHdf5Bytes = 4608 * 1024;
/// A Morton run of blocks has a larger surface than a cube of the same volume; factor
/// applied to the cube's surface for remote guard cells.
inline constexpr double kMortonSurfaceFactor = 2.0;
}  // namespace detail

}  // namespace tessera::memory

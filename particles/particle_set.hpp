#pragma once
// Particles on the block mesh: per-rank structure-of-arrays storage in one arena with a
// page policy, kept sorted by (leaf in canonical tree order, tag), or by (leaf, bin, tag)
// where the owning unit bins the particles of a leaf (set_bins), so that the particles
// of one block are one contiguous range and those of a run of blocks (a rank's leaves are
// a run of the canonical order) one larger range: the batches a tiered-memory streamer
// moves. Every particle has a position, a velocity and a global integer tag; a type adds
// the real properties it declares (a PIC species its weight, say).
//
// Migration (redistribute): after particles move, or the tree changes, each goes to the
// leaf that holds its position (the tree is replicated, so that is a local lookup) on
// whichever rank owns it. Domain boundaries apply first: periodic wraps, reflecting
// mirrors the position and flips the velocity, outflow removes (counted). Ranks exchange
// only with their guard-fill peers (Mesh::peer_ranks: the owners of adjacent leaves) when
// every particle stays among them (moves bounded by the CFL condition), else through an
// all-to-all. The result is sorted
// canonically, so it does not depend on the number of ranks or on arrival order.
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memory/arena.hpp"

namespace tessera::mesh {
class Mesh;
class Tree;
}  // namespace tessera::mesh

namespace tessera::particles {

/// What a unit declares about the particles it owns, as it declares variables.
struct ParticleType {
  std::string name = "tracer";     ///< FLASH's type name ("tracer" -> `tracer particles`)
  std::vector<std::string> extra;  ///< real properties besides position and velocity
  std::string owner;               ///< the declaring unit
};

/// Indices of the properties every particle has (a type's extra ones follow).
enum Prop : int { POSX = 0, POSY, POSZ, VELX, VELY, VELZ, NBASE };

/// The leaf holding point x, or -1 if x lies outside the domain on some axis. Points on a
/// block face belong to the block above it (half-open bounds, computed as Tree::block_lo
/// computes them, so a lookup and the block's own geometry agree to the bit).
int locate(const mesh::Tree& t, const std::array<double, 3>& x);

/// x brought into [lo, hi) by whole periods hi - lo (finite x of any size; one or two
/// periods by adding them, the bits of a plain loop; further by the remainder).
double wrap_periodic(double x, double lo, double hi);

/// What one redistribute did, summed over ranks.
struct MigrateStats {
  long lost = 0;         ///< left through an outflow boundary
  long migrated = 0;     ///< went to another rank
  bool general = false;  ///< the all-to-all path was needed (some rank sent to a non-neighbour)
};

class ParticleSet {
 public:
  /// Storage in arena `arena_name` with page policy cfg (mapped on first use).
  ParticleSet(ParticleType type, memory::ArenaConfig cfg, std::string arena_name = "particles");
  ParticleSet(const ParticleSet&) = delete;
  ParticleSet& operator=(const ParticleSet&) = delete;

  const ParticleType& type() const { return type_; }
  int nprop() const { return nprop_; }
  /// Property names in storage order: posx posy posz velx vely velz, then the type's.
  std::vector<std::string> prop_names() const;
  std::size_t size() const { return n_; }  ///< this rank's particles
  std::size_t capacity() const { return cap_; }
  /// Property q of every local particle (size() values; stride 1).
  double* prop(int q) { return data_ + std::size_t(q) * cap_; }
  const double* prop(int q) const { return data_ + std::size_t(q) * cap_; }
  std::int64_t* tag() { return tag_; }
  const std::int64_t* tag() const { return tag_; }
  /// The leaf (node id) holding each local particle; valid after redistribute().
  const std::int32_t* node() const { return node_; }
  /// Particles of node id [begin, end) in storage; empty for a node not held here. Valid
  /// after redistribute() until the next change of the set or the tree.
  std::size_t begin(int id) const { return id + 1 < int(first_.size()) ? first_[id] : 0; }
  std::size_t end(int id) const { return id + 1 < int(first_.size()) ? first_[id + 1] : 0; }

  /// Remove every particle.
  void clear();
  /// Room for n particles (maps a larger arena and copies when needed).
  void reserve(std::size_t n);
  /// Append one particle (nprop() values in prop_names() order) with tag t. Its node is
  /// unknown until the next redistribute().
  void push(const double* values, std::int64_t t);

  /// Collective: boundaries, then every particle to the leaf (and rank) that holds it,
  /// then the canonical order. Call after particles moved or the tree changed.
  MigrateStats redistribute(const mesh::Mesh& m);

  /// Bins of the particles inside their nodes: bins(set, node, n, out) writes out[i] in
  /// [0, nbins) for every particle i < n of the set (storage order; node[i] and the
  /// properties current), a pure function of the particle's node and properties.
  using BinFunction = std::function<void(const ParticleSet&, const std::int32_t* node,
                                         std::size_t n, std::int32_t* out)>;
  /// From the next redistribute on, the canonical order is (node, bin, tag) instead of
  /// (node, tag): a PIC species' particles by cell, say, so that neighbours in storage are
  /// neighbours in space. An empty function restores (node, tag).
  void set_bins(int nbins, BinFunction bins);

  /// Bytes of the arena (mapped), its policy as requested and achieved.
  memory::ArenaReport report() const;
  std::size_t bytes_per_particle() const {
    return std::size_t(nprop_) * sizeof(double) + sizeof(std::int64_t) + sizeof(std::int32_t);
  }

 private:
  ParticleType type_;
  memory::ArenaConfig cfg_;
  std::string arena_name_;
  int nprop_ = NBASE;
  memory::Arena arena_;
  std::size_t n_ = 0, cap_ = 0;
  double* data_ = nullptr;
  std::int64_t* tag_ = nullptr;
  std::int32_t* node_ = nullptr;
  std::vector<std::size_t> first_;  ///< per node id: first particle; first_[id+1] ends it
  void remap(std::size_t cap);
  /// moved[i] != 0: particle i changed node (or arrived, or is new) since the last sort.
  void sort_canonical(int nnodes, const std::vector<char>& moved);
  /// The (node, bin, tag) order of set_bins into order_ (and bin_ in it); false if it is
  /// the identity.
  bool order_by_bins(int nnodes, const std::vector<char>& moved);
  /// Storage in order_'s order (every property, the tags and the nodes).
  void permute();
  int nbins_ = 0;
  BinFunction bins_;
  std::vector<std::int32_t> bin_, new_bin_;  ///< bins at the last sort (storage order), now
  struct SortKey {
    std::uint64_t key;  ///< node, then bin
    std::int64_t tag;
    std::size_t index;
  };
  std::vector<SortKey> move_;
  std::vector<std::uint64_t> key_;
  std::vector<char> mover_;
  // The large per-particle buffers, reused across redistribute calls (no page faults for
  // them per step; per-node counters are still allocated per call).
  std::vector<char> moved_;
  std::vector<std::size_t> order_;
  std::vector<std::byte> permute_buf_;
  std::vector<double> leaf_lo_, leaf_hi_;
};

}  // namespace tessera::particles

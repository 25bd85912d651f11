#pragma once
// Flux correction at fine/coarse faces (Berger & Colella 1989, "refluxing"). A kernel
// stores the fluxes through each local leaf's 2*ndim boundary faces here; after the
// update, every coarse cell next to a finer neighbour is corrected by the difference
// between the area-averaged fine flux and the coarse flux it used, so the total of every
// conserved variable changes only through the domain boundary, to round-off.
#include <mpi.h>

#include <vector>

#include "memory/arena.hpp"
#include "mesh/block_storage.hpp"
#include "mesh/geometry.hpp"
#include "mesh/tree.hpp"

namespace tessera::mesh {

class FluxRegister {
 public:
  /// Maps the arena "flux" (maxblocks * 6 faces * face_size() doubles) with policy cfg,
  /// room for `nflux` flux-carrying variables per face (0: none; nothing is mapped).
  FluxRegister(const BlockShape& s, int maxblocks, int nflux, memory::ArenaConfig cfg = {});
  /// Face `face` = 2*axis + side (side 0 = low) of slot: nflux x nt2 x nt1 doubles, where
  /// t1 < t2 are the two other axes (inactive axes count 1). Layout [f][t2][t1], f the
  /// operator's own numbering of its flux variables.
  double* face(int slot, int face) {
    return static_cast<double*>(arena_.data()) + (std::size_t(slot) * 6 + face) * face_size_;
  }
  std::size_t face_size() const { return face_size_; }
  /// This rank's slots whose zones correct() changes (coarse sides of fine/coarse faces),
  /// each once, ascending.
  const std::vector<int>& corrected_slots() const { return corrected_; }
  /// Doubles of one variable on one face.
  std::size_t per_var() const { return nflux_ > 0 ? face_size_ / std::size_t(nflux_) : 0; }

  /// Rebuild the list of fine/coarse faces for a tree. slot_of: node -> local slot / -1.
  /// In curvilinear geometry the fine fluxes are averaged by face area and the correction
  /// is dt A / V of the coarse cell (conservation of the volume integral).
  void build(const Tree& t, const std::vector<int>& slot_of, int me,
             Geometry geo = Geometry::cartesian);
  /// Collective: correct coarse cells of `storage` next to finer faces, exactly the
  /// variables `vars` (flux f of the register corrects unk variable vars[f]) that the
  /// calling operator stored. `dt_weight` is the factor the stage applied to its flux
  /// divergence (dt for a plain step). With `store_applied`, each corrected coarse face
  /// cell's entry in the register is then replaced by the area-averaged fine flux it now
  /// carries, so that every leaf's boundary faces hold the fluxes actually applied.
  void correct(BlockStorage& storage, const Tree& t, MPI_Comm comm, double dt_weight,
               const std::vector<int>& vars, bool store_applied = false);

 private:
  struct FaceOp {
    int fine_rank, coarse_rank, fine_slot, coarse_slot, coarse_node;
    int axis, coarse_side;
    int off1, off2;  ///< offset of the fine quadrant in the coarse face (coarse cells)
  };
  BlockShape shape_;
  std::size_t face_size_ = 0;
  int nflux_ = 1;
  memory::Arena arena_;  ///< zero-filled by the mapping
  std::vector<FaceOp> ops_;
  std::vector<int> corrected_;
  int me_ = 0;
  Geometry geo_ = Geometry::cartesian;
};

}  // namespace tessera::mesh

#pragma once
// Placement policies: which tier each object goes to, planned from the objects' classes,
// sizes and allocation order and the fast tier's capacity. Pure functions (no memory is
// touched); the backends (memory/tier_backend.hpp) carry the plan out.
//
//   fast_only       - everything fast (the DRAM-only baseline; says so when it overflows);
//   slow_only       - everything slow (the PM-only baseline);
//   first_touch     - what the kernel does by default: allocation order fills the fast
//                     tier page by page, the object at the boundary is split, the rest
//                     spills to slow (the study: particles, allocated first, took DRAM);
//   static          - WarpX-PM static placement (reference/tiered-memory.md, "Placement"):
//                     metadata, then temporaries, then fields, then particles, each class
//                     in allocation order, into the fast tier while they fit (first fit:
//                     an object that does not fit goes slow whole, a smaller later one may
//                     still fit; a field object is split instead, its head fast: the study
//                     places fields allocation by allocation until fast memory is full, and
//                     Tessera's fields are one arena of many block slots);
//   static_prefetch - static, plus software prefetch of the fields left slow (the plan
//                     sets prefetch = true; tier_model.hpp gives the distance);
//   dynamic         - static after reserving a migration space of THREE particle batches
//                     (batches i-1, i, i+1 coexist while helper threads copy; the paper
//                     sizes the space for one batch, which cannot hold them).
#include <cstddef>
#include <string>
#include <vector>

#include "memory/tiers.hpp"

namespace tessera::memory {

enum class PlacementPolicy { fast_only, slow_only, first_touch, static_, static_prefetch, dynamic };
/// Parses the names above; throws tessera::Error naming the bad value and the choices.
PlacementPolicy parse_placement(const std::string& text);
/// The name parse_placement accepts ("static" for static_).
const char* to_string(PlacementPolicy p);

/// One object to place, in allocation order (its index in the list).
struct TierObject {
  ObjectClass cls = ObjectClass::field;
  std::size_t bytes = 0;
  std::string name;  ///< for reports only
};

/// Where one object goes. fast_bytes + slow_bytes = the object's bytes; only first_touch
/// splits an object (tier = slow when any byte is slow).
struct ObjectPlacement {
  Tier tier = Tier::fast;
  std::size_t fast_bytes = 0, slow_bytes = 0;
};

struct PlacementPlan {
  std::vector<ObjectPlacement> objects;  ///< same order as the input
  std::size_t fast_used = 0;             ///< bytes of objects in the fast tier
  std::size_t slow_used = 0;
  std::size_t migration_bytes = 0;  ///< dynamic: fast bytes reserved for 3 batches
  bool prefetch = false;            ///< static_prefetch and dynamic: prefetch slow fields
  std::string note;                 ///< one line: what had to give (overflow, no room)
};

/// Plans `objects` under `policy` with `fast_bytes` of fast memory. `batch_bytes` is one
/// particle batch (dynamic only; 0: the largest particle object). Deterministic.
PlacementPlan plan_placement(const std::vector<TierObject>& objects, PlacementPolicy policy,
                             std::size_t fast_bytes, std::size_t batch_bytes = 0);

}  // namespace tessera::memory

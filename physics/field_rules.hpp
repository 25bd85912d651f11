#pragma once
// Small rules units share about their own unk variables: a refinement vote from a band of
// values (Unit::tag_refinement) and the first non-finite zone (Unit::check). Users: the
// example unit scalar, diffusion.
#include <array>
#include <string>
#include <vector>

#include "physics/unit.hpp"

namespace tessera::physics {

/// Votes for this rank's leaves: refine where any of `vars` exceeds `above` somewhere in
/// the block, derefine where all stay below `below`, else keep.
void band_votes(mesh::Mesh& m, const std::vector<int>& vars, double above, double below,
                std::vector<mesh::Flag>& votes);

/// Faces named as in a parameter list ("xl", "xr", "yl", "yr", "zl", "zr"): [axis][side]
/// true for each one named; an unknown name is a one-line Error naming `key`.
std::array<std::array<bool, 2>, 3> faces_named(const std::string& key,
                                               const std::vector<std::string>& names);

/// The first zone of this rank's leaves where one of `vars` is not finite; `names[q]`
/// names vars[q] in the message.
BadZone first_non_finite(mesh::Mesh& m, const std::vector<int>& vars,
                         const std::vector<std::string>& names);

}  // namespace tessera::physics

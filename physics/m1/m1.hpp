#pragma once
// Two-moment (M1) radiation transport ("m1" in driver.operators; verification.md §L): per
// species s and energy group g the radiation energy density E and flux F,
//
//   dE/dt + div F = c kappa_a (b_g a T^4 - E),   dF/dt + c^2 div P = -c (kappa_a + kappa_s) F,
//
// P = E [(1 - chi)/2 I + (3 chi - 1)/2 n n], n = F/|F|, f = |F|/(cE), with the Minerbo
// (default: chi = 1/3 + 2/5 f^2 (1 - f/3 + f^2)) or Levermore closure
// (chi = (3 + 4 f^2)/(5 + 2 sqrt(4 - 3 f^2))), or chi = 1/3 (eddington: the P1
// approximation, diffusive in character: for comparisons such as the shadow test).
//
//   transport   finite volume, PLM reconstruction of E and F (m1.reconstruction: plm_mc, the
//               MC-limited slope, or unlimited), each cell's slopes scaled down where a face
//               state would leave the realizable set (E >= 0, |F| <= cE: Olbrant et al.'s
//               slope limiter), and the Lax-Friedrichs (HLL with speeds -c, c) flux;
//               SSP-RK2 or SSP-RK3 (m1.integrator), dt = m1.cfl / (c sum_a 1/dx_a).
//               After every stage a zone outside the realizable set is put back on it (E
//               at a floor, |F| scaled to cE) and counted (summary.json
//               realizability_violations).
//   collisions  implicit per zone in every Runge-Kutta stage (IMEX: explicit transport,
//               implicit collisions with the stage's coefficient b dt): F' = F / (1 + dt c (kappa_a
//               + kappa_s)); E' = (E + dt c kappa_a b_g a T'^4) / (1 + dt c kappa_a) with a T'^4
//               linearised about T^n (the gas's temperature, gamma law) and the gas's energy
//               changed by minus the radiation's change, so that radiation + gas energy is
//               conserved to round-off (with m1.couple_gas; otherwise T = 0: absorption only). b_g
//               = 1/G (the emission split equally between the groups), per species.
//
// Variables (independent, guard-filled, MC prolongation): with one species and one group
// erad, frax, fray, fraz (F's three components whatever the dimension); with more, for
// k = s G + g, e<kkk>, x<kkk>, y<kkk>, z<kkk> (three digits: "e003" is E of species 0, group
// 3 when G >= 4). Scratch: the Runge-Kutta base of each. Timer regions m1/flux, m1/update,
// m1/collide. Cartesian 1-3-D, code units (c = m1.speed; a = m1.radiation_constant).
//
// Optically thick faces (chi dx > 1, chi = kappa_a + kappa_s) scale the LF dissipation by
// 1 / (chi dx) (m1.thick_correction; Audit et al. 2002), so that the numerical diffusion
// c dx / 2 does not swamp the physical c / (3 chi) in the diffusion limit.
// Adaptive meshes: every moment's fluxes through a block's faces go to the flux register
// and the coarse side of a coarse-fine face is corrected after each stage (weight b dt),
// so that radiation energy (plus the coupled gas's) is conserved to round-off with and
// without regrids (the prolongation and restriction conserve too).
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "physics/m1/closure.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::eos {
class EosUnit;
}

namespace tessera::m1 {

class M1 final : public physics::Unit {
 public:
  static void declare_params(base::Params& p);
  static physics::Registration registration();
  explicit M1(const base::Params& p);

  std::string name() const override { return "m1"; }
  /// E, F per species and group (checked) and the IMEX scratch; two guard zones.
  physics::Declarations declarations() const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  void initialise(mesh::Mesh& m) override;
  double max_dt(mesh::Mesh& m) const override;
  void advance(mesh::Mesh& m, double dt) override;
  physics::BadZone check(mesh::Mesh& m) const override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;
  physics::FileRecords file_records() const override;
  void restore(mesh::Mesh& m, const physics::CheckpointInfo& c) override;

  /// The variable names of moment q (0: E, 1-3: F) of species s, group g.
  static std::string var_name(int q, int s, int g, int species, int groups);
  int groups() const { return groups_; }
  int species() const { return species_; }

  /// Radiation energy summed over every species and group, and the gas's internal energy
  /// (0 without coupling), leaf-ordered (collective).
  std::array<double, 2> energies() const;

 private:
  int groups_, species_;
  Closure closure_;
  int stages_;  ///< 2: SSP-RK2, 3: SSP-RK3
  double cfl_, c_, arad_;
  bool mc_;                                ///< PLM with the MC limiter (else unlimited)
  std::vector<double> kappa_a_, kappa_s_;  ///< per group
  bool couple_;
  bool thick_fix_;  ///< m1.thick_correction
  bool adaptive_;   ///< mesh.lrefine_max > lrefine_min: fluxes go to the flux register
  mutable std::vector<std::vector<double>> chi_;  ///< a block's kappa_a + kappa_s per group
  std::array<double, 4> disk_{};  ///< an absorbing disk: x, y, z centre, radius (radius 0: none)
  double disk_kappa_ = 0;
  std::vector<std::string> beam_faces_;
  double beam_lo_ = 0, beam_hi_ = 0, beam_e_ = 1;  ///< the beam's band along the next axis
  std::vector<int> ivar_;   ///< unk index of moment q of pair k: ivar_[4 k + q]
  std::vector<int> ibase_;  ///< scratch index of the same
  int igas_base_ = -1;      ///< scratch: the gas's total energy at the step's start
  int idens_ = -1, ieint_ = -1, itemp_ = -1, ietot_ = -1, imom_[3] = {-1, -1, -1};
  const eos::EosUnit* eos_ = nullptr;
  double time_ = 0;
  int steps_ = 0;
  long violations_ = 0;
  bool restarted_ = false;
  double energy_start_ = 0, gas_start_ = 0;
  mesh::Mesh* mesh_ = nullptr;

  double kappa_a(int g, const std::array<double, 3>& x) const;
  /// One stage's right side -div(flux) of every moment of one block into rhs (per
  /// variable, the block's whole array), the guard zones of the moments filled. With
  /// `faces` (the block's six faces in the flux register, per_var doubles per moment),
  /// the fluxes through the block's faces go there too.
  template <class View>
  void block_rhs(const View& u, const mesh::BlockGeom& g, std::vector<double>& rhs,
                 double* const* faces, std::size_t per_var) const;
  bool collides() const;
  /// The implicit collisions of one block's zones over dt (and the gas's state after).
  template <class View>
  void collide_block(const View& u, const mesh::BlockGeom& geo, int id, double dt) const;
};

}  // namespace tessera::m1

#pragma once
// The EOS unit: owns the run's equation of state (eos.type: the gamma law or Helmholtz)
// and the thermodynamic variables FLASH keeps in `unk` beside the conserved ones: pres,
// temp, gamc, game, eint (auxiliary, no fluxes). Every other unit calls it through the
// pencil interface (eos.hpp); it runs the EOS over whole x-rows of a block at once (rows
// of unk in var-major storage, gathered rows in zone-major). The callers time it in
// region "eos" (hydro's fused Hancock path refreshes rows inside "fluxes"). A zone whose
// iteration does not converge is recorded (the first one, with its block, zone and
// state) and reported by check(): the driver's check after the step agrees on it over
// every rank, so no rank is left waiting in a collective.
#include <memory>
#include <string>
#include <vector>

#include "physics/eos/eos.hpp"
#include "physics/registry.hpp"
#include "physics/unit.hpp"

namespace tessera::base {
class Params;
}

namespace tessera::composition {
class Composition;
}

namespace tessera::eos {

class EosUnit final : public physics::Unit {
 public:
  /// eos.type, eos.gamma, eos.mu, eos.coulomb_mult, eos.table, eos.abar, eos.zbar.
  static void declare_params(base::Params& p);
  /// The unit's registration (physics/registry.hpp): name, factory, parameters, needs.
  static physics::Registration registration();
  /// Builds the EOS (reads the Helmholtz table); throws tessera::Error on bad input.
  explicit EosUnit(const base::Params& p);
  ~EosUnit() override;

  std::string name() const override { return "eos"; }
  /// pres, temp, gamc, game, eint (see eos_unit.cpp); the state keys of its EOS state in
  /// unk (it belongs to the EOS that wrote it: another eos.type, Helmholtz table (SHA-256)
  /// or eos.gamma recomputes it).
  physics::Declarations declarations() const override;
  /// The Helmholtz table in memory (not an arena: config "", for the planner).
  std::vector<physics::ArenaNeed> memory_needs(const std::vector<mesh::VarInfo>& unk,
                                               const mesh::BlockShape& s,
                                               long maxblocks) const override;
  void bind(mesh::Mesh& m, const physics::Services& services,
            const physics::RunContext& ctx) override;
  /// The problem (re)filled every leaf: failures recorded on earlier states (a trial
  /// refinement of the initial state, say, whose blocks the problem fills anew) are void.
  void initialise(mesh::Mesh& m) override;
  nlohmann::json diagnostics(mesh::Mesh& m, physics::Diagnostic what) const override;
  /// The string "eos_table_sha256" (Helmholtz only).
  physics::FileRecords file_records() const override {
    if (sha_.empty()) return {};
    return {.strings = {{"eos_table_sha256", sha_}}};
  }

  const Eos& eos() const { return *eos_; }
  /// "gamma" or "helmholtz".
  const std::string& type() const { return type_; }
  /// True if the EOS iterates (its temp is a guess worth guard-filling).
  bool iterative() const { return iterative_; }
  /// SHA-256 of the Helmholtz table in use ("" for the gamma law).
  const std::string& table_sha256() const { return sha_; }
  /// The Helmholtz table file in use ("" for the gamma law).
  const std::string& table_path() const { return table_path_; }

  /// Indices of the unit's variables in unk (valid after bind).
  int pres() const { return ipres_; }
  int temp() const { return itemp_; }
  int gamc() const { return igamc_; }
  int game() const { return igame_; }
  int eint() const { return ieint_; }

  /// The EOS in `mode` over one interior x-row (j, k) of local leaf `node` (view u): dens
  /// and the mode's variable are read from unk, everything else written back. No timer
  /// region (the caller's loop has one). Returns the zones of the row the cold floor
  /// raised (dens_ei only: their eint in unk is now the floor's; the caller owning the
  /// total energy makes it agree).
  template <mesh::Layout L>
  int update_row(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node, int j, int k,
                 Mode mode) const;
  /// The gas's state in every interior zone of local leaf `node` from its total energy:
  /// eint = (etot - |mom|^2 / (2 dens)) / dens, a temperature guess where temp is not
  /// positive, then dens_ei row by row. For units that change the gas's energy (the
  /// radiation couplings of diffusion and m1).
  template <mesh::Layout L>
  void from_total_energy(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node) const;
  /// True if the EOS's Gamma1 and game are the same in every state (the gamma law); then
  /// gamc and game give them.
  bool uniform_gamma() const { return uniform_; }
  double uniform_gamc() const { return uniform_gamc_; }
  double uniform_game() const { return uniform_game_; }
  /// The first EOS failure on this rank since the run started, as a bad zone.
  physics::BadZone check(mesh::Mesh& m) const override;

  /// dens_ei for `n` zones of block u given by cell number (guard zones, say): dens and
  /// eint from the caller's arrays, temperature guesses from unk's temp (or 1e7 K where
  /// it is not positive), composition from unk; pres, gamc, game and temp into the
  /// caller's arrays. A zone that does not converge is recorded (check()).
  template <mesh::Layout L>
  void eval_cells(const mesh::BlockView<L>& u, const mesh::BlockShape& s, const int* cell,
                  std::size_t n, double* dens, double* eint, double* temp, double* pres,
                  double* gamc, double* game) const;

  /// Evaluations and Newton iterations so far (this rank).
  long evaluations() const { return evaluations_; }
  long iterations() const { return iterations_; }

 private:
  std::string type_;
  bool iterative_ = false;    ///< type_ != "gamma", kept as a flag for per-row calls
  bool composition_ = false;  ///< eos_->uses_composition()
  bool uniform_ = false;      ///< eos_->uniform_gamma()
  double uniform_gamc_ = 0, uniform_game_ = 0;
  double gamma_ = 1.4;
  double abar_ = 1.0, zbar_ = 1.0;  ///< composition when no species are declared
  std::string sha_, table_path_;
  double table_bytes_ = 0;
  std::unique_ptr<Eos> eos_;
  const composition::Composition* comp_ = nullptr;
  int idens_ = -1, ipres_ = -1, itemp_ = -1, igamc_ = -1, igame_ = -1, ieint_ = -1;
  int ietot_ = -1, imom_[3] = {-1, -1, -1};  ///< the gas's total energy and momenta, if any
  // Row scratch (one x-row of a block): gathered zone-major rows and abar/zbar.
  mutable std::vector<double> row_;
  mutable long evaluations_ = 0, iterations_ = 0;
  mutable std::string failure_;  ///< the first EOS failure on this rank ("" if none)
  mutable int failure_node_ = -1;
  /// eos.cold_floor: the floor temperature (the table's lowest), 0 if off or not iterative.
  double floor_temp_ = 0;
  mutable long floored_ = 0;          ///< zones the cold floor raised (this rank)
  mutable double floor_deficit_ = 0;  ///< the largest e(dens, floor_temp) - eint raised (erg/g)
  /// dens_ei with the cold floor: a zone the EOS has no state for because its eint lies
  /// below the energy at (dens, floor_temp_), the lowest temperature the table knows, gets
  /// that state (eint raised, counted); any other failure is returned as before. The
  /// caller's pencil is rewritten in place; returns the first zone still failed, or -1.
  Result apply_ei(const Pencil& p, long* floored) const;
  std::string describe_failure(const Pencil& p, std::ptrdiff_t at, Mode mode) const;
  void record_failure(const std::string& what, int node) const;
};

}  // namespace tessera::eos

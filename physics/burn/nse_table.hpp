#pragma once
// The NSE table of the three-stage Type Ia burn (three_stage.hpp): the final state of
// matter relaxed to nuclear statistical equilibrium, as a function of (Ye, log10 rho,
// e - qbar), FLASH's `nse_dens_emq_table` (Seitenzahl et al. 2009) rebuilt from public data.
//
// The file (`make nse-table` -> build/nse_table.dat, tools/nse_table/make_nse_table.py)
// holds, on a grid of (log10 rho, log10 T, Ye), the NSE abar, qbar (mean binding energy,
// MeV per nucleon), dYe/dt and the neutrino loss of the weak rates, from pynucastro's
// nuclear data, plus the binding energy per nucleon of each of its nuclides. Loading it
// turns every node into emq = e(rho, T, abar, Ye abar) - qbar N_A MeV with the run's own
// EOS (Tessera's Helmholtz; dens_temp), so that the table is indexed by the quantity that
// isochoric burning conserves. A lookup interpolates emq(T) at every temperature node
// cubically in Ye and in log rho (Lagrange, 4 x 4 nodes), finds the bracketing nodes by
// bisection and solves a cubic Hermite in the temperature index for the fraction of the
// cell; log10 T follows, qbar and 1/abar by the same Hermite, dYe/dt and eps_nu linearly. A state
// outside the grid is clamped to its edge and flagged (out_of_table), never extrapolated.
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#ifndef TESSERA_NSE_TABLE_DEFAULT
#define TESSERA_NSE_TABLE_DEFAULT "nse_table.dat"
#endif

namespace tessera::eos {
class Eos;
}

namespace tessera::burn {

/// The table read when no path is given: the build's nse_table.dat (`make nse-table`).
inline constexpr const char* default_nse_table_path = TESSERA_NSE_TABLE_DEFAULT;

/// erg/g per MeV/nucleon: N_A * 1 MeV (CODATA 2018 exact constants).
inline constexpr double mev_per_nucleon_erg = 6.02214076e23 * 1.602176634e-6;

/// The NSE final state at one (Ye, rho, e - qbar).
struct NseState {
  double temp = 0.0;  ///< K
  double qbar = 0.0;  ///< mean binding energy, MeV per nucleon
  double yion = 0.0;  ///< 1 / abar
  double ydot = 0.0;  ///< dYe/dt of the weak rates, 1/s
  double enu = 0.0;   ///< neutrino loss of the weak rates, erg/g/s (> 0)
  double dens = 0.0;  ///< the final density (the isobaric lookup; the given one otherwise)
  /// Which inputs were clamped to the grid: 1 Ye, 2 rho (or P), 4 emq (or hmq) below,
  /// 8 emq (hmq) above.
  int out_of_table = 0;
};

class NseTable {
 public:
  /// Reads `path` ("" = default_nse_table_path), hashes it and converts its nodes with
  /// `eos` (dens_temp). Throws tessera::Error if the file is missing ("build it with `make
  /// nse-table`"), malformed, or if e - qbar does not increase with T along some row.
  static std::shared_ptr<const NseTable> load(const std::string& path, const eos::Eos& eos);

  /// The isochoric final state at (Ye, rho, e - N_A MeV qbar).
  NseState lookup(double ye, double dens, double emq) const;
  /// The isobaric final state at (Ye, P, h - N_A MeV qbar), h = e + P/rho.
  NseState lookup_isobaric(double ye, double pres, double hmq) const;

  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }
  /// Binding energy per nucleon (MeV) of a nuclide of the table's network ("c12"); throws
  /// naming it if the table does not have it.
  double binding_per_nucleon(const std::string& name) const;
  /// Grid extents: log10 rho, log10 P (isobaric), log10 T, Ye (first, last).
  std::array<double, 2> logrho_range() const { return rho_.range(); }
  std::array<double, 2> logp_range() const { return pres_.range(); }
  std::array<double, 2> logt_range() const { return {lt0_, lt0_ + dlt_ * (nt_ - 1)}; }
  std::array<double, 2> ye_range() const { return {ye0_, ye0_ + dye_ * (ny_ - 1)}; }
  int points() const { return rho_.n * nt_ * ny_; }

 private:
  /// One table: nodes (Ye, x, T), T fastest, x = log10 rho or log10 P; the key (emq or
  /// hmq) that a lookup inverts and the quantities it returns.
  struct Grid {
    int n = 0;
    double x0 = 0, dx = 1;
    std::vector<double> key, qbar, yion, ydot, enu, logrho;
    std::vector<char> valid;  ///< 0: the node's x lies outside the data (isobaric)
    std::array<double, 2> range() const { return {x0, x0 + dx * (n - 1)}; }
  };
  std::string path_, sha256_;
  int nt_ = 0, ny_ = 0;
  double lt0_ = 0, dlt_ = 1, ye0_ = 0, dye_ = 1;
  Grid rho_, pres_;
  std::map<std::string, double> bind_;
  std::size_t at(const Grid& g, int iy, int ix, int it) const {
    return (std::size_t(iy) * g.n + std::size_t(ix)) * nt_ + std::size_t(it);
  }
  NseState find(const Grid& g, double ye, double x, double key) const;
};

}  // namespace tessera::burn

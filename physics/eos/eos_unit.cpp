#include "physics/eos/eos_unit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.hpp"
#include "base/params.hpp"
#include "perf/timers.hpp"
#include "physics/composition/composition.hpp"
#include "physics/eos/gamma_law.hpp"
#include "physics/eos/helmholtz/helmholtz.hpp"

namespace tessera::eos {

void EosUnit::declare_params(base::Params& p) {
  p.declare_string("eos.type", "gamma", {"gamma", "helmholtz"},
                   "equation of state: gamma law or Helmholtz (Timmes & Swesty 2000)");
  p.declare_real("eos.gamma", 1.4, 1.0001, 10.0, "adiabatic index of the gamma-law gas");
  p.declare_real("eos.mu", 1.0, 1e-6, 1e6, "mean molecular weight of the gamma-law gas");
  p.declare_real("eos.coulomb_mult", 1.0, 0.0, 1.0,
                 "Helmholtz: factor on the Coulomb corrections (0 switches them off)");
  p.declare_string("eos.table", "", {},
                   "Helmholtz table file ('': the one `make helm-table` generates)");
  p.declare_bool("eos.cold_floor", true,
                 "Helmholtz, dens_ei: a zone whose eint is below the energy at the table's lowest "
                 "temperature gets that temperature and energy (counted in summary.json eos) "
                 "instead of stopping the run");
  p.declare_real("eos.abar", Helmholtz::default_abar, 1e-3, 1e3,
                 "Helmholtz: mean mass number when composition.species is empty (C/O 50/50)");
  p.declare_real("eos.zbar", Helmholtz::default_zbar, 1e-3, 1e3,
                 "Helmholtz: mean charge number when composition.species is empty");
}

EosUnit::EosUnit(const base::Params& p) : type_(p.get_string("eos.type")) {
  gamma_ = p.get_real("eos.gamma");
  abar_ = p.get_real("eos.abar");
  zbar_ = p.get_real("eos.zbar");
  if (type_ == "gamma") {
    eos_ = std::make_unique<GammaLaw>(gamma_, p.get_real("eos.mu"));
  } else {
    const auto& table = p.get_string("eos.table");
    auto helm = std::make_unique<Helmholtz>(
        table.empty() ? std::string(helmholtz::default_table_path) : table,
        p.get_real("eos.coulomb_mult"), abar_, zbar_);
    sha_ = helm->table_sha256();
    table_path_ = helm->table_path();
    const auto& t = helm->table();
    table_bytes_ = double(t.imax) * double(t.jmax) * double(t.nf + t.nc) * sizeof(double);
    if (p.get_bool("eos.cold_floor")) floor_temp_ = t.temp_min();
    eos_ = std::move(helm);
  }
  iterative_ = type_ != "gamma";
  composition_ = eos_->uses_composition();
  uniform_ = eos_->uniform_gamma(uniform_gamc_, uniform_game_);
}

EosUnit::~EosUnit() = default;

physics::Declarations EosUnit::declarations() const {
  using mesh::VarKind;
  // A uniform-gamma EOS (the gamma law) is re-evaluated wherever hydro needs it (cheaper
  // than moving the values). Any other runs once per zone per stage, and its pres, gamc,
  // game (and temp, a Newton guess) reach the guard zones by guard fill: a face between
  // two blocks of one level then sees the same values from both sides, so the fluxes
  // agree to the bit (a re-solve in the guard zone would start Newton from another guess).
  // The state is derived (recomputed from the conserved variables after a restart or a
  // regrid, not read or moved) only with a uniform-gamma EOS, the one whose recomputation
  // gives the same bits; Helmholtz's is independent: its temp is where the next Newton
  // iteration starts, and a restart must continue from it.
  const bool fill = !uniform_;
  const auto role = uniform_ ? mesh::VarRole::derived : mesh::VarRole::independent;
  std::vector<mesh::VarInfo> v{{"pres", -1, VarKind::auxiliary, fill, true, name()},
                               {"temp", -1, VarKind::auxiliary, fill, true, name()},
                               {"gamc", -1, VarKind::auxiliary, fill, true, name()},
                               {"game", -1, VarKind::auxiliary, fill, true, name()},
                               {"eint", -1, VarKind::auxiliary, false, true, name()}};
  for (auto& x : v) {
    x.role = role;
    x.recomputable = true;  // from the conserved variables, when a checkpoint lacks it
  }
  physics::Declarations d;
  d.variables = std::move(v);
  // A checkpoint of another EOS type (a file without eos.type: an old one, taken as is),
  // of another Helmholtz table (or one that did not record it) or another gamma.
  d.state_keys.push_back({"eos.type", type_});
  if (type_ == "helmholtz") d.state_keys.push_back({"eos_table_sha256", sha_, true});
  if (type_ == "gamma") d.state_keys.push_back({"eos.gamma", fmt::format("{}", gamma_)});
  return d;
}

std::vector<physics::ArenaNeed> EosUnit::memory_needs(const std::vector<mesh::VarInfo>&,
                                                      const mesh::BlockShape&, long) const {
  if (table_bytes_ <= 0) return {};
  return {{"helmholtz table", "", table_bytes_, 0.0,
           "541*201*(9+12)*8: free energy, dP/drho, eta, n_e with derivatives"}};
}

void EosUnit::bind(mesh::Mesh& m, const physics::Services& services,
                   const physics::RunContext& /*ctx*/) {
  idens_ = m.var_index("dens");
  ipres_ = m.var_index("pres");
  itemp_ = m.var_index("temp");
  igamc_ = m.var_index("gamc");
  igame_ = m.var_index("game");
  ieint_ = m.var_index("eint");
  ietot_ = m.var_index("etot");
  for (int a = 0; a < 3; ++a) imom_[a] = m.var_index(std::string("mom") + char('x' + a));
  if (idens_ < 0) throw Error("eos: no unit declares 'dens' (the EOS needs a density)");
  comp_ = services.get<composition::Composition>("composition");
  if (comp_ && !comp_->has_species()) comp_ = nullptr;
  row_.assign(9 * std::size_t(m.shape().n(0)), 0.0);
}

std::string EosUnit::describe_failure(const Pencil& p, std::ptrdiff_t at, Mode mode) const {
  const char* given = mode == Mode::dens_ei ? "eint" : (mode == Mode::dens_temp ? "temp" : "pres");
  const double v =
      mode == Mode::dens_ei ? p.eint[at] : (mode == Mode::dens_temp ? p.temp[at] : p.pres[at]);
  return fmt::format(
      "the {} EOS did not converge for dens = {:.9g} g/cm^3, {} = {:.9g}, abar = "
      "{:.6g}, zbar = {:.6g}",
      type_, p.dens[at], given, v, p.abar ? p.abar[at] : abar_, p.zbar ? p.zbar[at] : zbar_);
}

Result EosUnit::apply_ei(const Pencil& p, long* floored) const {
  Result total = eos_->apply(Mode::dens_ei, p);
  if (total.failed < 0 || !(floor_temp_ > 0)) return total;
  std::ptrdiff_t f = total.failed;
  total.failed = -1;
  while (f >= 0) {
    // The zone's state at the floor temperature (dens_temp: no iteration).
    double d = p.dens[f], t = floor_temp_, e = 0, pr = 0, gc = 0, ge = 0, cs = 0;
    Pencil c;
    c.n = 1;
    c.dens = &d, c.temp = &t, c.eint = &e, c.pres = &pr, c.gamc = &gc, c.game = &ge;
    c.cs = p.cs ? &cs : nullptr;
    c.abar = p.abar ? p.abar + f : nullptr;
    c.zbar = p.zbar ? p.zbar + f : nullptr;
    if (eos_->apply(Mode::dens_temp, c).failed >= 0 || !(p.eint[f] < e)) {
      total.failed = f;  // not below the cold curve: a real failure
      return total;
    }
    ++*floored;
    floor_deficit_ = std::max(floor_deficit_, e - p.eint[f]);
    p.temp[f] = t, p.eint[f] = e, p.pres[f] = pr, p.gamc[f] = gc, p.game[f] = ge;
    if (p.cs) p.cs[f] = cs;
    // The rest of the pencil after it.
    const std::size_t from = std::size_t(f) + 1;
    if (from >= p.n) break;
    Pencil rest = p;
    rest.n = p.n - from;
    for (double** q : {&rest.dens, &rest.temp, &rest.eint, &rest.pres, &rest.gamc, &rest.game})
      *q += from;
    if (rest.cs) rest.cs += from;
    if (rest.abar) rest.abar += from;
    if (rest.zbar) rest.zbar += from;
    const Result r = eos_->apply(Mode::dens_ei, rest);
    total.iterations += r.iterations;
    total.max_iterations = std::max(total.max_iterations, r.max_iterations);
    f = r.failed >= 0 ? std::ptrdiff_t(from) + r.failed : -1;
  }
  return total;
}

template <mesh::Layout L>
int EosUnit::update_row(const mesh::BlockView<L>& u, const mesh::BlockShape& s, int node, int j,
                        int k, Mode mode) const {
  const int n = s.ni(0), i0 = s.g(0);
  const std::size_t n0 = std::size_t(s.n(0));
  double* abar = row_.data();
  double* zbar = abar + n0;
  // Zone-major rows are gathered into rows of this scratch, var-major rows used in place.
  double* g[7];
  if constexpr (L == mesh::Layout::zone_major)
    for (int q = 0; q < 7; ++q) g[q] = zbar + n0 * (1 + q);
  const int vars[6] = {idens_, itemp_, ieint_, ipres_, igamc_, igame_};
  const bool composition = composition_;
  double* row[6];
  for (int q = 0; q < 6; ++q) {
    if constexpr (L == mesh::Layout::var_major) {
      row[q] = u.row(vars[q], j, k) + i0;
    } else {
      const auto r = u.row(vars[q], j, k);
      for (int i = 0; i < n; ++i) g[q][i] = r[i0 + i];
      row[q] = g[q];
    }
  }
  if (composition) {
    for (int i = 0; i < n; ++i) {
      if (comp_)
        comp_->abar_zbar(u, i0 + i, j, k, abar[i], zbar[i], comp_->conserved());
      else
        abar[i] = abar_, zbar[i] = zbar_;
    }
  }
  // An iterative EOS starts from the zone's last temperature (or 1e7 K if it has none).
  if (mode != Mode::dens_temp && iterative())
    for (int i = 0; i < n; ++i) row[1][i] = row[1][i] > 0.0 ? row[1][i] : 1e7;
  Pencil p;
  p.n = std::size_t(n);
  p.dens = row[0];
  p.temp = row[1];
  p.eint = row[2];
  p.pres = row[3];
  p.gamc = row[4];
  p.game = row[5];
  p.abar = composition ? abar : nullptr;
  p.zbar = composition ? zbar : nullptr;
  long floored = 0;
  const Result r = mode == Mode::dens_ei ? apply_ei(p, &floored) : eos_->apply(mode, p);
  floored_ += floored;
  evaluations_ += n;
  iterations_ += r.iterations;
  if (r.failed >= 0)
    record_failure(fmt::format("block {}, zone ({},{},{}): {}", node + 1, int(r.failed), j - s.g(1),
                               k - s.g(2), describe_failure(p, r.failed, mode)),
                   node);
  if constexpr (L == mesh::Layout::zone_major) {
    for (int q = 1; q < 6; ++q) {
      const auto out = u.row(vars[q], j, k);
      for (int i = 0; i < n; ++i) out[i0 + i] = g[q][i];
    }
  }
  return int(floored);
}

template <mesh::Layout L>
void EosUnit::eval_cells(const mesh::BlockView<L>& u, const mesh::BlockShape& s, const int* cell,
                         std::size_t n, double* dens, double* eint, double* temp, double* pres,
                         double* gamc, double* game) const {
  TESSERA_REGION("eos");
  const int n0 = s.n(0), n1 = s.n(1);
  const bool composition = composition_;
  // abar and zbar live in the unit's row scratch: the cells go through in chunks of a row.
  const std::size_t chunk = std::size_t(n0);
  double* abar = row_.data();
  double* zbar = abar + chunk;
  const auto tv = u.field(itemp_);
  for (std::size_t at = 0; at < n; at += chunk) {
    const std::size_t m = std::min(chunk, n - at);
    for (std::size_t q = 0; q < m; ++q) {
      const int c = cell[at + q];
      const double t = tv[c];
      temp[at + q] = t > 0.0 ? t : 1e7;
      if (composition) {
        if (comp_) {
          const int i = c % n0, j = (c / n0) % n1, k = c / (n0 * n1);
          comp_->abar_zbar(u, i, j, k, abar[q], zbar[q], comp_->conserved());
        } else {
          abar[q] = abar_, zbar[q] = zbar_;
        }
      }
    }
    Pencil p;
    p.n = m;
    p.dens = dens + at;
    p.temp = temp + at;
    p.eint = eint + at;
    p.pres = pres + at;
    p.gamc = gamc + at;
    p.game = game + at;
    p.abar = composition ? abar : nullptr;
    p.zbar = composition ? zbar : nullptr;
    long floored = 0;
    const Result r = apply_ei(p, &floored);
    floored_ += floored;
    evaluations_ += long(m);
    iterations_ += r.iterations;
    if (r.failed >= 0) {
      const int c = cell[at + std::size_t(r.failed)];
      record_failure(
          fmt::format("block array cell ({},{},{}) (guards counted): {}", c % n0, (c / n0) % n1,
                      c / (n0 * n1), describe_failure(p, r.failed, Mode::dens_ei)),
          -1);
    }
  }
}

template <mesh::Layout L>
void EosUnit::from_total_energy(const mesh::BlockView<L>& u, const mesh::BlockShape& s,
                                int node) const {
  if (ietot_ < 0 || imom_[0] < 0)
    throw Error("eos: from_total_energy needs the gas's etot and momenta (flow or hydro)");
  mesh::for_each_zone(s, [&](int i, int j, int k) {
    const double rho = u(idens_, i, j, k);
    double ke = 0.0;
    for (int a = 0; a < 3; ++a) ke += u(imom_[a], i, j, k) * u(imom_[a], i, j, k);
    u(ieint_, i, j, k) = (u(ietot_, i, j, k) - 0.5 * ke / rho) / rho;
    if (!(u(itemp_, i, j, k) > 0.0)) u(itemp_, i, j, k) = 1e4;  // a start for the EOS
  });
  for (int k = s.g(2); k < s.g(2) + s.ni(2); ++k)
    for (int j = s.g(1); j < s.g(1) + s.ni(1); ++j) update_row(u, s, node, j, k, Mode::dens_ei);
}

template void EosUnit::from_total_energy(const mesh::BlockView<mesh::Layout::var_major>&,
                                         const mesh::BlockShape&, int) const;
template void EosUnit::from_total_energy(const mesh::BlockView<mesh::Layout::zone_major>&,
                                         const mesh::BlockShape&, int) const;
template int EosUnit::update_row(const mesh::BlockView<mesh::Layout::var_major>&,
                                 const mesh::BlockShape&, int, int, int, Mode) const;
template int EosUnit::update_row(const mesh::BlockView<mesh::Layout::zone_major>&,
                                 const mesh::BlockShape&, int, int, int, Mode) const;
template void EosUnit::eval_cells(const mesh::BlockView<mesh::Layout::var_major>&,
                                  const mesh::BlockShape&, const int*, std::size_t, double*,
                                  double*, double*, double*, double*, double*) const;
template void EosUnit::eval_cells(const mesh::BlockView<mesh::Layout::zone_major>&,
                                  const mesh::BlockShape&, const int*, std::size_t, double*,
                                  double*, double*, double*, double*, double*) const;

void EosUnit::initialise(mesh::Mesh& /*m*/) {
  failure_.clear();
  failure_node_ = -1;
}

void EosUnit::record_failure(const std::string& what, int node) const {
  if (!failure_.empty()) return;  // the first one speaks
  failure_ = what;
  failure_node_ = node;
}

physics::BadZone EosUnit::check(mesh::Mesh& /*m*/) const {
  physics::BadZone bad;
  if (failure_.empty()) return bad;
  bad.node = failure_node_;
  bad.what = failure_;
  bad.sentence = true;
  return bad;
}

nlohmann::json EosUnit::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  long counts[2] = {evaluations_, iterations_};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG, MPI_SUM, comm);
  nlohmann::json j{{"type", type_}, {"evaluations", counts[0]}, {"iterations", counts[1]}};
  if (type_ == "gamma") j["gamma"] = gamma_;
  if (floor_temp_ > 0) {
    long n = floored_;
    double deficit = floor_deficit_;
    MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_LONG, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, &deficit, 1, MPI_DOUBLE, MPI_MAX, comm);
    j["cold_floor"] = {{"temp", floor_temp_}, {"zones_raised", n}, {"largest_eint_raise", deficit}};
  }
  if (!sha_.empty()) {
    j["table_sha256"] = sha_;
    j["table"] = table_path_;
  }
  return j;
}

physics::Registration EosUnit::registration() {
  return physics::registration_of<EosUnit>(
      "eos", physics::UnitRole::service,
      "equation of state (gamma law or Helmholtz) behind the pencil interface",
      {.needs = {{"composition", true, "abar and zbar per zone where the run has species"}}},
      {"eos"});
}

}  // namespace tessera::eos

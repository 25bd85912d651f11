// The Helmholtz EOS class: construction, the scalar entry points and failure messages
// (the kernels are in scalar_kernel.cpp and vector_kernel.cpp).
#include "physics/eos/helmholtz/helmholtz.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.hpp"
#include "physics/eos/helmholtz/kernels.hpp"

namespace tessera::eos::helmholtz {

std::string describe_failure(const FullState& s, const HelmTable& t) {
  std::ostringstream o;
  o.precision(6);
  switch (s.failure) {
    case Failure::none:
      return "";
    case Failure::bad_input:
      o << "Helmholtz EOS: bad input (dens = " << s.dens << ", temp = " << s.temp
        << ", abar = " << s.abar << ", zbar = " << s.zbar << ", eint = " << s.eint
        << ", pres = " << s.pres
        << "): density, temperature (guess), composition and the given energy or pressure "
           "must be positive and finite";
      break;
    case Failure::outside_table:
      o << "Helmholtz EOS: state outside the table (dens * ye = " << s.dens * s.zbar / s.abar
        << " g/cm^3, temp = " << s.temp << " K; the table covers " << t.dens_min()
        << " <= dens * ye <= " << t.dens_max() << ", " << t.temp_min()
        << " <= temp <= " << t.temp_max() << ")";
      break;
    case Failure::no_convergence:
      o << "Helmholtz EOS: Newton iteration in temperature did not converge in " << s.iterations
        << " iterations (dens = " << s.dens << ", last temp = " << s.temp << ")";
      break;
    case Failure::no_solution:
      o << "Helmholtz EOS: no temperature in the table gives this state (dens = " << s.dens
        << ", eint = " << s.eint << ", pres = " << s.pres << ", abar = " << s.abar
        << ", zbar = " << s.zbar << "): e(T) or p(T) jumps across it near temp = " << s.temp
        << " K";
      break;
  }
  return o.str();
}

}  // namespace tessera::eos::helmholtz

namespace tessera::eos {

namespace {

void check_args(double coulomb_mult, double abar, double zbar) {
  if (!(coulomb_mult >= 0.0) || !std::isfinite(coulomb_mult))
    throw Error("Helmholtz EOS: coulomb_mult must be >= 0, got " + std::to_string(coulomb_mult));
  if (!(abar > 0.0) || !(zbar > 0.0) || !std::isfinite(abar) || !std::isfinite(zbar))
    throw Error("Helmholtz EOS: default abar and zbar must be positive");
}

}  // namespace

Helmholtz::Helmholtz(std::shared_ptr<const helmholtz::HelmTable> table, double coulomb_mult,
                     double abar, double zbar)
    : table_(std::move(table)), coulomb_mult_(coulomb_mult), abar_(abar), zbar_(zbar) {
  if (!table_) throw Error("Helmholtz EOS: no table");
  check_args(coulomb_mult, abar, zbar);
}

Helmholtz::Helmholtz(const std::string& table_path, double coulomb_mult, double abar, double zbar)
    : Helmholtz(helmholtz::HelmTable::load(table_path), coulomb_mult, abar, zbar) {}

Result Helmholtz::apply(Mode mode, const Pencil& p) const {
  return helmholtz::detail::apply_vector(*table_, coulomb_mult_, abar_, zbar_, mode, p);
}

Result Helmholtz::apply_scalar(Mode mode, const Pencil& p) const {
  Result res;
  for (std::size_t i = 0; i < p.n; ++i) {
    helmholtz::FullState s;
    s.dens = p.dens[i];
    s.temp = p.temp[i];
    s.abar = p.abar ? p.abar[i] : abar_;
    s.zbar = p.zbar ? p.zbar[i] : zbar_;
    if (mode == Mode::dens_ei) s.eint = p.eint[i];
    if (mode == Mode::dens_pres) s.pres = p.pres[i];
    helmholtz::detail::solve_zone(*table_, coulomb_mult_, mode, s);
    res.iterations += s.iterations;
    res.max_iterations = std::max(res.max_iterations, s.iterations);
    if (s.failure != helmholtz::Failure::none) {
      if (res.failed < 0) res.failed = static_cast<std::ptrdiff_t>(i);
      continue;
    }
    if (mode != Mode::dens_ei) p.eint[i] = s.eint;
    if (mode != Mode::dens_pres) p.pres[i] = s.pres;
    if (mode != Mode::dens_temp) p.temp[i] = s.temp;
    p.gamc[i] = s.gamc;
    p.game[i] = s.game;
    if (p.cs != nullptr) p.cs[i] = s.cs;
  }
  return res;
}

helmholtz::FullState Helmholtz::evaluate_nothrow(Mode mode, const helmholtz::FullState& in) const {
  helmholtz::FullState s = in;
  helmholtz::detail::solve_zone(*table_, coulomb_mult_, mode, s);
  return s;
}

helmholtz::FullState Helmholtz::evaluate(Mode mode, const helmholtz::FullState& in) const {
  helmholtz::FullState s = evaluate_nothrow(mode, in);
  if (s.failure != helmholtz::Failure::none) throw Error(describe_failure(s, *table_));
  return s;
}

}  // namespace tessera::eos

// The scalar reference kernel of the Helmholtz EOS: one zone at a time, written to be read.
// Sources: see helmholtz.hpp (Timmes & Swesty 2000; Yakovlev & Shalybkov 1989; Cox & Giuli
// 1968; Flash-X / Microphysics for the Newton iteration).
//
// Compiled once per Highway target like the vector kernel (vector_kernel.cpp), and the
// same target runs both: in a portable build each target contracts multiplies and adds
// into FMAs its own way (AVX2 and AVX-512 have FMA, SSE4 has not), and a reference built
// for baseline x86-64 beside an AVX2 vector kernel differed from it by 1.6e-12 in a
// degenerate gas's pressure, where the two agree to 5e-15 when compiled alike. (In a
// native build every copy is the native code: see vector_kernel.cpp.)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "physics/eos/helmholtz/scalar_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "physics/eos/helmholtz/constants.hpp"
#include "physics/eos/helmholtz/hermite.hpp"
#include "physics/eos/helmholtz/kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace tessera::eos::helmholtz::detail {
namespace HWY_NAMESPACE {

namespace {

/// The interpolated electron-positron free energy and its derivatives at (rho Y_e, T).
struct ElectronTable {
  double free, df_d, df_t, df_dt, df_tt;  // biquintic F and derivatives (per gram, Y_e = 1)
  double dpdf, eta, xne;                  // bicubic dP/drho, eta, n- + n+
};

ElectronTable interpolate(const HelmTable& t, double din, double temp) {
  // Step 1: the cell, from the uniform log grid (Timmes' hash locate).
  int jat =
      static_cast<int>(std::floor((std::log10(temp) - HelmTable::temp_log_lo) * t.temp_step_inv()));
  int iat =
      static_cast<int>(std::floor((std::log10(din) - HelmTable::dens_log_lo) * t.dens_step_inv()));
  jat = std::clamp(jat, 0, HelmTable::jmax - 2);
  iat = std::clamp(iat, 0, HelmTable::imax - 2);

  // Step 2: position in the cell, linear in rho Y_e and T.
  const double xt = std::max((temp - t.temp(jat)) * t.dti()[jat], 0.0);
  const double xd = std::max((din - t.dens(iat)) * t.ddi()[iat], 0.0);
  const double mxt = 1.0 - xt, mxd = 1.0 - xd;
  const double dd = t.dd()[iat], dd2 = t.dd2()[iat], ddi = t.ddi()[iat];
  const double dt = t.dt()[jat], dt2 = t.dt2()[jat], dti = t.dti()[jat], dt2i = t.dt2i()[jat];

  // Step 3: quintic Hermite weights of the near (0) and far (1) node of each direction,
  // [node][derivative order of the tabulated datum], and their derivatives.
  const double sd[2][3] = {{psi0(xd), psi1(xd) * dd, psi2(xd) * dd2},
                           {psi0(mxd), -psi1(mxd) * dd, psi2(mxd) * dd2}};
  const double dsd[2][3] = {{dpsi0(xd) * ddi, dpsi1(xd), dpsi2(xd) * dd},
                            {-dpsi0(mxd) * ddi, dpsi1(mxd), -dpsi2(mxd) * dd}};
  const double st[2][3] = {{psi0(xt), psi1(xt) * dt, psi2(xt) * dt2},
                           {psi0(mxt), -psi1(mxt) * dt, psi2(mxt) * dt2}};
  const double dst[2][3] = {{dpsi0(xt) * dti, dpsi1(xt), dpsi2(xt) * dt},
                            {-dpsi0(mxt) * dti, dpsi1(mxt), -dpsi2(mxt) * dt}};
  const double ddst[2][3] = {{ddpsi0(xt) * dt2i, ddpsi1(xt) * dti, ddpsi2(xt)},
                             {ddpsi0(mxt) * dt2i, -ddpsi1(mxt) * dti, ddpsi2(mxt)}};

  // Step 4: the biquintic sums over the 4 nodes x 9 data, temperature first (as Timmes;
  // the vector kernel sums in the same order, so the two agree to the last bits):
  // g_v[a][p] = sum over T node b, order q of F_pq(a, b) x (T weight, d/dT, d2/dT2).
  ElectronTable e{};
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) {
      double g0 = 0.0, g1 = 0.0, g2 = 0.0;
      for (int b = 0; b < 2; ++b)
        for (int q = 0; q < 3; ++q) {
          const double v = t.f(iat + a, jat + b)[f_index[p][q]];
          g0 += v * st[b][q];
          g1 += v * dst[b][q];
          g2 += v * ddst[b][q];
        }
      e.free += g0 * sd[a][p];
      e.df_d += g0 * dsd[a][p];
      e.df_t += g1 * sd[a][p];
      e.df_dt += g1 * dsd[a][p];
      e.df_tt += g2 * sd[a][p];
    }

  // Step 5: bicubic Hermite for dP/drho, eta and n.
  const double cd[2][2] = {{cpsi0(xd), cpsi1(xd) * dd}, {cpsi0(mxd), -cpsi1(mxd) * dd}};
  const double ct[2][2] = {{cpsi0(xt), cpsi1(xt) * dt}, {cpsi0(mxt), -cpsi1(mxt) * dt}};
  double out[3] = {0.0, 0.0, 0.0};
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const double* c = t.c(iat + a, jat + b);
      for (int g = 0; g < 3; ++g)
        for (int p = 0; p < 2; ++p)
          for (int q = 0; q < 2; ++q) out[g] += c[4 * g + c_index[p][q]] * cd[a][p] * ct[b][q];
    }
  e.dpdf = out[0];
  e.eta = out[1];
  e.xne = out[2];
  return e;
}

}  // namespace

void eval_dens_temp(const HelmTable& t, double coulomb_mult, FullState& s) {
  constexpr double kerg = k_boltzmann;
  constexpr double avo = avogadro;
  const double rho = s.dens, temp = s.temp, abar = s.abar, zbar = s.zbar;
  const double ye = zbar / abar;
  s.ye = ye;
  const double deni = 1.0 / rho, tempi = 1.0 / temp;
  const double ytot1 = 1.0 / abar;
  const double kt = kerg * temp;

  // Radiation (black body).
  const double prad = a_radiation / 3.0 * temp * temp * temp * temp;
  const double dpraddd = 0.0, dpraddt = 4.0 * prad * tempi;
  const double erad = 3.0 * prad * deni;
  const double deraddd = -erad * deni, deraddt = 3.0 * dpraddt * deni;
  const double srad = (prad * deni + erad) * tempi;
  const double dsraddd = (dpraddd * deni - prad * deni * deni + deraddd) * tempi;
  const double dsraddt = (dpraddt * deni + deraddt - srad) * tempi;

  // Ions (ideal gas, Sackur-Tetrode entropy).
  const double xni = avo * ytot1 * rho, dxnidd = avo * ytot1;
  const double pion = xni * kt, dpiondd = dxnidd * kt, dpiondt = xni * kerg;
  const double eion = 1.5 * pion * deni;
  const double deiondd = (1.5 * dpiondd - eion) * deni, deiondt = 1.5 * dpiondt * deni;
  constexpr double sioncon = 2.0 * pi * atomic_mass_unit * kerg / (h_planck * h_planck);
  const double st_arg = abar * abar * std::sqrt(abar) * deni / avo * std::pow(sioncon * temp, 1.5);
  const double sion = (pion * deni + eion) * tempi + kerg * avo * ytot1 * std::log(st_arg);
  const double dsiondd =
      (dpiondd * deni - pion * deni * deni + deiondd) * tempi - kerg * avo * deni * ytot1;
  const double dsiondt = (dpiondt * deni + deiondt) * tempi - (pion * deni + eion) * tempi * tempi +
                         1.5 * kerg * avo * tempi * ytot1;

  // Electrons and positrons from the table, entered with rho Y_e.
  const double din = ye * rho;
  const ElectronTable el = interpolate(t, din, temp);
  const double pele = din * din * el.df_d;
  const double dpepdt = din * din * el.df_dt;
  const double dpepdd = std::max(ye * el.dpdf, 0.0);
  const double sele = -el.df_t * ye;
  const double dsepdt = -el.df_tt * ye;
  const double dsepdd = -el.df_dt * ye * ye;
  const double eele = ye * el.free + temp * sele;
  const double deepdt = temp * dsepdt;
  const double deepdd = ye * ye * el.df_d + temp * dsepdd;

  // Coulomb corrections (Yakovlev & Shalybkov 1989), uniform background.
  constexpr double a1 = -0.898004, b1 = 0.96786, c1 = 0.220703, d1 = -0.86097, e1 = 2.5269;
  constexpr double a2 = 0.29561, b2 = 1.9885, c2 = 0.288675;
  constexpr double esqu = electron_charge * electron_charge;
  const double s_n = 4.0 / 3.0 * pi * xni, dsdd = 4.0 / 3.0 * pi * dxnidd;
  const double inv_lami = std::cbrt(s_n);
  const double lami = 1.0 / inv_lami;
  const double lamidd = -lami / 3.0 * dsdd / s_n;
  const double plasg = zbar * zbar * esqu / kt * inv_lami;
  const double plasgdd = -plasg * inv_lami * lamidd;
  const double plasgdt = -plasg * tempi;
  double pcoul, dpcouldd, dpcouldt, ecoul, decouldd, decouldt, scoul, dscouldd, dscouldt;
  if (plasg >= 1.0) {
    // Eqs. 82, 85-87: the strongly coupled plasma.
    const double x = std::sqrt(std::sqrt(plasg));
    double y = avo * ytot1 * kerg;
    ecoul = y * temp * (a1 * plasg + b1 * x + c1 / x + d1);
    pcoul = rho * ecoul / 3.0;
    scoul = -y * (3.0 * b1 * x - 5.0 * c1 / x + d1 * (std::log(plasg) - 1.0) - e1);
    y = avo * ytot1 * kt * (a1 + 0.25 / plasg * (b1 * x - c1 / x));
    decouldd = y * plasgdd;
    decouldt = y * plasgdt + ecoul * tempi;
    dpcouldd = ecoul / 3.0 + rho / 3.0 * decouldd;
    dpcouldt = rho / 3.0 * decouldt;
    y = -avo * kerg / (abar * plasg) * (0.75 * b1 * x + 1.25 * c1 / x + d1);
    dscouldd = y * plasgdd;
    dscouldt = y * plasgdt;
  } else {
    // Eqs. 102-104: the weakly coupled plasma.
    const double x = plasg * std::sqrt(plasg);
    const double y = std::pow(plasg, b2);
    const double z = c2 * x - a2 * y / 3.0;
    pcoul = -pion * z;
    ecoul = 3.0 * pcoul * deni;
    scoul = -avo * ytot1 * kerg * (c2 * x - a2 * (b2 - 1.0) / b2 * y);
    const double s = 1.5 * c2 * x / plasg - a2 * b2 * y / (3.0 * plasg);
    dpcouldd = -dpiondd * z - pion * s * plasgdd;
    dpcouldt = -dpiondt * z - pion * s * plasgdt;
    decouldd = 3.0 * deni * dpcouldd - ecoul * deni;
    decouldt = 3.0 * deni * dpcouldt;
    const double sd = -avo * kerg / (abar * plasg) * (1.5 * c2 * x - a2 * (b2 - 1.0) * y);
    dscouldd = sd * plasgdd;
    dscouldt = sd * plasgdt;
  }
  // Without a jump (helmholtz.hpp, "Coulomb taper"): where the correction (times
  // coulomb_mult) would remove more than kCoulombTaperStart of the pressure or energy of
  // the other parts, that total tapers smoothly toward zero instead of being dropped
  // (Timmes' rule), so e, p stay continuous and rising in T.
  const double cm = coulomb_mult;
  const double p0 = prad + pion + pele, e0 = erad + eion + eele;
  const double pc = cm * pcoul, ec = cm * ecoul;
  const double rp = p0 > 0.0 ? -pc / p0 : 0.0, re = e0 > 0.0 ? -ec / e0 : 0.0;
  const bool tp = rp > kCoulombTaperStart, te = re > kCoulombTaperStart;
  double op, dhp, oe, dhe;  // 1 - h and h' for the pressure and the energy
  coulomb_taper(rp, op, dhp);
  coulomb_taper(re, oe, dhe);
  const double fe = te ? (1.0 - oe) / re : 1.0;  // the entropy correction's factor h / r
  s.coulomb_tapered = tp || te;

  // Totals (Timmes' sums where untapered).
  if (!tp) {
    s.pres = prad + pion + pele + cm * pcoul;
    s.dpdd = dpraddd + dpiondd + dpepdd + cm * dpcouldd;
    s.dpdt = dpraddt + dpiondt + dpepdt + cm * dpcouldt;
  } else {
    const double a = op + dhp * rp;
    s.pres = p0 * op;
    s.dpdd = (dpraddd + dpiondd + dpepdd) * a + dhp * cm * dpcouldd;
    s.dpdt = (dpraddt + dpiondt + dpepdt) * a + dhp * cm * dpcouldt;
  }
  if (!te) {
    s.eint = erad + eion + eele + cm * ecoul;
    s.dedd = deraddd + deiondd + deepdd + cm * decouldd;
    s.dedt = deraddt + deiondt + deepdt + cm * decouldt;
  } else {
    const double a = oe + dhe * re;
    s.eint = e0 * oe;
    s.dedd = (deraddd + deiondd + deepdd) * a + dhe * cm * decouldd;
    s.dedt = (deraddt + deiondt + deepdt) * a + dhe * cm * decouldt;
  }
  s.entr = srad + sion + sele + fe * cm * scoul;
  s.dsdd = dsraddd + dsiondd + dsepdd + fe * cm * dscouldd;
  s.dsdt = dsraddt + dsiondt + dsepdt + fe * cm * dscouldt;
  s.pele = pele;
  s.eele = eele;
  s.sele = sele;
  s.pion = pion;
  s.eion = eion;
  s.sion = sion;
  s.prad = prad;
  s.erad = erad;
  s.srad = srad;
  s.pcoul = tp ? s.pres - p0 : cm * pcoul;
  s.ecoul = te ? s.eint - e0 : cm * ecoul;
  s.scoul = fe * cm * scoul;
  s.plasma_gamma = plasg;
  s.eta = el.eta;
  s.xne = el.xne;

  // Derived quantities (Cox & Giuli ch. 9; relativistic sound speed, C&G 14.29).
  const double zz = s.pres * deni;
  s.chit = temp / s.pres * s.dpdt;
  s.chid = s.dpdd * rho / s.pres;
  s.cv = s.dedt;
  const double x = zz * s.chit / (temp * s.cv);
  s.gam3 = x + 1.0;
  s.gamc = s.chit * x + s.chid;
  s.nabad = x / s.gamc;
  s.gam2 = 1.0 / (1.0 - s.nabad);
  s.cp = s.cv * s.gamc / s.chid;
  s.game = 1.0 + s.pres / (rho * s.eint);
  const double zrel = 1.0 + (s.eint + c_light * c_light) * rho / s.pres;
  s.cs = c_light * std::sqrt(s.gamc / zrel);

  // Maxwell relations: each residual vanishes for a perfectly consistent EOS.
  s.dse = temp * s.dsdt / s.dedt - 1.0;
  s.dpe = (s.dedd * rho * rho + temp * s.dpdt) / s.pres - 1.0;
  s.dsp = -s.dsdd * rho * rho / s.dpdt - 1.0;
}

void SolveZone(const HelmTable& t, double coulomb_mult, Mode mode, FullState& s) {
  s.failure = Failure::none;
  s.iterations = 0;
  auto positive = [](double v) { return v > 0.0 && std::isfinite(v); };
  if (!positive(s.dens) || !positive(s.abar) || !positive(s.zbar) || !positive(s.temp)) {
    s.failure = Failure::bad_input;
    return;
  }
  const double din = s.zbar / s.abar * s.dens;
  if (din < t.dens_min() || din > t.dens_max()) {
    s.failure = Failure::outside_table;
    return;
  }
  const double tmin = t.temp_min(), tmax = t.temp_max();
  if (mode == Mode::dens_temp) {
    if (s.temp < tmin || s.temp > tmax) {
      s.failure = Failure::outside_table;
      return;
    }
    eval_dens_temp(t, coulomb_mult, s);
    return;
  }
  const bool by_e = mode == Mode::dens_ei;
  const double want = by_e ? s.eint : s.pres;
  if (!positive(want)) {
    s.failure = Failure::bad_input;
    return;
  }
  // Safeguarded Newton in T from the caller's guess, clamped into the table (invert_step).
  double temp = std::clamp(s.temp, tmin, tmax);
  Bracket b;
  b.lo = tmin;
  b.hi = tmax;
  for (int it = 1; it <= Helmholtz::max_newton; ++it) {
    s.temp = temp;
    eval_dens_temp(t, coulomb_mult, s);
    const double v = by_e ? s.eint : s.pres;
    const double dvdt = by_e ? s.dedt : s.dpdt;
    s.iterations = it;
    InvertStatus status;
    const double tnew =
        invert_step(temp, v - want, want, dvdt, tmin, tmax, Helmholtz::newton_tol, b, status);
    if (status == InvertStatus::outside_table) {
      s.failure = Failure::outside_table;  // the solution lies beyond the table
      return;
    }
    if (status == InvertStatus::no_solution) {
      s.failure = Failure::no_solution;
      return;
    }
    temp = tnew;
    if (status == InvertStatus::converged) {
      s.temp = temp;
      eval_dens_temp(t, coulomb_mult, s);
      // The caller's value stays the input; the computed one differs by round-off.
      if (by_e) {
        s.eint = want;
      } else {
        s.pres = want;
      }
      return;
    }
  }
  s.failure = Failure::no_convergence;
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::eos::helmholtz::detail
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::eos::helmholtz::detail {

HWY_EXPORT(SolveZone);

void solve_zone(const HelmTable& t, double coulomb_mult, Mode mode, FullState& s) {
  HWY_DYNAMIC_DISPATCH(SolveZone)(t, coulomb_mult, mode, s);
}

}  // namespace tessera::eos::helmholtz::detail
#endif

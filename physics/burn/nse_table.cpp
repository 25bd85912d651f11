// The NSE table: reading, conversion to e - qbar with the run's EOS, lookup (nse_table.hpp).
#include "physics/burn/nse_table.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "base/sha256.hpp"
#include "physics/eos/eos.hpp"

namespace tessera::burn {

std::shared_ptr<const NseTable> NseTable::load(const std::string& path_in, const eos::Eos& eos) {
  const std::string path = path_in.empty() ? std::string(default_nse_table_path) : path_in;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("NSE table '" + path + "' not found (" + std::strerror(errno) +
                "): build it with `make nse-table` (or set burn.nse_table)");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  auto t = std::make_shared<NseTable>();
  t->path_ = path;
  t->sha256_ = base::sha256_hex(text);
  std::istringstream lines(text);
  std::string line;
  auto bad = [&](const std::string& why) {
    return Error("NSE table '" + path + "': " + why + " (rebuild it with `make nse-table`)");
  };
  if (!std::getline(lines, line) || line.rfind("# tessera NSE table 1", 0) != 0)
    throw bad("not a Tessera NSE table (first line)");
  struct Axis {
    double lo = 0, hi = 0;
    int n = 0;
  } ar, at_, ay;
  std::vector<std::array<double, 7>> rows;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::istringstream w(line);
    if (line[0] == '#') {
      std::string hash, key, name;
      w >> hash >> key;
      if (key == "grid") {
        Axis a;
        w >> name >> a.lo >> a.hi >> a.n;
        // The interpolation reads 4 points per axis (a cubic's stencil): fewer read outside.
        if (!w || a.n < 4)
          throw bad("bad grid line '" + line + "'" +
                    (w && a.n < 4 ? " (at least 4 points per axis)" : ""));
        (name == "logrho" ? ar : name == "logT" ? at_ : ay) = a;
      } else if (key == "bind") {
        double b = 0;
        w >> name >> b;
        if (!w) throw bad("bad binding line '" + line + "'");
        t->bind_[name] = b;
      }
      continue;
    }
    std::array<double, 7> r{};
    for (auto& v : r) w >> v;
    if (!w) throw bad("bad data line '" + line + "'");
    rows.push_back(r);
  }
  if (ar.n == 0 || at_.n == 0 || ay.n == 0) throw bad("grid lines missing");
  const int nr = ar.n;
  t->nt_ = at_.n;
  t->ny_ = ay.n;
  Grid& g = t->rho_;
  g.n = nr;
  g.x0 = ar.lo;
  g.dx = (ar.hi - ar.lo) / (ar.n - 1);
  t->lt0_ = at_.lo;
  t->dlt_ = (at_.hi - at_.lo) / (at_.n - 1);
  t->ye0_ = ay.lo;
  t->dye_ = (ay.hi - ay.lo) / (ay.n - 1);
  const std::size_t n = std::size_t(ar.n) * at_.n * ay.n;
  if (rows.size() != n)
    throw bad(std::to_string(rows.size()) + " data lines for a grid of " + std::to_string(n));
  for (auto* v : {&g.key, &g.qbar, &g.yion, &g.ydot, &g.enu, &g.logrho}) v->assign(n, 0.0);
  g.valid.assign(n, 1);
  std::vector<char> seen(n, 0);
  // Each node's state for the EOS (owned pencil storage).
  eos::PencilArrays pa(n);
  auto &dens = pa.dens, &temp = pa.temp, &abar = pa.abar, &zbar = pa.zbar;
  for (const auto& r : rows) {
    const int ir = int(std::lround((r[0] - g.x0) / g.dx));
    const int it = int(std::lround((r[1] - t->lt0_) / t->dlt_));
    const int iy = int(std::lround((r[2] - t->ye0_) / t->dye_));
    if (ir < 0 || ir >= ar.n || it < 0 || it >= at_.n || iy < 0 || iy >= ay.n)
      throw bad("a point off the grid");
    const std::size_t k = t->at(g, iy, ir, it);
    if (seen[k]++) throw bad("a grid point twice");
    g.qbar[k] = r[4];
    g.yion[k] = 1.0 / r[3];
    g.ydot[k] = r[5];
    g.enu[k] = r[6];
    // The node's exact coordinates (the grid's, not the file's rounded ones).
    g.logrho[k] = g.x0 + ir * g.dx;
    dens[k] = std::pow(10.0, g.logrho[k]);
    temp[k] = std::pow(10.0, t->lt0_ + it * t->dlt_);
    abar[k] = r[3];
    zbar[k] = (t->ye0_ + iy * t->dye_) * r[3];
  }
  // e(rho, T) and P of every node with its NSE composition, by the run's EOS.
  const auto& eint = pa.eint;
  const auto& pres = pa.pres;
  const eos::Pencil pc = pa.pencil();
  const auto res = eos.apply(eos::Mode::dens_temp, pc);
  if (res.failed >= 0)
    throw bad("the EOS has no state at node " + std::to_string(res.failed) + " (rho " +
              std::to_string(dens[std::size_t(res.failed)]) + ", T " +
              std::to_string(temp[std::size_t(res.failed)]) + ")");
  for (std::size_t k = 0; k < n; ++k) g.key[k] = eint[k] - mev_per_nucleon_erg * g.qbar[k];
  for (int iy = 0; iy < ay.n; ++iy)
    for (int ir = 0; ir < nr; ++ir)
      for (int it = 1; it < at_.n; ++it)
        if (!(g.key[t->at(g, iy, ir, it)] > g.key[t->at(g, iy, ir, it - 1)]))
          throw bad("e - qbar does not increase with T at log rho " +
                    std::to_string(g.x0 + ir * g.dx) + ", Ye " +
                    std::to_string(t->ye0_ + iy * t->dye_) + ", log T " +
                    std::to_string(t->lt0_ + it * t->dlt_));
  // The isobaric grid: log P nodes over the range the nodes span, each (Ye, T) column
  // interpolated linearly in log P between the density nodes that bracket it.
  double plo = 1e300, phi = -1e300;
  for (std::size_t k = 0; k < n; ++k) {
    if (!(pres[k] > 0.0)) throw bad("a node with no positive pressure");
    plo = std::min(plo, std::log10(pres[k]));
    phi = std::max(phi, std::log10(pres[k]));
  }
  Grid& q = t->pres_;
  q.dx = 0.05;
  q.x0 = std::floor(plo / q.dx) * q.dx;
  q.n = int(std::ceil((phi - q.x0) / q.dx)) + 1;
  const std::size_t m = std::size_t(q.n) * at_.n * ay.n;
  for (auto* v : {&q.key, &q.qbar, &q.yion, &q.ydot, &q.enu, &q.logrho}) v->assign(m, 0.0);
  q.valid.assign(m, 0);
  std::vector<double> lp(static_cast<std::size_t>(nr));
  for (int iy = 0; iy < ay.n; ++iy)
    for (int it = 0; it < at_.n; ++it) {
      for (int ir = 0; ir < nr; ++ir) {
        lp[std::size_t(ir)] = std::log10(pres[t->at(g, iy, ir, it)]);
        if (ir > 0 && !(lp[std::size_t(ir)] > lp[std::size_t(ir - 1)]))
          throw bad("P does not increase with rho at Ye " + std::to_string(t->ye0_ + iy * t->dye_) +
                    ", log T " + std::to_string(t->lt0_ + it * t->dlt_));
      }
      int ir = 0;
      for (int ip = 0; ip < q.n; ++ip) {
        const double x = q.x0 + ip * q.dx;
        const std::size_t kq = t->at(q, iy, ip, it);
        while (ir < nr - 2 && x > lp[std::size_t(ir + 1)]) ++ir;
        // Cubic (Lagrange, 4 density nodes) in log rho, as the isochoric lookup: log P(x)
        // solved for the position x in the stencil by Newton from the chord's, then every
        // quantity with the same weights. Outside the densities' pressures at this T: the
        // edge density's values, marked (finite and rising with T, so that a bisection may
        // pass them).
        const int j0 = std::clamp(ir - 1, 0, nr - 4);
        auto weights = [](double xs, double* w, double* dw) {
          for (int b = 0; b < 4; ++b) {
            double v = 1.0, d = 0.0;
            for (int c = 0; c < 4; ++c) {
              if (c == b) continue;
              double prod = 1.0 / double(b - c);
              for (int e = 0; e < 4; ++e)
                if (e != b && e != c) prod *= (xs - e) / double(b - e);
              d += prod;
              v *= (xs - c) / double(b - c);
            }
            w[b] = v;
            dw[b] = d;
          }
        };
        double xs =
            ir - j0 +
            std::clamp((x - lp[std::size_t(ir)]) / (lp[std::size_t(ir + 1)] - lp[std::size_t(ir)]),
                       0.0, 1.0);
        double w[4], dw[4];
        const bool inside = x >= lp[0] && x <= lp[std::size_t(nr - 1)];
        for (int it2 = 0; inside && it2 < 20; ++it2) {
          weights(xs, w, dw);
          double val = 0.0, der = 0.0;
          for (int b = 0; b < 4; ++b) {
            val += w[b] * lp[std::size_t(j0 + b)];
            der += dw[b] * lp[std::size_t(j0 + b)];
          }
          if (!(der > 0.0)) break;
          const double xn = std::clamp(xs - (val - x) / der, double(ir - j0), double(ir - j0 + 1));
          if (std::fabs(xn - xs) < 1e-14) {
            xs = xn;
            break;
          }
          xs = xn;
        }
        weights(xs, w, dw);
        auto lin = [&](auto value_of) {
          double v = 0.0;
          for (int b = 0; b < 4; ++b) v += w[b] * value_of(t->at(g, iy, j0 + b, it));
          return v;
        };
        q.key[kq] = lin([&](std::size_t a) {
          return eint[a] + pres[a] / dens[a] - mev_per_nucleon_erg * g.qbar[a];
        });
        q.qbar[kq] = lin([&](std::size_t a) { return g.qbar[a]; });
        q.yion[kq] = lin([&](std::size_t a) { return g.yion[a]; });
        q.ydot[kq] = lin([&](std::size_t a) { return g.ydot[a]; });
        q.enu[kq] = lin([&](std::size_t a) { return g.enu[a]; });
        q.logrho[kq] = lin([&](std::size_t a) { return g.logrho[a]; });
        q.valid[kq] = x >= lp[0] && x <= lp[std::size_t(nr - 1)];
      }
    }
  return t;
}

double NseTable::binding_per_nucleon(const std::string& name) const {
  auto it = bind_.find(name);
  if (it == bind_.end())
    throw Error("the NSE table '" + path_ + "' has no binding energy for '" + name +
                "' (its network's nuclides are listed in its header)");
  return it->second;
}

NseState NseTable::lookup(double ye, double dens, double emq) const {
  NseState s = find(rho_, ye, std::log10(dens), emq);
  s.dens = dens;
  return s;
}

NseState NseTable::lookup_isobaric(double ye, double pres, double hmq) const {
  return find(pres_, ye, std::log10(pres), hmq);
}

NseState NseTable::find(const Grid& g, double ye, double xq, double emq) const {
  NseState s;
  auto cell = [](double x, double x0, double dx, int nn, int& i, double& f) {
    double u = (x - x0) / dx;
    int flag = 0;
    // The edges themselves are inside (to rounding: 0.5 is node 14 of 0.43 + 0.005 i).
    if (!(u >= -1e-9)) {  // NaN as well
      u = 0.0;
      flag = 1;
    } else if (u > nn - 1 + 1e-9) {
      u = nn - 1;
      flag = 1;
    }
    u = std::clamp(u, 0.0, double(nn - 1));
    i = std::min(int(u), nn - 2);
    f = u - i;
    return flag;
  };
  int iy = 0, ir = 0;
  double fy = 0, fr = 0;
  if (cell(ye, ye0_, dye_, ny_, iy, fy)) s.out_of_table |= 1;
  if (cell(xq, g.x0, g.dx, g.n, ir, fr)) s.out_of_table |= 2;
  // Cubic (Lagrange, 4 nodes) in Ye and in log rho. Linear interpolation put T 0.3-0.8 %
  // off between nodes (measured against pynucastro): the degenerate electrons' energy goes
  // as rho^(1/3), and the NSE composition turns sharply near Ye = 0.5 (56Ni to 54Fe and
  // 58Ni).
  auto lagrange = [](int i, double frac, int nn, double* w) {
    const int j0 = std::clamp(i - 1, 0, nn - 4);
    const double x = i + frac - j0;  // position in the stencil, 0..3
    for (int b = 0; b < 4; ++b) {
      double v = 1.0;
      for (int c = 0; c < 4; ++c)
        if (c != b) v *= (x - c) / double(b - c);
      w[b] = v;
    }
    return j0;
  };
  double wy[4], wr[4];
  const int y0 = lagrange(iy, fy, ny_, wy);
  const int r0 = lagrange(ir, fr, g.n, wr);
  std::size_t base[16];
  double wt[16];
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      base[a * 4 + b] = at(g, y0 + a, r0 + b, 0);
      wt[a * 4 + b] = wy[a] * wr[b];
    }
  auto mix = [&](const std::vector<double>& v, int it) {
    double m = 0.0;
    for (int q = 0; q < 16; ++q) m += wt[q] * v[base[q] + std::size_t(it)];
    return m;
  };
  // Bisection for the temperature cell whose emq brackets the state's.
  int lo = 0, hi = nt_ - 1;
  double elo = mix(g.key, lo), ehi = mix(g.key, hi);
  double f = 0.0;
  if (!(emq >= elo)) {
    s.out_of_table |= 4;
    hi = 1;
    f = 0.0;
  } else if (emq > ehi) {
    s.out_of_table |= 8;
    lo = nt_ - 2;
    hi = nt_ - 1;
    f = 1.0;
  } else {
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      const double em = mix(g.key, mid);
      if (emq >= em) {
        lo = mid;
        elo = em;
      } else {
        hi = mid;
        ehi = em;
      }
    }
    f = (emq - elo) / (ehi - elo);
  }
  if (hi != lo + 1) hi = lo + 1;
  // Cubic Hermite in the temperature index with centred (Catmull-Rom) slopes: emq is
  // convex in log T (heat capacity, dissociation), and its chord put T 0.2-0.7 % low
  // between nodes. Solved for the fraction f of the cell by safeguarded Newton from the
  // chord's f (emq rises across the cell: its ends bracket the state).
  auto hermite = [&](const std::vector<double>& v, double t) {
    const double a = mix(v, lo), b = mix(v, hi);
    const double am = lo > 0 ? mix(v, lo - 1) : 2 * a - b;
    const double bp = hi < nt_ - 1 ? mix(v, hi + 1) : 2 * b - a;
    const double ma = 0.5 * (b - am), mb = 0.5 * (bp - a);
    const double t2 = t * t, t3 = t2 * t;
    const double value = (2 * t3 - 3 * t2 + 1) * a + (t3 - 2 * t2 + t) * ma +
                         (-2 * t3 + 3 * t2) * b + (t3 - t2) * mb;
    const double slope = (6 * t2 - 6 * t) * a + (3 * t2 - 4 * t + 1) * ma + (-6 * t2 + 6 * t) * b +
                         (3 * t2 - 2 * t) * mb;
    return std::pair<double, double>{value, slope};
  };
  if (s.out_of_table & 12) {
    // Clamped: the edge node itself.
  } else {
    double flo = 0.0, fhi = 1.0;
    for (int it = 0; it < 30; ++it) {
      const auto [h, dh] = hermite(g.key, f);
      const double g = h - emq;
      if (g > 0.0)
        fhi = f;
      else
        flo = f;
      double fn = dh > 0.0 ? f - g / dh : 0.5 * (flo + fhi);
      if (!(fn > flo && fn < fhi)) fn = 0.5 * (flo + fhi);
      if (std::fabs(fn - f) < 1e-13) {
        f = fn;
        break;
      }
      f = fn;
    }
  }
  auto lin = [&](const std::vector<double>& v) { return (1 - f) * mix(v, lo) + f * mix(v, hi); };
  for (int q = 0; q < 16; ++q)
    if (wt[q] != 0.0 &&
        (!g.valid[base[q] + std::size_t(lo)] || !g.valid[base[q] + std::size_t(hi)]))
      s.out_of_table |= 2;
  s.dens = std::pow(10.0, lin(g.logrho));
  s.temp = std::pow(10.0, lt0_ + (lo + f) * dlt_);
  s.qbar = hermite(g.qbar, f).first;
  s.yion = hermite(g.yion, f).first;
  s.ydot = lin(g.ydot);
  s.enu = lin(g.enu);
  return s;
}

}  // namespace tessera::burn

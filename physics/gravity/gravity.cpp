// Gravity: a uniform field or multipole self-gravity (Couch, Graziani & Flocke 2013),
// with operator-split momentum and energy sources. See gravity.hpp for the scheme.
#include "physics/gravity/gravity.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "base/params.hpp"
#include "mesh/flux_register.hpp"
#include "parallel/exact_sum.hpp"
#include "perf/timers.hpp"

namespace tessera::gravity {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kMomx = 1, kEtot = 4;  // hydro's conserved variables (physics/hydro/hydro.hpp)
}  // namespace

void Gravity::declare_params(base::Params& p) {
  p.declare_string("gravity.type", "none", {"none", "constant", "multipole"},
                   "gravity: none, a uniform field, or multipole self-gravity");
  p.declare_real("gravity.grav_const", constants::newton_g, 0.0, 1e300,
                 "Newton's constant G (cgs; a problem in code units sets 1)");
  p.declare_real("gravity.constant_g", -981.0, -1e300, 1e300,
                 "constant: acceleration along gravity.direction (cm/s^2, signed)");
  p.declare_string("gravity.direction", "y", {"x", "y", "z"},
                   "constant: axis of the uniform field (r-z cylindrical: x = r, y = z)");
  p.declare_int("gravity.mpole_lmax", 8, 0, Expansion::kMaxL,
                "multipole: highest order l of the expansion (1-D spherical uses 0)");
  p.declare_bool("gravity.mpole_symmetric", false,
                 "multipole, 2-D cylindrical: the body is mirrored about the plane z = ymin "
                 "(even l doubled, odd l dropped)");
  // Wider bins put masses on the wrong side of the points in their bin, where the
  // series diverges as (r'/r)^l: at 2 zone widths the 3-D Maclaurin error is O(1).
  p.declare_real(
      "gravity.mpole_bin_width", 0.5, 0.05, 1.0,
      "multipole: width of the radial bins beyond the inner zone, in finest zone widths");
  p.declare_real("gravity.mpole_inner_zone_size", 16.0, 0.0, 1e4,
                 "multipole: radius of the inner zone of finer bins around the centre, in "
                 "finest zone widths (0: none)");
  p.declare_real("gravity.mpole_inner_zone_resolution", 0.1, 0.01, 1.0,
                 "multipole: width of the inner-zone bins, in finest zone widths");
  p.declare_int("gravity.mpole_uniform_bins", 4096, 1, 1000000,
                "multipole: bins of mpole_bin_width before the widths grow geometrically");
  p.declare_real("gravity.cfl", 0.5, 0.0, 10.0,
                 "time-step limit cfl * min sqrt(dx / |g|) over the zones (0: none)");
  p.declare_string("gravity.energy_source", "flux", {"flux", "momentum"},
                   "energy source: flux (hydro's face mass fluxes times the time-centred "
                   "potential difference: etot + egrav conserved) or momentum (g . time-centred "
                   "momentum: the kinetic energy change)");
  p.declare_real("gravity.ambient_density", 0.0, 0.0, 1e300,
                 "flux energy source: zones below this density take the momentum form instead "
                 "(ambient gas next to a star; 0: none)");
}

Gravity::Gravity(const base::Params& p) {
  const auto& t = p.get_string("gravity.type");
  kind_ = t == "constant" ? Kind::constant : (t == "multipole" ? Kind::multipole : Kind::none);
  G_ = p.get_real("gravity.grav_const");
  g0_ = p.get_real("gravity.constant_g");
  const auto& d = p.get_string("gravity.direction");
  dir_ = d == "x" ? 0 : (d == "y" ? 1 : 2);
  lmax_ = int(p.get_int("gravity.mpole_lmax"));
  symmetric_ = p.get_bool("gravity.mpole_symmetric");
  bin_width_ = p.get_real("gravity.mpole_bin_width");
  inner_size_ = p.get_real("gravity.mpole_inner_zone_size");
  inner_res_ = p.get_real("gravity.mpole_inner_zone_resolution");
  uniform_bins_ = int(p.get_int("gravity.mpole_uniform_bins"));
  cfl_ = p.get_real("gravity.cfl");
  energy_ = p.get_string("gravity.energy_source") == "momentum" ? EnergySource::momentum
                                                                : EnergySource::flux;
  ambient_density_ = p.get_real("gravity.ambient_density");
  ndim_ = int(p.get_int("mesh.ndim"));
  const auto& geo = p.get_string("mesh.geometry");
  geometry_ = geo == "cylindrical"
                  ? mesh::Geometry::cylindrical
                  : (geo == "spherical" ? mesh::Geometry::spherical : mesh::Geometry::cartesian);
  if (kind_ == Kind::constant && dir_ >= ndim_)
    throw Error("gravity.direction = '" + d + "' is not an axis of this " + std::to_string(ndim_) +
                "-D mesh");
  if (kind_ == Kind::multipole) {
    const bool ok = (geometry_ == mesh::Geometry::cartesian && ndim_ == 3) ||
                    (geometry_ == mesh::Geometry::cylindrical && ndim_ == 2) ||
                    (geometry_ == mesh::Geometry::spherical && ndim_ == 1);
    if (!ok)
      throw Error(
          "gravity.type = 'multipole' needs 3-D cartesian, 2-D cylindrical or 1-D "
          "spherical geometry (got " +
          std::to_string(ndim_) + "-D " + geo + ")");
    if (symmetric_ && geometry_ != mesh::Geometry::cylindrical)
      throw Error("gravity.mpole_symmetric applies to 2-D cylindrical geometry only");
    if (geometry_ == mesh::Geometry::spherical) lmax_ = 0;
  }
}

std::vector<physics::ArenaNeed> Gravity::memory_needs(const std::vector<mesh::VarInfo>&,
                                                      const mesh::BlockShape& s,
                                                      long maxblocks) const {
  if (kind_ == Kind::none) return {};
  // Heap, not an arena (config ""): the planner takes the bytes as they are, so the upper
  // bound (every slot in use) is given.
  // The last solve's field is in unk (gac*). Flux source: the face potentials of the last
  // solve and hydro's face mass fluxes. Momentum source with hydro coupled (set in hydro's
  // bind, after the planner asks): the momentum at the start of the step, counted always
  // (an upper bound).
  if (energy_ == EnergySource::flux) {
    const double per_slot = 2.0 * double(FaceLayout(s).size()) * sizeof(double);
    return {{"gravity faces (heap)", "", per_slot * double(maxblocks), 0.0,
             "M*2*faces*8: face potentials and face mass fluxes per block slot in use"}};
  }
  const double per_slot = double(s.interior_cells()) * s.ndim * sizeof(double);
  return {{"gravity momentum (heap)", "", per_slot * double(maxblocks), 0.0,
           "M*I*ndim*8: the step's starting momentum per block slot in use (upper bound)"}};
}

physics::Declarations Gravity::declarations() const {
  physics::Declarations d;
  auto& v = d.variables;
  v.push_back({"gpot", -1, mesh::VarKind::auxiliary, false, true, name()});
  if (kind_ != Kind::none)
    for (int a = 0; a < ndim_; ++a)
      v.push_back(
          {std::string("gac") + "xyz"[a], a, mesh::VarKind::auxiliary, true, false, name()});
  for (auto& x : v) x.recomputable = true;  // initialise solves for them again
  if (kind_ != Kind::none) d.totals = {"egrav"};
  d.block_state = kind_ != Kind::none;  // pprev_, phif_ per block slot
  return d;
}

void Gravity::bind(mesh::Mesh& m, const physics::Services& /*services*/,
                   const physics::RunContext& /*ctx*/) {
  idens_ = m.var_index("dens");
  imom_ = m.var_index("momx");
  ietot_ = m.var_index("etot");
  igpot_ = m.var_index("gpot");
  for (int a = 0; a < 3; ++a) igac_[a] = m.var_index(std::string("gac") + "xyz"[a]);
  faces_ = FaceLayout(m.shape());
  maxblocks_ = m.storage().maxblocks();
  if (idens_ != 0 || imom_ != kMomx || ietot_ != kEtot)
    throw Error("gravity: needs hydro's conserved variables (dens, momx..momz, etot) in unk");
}

double* Gravity::mass_fluxes(int slot) {
  mflux_.resize(std::size_t(maxblocks_));
  auto& f = mflux_[std::size_t(slot)];
  f.resize(faces_.size(), 0.0);
  return f.data();
}

void Gravity::initialise(mesh::Mesh& m) {
  solve(m, 0.0);
  regrid_change_ = 0.0;  // the initial refinement's regrids are not the run's
}

double Gravity::potential_energy(mesh::Mesh& m) const {
  const auto& s = m.shape();
  return m.leaf_sums_of_views(1, [&](int, const auto& u, const mesh::BlockGeom& g, double* out) {
    double acc = 0.0;
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      double e = 0.0;
      totals_impl(u, i, j, k, &e);
      acc += e * g.volume(i - s.g(0));
    });
    out[0] = acc;
  })[0];
}

void Gravity::before_regrid(mesh::Mesh& m) {
  if (kind_ != Kind::none) egrav_before_ = potential_energy(m);
}

void Gravity::after_regrid(mesh::Mesh& m) {
  solve(m, 0.0);
  if (kind_ != Kind::none) regrid_change_ += potential_energy(m) - egrav_before_;
}

void Gravity::restore(mesh::Mesh& m, const physics::CheckpointInfo& c) {
  if (!c.initialised) solve(m, 0.0);
}

void Gravity::advance(mesh::Mesh& m, double dt) {
  solve(m, dt);
}

double Gravity::max_dt(mesh::Mesh& /*m*/) const {
  if (kind_ == Kind::none || cfl_ <= 0.0 || !(dt_limit_ > 0.0))
    return std::numeric_limits<double>::max();
  return cfl_ * dt_limit_;
}

void Gravity::build_expansion(mesh::Mesh& m) {
  TESSERA_REGION("moments");
  const auto t0 = Clock::now();
  const auto& tree = m.tree();
  const auto& tg = tree.geometry();
  const auto& s = m.shape();
  const bool cyl = geometry_ == mesh::Geometry::cylindrical;
  const bool sph = geometry_ == mesh::Geometry::spherical;
  // A zone is a point mass at its centre (cylindrical: a ring, spherical: a shell, at the
  // volume centroid in r).
  auto zone_r = [&](const mesh::BlockGeom& g, int i) {
    const double r0 = g.lo[0] + i * g.dx[0];
    return cyl || sph ? mesh::geometry::centroid(geometry_, r0, r0 + g.dx[0]) : g.x(i);
  };

  // Step 1: the centre. Cartesian: the centre of mass (weights rho dV, the exact centre of
  // mass, so the dipole moment vanishes); cylindrical: on the axis at the z of the centre
  // of mass, or on the plane z = ymin with equatorial symmetry; spherical: the origin.
  centre_ = {0.0, 0.0, 0.0};
  if (sph || (cyl && symmetric_)) {
    if (cyl) centre_[1] = tg.lo[1];
  } else {
    // The mass and its first moments, summed exactly over leaves (Mesh::leaf_sums: the same
    // bits on any rank count, a payload of four sums).
    const auto tot =
        m.leaf_sums_of_views(4, [&](int, const auto& u, const mesh::BlockGeom& g, double* out) {
          double acc[4] = {0, 0, 0, 0};
          mesh::for_each_zone(s, [&](int i, int j, int k) {
            const int ii = i - s.g(0), jj = j - s.g(1), kk = k - s.g(2);
            const double dm = u(idens_, i, j, k) * g.volume(ii);
            acc[0] += dm;
            acc[1] += dm * g.x(ii);
            acc[2] += dm * g.y(jj);
            acc[3] += dm * g.z(kk);
          });
          for (int q = 0; q < 4; ++q) out[q] = acc[q];
        });
    if (!(tot[0] > 0.0)) throw Error("gravity: the total mass on the mesh is not positive");
    if (cyl) {
      centre_[1] = tot[2] / tot[0];
    } else {
      for (int a = 0; a < 3; ++a) centre_[a] = tot[a + 1] / tot[0];
    }
  }

  // Step 2: the length scale (the farthest domain corner) and the radial bins: an inner
  // zone of inner_size finest zone widths in bins of inner_res of them, then bins of
  // bin_width zone widths, growing beyond uniform_bins of them.
  double far2 = 0.0;
  for (int c = 0; c < 8; ++c) {
    double d2 = 0.0;
    for (int a = 0; a < ndim_; ++a) {
      const double x = (c >> a) & 1 ? tg.hi[a] : tg.lo[a];
      d2 += (x - centre_[a]) * (x - centre_[a]);
    }
    far2 = std::max(far2, d2);
  }
  scale_ = std::sqrt(far2);
  const auto fdx = m.finest_dx();
  double dmin = fdx[0];
  for (int a = 1; a < ndim_; ++a) dmin = std::min(dmin, fdx[a]);
  const RadialBins bins(inner_res_ * dmin / scale_, int(std::ceil(inner_size_ / inner_res_)),
                        bin_width_ * dmin / scale_, uniform_bins_, 1.0 + 1e-9);
  exp_ = Expansion(lmax_, cyl || sph ? 0 : lmax_, bins);

  // Step 3: per-leaf partial moments over the leaf's own range of bins, in zone order.
  const std::size_t rs = exp_.row_size();
  std::vector<double> mine;
  std::vector<int> qz(s.interior_cells());
  auto pos = [&](const mesh::BlockGeom& g, int ii, int jj, int kk, double* x) {
    if (cyl) {
      x[0] = zone_r(g, ii) / scale_, x[1] = 0.0, x[2] = (g.y(jj) - centre_[1]) / scale_;
    } else if (sph) {
      x[0] = zone_r(g, ii) / scale_, x[1] = 0.0, x[2] = 0.0;
    } else {
      x[0] = (g.x(ii) - centre_[0]) / scale_;
      x[1] = (g.y(jj) - centre_[1]) / scale_;
      x[2] = (g.z(kk) - centre_[2]) / scale_;
    }
  };
  m.for_each_leaf([&](int, const auto& u, const mesh::BlockGeom& g) {
    int qlo = std::numeric_limits<int>::max(), qhi = -1;
    std::size_t c = 0;
    double x[3];
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      pos(g, i - s.g(0), j - s.g(1), k - s.g(2), x);
      const int q =
          std::min(bins.bin(std::sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])), bins.count - 1);
      qz[c++] = q;
      qlo = std::min(qlo, q), qhi = std::max(qhi, q);
    });
    const std::size_t head = mine.size(), nq = std::size_t(qhi - qlo + 1);
    mine.push_back(double(qlo));
    mine.push_back(double(nq));
    mine.resize(head + 2 + nq * rs, 0.0);
    c = 0;
    mesh::for_each_zone(s, [&](int i, int j, int k) {
      const int ii = i - s.g(0);
      pos(g, ii, j - s.g(1), k - s.g(2), x);
      const double dm = u(idens_, i, j, k) * g.volume(ii);
      exp_.accumulate(dm, x[0], x[1], x[2],
                      mine.data() + head + 2 + std::size_t(qz[c++] - qlo) * rs);
    });
  });

  // Step 4: the leaves' partial moments summed over ranks bin by bin, reproducibly
  // (parallel::WindowedSums: the same bits on any rank count; a payload of
  // WindowedSums::kBytes per moment of every bin, whatever the number of blocks). A moment
  // has at most one partial per leaf.
  const std::size_t nmom = std::size_t(bins.count) * rs;
  const auto sums =
      parallel::WindowedSums::allreduce(m.comm(), nmom, std::max(1, tree.size()), [&](auto&& emit) {
        for (std::size_t o = 0; o < mine.size();) {
          const std::size_t first = std::size_t(mine[o]) * rs, n = std::size_t(mine[o + 1]) * rs;
          for (std::size_t c = 0; c < n; ++c) emit(first + c, mine[o + 2 + c]);
          o += 2 + n;
        }
      });
  reduced_bytes_ = nmom * parallel::WindowedSums::kBytes;
  for (int q = 0; q < bins.count; ++q) exp_.add_row(q, sums.data() + std::size_t(q) * rs);
  if (symmetric_) exp_.mirror_equator();
  exp_.finish();
  moment_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

void Gravity::solve(mesh::Mesh& m, double dt) {
  if (kind_ == Kind::none) return;
  TESSERA_REGION("gravity");
  const auto t0 = Clock::now();
  const auto& s = m.shape();
  const bool cyl = geometry_ == mesh::Geometry::cylindrical;
  const bool sph = geometry_ == mesh::Geometry::spherical;
  if (kind_ == Kind::multipole) build_expansion(m);
  const double factor = -G_ / scale_;
  // phi at a physical point.
  auto phi_at = [&](double x, double y, double z) {
    if (kind_ == Kind::constant) {
      const double c[3] = {x, y, z};
      return -g0_ * c[dir_];
    }
    if (cyl) return factor * exp_.sum(x / scale_, 0.0, (y - centre_[1]) / scale_);
    if (sph) return factor * exp_.sum(x / scale_, 0.0, 0.0);
    return factor * exp_.sum((x - centre_[0]) / scale_, (y - centre_[1]) / scale_,
                             (z - centre_[2]) / scale_);
  };
  const int nx = s.ni(0), ny = s.ni(1), nz = s.ni(2);
  // Face potentials of one block's interior zones (FaceLayout).
  const FaceLayout& FL = faces_;
  std::vector<double> face(FL.size(), 0.0);
  const bool flux = energy_ == EnergySource::flux;
  // The flux source needs hydro's fluxes of this step; without them no mass moved.
  const bool work = flux && dt > 0.0 && fluxes_fresh_;
  auto& fr = m.flux_register();
  if (flux) phif_.resize(std::size_t(m.storage().maxblocks()));
  // Curvilinear: A/V of a zone's low and high radial faces, per zone along axis 0.
  const bool curved = cyl || sph;
  std::vector<double> alo(std::size_t(nx), 0.0), ahi(std::size_t(nx), 0.0);
  double limit = std::numeric_limits<double>::max();
  {
    TESSERA_REGION("potential");
    const std::size_t ncell = s.interior_cells();
    m.for_each_leaf([&](int id, const auto& u, const mesh::BlockGeom& g) {
      const int slot = m.slot(id);
      double* pn = nullptr;  // coupled momentum source: mom^n of this block
      if (coupled_ && !flux) {
        pprev_.resize(std::size_t(m.storage().maxblocks()));
        auto& pp = pprev_[std::size_t(slot)];
        pp.resize(ncell * std::size_t(ndim_), 0.0);
        pn = pp.data();
      }
      // Step 1: the potential at every face centre of the interior zones.
      for (int a = 0; a < ndim_; ++a) {
        const int fx = nx + (a == 0), fy = ny + (a == 1), fz = nz + (a == 2);
        for (int k = 0; k < fz; ++k)
          for (int j = 0; j < fy; ++j)
            for (int i = 0; i < fx; ++i) {
              const double x = a == 0 ? g.lo[0] + i * g.dx[0] : g.x(i);
              const double y = ndim_ < 2 ? 0.0 : (a == 1 ? g.lo[1] + j * g.dx[1] : g.y(j));
              const double z = ndim_ < 3 ? 0.0 : (a == 2 ? g.lo[2] + k * g.dx[2] : g.z(k));
              face[FL.index(a, i, j, k)] = phi_at(x, y, z);
            }
      }
      // The flux source: the last solve's face potentials (phi^n) and hydro's fluxes.
      const double* pold = nullptr;
      const double* mf = nullptr;
      if (flux) {
        auto& pf = phif_[std::size_t(slot)];
        if (pf.size() != face.size()) pf = face;  // a slot never solved: no time centring
        pold = pf.data();
        if (work && std::size_t(slot) < mflux_.size() &&
            mflux_[std::size_t(slot)].size() == face.size())
          mf = mflux_[std::size_t(slot)].data();
        if (mf && curved)
          for (int i = 0; i < nx; ++i) {
            const double r0 = g.lo[0] + i * g.dx[0], r1 = r0 + g.dx[0];
            const double vol = mesh::geometry::shell_volume(geometry_, r0, r1);
            alo[std::size_t(i)] = mesh::geometry::radial_area(geometry_, r0) / vol;
            ahi[std::size_t(i)] = mesh::geometry::radial_area(geometry_, r1) / vol;
          }
      }
      // Step 2: gpot is the mean of the zone's faces, g the difference of opposite faces;
      // the source terms.
      for (int k = 0; k < nz; ++k)
        for (int j = 0; j < ny; ++j)
          for (int i = 0; i < nx; ++i) {
            const int I = i + s.g(0), J = j + s.g(1), K = k + s.g(2);
            double sum = 0.0, gv[3] = {0, 0, 0}, g2 = 0.0;
            for (int a = 0; a < ndim_; ++a) {
              const double lo = face[FL.index(a, i, j, k)];
              const double hi = face[FL.index(a, i + (a == 0), j + (a == 1), k + (a == 2))];
              sum += lo + hi;
              gv[a] = kind_ == Kind::constant ? (a == dir_ ? g0_ : 0.0) : -(hi - lo) / g.dx[a];
              g2 += gv[a] * gv[a];
            }
            const double phi_old = u(igpot_, I, J, K), phi_new = sum / (2 * ndim_);
            u(igpot_, I, J, K) = phi_new;
            if (g2 > 0.0) {
              double dx = g.dx[0];
              for (int a = 1; a < ndim_; ++a) dx = std::min(dx, g.dx[a]);
              limit = std::min(limit, std::sqrt(dx / std::sqrt(g2)));
            }
            // The field at mid-step: the mean of the field of the density before this
            // step's hydro (the last solve's, still in gac*) and after it (this solve's).
            const std::size_t z = ((std::size_t(k) * ny + j) * nx + i) * std::size_t(ndim_);
            double wk = 0.0;  // the momentum form's energy source
            if (dt > 0.0) {
              const double rho = u(idens_, I, J, K);
              for (int a = 0; a < ndim_; ++a) {
                const double gm = 0.5 * (u(igac_[a], I, J, K) + gv[a]);
                const double p0 = u(kMomx + a, I, J, K), p1 = p0 + dt * rho * gm;
                u(kMomx + a, I, J, K) = p1;
                wk += 0.5 * ((pn ? pn[z + a] : p0) + p1) * gm;
              }
              if (!flux) u(kEtot, I, J, K) += dt * wk;
            }
            if (mf) {
              // The work of the mass through each face against the time-centred
              // potential difference between the face and the zone.
              const double pc = 0.5 * (phi_old + phi_new);
              double de = 0.0;
              for (int a = 0; a < ndim_; ++a) {
                const std::size_t lo = FL.index(a, i, j, k);
                const std::size_t hi = FL.index(a, i + (a == 0), j + (a == 1), k + (a == 2));
                const double clo = curved && a == 0 ? alo[std::size_t(i)] : 1.0 / g.dx[a];
                const double chi = curved && a == 0 ? ahi[std::size_t(i)] : 1.0 / g.dx[a];
                de += clo * mf[lo] * (0.5 * (pold[lo] + face[lo]) - pc) -
                      chi * mf[hi] * (0.5 * (pold[hi] + face[hi]) - pc);
              }
              // Ambient material (Castro's caveat for its grav_source_type 4): the flux
              // form ties a zone's energy to the mass through its faces, which next to a
              // dense zone can exceed a near-empty zone's whole thermal energy; below
              // gravity.ambient_density the momentum form (the kinetic energy change) is
              // used.
              if (u(idens_, I, J, K) < ambient_density_) {
                de = wk;
                ++ambient_;
              }
              u(kEtot, I, J, K) += dt * de;
            }
            for (int a = 0; a < ndim_; ++a) u(igac_[a], I, J, K) = gv[a];
            if (pn)
              for (int a = 0; a < ndim_; ++a) pn[z + a] = u(kMomx + a, I, J, K);
          }
      if (mf) {
        // The potential-weighted mass flux G = F phi_f of the block's boundary faces into
        // the flux register (dens's slot, [t2][t1] per face): correct() below gives the
        // coarse side of a fine/coarse face the fine faces' area average in place of its
        // own, so the face terms cancel there too.
        for (int a = 0; a < ndim_; ++a)
          for (int side = 0; side < 2; ++side) {
            double* R = fr.face(slot, 2 * a + side);
            FL.boundary_faces(a, side, [&](std::size_t r, std::size_t f) {
              R[r] = mf[f] * (0.5 * (pold[f] + face[f]));
            });
          }
      }
      if (flux) std::copy(face.begin(), face.end(), phif_[std::size_t(slot)].begin());
    });
  }
  if (work) fr.correct(m.storage(), m.tree(), m.comm(), dt, {kEtot});
  if (dt > 0.0) fluxes_fresh_ = false;
  dt_limit_ = limit < std::numeric_limits<double>::max() ? limit : 0.0;
  ++solves_;
  seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
}

nlohmann::json Gravity::diagnostics(mesh::Mesh& m, physics::Diagnostic /*what*/) const {
  const MPI_Comm comm = m.comm();
  const char* names[] = {"none", "constant", "multipole"};
  nlohmann::json j{{"type", names[int(kind_)]}};
  if (kind_ == Kind::none) return j;
  double sec[2] = {seconds_, moment_seconds_};
  MPI_Allreduce(MPI_IN_PLACE, sec, 2, MPI_DOUBLE, MPI_MAX, comm);
  j["solves"] = solves_;
  j["egrav_regrid_change"] = regrid_change_;
  if (energy_ == EnergySource::flux) {
    long amb = ambient_;
    MPI_Allreduce(MPI_IN_PLACE, &amb, 1, MPI_LONG, MPI_SUM, comm);
    j["ambient_zone_steps"] = amb;  // zone-steps that took the momentum form (ambient)
  }
  j["energy_source"] = energy_ == EnergySource::flux ? "flux" : "momentum";
  j["seconds_max_rank"] = sec[0];
  if (kind_ == Kind::constant) {
    j["constant_g"] = g0_;
    j["direction"] = std::string(1, "xyz"[dir_]);
    return j;
  }
  j["grav_const"] = G_;
  j["lmax"] = lmax_;
  j["mmax"] = exp_.mmax();
  j["symmetric"] = symmetric_;
  j["centre"] = centre_;
  j["bins"] = exp_.bins().count;
  j["bin_width"] = exp_.bins().h * scale_;
  j["uniform_bins"] = exp_.bins().nu;
  j["inner_bins"] = exp_.bins().ni;
  j["inner_bin_width"] = exp_.bins().hi * scale_;
  j["moment_bytes_reduced"] = reduced_bytes_;
  j["moment_seconds_max_rank"] = sec[1];
  return j;
}

physics::Registration Gravity::registration() {
  return physics::registration_of<Gravity>(
      "gravity", physics::UnitRole::operator_unit,
      "self-gravity (constant or multipole) and its momentum and energy sources",
      {.after = {"hydro"}}, {"gravity"});
}

}  // namespace tessera::gravity

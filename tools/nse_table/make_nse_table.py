#!/usr/bin/env python3
"""The NSE table of the three-stage Type Ia burn (physics/burn/three_stage.hpp).

A deterministic build step (`make nse-table`, run by `make test` and by `make run` for a
problem with burn.model = "three_stage"): nuclear statistical equilibrium of NUCLEI (96
nuclides, n and p through the iron group, down to Z/A = 0.43) on a grid of
(log10 rho, log10 T, Ye), from public nuclear data read through pynucastro (pinned in the
Makefile): atomic mass excesses (AME), ground-state spins and temperature-dependent
partition functions (Rauscher) of each nuclide, and the tabulated weak rates (electron
capture, beta decay, with their neutrino energy losses: Suzuki et al. 2016, Langanke &
Martinez-Pinedo 2001, Oda et al. 1994, Fuller et al. 1985, pynucastro's
TabularWeakLibrary).

At each point it solves the two NSE conditions (mass and charge conservation) for the
proton and neutron chemical potentials, with the Coulomb correction of Chabrier &
Potekhin (1998, eq. 28) in each nuclide's chemical potential, exactly the equations of
pynucastro's NSENetwork.get_comp_nse, but vectorised over the whole grid (Newton on the
log of both sums, continued from hot to cold): 23,715 points in seconds instead of an
hour. tests/python/test_nse.py checks points against pynucastro's own solver.

Columns: log10 rho, log10 T, Ye, abar, qbar (<B/A> in MeV per nucleon), dYe/dt (1/s, the
weak rates), eps_nu (erg/g/s, their neutrino losses). Tessera reads the file, turns every
node into e - qbar with its own Helmholtz EOS and interpolates in (Ye, log rho, e - qbar)
(physics/burn/nse_table.cpp); the file's SHA-256 goes into every output that used it.
"""
import argparse
import hashlib
import os
import sys
import time

import numpy as np

NUCLEI = (["n", "p", "d", "he3", "he4", "c12", "n13", "n14", "o16", "f18", "ne20", "ne21",
           "ne22", "na23", "mg24", "al27", "si28", "p31", "s32", "cl35", "ar36", "k39", "ca40",
           "sc43", "cu59", "zn60"]
          + [f"ca{a}" for a in range(45, 49)] + [f"sc{a}" for a in range(45, 50)]
          + [f"ti{a}" for a in range(44, 53)] + [f"v{a}" for a in range(47, 55)]
          + [f"cr{a}" for a in range(48, 57)] + [f"mn{a}" for a in range(51, 59)]
          + [f"fe{a}" for a in range(52, 61)] + [f"co{a}" for a in range(54, 62)]
          + [f"ni{a}" for a in range(56, 66)])

# The grid (Microphysics' nse_tabular spans the same T and rho; Ye down to the network's
# lowest Z/A, 0.43).
LOGT = np.round(np.linspace(9.4, 10.4, 51), 10)
LOGRHO = np.round(np.linspace(7.0, 10.0, 31), 10)
YE = np.round(np.linspace(0.43, 0.50, 15), 10)


def nuclear_data():
    """The nuclides as pynucastro Nucleus objects and their weak rates."""
    import pynucastro as pyna
    nuc = [pyna.Nucleus(n) for n in NUCLEI]
    lib = pyna.TabularWeakLibrary().linking_nuclei(nuc, print_warning=False)
    return pyna, nuc, lib.get_rates()


def coulomb_mu(pyna, Z, logrho, T, ye):
    """Coulomb chemical potential of each nuclide (MeV), Chabrier & Potekhin 1998 eq. 28,
    shape (..., nuclides): the formula pynucastro's NSENetwork._evaluate_mu_c uses."""
    c = pyna.constants.constants
    n_e = ye * 10.0**logrho / c.m_u_C18
    a1, a2 = -0.9052, 0.6322
    a3 = -0.5 * np.sqrt(3.0) - a1 / np.sqrt(a2)
    gam = (c.q_e**2 / c.k * np.cbrt(4.0 * np.pi / 3.0)) * np.cbrt(n_e) / T
    g = gam[..., None] * Z**(5.0 / 3.0)
    f = (a1 * (np.sqrt(g * (a2 + g)) - a2 * np.log(np.sqrt(g / a2) + np.sqrt(1.0 + g / a2)))
         + 2.0 * a3 * (np.sqrt(g) - np.arctan(np.sqrt(g))))
    return c.erg2MeV * c.k * T[..., None] * f


def solve_nse(pyna, nuc, logrho, T, ye, guess=None, tol=1e-11):
    """NSE at the states (arrays of one shape): mass fractions (..., nuclides) and the
    chemical potentials (u_p + mu_c,p, u_n) in units of kT. Newton on
    F = (log sum X, log sum X Z/A - log Ye) with the step limited to 2 kT."""
    c = pyna.constants.constants
    Z = np.array([n.Z for n in nuc], float)
    N = np.array([n.N for n in nuc], float)
    A = np.array([n.A for n in nuc], float)
    kT = c.k_MeV * T
    lnG = np.array([[n.partition_function.eval(t) if n.partition_function is not None else 0.0
                     for n in nuc] for t in np.ravel(T)]).reshape(T.shape + (len(nuc),))
    g = np.array([n.spin_states for n in nuc], float)
    m = np.array([n.A_nuc for n in nuc], float) * c.m_u_C18
    pref = (np.log(m**2.5 * g)[None, :] - np.log(10.0**logrho)[..., None]
            + 1.5 * np.log(c.k * T / (2.0 * np.pi * c.hbar**2))[..., None])
    muc = coulomb_mu(pyna, Z, logrho, T, ye)
    bind = np.array([n.nucbind * n.A for n in nuc], float)
    base = pref + lnG + (bind - muc) / kT[..., None]
    za = Z / A
    if guess is None:
        a = np.full(T.shape, -8.8) / kT
        b = np.full(T.shape, -8.8) / kT
    else:
        a, b = guess
    lye = np.log(ye)
    for it in range(200):
        e = base + Z * a[..., None] + N * b[..., None]
        emax = e.max(axis=-1, keepdims=True)
        x = np.exp(e - emax)
        s = x.sum(axis=-1)
        w = x * za
        sw = w.sum(axis=-1)
        f1 = np.log(s) + emax[..., 0]
        f2 = np.log(sw) + emax[..., 0] - lye
        j11 = (x * Z).sum(-1) / s
        j12 = (x * N).sum(-1) / s
        j21 = (w * Z).sum(-1) / sw
        j22 = (w * N).sum(-1) / sw
        det = j11 * j22 - j12 * j21
        da = -(j22 * f1 - j12 * f2) / det
        db = -(-j21 * f1 + j11 * f2) / det
        big = np.maximum(np.abs(da), np.abs(db))
        lim = np.where(big > 2.0, 2.0 / np.maximum(big, 1e-300), 1.0)
        a = a + lim * da
        b = b + lim * db
        if np.all(np.abs(f1) < tol) and np.all(np.abs(f2) < tol):
            break
    else:
        raise RuntimeError(f"NSE did not converge: max |F| {np.abs(f1).max():.2e}, "
                           f"{np.abs(f2).max():.2e}")
    e = base + Z * a[..., None] + N * b[..., None]
    X = np.exp(e)
    return X, (a, b), it + 1


def weak_rates(pyna, nuc, rates, logrho, T, ye, X):
    """dYe/dt (1/s) and the neutrino loss (erg/g/s) of the tabulated weak rates, each
    interpolated bilinearly in (log rho Ye, log T) in its table as pynucastro does."""
    c = pyna.constants.constants
    where = {n: i for i, n in enumerate(nuc)}
    A = np.array([n.A for n in nuc], float)
    Y = X / A
    lrhoy = logrho + np.log10(ye)
    lT = np.log10(T)
    ydot = np.zeros(T.shape)
    enu = np.zeros(T.shape)
    for r in rates:
        tab = r.interpolator
        rhoy, temp, data = np.asarray(tab.rhoy), np.asarray(tab.temp), np.asarray(tab.data)
        nt = len(temp)
        i = np.clip(np.searchsorted(rhoy, lrhoy) - 1, 0, len(rhoy) - 2)
        j = np.clip(np.searchsorted(temp, lT) - 1, 0, nt - 2)
        fx = (lrhoy - rhoy[i]) / (rhoy[i + 1] - rhoy[i])
        fy = (lT - temp[j]) / (temp[j + 1] - temp[j])

        def interp(col):
            f00 = data[i * nt + j, col]
            f10 = data[(i + 1) * nt + j, col]
            f01 = data[i * nt + j + 1, col]
            f11 = data[(i + 1) * nt + j + 1, col]
            return f00 + (f10 - f00) * fx + (f01 - f00) * fy + (f11 - f10 - f01 + f00) * fx * fy

        lam = 10.0**interp(5)   # TableIndex.RATE
        nu = 10.0**interp(6)    # TableIndex.NU
        yr = Y[..., where[r.reactants[0]]]
        dz = r.products[0].Z - r.reactants[0].Z
        ydot += yr * lam * dz
        enu += c.N_A * yr * nu
    return ydot, enu


def build(path, verbose=True):
    t0 = time.time()
    pyna, nuc, rates = nuclear_data()
    if verbose:
        print(f"nse table: {len(nuc)} nuclides, {len(rates)} weak rates "
              f"(pynucastro {pyna.__version__})", flush=True)
    R, Y = np.meshgrid(LOGRHO, YE, indexing="ij")
    rows = []
    guess = None
    for k, lt in enumerate(LOGT[::-1]):
        T = np.full(R.shape, 10.0**lt)
        if guess is not None:
            guess = (guess[0] * Tprev / T, guess[1] * Tprev / T)
        X, guess, its = solve_nse(pyna, nuc, R, T, Y, guess)
        Tprev = T
        A = np.array([n.A for n in nuc], float)
        Z = np.array([n.Z for n in nuc], float)
        bea = np.array([n.nucbind for n in nuc], float)
        abar = 1.0 / (X / A).sum(-1)
        qbar = (X * bea).sum(-1)
        yecheck = (X * Z / A).sum(-1)
        assert np.all(np.abs(X.sum(-1) - 1.0) < 1e-10) and np.all(np.abs(yecheck - Y) < 1e-10)
        ydot, enu = weak_rates(pyna, nuc, rates, R, T, Y, X)
        rows.append((lt, abar, qbar, ydot, enu))
        if verbose and k % 10 == 0:
            print(f"nse table: log T {lt:.2f} ({k + 1}/{len(LOGT)}, {its} Newton iterations)",
                  flush=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("# tessera NSE table 1\n")
        f.write(f"# pynucastro {pyna.__version__}, {len(nuc)} nuclides: {' '.join(NUCLEI)}\n")
        f.write("# Coulomb: Chabrier & Potekhin 1998; weak rates: pynucastro TabularWeakLibrary\n")
        for n, name in zip(nuc, NUCLEI):
            f.write(f"# bind {name} {n.nucbind:.9f}\n")
        f.write(f"# grid logrho {LOGRHO[0]} {LOGRHO[-1]} {len(LOGRHO)}\n")
        f.write(f"# grid logT {LOGT[0]} {LOGT[-1]} {len(LOGT)}\n")
        f.write(f"# grid ye {YE[0]} {YE[-1]} {len(YE)}\n")
        f.write("# columns: logrho logT ye abar qbar(MeV/nucleon) dyedt(1/s) enu(erg/g/s)\n")
        for lt, abar, qbar, ydot, enu in sorted(rows, key=lambda r: r[0]):
            for i, lr in enumerate(LOGRHO):
                for j, ye in enumerate(YE):
                    f.write(f"{lr:.4f} {lt:.4f} {ye:.4f} {abar[i, j]:.9e} {qbar[i, j]:.9e} "
                            f"{ydot[i, j]:.6e} {enu[i, j]:.6e}\n")
    os.replace(tmp, path)
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if verbose:
        print(f"nse table: {path} ({len(LOGT) * len(LOGRHO) * len(YE)} points, "
              f"{time.time() - t0:.1f} s, sha256 {sha})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the table file to write")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    build(args.out, verbose=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())

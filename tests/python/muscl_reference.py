"""An independent 1-D planar reference solver for the Sedov cross-check: the textbook
MUSCL-Hancock scheme (Toro 2009, section 14.4) in primitive variables with the MC limiter,
the HLLC Riemann solver (Toro 10.6, Davis wave speeds), a gamma law and outflow (copied
zone) boundaries, written with numpy and sharing no code with Tessera.

test_system uses it to show that 1-D Sedov's error at 512 zones is the deposit's, not the
solver's: started from the very state Tessera starts from, it lands on the same L1 (rho)."""
import numpy as np


def _mc_slope(dl, dr):
    """Monotonised-central limited slope of left/right differences."""
    same = dl * dr > 0
    mag = np.minimum(np.minimum(2 * np.abs(dl), 2 * np.abs(dr)), 0.5 * np.abs(dl + dr))
    return np.where(same, np.sign(dl) * mag, 0.0)


def _hllc(gamma, dl, ul, pl, dr, ur, pr):
    """HLLC fluxes (mass, momentum, energy) between left and right primitive states."""
    cl, cr = np.sqrt(gamma * pl / dl), np.sqrt(gamma * pr / dr)
    sl, sr = np.minimum(ul - cl, ur - cr), np.maximum(ul + cl, ur + cr)
    el, er = pl / (gamma - 1) + 0.5 * dl * ul * ul, pr / (gamma - 1) + 0.5 * dr * ur * ur
    ss = (pr - pl + dl * ul * (sl - ul) - dr * ur * (sr - ur)) / (dl * (sl - ul) - dr * (sr - ur))

    def flux(d, u, p, e):
        return np.array([d * u, d * u * u + p, (e + p) * u])

    def star(d, u, p, e, s):
        f = d * (s - u) / (s - ss)
        return np.array([f, f * ss, f * (e / d + (ss - u) * (ss + p / (d * (s - u))))])

    fl, fr = flux(dl, ul, pl, el), flux(dr, ur, pr, er)
    fsl = fl + sl * (star(dl, ul, pl, el, sl) - np.array([dl, dl * ul, el]))
    fsr = fr + sr * (star(dr, ur, pr, er, sr) - np.array([dr, dr * ur, er]))
    return np.where(sl >= 0, fl, np.where(ss >= 0, fsl, np.where(sr > 0, fsr, fr)))


def evolve(dens, velx, pres, dx, tmax, gamma=1.4, cfl=0.8):
    """Advance zone averages (dens, velx, pres) on a uniform 1-D mesh to tmax.
    Returns (dens, velx, pres, steps)."""
    u = np.array([dens, dens * velx, pres / (gamma - 1) + 0.5 * dens * velx * velx], dtype=float)
    t, steps = 0.0, 0
    while t < tmax * (1 - 1e-12):
        d = u[0]
        v = u[1] / d
        p = (gamma - 1) * (u[2] - 0.5 * d * v * v)
        dt = min(cfl * dx / np.max(np.abs(v) + np.sqrt(gamma * p / d)), tmax - t)
        w = np.array([d, v, p])
        w = np.concatenate([w[:, :1], w[:, :1], w, w[:, -1:], w[:, -1:]], axis=1)
        s = _mc_slope(w[:, 1:-1] - w[:, :-2], w[:, 2:] - w[:, 1:-1])
        wd, wv, wp = w[:, 1:-1]
        # Hancock half step with the primitive-variable Jacobian.
        a = np.array([wv * s[0] + wd * s[1], wv * s[1] + s[2] / wd, gamma * wp * s[1] + wv * s[2]])
        half = w[:, 1:-1] - 0.5 * dt / dx * a
        right, left = half + 0.5 * s, half - 0.5 * s  # each zone's right/left face value
        f = _hllc(gamma, *right[:, :-1], *left[:, 1:])  # faces between zones -1..n
        u = u - dt / dx * (f[:, 1:] - f[:, :-1])
        t += dt
        steps += 1
    d = u[0]
    v = u[1] / d
    return d, v, (gamma - 1) * (u[2] - 0.5 * d * v * v), steps

"""Exact solution of the Riemann problem for the 1-D Euler equations (ideal gas).

Source: E. F. Toro, *Riemann Solvers and Numerical Methods for Fluid Dynamics*,
3rd ed. (2009), chapter 4: the pressure function f_K (eqs. 4.6-4.7), Newton
iteration on f(p) = f_L(p) + f_R(p) + (u_R - u_L) = 0 (§4.3.1, initial guess from
the two-rarefaction approximation, eq. 4.46), and the sampling procedure of §4.5.
Vacuum generation is not handled (it raises ``ValueError``).

Check values (Sod, t = 0.2): ``shared/reference/verification.md`` §B.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["RiemannSolver", "sod_solution", "cell_average", "SOD_LEFT", "SOD_RIGHT"]

#: Sod's left and right states (rho, u, p).
SOD_LEFT = (1.0, 0.0, 1.0)
SOD_RIGHT = (0.125, 0.0, 0.1)


class RiemannSolver:
    """Exact Riemann solution for left/right states ``(rho, u, p)`` and ``gamma``.

    After construction: ``p_star``, ``u_star``, ``rho_star_left``, ``rho_star_right``
    and the wave speeds (``left_head``, ``left_tail``, ``right_tail``, ``right_head``;
    for a shock head == tail == shock speed, ``contact`` = u*).
    """

    def __init__(self, left=SOD_LEFT, right=SOD_RIGHT, gamma: float = 1.4,
                 tol: float = 1e-14, max_iter: int = 100):
        self.rho_l, self.u_l, self.p_l = map(float, left)
        self.rho_r, self.u_r, self.p_r = map(float, right)
        self.gamma = g = float(gamma)
        if min(self.rho_l, self.rho_r, self.p_l, self.p_r) <= 0.0:
            raise ValueError("densities and pressures must be positive")
        self.c_l = math.sqrt(g * self.p_l / self.rho_l)
        self.c_r = math.sqrt(g * self.p_r / self.rho_r)
        du = self.u_r - self.u_l
        if 2.0 * (self.c_l + self.c_r) / (g - 1.0) <= du:
            raise ValueError("the initial data generate vacuum (not supported)")

        # Step 1: initial guess, two-rarefaction approximation (Toro eq. 4.46).
        z = (g - 1.0) / (2.0 * g)
        p = ((self.c_l + self.c_r - 0.5 * (g - 1.0) * du)
             / (self.c_l / self.p_l ** z + self.c_r / self.p_r ** z)) ** (1.0 / z)
        p = max(p, 1e-12 * min(self.p_l, self.p_r))
        # Step 2: Newton iteration on f_L + f_R + du = 0 (Toro §4.3.1).
        for _ in range(max_iter):
            fl, dfl = self._f(p, self.rho_l, self.p_l, self.c_l)
            fr, dfr = self._f(p, self.rho_r, self.p_r, self.c_r)
            p_new = p - (fl + fr + du) / (dfl + dfr)
            if p_new <= 0.0:
                p_new = 0.5 * p
            change = 2.0 * abs(p_new - p) / (p_new + p)
            p = p_new
            if change < tol:
                break
        else:
            raise RuntimeError("Riemann solver: Newton iteration did not converge")
        fl, _ = self._f(p, self.rho_l, self.p_l, self.c_l)
        fr, _ = self._f(p, self.rho_r, self.p_r, self.c_r)
        self.p_star = p
        # Step 3: star velocity (Toro eq. 4.9).
        self.u_star = 0.5 * (self.u_l + self.u_r) + 0.5 * (fr - fl)

        # Step 4: star densities and wave speeds (Toro §4.4).
        gm = (g - 1.0) / (g + 1.0)
        self.left_shock = p > self.p_l
        self.right_shock = p > self.p_r
        if self.left_shock:
            pr = p / self.p_l
            self.rho_star_left = self.rho_l * (pr + gm) / (gm * pr + 1.0)
            s = self.u_l - self.c_l * math.sqrt((g + 1.0) / (2.0 * g) * pr + (g - 1.0) / (2.0 * g))
            self.left_head = self.left_tail = s
        else:
            self.rho_star_left = self.rho_l * (p / self.p_l) ** (1.0 / g)
            c_star = self.c_l * (p / self.p_l) ** z
            self.left_head = self.u_l - self.c_l
            self.left_tail = self.u_star - c_star
        if self.right_shock:
            pr = p / self.p_r
            self.rho_star_right = self.rho_r * (pr + gm) / (gm * pr + 1.0)
            s = self.u_r + self.c_r * math.sqrt((g + 1.0) / (2.0 * g) * pr + (g - 1.0) / (2.0 * g))
            self.right_head = self.right_tail = s
        else:
            self.rho_star_right = self.rho_r * (p / self.p_r) ** (1.0 / g)
            c_star = self.c_r * (p / self.p_r) ** z
            self.right_head = self.u_r + self.c_r
            self.right_tail = self.u_star + c_star
        self.contact = self.u_star

    def _f(self, p, rho_k, p_k, c_k):
        """Toro's pressure function f_K(p) and its derivative (eqs. 4.6, 4.7, 4.37)."""
        g = self.gamma
        if p > p_k:  # shock
            a = 2.0 / ((g + 1.0) * rho_k)
            b = (g - 1.0) / (g + 1.0) * p_k
            root = math.sqrt(a / (p + b))
            return (p - p_k) * root, root * (1.0 - 0.5 * (p - p_k) / (b + p))
        # rarefaction
        z = (g - 1.0) / (2.0 * g)
        f = 2.0 * c_k / (g - 1.0) * ((p / p_k) ** z - 1.0)
        df = (p / p_k) ** (-(g + 1.0) / (2.0 * g)) / (rho_k * c_k)
        return f, df

    @property
    def shock_speed(self):
        """Speed of the right shock (or of the left one if only that is a shock)."""
        if self.right_shock:
            return self.right_head
        if self.left_shock:
            return self.left_head
        return None

    def sample(self, xi):
        """(rho, u, p) at similarity variable xi = (x - x0)/t (array-like; Toro §4.5)."""
        xi = np.asarray(xi, dtype=float)
        g = self.gamma
        gp, gm1 = g + 1.0, g - 1.0
        rho = np.empty(xi.shape)
        u = np.empty(xi.shape)
        p = np.empty(xi.shape)

        # Left of the contact.
        left = xi <= self.u_star
        l_out = left & (xi <= self.left_head)           # undisturbed left state
        l_star = left & (xi >= self.left_tail)          # left star state
        l_fan = left & ~l_out & ~l_star                 # inside the left rarefaction
        rho[l_out], u[l_out], p[l_out] = self.rho_l, self.u_l, self.p_l
        rho[l_star], u[l_star], p[l_star] = self.rho_star_left, self.u_star, self.p_star
        if np.any(l_fan):
            s = xi[l_fan]
            base = 2.0 / gp + gm1 / (gp * self.c_l) * (self.u_l - s)
            rho[l_fan] = self.rho_l * base ** (2.0 / gm1)
            u[l_fan] = 2.0 / gp * (self.c_l + 0.5 * gm1 * self.u_l + s)
            p[l_fan] = self.p_l * base ** (2.0 * g / gm1)

        # Right of the contact.
        right = ~left
        r_out = right & (xi >= self.right_head)
        r_star = right & (xi <= self.right_tail)
        r_fan = right & ~r_out & ~r_star
        rho[r_out], u[r_out], p[r_out] = self.rho_r, self.u_r, self.p_r
        rho[r_star], u[r_star], p[r_star] = self.rho_star_right, self.u_star, self.p_star
        if np.any(r_fan):
            s = xi[r_fan]
            base = 2.0 / gp - gm1 / (gp * self.c_r) * (self.u_r - s)
            rho[r_fan] = self.rho_r * base ** (2.0 / gm1)
            u[r_fan] = 2.0 / gp * (-self.c_r + 0.5 * gm1 * self.u_r + s)
            p[r_fan] = self.p_r * base ** (2.0 * g / gm1)
        return rho, u, p

    def wave_positions(self, t, x0=0.5):
        """Dict of wave positions at time t for an interface at x0."""
        return {name: x0 + getattr(self, name) * t
                for name in ("left_head", "left_tail", "contact", "right_tail", "right_head")}


def sod_solution(x, t, left=SOD_LEFT, right=SOD_RIGHT, gamma=1.4, x0=0.5):
    """Exact (rho, u, p) at positions ``x`` and time ``t`` for an interface at ``x0``."""
    x = np.asarray(x, dtype=float)
    solver = RiemannSolver(left, right, gamma)
    if t <= 0.0:
        lo = x <= x0
        return (np.where(lo, solver.rho_l, solver.rho_r), np.where(lo, solver.u_l, solver.u_r),
                np.where(lo, solver.p_l, solver.p_r))
    return solver.sample((x - x0) / t)


def cell_average(edges, t, left=SOD_LEFT, right=SOD_RIGHT, gamma=1.4, x0=0.5, nsub=50):
    """Exact (rho, u, p) averaged over the cells [edges[i], edges[i+1]].

    Each cell is averaged over ``nsub`` equally spaced sub-samples at the sub-cell
    midpoints (the primitive variables are averaged, as in verification.md §B).
    """
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[:-1], edges[1:]
    frac = (np.arange(nsub) + 0.5) / nsub
    xs = lo[:, None] + (hi - lo)[:, None] * frac[None, :]
    rho, u, p = sod_solution(xs, t, left, right, gamma, x0)
    return rho.mean(axis=1), u.mean(axis=1), p.mean(axis=1)

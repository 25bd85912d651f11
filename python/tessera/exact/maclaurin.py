"""Gravitational potential of a homogeneous ellipsoid of revolution (Maclaurin spheroid,
uniform sphere when e = 0), for the multipole gravity checks (verification.md §H).

For semi-axes a1 = a2 = a >= a3 = c, e = sqrt(1 - c^2/a^2), density rho, at cylindrical
radius R and height z from the centre::

    phi = -pi G rho a^2 c * int_lambda^inf [1 - R^2/(a^2+u) - z^2/(c^2+u)]
                                            du / ((a^2+u) sqrt(c^2+u))

with lambda = 0 inside and, outside, the positive root of R^2/(a^2+L) + z^2/(c^2+L) = 1.
The substitution u = (c^2 + lambda)/s^2 - c^2 (s in (0, 1]) makes the integrand smooth;
Gauss-Legendre with 200 points gives about 1e-12. Checked against the interior closed
form (``interior``) and -G M / r far away (tests/python/test_exact.py)."""

from __future__ import annotations

import numpy as np

__all__ = ["maclaurin_potential", "interior", "uniform_sphere_potential", "relative_error"]

_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(200)


def _lambda(R2, z2, a2, c2):
    """Outside the body: the positive root of R^2/(a^2+L) + z^2/(c^2+L) = 1, else 0."""
    # L^2 + (a^2 + c^2 - R^2 - z^2) L + (a^2 c^2 - R^2 c^2 - z^2 a^2) = 0
    b = a2 + c2 - R2 - z2
    cc = a2 * c2 - R2 * c2 - z2 * a2
    disc = np.sqrt(np.maximum(b * b - 4.0 * cc, 0.0))
    root = 0.5 * (-b + disc)
    inside = R2 / a2 + z2 / c2 <= 1.0
    return np.where(inside, 0.0, np.maximum(root, 0.0))


def maclaurin_potential(R, z, a, e, rho=1.0, G=1.0):
    """phi at cylindrical radius R and height z (arrays, relative to the centre)."""
    R = np.asarray(R, dtype=float)
    z = np.asarray(z, dtype=float)
    c = a * np.sqrt(1.0 - e * e)
    a2, c2 = a * a, c * c
    R2, z2 = R * R, z * z
    lam = _lambda(R2, z2, a2, c2)
    # s in (0, 1]: nodes mapped from [-1, 1].
    s = 0.5 * (_NODES + 1.0)
    w = 0.5 * _WEIGHTS
    shape = R2.shape
    lam_f = lam.reshape(-1, 1)
    K = c2 + lam_f                      # c^2 + lambda
    u = K / s ** 2 - c2                 # (N, n)
    du = 2.0 * K / s ** 3               # -du/ds, the limits swap
    A = a2 + u
    C = c2 + u                          # = K / s^2
    f = (1.0 - R2.reshape(-1, 1) / A - z2.reshape(-1, 1) / C) / (A * np.sqrt(C))
    integral = (f * du) @ w
    return (-np.pi * G * rho * a2 * c * integral).reshape(shape)


def interior(R, z, a, e, rho=1.0, G=1.0):
    """Closed form inside the spheroid: -pi G rho [2 A1 a^2 - A1 R^2 + A3 (c^2 - z^2)]."""
    R = np.asarray(R, dtype=float)
    z = np.asarray(z, dtype=float)
    c = a * np.sqrt(1.0 - e * e)
    if e == 0.0:
        A1 = A3 = 2.0 / 3.0
    else:
        q = np.sqrt(1.0 - e * e) * np.arcsin(e) / e ** 3
        A1 = q - (1.0 - e * e) / e ** 2
        A3 = 2.0 / e ** 2 - 2.0 * q
    return -np.pi * G * rho * (2.0 * A1 * a * a - A1 * R * R + A3 * (c * c - z * z))


def uniform_sphere_potential(r, radius, mass, G=1.0):
    """-G M (3 R^2 - r^2) / (2 R^3) inside, -G M / r outside."""
    r = np.asarray(r, dtype=float)
    inside = -G * mass * (3.0 * radius ** 2 - r * r) / (2.0 * radius ** 3)
    return np.where(r < radius, inside, -G * mass / np.maximum(r, 1e-300))


def relative_error(ds, a, e, centre, rho=1.0, G=1.0, field="gpot"):
    """max |phi - phi_exact| / max |phi_exact| over the leaves of a Tessera dataset
    (tessera.reader.Dataset) holding ``field``; 3-D Cartesian or 2-D cylindrical (x = r,
    y = z, the spheroid's axis along z in 3-D and along y in r-z). Returns (error,
    max |phi_exact|)."""
    err = 0.0
    big = 0.0
    for b in ds.leaves():
        x, y, zc = ds.cell_centers(b)
        phi = ds.field(field)[b]
        if ds.geometry == "cylindrical":
            R = x
            z = y - centre[1]
        else:
            R = np.hypot(x - centre[0], y - centre[1])
            z = zc - centre[2]
        ex = maclaurin_potential(R, z, a, e, rho, G)
        err = max(err, float(np.max(np.abs(phi - ex))))
        big = max(big, float(np.max(np.abs(ex))))
    return err / big, big

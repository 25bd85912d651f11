"""Exact solutions against the published / reference check values.

Reference numbers: shared/reference/verification.md §A (Sedov, Kamm & Timmes) and
§B (Sod, Toro ch. 4).  No executable needed.
"""

import math

import numpy as np
import pytest

from tessera.exact.sedov import SedovSolution
from tessera.exact.sod import RiemannSolver, cell_average, sod_solution


# ----------------------------------------------------------------------------- Sod
def test_sod_star_state_matches_toro():
    s = RiemannSolver((1.0, 0.0, 1.0), (0.125, 0.0, 0.1), gamma=1.4)
    assert s.p_star == pytest.approx(0.303130, abs=1e-6)
    assert s.u_star == pytest.approx(0.927453, abs=1e-6)
    assert s.rho_star_left == pytest.approx(0.426319, abs=1e-6)
    assert s.rho_star_right == pytest.approx(0.265574, abs=1e-6)
    assert s.shock_speed == pytest.approx(1.752156, abs=1e-6)


def test_sod_wave_positions_at_t_0_2():
    pos = RiemannSolver().wave_positions(0.2, x0=0.5)
    assert pos["left_head"] == pytest.approx(0.263357, abs=1e-6)
    assert pos["left_tail"] == pytest.approx(0.485945, abs=1e-6)
    assert pos["contact"] == pytest.approx(0.685491, abs=1e-6)
    assert pos["right_head"] == pytest.approx(0.850431, abs=1e-6)


def test_sod_solution_plateaus_and_fan():
    x = np.array([0.1, 0.6, 0.8, 0.95])
    rho, u, p = sod_solution(x, 0.2)
    np.testing.assert_allclose(rho, [1.0, 0.426319, 0.265574, 0.125], atol=1e-6)
    np.testing.assert_allclose(u, [0.0, 0.927453, 0.927453, 0.0], atol=1e-6)
    np.testing.assert_allclose(p, [1.0, 0.303130, 0.303130, 0.1], atol=1e-6)
    # Inside the rarefaction the flow is isentropic: p / rho^gamma = p_L / rho_L^gamma.
    xf = np.linspace(0.27, 0.48, 11)
    rf, uf, pf = sod_solution(xf, 0.2)
    np.testing.assert_allclose(pf / rf ** 1.4, 1.0, rtol=1e-12)
    assert np.all(np.diff(rf) < 0) and np.all(np.diff(uf) > 0)


def test_mirrored_sod_is_mirror_image():
    x = np.linspace(0.0, 1.0, 101)
    r1, u1, p1 = sod_solution(x, 0.2)
    r2, u2, p2 = sod_solution(1.0 - x, 0.2, left=(0.125, 0.0, 0.1), right=(1.0, 0.0, 1.0))
    inner = np.abs(x - 0.5) > 1e-9
    np.testing.assert_allclose(r1[inner], r2[inner], rtol=1e-12)
    np.testing.assert_allclose(u1[inner], -u2[inner], atol=1e-12)
    np.testing.assert_allclose(p1[inner], p2[inner], rtol=1e-12)


def test_two_shock_problem_conserves_across_waves():
    """Colliding streams (Toro test 5-like): both waves are shocks, p* above both sides."""
    s = RiemannSolver((1.0, 2.0, 1.0), (1.0, -2.0, 1.0), gamma=1.4)
    assert s.left_shock and s.right_shock
    assert s.u_star == pytest.approx(0.0, abs=1e-12)
    # Rankine-Hugoniot mass flux across the right shock.
    S = s.right_head
    assert s.rho_star_right * (s.u_star - S) == pytest.approx(1.0 * (-2.0 - S), rel=1e-12)


def test_cell_average_of_uniform_region_is_exact_and_mass_is_conserved():
    edges = np.linspace(0.0, 1.0, 201)
    rho, u, p = cell_average(edges, 0.2, nsub=50)
    assert rho[0] == 1.0 and rho[-1] == 0.125
    # Mass in [0, 1] is conserved while the waves are inside: 0.5*1 + 0.5*0.125.
    assert np.sum(rho * np.diff(edges)) == pytest.approx(0.5625, rel=2e-4)


# ----------------------------------------------------------------------------- Sedov
@pytest.mark.parametrize("j, alpha", [(1, 0.538743), (2, 0.984074), (3, 0.851072)])
def test_sedov_alpha(j, alpha):
    assert SedovSolution(j, gamma=1.4).alpha == pytest.approx(alpha, rel=1e-6)


# j, r2, u2, p2, (rho, u, p) at 0.9 r2, p(0)   (E=1, rho0=1, t=0.05, full planar slab)
SEDOV_ROWS = [
    (3, 0.311598, 2.07732, 5.17831, (1.23220, 1.70716, 2.62909), 1.89248),
    (2, 0.224506, 1.87088, 4.20025, (1.88387, 1.56699, 2.42231), 1.56636),
    (1, 0.132386, 1.47096, 2.59647, (3.07144, 1.26221, 1.79019), 1.01266),
]


@pytest.mark.parametrize("j, r2, u2, p2, at09, p0", SEDOV_ROWS)
@pytest.mark.parametrize("method", ["bisect", "table"])
def test_sedov_table_rows(j, r2, u2, p2, at09, p0, method):
    s = SedovSolution(j, gamma=1.4, energy=1.0, rho0=1.0)
    t = 0.05
    assert s.shock_radius(t) == pytest.approx(r2, rel=1e-5)
    rho2, u2c, p2c = s.post_shock(t)
    assert rho2 == pytest.approx(6.0, rel=1e-12)
    assert u2c == pytest.approx(u2, rel=1e-5)
    assert p2c == pytest.approx(p2, rel=1e-5)
    rho, u, p = s.profile(np.array([0.9 * s.shock_radius(t), 0.0]), t, method=method)
    np.testing.assert_allclose([rho[0], u[0], p[0]], at09, rtol=1e-5)
    assert p[1] == pytest.approx(p0, rel=1e-5)
    assert rho[1] == 0.0 and u[1] == 0.0


def test_sedov_outside_the_shock_is_ambient():
    s = SedovSolution(3, energy=1.0, rho0=2.0)
    r2 = s.shock_radius(0.05)
    rho, u, p = s.profile(np.array([1.0001 * r2, 3 * r2]), 0.05, p_ambient=1e-5)
    np.testing.assert_array_equal(rho, 2.0)
    np.testing.assert_array_equal(u, 0.0)
    np.testing.assert_array_equal(p, 1e-5)


def test_sedov_planar_half_space_energy():
    """A half-space carrying E has the same r2 as a full slab carrying 2E."""
    full = SedovSolution(1, energy=2.0)
    half = SedovSolution(1, energy=1.0, full_slab=False)
    assert full.shock_radius(0.05) == pytest.approx(half.shock_radius(0.05), rel=1e-14)


def _gauss_integral(f, a, b, panels=400, points=12):
    xg, wg = np.polynomial.legendre.leggauss(points)
    edges = np.linspace(a, b, panels + 1)
    h = 0.5 * np.diff(edges)
    x = (0.5 * (edges[:-1] + edges[1:]))[:, None] + h[:, None] * xg
    return float(np.sum(h[:, None] * wg * f(x)))


@pytest.mark.parametrize("j", [1, 2, 3])
def test_sedov_profile_conserves_mass_and_energy(j):
    """The swept-up mass sits inside r2: ∫ρ dV = ρ0 V(r2); and ∫(ρu²/2 + p/(γ-1)) dV = E."""
    g, t, E = 1.4, 0.05, 1.0
    s = SedovSolution(j, gamma=g, energy=E, rho0=1.0)
    r2 = float(s.shock_radius(t))
    area = {1: 2.0, 2: 2.0 * math.pi, 3: 4.0 * math.pi}[j]   # full slab for j = 1

    def rho_w(r):
        return s.profile(r, t)[0] * area * r ** (j - 1)

    def energy_w(r):
        rho, u, p = s.profile(r, t)
        return (0.5 * rho * u * u + p / (g - 1.0)) * area * r ** (j - 1)

    mass = _gauss_integral(rho_w, 0.0, r2)
    assert mass == pytest.approx(area * r2 ** j / j, rel=1e-4)
    assert _gauss_integral(energy_w, 0.0, r2) == pytest.approx(E, rel=1e-4)


def test_sedov_rejects_bad_geometry():
    with pytest.raises(ValueError):
        SedovSolution(4)


# ------------------------------------------------------------------- Maclaurin spheroid
# verification.md §H: the integral form against the interior closed form, -G M / r far
# away, continuity across the surface, and the uniform sphere at e = 0.
from tessera.exact.maclaurin import interior, maclaurin_potential, uniform_sphere_potential


@pytest.mark.parametrize("e", [0.0, 0.5, 0.9])
def test_maclaurin_integral_equals_the_interior_closed_form(e):
    a = 0.25
    c = a * math.sqrt(1 - e * e)
    R = np.array([0.0, 0.1, 0.2, 0.05, 0.0])
    z = np.array([0.0, 0.3 * c, 0.0, 0.5 * c, 0.99 * c])
    assert np.max(np.abs(maclaurin_potential(R, z, a, e) - interior(R, z, a, e))) < 1e-12


@pytest.mark.parametrize("e", [0.5, 0.9])
def test_maclaurin_far_field_is_a_point_mass_and_the_surface_is_continuous(e):
    a = 0.25
    c = a * math.sqrt(1 - e * e)
    M = 4.0 / 3.0 * math.pi * a * a * c
    for r in (100.0, 1000.0):
        phi = maclaurin_potential(np.array([0.6 * r]), np.array([0.8 * r]), a, e)[0]
        # The quadrupole falls off as (a / r)^2 relative to the monopole.
        assert phi / (-M / r) - 1.0 == pytest.approx(0.0, abs=(a / r) ** 2)
    for R, z in ((a, 0.0), (0.0, c), (a * math.sqrt(0.5), c * math.sqrt(0.5))):
        eps = 1e-9
        inside = maclaurin_potential(np.array([R * (1 - eps)]), np.array([z * (1 - eps)]), a, e)
        outside = maclaurin_potential(np.array([R * (1 + eps)]), np.array([z * (1 + eps)]), a, e)
        assert abs(inside[0] - outside[0]) < 1e-8


def test_maclaurin_at_zero_eccentricity_is_the_uniform_sphere():
    a = 0.3
    M = 4.0 / 3.0 * math.pi * a ** 3
    R = np.array([0.0, 0.1, 0.25, 0.4, 2.0])
    z = np.array([0.0, 0.2, 0.1, 0.3, 1.0])
    exact = uniform_sphere_potential(np.hypot(R, z), a, M)
    assert np.max(np.abs(maclaurin_potential(R, z, a, 0.0) - exact)) < 1e-12

"""System tests of multipole self-gravity (verification.md §H): the potential of a
Maclaurin spheroid in 2-D r-z (FLASH's unit test) and 3-D, a uniform sphere inside and
outside, gpot bitwise identical on 1, 2 and 4 ranks, and a collapsing sphere (hydro +
gravity) that conserves mass to round-off and total energy (kinetic + internal +
gravitational) to the scheme's accuracy. Errors are max|phi - phi_exact| / max|phi_exact|
over the leaves, from the final checkpoint (f64)."""
import math
from pathlib import Path

import h5py
import numpy as np
import pytest

from runner import EXE, run, summary
from tessera import reader
from tessera.exact.maclaurin import relative_error, uniform_sphere_potential

pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")

WALLS = [f"mesh.{a}{s}_boundary_type=reflecting" for a in "xyz" for s in "lr"]


def checkpoint(out, base):
    return reader.read(str(Path(out) / f"{base}_hdf5_chk_0000"))


def test_maclaurin_2d_cylindrical_lmax8_within_flash_bound(tmp_path):
    run("maclaurin_2d.toml", tmp_path)
    s = summary(tmp_path)
    assert s["steps"] == 0 and s["max_level"] == 3
    assert s["gravity"]["type"] == "multipole" and s["gravity"]["lmax"] == 8
    err, _ = relative_error(checkpoint(tmp_path, "maclaurin_2d"), 0.25, 0.5, (0.0, 0.5, 0.0))
    # FLASH's pass mark is 0.009; measured 4.2e-4 (20 leaves, finest zone 1/128).
    assert err <= 0.009


def test_maclaurin_3d_e09_lmax8_within_published_accuracy(tmp_path):
    run("maclaurin_3d.toml", tmp_path)
    s = summary(tmp_path)
    assert s["steps"] == 0 and s["max_level"] == 3 and s["gravity"]["mmax"] == 8
    err, _ = relative_error(checkpoint(tmp_path, "maclaurin_3d"), 0.25, 0.9, (0.5, 0.5, 0.5))
    # Couch et al. (2013): 0.007 at l_max 8; the bound is 0.01. Measured 3.0e-3 (232 leaves
    # of 8^3, finest zone 1/64, 1-2 s on one rank).
    assert err <= 0.01


def test_maclaurin_3d_error_falls_with_lmax_below_the_published_values(tmp_path):
    # Couch et al. (2013) at l_max 2, 4, 6: 0.062, 0.026, 0.013; measured 0.034, 0.013,
    # 0.0059 (and 0.112, 0.0030, 0.0021 at l_max 0, 8, 10).
    errs = []
    for lmax, published in ((2, 0.062), (4, 0.026), (6, 0.013)):
        out = tmp_path / f"l{lmax}"
        run("maclaurin_3d.toml", out, f"gravity.mpole_lmax={lmax}")
        err, _ = relative_error(checkpoint(out, "maclaurin_3d"), 0.25, 0.9, (0.5, 0.5, 0.5))
        assert err <= published, (lmax, err)
        errs.append(err)
    assert errs[0] > errs[1] > errs[2]


def sphere_errors(ds, a, centre):
    """Largest |phi - exact| inside and outside the sphere, over max |phi_exact|."""
    M = 4.0 / 3.0 * math.pi * a ** 3
    e_in = e_out = big = 0.0
    for b in ds.leaves():
        x, y, z = ds.cell_centers(b)
        if ds.geometry == "cylindrical":
            r = np.hypot(x, y - centre[1])
        else:
            r = np.sqrt((x - centre[0]) ** 2 + (y - centre[1]) ** 2 + (z - centre[2]) ** 2)
        ex = uniform_sphere_potential(r, a, M)
        d = np.abs(ds.field("gpot")[b] - ex)
        big = max(big, float(np.max(np.abs(ex))))
        # Zones cut by the surface hold a partial density: keep them out of both sets.
        h = float(np.max(ds.cell_widths(b)[: ds.ndim]))
        inner, outer = r < a - h, r > a + h
        if inner.any():
            e_in = max(e_in, float(np.max(d[inner])))
        if outer.any():
            e_out = max(e_out, float(np.max(d[outer])))
    return e_in / big, e_out / big


# Measured (inside, outside): r-z 5.3e-4, 7.0e-5; 3-D 8.0e-4, 6.0e-5 (the zones of the
# discrete sphere hold a slightly different mass than the exact one).
@pytest.mark.parametrize("problem,bounds", [("maclaurin_2d.toml", (1.5e-3, 3e-4)),
                                            ("maclaurin_3d.toml", (3e-3, 3e-4))])
def test_uniform_sphere_inside_and_outside(tmp_path, problem, bounds):
    # e = 0: phi = -G M (3 R^2 - r^2) / (2 R^3) inside, -G M / r outside.
    run(problem, tmp_path, "maclaurin.eccentricity=0")
    base = problem.replace(".toml", "")
    ds = checkpoint(tmp_path, base)
    centre = (0.0, 0.5, 0.0) if ds.geometry == "cylindrical" else (0.5, 0.5, 0.5)
    e_in, e_out = sphere_errors(ds, 0.25, centre)
    assert e_in <= bounds[0] and e_out <= bounds[1], (e_in, e_out)


@pytest.mark.parametrize("problem", ["maclaurin_2d.toml", "maclaurin_3d.toml"])
def test_gpot_is_bitwise_identical_on_1_2_4_ranks(tmp_path, problem):
    base = problem.replace(".toml", "")
    fields = []
    for n in (1, 2, 4):
        out = tmp_path / f"n{n}"
        run(problem, out, "mesh.lrefine_max=2" if "3d" in problem else "mesh.lrefine_max=3",
            ranks=n)
        with h5py.File(out / f"{base}_hdf5_chk_0000", "r") as f:
            fields.append(f["gpot"][()])
    assert fields[0].size > 0 and np.any(fields[0] != 0)
    for other in fields[1:]:
        assert np.array_equal(fields[0], other)


def test_collapsing_sphere_conserves_mass_and_energy(tmp_path):
    # A uniform sphere (rho 1, radius 0.25, G = 1) in ambient gas (rho 0.01), pressure 0.05
    # everywhere, reflecting walls, 3-D with one AMR level (32^3 finest), to t = 0.2 (about
    # 0.37 free-fall times). Mass is conserved to round-off; the total energy
    # (etot + egrav) with the flux energy source (the default) to the potential's
    # asymmetry: measured -8.4e-8 of |E|, while the gravitational energy released is 1.3e-2
    # of |E|. The momentum source (gravity.energy_source = "momentum", the kinetic energy
    # change) drifts by its truncation error, 8.4e-4 (first order in dx).
    run("maclaurin_3d.toml", tmp_path, "maclaurin.eccentricity=0", "maclaurin.rho_ambient=0.01",
        "maclaurin.pressure=0.05", "driver.nend=1000", "driver.tmax=0.2", "mesh.lrefine_max=2",
        *WALLS)
    s = summary(tmp_path)
    c = s["conservation"]
    assert s["steps"] > 20 and s["time"] == pytest.approx(0.2)
    assert abs(c["mass_rel_change"]) < 1e-13
    e0 = c["energy_initial"] + c["egrav_initial"]
    e1 = c["energy_final"] + c["egrav_final"]
    released = c["egrav_initial"] - c["egrav_final"]
    assert released > 0.01 * abs(e0)  # it does collapse
    assert abs(e1 - e0) / abs(e0) < 1e-6


def test_uniform_gas_in_a_constant_field_falls_freely(tmp_path):
    # Uniform gas at rest, periodic 2-D box, gravity.type = constant (g = -2 along y):
    # hydro leaves a uniform state alone, so v_y = g t to round-off, and the energy
    # source adds exactly the kinetic energy: eint is unchanged. (Flux source: the mass
    # flux is rho times the Hancock half step's velocity v + g dt/2, the time-centred one.)
    run("sound_wave.toml", tmp_path, "mesh.ndim=2", "sound_wave.amplitude=0",
        "driver.operators=hydro,gravity", "gravity.type=constant", "gravity.constant_g=-2.0",
        "gravity.direction=y", "driver.tmax=0.5", "io.plot_vars=dens,vely,gpot")
    s = summary(tmp_path)
    assert s["gravity"]["type"] == "constant" and s["steps"] > 10
    ds = reader.read(reader.find_outputs(tmp_path).checkpoints[-1])
    vy = ds.field("momy") / ds.field("dens")
    assert np.max(np.abs(vy + 2.0 * ds.time)) < 1e-13
    assert np.max(np.abs(ds.field("momx"))) == 0.0
    eint0 = 0.7142857142857143 / 0.4
    assert np.max(np.abs(ds.field("eint") - eint0)) < 1e-13
    x, y, _ = ds.cell_centers(ds.leaves()[0])
    assert np.max(np.abs(ds.field("gpot")[ds.leaves()[0]] - 2.0 * y)) < 1e-13


def test_equatorial_symmetry_gives_the_full_body_potential(tmp_path):
    # The upper half of the r-z spheroid (z in [0, 0.5], centre on the plane z = 0,
    # reflecting there) with gravity.mpole_symmetric: the same bound as the full body.
    run("maclaurin_2d.toml", tmp_path, "gravity.mpole_symmetric=true", "maclaurin.yctr=0",
        "mesh.ymin=0", "mesh.ymax=0.5", "mesh.nblocky=1", "mesh.yl_boundary_type=reflecting")
    s = summary(tmp_path)
    assert s["gravity"]["symmetric"] and s["gravity"]["centre"] == [0.0, 0.0, 0.0]
    err, _ = relative_error(checkpoint(tmp_path, "maclaurin_2d"), 0.25, 0.5, (0.0, 0.0, 0.0))
    assert err <= 0.009


def test_spherical_1d_monopole_is_the_uniform_sphere(tmp_path):
    # 1-D spherical: the monopole is the whole answer, so what is left is each shell
    # treated as thin at its centroid and the bin interpolation: measured 2.0e-4 at 128
    # zones, 5.6e-5 at 256 (second order in dx).
    run("maclaurin_2d.toml", tmp_path, "mesh.geometry=spherical", "mesh.ndim=1",
        "mesh.nblocky=1", "maclaurin.eccentricity=0", "mesh.lrefine_max=1", "mesh.nblockx=8")
    s = summary(tmp_path)
    assert s["gravity"]["lmax"] == 0
    ds = checkpoint(tmp_path, "maclaurin_2d")
    M = 4.0 / 3.0 * math.pi * 0.25 ** 3
    err = big = 0.0
    for b in ds.leaves():
        r = ds.cell_centers(b)[0]
        ex = uniform_sphere_potential(r, 0.25, M)
        err = max(err, float(np.max(np.abs(ds.field("gpot")[b] - ex))))
        big = max(big, float(np.max(np.abs(ex))))
    assert err / big <= 4e-4, err / big


def test_restart_with_gravity_is_bitwise_on_another_rank_count(tmp_path):
    # The time-centred source needs the field of the restored state (after_restart): a
    # run of 20 steps equals, bit for bit, 10 steps then a restart on 2 ranks.
    args = ["maclaurin.eccentricity=0", "maclaurin.rho_ambient=0.01", "maclaurin.pressure=0.05",
            "mesh.lrefine_max=2", "driver.nend=20", *WALLS]
    run("maclaurin_3d.toml", tmp_path / "a", *args, "io.checkpoint_interval_steps=10")
    chk = tmp_path / "a" / "maclaurin_3d_hdf5_chk_0001"
    run("maclaurin_3d.toml", tmp_path / "b", *args, "--restart", str(chk), ranks=2)
    with h5py.File(tmp_path / "a" / "maclaurin_3d_hdf5_chk_0002", "r") as a, \
            h5py.File(tmp_path / "b" / "maclaurin_3d_hdf5_chk_0002", "r") as b:
        for v in ("dens", "momx", "momz", "etot", "gpot"):
            assert np.array_equal(a[v][()], b[v][()]), v

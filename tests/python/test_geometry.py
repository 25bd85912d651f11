"""System tests of curvilinear geometry (verification.md §A, §I): the r-z Sedov blast on
the axis and the 1-D spherical blast against the spherical (j = 3) exact solution,
conservation of the volume integrals with AMR and with reflecting outer radial walls, a
uniform pressure at rest that stays at rest, and what yt sees of an r-z file. Bounds from the issue "Multiphysics core"."""
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from runner import EXE, MPIRUN, ROOT, run, summary
from tessera import reader
from tessera.verify import verify

pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")

# 3-D Cartesian Sedov at 64^3 (test_system.py::test_sedov_3d_uniform_64 settings, 2
# ranks, exact deposit), relative L1(rho) at t = 0.05 over the ball r <= 0.5 around the
# centre (verify's l1_density_ball), measured with the same verify: PPM + RK3 6.15 %,
# PLM 6.94 % (whole cube: 3.22 %, 3.64 %). The ball makes the two runs comparable: over
# its whole domain an r-z run divides the same front error by the mass of a cylinder
# (0.785 of the cube's), which alone turns 3.2 % into 4.1 %.
L1_3D_64_BALL = {"ppm": 0.0615, "plm": 0.0694}




@pytest.mark.parametrize("recon", ["ppm", "plm"])
def test_sedov_rz_on_the_axis_reproduces_the_spherical_blast(tmp_path, recon):
    run("sedov_2d_cyl.toml", tmp_path, f"hydro.reconstruction={recon}")
    v = verify(tmp_path)
    assert v["geometry"] == "cylindrical" and v["j"] == 3 and v["ball_radius"] == 0.5
    assert v["shock_radius_exact"] == pytest.approx(0.3116, abs=1e-4)
    # Measured: PPM 6.14 % (1.00x the 3-D run), front +0.46 %; PLM 6.99 % (1.01x), front
    # +4.28 % (PLM's smeared front, +3.71 % in 3-D: see test_sedov_3d_uniform_64).
    assert v["l1_density_ball"] <= 1.2 * L1_3D_64_BALL[recon]
    assert abs(v["shock_radius_steepest_rel_error"]) <= (0.02 if recon == "ppm" else 0.045)


def test_sedov_rz_with_amr_conserves_mass_and_energy(tmp_path):
    run("sedov_2d_cyl.toml", tmp_path, "mesh.lrefine_max=2", "driver.tmax=0.02", ranks=2)
    s = summary(tmp_path)
    assert s["leaf_blocks"] > 8  # the blast region refined
    c = s["conservation"]
    assert abs(c["mass_rel_change"]) <= 1e-12 and abs(c["energy_rel_change"]) <= 1e-12
    # The totals are volume integrals in r-z: mass = rho0 * pi r^2 z of the domain.
    assert c["mass_initial"] == pytest.approx(math.pi * 0.5 ** 2 * 1.0, rel=1e-12)


REFLECTING_RZ = [f"mesh.{a}{s}_boundary_type=reflecting" for a in "xy" for s in "lr"]


@pytest.mark.parametrize("case", ["sedov_rz", "gravity_rz", "sedov_sph"])
def test_reflecting_outer_radial_wall_conserves_mass(tmp_path, case):
    # A reflecting wall at r = rmax: the guard zones beyond it are the mirror images of
    # the zones inside, and so must their half steps be (the Hancock geometric term with
    # the mirror zone's radius): the states either side of the wall are then mirror
    # images and no mass crosses it. Before the fix: 5.8e-5 (Sedov r-z, the blast reaching
    # the walls by t = 0.3) and 2e-7 (1-D spherical to t = 1); now round-off.
    if case == "sedov_rz":
        run("sedov_2d_cyl.toml", tmp_path, *REFLECTING_RZ, "driver.tmax=0.3")
    elif case == "gravity_rz":  # a radial constant field, gravity in the Hancock step
        run("sedov_2d_cyl.toml", tmp_path, *REFLECTING_RZ, "driver.tmax=0.1",
            'driver.operators=["hydro","gravity"]', "gravity.type=constant",
            "gravity.direction=x", "gravity.constant_g=-10")
    else:
        run("sedov_1d_sph.toml", tmp_path, "mesh.xr_boundary_type=reflecting", "driver.tmax=1.0")
    c = summary(tmp_path)["conservation"]
    assert abs(c["mass_rel_change"]) <= 1e-13, c["mass_rel_change"]
    if case != "gravity_rz":  # etot alone is not conserved with an external field
        assert abs(c["energy_rel_change"]) <= 1e-13, c["energy_rel_change"]
    else:  # etot + egrav is, to round-off, with the flux energy source and a fixed phi
        # (measured 4e-16; the momentum source: 4.0e-3)
        e0, e1 = (c[f"energy_{w}"] + c[f"egrav_{w}"] for w in ("initial", "final"))
        assert abs(e1 - e0) <= 1e-13 * abs(e0), (e1 - e0) / e0


def test_sedov_1d_spherical_512(tmp_path):
    run("sedov_1d_sph.toml", tmp_path)
    v = verify(tmp_path)
    assert v["geometry"] == "spherical" and v["n_zones"] == 512
    assert v["l1_density"] <= 0.025
    assert abs(v["shock_radius_steepest_rel_error"]) <= 0.02
    c = summary(tmp_path)["conservation"]
    assert abs(c["mass_rel_change"]) <= 1e-12 and abs(c["energy_rel_change"]) <= 1e-12


@pytest.mark.parametrize("geometry,ndim", [("cylindrical", 2), ("spherical", 1)])
def test_uniform_pressure_at_rest_stays_at_rest(tmp_path, geometry, ndim):
    # The geometric pressure source balances the area difference of the fluxes exactly.
    run("advection_2d.toml", tmp_path, f"mesh.geometry={geometry}", f"mesh.ndim={ndim}",
        "mesh.xl_boundary_type=reflecting", "mesh.xr_boundary_type=outflow",
        "mesh.yl_boundary_type=outflow", "mesh.yr_boundary_type=outflow",
        "advection.velx=0", "advection.vely=0", "advection.velz=0", "mesh.lrefine_max=2",
        "driver.nend=40", "driver.tmax=10", "io.plotfile_interval_time=0",
        "io.plot_vars=dens,velx,vely,pres")
    ds = reader.read(reader.find_outputs(tmp_path).checkpoints[-1])
    assert ds.geometry == geometry
    lv = ds.leaves()
    c = math.sqrt(1.4)  # sound speed of rho = 1, p = 1
    for m in ["momx", "momy"][:ndim]:
        assert np.max(np.abs(ds.field(m)[lv])) <= 1e-13 * c, m
    assert np.max(np.abs(ds.field("pres")[lv] - 1.0)) <= 1e-13


def test_yt_opens_an_rz_plotfile_as_cylindrical(tmp_path):
    yt = pytest.importorskip("yt")
    run("sedov_2d_cyl.toml", tmp_path, "driver.tmax=0.005", "mesh.lrefine_max=2")
    path = sorted(tmp_path.glob("*_hdf5_plt_cnt_*"))[-1]
    ds = yt.load(str(path))
    assert ds.geometry == "cylindrical"
    # yt's cell volumes in r-z (2 pi r dr dz) add up to the domain's pi R^2 Z.
    vol = float(ds.all_data()["index", "cell_volume"].sum())
    assert vol == pytest.approx(math.pi * 0.5 ** 2 * 1.0, rel=1e-10)


def test_rz_amr_fields_identical_on_1_2_4_ranks(tmp_path):
    import h5py
    files = []
    for n in (1, 2, 4):
        out = tmp_path / f"r{n}"
        run("sedov_2d_cyl.toml", out, "mesh.lrefine_max=3", "driver.nend=20", ranks=n)
        files.append(sorted(out.glob("*_hdf5_chk_*"))[-1])
    with h5py.File(files[0], "r") as ref:
        for f in files[1:]:
            with h5py.File(f, "r") as h:
                for name in ["dens", "momx", "momy", "etot", "pres", "temp", "refine level"]:
                    assert np.array_equal(ref[name][()], h[name][()]), (f, name)


def test_rotation_and_a_radius_too_small_for_the_guards_are_one_line_errors(tmp_path):
    p = run("advection_2d.toml", tmp_path / "a", "mesh.geometry=cylindrical",
            "mesh.xl_boundary_type=reflecting", "mesh.xr_boundary_type=outflow",
            "advection.velz=0.5", "driver.nend=2", check=False)
    assert p.returncode != 0 and "momz is not zero" in p.stderr, p.stderr
    p = run("sedov_2d_cyl.toml", tmp_path / "b", "mesh.xmin=0.01", check=False)
    assert p.returncode != 0 and "guard zones" in p.stderr, p.stderr
    p = run("sedov_2d_cyl.toml", tmp_path / "c", "mesh.xl_boundary_type=outflow", check=False)
    assert p.returncode != 0 and "reflecting" in p.stderr, p.stderr

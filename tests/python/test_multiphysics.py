"""System tests of the multiphysics core: physics units that declare themselves,
composition (mass scalars advected by hydro), and what summary.json says of the units.

Bounds from the issue "Multiphysics core and stellar matter"."""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from runner import EXE, MPIRUN, ROOT, run, shared_run, summary
from tessera import reader

pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")




def species_mass(ds, name):
    """Volume integral of rho*X over the leaves."""
    rho, x = ds.field("dens"), ds.field(name)
    return sum(float(np.sum(rho[b] * x[b])) * ds.cell_volume(b) for b in ds.leaves())


@pytest.fixture(scope="module")
def advection(tmp_path_factory):
    return shared_run(tmp_path_factory, "advection", "advection_2d.toml",
                      "io.plot_vars=dens,c12,o16,abar,zbar,ye", "io.checkpoint_interval_time=0.5")


def test_mass_scalars_stay_in_bounds_and_species_sum_to_one(advection):
    files = reader.find_outputs(advection).plotfiles
    assert len(files) >= 4
    for f in files:
        ds = reader.read(f)
        c, o = ds.field("c12")[ds.leaves()], ds.field("o16")[ds.leaves()]
        # Upwinded rho*X fluxes keep X within its initial [0, 1] (the f32 plotfile rounds).
        assert c.min() >= -1e-7 and c.max() <= 1 + 1e-7, f
        assert np.max(np.abs(c + o - 1.0)) < 1e-6, f  # f32 storage
        abar = ds.field("abar")[ds.leaves()]
        assert abar.min() >= 12 - 1e-4 and abar.max() <= 16 + 1e-4
    s = summary(advection)
    # After every step the species are renormalised; the largest correction is round-off.
    assert s["composition"]["largest_renormalisation"] < 1e-13
    assert [x["name"] for x in s["composition"]["species"]] == ["c12", "o16"]


def test_species_mass_is_conserved_in_a_periodic_box(advection):
    # The disc is twice as dense as its surroundings and AMR follows it: prolongation and
    # restriction must conserve rho*X (not X) for the species mass to hold.
    chks = reader.find_outputs(advection).checkpoints
    assert len(chks) >= 3
    first, last = reader.read(chks[0]), reader.read(chks[-1])
    assert first.time == 0.0 and last.time > 0.9
    assert not np.array_equal(first.refine_level, last.refine_level) or \
        not np.array_equal(first.bbox, last.bbox)  # the mesh followed the disc
    m0, m1 = species_mass(first, "c12"), species_mass(last, "c12")
    assert abs(m1 - m0) / m0 < 1e-12


def test_summary_names_the_units_and_the_eos(advection):
    s = summary(advection)
    assert s["units"] == ["hydro", "composition", "eos"]
    assert s["operators"] == ["hydro"]
    assert s["eos"]["type"] == "gamma"
    assert s["eos"]["evaluations"] > 0

    def names(node):  # every region name of the timer tree
        yield node["name"]
        for c in node.get("children", []):
            yield from names(c)

    assert "eos" in set(names(s["timers"]))


def test_species_are_rank_independent(advection, tmp_path):
    run("advection_2d.toml", tmp_path, "io.plot_vars=dens,c12,o16,abar,zbar,ye", ranks=2)
    a = reader.read(reader.find_outputs(advection).checkpoints[-1])
    b = reader.read(reader.find_outputs(tmp_path).checkpoints[-1])
    for v in ["dens", "c12", "o16", "pres", "etot"]:
        assert np.array_equal(a.field(v), b.field(v)), v


def test_unknown_operator_and_unknown_species_are_one_line_errors(tmp_path):
    p = run("sod.toml", tmp_path, "driver.operators=hydro,nosuch", check=False)
    assert p.returncode != 0
    assert "unknown operator 'nosuch'" in p.stderr and "flame" in p.stderr
    p = run("sod.toml", tmp_path, "composition.species=c12,o61", check=False)
    assert p.returncode != 0
    assert "unknown species 'o61'" in p.stderr and "o16" in p.stderr


def test_restart_with_another_eos_recomputes_the_eos_state(tmp_path):
    run("sod.toml", tmp_path / "a", "driver.nend=10")
    chk = sorted((tmp_path / "a").glob("*_hdf5_chk_*"))[-1]
    same = subprocess.run([EXE, "run", str(ROOT / "problems" / "sod.toml"), "--dir",
                           str(tmp_path / "b"), "--restart", str(chk), "driver.nend=12"],
                          capture_output=True, text=True)
    assert same.returncode == 0 and "is recomputed" not in same.stdout
    other = subprocess.run([EXE, "run", str(ROOT / "problems" / "sod.toml"), "--dir",
                            str(tmp_path / "c"), "--restart", str(chk), "driver.nend=12",
                            "eos.gamma=1.6666666666666667"], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    assert "its eos.gamma was 1.4" in other.stdout and "is recomputed" in other.stdout
    # The restarted state's pressure is the new gamma's: p = (5/3 - 1) rho eint.
    ds = reader.read(sorted((tmp_path / "c").glob("*_hdf5_chk_*"))[-1])
    lv = ds.leaves()
    p, rho, e = ds.field("pres")[lv], ds.field("dens")[lv], ds.field("eint")[lv]
    assert np.allclose(p, (2.0 / 3.0) * rho * e, rtol=1e-13)


def test_plot_vars_unk_lists_the_variables_units_plot(tmp_path):
    import h5py
    run("advection_2d.toml", tmp_path, "io.plot_vars=unk,abar", "driver.nend=2")
    with h5py.File(sorted(tmp_path.glob("*_plt_cnt_*"))[-1], "r") as f:
        names = set(f)
    # hydro plots dens (not its momenta), composition its species, the EOS its state.
    assert {"dens", "c12", "o16", "pres", "temp", "gamc", "game", "eint", "abar"} <= names
    assert not {"momx", "etot"} & names


def test_gamma_law_state_in_outputs_is_the_current_one(tmp_path):
    # With the gamma law hydro leaves pres/temp/eint in unk stale after a step and the
    # driver syncs them before every output: each checkpoint of an AMR run (outputs every
    # 3 steps, regrids every 2) must hold the EOS state of its own conserved variables.
    run("sedov_2d_amr.toml", tmp_path, "driver.nend=9", "io.checkpoint_interval_steps=3",
        "io.plotfile_interval_steps=0", "io.plotfile_interval_time=0")
    chks = sorted(tmp_path.glob("*_hdf5_chk_*"))
    assert len(chks) >= 3
    for chk in chks:
        ds = reader.read(chk)
        lv = ds.leaves()
        rho, e = ds.field("dens")[lv], ds.field("etot")[lv]
        m2 = sum(ds.field(v)[lv] ** 2 for v in ("momx", "momy", "momz"))
        eint = e / rho - 0.5 * m2 / rho**2
        assert np.allclose(ds.field("eint")[lv], eint, rtol=1e-12, atol=0), chk.name
        assert np.allclose(ds.field("pres")[lv], 0.4 * rho * eint, rtol=1e-12, atol=0), chk.name
        assert np.all(ds.field("gamc")[lv] == 1.4) and np.all(ds.field("game")[lv] == 1.4)

"""The Type Ia "EOS" test (problems/snia_2d.toml) and its 3-D sibling: the white dwarf with
the flame, burn stage 1 and multipole gravity, end to end (verification.md §J; issue:
50 steps on 1 and 2 ranks bitwise, burns mass, conserves mass to round-off and the total
energy to within the burn's release, yt opens it as cylindrical FLASH data with flam; the
3-D sibling restarts on another rank count bitwise). Needs the Helmholtz table."""
import json
import subprocess

import pytest

from h5compare import differing_datasets
from runner import EXE, MPIRUN, ROOT, run, shared_run, summary
from tessera import reader


@pytest.fixture(scope="module")
def snia(tmp_path_factory):
    return {n: shared_run(tmp_path_factory, f"snia_{n}", "snia_2d.toml", ranks=n) for n in (1, 2)}


def test_eos_test_is_rank_independent(snia):
    a = reader.find_outputs(snia[1]).checkpoints[-1]
    b = reader.find_outputs(snia[2]).checkpoints[-1]
    assert not differing_datasets(a, b, same_ranks=False)


def test_eos_test_burns_and_conserves(snia):
    s = summary(snia[1])
    assert s["steps"] == 50
    c = s["conservation"]
    assert abs(c["mass_rel_change"]) < 1e-12
    # The flame advanced: more burned mass, energy released by the burn.
    assert c["burned_mass_final"] > 1.02 * c["burned_mass_initial"]
    released = s["burn"]["energy_released"]
    assert released > 0
    # Total energy (etot + egrav) changes by the burn's release: the flux energy source
    # conserves etot + egrav to the multipole potential's asymmetry (measured excess
    # 7.7e44 erg, 0.43 % of a release of 1.78e47 erg in 50 steps; the momentum source,
    # gravity.energy_source = "momentum", 2.1e45 erg, 1.2 %). No regrid changes the mesh.
    d_total = (c["energy_final"] + c["egrav_final"]) - (c["energy_initial"] + c["egrav_initial"])
    assert abs(d_total - released) <= 0.008 * released
    assert s["gravity"]["energy_source"] == "flux"
    assert abs(s["gravity"]["egrav_regrid_change"]) <= 0.01 * released
    # Every physics region is in the timer tree.
    names = set()

    def walk(node):
        names.add(node["name"])
        for ch in node.get("children", []):
            walk(ch)

    walk(s["timers"])
    assert {"eos", "hydro", "flame", "burn", "gravity"} <= names
    assert s["units"][:4] == ["hydro", "gravity", "flame", "burn"]


@pytest.mark.parametrize("source, bound_met", [("flux", True), ("momentum", False)])
def test_the_star_alone_conserves_total_energy_with_the_flux_source(tmp_path, source, bound_met):
    # The star of the EOS test without the flame, 50 steps, AMR (134 leaves): etot + egrav
    # drifts by 2.7e45 erg (8.8e-7 of |egrav|) with the flux energy source, what is left
    # being the potential's asymmetry (the source itself balances sum rho phi dV's change
    # to round-off); the momentum source (the kinetic energy change) drifts 7.9e46 erg
    # (2.6e-5), 30 times more.
    run("snia_2d.toml", tmp_path, "driver.operators=hydro,gravity", "wd.ignite=false",
        "io.plot_vars=dens", "mesh.refine_var_2=none", f"gravity.energy_source={source}")
    c = summary(tmp_path)["conservation"]
    d_total = (c["energy_final"] + c["egrav_final"]) - (c["energy_initial"] + c["egrav_initial"])
    assert (abs(d_total) <= 5e-6 * abs(c["egrav_initial"])) == bound_met, d_total


def test_without_gravity_total_energy_changes_by_exactly_the_release(tmp_path):
    # The same deflagration with hydro, flame and burn only: every erg the total energy
    # gains is one the burn released (measured excess 1.3e36 erg of 2.5e51, 5e-16), so
    # what the full test shows beyond the release is the gravity coupling's own error.
    run("snia_2d.toml", tmp_path, "driver.operators=hydro,flame,burn", "flame.buoyancy=false",
        "io.plot_vars=dens,flam")
    s = summary(tmp_path)
    c = s["conservation"]
    released = s["burn"]["energy_released"]
    assert released > 1e47
    assert abs(c["energy_final"] - c["energy_initial"] - released) <= 1e-12 * c["energy_initial"]
    assert abs(c["mass_rel_change"]) < 1e-12


def test_yt_opens_the_eos_test_as_cylindrical_with_the_flame(snia):
    yt = pytest.importorskip("yt")
    path = reader.find_outputs(snia[1]).plotfiles[-1]
    ds = yt.load(str(path))
    assert ds.geometry == "cylindrical"
    fields = {f for _, f in ds.field_list}
    assert {"flam", "dens", "temp", "pres", "c12", "mg24", "gpot"} <= fields
    flam = ds.all_data()["flash", "flam"]
    assert float(flam.max()) > 0.99 and float(flam.min()) >= 0.0


def test_snia_3d_restarts_on_another_rank_count_bitwise(tmp_path):
    small = ["mesh.lrefine_max=2", "driver.nend=4", "io.checkpoint_interval_steps=2"]
    run("snia_3d.toml", tmp_path / "full", *small)
    chk = sorted((tmp_path / "full").glob("*_hdf5_chk_*"))
    assert len(chk) >= 2
    first = [c for c in chk if reader.read(c).step == 2][0]
    p = subprocess.run(MPIRUN + ["-n", "2", EXE, "run", str(ROOT / "problems" / "snia_3d.toml"),
                                 "--dir", str(tmp_path / "restart"), "--restart", str(first),
                                 *small], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    a = sorted((tmp_path / "full").glob("*_hdf5_chk_*"))[-1]
    b = sorted((tmp_path / "restart").glob("*_hdf5_chk_*"))[-1]
    assert reader.read(a).step == reader.read(b).step == 4
    assert not differing_datasets(a, b, same_ranks=False)


def test_plot_of_the_eos_test_draws_the_flame_front(snia, tmp_path):
    # What `make run PROBLEM=problems/snia_2d.toml` draws: the density with the flame front.
    import matplotlib
    matplotlib.use("Agg")
    from tessera import plot
    ds = reader.read(reader.find_outputs(snia[1]).plotfiles[-1])
    fig = plot.figure(ds, "dens", log=True)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "flame front (flam = 0.5)" in labels
    assert fig.axes[0].get_xlabel() == "r" and fig.axes[0].get_ylabel() == "z"
    out = plot.plot(snia[1], out=str(tmp_path / "snia.png"), log=True)
    assert (tmp_path / "snia.png").stat().st_size > 10000 and out.endswith("snia.png")

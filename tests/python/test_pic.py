"""The particle-in-cell unit in runs (physics/pic/pic_unit.hpp): the kernel tests of
tests/unit/test_pic.cpp (Langmuir frequency and field, two-stream growth, Gauss's law),
now on the block mesh through the driver, plus 1 vs 2 ranks bit for bit and the energy of
a 3-D uniform thermal plasma on 2 ranks. Numbers come from pic_history.csv, summary.json
-> pic and the final checkpoint."""
import csv
import math

import h5py
import numpy as np
import pytest

from h5compare import differing_datasets
from runner import run, shared_run, summary
from tessera import reader

C = 299792458.0
EPS0 = 8.8541878128e-12
QE = 1.602176634e-19
ME = 9.1093837015e-31


def omega_p(n):
    return math.sqrt(n * QE * QE / (EPS0 * ME))


def history(out):
    with open(out / "pic_history.csv") as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) if r[k] else math.nan for r in rows]) for k in rows[0]}


def last_checkpoint(out):
    return reader.find_outputs(out).checkpoints[-1]


@pytest.fixture(scope="module")
def langmuir(tmp_path_factory):
    return {n: shared_run(tmp_path_factory, f"pic_langmuir_{n}", "pic_langmuir_1d.toml", ranks=n)
            for n in (1, 2)}


def test_langmuir_oscillates_at_the_leapfrog_plasma_frequency(langmuir):
    # As the kernel test: period from the second zero crossing of Ex's sin(kx) projection,
    # against sin(w dt/2) = w_p dt/2 (1 %).
    h = history(langmuir[1])
    amp, t = h["ex_mode_sin"], h["time"]
    dt = t[1] - t[0]
    period, crossings = 0.0, 0
    for n in range(2, len(amp)):
        if (amp[n - 1] > 0) != (amp[n] > 0):
            crossings += 1
            if crossings == 2:
                period = dt * (n - 1 + amp[n - 1] / (amp[n - 1] - amp[n]))
                break
    assert period > 0
    wp = omega_p(2e24)
    w_leapfrog = 2 / dt * math.asin(0.5 * wp * dt)
    err = abs(2 * math.pi / period / w_leapfrog - 1)
    print(f"Langmuir: w/w_leapfrog - 1 = {err:.2e}")
    assert err < 0.01


def test_langmuir_field_matches_the_cold_plasma_solution(langmuir):
    # Ex(x, t) = eps (m_e c w_p / e) sin(k x) sin(w_p t) at the last step (5 %); Ex sits at
    # the cell centres along x (half a cell up from the node).
    s = summary(langmuir[1])
    wp, k = omega_p(2e24), 2 * math.pi / 40e-6
    with h5py.File(last_checkpoint(langmuir[1]), "r") as f:
        ex = f["ex"][()][:, 0, 0, :]
        lo = f["bounding box"][()][:, 0, 0]
        dx = f["block size"][()][:, 0] / ex.shape[1]
    x = lo[:, None] + (np.arange(ex.shape[1])[None, :] + 0.5) * dx[:, None]
    exact = 0.01 * ME * C * wp / QE * np.sin(k * x) * math.sin(wp * s["time"])
    err = np.max(np.abs(ex - exact)) / np.max(np.abs(exact))
    print(f"Langmuir: field error {err:.2e}")
    assert err < 0.05


def test_langmuir_conserves_charge(langmuir):
    assert summary(langmuir[1])["pic"]["charge_error"] <= 1e-11


def test_langmuir_is_bitwise_identical_on_1_and_2_ranks(langmuir):
    assert not differing_datasets(last_checkpoint(langmuir[1]), last_checkpoint(langmuir[2]),
                                  same_ranks=False)


def test_langmuir_restart_on_2_ranks_from_a_1_rank_checkpoint_is_bitwise(tmp_path):
    run("pic_langmuir_1d.toml", tmp_path / "a", "io.checkpoint_interval_steps=40")
    mid = tmp_path / "a" / "pic_langmuir_1d_hdf5_chk_0001"
    run("pic_langmuir_1d.toml", tmp_path / "b", "io.checkpoint_interval_steps=40",
        "--restart", str(mid), ranks=2)
    assert not differing_datasets(last_checkpoint(tmp_path / "a"),
                                  last_checkpoint(tmp_path / "b"), same_ranks=False)


@pytest.fixture(scope="module")
def two_stream(tmp_path_factory):
    return shared_run(tmp_path_factory, "pic_two_stream", "pic_two_stream_1d.toml")


def test_two_stream_grows_at_the_cold_beam_maximum_rate(two_stream):
    # As the kernel test: least-squares slope of ln|E1| from w_p t = 10 and 1e-3 of the
    # saturated maximum to 1e-1 of it, against w_p / sqrt(8) (10 %).
    h = history(two_stream)
    wp = omega_p(1e24)
    a, t = h["ex_mode_abs"][1:], h["time"][1:] * wp
    sat = a.max()
    nb = ne = 0
    for n in range(len(a)):
        if not nb and t[n] >= 10 and a[n] > 1e-3 * sat:
            nb = n
        if nb and a[n] > 0.1 * sat:
            ne = n
            break
    assert ne - nb > 100
    growth = np.polyfit(t[nb:ne + 1], np.log(a[nb:ne + 1]), 1)[0]
    print(f"two-stream: gamma/w_p = {growth:.4f} (cold maximum {1 / math.sqrt(8):.4f})")
    assert abs(growth * math.sqrt(8) - 1) < 0.10
    assert summary(two_stream)["pic"]["charge_error"] <= 1e-11


def test_uniform_3d_plasma_on_2_ranks_conserves_energy(tmp_path):
    # 16^3 cells, 8 particles per cell, TSC, energy-conserving gather, 100 steps: the
    # leapfrog-centred total energy drifts by less than 1e-3 (measured 7e-5), and Gauss's
    # law holds to 1e-11.
    run("pic_uniform_3d.toml", tmp_path, ranks=2)
    s = summary(tmp_path)
    assert s["steps"] == 100 and s["pic"]["particles"] == 16 ** 3 * 8
    h = history(tmp_path)
    tot = h["total_energy"][1:]
    drift = np.max(np.abs(tot / tot[0] - 1))
    print(f"uniform 3-D: energy drift {drift:.2e}")
    assert drift < 1e-3
    assert s["pic"]["energy_drift_max"] < 1e-3
    assert s["pic"]["charge_error"] <= 1e-11
    pic = [c for c in s["timers"]["children"] if c["name"] == "pic"]
    assert pic and {"gather", "push", "deposit", "field_solve", "redistribute"} <= {
        c["name"] for c in pic[0]["children"]}


def test_pic_with_hydro_and_more_levels_are_one_line_errors(tmp_path):
    p = run("pic_langmuir_1d.toml", tmp_path / "a", 'driver.operators=["hydro","pic"]',
            check=False)
    assert p.returncode != 0 and "'pic' runs alone" in p.stderr
    p = run("pic_langmuir_1d.toml", tmp_path / "b", "mesh.lrefine_max=2", check=False)
    assert p.returncode != 0 and "one refinement level" in p.stderr

"""Tracer particles end to end (particles/, physics/particles/; verification.md §K): the Heun
integrator in a prescribed solid-body rotation against its analytic per-turn error, a
periodic uniform flow across blocks, levels and ranks, tracers in a Sod tube against the
exact particle paths, bitwise identical particles and fields on 1, 2 and 4 ranks (2-D and
3-D AMR), restart on another rank count, sync vs async outputs, the files yt reads, what
summary.json reports, and one-line errors for bad input."""
import math

import h5py
import numpy as np
import pytest

from h5compare import differing_datasets
from runner import run, shared_run, summary
from tessera import reader
from tessera.exact.sod import RiemannSolver, SOD_LEFT, SOD_RIGHT, sod_solution


def by_tag(ds):
    """Particles of a Dataset sorted by tag: dict name -> array."""
    p = ds.particles
    o = np.argsort(p["tag"])
    return {k: v[o] for k, v in p.items()}


def last_part(out):
    return sorted(out.glob("*_hdf5_part_*"))[-1]


# --- Integrator: solid-body rotation (tracers_rotation_2d.toml) --------------------------

@pytest.mark.parametrize("steps", [100, 1000])
def test_rotation_drift_and_phase_match_heuns_truncation_error(tmp_path, steps):
    # Heun's step in v = Omega x r is x -> M x, M = (1 - th^2/2) I + th J, th = Omega dt:
    # per step the radius grows by sqrt(1 + th^4/4) and the angle advances by
    # atan2(th, 1 - th^2/2) (tests/unit/test_particles.cpp derives it). After one turn:
    th = 2 * math.pi / steps
    drift_want = (1 + th ** 4 / 4) ** (steps / 2) - 1
    phase_want = steps * math.atan2(th, 1 - th * th / 2) - 2 * math.pi
    dt = 1.0 / steps
    run("tracers_rotation_2d.toml", tmp_path, f"driver.dtinit={dt}", f"driver.dtmax={dt}")
    assert summary(tmp_path)["steps"] == steps
    parts = sorted(tmp_path.glob("*_hdf5_part_*"))
    a, b = by_tag(reader.read(parts[0])), by_tag(reader.read(parts[-1]))
    ax, ay = a["posx"] - 0.5, a["posy"] - 0.5
    bx, by = b["posx"] - 0.5, b["posy"] - 0.5
    drift = np.hypot(bx, by) / np.hypot(ax, ay) - 1
    phase = np.arctan2(ax * by - ay * bx, ax * bx + ay * by)
    assert np.all(np.abs(drift / drift_want - 1) < 0.1), (drift, drift_want)
    assert np.all(np.abs(phase / phase_want - 1) < 0.1), (phase, phase_want)


def test_outflow_removes_particles_and_counts_them(tmp_path):
    # A lattice over the whole box in the rotation: the corners turn out of the domain.
    run("tracers_rotation_2d.toml", tmp_path, "particles.xmin=0", "particles.xmax=1",
        "particles.ymin=0", "particles.ymax=1", "particles.lattice_nx=8",
        "particles.lattice_ny=8", "driver.tmax=0.25", "particles.dt_factor=0.5")
    p = summary(tmp_path)["particles"]
    assert p["lost"] > 0
    assert p["count"] + p["lost"] == 64
    assert reader.read(last_part(tmp_path)).particle_count == p["count"]


# --- Uniform periodic flow across blocks, levels and ranks ------------------------------

FLOW = ("driver.operators=flow", "particles.tracers=true", "particles.lattice_nx=20",
        "particles.lattice_ny=12", "driver.tmax=2.0", "io.plotfile_interval_time=0",
        "io.plot_vars=dens,c12")


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    return {n: shared_run(tmp_path_factory, f"flow_{n}", "advection_2d.toml", *FLOW, ranks=n)
            for n in (1, 2, 4)}


def test_uniform_flow_brings_every_particle_back_with_its_tag(flow):
    # v = (1, 0.5) on the unit periodic square: at t = 2 every particle has gone round
    # twice in x and once in y, across two refinement levels (the scalar disc refines).
    for n, out in flow.items():
        s = summary(out)
        assert s["max_level"] == 2
        parts = sorted(out.glob("*_hdf5_part_*"))
        a, b = by_tag(reader.read(parts[0])), by_tag(reader.read(parts[-1]))
        assert np.array_equal(a["tag"], np.arange(1, 241))
        assert np.array_equal(b["tag"], a["tag"])
        assert np.max(np.abs(b["posx"] - a["posx"])) < 1e-12
        assert np.max(np.abs(b["posy"] - a["posy"])) < 1e-12
        assert s["particles"]["lost"] == 0 and s["particles"]["count"] == 240
        if n > 1:
            assert s["particles"]["migrated"] > 0


def test_uniform_flow_particles_are_rank_independent(flow):
    ref = last_part(flow[1])
    for n in (2, 4):
        assert not differing_datasets(ref, last_part(flow[n]), same_ranks=False)


# --- Sod: tracers against the exact particle paths --------------------------------------

def exact_path(x0, t1, nsteps=4000):
    """Integrate dx/dt = u_exact(x, t) with RK4 (the exact velocity is continuous except
    at the shock, which a particle crosses once)."""
    x = np.array(x0, dtype=float)
    h = t1 / nsteps

    def u(x, t):
        return sod_solution(x, t)[1]
    t = 0.0
    for _ in range(nsteps):
        k1 = u(x, t)
        k2 = u(x + 0.5 * h * k1, t + 0.5 * h)
        k3 = u(x + 0.5 * h * k2, t + 0.5 * h)
        k4 = u(x + h * k3, t + h)
        x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += h
    return x


def test_sod_tracers_follow_the_exact_paths_and_never_cross_the_contact(tmp_path):
    run("sod.toml", tmp_path, "particles.tracers=true", "particles.lattice_nx=100")
    s = summary(tmp_path)
    assert abs(s["time"] - 0.2) < 1e-12
    p = by_tag(reader.read(last_part(tmp_path)))
    x0 = (np.arange(100) + 0.5) / 100
    assert np.array_equal(p["tag"], np.arange(1, 101))
    waves = RiemannSolver(SOD_LEFT, SOD_RIGHT, 1.4).wave_positions(0.2)
    contact, shock = waves["contact"], waves["right_head"]
    # The velocity is continuous across the contact: no tracer crosses it.
    assert np.all(p["posx"][x0 < 0.5] < contact) and np.all(p["posx"][x0 > 0.5] > contact)
    dx = 1.0 / 200
    want = exact_path(x0, 0.2)
    away = np.abs(want - shock) > 2 * dx
    err = np.abs(p["posx"] - want)
    assert np.max(err[away]) < 2 * dx, np.max(err[away]) / dx


# --- AMR with tracers: ranks, restart, async ---------------------------------------------

SOD2 = ("mesh.nblockx=4", "mesh.nblocky=4", "mesh.lrefine_max=3", "driver.tmax=0.05",
        "particles.tracers=true", "particles.init=random", "particles.count=3000",
        "particles.seed=11", "io.plotfile_interval_time=0.025")


@pytest.fixture(scope="module")
def sod2(tmp_path_factory):
    return {n: shared_run(tmp_path_factory, f"sod2t_{n}", "sod_2d.toml", *SOD2, ranks=n)
            for n in (1, 2, 4)}


def test_2d_amr_tracers_are_bitwise_identical_on_1_2_4_ranks(sod2):
    ref = reader.find_outputs(sod2[1]).checkpoints[-1]
    assert summary(sod2[1])["max_level"] == 3
    for n in (2, 4):
        other = reader.find_outputs(sod2[n]).checkpoints[-1]
        assert not differing_datasets(ref, other, same_ranks=False), n
        assert not differing_datasets(last_part(sod2[1]), last_part(sod2[n]), same_ranks=False)


SOD3 = ("mesh.lrefine_max=2", "driver.nend=6", "particles.lattice_nx=32",
        "particles.lattice_ny=8", "particles.lattice_nz=8", "io.plotfile_interval_steps=3",
        "io.checkpoint_interval_steps=3")


@pytest.fixture(scope="module")
def sod3(tmp_path_factory):
    runs = {n: shared_run(tmp_path_factory, f"sod3t_{n}", "sod_3d_tracers.toml", *SOD3, ranks=n)
            for n in (1, 2, 4)}
    # io.writer = rank: the I/O threads write the particle files (the default, auto, writes
    # a run with particles synchronously on a full node).
    runs["async"] = shared_run(tmp_path_factory, "sod3t_async", "sod_3d_tracers.toml", *SOD3,
                               "io.async=true", "io.writer=rank", ranks=2)
    return runs


def test_3d_amr_tracers_are_bitwise_identical_on_1_2_4_ranks(sod3):
    ref = reader.find_outputs(sod3[1]).checkpoints[-1]
    for n in (2, 4):
        assert not differing_datasets(ref, reader.find_outputs(sod3[n]).checkpoints[-1],
                                      same_ranks=False), n
        assert not differing_datasets(last_part(sod3[1]), last_part(sod3[n]), same_ranks=False)


def test_3d_tracers_sync_and_async_outputs_are_identical(sod3):
    assert summary(sod3["async"])["io"]["async"]
    sync, asyn = sorted(sod3[2].glob("*_hdf5_*")), sorted(sod3["async"].glob("*_hdf5_*"))
    assert [p.name for p in sync] == [p.name for p in asyn]
    assert any("_part_" in p.name for p in sync)
    for a, b in zip(sync, asyn):
        assert not differing_datasets(a, b, allowed_params=("io.async", "io.writer")), a.name


def test_3d_tracers_restart_bitwise_on_another_rank_count(sod3, tmp_path):
    chk = reader.find_outputs(sod3[2]).checkpoints
    mid = [c for c in chk if reader.read(c).step == 3][0]
    from runner import EXE, MPIRUN, ROOT  # noqa: F401 (the same executable)
    import subprocess
    cmd = [EXE, "run", str(ROOT / "problems" / "sod_3d_tracers.toml"), "--dir", str(tmp_path),
           "--restart", str(mid), *SOD3]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    mine = reader.find_outputs(tmp_path).checkpoints[-1]
    assert not differing_datasets(chk[-1], mine, same_ranks=False)


def test_3d_tracers_summary_reports_particles_and_their_timers(sod3):
    s = summary(sod3[2])
    p = s["particles"]
    assert p["count"] == 32 * 8 * 8 and p["lost"] == 0
    assert p["bytes"] > 0 and p["pages_requested"] in ("none", "thp", "hugetlb")
    assert "migrated" in p and "pages_achieved" in p
    # The run's data objects by class (issue 12's characterisation of Tessera's own memory).
    o = s["memory"]["objects"]
    assert set(o) == {"metadata", "temporary", "field", "particle"}
    assert "unk" in o["field"]["arenas"] and o["field"]["bytes"] > 0
    assert o["particle"]["arenas"] == ["particles"] and o["particle"]["bytes"] > 0
    assert "staging" in o["temporary"]["arenas"] and o["temporary"]["count"] >= 3
    assert 0 < o["temporary"]["mean_lifetime_seconds"] < o["field"]["mean_lifetime_seconds"]

    def names(rows, prefix=""):
        for r in rows:
            yield prefix + r["name"]
            yield from names(r.get("children", []), prefix + r["name"] + "/")
    timers = set(names([s["timers"]]))
    assert any(t.endswith("particles/advance") for t in timers), sorted(timers)
    assert any(t.endswith("particles/migrate") for t in timers)


def test_yt_reads_the_tracers_of_a_plotfile_as_h5py_does(sod3):
    yt = pytest.importorskip("yt")
    plt = reader.find_outputs(sod3[2]).plotfiles[-1]
    part = str(plt).replace("plt_cnt", "part")
    with h5py.File(part, "r") as f:
        n = int(f["localnp"][()].sum())
        names = [x[0].decode().strip() for x in f["particle names"][()]]
        data = f["tracer particles"][()]
    ds = yt.load(str(plt))
    ad = ds.all_data()
    x = np.asarray(ad["io", "particle_position_x"])
    tag = np.asarray(ad["io", "particle_index"])
    assert len(x) == n == 32 * 8 * 8
    o, want = np.argsort(tag), np.argsort(data[:, names.index("tag")])
    assert np.array_equal(x[o], data[want, names.index("posx")])


# --- Bad input ------------------------------------------------------------------------

def test_a_lattice_larger_than_memory_is_a_one_line_error(tmp_path):
    p = run("sod.toml", tmp_path, "particles.tracers=true", "particles.lattice_nx=2000000000",
            check=False)
    assert p.returncode != 0
    # The memory plan counts the tracers (issue 48) and refuses before the unit's own check.
    err = [l for l in p.stderr.splitlines() if "tessera: error" in l]
    assert len(err) == 1 and "the memory plan does not fit" in err[0], p.stderr[-500:]
    assert "particles" in err[0] and "available" in err[0], err[0]


def test_moves_give_the_same_bits_whatever_outputs_come_between(sod3, tmp_path):
    # A plotfile every step against the fixture's run (plotfiles every 3 steps): each move
    # fills the guard zones of dens and the momenta itself (issue 45: no mesh hook lets it
    # wait for the next fill someone does), so the outputs between moves change nothing.
    # Particles and fields must agree to the bit.
    run("sod_3d_tracers.toml", tmp_path, *SOD3, "io.plotfile_interval_steps=1", ranks=2)
    a_s, b_s = summary(tmp_path), summary(sod3[2])
    assert a_s["particles"]["moves_with_own_guard_fill"] == a_s["steps"] >= 3
    assert b_s["particles"]["moves_with_shared_guard_fill"] == 0
    a = reader.find_outputs(tmp_path).checkpoints[-1]
    b = reader.find_outputs(sod3[2]).checkpoints[-1]
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        for name in ("tracer particles", "localnp", "dens", "momx", "etot"):
            assert fa[name][()].tobytes() == fb[name][()].tobytes(), name

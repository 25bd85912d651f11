"""Production I/O (issue "Production I/O"): bitwise restart, sync vs async identity,
crash safety under kill -9, write failures, corrupted files, the async budget, signals,
FLASH's .dump_* files, rolling checkpoints and staging.

Datasets compared "bitwise": every dataset but those h5compare.py lists.
"""
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from h5compare import differing_datasets
from runner import shared_run, unit_suites_under_mpirun

from tessera import reader

ROOT = Path(__file__).resolve().parents[2]
EXE = os.environ.get("TESSERA_EXE", str(ROOT / "build" / "bin" / "tessera"))
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]
pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")

AMR2D = ["driver.nend=20", "io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=10"]
# Outputs only when a test asks for them (the problem file plots every 0.01 in time).
NO_TIMED = ["io.plotfile_interval_time=0", "io.checkpoint_interval_time=0"]


def cmd(problem, out, *overrides, ranks=1, restart=None):
    c = [EXE, "run", str(ROOT / "problems" / problem), "--dir", str(out), *overrides]
    if restart:
        c += ["--restart", str(restart)]
    if ranks > 1:
        c = MPIRUN + ["-n", str(ranks)] + c
    return c


def run(problem, out, *overrides, ranks=1, restart=None, check=True, timeout=300):
    p = subprocess.run(cmd(problem, out, *overrides, ranks=ranks, restart=restart),
                       capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:]
    return p


def error_line(p):
    """The executable's one-line reason (mpirun may append its own trailer)."""
    lines = [l for l in p.stderr.splitlines() if l.startswith("tessera: error:")]
    assert len(lines) == 1, p.stderr[-2000:]
    return lines[0]


def check(path):
    return subprocess.run([EXE, "check", str(path)], capture_output=True, text=True)


# ---------------------------------------------------------------- the kept time step

def test_the_time_step_kept_from_the_check_is_the_leaves_own_through_regrids_outputs_restart(
        tmp_path):
    """Hydro's max_dt takes the rate its end-of-step check computed while the mesh's state
    epoch stands (Mesh::state_epoch); hydro.verify_kept_rate also computes it afresh every
    step and stops the run if the two differ. 540 steps of 2-D AMR Sedov marking every step
    with the lean marking (no refresh before it), a plotfile every 50 steps (the units'
    refreshes), a checkpoint every 260, then a restart from the step-520 checkpoint: every
    step's kept rate is the leaves' own, and the restart's history is the run's from step
    521 on, to the bit. The tree changes from step 44 on; at step 535 the centre's block
    derefines and the fastest zone's dx doubles: without the regrid's advance of the epoch
    the run stops at step 536 (the kept rate twice the leaves')."""
    args = ["driver.nend=540", "mesh.nrefs=1", "io.plotfile_interval_steps=50",
            "io.checkpoint_interval_steps=260", "hydro.verify_kept_rate=true", *NO_TIMED]
    run("sedov_2d_amr.toml", tmp_path / "a", *args)
    rows = lambda d: [l.split(",")[:4] for l in (d / "history.csv").read_text().splitlines()[1:]]
    full = rows(tmp_path / "a")
    assert [r[0] for r in full] == [str(n) for n in range(1, 541)]
    assert full[534][3] != full[533][3], "the tree did not change at step 535"
    run("sedov_2d_amr.toml", tmp_path / "b", *args,
        restart=tmp_path / "a" / "sedov_2d_amr_hdf5_chk_0002")
    assert rows(tmp_path / "b") == full[520:]


@pytest.mark.parametrize("config", [
    ["hydro.integrator=rk3"],
    ['driver.operators=["hydro","gravity"]', "gravity.type=constant"]],
    ids=["rk3", "gravity_after_hydro"])
def test_what_hydro_keeps_from_unk_is_the_leaves_own_with_rk3_and_with_an_operator_after_it(
        tmp_path, config):
    """The Runge-Kutta step checks each block after its last blend, and check() takes that;
    with an operator after hydro, the driver advances the state epoch before it and
    check() makes its own pass. 200 steps of 2-D AMR Sedov marking every step, with
    hydro.verify_kept_rate (the kept rate and, leaf by leaf, the step's check against
    the leaves' own): the run completes."""
    run("sedov_2d_amr.toml", tmp_path, "driver.nend=200", "mesh.nrefs=1",
        "hydro.verify_kept_rate=true", *config, *NO_TIMED)
    rows = (tmp_path / "history.csv").read_text().splitlines()[1:]
    assert len(rows) == 200


# ---------------------------------------------------------------- restart

@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return shared_run(tmp_path_factory, "full", "sedov_2d_amr.toml", *AMR2D)


@pytest.mark.parametrize("ranks", [1, 2])
def test_restart_at_step_10_is_bitwise_identical_to_the_uninterrupted_run(
        uninterrupted, tmp_path, ranks):
    chk = uninterrupted / "sedov_2d_amr_hdf5_chk_0001"
    with h5py.File(chk, "r") as f:
        nstep = dict((r["name"].strip(), r["value"]) for r in f["integer scalars"][()])[b"nstep"]
    assert nstep == 10
    p = run("sedov_2d_amr.toml", tmp_path, *AMR2D, ranks=ranks, restart=chk)
    assert "restarted from" in p.stdout
    final = "sedov_2d_amr_hdf5_chk_0002"
    assert not differing_datasets(uninterrupted / final, tmp_path / final,
                                  same_ranks=ranks == 1)
    with h5py.File(tmp_path / final, "r") as f:
        assert f["dens"].shape[0] > 4  # AMR: many blocks, regridded after the restart


def test_restart_recomputes_the_derived_eos_state_to_the_bit(uninterrupted, tmp_path):
    """With the gamma law the EOS state is derived (VarRole::derived): a restart does not
    read it from the file (it holds NaN until hydro recomputes it from the conserved
    variables in after_restart). Restarted and stopped at once (nend = the checkpoint's
    step), the final checkpoint holds what the file held, to the bit, in every block
    (parents too: they are restricted from the leaves before a write)."""
    chk = uninterrupted / "sedov_2d_amr_hdf5_chk_0001"
    run("sedov_2d_amr.toml", tmp_path, *AMR2D, "driver.nend=10", restart=chk)
    again = tmp_path / "sedov_2d_amr_hdf5_chk_0002"
    with h5py.File(chk, "r") as a, h5py.File(again, "r") as b:
        for v in ("pres", "temp", "gamc", "game", "eint", "dens", "etot"):
            assert np.array_equal(a[v][()], b[v][()]), v
        assert not np.isnan(b["pres"][()]).any()


def test_restart_logs_the_parameters_that_override_the_checkpoint(uninterrupted, tmp_path):
    chk = uninterrupted / "sedov_2d_amr_hdf5_chk_0001"
    p = run("sedov_2d_amr.toml", tmp_path, *AMR2D[:-1], "io.checkpoint_interval_steps=0",
            "driver.nend=12", restart=chk)
    assert "io.checkpoint_interval_steps: 10 -> 0 (command line)" in p.stdout
    assert "driver.nend: 20 -> 12 (command line)" in p.stdout
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == 12


def test_restart_refuses_a_corrupted_checkpoint_naming_the_dataset(uninterrupted, tmp_path):
    src = uninterrupted / "sedov_2d_amr_hdf5_chk_0001"
    bad = tmp_path / "corrupt_chk"
    data = bytearray(src.read_bytes())
    with h5py.File(src, "r") as f:
        offset = f["dens"].id.get_offset()
    data[offset + 1000] ^= 0x40  # flip one bit inside the density dataset
    bad.write_bytes(bytes(data))
    c = check(bad)
    assert c.returncode != 0
    assert "dataset 'dens': checksum mismatch" in c.stdout
    p = run("sedov_2d_amr.toml", tmp_path / "r", *AMR2D, restart=bad, check=False)
    assert p.returncode != 0
    line = error_line(p)
    assert line.startswith("tessera: error: refusing to restart") and "'dens'" in line


@pytest.fixture(scope="module")
def uninterrupted_2_ranks(tmp_path_factory):
    return shared_run(tmp_path_factory, "full2", "sedov_2d_amr.toml", *AMR2D, ranks=2)


@pytest.mark.parametrize("written_on,ranks", [(1, 4), (2, 1)])
def test_restart_on_another_rank_count_is_bitwise_identical_to_the_uninterrupted_run(
        uninterrupted, uninterrupted_2_ranks, tmp_path, written_on, ranks):
    """Each rank reads only the rows of the blocks it owns after the restart, whatever
    the rank count that wrote them."""
    src = uninterrupted if written_on == 1 else uninterrupted_2_ranks
    chk = src / "sedov_2d_amr_hdf5_chk_0001"
    p = run("sedov_2d_amr.toml", tmp_path, *AMR2D, ranks=ranks, restart=chk)
    assert "restarted from" in p.stdout
    final = "sedov_2d_amr_hdf5_chk_0002"
    assert not differing_datasets(uninterrupted / final, tmp_path / final,
                                  same_ranks=ranks == 1)


def test_restart_refuses_a_row_corrupted_in_rank_1s_share_on_both_ranks(
        uninterrupted_2_ranks, tmp_path):
    """A row is verified by the rank that reads it: a bit flipped in a block only rank 1
    reads still stops both ranks with one line naming the dataset (rank 0 prints it, so
    the failure reached it; the run ends, so rank 1 stopped too)."""
    src = uninterrupted_2_ranks / "sedov_2d_amr_hdf5_chk_0001"
    with h5py.File(src, "r") as f:
        # A 2-rank restart distributes the tree as the 2-rank run that wrote it did.
        owner = f["processor number"][()]
        row_bytes = f["dens"][0].nbytes
        offset = f["dens"].id.get_offset()
    rows_1 = np.flatnonzero(owner == 1)
    assert 0 < len(rows_1) < len(owner)
    row = int(rows_1[len(rows_1) // 2])
    bad = tmp_path / "corrupt_chk"
    data = bytearray(src.read_bytes())
    data[offset + row * row_bytes + 8 * 5 + 3] ^= 0x40
    bad.write_bytes(bytes(data))
    assert "dataset 'dens': checksum mismatch" in check(bad).stdout
    p = run("sedov_2d_amr.toml", tmp_path / "r", *AMR2D, ranks=2, restart=bad, check=False,
            timeout=120)
    assert p.returncode != 0
    line = error_line(p)
    assert line.startswith(f"tessera: error: refusing to restart from '{bad}': "
                           "dataset 'dens': checksum mismatch (stored "), line
    assert not (tmp_path / "r" / "summary.json").exists()


@pytest.mark.parametrize("ranks", [2, 4])
def test_distributed_read_unit_specifications_hold_on_several_ranks(ranks):
    """tests/unit FlashFile* (round trips, the distributed verified read and its errors
    on every rank) under mpirun; ctest runs them on one rank."""
    unit_suites_under_mpirun("FlashFile*", ranks)


def test_restart_holds_this_ranks_rows_not_the_checkpoint(tmp_path):
    """Memory: a restart on 2 ranks of a 59 MB checkpoint peaks within half the file size
    of a fresh start of the same problem (a rank holds one variable of its own rows at a
    time; reading the whole file on every rank, as restarts once did, added the whole file:
    311 vs 251 MiB here)."""
    geometry = ["mesh.nblockz=2", "mesh.zmax=0.25", "driver.nend=0"]
    run("sedov_3d_uniform.toml", tmp_path / "w", *geometry, "io.write_initial=true",
        "io.checkpoint_interval_steps=1", ranks=2)
    chk = tmp_path / "w" / "sedov_3d_uniform_hdf5_chk_0000"
    size = chk.stat().st_size
    assert size > 50e6
    run("sedov_3d_uniform.toml", tmp_path / "fresh", *geometry, ranks=2)
    run("sedov_3d_uniform.toml", tmp_path / "restart", *geometry, ranks=2, restart=chk)
    peak = {d: json.loads((tmp_path / d / "summary.json").read_text())["memory"]["peak_rss_bytes"]
            for d in ("fresh", "restart")}
    assert peak["restart"] < peak["fresh"] + size / 2, (peak, size)


def test_check_accepts_every_published_file_and_rejects_non_files(uninterrupted, tmp_path):
    files = sorted(uninterrupted.glob("*_hdf5_*"))
    assert len(files) >= 4
    for f in files:
        c = check(f)
        assert c.returncode == 0 and ": OK (" in c.stdout, c.stdout
    (tmp_path / "junk").write_bytes(b"not hdf5")
    assert check(tmp_path / "junk").returncode != 0
    assert check(tmp_path / "missing").returncode != 0
    # A truncated file (a crash without atomic publish would leave one) fails.
    t = tmp_path / "truncated"
    t.write_bytes(files[-1].read_bytes()[:20000])
    assert check(t).returncode != 0


# ---------------------------------------------------------------- sync vs async

def test_async_outputs_are_identical_to_sync_outputs_on_two_ranks(tmp_path):
    common = ["driver.nend=30", "io.plotfile_interval_steps=5", "io.checkpoint_interval_steps=5"]
    run("sedov_2d_amr.toml", tmp_path / "sync", *common, ranks=2)
    run("sedov_2d_amr.toml", tmp_path / "async", *common, "io.async=true", ranks=2)
    files = sorted(p.name for p in (tmp_path / "sync").glob("*_hdf5_*"))
    assert len(files) == 14  # steps 0, 5, ..., 25 and the final step 30
    assert files == sorted(p.name for p in (tmp_path / "async").glob("*_hdf5_*"))
    for name in files:
        assert not differing_datasets(tmp_path / "sync" / name, tmp_path / "async" / name,
                                      allowed_params={"io.async"}), name
    s = json.loads((tmp_path / "async" / "summary.json").read_text())
    io = s["io"]
    assert io["async"] is True
    for kind in ("checkpoint", "plotfile"):
        for key in ("count", "bytes", "blocked_seconds", "write_seconds", "sync_fallbacks",
                    "hidden_fraction"):
            assert key in io[kind]
        assert io[kind]["count"] == 7
        assert io[kind]["sync_fallbacks"] == 0
    # The times are reported, not asserted: how much of a write hides behind the loop is
    # a benchmark's question (bench/io_async.py); on a loaded 2-core machine with a rank
    # per core the step loop can wait longer than the write took. That the writes ran on
    # the I/O thread is asserted below from its own timer tree.
    for kind in ("checkpoint", "plotfile"):
        assert io[kind]["write_seconds"] > 0
    # The I/O thread's own timer tree: every write it made (the final checkpoint too: the
    # step loop waits for it, but the I/O thread writes it).
    regions = {c["name"]: c for c in io["thread_timers"]["children"]}
    assert regions["io_thread/checkpoint"]["calls"] == 7
    assert regions["io_thread/plotfile"]["calls"] == 7
    assert regions["io_thread/checkpoint"]["max_s"] > 0
    assert regions["io_thread/plotfile"]["max_s"] > 0


@pytest.mark.parametrize("ranks", [1, 2])
def test_async_yielding_idle_and_node_writer_modes_write_the_sync_files(tmp_path, ranks):
    # The asynchronous modes (the I/O thread copies unk while the next dt is computed;
    # io.mpi_wait=yield; io.thread_priority=idle; io.writer=node, rank 0 writing alone
    # what the step loops gathered) write exactly the synchronous files:
    # plotfiles (derived variables reordered) and checkpoints (derived computed in place)
    # due at the same step, on an AMR mesh (parents restricted before the copy).
    common = ["driver.nend=15", "io.plotfile_interval_steps=5", "io.checkpoint_interval_steps=5"]
    modes = {"sync": ["io.writer=node"], "async": ["io.async=true", "io.writer=rank"],
             "auto": ["io.async=true"],
             "yield": ["io.async=true", "io.mpi_wait=yield", "io.thread_priority=idle"],
             "node": ["io.async=true", "io.writer=node", "io.thread_priority=low"]}
    for mode, extra in modes.items():
        run("sedov_2d_amr.toml", tmp_path / mode, *common, *extra, ranks=ranks)
    files = sorted(p.name for p in (tmp_path / "sync").glob("*_hdf5_*"))
    assert len(files) == 8  # steps 0, 5, 10 and the final step 15, plotfile and checkpoint
    for mode in ("async", "auto", "yield", "node"):
        assert files == sorted(p.name for p in (tmp_path / mode).glob("*_hdf5_*"))
        for name in files:
            assert not differing_datasets(
                tmp_path / "sync" / name, tmp_path / mode / name,
                allowed_params={"io.async", "io.mpi_wait", "io.thread_priority", "io.writer"}), \
                (mode, name)
    io = json.loads((tmp_path / "yield" / "summary.json").read_text())["io"]
    assert io["mpi_wait"] == {"requested": "yield", "achieved": "yield"}  # Open MPI here
    assert io["thread_priority"]["requested"] == "idle"
    io = json.loads((tmp_path / "sync" / "summary.json").read_text())["io"]
    assert io["mpi_wait"] == {"requested": "poll", "achieved": "poll (no I/O thread)"}
    assert io["writer"] == {"requested": "node", "achieved": "rank (io.writer=node needs io.async)"}
    io = json.loads((tmp_path / "node" / "summary.json").read_text())["io"]
    assert io["writer"] == {"requested": "node", "achieved": "node"}  # every rank on this host
    # io.writer = auto (the default, issue 46): one writer when the ranks share a node.
    io = json.loads((tmp_path / "auto" / "summary.json").read_text())["io"]
    assert io["writer"] == {"requested": "auto", "achieved": "node" if ranks > 1 else "rank"}
    assert io["async"] is True
    assert io["checkpoint"]["count"] == 4 and io["plotfile"]["count"] == 4
    # The final checkpoint is synchronous: counted apart, out of the hidden fraction.
    for mode in modes:
        chk = json.loads((tmp_path / mode / "summary.json").read_text())["io"]["checkpoint"]
        assert chk["forced"]["count"] == 1, (mode, chk)
        assert 0 < chk["forced"]["blocked_seconds"] <= chk["blocked_seconds"], (mode, chk)
        assert 0 < chk["forced"]["write_seconds"] <= chk["write_seconds"], (mode, chk)


@pytest.mark.parametrize("override, needle", [
    ("io.mpi_wait=spin", "io.mpi_wait"),
    ("io.thread_priority=high", "io.thread_priority"),
    ("io.writer=socket", "io.writer"),
])
def test_bad_io_thread_options_are_refused_before_the_run(tmp_path, override, needle):
    p = run("sedov_2d_amr.toml", tmp_path / "bad", "driver.nend=1", override, check=False)
    assert p.returncode != 0
    line = error_line(p)
    assert needle in line, line
    assert not (tmp_path / "bad" / "summary.json").exists()


def test_budget_smaller_than_one_output_falls_back_and_counts(tmp_path):
    for mode in ("sync", "wait"):
        out = tmp_path / mode
        run("sedov_2d_amr.toml", out, "driver.nend=12", "io.plotfile_interval_steps=4",
            "io.checkpoint_interval_steps=4", "io.async=true", "io.async_budget=16K",
            f"io.async_overflow={mode}", ranks=2)
        io = json.loads((out / "summary.json").read_text())["io"]
        # outputs at steps 0, 4, 8 go through the budget; the final checkpoint is always
        # synchronous and the final plotfile too falls back.
        assert io["plotfile"]["sync_fallbacks"] == 4, io
        assert io["checkpoint"]["sync_fallbacks"] == 3, io
        assert io["budget_bytes"] == 16384
        for f in out.glob("*_hdf5_*"):
            assert check(f).returncode == 0


# ---------------------------------------------------------------- failures

def test_injected_write_failure_stops_every_rank_and_publishes_nothing_partial(tmp_path):
    # Sync and rank writers: the last rank fails; io.writer = auto (node on one node):
    # rank 0, the one writer, fails. Either way every rank stops.
    for name, extra, failing in (("sync", [], 1), ("async", ["io.async=true", "io.writer=rank"], 1),
                                 ("auto", ["io.async=true"], 0)):
        out = tmp_path / name
        p = run("sedov_2d_amr.toml", out, "driver.nend=20", "io.plotfile_interval_steps=0",
                "io.checkpoint_interval_steps=5", "io.inject_write_error=3", *extra,
                ranks=2, check=False)
        assert p.returncode != 0
        line = error_line(p)
        assert "injected failure" in line and f"rank {failing}" in line, (name, line)
        names = sorted(f.name for f in out.iterdir())
        assert not [n for n in names if n.endswith(".tmp")], names
        # outputs 1 and 2 (the initial plotfile and checkpoint) are published and verify;
        # the third (checkpoint 1, at step 5) never appears, nor anything after it
        assert "sedov_2d_amr_hdf5_chk_0000" in names
        assert "sedov_2d_amr_hdf5_chk_0001" not in names
        for f in out.glob("*_hdf5_*"):
            assert check(f).returncode == 0


def test_full_disk_gives_a_clear_error_and_no_partial_file(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here: " + r.stderr.strip())
    try:
        # a hang here (one rank failing a collective write) would be the bug: time out
        p = run("sedov_2d_amr.toml", mnt / "run", "driver.nend=10",
                "io.checkpoint_interval_steps=5", ranks=2, check=False, timeout=120)
        assert p.returncode != 0
        line = error_line(p)
        assert "not enough space" in line or "cannot write FLASH file" in line, line
        # the initial plotfile fitted and was published before the disk ran out
        assert (mnt / "run" / "sedov_2d_amr_hdf5_plt_cnt_0000").exists()
        for f in (mnt / "run").iterdir():
            assert not f.name.endswith(".tmp")
            if "_hdf5_" in f.name:
                assert check(f).returncode == 0
    finally:
        subprocess.run(["umount", str(mnt)])


def test_kill_9_at_random_moments_leaves_only_verifiable_checkpoints(tmp_path):
    """kill -9 the run at random moments while it checkpoints every step; every published
    checkpoint verifies and the newest restarts. Repeats until at least 2 kills landed
    inside a write (a .tmp file left behind), at most 30 times, and reports the count."""
    rng = random.Random(20261120)
    inside = trials = 0
    newest = None
    while trials < 30 and (inside < 2 or trials < 8):
        out = tmp_path / f"k{trials}"
        trials += 1
        c = cmd("sedov_2d.toml", out, "driver.nend=100000", "driver.tmax=1", *NO_TIMED,
                "io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=1",
                "io.checkpoint_keep=3")
        proc = subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # wait for the first checkpoint, then kill at a random moment
        deadline = time.time() + 60
        while not list(out.glob("*_hdf5_chk_????")) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(rng.random() * 1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        names = [f.name for f in out.iterdir()]
        inside += any(n.endswith(".tmp") for n in names)
        chks = sorted(out.glob("*_hdf5_chk_????"))
        assert chks, names
        assert len(chks) <= 4  # rolling: keep 3 (+1 published while deleting)
        for f in chks:
            r = check(f)
            assert r.returncode == 0, (f.name, r.stdout)
        newest = chks[-1]
    print(f"\nkill -9: {inside} of {trials} kills landed inside a checkpoint write")
    # the newest checkpoint of the last trial restarts and runs on
    run("sedov_2d.toml", tmp_path / "resumed", "io.plotfile_interval_steps=0", *NO_TIMED,
        "io.checkpoint_interval_steps=0", "io.checkpoint_keep=0", "driver.tmax=1",
        f"driver.nend={3 + int(newest.name[-4:])}", restart=newest)
    assert inside >= 1, "no kill landed inside a write: the test did not exercise the writer"


# ---------------------------------------------------------------- schedule

def test_sigterm_writes_a_checkpoint_and_exits_cleanly(tmp_path):
    c = cmd("sedov_2d_amr.toml", tmp_path, "driver.nend=100000", "driver.tmax=1", *NO_TIMED,
            "io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=0")
    proc = subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "SIGTERM: checkpoint, then stop" in out
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["stopped_by"] == "SIGTERM"
    chks = sorted(tmp_path.glob("*_hdf5_chk_*"))
    assert chks and check(chks[-1]).returncode == 0
    with h5py.File(chks[-1], "r") as f:
        nstep = dict((r["name"].strip(), r["value"]) for r in f["integer scalars"][()])[b"nstep"]
    assert nstep == s["steps"] > 0


def test_dump_files_and_kill_file_are_honoured(tmp_path):
    c = cmd("sedov_2d_amr.toml", tmp_path, "driver.nend=100000", "driver.tmax=1", *NO_TIMED,
            "io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=0",
            "io.write_initial=false", "io.write_final=false", ranks=2)
    proc = subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    (tmp_path / ".dump_plotfile").touch()
    (tmp_path / ".dump_checkpoint").touch()
    deadline = time.time() + 60
    while (tmp_path / ".dump_checkpoint").exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    (tmp_path / ".kill").touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert ".dump_plotfile found" in out and ".dump_checkpoint found" in out
    names = sorted(f.name for f in tmp_path.glob("*_hdf5_*"))
    # the dumped plotfile and checkpoint, then the checkpoint written on .kill
    assert names == ["sedov_2d_amr_hdf5_chk_0000", "sedov_2d_amr_hdf5_chk_0001",
                     "sedov_2d_amr_hdf5_plt_cnt_0000"], names
    assert json.loads((tmp_path / "summary.json").read_text())["stopped_by"] == ".kill"


def test_rolling_checkpoints_keep_the_newest_k(tmp_path):
    run("sedov_2d_amr.toml", tmp_path, "driver.nend=12", "io.plotfile_interval_steps=0",
        "io.checkpoint_interval_steps=2", "io.checkpoint_keep=2")
    names = sorted(f.name for f in tmp_path.glob("*_hdf5_chk_*"))
    # steps 0, 2, ..., 10 give checkpoints 0..5, the final step 12 gives 6
    assert names == ["sedov_2d_amr_hdf5_chk_0005", "sedov_2d_amr_hdf5_chk_0006"], names


def test_staging_directory_drains_to_the_run_directory(tmp_path):
    stage = tmp_path / "stage"
    for extra in ([], ["io.async=true"]):
        out = tmp_path / ("async" if extra else "sync")
        run("sedov_2d_amr.toml", out, "driver.nend=10", "io.plotfile_interval_steps=5",
            "io.checkpoint_interval_steps=5", f"io.stage_dir={stage}", *extra, ranks=2)
        names = sorted(f.name for f in out.glob("*_hdf5_*"))
        assert len(names) == 6, names
        for f in out.glob("*_hdf5_*"):
            assert check(f).returncode == 0
        assert not list(stage.iterdir())  # drained and removed
        io = json.loads((out / "summary.json").read_text())["io"]
        assert io["checkpoint"]["drain_seconds"] > 0


def test_compressed_plotfile_and_mpi_hints(tmp_path):
    run("sedov_2d_amr.toml", tmp_path / "z", "driver.nend=4", "io.plotfile_interval_steps=0",
        "io.checkpoint_interval_steps=0", "io.plotfile_deflate=6", "io.romio_cb_write=enable",
        "io.cb_buffer_size=4M", "io.mpi_hints=cb_nodes=1", ranks=2)
    run("sedov_2d_amr.toml", tmp_path / "p", "driver.nend=4", "io.plotfile_interval_steps=0",
        "io.checkpoint_interval_steps=0", ranks=2)
    z = tmp_path / "z" / "sedov_2d_amr_hdf5_plt_cnt_0001"
    p = tmp_path / "p" / "sedov_2d_amr_hdf5_plt_cnt_0001"
    assert check(z).returncode == 0
    with h5py.File(z, "r") as fz, h5py.File(p, "r") as fp:
        assert fz["dens"].compression == "gzip"
        assert np.array_equal(fz["dens"][()], fp["dens"][()])
    assert z.stat().st_size < p.stat().st_size


def test_restart_from_the_final_checkpoint_writes_no_output_twice(tmp_path):
    # Plotfiles every 0.05: the first run writes t = 0, 0.05, 0.1 (the last as its final
    # plotfile). Continued to 0.2 from its final checkpoint, the restart writes 0.15 and
    # 0.2 only: the checkpoint carries the next output times past the final outputs.
    run("sod.toml", tmp_path / "a", "driver.tmax=0.1", *NO_TIMED, "io.plotfile_interval_time=0.05")
    first = sorted((tmp_path / "a").glob("*_plt_cnt_*"))
    assert len(first) == 3
    chk = sorted((tmp_path / "a").glob("*_hdf5_chk_*"))[-1]
    run("sod.toml", tmp_path / "b", "driver.tmax=0.2", *NO_TIMED,
        "io.plotfile_interval_time=0.05", restart=chk)
    later = sorted((tmp_path / "b").glob("*_plt_cnt_*"))
    times = sorted(reader.read(f).time for f in later)
    assert len(times) == 2 and times[0] > 0.14, times
    names = {f.name for f in first} | {f.name for f in later}
    assert len(names) == 5  # no file name written twice


def test_auto_writer_on_a_full_node_with_particles_writes_synchronously(tmp_path):
    # io.writer = auto (issue 46, item 7) on 2 ranks of one node with particles: the node
    # writer does not take particle outputs, whose collective writes on I/O threads stall
    # beside ranks polling MPI on every core; on a full node (2 ranks on 2 cores) the run
    # writes synchronously and says so (io.note, a log warning); with cores to spare the
    # node writer writes the grid outputs. The files are those of synchronous writes.
    common = ["driver.nend=10", "io.plotfile_interval_steps=5", "io.checkpoint_interval_steps=5"]
    run("sod_3d_tracers.toml", tmp_path / "sync", *common, ranks=2)
    p = run("sod_3d_tracers.toml", tmp_path / "auto", *common, "io.async=true", ranks=2)
    files = sorted(f.name for f in (tmp_path / "sync").glob("*_hdf5_*"))
    assert files and files == sorted(f.name for f in (tmp_path / "auto").glob("*_hdf5_*"))
    for name in files:
        assert not differing_datasets(tmp_path / "sync" / name, tmp_path / "auto" / name,
                                      allowed_params={"io.async"}), name
    # Full or not depends on the cores the ranks may use (their affinities: a launcher
    # that binds each rank to a core makes 2 ranks a full node anywhere); the summary's
    # decision must be one of the two, consistently.
    io = json.loads((tmp_path / "auto" / "summary.json").read_text())["io"]
    if io["async"] is False:
        assert io["writer"] == {"requested": "auto",
                                "achieved": "rank (synchronous: a full node, with particles)"}
        assert "writing synchronously" in io["note"]
        assert "writing synchronously" in p.stdout + p.stderr
    else:
        assert io["writer"] == {"requested": "auto", "achieved": "node"} and "note" not in io
    if len(os.sched_getaffinity(0)) <= 2:  # 2 ranks here fill the cores whatever the binding
        assert io["async"] is False

"""Issue 46 (costs per rank that do not grow with the machine), what is built so far: the
exact sums over leaves reduced over ranks, and the communication census (summary.json
"comm"; its unit suites on several ranks)."""
import pytest

from runner import run, summary, unit_suites_under_mpirun

COMM_KEYS = {"ranks", "steps", "p2p_messages_per_step_max", "p2p_bytes_per_step_max",
             "p2p_bytes_per_step_mean", "collectives_per_step_max",
             "collective_bytes_per_step_max", "regions"}


@pytest.mark.parametrize("ranks", [2, 3])
def test_exact_sums_and_the_census_hold_on_several_ranks(ranks):
    # ExactSum's rank split; the census of a guard fill is the plans' bytes (2 ranks: one
    # message) and an allreduce its send buffer.
    unit_suites_under_mpirun("ExactSum.*:CommCensus.*", ranks)


def test_summary_has_the_census_of_the_step_loop(tmp_path):
    run("sedov_2d_amr.toml", tmp_path, "driver.nend=6", "io.plotfile_interval_steps=0",
        "io.checkpoint_interval_steps=0", ranks=2)
    c = summary(tmp_path)["comm"]
    assert set(c) == COMM_KEYS
    assert c["ranks"] == 2 and c["steps"] == 6
    # Guard fills exchange blocks between the two ranks every step; the sums and time
    # steps are collectives of a few hundred bytes at most, whatever the mesh.
    assert c["p2p_messages_per_step_max"] > 0 and c["p2p_bytes_per_step_max"] > 0
    assert 0 < c["p2p_bytes_per_step_mean"] <= c["p2p_bytes_per_step_max"]
    assert 0 < c["collectives_per_step_max"] and c["collective_bytes_per_step_max"] < 4096
    fills = [k for k in c["regions"] if k.endswith("mpi") and c["regions"][k]["p2p_bytes"] > 0]
    assert fills, c["regions"]


def _sedov_box(n):
    """3-D Sedov on n x n/2 x n/2 root blocks of 8^3 zones (zones of 1/16), periodic."""
    g = [n, n // 2, n // 2]
    out = ["mesh.nxb=8", "mesh.lrefine_max=1", "driver.nend=2", "driver.tmax=1",
           "mesh.maxblocks=200", "io.plotfile_interval_steps=0",
           "io.checkpoint_interval_steps=0", "io.plotfile_interval_time=0",
           "io.checkpoint_interval_time=0", "io.write_final=false"]
    for a, k in zip("xyz", g):
        out += [f"mesh.nblock{a}={k}", f"mesh.{a}min=0", f"mesh.{a}max={k / 2}",
                f"sedov.{a}ctr={k / 4}", f"mesh.{a}l_boundary_type=periodic",
                f"mesh.{a}r_boundary_type=periodic"]
    return out


def test_eight_times_the_blocks_contribute_the_same_collective_bytes(tmp_path):
    # The time step's MPI_MIN and the driver's totals (exact sums, ExactSum::kBytes per
    # quantity): 16 and 128 blocks on 2 ranks contribute the same bytes per step; the
    # guard fills' point-to-point bytes grow with the blocks.
    c = {}
    for n in (4, 8):
        run("sedov_3d.toml", tmp_path / str(n), *_sedov_box(n), ranks=2)
        c[n] = summary(tmp_path / str(n))["comm"]
    assert summary(tmp_path / "8")["leaf_blocks"] == 8 * summary(tmp_path / "4")["leaf_blocks"]
    assert c[8]["collective_bytes_per_step_max"] == c[4]["collective_bytes_per_step_max"]
    assert c[8]["collectives_per_step_max"] == c[4]["collectives_per_step_max"]
    assert c[8]["p2p_bytes_per_step_max"] > c[4]["p2p_bytes_per_step_max"]

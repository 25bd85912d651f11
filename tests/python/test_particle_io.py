"""Particles in FLASH files (shared/reference/flash-hdf5-format.md section 6), written by
the C++ writer and read by tessera.reader, `tessera check` and yt.

The files come from the unit-test binary beside the executable (the gtest
FlashFileParticles.WritesSampleFilesForThePythonReaderAndYt, run on 2 ranks with
TESSERA_PARTICLE_FILES_DIR set): pair_hdf5_plt_cnt_0001 (f32 grid, no particles), its
particle file pair_hdf5_part_0001 (same time), pair_hdf5_chk_0001 (grid and the same
particles) and none_hdf5_chk_0001 (zero particles). Five blocks (a 2-D root and its four
children), 0, 3, 1, 0 and 4 particles in them; time 0.125.
"""
import os
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
from runner import EXE, MPIRUN

from tessera.reader import read

UNIT = Path(EXE).parent / "tessera_unit"
PROPS = ["blk", "posx", "posy", "posz", "proc", "tag", "velx", "vely", "velz"]
COUNTS = [0, 3, 1, 0, 4]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Directory of the files the C++ writer wrote (on 2 ranks)."""
    if not UNIT.is_file():
        pytest.skip(f"{UNIT} is not built")
    out = tmp_path_factory.mktemp("particles")
    env = dict(os.environ, TESSERA_PARTICLE_FILES_DIR=str(out))
    p = subprocess.run(MPIRUN + ["-n", "2", str(UNIT),
                                 "--gtest_filter=*WritesSampleFilesForThePythonReaderAndYt"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    for name in ("pair_hdf5_plt_cnt_0001", "pair_hdf5_part_0001", "pair_hdf5_chk_0001",
                 "none_hdf5_chk_0001"):
        assert (out / name).is_file(), name
    return out


def _expect_the_particles(ds):
    """The 8 particles of the sample files, in file order (grouped by block)."""
    assert ds.particle_names == PROPS
    assert ds.localnp.tolist() == COUNTS
    assert ds.particle_count == 8
    p = ds.particles
    assert list(p) == PROPS
    assert p["tag"].tolist() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert p["blk"].tolist() == [2, 2, 2, 3, 5, 5, 5, 5]  # 1-based blocks, file order
    assert np.all(p["posz"] == 0.5)
    assert p["velx"].dtype == np.float64
    assert p["velx"][0] == np.sqrt(0.17)  # f64 kept exactly


def test_plotfile_reads_the_particles_of_its_particle_file(files):
    ds = read(files / "pair_hdf5_plt_cnt_0001")
    assert ds.n_blocks == 5 and not ds.double_precision
    assert ds.particle_path == str(files / "pair_hdf5_part_0001")
    _expect_the_particles(ds)
    # Each particle lies inside the block it names (the plotfile's tree).
    p = ds.particles
    box = ds.bbox[p["blk"].astype(int) - 1]
    assert np.all((box[:, 0, 0] <= p["posx"]) & (p["posx"] < box[:, 0, 1]))
    assert np.all((box[:, 1, 0] <= p["posy"]) & (p["posy"] < box[:, 1, 1]))


def test_particle_file_reads_as_a_dataset_without_blocks(files):
    ds = read(files / "pair_hdf5_part_0001")
    assert ds.n_blocks == 0 and ds.var_names == [] and len(ds.leaves()) == 0
    assert ds.time == 0.125 and ds.ndim == 2 and (ds.nxb, ds.nyb, ds.nzb) == (4, 4, 1)
    assert ds.domain().tolist() == [[0, 1], [0, 1], [0, 1]]
    _expect_the_particles(ds)
    with h5py.File(files / "pair_hdf5_part_0001", "r") as f:
        assert "bounding box" not in f and "gid" not in f  # yt: a particle-only dataset


def test_checkpoint_holds_the_same_particles_and_zero_particles_read_empty(files):
    chk = read(files / "pair_hdf5_chk_0001")
    _expect_the_particles(chk)
    part = read(files / "pair_hdf5_part_0001")
    for name in PROPS:
        assert chk.particles[name].tobytes() == part.particles[name].tobytes(), name
    none = read(files / "none_hdf5_chk_0001")
    assert none.particle_names == PROPS and none.localnp.tolist() == [0] * 5
    assert none.particle_count == 0 and none.particles["posx"].shape == (0,)


def test_plotfile_without_a_particle_file_has_no_particles(files, tmp_path):
    shutil.copy(files / "pair_hdf5_plt_cnt_0001", tmp_path / "alone_hdf5_plt_cnt_0001")
    ds = read(tmp_path / "alone_hdf5_plt_cnt_0001")
    assert ds.particle_path is None and ds.particle_count == 0 and ds.particles == {}
    assert ds.particle_names == [] and ds.localnp.shape == (0,)


def _pair_with_part_time(files, directory, t):
    """A copy of the pair whose particle file says time t."""
    shutil.copy(files / "pair_hdf5_plt_cnt_0001", directory / "x_hdf5_plt_cnt_0001")
    shutil.copy(files / "pair_hdf5_part_0001", directory / "x_hdf5_part_0001")
    with h5py.File(directory / "x_hdf5_part_0001", "r+") as f:
        scalars = f["real scalars"][()]
        scalars[0]["value"] = t
        f["real scalars"][...] = scalars
    return directory / "x_hdf5_plt_cnt_0001"


def test_a_particle_file_at_another_time_is_an_error_naming_both_times(files, tmp_path):
    plot = _pair_with_part_time(files, tmp_path, 0.25)
    with pytest.raises(ValueError) as err:
        read(plot)
    text = str(err.value)
    assert "\n" not in text
    assert "x_hdf5_part_0001" in text and "0.25" in text and "0.125" in text, text
    # Within np.isclose (yt's test) the pair is accepted.
    plot = _pair_with_part_time(files, tmp_path, 0.125 * (1 + 1e-9))
    assert read(plot).particle_count == 8


def test_tessera_check_reports_a_particle_file_at_another_time(files, tmp_path):
    if not Path(EXE).is_file():
        pytest.skip(f"{EXE} is not built")
    good = subprocess.run([EXE, "check", *sorted(map(str, files.iterdir()))],
                          capture_output=True, text=True, timeout=120)
    assert good.returncode == 0, good.stdout
    assert good.stdout.count(": OK (") == 4, good.stdout
    plot = _pair_with_part_time(files, tmp_path, 0.25)
    bad = subprocess.run([EXE, "check", str(plot)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1
    assert "  particle file 'x_hdf5_part_0001' has time 0.25, its plotfile 0.125\n" in bad.stdout


def test_yt_loads_the_particles_of_the_pair_and_of_the_particle_file(files):
    yt = pytest.importorskip("yt")
    yt.set_log_level(40)
    ds = yt.load(str(files / "pair_hdf5_plt_cnt_0001"))
    assert ds.particle_filename == str(files / "pair_hdf5_part_0001")
    x = np.asarray(ds.all_data()["io", "particle_position_x"])
    want = read(files / "pair_hdf5_part_0001").particles
    # yt reads grid by grid: the same particles, compare as sorted sets.
    assert np.array_equal(np.sort(x), np.sort(want["posx"]))
    part = yt.load(str(files / "pair_hdf5_part_0001"))
    assert type(part).__name__ == "FLASHParticleDataset"
    assert np.array_equal(np.sort(np.asarray(part.all_data()["io", "particle_index"])),
                          np.arange(1, 9))

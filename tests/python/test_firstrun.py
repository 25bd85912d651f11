"""What `make run` shows a new user: the default problem (problems/sedov_3d.toml, 3-D
Sedov in 16^3-zone blocks with AMR) and its picture (`python -m tessera plot`).

The default problem is run in full on 2 ranks (about a minute on 2 idle cores): it must
end with fewer than half the leaf blocks of a uniform mesh at its finest level, with the
finest level where the shock is (issue 13, item 5). The plot test runs a small version
and checks that the PNG has the slice with level-coloured block outlines and the panel of
leaf blocks and zone-updates/s from the run's history.csv.
"""
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from runner import EXE, ROOT, run, shared_run, summary  # noqa: E402
from tessera import reader  # noqa: E402
from tessera.exact.sedov import SedovSolution  # noqa: E402
from tessera.plot import LEVEL_COLOURS, figure, uniform_leaf_count  # noqa: E402

pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")

# A small 3-D Sedov with two levels that regrids during its 30 steps.
SMALL = ["mesh.nxb=8", "mesh.nblockx=2", "mesh.nblocky=2", "mesh.nblockz=2",
         "mesh.lrefine_max=3", "sedov.r_init=0.0546875", "driver.nend=30",
         "io.plotfile_interval_time=0"]


def _distances(ds, leaves, centre):
    """Nearest and farthest distance of each leaf block's box from centre."""
    box = ds.bbox[leaves]
    near = np.clip(centre, box[:, :, 0], box[:, :, 1])
    far = np.where(np.abs(box[:, :, 0] - centre) > np.abs(box[:, :, 1] - centre),
                   box[:, :, 0], box[:, :, 1])
    return np.linalg.norm(near - centre, axis=1), np.linalg.norm(far - centre, axis=1)


def test_history_csv_has_a_row_per_step(tmp_path_factory):
    small = shared_run(tmp_path_factory, "small", "sedov_3d.toml", *SMALL, ranks=2)
    s = summary(small)
    h = reader.read_history(small)
    assert h is not None
    assert list(h["step"]) == list(range(1, s["steps"] + 1))
    assert h["time"][-1] == pytest.approx(s["time"], rel=1e-8)
    assert h["leaves"][-1] == s["leaf_blocks"]
    assert np.all(h["dt"] > 0) and np.all(h["zone_updates_per_second"] >= 0)


def test_plot_has_the_slice_with_levels_and_the_history_panel(tmp_path, tmp_path_factory):
    small = shared_run(tmp_path_factory, "small", "sedov_3d.toml", *SMALL, ranks=2)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
    png = tmp_path / "picture.png"
    p = subprocess.run([sys.executable, "-m", "tessera", "plot", str(small), "--out",
                        str(png), "--log"], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(png) and png.stat().st_size > 20000
    assert plt.imread(png).shape[1] > 1500  # the wide two-panel figure

    # The same figure, inspected: slice axes with one outline colour per level in use and
    # a legend naming them; history axes with the leaf blocks of every step.
    ds = reader.read(reader.last_output(small))
    hist = reader.read_history(small)
    fig = figure(ds, log=True, history=hist, summary=summary(small))
    try:
        axes = {ax.get_label(): ax for ax in fig.axes}
        assert {"slice", "history", "history_rate", "run"} <= set(axes)
        sl = axes["slice"]
        levels = sorted({int(ds.refine_level[b]) for b in ds.leaves()})
        assert len(levels) >= 2
        colours = [tuple(c.get_edgecolor()[0]) for c in sl.collections
                   if isinstance(c, LineCollection)]
        want = [matplotlib.colors.to_rgba(LEVEL_COLOURS[lv], 0.9) for lv in levels]
        assert [tuple(np.round(c, 3)) for c in colours] == [tuple(np.round(w, 3)) for w in want]
        texts = [t.get_text() for t in sl.get_legend().get_texts()]
        assert all(any(t.startswith(f"level {lv + 1}") for t in texts) for lv in levels)
        assert sl.images and np.isfinite(sl.images[0].get_array()).all()
        leaves_line = axes["history"].get_lines()[0]
        assert np.array_equal(np.asarray(leaves_line.get_ydata()), hist["leaves"])
        assert len(axes["history_rate"].get_lines()) >= 1
        assert "zone-updates/s" in axes["history_rate"].get_ylabel()
    finally:
        plt.close(fig)


def test_default_problem_ends_with_fewer_than_half_the_uniform_leaf_blocks(tmp_path):
    # The `make run` problem with its own parameters, in full, on 2 ranks.
    run("sedov_3d.toml", tmp_path, ranks=2)
    s = summary(tmp_path)
    ds = reader.read(reader.last_output(tmp_path))
    assert ds.ndim == 3 and ds.nxb == 16
    assert ds.time == pytest.approx(float(ds.params["driver.tmax"]))
    uniform = uniform_leaf_count(ds)
    print(f"\nleaf blocks at the end: {s['leaf_blocks']} of {uniform} uniform; "
          f"{s['steps']} steps, {s['evolution_seconds']:.1f} s evolution on 2 ranks")
    assert s["leaf_blocks"] == len(ds.leaves())
    assert s["leaf_blocks"] < uniform / 2

    # The finest level follows the shock: every leaf the shock sphere (exact radius)
    # crosses is at the finest level, and no finest leaf starts more than half a root
    # block ahead of it; the leaf count changes over the run as the shock moves.
    finest = int(ds.params["mesh.lrefine_max"]) - 1
    leaves = ds.leaves()
    lev = ds.refine_level[leaves]
    assert lev.max() == finest and lev.min() < finest
    centre = np.array([float(ds.params[f"sedov.{c}ctr"]) for c in "xyz"])
    radius = SedovSolution(3).shock_radius(ds.time)
    dmin, dmax = _distances(ds, leaves, centre)
    crossed = (dmin <= radius) & (dmax >= radius)
    assert crossed.any() and np.all(lev[crossed] == finest)
    root = (ds.domain()[0, 1] - ds.domain()[0, 0]) / int(ds.params["mesh.nblockx"])
    assert dmin[lev == finest].max() < radius + 0.5 * root
    h = reader.read_history(tmp_path)
    assert len(np.unique(h["leaves"])) >= 3

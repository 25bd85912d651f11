"""Level sets (issue 22; physics/levelset/, physics/flow/): LeVeque's single vortex, the
redistancing, a translated circle and Flash-X's deforming bubble, each test asserting a
bound the method or verification.md §F sets:

- single vortex, T = 2, uniform 64^2, 128^2, 256^2: at t = T the area change and the shape
  error no worse than 1.2x the [ours] table of verification.md §F (-10.6 %, -4.6 %, -2.2 %;
  1.1e-2, 5.2e-3, 2.5e-3), and both falling with resolution;
- the same with AMR (64^2 root, one level more in the narrow band: finest 128^2) within
  1.2x of the uniform 128^2 result, on fewer leaf blocks;
- single vortex, T = 8 (the filament 2-4 zones wide and thinner at its tail): the area
  never grows (the redistancing inflated it: +105 %, +32 %, +4.7 % at 64^2, 128^2, 256^2),
  |area change| under 10 % at 256^2 and falling with resolution;
- redistancing a distorted phi (phi times 1 + 0.5 sin(2 pi x) sin(2 pi y)): | |grad phi| - 1 |
  below 1e-2 in the band |phi| < 4 dx afterwards, and the zero contour moved by less than
  0.1 dx;
- redistancing alone (50 times two pseudo-steps) on a ring 2, 3 and 4 zones wide: the zero
  contour's crossings of the grid lines move by less than 0.1 zone, the area by less than
  1 %;
- a circle translated once across the periodic domain: area change below 0.5 % at 128^2;
  the same carried by hydro's velocity (driver.operators = ["hydro", "levelset"]);
- 1, 2 and 4 ranks bitwise (the deforming bubble on its adaptive mesh, regrids included);
- every instruction set the WENO5 row kernels are dispatched to gives the same bits;
- the deforming bubble 2-D runs Flash-X's 1000 steps with regrids and asynchronous
  checkpoints; every file verifies, a restart from a checkpoint ends bitwise on the
  uninterrupted run, yt reads phi as h5py does; history.csv follows the area;
- bad input: no fluid (so no velocity), blocks too small for WENO5, a 2-D field on a 3-D mesh."""
import json
from pathlib import Path
import subprocess

import numpy as np
import pytest

from h5compare import differing_datasets
from runner import EXE, run, shared_run, summary
from tessera import reader

VORTEX = "single_vortex_2d.toml"
BUBBLE = "deforming_bubble_2d.toml"
NOPLOT = ["io.plotfile_interval_time=0"]
# verification.md §F [ours]: area change (%) and shape error at t = T = 2.
TABLE = {64: (-10.6e-2, 1.1e-2), 128: (-4.6e-2, 5.2e-3), 256: (-2.2e-2, 2.5e-3)}


def blocks(n):
    return [f"mesh.nblockx={n // 16}", f"mesh.nblocky={n // 16}"]


def vortex_run(tmp_path_factory, n):
    return summary(shared_run(tmp_path_factory, f"vortex{n}", VORTEX, *blocks(n), *NOPLOT))


@pytest.fixture(scope="module")
def vortex(tmp_path_factory):
    return {n: vortex_run(tmp_path_factory, n) for n in (64, 128, 256)}


def test_single_vortex_beats_the_reference_table_and_converges(vortex):
    area = {n: vortex[n]["levelset"]["area_change"] for n in TABLE}
    shape = {n: vortex[n]["levelset"]["shape_error"] for n in TABLE}
    for n, (a_ref, s_ref) in TABLE.items():
        assert vortex[n]["levelset"]["time"] == pytest.approx(2.0)
        assert abs(area[n]) <= 1.2 * abs(a_ref), (n, area[n])
        assert shape[n] <= 1.2 * s_ref, (n, shape[n])
    for a, b in ((64, 128), (128, 256)):
        assert abs(area[b]) < abs(area[a]), area
        assert shape[b] < shape[a], shape
    # Redistancing ran every step (two pseudo-steps each).
    assert vortex[128]["levelset"]["redistance_steps"] == vortex[128]["levelset"]["steps"]


def test_single_vortex_on_a_narrow_band_amr_mesh_matches_the_uniform_fine_mesh(
        tmp_path_factory):
    out = shared_run(tmp_path_factory, "vortex_amr", VORTEX, *blocks(64), *NOPLOT,
                     "mesh.lrefine_max=2", "mesh.maxblocks=400")
    amr, uni = summary(out)["levelset"], vortex_run(tmp_path_factory, 128)["levelset"]
    assert abs(amr["area_change"]) <= 1.2 * abs(uni["area_change"]), (amr, uni)
    assert amr["shape_error"] <= 1.2 * uni["shape_error"], (amr, uni)
    leaves = np.loadtxt(Path(out) / "history.csv", delimiter=",", skiprows=1, usecols=3)
    assert leaves.max() < 64  # fewer blocks than the uniform 8 x 8 ...
    assert leaves.min() < leaves.max()  # ... and the band moved


def test_redistancing_restores_a_distance_without_moving_the_interface(tmp_path):
    still = ["flow.field=uniform", "flow.velx=0", "driver.nend=1", "driver.dtinit=1e-3",
             "levelset.distortion=0.5", *NOPLOT]
    run(VORTEX, tmp_path / "before", *still, "levelset.redistance_iterations=0")
    run(VORTEX, tmp_path / "after", *still, "levelset.redistance_iterations=40")
    before = summary(tmp_path / "before")["levelset"]
    after = summary(tmp_path / "after")["levelset"]
    assert before["gradient_error_max"] > 0.4  # the distortion is there to be removed
    assert after["gradient_error_max"] < 1e-2, after
    assert after["interface_offset_max"] < 0.1, after


def test_single_vortex_to_t8_does_not_inflate_the_filament(tmp_path_factory):
    # LeVeque's hard case: the disc drawn out into a filament 2-4 zones wide (at 64^2 thinner
    # than a zone at its tail) and back. Redistancing's sub-cell distance took the central
    # difference across the filament's ridge and pushed the zero contour outward at every
    # step: +105 %, +32 %, +4.7 % (history maxima +112 %, +33 %, +5.2 %). Advection alone
    # loses what the grid cannot hold (-89 %, -31 %, -6.3 %); verification.md §F's [ours]:
    # -100 %, -38 %, -9.6 %.
    area, grew = {}, {}
    for n in (64, 128, 256):
        out = shared_run(tmp_path_factory, f"vortex_t8_{n}", VORTEX, *blocks(n), *NOPLOT,
                         "flow.period=8", "driver.tmax=8")
        ls = summary(out)["levelset"]
        assert ls["time"] == pytest.approx(8.0)
        area[n] = ls["area_change"]
        hist = np.genfromtxt(Path(out) / "history.csv", delimiter=",", names=True)
        grew[n] = hist["levelset_area"].max() / ls["area_start"] - 1.0
    assert all(g < 0.01 for g in grew.values()), (grew, area)
    assert abs(area[256]) < 0.10, area
    assert abs(area[256]) < abs(area[128]) < abs(area[64]), area


def grid_phi(path):
    """phi of a uniform 2-D mesh's checkpoint as one (ny, nx) array."""
    ds = reader.read(str(path))
    phi, leaves = ds.field("phi"), ds.leaves()
    lo, w = ds.domain()[:, 0], ds.cell_widths(leaves[0])
    n = [int(round((ds.domain()[a, 1] - lo[a]) / w[a])) for a in (0, 1)]
    g = np.full((n[1], n[0]), np.nan)
    for b in leaves:
        i, j = (int(round((ds.bbox[b, a, 0] - lo[a]) / w[a])) for a in (0, 1))
        g[j:j + ds.nyb, i:i + ds.nxb] = phi[b, 0]
    assert not np.isnan(g).any()
    return g


def crossings(g):
    """Where phi changes sign between neighbouring zones along x and along y: the zone pair
    -> the straight line's crossing, in zones from the first zone's centre."""
    out = {}
    for axis, a in ((0, g), (1, g.T)):
        lo, hi = a[:, :-1], a[:, 1:]
        for j, i in zip(*np.nonzero(lo * hi < 0)):
            out[(axis, j, i)] = lo[j, i] / (lo[j, i] - hi[j, i])
    return out


def test_redistancing_holds_a_thin_ring_in_place(tmp_path):
    # A ring (levelset.width) 2, 3 and 4 zones wide about the circle of radius 0.25 at
    # 128^2, at rest, redistanced 50 times with the problem's two pseudo-steps each. Zones
    # inside it have the other interface within their stencil, and the central difference
    # across its ridge made the sub-cell distance too large: before the fix the contour
    # moved 0.68, 0.36, 0.001 zones and the area grew 21.6 %, 1.9 %, 0.0 %.
    h = 1.0 / 128
    moved, area = {}, {}
    for width in (2, 3, 4):
        out = tmp_path / f"w{width}"
        run(VORTEX, out, "flow.field=uniform", "flow.velx=0", "driver.nend=50",
            "driver.dtinit=1e-3", "driver.dtmax=1e-3", "io.checkpoint_interval_steps=50", *NOPLOT,
            "levelset.radius=0.25", f"levelset.width={width * h}",
            f"levelset.x0={0.5 + 0.3 * h}", f"levelset.y0={0.5 + 0.2 * h}")
        found = reader.find_outputs(out).checkpoints
        first, last = found[0], found[-1]
        assert reader.read(str(first)).step == 0 and reader.read(str(last)).step == 50
        before, after = crossings(grid_phi(first)), crossings(grid_phi(last))
        assert len(before) > 400 and after.keys() == before.keys(), width
        moved[width] = max(abs(after[k] - before[k]) for k in before)
        ls = summary(out)["levelset"]
        assert ls["redistance_steps"] == 50
        area[width] = ls["area_change"]
    assert all(m < 0.1 for m in moved.values()), (moved, area)
    assert all(abs(a) < 0.01 for a in area.values()), (moved, area)


def test_a_translated_circle_keeps_its_area(tmp_path):
    periodic = [f"mesh.{a}{s}_boundary_type=periodic" for a in "xy" for s in "lr"]
    run(VORTEX, tmp_path, "flow.field=uniform", "flow.velx=1", "flow.vely=1", "driver.tmax=1",
        "levelset.x0=0.5", "levelset.y0=0.5", *periodic, *NOPLOT)
    ls = summary(tmp_path)["levelset"]
    assert ls["time"] == pytest.approx(1.0)
    assert abs(ls["area_change"]) < 5e-3, ls
    assert ls["shape_error"] < 1e-3, ls  # back where it started


def test_hydro_velocity_carries_the_level_set_once_across_the_domain(tmp_path):
    # driver.operators = ["hydro", "levelset"]: the velocity is unk's momenta over density,
    # here hydro's uniform flow (1, 1) on the periodic 64^2 advection problem, so that after
    # t = 1 the circle is back where it started.
    run("advection_2d.toml", tmp_path, "driver.operators=hydro,levelset",
        "advection.rho_inside=0", "advection.vely=1.0", "mesh.lrefine_max=1",
        "levelset.x0=0.5", "levelset.y0=0.5", "levelset.radius=0.2", *NOPLOT)
    ls = summary(tmp_path)["levelset"]
    assert ls["velocity"] == "unk" and ls["time"] == pytest.approx(1.0)
    assert abs(ls["area_change"]) < 1e-3, ls
    assert ls["shape_error"] < 1e-3, ls


SHORT = ["driver.nend=60", "io.checkpoint_interval_steps=30", "io.plotfile_interval_steps=0",
         "io.async=false", "mesh.lrefine_max=2"]


def test_deforming_bubble_is_bitwise_on_1_2_and_4_ranks(tmp_path):
    outs = {r: tmp_path / f"r{r}" for r in (1, 2, 4)}
    for r, out in outs.items():
        run(BUBBLE, out, *SHORT, ranks=r)
    last = Path(reader.find_outputs(outs[1]).checkpoints[-1])
    assert reader.read(str(last)).step == 60
    for r in (2, 4):
        assert not differing_datasets(last, outs[r] / last.name, same_ranks=False), r
        assert summary(outs[r])["levelset"]["area_end"] == summary(outs[1])["levelset"]["area_end"]


def test_every_simd_target_gives_the_same_bits(tmp_path):
    # The WENO5 rows (physics/levelset/rows.cpp) are compiled per instruction set and
    # dispatched at run time; without fused multiply-adds every target computes the same
    # operations per zone. The best target against each one the processor can be forced to.
    # (In a build with -march every target's copy carries those instructions: the check
    # is only meaningful in the default portable build, which is what CI runs.)
    p = subprocess.run([EXE, "simd", "--json"], capture_output=True, text=True, check=True)
    targets = [t.lower() for t in json.loads(p.stdout)["available"] if t != "scalar"]
    outs = {}
    for t in targets:
        outs[t] = tmp_path / t
        run(VORTEX, outs[t], *blocks(64), "driver.nend=12", "io.checkpoint_interval_steps=12",
            *NOPLOT, f"perf.simd={t}")
        assert summary(outs[t])["simd"]["target"].lower() == t
    last = Path(reader.find_outputs(outs[targets[0]]).checkpoints[-1])
    assert reader.read(str(last)).step == 12
    for t in targets[1:]:
        assert not differing_datasets(last, outs[t] / last.name,
                                      allowed_params={"perf.simd"}), t


@pytest.fixture(scope="module")
def bubble(tmp_path_factory):
    # Flash-X's test length with regrids and asynchronous checkpoints (every 100 steps), as
    # the problem file sets it (finest 256^2: at 128^2 the filament is thinner than the
    # Heaviside's 3 zones by t = 1.5 and the smoothed area is no longer its area).
    return shared_run(tmp_path_factory, "bubble", BUBBLE)


def test_deforming_bubble_runs_1000_steps_and_its_files_verify_and_restart(bubble, tmp_path):
    s = summary(bubble)
    assert s["levelset"]["steps"] == 1000
    # -2.8 % (advection alone -0.90 %): the redistancing rounds off the two sharp ends of the
    # tail. Until issue 48 item 7 its outward push at the thin tail made up for that
    # (-0.46 %, under the 2 % bound this had then); docs/levelset.md.
    assert abs(s["levelset"]["area_change"]) < 0.03, s["levelset"]
    assert s["levelset"]["length_end"] > 2 * s["levelset"]["length_start"]  # it deformed
    hist = np.genfromtxt(Path(bubble) / "history.csv", delimiter=",", names=True)
    assert len(np.unique(hist["leaves"])) > 10  # the band moved: regrids
    assert hist["levelset_area"][-1] == pytest.approx(s["levelset"]["area_end"], rel=1e-8)
    found = reader.find_outputs(bubble)
    files = sorted(map(str, [*found.checkpoints, *found.plotfiles]))
    assert len(found.checkpoints) == 11
    p = subprocess.run([EXE, "check", *files], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    mid = [c for c in found.checkpoints if reader.read(str(c)).step == 900]
    assert len(mid) == 1
    run(BUBBLE, tmp_path, "--restart", str(mid[0]))
    last = Path(found.checkpoints[-1])
    assert not differing_datasets(last, tmp_path / last.name)
    assert summary(tmp_path)["levelset"]["area_start"] == s["levelset"]["area_start"]
    assert summary(tmp_path)["levelset"]["redistance_steps"] == 1000


def test_yt_reads_phi_as_h5py_does(bubble):
    yt = pytest.importorskip("yt")
    import h5py

    plt = reader.find_outputs(bubble).plotfiles[-1]
    with h5py.File(plt, "r") as f:
        phi = np.asarray(f["phi"][()])
    leaf = reader.read(str(plt))
    ds = yt.load(str(plt))
    assert ("flash", "phi") in ds.field_list
    got = np.sort(np.asarray(ds.all_data()["flash", "phi"]).ravel())
    want = np.sort(phi[leaf.leaves()].ravel())
    assert got.shape == want.shape and np.array_equal(got, want)


def error_line(p):
    return p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.stdout


def test_bad_input_is_a_one_line_error(tmp_path):
    # Without "flow" or "hydro" there is no fluid, so no velocity: refused before the run.
    p = run(VORTEX, tmp_path / "a", "driver.operators=levelset", check=False)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "needs a fluid" in p.stderr, p.stderr
    p = run(VORTEX, tmp_path / "b", "mesh.nxb=4", "mesh.nblockx=4", "mesh.nblocky=4",
            check=False)
    assert p.returncode != 0 and "need nxb >= 6" in p.stderr, p.stderr
    p = run(VORTEX, tmp_path / "c", "mesh.ndim=3", check=False)
    assert p.returncode != 0 and "single_vortex\" is a 2-D field" in p.stderr, p.stderr

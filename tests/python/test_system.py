"""System tests: run the real executable on the shipped problems and check physics.

Each test states the bound it asserts (issue "Simulation core", shared/reference/
verification.md). They need TESSERA_EXE (set by ctest) or build/bin/tessera.
"""
import json
import math
import os
import re
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
from h5compare import differing_datasets

from runner import EXE, MPIRUN, ROOT, run, shared_run, summary
from tessera import reader
from tessera.verify import verify

pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")




# ---------------------------------------------------------------- Sod

@pytest.fixture(scope="module")
def sod_runs(tmp_path_factory):
    res = {}
    for name, args in {
        "plm200": [],
        "plm400": ["mesh.nblockx=50"],
        "ppm200": ["hydro.reconstruction=ppm", "hydro.cfl=0.5"],
    }.items():
        res[name] = verify(shared_run(tmp_path_factory, f"sod_{name}", "sod.toml", *args))
    return res


def test_sod_plm_hllc_200_zones_within_reference_error(sod_runs):
    assert sod_runs["plm200"]["n_zones"] == 200
    assert sod_runs["plm200"]["time"] == pytest.approx(0.2)
    assert sod_runs["plm200"]["l1_density"] <= 2.3e-3


def test_sod_ppm_200_zones_within_reference_error(sod_runs):
    assert sod_runs["ppm200"]["l1_density"] <= 1.8e-3


def test_sod_converges_at_first_order_or_better(sod_runs):
    rate = math.log2(sod_runs["plm200"]["l1_density"] / sod_runs["plm400"]["l1_density"])
    assert rate >= 0.8


def test_sod_rotated_2d_runs_and_matches_the_1d_solution(tmp_path):
    run("sod_2d.toml", tmp_path, "mesh.nblockx=4", "mesh.nblocky=4")
    v = verify(tmp_path)
    # 64^2 zones along a 45-degree normal: error a few times the 1-D 200-zone value.
    assert v["l1_density"] < 1.5e-2


# ---------------------------------------------------------------- smooth problem

def sound_wave_l1(out, n, ndim):
    args = [f"mesh.nblockx={n}"]
    if ndim == 2:
        args += [f"mesh.ndim=2", f"mesh.nblocky={n}", "sound_wave.ny_waves=1",
                 f"driver.tmax={1 / math.sqrt(2)}"]
    run("sound_wave.toml", out, *args)
    return verify(out)["l1_density"]


@pytest.mark.parametrize("ndim,n", [(1, 8), (2, 4)])
def test_sound_wave_converges_at_second_order(tmp_path, ndim, n):
    e1 = sound_wave_l1(tmp_path / "a", n, ndim)
    e2 = sound_wave_l1(tmp_path / "b", 2 * n, ndim)
    assert math.log2(e1 / e2) >= 1.9


# ---------------------------------------------------------------- Sedov

def shock_radius_error(v):
    # Centre of the captured shock layer (steepest drop of the binned density) against
    # the exact front r2(t).
    return abs(v["shock_radius_steepest"] - v["shock_radius_exact"]) / v["shock_radius_exact"]


def test_sedov_1d_256_within_reference_and_front_position(tmp_path):
    run("sedov_1d.toml", tmp_path)
    v = verify(tmp_path)
    # Reference (verification.md A): 5.1 % at 256 zones; a correct code lands within 1.5x.
    assert v["l1_density"] <= 1.5 * 0.051
    assert shock_radius_error(v) <= 0.02


# 1-D planar Sedov at 512 zones. Its L1 is set by the size of the energy deposit, not by
# the solver: the blast starts as a hot slab of half-width r0, and in 1-D r0 is 5 % of the
# front radius at t = 0.05 (a volume fraction (r0/R)^3 ~ 1e-4 in 3-D). Measured at 512
# zones, deposit scaled to exactly E: r0 = 1, 2, 3, 3.5 dx -> L1 1.15, 1.78, 2.59, 3.51 %;
# FLASH's r0 = 3.5 dx with 7 sub-zones half-fills the fourth zone on each side (3.51 %,
# front -1.0 %); r0 = 3 dx ends on zone faces (3 whole zones each side, no scaling
# needed: 2.59 %, front -0.64 %). CFL 0.2-0.8 or a 1e-10 first step move it < 0.2 %.
SEDOV_1D_512 = ("mesh.nblockx=32",)


def test_sedov_1d_512_within_3_percent(tmp_path):
    run("sedov_1d.toml", tmp_path, *SEDOV_1D_512, f"sedov.r_init={3 / 512!r}")
    v = verify(tmp_path)
    assert v["n_zones"] == 512
    assert v["l1_density"] <= 0.030  # measured 2.592 %
    assert shock_radius_error(v) <= 0.01  # measured -0.64 %


def _leaf_rows(ds):
    """Leaf block rows of a 1-D file, left to right."""
    rows = [b for b in np.argsort(ds.bbox[:, 0, 0]) if ds.node_type[b] == 1]
    return rows, ds.nxb


def test_sedov_1d_512_error_is_the_deposits_not_the_solvers(tmp_path):
    from muscl_reference import evolve
    l1 = {}
    for zones in (1.0, 2.0, 3.0, 3.5):
        out = tmp_path / f"r{zones}"
        run("sedov_1d.toml", out, *SEDOV_1D_512, f"sedov.r_init={zones / 512!r}",
            "io.write_initial=true", "io.checkpoint_interval_time=1")
        l1[zones] = verify(out)["l1_density"]
    # The error grows with the deposit's radius (measured 1.15, 1.78, 2.59, 3.51 %).
    assert l1[1.0] < l1[2.0] < l1[3.0] < l1[3.5]
    # FLASH's deposit, evolved by an independent textbook MUSCL-Hancock + HLLC solver
    # (tests/python/muscl_reference.py) from Tessera's own initial state: the same L1
    # (measured 3.505 % against Tessera's 3.507 %).
    out = tmp_path / "r3.5"
    first = reader.read(str(out / "sedov_1d_hdf5_chk_0000"))  # t = 0
    rows, nx = _leaf_rows(first)
    start = [np.concatenate([first.field(n)[b].ravel() for b in rows])
             for n in ("dens", "velx", "pres")]
    assert len(start[0]) == 512 and first.time == 0.0
    dens, velx, pres, _ = evolve(*start, dx=1.0 / 512, tmax=0.05)
    ref = tmp_path / "reference"
    ref.mkdir()
    final = ref / "sedov_1d_hdf5_chk_0001"  # the final checkpoint, t = 0.05
    final.write_bytes((out / "sedov_1d_hdf5_chk_0001").read_bytes())
    with h5py.File(final, "r+") as f:
        for name, values in (("dens", dens), ("velx", velx), ("pres", pres)):
            a = f[name][()]
            for q, b in enumerate(rows):
                a[b] = values[q * nx:(q + 1) * nx].reshape(a[b].shape)
            f[name][...] = a
    assert abs(verify(ref)["l1_density"] - l1[3.5]) <= 5e-4


def test_sedov_2d_uniform_128(tmp_path):
    run("sedov_2d.toml", tmp_path)
    v = verify(tmp_path)
    assert v["n_zones"] == 128 * 128
    assert v["l1_density"] <= 0.030
    assert v["shock_radius_exact"] == pytest.approx(0.2245, abs=1e-4)
    assert shock_radius_error(v) <= 0.02
    c = summary(tmp_path)["conservation"]
    assert abs(c["mass_rel_change"]) <= 1e-12 and abs(c["energy_rel_change"]) <= 1e-12


SEDOV_3D_64 = ("mesh.nblockx=4", "mesh.nblocky=4", "mesh.nblockz=4", "sedov.r_init=0.0546875",
               "io.write_final=true")


@pytest.mark.parametrize("recon,front_bound", [("ppm", 0.02), ("plm", 0.04)])
def test_sedov_3d_uniform_64(tmp_path, recon, front_bound):
    run("sedov_3d_uniform.toml", tmp_path, *SEDOV_3D_64, f"hydro.reconstruction={recon}",
        ranks=2)
    v = verify(tmp_path)
    assert v["n_zones"] == 64 ** 3
    assert v["l1_density"] <= 0.037
    assert v["shock_radius_exact"] == pytest.approx(0.3116, abs=1e-4)
    # PPM (+ RK3) puts the front within 2 % at 64^3 (measured +0.4 %). PLM + MC runs
    # +3.6 % ahead at 64^3 (+1.9 % at 128^3): the smeared front of a second-order PLM
    # scheme, not a set-up error - an independent 1-D spherical PLM/HLL solver with the
    # same hot sphere (r_init = 0.0547) shows +5.0 / +2.8 / +1.5 % at dx = 1/64, 1/128,
    # 1/256 and +0.3 % at 4000 zones. The PLM bound guards against regression.
    assert shock_radius_error(v) <= front_bound


def finest_grid(path, var="dens"):
    """Leaf data painted on a uniform grid at the finest level (coarse cells repeated)."""
    ds = reader.read(path)
    f = ds.field(var)
    lv = ds.refine_level
    lmax = lv[ds.leaves()].max()
    lo = ds.bbox[:, :, 0]
    dom_lo, dom_hi = lo.min(axis=0), ds.bbox[:, :, 1].max(axis=0)
    nfine = [int(round((dom_hi[a] - dom_lo[a]) / ((ds.bbox[0, a, 1] - ds.bbox[0, a, 0]) / 2 ** (lmax - lv[0])) * (ds.nxb, ds.nyb, ds.nzb)[a] / 1)) for a in range(3)]
    grid = np.zeros(nfine[::-1])
    for b in ds.leaves():
        r = 2 ** (lmax - lv[b])
        idx = [int(round((lo[b, a] - dom_lo[a]) / (dom_hi[a] - dom_lo[a]) * nfine[a])) for a in range(3)]
        blk = f[b]
        for ax in range(3):
            if blk.shape[ax] > 1:
                blk = np.repeat(blk, r, axis=ax)
        grid[idx[2]:idx[2] + blk.shape[0], idx[1]:idx[1] + blk.shape[1], idx[0]:idx[0] + blk.shape[2]] = blk
    return grid


def test_sedov_3d_amr_is_symmetric_and_conservative(tmp_path):
    # The mesh of the former `make run` default (8^3-zone blocks, 64^3 finest): cheaper
    # than today's default, the same AMR machinery.
    run("sedov_3d.toml", tmp_path, "driver.tmax=0.02", "mesh.nxb=8", "mesh.nblockx=2",
        "mesh.nblocky=2", "mesh.nblockz=2", "mesh.lrefine_max=3", "mesh.refine_var_1=dens",
        "mesh.refine_var_2=pres", "mesh.derefine_guard_layers=0", "sedov.r_init=0.0546875",
        "io.checkpoint_interval_time=0.025", ranks=2)
    s = summary(tmp_path)
    assert s["max_level"] == 3
    assert abs(s["conservation"]["mass_rel_change"]) <= 1e-12
    assert abs(s["conservation"]["energy_rel_change"]) <= 1e-12
    chk = sorted(tmp_path.glob("*_hdf5_chk_*"))[-1]
    g = finest_grid(chk)  # [z, y, x]
    scale = np.abs(g).max()
    for perm in [(0, 2, 1), (1, 0, 2), (2, 1, 0)]:
        assert np.abs(g - g.transpose(perm)).max() <= 1e-12 * scale, perm


def test_sedov_2d_amr_identical_on_1_2_4_ranks(tmp_path):
    files = []
    for n in (1, 2, 4):
        out = tmp_path / f"r{n}"
        run("sedov_2d_amr.toml", out, "mesh.lrefine_max=4", "sedov.r_init=0.013671875",
            "driver.tmax=0.01", "mesh.distribution=" + ("round_robin" if n == 4 else "morton"),
            ranks=n)
        files.append(sorted(out.glob("*_hdf5_chk_*"))[-1])
    ref = h5py.File(files[0], "r")
    for f in files[1:]:
        with h5py.File(f, "r") as h:
            for name in ["dens", "momx", "momy", "etot", "refine level", "gid", "bounding box"]:
                assert np.array_equal(ref[name][()], h[name][()]), (f, name)


def simd_targets():
    """The kernels' instruction sets this build runs here, best first, then "scalar"."""
    p = subprocess.run([EXE, "simd", "--json"], capture_output=True, text=True, check=True)
    return [t.lower() for t in json.loads(p.stdout)["available"]]


def cmake_true(value):
    """CMake's truth of a cached BOOL (ON, YES, Y, TRUE or a non-zero number)."""
    v = value.upper()
    return v in ("ON", "YES", "Y", "TRUE") or (v.isdigit() and int(v) != 0)


def compiled_for():
    """What the code outside the dispatched kernels was compiled for (`tessera simd`)."""
    p = subprocess.run([EXE, "simd", "--json"], capture_output=True, text=True, check=True)
    built = json.loads(p.stdout)["compiled_for"]
    # The CMake configuration's: TESSERA_ARCH's -march value, "native" or "portable".
    cache = Path(EXE).resolve().parents[1] / "CMakeCache.txt"
    if cache.exists():
        text = cache.read_text()
        arch = re.search(r"^TESSERA_ARCH:STRING=(.*)$", text, re.M)
        native = re.search(r"^TESSERA_NATIVE:BOOL=(\w*)$", text, re.M)
        release = re.search(r"^CMAKE_BUILD_TYPE:STRING=Release$", text, re.M)
        want = (arch.group(1) if arch and arch.group(1) else
                "native" if native and cmake_true(native.group(1)) and release
                else "portable")
        assert built == want, (built, want)
    return built


def test_a_forced_simd_target_is_bitwise_on_1_2_4_ranks_and_round_off_from_the_reference(
        tmp_path):
    # Issue 26: with a fixed instruction set every output is the same on any rank count
    # (rows are whole vectors plus one partial vector whatever the decomposition); between
    # the Highway kernels and the C++ reference (perf.simd = scalar) only fused
    # multiply-adds differ: 1e-10 of the field's L1 norm after 20 steps of an AMR blast
    # (measured: Sod and Sedov L1 errors move at 1e-14).
    targets = simd_targets()
    assert targets[-1] == "scalar"
    # The second-best Highway target if there is one (the best is what every other test
    # runs), else the best.
    highway = [t for t in targets if t != "scalar"]
    forced = highway[1] if len(highway) > 1 else highway[0]
    args = ["mesh.lrefine_max=4", "sedov.r_init=0.013671875", "driver.nend=20"]
    files = {}
    built = compiled_for()
    for n, simd in [(1, forced), (2, forced), (4, forced), (1, "scalar")]:
        out = tmp_path / f"r{n}_{simd}"
        p = run("sedov_2d_amr.toml", out, *args, f"perf.simd={simd}",
                "mesh.distribution=" + ("round_robin" if n == 4 else "morton"), ranks=n)
        assert f"simd: the rest of the code is compiled for {built}\n" in p.stdout + p.stderr
        assert summary(out)["simd"]["target"].lower() == simd
        # What the rest of the code was compiled for, as `tessera simd` says (the CMake
        # configuration: portable by default).
        assert summary(out)["simd"]["compiled_for"] == built
        files[(n, simd)] = sorted(out.glob("*_hdf5_chk_*"))[-1]
    ref = h5py.File(files[(1, forced)], "r")
    for n in (2, 4):
        with h5py.File(files[(n, forced)], "r") as h:
            for name in ["dens", "momx", "momy", "etot", "refine level"]:
                assert np.array_equal(ref[name][()], h[name][()]), (forced, n, name)
    with h5py.File(files[(1, "scalar")], "r") as h:
        if np.array_equal(ref["refine level"][()], h["refine level"][()]):
            for name in ["dens", "momx", "momy", "etot"]:
                a, b = ref[name][()], h[name][()]
                rel = np.abs(a - b).sum() / np.abs(b).sum()
                assert rel <= 1e-10, (forced, name, rel)
    # Round-off could flip a refinement decision (then the fields are on other blocks):
    # the conserved totals hold either way.
    tot = {k: summary(tmp_path / f"r1_{k}")["conservation"] for k in (forced, "scalar")}
    for q in ("mass_rel_change", "energy_rel_change"):
        assert abs(tot[forced][q] - tot["scalar"][q]) <= 1e-12, (q, tot)


# ---------------------------------------------------------------- layout

@pytest.mark.parametrize("problem,args", [
    ("sedov_2d_amr.toml", ["mesh.lrefine_max=4", "sedov.r_init=0.013671875", "driver.nend=30"]),
    ("sedov_2d_amr.toml", ["mesh.lrefine_max=3", "sedov.r_init=0.02734375", "driver.nend=10",
                           "hydro.reconstruction=ppm", "hydro.riemann=hlle", "hydro.cfl=0.5"]),
    ("sedov_3d_uniform.toml", ["mesh.nblockx=2", "mesh.nblocky=2", "mesh.nblockz=2", "mesh.nxb=8",
                               "sedov.r_init=0.0546875", "driver.nend=15", "io.write_final=true"]),
    ("advection_2d.toml", ["driver.nend=20"]),
    ("sedov_2d_cyl.toml", ["mesh.lrefine_max=2", "driver.nend=20"]),
    ("shocktube_helmholtz.toml", ["driver.nend=40"]),
], ids=["2d_amr_plm", "2d_amr_ppm_rk3", "3d_uniform", "species_amr", "rz_amr", "helmholtz"])
def test_var_major_and_zone_major_layouts_give_identical_checkpoints(tmp_path, problem, args):
    # The layout decides only where a zone's values live in memory: every kernel does the
    # same arithmetic in the same order on either, so the fields agree to the bit.
    chk = {}
    for layout in ("var_major", "zone_major"):
        run(problem, tmp_path / layout, *args, "mesh.layout=" + layout)
        chk[layout] = sorted((tmp_path / layout).glob("*_hdf5_chk_*"))[-1]
    with h5py.File(chk["var_major"], "r") as h:
        assert {"dens", "momx", "etot", "pres", "gid"} <= set(h)
    assert not differing_datasets(chk["var_major"], chk["zone_major"],
                                  allowed_params={"mesh.layout"})


# ---------------------------------------------------------------- output

def test_yt_opens_plotfile_and_checkpoint_as_flash(tmp_path):
    yt = pytest.importorskip("yt")
    run("sedov_2d_amr.toml", tmp_path, "mesh.lrefine_max=3", "driver.tmax=0.005",
        "sedov.r_init=0.02734375")
    for pattern in ("*_hdf5_plt_cnt_*", "*_hdf5_chk_*"):
        path = sorted(tmp_path.glob(pattern))[-1]
        ds = yt.load(str(path))
        assert type(ds).__name__ == "FLASHDataset"
        ad = ds.all_data()
        dens_yt = np.sort(np.asarray(ad["flash", "dens"]).ravel())
        d = reader.read(path)
        leaf = d.field("dens")[d.leaves()].astype(np.float64)
        assert np.array_equal(dens_yt, np.sort(leaf.ravel()))
        vol = float(ad["index", "cell_volume"].sum())
        assert vol == pytest.approx(1.0, rel=1e-12)


def test_summary_json_has_the_contract_keys(tmp_path):
    run("sod.toml", tmp_path)
    s = summary(tmp_path)
    for k in ["problem", "ndim", "ranks", "steps", "time", "leaf_blocks", "zone_updates",
              "wall_seconds", "zone_updates_per_second", "conservation", "timers", "outputs"]:
        assert k in s, k
    assert set(["mass_rel_change", "energy_rel_change"]) <= set(s["conservation"])
    assert all((tmp_path / f).exists() for f in s["outputs"])
    assert s["time"] == pytest.approx(0.2)


# ---------------------------------------------------------------- bad input

def one_line_error(p):
    assert p.returncode != 0
    lines = [l for l in p.stderr.strip().splitlines() if l.startswith("tessera: error:")]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_unknown_key_names_file_line_and_closest_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "problems" / "sod.toml").read_text().replace("nblockx = 25", "nblokx = 25"))
    p = subprocess.run([EXE, "run", str(bad), "--dir", str(tmp_path)], capture_output=True, text=True)
    msg = one_line_error(p)
    assert "bad.toml:" in msg and "mesh.nblokx" in msg and "mesh.nblockx" in msg


@pytest.mark.parametrize("override,needle", [
    ("mesh.nxb=abc", "mesh.nxb"),
    ("hydro.cfl=3", "out of range"),
    ("mesh.maxblocks=10", "mesh.maxblocks"),
    ("hydro.riemann=roe", "hydro.riemann"),
])
def test_bad_values_stop_the_run_with_one_line(tmp_path, override, needle):
    p = run("sod.toml", tmp_path, override, check=False)
    assert needle in one_line_error(p)


def test_missing_parameter_file(tmp_path):
    p = subprocess.run([EXE, "run", str(tmp_path / "nope.toml")], capture_output=True, text=True)
    assert "nope.toml" in one_line_error(p)


@pytest.mark.parametrize("ranks", [1, 2])
def test_nan_density_reports_block_zone_position_and_step(tmp_path, ranks):
    p = run("sod.toml", tmp_path, "driver.inject_nan_step=3", ranks=ranks, check=False)
    msg = one_line_error(p)
    assert "step 3" in msg and "density" in msg and "block" in msg and "zone" in msg and " at (" in msg


@pytest.mark.parametrize("problem,args,volume", [
    ("sedov_1d.toml", [], 1.0),
    ("sedov_2d.toml", [], 1.0),
    ("sedov_2d_amr.toml", ["mesh.lrefine_max=3"], 1.0),
    ("sedov_3d_uniform.toml", ["mesh.nblockx=2", "mesh.nblocky=2", "mesh.nblockz=2",
                               "sedov.r_init=0.109375"], 1.0),
    ("sedov_2d_cyl.toml", ["mesh.lrefine_max=2"], math.pi * 0.25),
    ("sedov_1d_sph.toml", [], 4.0 / 3.0 * math.pi),
], ids=["1d", "2d", "2d_amr", "3d", "rz_amr", "sph"])
def test_sedov_deposits_exactly_the_requested_energy(tmp_path, problem, args, volume):
    # The sub-zone average alone holds 0.94-0.997 of E; the set-up scales the deposit.
    p = run(problem, tmp_path, *args, "driver.nend=1")
    assert "deposit scaled by" in p.stdout
    c = summary(tmp_path)["conservation"]
    ambient = 1e-5 / (1.4 - 1.0) * volume  # p_ambient / (gamma - 1) over the domain
    assert c["energy_initial"] == pytest.approx(1.0 + ambient, rel=1e-12)

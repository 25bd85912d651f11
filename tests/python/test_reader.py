"""Reader, verify and plot on synthetic FLASH-format (version 9) files written here.

The files follow shared/reference/flash-hdf5-format.md; no executable is needed.
"""

import json
import math
import os
import subprocess
import sys
from itertools import product

import h5py
import numpy as np
import pytest

from tessera.exact.sedov import SedovSolution
from tessera.exact.sod import cell_average, sod_solution
from tessera.reader import find_outputs, last_output, read
from tessera.verify import VerifyError, verify

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")


# --------------------------------------------------------------------------- writer
def _plist(kind, items):
    """Compound array for one FLASH parameter list, with FLASH's member offsets."""
    if kind == "integer":
        dt = np.dtype({"names": ["name", "value"], "formats": ["S80", "<i4"],
                       "offsets": [0, 80], "itemsize": 84})
    elif kind == "real":
        dt = np.dtype({"names": ["name", "value"], "formats": ["S80", "<f8"],
                       "offsets": [0, 80], "itemsize": 88})
    elif kind == "string":
        dt = np.dtype({"names": ["value", "name"], "formats": ["S80", "S80"],
                       "offsets": [0, 80], "itemsize": 160})
    else:  # logical
        dt = np.dtype({"names": ["value", "name"], "formats": ["<i4", "S80"],
                       "offsets": [0, 4], "itemsize": 84})
    arr = np.zeros(len(items), dtype=dt)
    for i, (k, v) in enumerate(items):
        arr[i]["name"] = k.ljust(80).encode()  # FLASH space-pads names
        arr[i]["value"] = v.ljust(80).encode() if kind == "string" else v
    return arr


def write_flash(path, *, ndim, nb, bbox, level, node_type, gid, fields, time, step=0,
                runtime=None, double=True, domain=((0, 1), (0, 1), (0, 1)), nroot=(1, 1, 1)):
    """Write a FLASH v9 file: nb = (nxb, nyb, nzb); level 1-based; fields name -> (N,nz,ny,nx)."""
    nxb, nyb, nzb = nb
    n = len(level)
    runtime = dict(runtime or {})
    ints_rt = {"lrefine_min": 1, "lrefine_max": int(max(level)), "nblockx": nroot[0],
               "nblocky": nroot[1], "nblockz": nroot[2]}
    reals_rt = {f"{c}{e}": float(domain[a][i]) for a, c in enumerate("xyz")
                for i, e in enumerate(("min", "max"))}
    strs_rt = {"geometry": "cartesian"}
    logs_rt = {}
    for k, v in runtime.items():
        if isinstance(v, bool):
            logs_rt[k] = int(v)
        elif isinstance(v, int):
            ints_rt[k] = v
        elif isinstance(v, float):
            reals_rt[k] = v
        else:
            strs_rt[k] = v
    real_t = "<f8" if double else "<f4"
    with h5py.File(path, "w") as f:
        si = np.zeros(1, dtype=[("file format version", "<i4"), ("setup call", "S400"),
                                ("file creation time", "S80"), ("flash version", "S80"),
                                ("build date", "S80"), ("build dir", "S80"),
                                ("build machine", "S80"), ("cflags", "S400"),
                                ("fflags", "S400"), ("setup time stamp", "S80"),
                                ("build time stamp", "S80")])
        si["file format version"] = 9
        f["sim info"] = si
        f["integer scalars"] = _plist("integer", [("globalnumblocks", n), ("nxb", nxb),
                                                  ("nyb", nyb), ("nzb", nzb),
                                                  ("nstep", step), ("dimensionality", ndim)])
        f["real scalars"] = _plist("real", [("time", time), ("dt", 1e-3)])
        f["string scalars"] = _plist("string", [("geometry", "cartesian")])
        f["integer runtime parameters"] = _plist("integer", list(ints_rt.items()))
        f["real runtime parameters"] = _plist("real", list(reals_rt.items()))
        f["string runtime parameters"] = _plist("string", list(strs_rt.items()))
        if logs_rt:
            f["logical runtime parameters"] = _plist("logical", list(logs_rt.items()))
        f["bounding box"] = np.asarray(bbox, dtype=real_t)
        f["refine level"] = np.asarray(level, dtype="<i4")
        f["node type"] = np.asarray(node_type, dtype="<i4")
        f["gid"] = np.asarray(gid, dtype="<i4")
        f["coordinates"] = np.asarray(bbox, dtype=real_t).mean(axis=2)
        f["block size"] = np.diff(np.asarray(bbox, dtype=real_t), axis=2)[:, :, 0]
        f["processor number"] = np.zeros(n, dtype="<i4")
        names = list(fields)
        f["unknown names"] = np.array([[nm.encode()] for nm in names], dtype="S4")
        for nm in names:
            f[nm] = np.asarray(fields[nm], dtype=real_t)


def build_tree(ndim, nroot, domain, refine):
    """Blocks of a forest refined where refine(level, lo, hi) is true (level 1-based).

    Returns bbox (N,3,2), level, node_type, gid (FLASH layout, 1-based numbers).
    """
    nchild = 2 ** ndim
    blocks = []  # dicts: lo, hi, level, parent, children

    def add(lo, hi, lev, parent):
        idx = len(blocks)
        blocks.append({"lo": lo, "hi": hi, "level": lev, "parent": parent, "children": []})
        if refine(lev, lo, hi):
            mid = 0.5 * (lo + hi)
            for c in range(nchild):
                half = [(c >> a) & 1 for a in range(3)]
                clo, chi = lo.copy(), hi.copy()
                for a in range(ndim):
                    clo[a] = mid[a] if half[a] else lo[a]
                    chi[a] = hi[a] if half[a] else mid[a]
                blocks[idx]["children"].append(add(clo, chi, lev + 1, idx))
        return idx

    dom = np.asarray(domain, dtype=float)
    width = (dom[:, 1] - dom[:, 0]) / np.asarray(nroot)
    for k, j, i in product(range(nroot[2]), range(nroot[1]), range(nroot[0])):
        lo = dom[:, 0] + np.array([i, j, k]) * width
        add(lo, lo + width, 1, -1)
    n = len(blocks)
    bbox = np.array([[[b["lo"][a], b["hi"][a]] for a in range(3)] for b in blocks])
    level = np.array([b["level"] for b in blocks])
    node_type = np.array([1 if not b["children"] else
                          (2 if any(not blocks[c]["children"] for c in b["children"]) else 3)
                          for b in blocks])
    gid = np.full((n, 2 * ndim + 1 + nchild), -1, dtype=int)
    for i, b in enumerate(blocks):
        gid[i, 2 * ndim] = b["parent"] + 1 if b["parent"] >= 0 else -1
        if b["children"]:
            gid[i, 2 * ndim + 1:] = np.array(b["children"]) + 1
    return bbox, level, node_type, gid


def centres(bbox, nb):
    """Zone centres (x, y, z), each (N, nz, ny, nx), and widths (N, 3)."""
    nb3 = np.array(nb)
    w = (bbox[:, :, 1] - bbox[:, :, 0]) / nb3
    axes = [bbox[:, a, 0][:, None] + (np.arange(nb3[a]) + 0.5)[None, :] * w[:, a][:, None]
            for a in range(3)]
    x = axes[0][:, None, None, :] + 0 * axes[1][:, None, :, None] + 0 * axes[2][:, :, None, None]
    y = 0 * axes[0][:, None, None, :] + axes[1][:, None, :, None] + 0 * axes[2][:, :, None, None]
    z = 0 * axes[0][:, None, None, :] + 0 * axes[1][:, None, :, None] + axes[2][:, :, None, None]
    return x, y, z, w


# --------------------------------------------------------------------------- reader
@pytest.fixture
def five_block_file(tmp_path):
    """2-D: one root [0,1]^2 with four 4x4 leaf children; dens = 1 + 2x + 3y."""
    nb = (4, 4, 1)
    bbox, level, node_type, gid = build_tree(2, (1, 1, 1), ((0, 1), (0, 1), (0, 1)),
                                             lambda lev, lo, hi: lev == 1)
    x, y, z, _ = centres(bbox, nb)
    path = tmp_path / "synth_hdf5_chk_0003"
    write_flash(path, ndim=2, nb=nb, bbox=bbox, level=level, node_type=node_type, gid=gid,
                fields={"dens": 1 + 2 * x + 3 * y, "pres": np.ones_like(x)}, time=0.125,
                step=17, runtime={"problem.name": "sedov", "eos.gamma": 1.4,
                                  "sedov.p_ambient": 1e-5, "hydro.use_flattening": True})
    return path


def test_reader_reads_tree_and_parameters(five_block_file):
    ds = read(five_block_file)
    assert (ds.ndim, ds.nxb, ds.nyb, ds.nzb) == (2, 4, 4, 1)
    assert ds.time == 0.125 and ds.step == 17
    assert ds.n_blocks == 5
    np.testing.assert_array_equal(ds.refine_level, [0, 1, 1, 1, 1])
    np.testing.assert_array_equal(ds.node_type, [2, 1, 1, 1, 1])
    np.testing.assert_array_equal(ds.leaves(), [1, 2, 3, 4])
    assert ds.bbox.shape == (5, 3, 2)
    np.testing.assert_array_equal(ds.gid[0, 4:], [-1, 2, 3, 4, 5])
    assert ds.var_names == ["dens", "pres"]
    # Parameters: names stripped, strings decoded, logicals as bool, scalars merged.
    p = ds.params
    assert p["problem.name"] == "sedov"
    assert p["geometry"] == "cartesian"
    assert p["eos.gamma"] == 1.4 and p["sedov.p_ambient"] == 1e-5
    assert p["hydro.use_flattening"] is True
    assert p["nxb"] == 4 and p["globalnumblocks"] == 5 and p["time"] == 0.125
    assert p["xmax"] == 1.0 and p["nblockx"] == 1
    np.testing.assert_array_equal(ds.domain()[:2], [[0, 1], [0, 1]])


def test_reader_geometry_of_leaf_blocks(five_block_file):
    ds = read(five_block_file)
    # Child 3 (file row 4) is the upper-right quarter: x, y in [0.5, 1].
    x, y, z = ds.cell_centers(4)
    assert x.shape == (1, 4, 4)
    np.testing.assert_allclose(x[0, 0], 0.5 + (np.arange(4) + 0.5) / 8)
    np.testing.assert_allclose(y[0, :, 0], 0.5 + (np.arange(4) + 0.5) / 8)
    assert ds.cell_volume(4) == pytest.approx(1 / 64)
    assert ds.cell_volume(0) == pytest.approx(1 / 16)
    assert sum(ds.cell_volume(b) * 16 for b in ds.leaves()) == pytest.approx(1.0)
    np.testing.assert_allclose(ds.cell_widths(2), [1 / 8, 1 / 8, 1.0])


def test_reader_fields_are_float64_block_major(five_block_file):
    ds = read(five_block_file)
    d = ds.field("dens")
    assert d.dtype == np.float64 and d.shape == (5, 1, 4, 4)
    for b in ds.leaves():
        x, y, _ = ds.cell_centers(b)
        np.testing.assert_allclose(d[b], 1 + 2 * x + 3 * y, rtol=1e-15)
    # The volume integral over the leaves is that of the linear function: 1 + 1 + 1.5.
    total = sum(np.sum(d[b]) * ds.cell_volume(b) for b in ds.leaves())
    assert total == pytest.approx(3.5, rel=1e-14)
    with pytest.raises(KeyError):
        ds.field("velx")


def _touch_output(path, time, double=True):
    bbox, level, node_type, gid = build_tree(1, (1, 1, 1), ((0, 1), (0, 1), (0, 1)),
                                             lambda *a: False)
    write_flash(path, ndim=1, nb=(8, 1, 1), bbox=bbox, level=level, node_type=node_type,
                gid=gid, fields={"dens": np.ones((1, 1, 1, 8))}, time=time, double=double)


def test_find_and_last_output(tmp_path):
    _touch_output(tmp_path / "run_hdf5_chk_0000", 0.0)
    _touch_output(tmp_path / "run_hdf5_chk_0001", 0.2)
    _touch_output(tmp_path / "run_hdf5_plt_cnt_0002", 0.2, double=False)
    _touch_output(tmp_path / "run_hdf5_plt_cnt_0001", 0.1, double=False)
    (tmp_path / "run_hdf5_chk_0005.log").write_text("not an output")
    outs = find_outputs(tmp_path)
    assert [os.path.basename(p) for p in outs.checkpoints] == ["run_hdf5_chk_0000",
                                                               "run_hdf5_chk_0001"]
    assert [os.path.basename(p) for p in outs.plotfiles] == ["run_hdf5_plt_cnt_0001",
                                                             "run_hdf5_plt_cnt_0002"]
    # Same time 0.2 in a checkpoint and a plotfile: the checkpoint wins.
    assert os.path.basename(last_output(tmp_path)) == "run_hdf5_chk_0001"
    _touch_output(tmp_path / "run_hdf5_plt_cnt_0003", 0.3, double=False)
    assert os.path.basename(last_output(tmp_path)) == "run_hdf5_plt_cnt_0003"
    assert read(last_output(tmp_path)).double_precision is False
    empty = tmp_path / "empty"
    empty.mkdir()
    assert last_output(empty) is None


# --------------------------------------------------------------------------- verify
def _sedov_file(path, ndim, nzones, amr=True, t=0.05, perturb=0.0):
    """Sedov output whose fields are the exact solution averaged over 4^d sub-samples."""
    nbk = 8
    nb = tuple(nbk if a < ndim else 1 for a in range(3))
    nroot = tuple(2 if a < ndim else 1 for a in range(3))
    top = int(round(math.log2(nzones // (2 * nbk)))) + 1   # finest level (1-based)
    ctr = np.array([0.5, 0.5, 0.5])
    r2 = SedovSolution(ndim).shock_radius(t)

    def refine(lev, lo, hi):
        if lev >= top:
            return False
        if not amr or lev < top - 1:
            return True
        # refine the last level only where the block reaches the shell 0.6 r2 < r < 1.2 r2
        near = np.clip(ctr[:ndim], lo[:ndim], hi[:ndim])
        far = np.where(np.abs(lo - ctr) > np.abs(hi - ctr), lo, hi)[:ndim]
        rmin = np.linalg.norm(near - ctr[:ndim])
        rmax = np.linalg.norm(far - ctr[:ndim])
        return rmax > 0.6 * r2 and rmin < 1.2 * r2

    bbox, level, node_type, gid = build_tree(ndim, nroot, ((0, 1),) * 3, refine)
    x, y, z, w = centres(bbox, nb)
    sol = SedovSolution(ndim, energy=1.0, rho0=1.0)
    acc = [np.zeros_like(x) for _ in range(3)]
    frac = (np.arange(4) + 0.5) / 4 - 0.5
    for offs in product(frac, repeat=ndim):
        pos = [x, y, z]
        for a, o in enumerate(offs):
            pos[a] = pos[a] + o * w[:, a][:, None, None, None]
        r = np.sqrt(sum((pos[a] - 0.5) ** 2 for a in range(ndim)))
        for q, v in zip(acc, sol.profile(r, t, p_ambient=1e-5, method="bisect")):
            q += v
    rho, u, p = (q / 4 ** ndim for q in acc)
    rho = rho * (1.0 + perturb)
    rr = np.sqrt(sum((c - 0.5) ** 2 for c in (x, y, z)[:ndim]))
    with np.errstate(invalid="ignore", divide="ignore"):
        vel = [np.where(rr > 0, u * (c - 0.5) / rr, 0.0) for c in (x, y, z)[:ndim]]
    fields = {"dens": rho, "pres": p}
    for c, v in zip(("velx", "vely", "velz"), vel):
        fields[c] = v
    write_flash(path, ndim=ndim, nb=nb, bbox=bbox, level=level, node_type=node_type, gid=gid,
                fields=fields, time=t, step=100, nroot=nroot,
                runtime={"problem.name": "sedov", "eos.gamma": 1.4,
                         "sedov.rho_ambient": 1.0, "sedov.p_ambient": 1e-5,
                         "sedov.exp_energy": 1.0, "sedov.xctr": 0.5, "sedov.yctr": 0.5,
                         "sedov.zctr": 0.5})
    return path


@pytest.mark.parametrize("ndim, nzones", [(1, 256), (2, 64)])
def test_verify_sedov_exact_fields_give_zero_error(tmp_path, ndim, nzones):
    _sedov_file(tmp_path / "sedov_hdf5_chk_0001", ndim, nzones)
    res = verify(tmp_path)
    assert res["problem"] == "sedov" and res["ndim"] == ndim and res["time"] == 0.05
    assert res["n_zones"] == res["n_leaf_blocks"] * 8 ** ndim
    assert res["l1_density"] < 1e-3
    assert res["l1_pressure"] < 1e-3
    assert res["l1_velocity"] < 1e-2   # |v| of a zone-averaged vector vs averaged |u|
    assert res["linf_density"] < 1e-2
    exact = {1: 0.132386, 2: 0.224506}[ndim]
    assert res["shock_radius_exact"] == pytest.approx(exact, rel=1e-5)
    assert res["defaults_used"] == []
    assert abs(res["shock_radius_rel_error"]) < 0.05


def test_verify_sedov_relative_l1_measures_a_perturbation(tmp_path):
    _sedov_file(tmp_path / "sedov_hdf5_chk_0001", 2, 32, amr=False, perturb=0.01)
    res = verify(tmp_path)
    assert res["l1_density"] == pytest.approx(0.01, rel=1e-3)


def _sound_wave_file(path, ndim, n, t, amp=1e-6, waves=(1, 1, 0), noise=0.0):
    nb = tuple(8 if a < ndim else 1 for a in range(3))
    nroot = tuple(n // 8 if a < ndim else 1 for a in range(3))
    domain = ((0.0, 1.0), (0.0, 2.0), (0.0, 1.0))
    bbox, level, node_type, gid = build_tree(ndim, nroot, domain, lambda *a: False)
    x, y, z, w = centres(bbox, nb)
    g, rho0, p0 = 5.0 / 3.0, 1.0, 0.6
    c = math.sqrt(g * p0 / rho0)
    k = [2 * math.pi * waves[a] / (domain[a][1] - domain[a][0]) if a < ndim else 0.0
         for a in range(3)]
    kk = math.sqrt(sum(q * q for q in k))
    phase = k[0] * x + k[1] * y + k[2] * z - c * kk * t
    fac = np.ones_like(x)
    for a in range(ndim):
        h = 0.5 * k[a] * w[:, a][:, None, None, None]
        fac = fac * np.where(h == 0, 1.0, np.sin(h) / np.where(h == 0, 1.0, h))
    s = np.sin(phase) * fac
    rng = np.random.default_rng(1)
    fields = {"dens": rho0 * (1 + amp * s) + noise * rng.standard_normal(x.shape),
              "pres": p0 + c * c * rho0 * amp * s}
    for a, nm in enumerate(("velx", "vely", "velz")[:ndim]):
        fields[nm] = c * amp * s * k[a] / kk
    runtime = {"problem.name": "sound_wave", "eos.gamma": g, "sound_wave.rho0": rho0,
               "sound_wave.p0": p0, "sound_wave.amplitude": amp,
               "sound_wave.nx_waves": waves[0], "sound_wave.ny_waves": waves[1],
               "sound_wave.nz_waves": waves[2]}
    write_flash(path, ndim=ndim, nb=nb, bbox=bbox, level=level, node_type=node_type, gid=gid,
                fields=fields, time=t, nroot=nroot, domain=domain, runtime=runtime)


def test_verify_sound_wave_exact_fields(tmp_path):
    _sound_wave_file(tmp_path / "wave_hdf5_chk_0004", 2, 32, t=0.37)
    res = verify(tmp_path)
    assert res["problem"] == "sound_wave" and res["n_leaf_blocks"] == 16
    assert res["l1_density"] < 1e-15
    assert res["l1_density_rel"] < 1e-9
    assert res["l1_pressure"] < 1e-15 and res["l1_velocity"] < 1e-15


def test_verify_sound_wave_sees_noise(tmp_path):
    _sound_wave_file(tmp_path / "wave_hdf5_chk_0004", 2, 32, t=0.37, noise=1e-7)
    res = verify(tmp_path)
    # Mean |N(0, s^2)| = s sqrt(2/pi).
    assert res["l1_density"] == pytest.approx(1e-7 * math.sqrt(2 / math.pi), rel=0.1)
    assert res["l1_density_rel"] == pytest.approx(res["l1_density"] / 1e-6)


def _sod_file(path, n=128, t=0.2):
    bbox, level, node_type, gid = build_tree(1, (n // 16, 1, 1), ((0, 1), (0, 1), (0, 1)),
                                             lambda *a: False)
    x, y, z, w = centres(bbox, (16, 1, 1))
    edges = np.concatenate([x.ravel() - 0.5 * np.repeat(w[:, 0], 16),
                            [x.ravel()[-1] + 0.5 * w[-1, 0]]])
    rho, u, p = cell_average(edges, t, nsub=50)
    shape = x.shape
    write_flash(path, ndim=1, nb=(16, 1, 1), bbox=bbox, level=level, node_type=node_type,
                gid=gid, nroot=(n // 16, 1, 1), time=t,
                fields={"dens": rho.reshape(shape), "velx": u.reshape(shape),
                        "pres": p.reshape(shape)},
                runtime={"problem.name": "sod", "eos.gamma": 1.4, "sod.posn": 0.5,
                         "sod.angle": 0.0, "sod.rho_left": 1.0, "sod.rho_right": 0.125,
                         "sod.p_left": 1.0, "sod.p_right": 0.1, "sod.u_left": 0.0,
                         "sod.u_right": 0.0})


def test_verify_sod_exact_fields(tmp_path):
    _sod_file(tmp_path / "sod_hdf5_chk_0002")
    res = verify(tmp_path)
    assert res["problem"] == "sod" and res["n_zones"] == 128
    assert res["l1_density"] < 1e-12
    assert res["l1_pressure"] < 1e-12 and res["l1_velocity"] < 1e-12


def _sod_2d_file(path, theta_deg, data_theta_deg, n=32, t=0.1):
    """2-D Sod on [0,1]x[0,2] with the interface through (0.5, 1) normal to angle theta."""
    nb = (8, 8, 1)
    domain = ((0.0, 1.0), (0.0, 2.0), (0.0, 1.0))
    nroot = (n // 8, 2 * n // 8, 1)
    bbox, level, node_type, gid = build_tree(2, nroot, domain, lambda *a: False)
    x, y, z, w = centres(bbox, nb)
    th = math.radians(data_theta_deg)
    acc = [np.zeros_like(x) for _ in range(3)]
    frac = (np.arange(8) + 0.5) / 8 - 0.5
    for ox, oy in product(frac, frac):
        xs = x + ox * w[:, 0][:, None, None, None]
        ys = y + oy * w[:, 1][:, None, None, None]
        s = (xs - 0.5) * math.cos(th) + (ys - 1.0) * math.sin(th)
        for q, v in zip(acc, sod_solution(s, t, x0=0.0)):
            q += v
    rho, u, p = (q / 64 for q in acc)
    write_flash(path, ndim=2, nb=nb, bbox=bbox, level=level, node_type=node_type, gid=gid,
                nroot=nroot, domain=domain, time=t,
                fields={"dens": rho, "pres": p, "velx": u * math.cos(th),
                        "vely": u * math.sin(th)},
                runtime={"problem.name": "sod", "eos.gamma": 1.4, "sod.posn": 0.5,
                         "sod.angle": float(theta_deg)})


def test_verify_sod_2d_rotated_interface_through_posn_and_y_centre(tmp_path):
    _sod_2d_file(tmp_path / "sod_hdf5_chk_0001", 30.0, 30.0)
    res = verify(tmp_path)
    assert res["ndim"] == 2 and res["angle_deg"] == pytest.approx(30.0)
    assert res["l1_density"] < 1e-12
    assert res["l1_velocity"] < 1e-12 and res["l1_pressure"] < 1e-12
    # The file names no states: the standard Sod values were used, and said so.
    assert "sod.rho_left" in res["defaults_used"] and "sod.posn" not in res["defaults_used"]
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    _sod_2d_file(wrong / "sod_hdf5_chk_0001", 30.0, 0.0)
    assert verify(wrong)["l1_density"] > 1e-2


def test_verify_errors(tmp_path, five_block_file):
    empty = tmp_path / "nothing"
    empty.mkdir()
    with pytest.raises(VerifyError, match="no"):
        verify(empty)
    other = tmp_path / "other"
    other.mkdir()
    _touch_output(other / "x_hdf5_chk_0000", 0.0)
    with pytest.raises(VerifyError, match="unknown problem"):
        verify(other)


# --------------------------------------------------------------------------- CLI
def _cli(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.abspath(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "tessera", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_cli_verify_prints_one_json_object(tmp_path):
    _sound_wave_file(tmp_path / "wave_hdf5_chk_0001", 1, 64, t=0.1, waves=(2, 0, 0))
    run = _cli("verify", tmp_path)
    assert run.returncode == 0, run.stderr
    res = json.loads(run.stdout)
    for key in ("file", "problem", "time", "ndim", "n_leaf_blocks", "n_zones", "l1_density"):
        assert key in res
    assert res["l1_density_rel"] < 1e-9


def test_cli_verify_fails_cleanly_without_outputs(tmp_path):
    run = _cli("verify", tmp_path)
    assert run.returncode != 0
    assert run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1


def test_cli_plot_2d_and_1d(tmp_path):
    d2 = tmp_path / "s2"
    d2.mkdir()
    _sedov_file(d2 / "sedov_hdf5_chk_0001", 2, 64)
    run = _cli("plot", d2)
    assert run.returncode == 0, run.stderr
    out = run.stdout.strip()
    assert out == str(d2 / "density_slice.png") and os.path.getsize(out) > 1000
    d1 = tmp_path / "s1"
    d1.mkdir()
    _sod_file(d1 / "sod_hdf5_chk_0001")
    png = tmp_path / "sod.png"
    run = _cli("plot", d1, "--out", png, "--var", "pres", "--log")
    assert run.returncode == 0, run.stderr
    assert os.path.getsize(png) > 1000


def test_read_history_keeps_the_last_row_of_a_step_and_skips_a_cut_line(tmp_path):
    from tessera.reader import read_history

    assert read_history(tmp_path) is None
    (tmp_path / "history.csv").write_text(
        "step,time,dt,leaves,zone_updates_per_second\n"
        "1,1.0e-3,1.0e-3,8,1.0e6\n2,2.0e-3,1.0e-3,15,2.0e6\n3,3.0e-3,1.0e-3,22,2.0e6\n"
        # a restart from step 2 appends its own rows for steps 3 and 4; a crash cut the last
        "3,3.1e-3,1.1e-3,29,3.0e6\n4,4.2e-3,1.1e-3,29,3.0e6\n5,5.3e-3,1.")
    h = read_history(tmp_path)
    assert list(h["step"]) == [1, 2, 3, 4]
    assert list(h["leaves"]) == [8, 15, 29, 29]
    assert h["time"][2] == pytest.approx(3.1e-3)
    (tmp_path / "history.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError):
        read_history(tmp_path)

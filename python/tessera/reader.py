"""Reader for Tessera / FLASH HDF5 files (file format version 9), with h5py only.

The layout is described in ``shared/reference/flash-hdf5-format.md``.  Variables are
stored as ``(N, nzb, nyb, nxb)`` (x fastest), blocks are the rows, the tree is given by
``refine level`` (1-based in the file), ``node type`` (1 = leaf) and ``bounding box``.

Typical use::

    from tessera.reader import read, last_output
    ds = read(last_output("runs/sedov_2d"))
    for b in ds.leaves():
        x, y, z = ds.cell_centers(b)
        rho = ds.field("dens")[b]
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field as dc_field
from typing import NamedTuple

import h5py
import numpy as np

__all__ = ["Dataset", "read", "find_outputs", "last_output", "Outputs", "read_history"]

_CHK = re.compile(r"_hdf5_chk_(\d+)$")
_PLT = re.compile(r"_hdf5_plt_cnt_(\d+)$")
_LISTS = [f"{kind} {group}"
          for group in ("scalars", "runtime parameters")
          for kind in ("integer", "real", "logical", "string")]


def _text(value) -> str:
    """Decode a fixed-length HDF5 string (NUL- or space-padded) to a stripped str."""
    if isinstance(value, (bytes, np.bytes_)):
        value = bytes(value).split(b"\x00", 1)[0].decode("utf-8", "replace")
    return str(value).strip()


def _read_list(f: h5py.File, name: str) -> dict:
    """One FLASH parameter list (compound with members ``name`` and ``value``)."""
    if name not in f:
        return {}
    data = f[name][()]
    kind = name.split()[0]
    out = {}
    for row in np.atleast_1d(data):
        key = _text(row["name"])
        value = row["value"]
        if kind == "integer":
            value = int(value)
        elif kind == "real":
            value = float(value)
        elif kind == "logical":
            value = bool(value)
        else:
            value = _text(value)
        out[key] = value
    return out


@dataclass
class Dataset:
    """One Tessera/FLASH output file, tree and parameters in memory, fields on demand.

    Block indices are 0-based file rows.  ``refine_level`` is 0-based (root = 0).
    ``gid`` is kept as stored (1-based block numbers, -1 / <= -20 for none).
    """

    path: str
    ndim: int
    nxb: int
    nyb: int
    nzb: int
    time: float
    step: int
    params: dict
    refine_level: np.ndarray
    node_type: np.ndarray
    bbox: np.ndarray
    gid: np.ndarray
    var_names: list
    double_precision: bool = True
    geometry: str = "cartesian"
    _cache: dict = dc_field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- fields
    def field(self, name: str) -> np.ndarray:
        """Variable ``name`` for every block as float64, shape (N, nzb, nyb, nxb)."""
        if name not in self._cache:
            with h5py.File(self.path, "r") as f:
                if name not in f:
                    raise KeyError(f"{self.path}: no variable {name!r} "
                                   f"(have {', '.join(self.var_names)})")
                self._cache[name] = np.asarray(f[name][()], dtype=np.float64)
        return self._cache[name]

    def has_field(self, name: str) -> bool:
        """True if the file holds variable ``name``."""
        return name in self.var_names

    # ---------------------------------------------------------------- tree
    @property
    def n_blocks(self) -> int:
        """Number of blocks (rows), parents included."""
        return int(self.refine_level.shape[0])

    @property
    def shape(self) -> tuple:
        """Interior zones per block as (nzb, nyb, nxb), the field layout."""
        return (self.nzb, self.nyb, self.nxb)

    def leaves(self) -> np.ndarray:
        """0-based indices of the leaf blocks (node_type == 1)."""
        return np.flatnonzero(self.node_type == 1)

    def domain(self) -> np.ndarray:
        """Domain bounds (3, 2) from the runtime parameters xmin..zmax.

        Falls back to the union of the block bounding boxes if they are missing.
        """
        lo = self.bbox[:, :, 0].min(axis=0)
        hi = self.bbox[:, :, 1].max(axis=0)
        out = np.stack([lo, hi], axis=1).astype(float)
        for a, c in enumerate("xyz"):
            if f"{c}min" in self.params and f"{c}max" in self.params:
                out[a] = (self.params[f"{c}min"], self.params[f"{c}max"])
        return out

    def cell_widths(self, b) -> np.ndarray:
        """Zone widths (dx, dy, dz) of block b (or of an index array of blocks, (M, 3))."""
        n = np.array([self.nxb, self.nyb, self.nzb], dtype=float)
        box = self.bbox[b]
        return (box[..., 1] - box[..., 0]) / n

    def cell_centers(self, b: int):
        """Zone centres (x, y, z) of block b, each of shape (nzb, nyb, nxb).

        In an unused dimension the coordinate is the middle of the block's extent.
        """
        box = self.bbox[b]
        n = (self.nxb, self.nyb, self.nzb)
        axes = []
        for a in range(3):
            lo, hi = box[a]
            axes.append(lo + (np.arange(n[a]) + 0.5) * (hi - lo) / n[a])
        z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
        return x, y, z

    def cell_volume(self, b: int) -> float:
        """Zone volume of block b in Cartesian geometry: the product of the widths in the
        active dimensions (curvilinear zones differ along r: use zone_volumes)."""
        if self.geometry != "cartesian":
            raise ValueError(f"{self.path}: {self.geometry} zones differ in volume; "
                             "use zone_volumes(b)")
        return float(np.prod(self.cell_widths(b)[: self.ndim]))

    def zone_volumes(self, b: int) -> np.ndarray:
        """Volume of every zone of block b, shape (nzb, nyb, nxb), in the file's geometry
        (cylindrical r-z: pi (r+^2 - r-^2) dz; spherical r: 4/3 pi (r+^3 - r-^3))."""
        w = self.cell_widths(b)
        lo = self.bbox[b][0, 0]
        r0 = lo + np.arange(self.nxb) * w[0]
        radial = shell_volume(self.geometry, r0, r0 + w[0])
        other = float(np.prod(w[1: self.ndim])) if self.ndim > 1 else 1.0
        return np.broadcast_to(radial[None, None, :] * other,
                               (self.nzb, self.nyb, self.nxb)).copy()


def shell_volume(geometry: str, r0, r1):
    """Volume of the radial shell [r0, r1] per unit length of the other axes (Tessera's
    mesh/geometry.hpp; cartesian: r1 - r0)."""
    if geometry == "cylindrical":
        return np.pi * (r1 * r1 - r0 * r0)
    if geometry == "spherical":
        return 4.0 / 3.0 * np.pi * (r1 ** 3 - r0 ** 3)
    return r1 - r0


def _ndim(f: h5py.File, ints: dict, nyb: int, nzb: int) -> int:
    if "dimensionality" in ints:
        return int(ints["dimensionality"])
    if "gid" in f:
        cols = f["gid"].shape[1]
        for d in (1, 2, 3):
            if cols == 2 * d + 1 + 2 ** d:
                return d
    return 1 if nyb == 1 and nzb == 1 else (2 if nzb == 1 else 3)


def read(path) -> Dataset:
    """Read the tree and parameters of a Tessera/FLASH file (fields are read lazily)."""
    path = os.fspath(path)
    with h5py.File(path, "r") as f:
        lists = {name: _read_list(f, name) for name in _LISTS}
        params = {}
        for name in _LISTS:  # scalars first; runtime parameters overwrite (as yt does)
            params.update(lists[name])
        ints = lists["integer scalars"]
        reals = lists["real scalars"]
        nxb = int(ints.get("nxb", 1))
        nyb = int(ints.get("nyb", 1))
        nzb = int(ints.get("nzb", 1))
        ndim = _ndim(f, ints, nyb, nzb)
        names = []
        if "unknown names" in f:
            names = [_text(s) for s in np.asarray(f["unknown names"][()]).ravel()]
        bbox = np.asarray(f["bounding box"][()], dtype=np.float64)
        if bbox.shape[1] < 3:  # FFV 8: (N, ndim, 2); pad the unused axes
            pad = np.zeros((bbox.shape[0], 3 - bbox.shape[1], 2))
            pad[:, :, 1] = 1.0
            bbox = np.concatenate([bbox, pad], axis=1)
        n = bbox.shape[0]
        refine = np.asarray(f["refine level"][()], dtype=np.int64).ravel() - 1
        if "node type" in f:
            node_type = np.asarray(f["node type"][()], dtype=np.int64).ravel()
        else:
            node_type = np.ones(n, dtype=np.int64)
        gid = np.asarray(f["gid"][()], dtype=np.int64) if "gid" in f else np.empty((n, 0), np.int64)
        if gid.shape[1] and "node type" not in f:  # derive leaves from the children columns
            node_type = np.where(np.all(gid[:, -2 ** ndim:] < 0, axis=1), 1, 2)
        double = True
        if names and names[0] in f:
            double = f[names[0]].dtype == np.float64
    return Dataset(
        path=path, ndim=ndim, nxb=nxb, nyb=nyb, nzb=nzb,
        time=float(reals.get("time", params.get("time", 0.0))),
        step=int(ints.get("nstep", 0)),
        params=params, refine_level=refine, node_type=node_type, bbox=bbox, gid=gid,
        var_names=names, double_precision=double,
        geometry=_text(params.get("geometry", "cartesian")).strip().lower())


class Outputs(NamedTuple):
    """Output files of a run directory, each list sorted by file number."""

    checkpoints: list
    plotfiles: list


def find_outputs(directory) -> Outputs:
    """Checkpoints (``*_hdf5_chk_NNNN``) and plotfiles (``*_hdf5_plt_cnt_NNNN``) in a directory."""
    directory = os.fspath(directory)
    chk, plt = [], []
    for entry in os.listdir(directory):
        full = os.path.join(directory, entry)
        if not os.path.isfile(full):
            continue
        m = _CHK.search(entry)
        if m:
            chk.append((int(m.group(1)), entry, full))
            continue
        m = _PLT.search(entry)
        if m:
            plt.append((int(m.group(1)), entry, full))
    return Outputs([p for *_, p in sorted(chk)], [p for *_, p in sorted(plt)])


def _file_time(path: str) -> float:
    with h5py.File(path, "r") as f:
        return float(_read_list(f, "real scalars").get("time", -np.inf))


def last_output(directory):
    """The output with the largest simulation time in ``directory`` (None if none).

    A checkpoint wins a tie with a plotfile (it holds f64 data); times within a
    relative 1e-6 count as equal (a plotfile may store its time in lower precision).
    Among equal times and kinds, the higher file number wins.  Files that cannot be
    read are skipped.
    """
    outs = find_outputs(directory)
    best, best_key = None, None
    for kind_rank, files in ((1, outs.checkpoints), (0, outs.plotfiles)):
        for number, path in enumerate(files):
            try:
                t = _file_time(path)
            except (OSError, KeyError, ValueError):
                continue
            if best is None:
                best, best_key = path, (t, kind_rank, number)
                continue
            bt, bk, bn = best_key
            if abs(t - bt) <= 1e-6 * max(abs(t), abs(bt), 1e-300):
                better = (kind_rank, number) > (bk, bn)
            else:
                better = t > bt
            if better:
                best, best_key = path, (t, kind_rank, number)
    return best


HISTORY_COLUMNS = ("step", "time", "dt", "leaves", "zone_updates_per_second")


def read_history(directory):
    """The run's ``history.csv`` (one row per progress line) as a dict of arrays, or None.

    Columns: step, time, dt, leaves, zone_updates_per_second (the rate over the interval
    since the previous row).  A restart appends to the file; where a step appears more
    than once the last row wins, and rows are returned in step order.
    """
    directory = os.fspath(directory)
    path = directory if os.path.isfile(directory) else os.path.join(directory, "history.csv")
    if not os.path.isfile(path):
        return None
    rows = {}
    with open(path) as f:
        header = f.readline().strip().split(",")
        if tuple(header) != HISTORY_COLUMNS:
            raise ValueError(f"{path}: unexpected header {','.join(header)}")
        for line in f:
            parts = line.strip().split(",")
            if len(parts) != len(HISTORY_COLUMNS):
                continue  # a line cut short by a crash
            try:
                values = [float(v) for v in parts]
            except ValueError:
                continue
            rows[int(values[0])] = values
    data = np.array([rows[k] for k in sorted(rows)], dtype=float).reshape(-1, len(HISTORY_COLUMNS))
    out = {name: data[:, i] for i, name in enumerate(HISTORY_COLUMNS)}
    out["step"] = out["step"].astype(np.int64)
    out["leaves"] = out["leaves"].astype(np.int64)
    return out

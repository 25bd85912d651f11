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

Particles (reference section 6) are read from a checkpoint itself, from a particle file
``*_hdf5_part_NNNN`` (a Dataset without blocks), or, for a plotfile
``*_hdf5_plt_cnt_NNNN``, from its particle file of the same name with ``plt_cnt`` ->
``part`` in the same directory, as yt pairs them::

    ds = read("runs/x/x_hdf5_plt_cnt_0003")
    ds.particle_count, ds.particles["posx"]
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
    #: Particle property names as stored (stripped), in column order; [] without particles.
    particle_names: list = dc_field(default_factory=list)
    #: Particles per block (``localnp``), one per row of the file holding the particles.
    localnp: np.ndarray = dc_field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: The file the particles are read from: this one (checkpoint, particle file), the
    #: plotfile's particle file, or None without particles.
    particle_path: str | None = None
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

    # ---------------------------------------------------------------- particles
    @property
    def particle_count(self) -> int:
        """Number of particles (rows of ``tracer particles``); 0 without particles."""
        if self.particle_path is None:
            return 0
        with h5py.File(self.particle_path, "r") as f:
            return int(f["tracer particles"].shape[0])

    @property
    def particles(self) -> dict:
        """Property name -> float64 array of every particle, in file order (grouped by
        block: ``localnp`` gives the counts); {} without particles."""
        if self.particle_path is None:
            return {}
        if "__particles__" not in self._cache:
            with h5py.File(self.particle_path, "r") as f:
                table = np.asarray(f["tracer particles"][()], dtype=np.float64)
            table = table.reshape(-1, len(self.particle_names))
            self._cache["__particles__"] = {
                name: table[:, q].copy() for q, name in enumerate(self.particle_names)}
        return self._cache["__particles__"]

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
        if self.n_blocks:
            lo = self.bbox[:, :, 0].min(axis=0)
            hi = self.bbox[:, :, 1].max(axis=0)
        else:  # a particle file has no blocks
            lo, hi = np.zeros(3), np.ones(3)
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


def _first_real_scalar(f: h5py.File) -> float:
    """Row 0 of ``real scalars`` (the time): what yt compares to pair a plotfile with its
    particle file."""
    return float(np.atleast_1d(f["real scalars"][()])[0]["value"])


def _particle_source(f: h5py.File, path: str):
    """The file holding this file's particles, or None: the file itself if it has them;
    for a plotfile, its particle file (``plt_cnt`` -> ``part`` in the file name, same
    directory, as yt pairs them) if it exists. Raises ValueError if that particle file's
    time differs from the plotfile's (yt would silently ignore it)."""
    if "tracer particles" in f or "particle names" in f:
        return path
    name = os.path.basename(path)
    if "hdf5_plt_cnt" not in name:
        return None
    part = os.path.join(os.path.dirname(path), name.replace("plt_cnt", "part"))
    if not os.path.isfile(part):
        return None
    with h5py.File(part, "r") as p:
        t_part = _first_real_scalar(p)
    t_plot = _first_real_scalar(f)
    if not np.isclose(t_part, t_plot):  # yt's test, argument order included
        raise ValueError(f"particle file {part!r} has time {t_part}, its plotfile {t_plot} "
                         "(yt would ignore it)")
    return part


def _particle_header(path):
    """(names, localnp) of the file holding the particles."""
    if path is None:
        return [], np.zeros(0, dtype=np.int64)
    with h5py.File(path, "r") as f:
        names = [_text(s) for s in np.asarray(f["particle names"][()]).ravel()]
        localnp = np.asarray(f["localnp"][()], dtype=np.int64).ravel()
    return names, localnp


def read(path) -> Dataset:
    """Read the tree and parameters of a Tessera/FLASH file (fields and particles are read
    lazily).  A particle file (no ``bounding box``, has ``localnp``) gives a Dataset without
    blocks.  A plotfile's particle file is paired with it as yt does; ValueError if its
    time differs from the plotfile's."""
    path = os.fspath(path)
    with h5py.File(path, "r") as f:
        particle_path = _particle_source(f, path)
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
        if "bounding box" in f:
            bbox = np.asarray(f["bounding box"][()], dtype=np.float64)
        else:  # a particle file: no tree
            bbox = np.zeros((0, 3, 2))
        if bbox.shape[1] < 3:  # FFV 8: (N, ndim, 2); pad the unused axes
            pad = np.zeros((bbox.shape[0], 3 - bbox.shape[1], 2))
            pad[:, :, 1] = 1.0
            bbox = np.concatenate([bbox, pad], axis=1)
        n = bbox.shape[0]
        if "refine level" in f:
            refine = np.asarray(f["refine level"][()], dtype=np.int64).ravel() - 1
        else:
            refine = np.zeros(0, dtype=np.int64)
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
    particle_names, localnp = _particle_header(particle_path)
    return Dataset(
        path=path, ndim=ndim, nxb=nxb, nyb=nyb, nzb=nzb,
        time=float(reals.get("time", params.get("time", 0.0))),
        step=int(ints.get("nstep", 0)),
        params=params, refine_level=refine, node_type=node_type, bbox=bbox, gid=gid,
        var_names=names, double_precision=double,
        geometry=_text(params.get("geometry", "cartesian")).strip().lower(),
        particle_names=particle_names, localnp=localnp, particle_path=particle_path)


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
    since the previous row), then the columns the units add (Unit::history_names:
    levelset_area, levelset_length).  A restart appends to the file; where a step appears
    more than once the last row wins, and rows are returned in step order.
    """
    directory = os.fspath(directory)
    path = directory if os.path.isfile(directory) else os.path.join(directory, "history.csv")
    if not os.path.isfile(path):
        return None
    rows = {}
    with open(path) as f:
        header = tuple(f.readline().strip().split(","))
        if header[:len(HISTORY_COLUMNS)] != HISTORY_COLUMNS:
            raise ValueError(f"{path}: unexpected header {','.join(header)}")
        for line in f:
            parts = line.strip().split(",")
            if len(parts) != len(header):
                continue  # a line cut short by a crash
            try:
                values = [float(v) for v in parts]
            except ValueError:
                continue
            rows[int(values[0])] = values
    data = np.array([rows[k] for k in sorted(rows)], dtype=float).reshape(-1, len(header))
    out = {name: data[:, i] for i, name in enumerate(header)}
    out["step"] = out["step"].astype(np.int64)
    out["leaves"] = out["leaves"].astype(np.int64)
    return out

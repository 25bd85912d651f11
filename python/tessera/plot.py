"""Quick-look plots of a Tessera output: a slice image (2-D / 3-D) or a profile (1-D).

``python -m tessera plot DIR [--out PNG] [--var dens] [--file FILE] [--log]``

* 2-D: the variable over the whole domain; 3-D: the slice z = z-centre.  Each leaf
  block's zones are painted onto a uniform image at the finest leaf resolution
  (coarse zones are repeated), block outlines are drawn thin, with a colorbar.
* 1-D: the variable against x (one marker per leaf zone), with the exact solution
  overlaid when the problem is ``sod`` (sampled) or ``sedov``.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from .reader import Dataset, last_output, read  # noqa: E402

__all__ = ["slice_image", "plot", "plot_dataset"]


def slice_image(ds: Dataset, var: str = "dens"):
    """Uniform image of ``var`` on the z mid-plane (3-D) or the domain (2-D).

    Returns (image (ny, nx), extent (xmin, xmax, ymin, ymax), list of the leaf block
    rectangles (x0, x1, y0, y1) that were painted).  Pixels are the finest leaf zones.
    """
    if ds.ndim < 2:
        raise ValueError("slice_image needs a 2-D or 3-D dataset")
    dom = ds.domain()
    leaves = ds.leaves()
    widths = ds.cell_widths(leaves)                      # (L, 3)
    dx = float(widths[:, 0].min())
    dy = float(widths[:, 1].min())
    nx = int(round((dom[0, 1] - dom[0, 0]) / dx))
    ny = int(round((dom[1, 1] - dom[1, 0]) / dy))
    image = np.full((ny, nx), np.nan)
    data = ds.field(var)
    zc = 0.5 * (dom[2, 0] + dom[2, 1])
    rects = []
    for b in leaves:
        box = ds.bbox[b]
        k = 0
        if ds.ndim == 3:
            lo, hi = box[2]
            on_top = hi >= dom[2, 1] and zc >= hi
            if not (lo <= zc < hi or on_top):
                continue
            k = min(int((zc - lo) / ((hi - lo) / ds.nzb)), ds.nzb - 1)
        plane = data[b, k]                               # (nyb, nxb)
        rx = int(round((box[0, 1] - box[0, 0]) / ds.nxb / dx))
        ry = int(round((box[1, 1] - box[1, 0]) / ds.nyb / dy))
        tile = np.repeat(np.repeat(plane, ry, axis=0), rx, axis=1)
        i0 = int(round((box[0, 0] - dom[0, 0]) / dx))
        j0 = int(round((box[1, 0] - dom[1, 0]) / dy))
        image[j0:j0 + tile.shape[0], i0:i0 + tile.shape[1]] = tile
        rects.append((box[0, 0], box[0, 1], box[1, 0], box[1, 1]))
    extent = (dom[0, 0], dom[0, 1], dom[1, 0], dom[1, 1])
    return image, extent, rects


def _exact_1d(ds: Dataset, var: str, x: np.ndarray):
    """Exact 1-D solution of ``var`` at x for sod / sedov, or None."""
    from .exact.sedov import SedovSolution
    from .exact.sod import sod_solution

    p = ds.params
    problem = str(p.get("problem.name", "")).lower()
    which = {"dens": 0, "velx": 1, "pres": 2}.get(var)
    if which is None:
        return None
    gamma = float(p.get("eos.gamma", p.get("gamma", 1.4)))
    if problem == "sod":
        left = tuple(float(p.get(f"sod.{q}_left", d)) for q, d in (("rho", 1), ("u", 0), ("p", 1)))
        right = tuple(float(p.get(f"sod.{q}_right", d))
                      for q, d in (("rho", 0.125), ("u", 0), ("p", 0.1)))
        x0 = float(p.get("sod.posn", 0.5))
        return sod_solution(x, ds.time, left, right, gamma, x0)[which]
    if problem == "sedov":
        sol = SedovSolution(1, gamma=gamma, energy=float(p.get("sedov.exp_energy", 1.0)),
                            rho0=float(p.get("sedov.rho_ambient", 1.0)))
        xc = float(p.get("sedov.xctr", 0.5))
        vals = sol.profile(x - xc, ds.time, p_ambient=float(p.get("sedov.p_ambient", 1e-5)))
        out = vals[which]
        return out * np.sign(x - xc) if which == 1 else out
    return None


def plot_dataset(ds: Dataset, out: str, var: str = "dens", log: bool = False) -> str:
    """Write the plot of ``var`` for one dataset to ``out``; returns ``out``."""
    problem = ds.params.get("problem.name", "?")
    title = f"{problem}  {var}  t = {ds.time:.6g}  step {ds.step}"
    if ds.ndim == 1:
        leaves = ds.leaves()
        x = np.concatenate([ds.cell_centers(b)[0].ravel() for b in leaves])
        v = ds.field(var)[leaves].ravel()
        order = np.argsort(x)
        x, v = x[order], v[order]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(x, v, ".", ms=3, label="tessera")
        dom = ds.domain()
        xf = np.linspace(dom[0, 0], dom[0, 1], 4001)
        exact = _exact_1d(ds, var, xf)
        if exact is not None:
            ax.plot(xf, exact, "-", lw=1, color="k", label="exact")
            ax.legend()
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("x")
        ax.set_ylabel(var)
    else:
        image, extent, rects = slice_image(ds, var)
        aspect = (extent[3] - extent[2]) / (extent[1] - extent[0])
        fig, ax = plt.subplots(figsize=(7.5, max(3.0, 6.5 * aspect)))
        norm = None
        if log:
            finite = image[np.isfinite(image) & (image > 0)]
            if finite.size:
                norm = LogNorm(vmin=finite.min(), vmax=finite.max())
        im = ax.imshow(image, origin="lower", extent=extent, norm=norm,
                       interpolation="nearest", cmap="viridis")
        segs = []
        for x0, x1, y0, y1 in rects:
            segs += [[(x0, y0), (x1, y0)], [(x1, y0), (x1, y1)],
                     [(x1, y1), (x0, y1)], [(x0, y1), (x0, y0)]]
        ax.add_collection(LineCollection(segs, colors="w", linewidths=0.3, alpha=0.6))
        fig.colorbar(im, ax=ax, label=var)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        if ds.ndim == 3:
            title += f"  (z = {0.5 * (ds.domain()[2].sum()):.4g})"
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return out


def plot(directory, out=None, var="dens", file=None, log=False) -> str:
    """Plot ``var`` from ``file`` or the last output of ``directory``; returns the PNG path."""
    directory = os.fspath(directory)
    path = file
    if path is None:
        path = directory if os.path.isfile(directory) else last_output(directory)
    if path is None:
        raise FileNotFoundError(f"{directory}: no *_hdf5_chk_NNNN or *_hdf5_plt_cnt_NNNN output")
    if out is None:
        base = directory if os.path.isdir(directory) else os.path.dirname(os.path.abspath(path))
        out = os.path.join(base, "density_slice.png" if var == "dens" else f"{var}_slice.png")
    ds = read(path)
    if var not in ds.var_names:
        raise KeyError(f"{path}: no variable {var!r} (have {', '.join(ds.var_names)})")
    return plot_dataset(ds, out, var=var, log=log)


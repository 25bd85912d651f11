"""Quick-look plots of a Tessera output: a slice image (2-D / 3-D) or a profile (1-D).

``python -m tessera plot DIR [--out PNG] [--var dens] [--file FILE] [--log]``

* 2-D: the variable over the whole domain; 3-D: the slice z = z-centre (through the
  explosion centre ``sedov.zctr`` for Sedov).  Each leaf block's zones are painted onto
  a uniform image at the finest leaf resolution (coarse zones are repeated); block
  outlines are drawn coloured by refinement level (legend), with a colorbar.
* With the run's ``history.csv`` beside the output (2-D / 3-D), a small panel shows the
  leaf blocks and zone-updates/s over the run (against time), with the leaf count of a
  uniform mesh at the finest level for comparison, and a few numbers of the run.
* 1-D: the variable against x (one marker per leaf zone), with the exact solution
  overlaid when the problem is ``sod`` (sampled) or ``sedov``.
"""

from __future__ import annotations

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from matplotlib.lines import Line2D  # noqa: E402

from .reader import Dataset, last_output, read, read_history  # noqa: E402

__all__ = ["slice_image", "plot", "plot_dataset", "figure", "uniform_leaf_count",
           "LEVEL_COLOURS"]

# Block outline colour of refinement level 1, 2, ... (over the viridis image).
LEVEL_COLOURS = ["#ffffff", "#ff3b3b", "#ffa500", "#ff66ff", "#00e5ff", "#7cfc00", "#000000"]


def slice_image(ds: Dataset, var: str = "dens", z=None):
    """Uniform image of ``var`` on the plane z (3-D; default the z mid-plane) or the domain (2-D).

    Returns (image (ny, nx), extent (xmin, xmax, ymin, ymax), list of the leaf block
    rectangles (x0, x1, y0, y1) that were painted).  Pixels are the finest leaf zones.
    """
    image, extent, rects, _ = _slice(ds, var, z)
    return image, extent, rects


def _slice(ds: Dataset, var: str, z=None):
    """slice_image, and the 0-based refinement level of each rectangle."""
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
    zc = 0.5 * (dom[2, 0] + dom[2, 1]) if z is None else float(z)
    rects, levels = [], []
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
        levels.append(int(ds.refine_level[b]))
    extent = (dom[0, 0], dom[0, 1], dom[1, 0], dom[1, 1])
    return image, extent, rects, levels


def uniform_leaf_count(ds: Dataset):
    """Leaf blocks of a uniform mesh at the finest allowed level (mesh.lrefine_max), or None."""
    p = ds.params
    try:
        nb = [int(p.get(f"mesh.nblock{c}", p.get(f"nblock{c}", 1))) for c in "xyz"[:ds.ndim]]
        lmax = int(p.get("mesh.lrefine_max", p["lrefine_max"]))
    except (KeyError, TypeError, ValueError):
        return None
    return int(np.prod(nb)) * 2 ** (ds.ndim * (lmax - 1))


def _fraction_label(dx: float) -> str:
    inv = 1.0 / dx
    return f"1/{round(inv)}" if abs(inv - round(inv)) < 1e-6 * inv else f"{dx:.3g}"


def _smooth(y: np.ndarray, n: int) -> np.ndarray:
    """Running mean over n points (shorter windows at the ends)."""
    if n <= 1 or y.size < 3:
        return y
    c = np.concatenate([[0.0], np.cumsum(y)])
    i = np.arange(y.size)
    lo = np.maximum(i - n // 2, 0)
    hi = np.minimum(i + n // 2 + 1, y.size)
    return (c[hi] - c[lo]) / (hi - lo)


def _history_panel(ax, hist: dict, ds: Dataset, summary: dict | None):
    """Leaf blocks (left axis) and zone-updates/s (right axis) against time."""
    t = hist["time"]
    ax.step(t, hist["leaves"], where="post", color="C0", lw=1.5, label="leaf blocks")
    uni = uniform_leaf_count(ds)
    if uni is not None:
        ax.axhline(uni, color="C0", ls="--", lw=1, label=f"uniform at finest level ({uni})")
        ax.axhline(uni / 2, color="C0", ls=":", lw=0.8, label="half of uniform")
        ax.set_ylim(0, uni * 1.08)
    ax.set_xlabel("time")
    ax.set_ylabel("leaf blocks", color="C0")
    ax.tick_params(axis="y", colors="C0")
    ax2 = ax.twinx()
    rate = hist["zone_updates_per_second"]
    ax2.plot(t, rate, color="C1", lw=0.4, alpha=0.35)
    ax2.plot(t, _smooth(rate, max(1, rate.size // 40)), color="C1", lw=1.3,
             label="zone-updates/s")
    ranks = (summary or {}).get("ranks")
    ax2.set_ylabel("zone-updates/s" + (f" ({ranks} ranks)" if ranks else ""), color="C1")
    ax2.tick_params(axis="y", colors="C1")
    ax2.set_ylim(0, max(float(np.percentile(rate, 99)) * 1.15, 1.0) if rate.size else 1.0)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2,
              fontsize=7, frameon=False)
    ax.set_title("leaf blocks and zone-updates/s over the run", fontsize=10)
    return ax2


def _run_text(hist: dict, ds: Dataset, summary: dict | None) -> str:
    """A few numbers of the run, for the figure."""
    lines = []
    uni = uniform_leaf_count(ds)
    leaves = int(len(ds.leaves()))
    if uni:
        lines.append(f"leaf blocks at the end: {leaves} of {uni} uniform ({100 * leaves / uni:.0f} %)")
    else:
        lines.append(f"leaf blocks at the end: {leaves}")
    if hist is not None and hist["leaves"].size:
        lines.append(f"leaf blocks over the run: {hist['leaves'].min()} .. {hist['leaves'].max()}")
    if summary:
        if "steps" in summary:
            lines.append(f"steps: {summary['steps']}, t = {summary.get('time', ds.time):.4g}")
        if "evolution_seconds" in summary and "zone_updates" in summary:
            lines.append(f"evolution: {summary['evolution_seconds']:.1f} s on "
                         f"{summary.get('ranks', '?')} rank(s), "
                         f"{summary['zone_updates']:.3g} zone-updates")
        if "zone_updates_per_second" in summary:
            lines.append(f"mean rate: {summary['zone_updates_per_second']:.3g} zone-updates/s")
    lines.append(f"blocks of {ds.nxb}^{ds.ndim} zones, {ds.refine_level[ds.leaves()].max() + 1} levels in use")
    return "\n".join(lines)


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


def _slice_axes(fig, ax, ds: Dataset, var: str, log: bool):
    """Draw the slice of ``var`` with level-coloured block outlines into ax."""
    p = ds.params
    z = None
    if ds.ndim == 3 and str(p.get("problem.name", "")).lower() == "sedov":
        z = p.get("sedov.zctr")  # through the explosion centre
    image, extent, rects, levels = _slice(ds, var, z)
    norm = None
    if log:
        finite = image[np.isfinite(image) & (image > 0)]
        if finite.size:
            norm = LogNorm(vmin=finite.min(), vmax=finite.max())
    im = ax.imshow(image, origin="lower", extent=extent, norm=norm,
                   interpolation="nearest", cmap="viridis")
    widths = {}
    for lev in sorted(set(levels)):
        segs = []
        for (x0, x1, y0, y1), lv in zip(rects, levels):
            if lv != lev:
                continue
            widths.setdefault(lev, x1 - x0)
            segs += [[(x0, y0), (x1, y0)], [(x1, y0), (x1, y1)],
                     [(x1, y1), (x0, y1)], [(x0, y1), (x0, y0)]]
        colour = LEVEL_COLOURS[min(lev, len(LEVEL_COLOURS) - 1)]
        ax.add_collection(LineCollection(segs, colors=colour, linewidths=0.6, alpha=0.9))
    handles = []
    for lev in sorted(widths):
        dx = widths[lev] / ds.nxb
        handles.append(Line2D([], [], color=LEVEL_COLOURS[min(lev, len(LEVEL_COLOURS) - 1)],
                              lw=1.5, label=f"level {lev + 1} (dx = {_fraction_label(dx)})"))
    if handles:
        leg = ax.legend(handles=handles, loc="upper right", fontsize=7, title="leaf blocks",
                        title_fontsize=7, facecolor="0.25", labelcolor="w", framealpha=0.8)
        leg.get_title().set_color("w")
    # Interfaces drawn over the slice: the flame front (flam = 1/2) where the run has the
    # ADR flame, the level set's zero contour (phi = 0) where it has a level set.
    fronts = [("flam", 0.5, "k", "dashed", "flame front (flam = 0.5)"),
              ("phi", 0.0, "k", "solid", "interface (phi = 0)")]
    for name, level, colour, style, label in fronts:
        if var == name and name == "flam" or not ds.has_field(name):
            continue
        front, _, _, _ = _slice(ds, name, z)
        ny, nx = front.shape
        xs = extent[0] + (np.arange(nx) + 0.5) * (extent[1] - extent[0]) / nx
        ys = extent[2] + (np.arange(ny) + 0.5) * (extent[3] - extent[2]) / ny
        if np.nanmax(front) > level > np.nanmin(front):
            ax.contour(xs, ys, np.nan_to_num(front), levels=[level], colors=colour,
                       linewidths=1.6, linestyles=style)
            handles.append(Line2D([], [], color=colour, lw=1.5,
                                  ls="--" if style == "dashed" else "-", label=label))
            leg = ax.legend(handles=handles, loc="upper right", fontsize=7, title="leaf blocks",
                            title_fontsize=7, facecolor="0.25", labelcolor="w", framealpha=0.8)
            leg.get_title().set_color("w")
    fig.colorbar(im, ax=ax, label=f"{var} (log scale)" if (log and norm is not None) else var,
                 fraction=0.046, pad=0.03)
    cyl = str(getattr(ds, "geometry", "cartesian")).lower() == "cylindrical"
    ax.set_xlabel("r" if cyl else "x")
    ax.set_ylabel("z" if cyl else "y")
    title = f"{p.get('problem.name', '?')}  {var}  t = {ds.time:.6g}  step {ds.step}"
    if ds.ndim == 3:
        zc = 0.5 * ds.domain()[2].sum() if z is None else float(z)
        title += f"  (slice z = {zc:.4g})"
    ax.set_title(title, fontsize=10)


def figure(ds: Dataset, var: str = "dens", log: bool = False, history: dict | None = None,
           summary: dict | None = None):
    """The matplotlib figure that ``plot_dataset`` saves (the caller closes it).

    2-D / 3-D with ``history`` (see ``reader.read_history``): the slice beside a panel
    of leaf blocks and zone-updates/s over the run and a few numbers (``summary``, the
    run's summary.json, when given).  The axes carry labels: "slice", "history",
    "history_rate", "run".
    """
    if ds.ndim >= 2:
        dom = ds.domain()
        aspect = (dom[1, 1] - dom[1, 0]) / (dom[0, 1] - dom[0, 0])
        if history is not None and history["step"].size:
            fig = plt.figure(figsize=(13.0, max(5.5, 6.8 * aspect)))
            gs = fig.add_gridspec(2, 2, width_ratios=[1.45, 1.0], height_ratios=[1.25, 1.0])
            ax = fig.add_subplot(gs[:, 0], label="slice")
            _slice_axes(fig, ax, ds, var, log)
            axh = fig.add_subplot(gs[0, 1], label="history")
            _history_panel(axh, history, ds, summary).set_label("history_rate")
            axt = fig.add_subplot(gs[1, 1], label="run")
            axt.axis("off")
            axt.text(0.02, 0.72, _run_text(history, ds, summary), va="top", ha="left",
                     fontsize=9, family="monospace", transform=axt.transAxes)
        else:
            fig, ax = plt.subplots(figsize=(7.5, max(3.0, 6.5 * aspect)))
            ax.set_label("slice")
            _slice_axes(fig, ax, ds, var, log)
        fig.tight_layout()
        return fig
    problem = ds.params.get("problem.name", "?")
    title = f"{problem}  {var}  t = {ds.time:.6g}  step {ds.step}"
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
    ax.set_title(title)
    fig.tight_layout()
    return fig


def plot_dataset(ds: Dataset, out: str, var: str = "dens", log: bool = False,
                 history: dict | None = None, summary: dict | None = None) -> str:
    """Write the plot of ``var`` for one dataset to ``out`` (see ``figure``); returns ``out``."""
    fig = figure(ds, var=var, log=log, history=history, summary=summary)
    try:
        fig.savefig(out, dpi=150)
    finally:
        plt.close(fig)
    return out


def plot(directory, out=None, var="dens", file=None, log=False, history=True) -> str:
    """Plot ``var`` from ``file`` or the last output of ``directory``; returns the PNG path.

    With ``history`` (default) and a ``history.csv`` in the run directory, the figure
    has the panel of leaf blocks and zone-updates/s over the run too (2-D / 3-D).
    """
    directory = os.fspath(directory)
    path = file
    if path is None:
        path = directory if os.path.isfile(directory) else last_output(directory)
    if path is None:
        raise FileNotFoundError(f"{directory}: no *_hdf5_chk_NNNN or *_hdf5_plt_cnt_NNNN output")
    run_dir = directory if os.path.isdir(directory) else os.path.dirname(os.path.abspath(path))
    if out is None:
        out = os.path.join(run_dir, "density_slice.png" if var == "dens" else f"{var}_slice.png")
    ds = read(path)
    if var not in ds.var_names:
        raise KeyError(f"{path}: no variable {var!r} (have {', '.join(ds.var_names)})")
    hist = summary = None
    if history and ds.ndim >= 2:
        hist = read_history(run_dir)
        spath = os.path.join(run_dir, "summary.json")
        if hist is not None and os.path.isfile(spath):
            try:
                with open(spath) as f:
                    summary = json.load(f)
            except (OSError, ValueError):
                summary = None
    return plot_dataset(ds, out, var=var, log=log, history=hist, summary=summary)

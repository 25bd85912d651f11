"""Weak scaling by census (issue 46, item 4): `make study-weak`.

The same work per rank (8 root blocks of 8^3 zones, one more refinement level where the
problem refines) on 1, 2, 4, ... 64 ranks, the root grid (and the domain, at a fixed zone
size) growing with the ranks, periodic boundaries where the problem allows; a few steps
each. On this machine the ranks are oversubscribed: times mean nothing, but the census
(summary.json "comm": messages and bytes each rank sends, collectives and the bytes each
contributes, per step of the step loop) and the tree's bytes are exact. Writes
runs/studies/weak/{weak.csv, weak.png, report.md}.
"""
import csv
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]
TABLES = [f"eos.table={ROOT / 'build' / 'helm_table.dat'}",
          f"burn.nse_table={ROOT / 'build' / 'nse_table.dat'}"]
NOOUT = ["io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=0",
         "io.plotfile_interval_time=0", "io.checkpoint_interval_time=0",
         "io.write_final=false", "io.write_initial=false"]
PERIODIC = [f"mesh.{a}{s}_boundary_type=periodic" for a in "xyz" for s in "lr"]


def grid(ranks):
    """Root blocks per axis for 8 per rank: 2x2x2 doubled axis by axis (x first)."""
    g = [2, 2, 2]
    a = 0
    r = ranks
    while r > 1:
        g[a] *= 2
        a = (a + 1) % 3
        r //= 2
    return g


def cases():
    """(name, problem file, overrides(grid) -> list, description)."""
    def box(g, lo=0.0, dx=1.0 / 16):
        # 8 zones per block, zones of dx: the domain grows with the root grid.
        out = ["mesh.nxb=8"]
        for a, n in zip("xyz", g):
            out += [f"mesh.nblock{a}={n}", f"mesh.{a}min={lo}", f"mesh.{a}max={lo + n * 8 * dx}"]
        return out

    def sedov(g, amr):
        c = [f"sedov.{a}ctr={n * 8 / 16 / 2}" for a, n in zip("xyz", g)]
        return box(g) + c + PERIODIC + ["driver.nend=4", "driver.tmax=1",
                                        f"mesh.lrefine_max={2 if amr else 1}",
                                        "mesh.maxblocks=400"]

    def pulse(g):
        # A lattice of pulses 2 apart (pulse.period): every 2x2x2 root blocks hold one, so
        # the refined region, and the leaves per rank, grow with the box.
        return box(g, -1.0, 2.0 / 16) + PERIODIC + ["mesh.ndim=3", "driver.nend=4",
                                                   "mesh.maxblocks=400", "pulse.period=2.0"]

    def snia(g):
        half = [n * 8 * 0.5e8 / 2 for n in g]
        out = ["mesh.nxb=8", "driver.nend=2", "mesh.lrefine_max=2", "mesh.maxblocks=400"]
        for a, n, h in zip("xyz", g, half):
            out += [f"mesh.nblock{a}={n}", f"mesh.{a}min={-h}", f"mesh.{a}max={h}"]
        return out + TABLES

    return [("sedov_3d_uniform", "sedov_3d.toml", lambda g: sedov(g, False),
             "3-D Sedov, one level, periodic"),
            ("sedov_3d_amr", "sedov_3d.toml", lambda g: sedov(g, True),
             "3-D Sedov, two levels (regrid every 2 steps), periodic"),
            ("diffusion_3d_amr", "diffusion_pulse_2d_amr.toml", pulse,
             "the diffusion pulse in 3-D, two levels, periodic, one pulse per 8 root blocks "
             "(pulse.period = 2)"),
            ("snia_3d", "snia_3d.toml", snia,
             "snia_3d (Helmholtz, multipole gravity, flame, three-stage burn), two levels, "
             "its outflow walls; 2 steps")]


def run_one(name, problem, over, ranks, out):
    d = out / "runs" / f"{name}_{ranks}"
    cmd = MPIRUN + ["-n", str(ranks), str(EXE), "run", str(ROOT / "problems" / problem),
                    "--dir", str(d)] + over + NOOUT
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"study weak: {name} on {ranks} ranks failed:\n{p.stderr[-1500:]}")
    s = json.loads((d / "summary.json").read_text())
    c = s["comm"]
    regrid = sum(v["collective_bytes"] for k, v in c["regions"].items()
                 if k.endswith("regrid") or k.endswith("mark_refine"))
    return {"problem": name, "ranks": ranks, "leaf_blocks": s["leaf_blocks"],
            "blocks_per_rank": s["leaf_blocks"] / ranks, "steps": c["steps"],
            "p2p_messages_per_step_max": c["p2p_messages_per_step_max"],
            "p2p_bytes_per_step_max": c["p2p_bytes_per_step_max"],
            "p2p_bytes_per_step_mean": c["p2p_bytes_per_step_mean"],
            "collectives_per_step_max": c["collectives_per_step_max"],
            "collective_bytes_per_step_max": c["collective_bytes_per_step_max"],
            "regrid_collective_bytes_run": regrid,
            "tree_bytes": s["memory"].get("tree_bytes"),
            "tree_nodes": s["memory"].get("tree_nodes")}


def weak(out, max_ranks=64, only=None):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ranks = [1]
    while ranks[-1] * 2 <= max_ranks:
        ranks.append(ranks[-1] * 2)
    rows = []
    if only and (out / "weak.csv").is_file():  # keep the other problems' rows
        with open(out / "weak.csv") as f:
            for r in csv.DictReader(f):
                if r["problem"] not in only:
                    rows.append({k: (v if k == "problem" else float(v) if v else None)
                                 for k, v in r.items()})
    for name, problem, over, _ in cases():
        if only and name not in only:
            continue
        for r in ranks:
            print(f"study weak: {name} on {r} ranks (root grid {grid(r)})", flush=True)
            rows.append(run_one(name, problem, over(grid(r)), r, out))
            with open(out / "weak.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
    plot(rows, out)
    report(rows, out)


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 3, figsize=(13, 3.8))
    for name in dict.fromkeys(r["problem"] for r in rows):
        rs = [r for r in rows if r["problem"] == name]
        x = [r["ranks"] for r in rs]
        axs[0].semilogx(x, [r["p2p_bytes_per_step_max"] / 2**10 for r in rs], "o-", label=name)
        axs[1].semilogx(x, [r["collective_bytes_per_step_max"] / 2**10 for r in rs], "o-",
                        label=name)
        axs[2].loglog(x, [r["tree_bytes"] / 2**10 for r in rs], "o-", label=name)
    for ax, t in zip(axs, ["point-to-point KiB sent per step (max rank)",
                           "collective KiB contributed per step (max rank)",
                           "tree KiB per rank"]):
        ax.set_xlabel("ranks (8 root blocks each)")
        ax.set_title(t, fontsize=9)
        ax.set_xscale("log", base=2)
    axs[0].legend(fontsize=7)
    fig.suptitle("Weak scaling by census (oversubscribed: counts exact, times meaningless)")
    fig.tight_layout()
    fig.savefig(out / "weak.png", dpi=120)


def report(rows, out):
    sys.path.insert(0, str(ROOT / "tools"))
    from study import machine
    m = machine()
    lines = ["# Weak scaling by census (issue 46, item 4)", "",
             f"Machine: {m['processor']}, {m['cores']} cores (ranks beyond them are "
             "oversubscribed: the counts are exact, the times are not reported).", "",
             "Each rank starts with 8 root blocks of 8^3 zones (root grid 2x2x2 doubled axis by "
             "axis with the ranks), at a fixed zone size; the Morton curve runs through the "
             "roots, so a rank's 8 roots are a 2x2x2 cube. Per step of the step loop, the "
             "largest rank's figures (summary.json comm). `regrid KiB/run` is the collective "
             "bytes of the regrid regions over the whole run (flags, 1 byte per tree node, "
             "and the tree's rebuild): the stated term that grows with the global block "
             "count.", ""]
    for name, _, _, desc in cases():
        rs = [r for r in rows if r["problem"] == name]
        if not rs:
            continue
        lines += [f"## {name}: {desc}", "",
                  "| ranks | leaves | msgs/step | p2p KiB/step max | p2p KiB/step mean | "
                  "collectives/step | coll. KiB/step | regrid KiB/run | tree KiB |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            lines.append(
                f"| {r['ranks']:.0f} | {r['leaf_blocks']:.0f} | {r['p2p_messages_per_step_max']:.1f} | "
                f"{r['p2p_bytes_per_step_max'] / 1024:.1f} | "
                f"{r['p2p_bytes_per_step_mean'] / 1024:.1f} | "
                f"{r['collectives_per_step_max']:.1f} | "
                f"{r['collective_bytes_per_step_max'] / 1024:.2f} | "
                f"{r['regrid_collective_bytes_run'] / 1024:.1f} | {r['tree_bytes'] / 1024:.1f} |")
        big = [r for r in rs if r["ranks"] >= 8]
        if len(big) > 1:
            b = [r["p2p_bytes_per_step_max"] for r in big]
            per = [r["p2p_bytes_per_step_max"] / r["blocks_per_rank"] for r in big]
            lines += ["", f"p2p bytes per step, 8 to {big[-1]['ranks']:.0f} ranks: max/min = "
                      f"{max(b) / min(b):.2f}; per leaf of a rank's mean share (Sedov on two "
                      f"levels and snia_3d lose leaves per rank as the box grows around one "
                      f"refined region): max/min = {max(per) / min(per):.2f}."]
        lines.append("")
    lines += ["Files: `weak.csv`, `weak.png`, the runs in `runs/`."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"study weak: {out}/report.md, weak.csv, weak.png")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "runs" / "studies" / "weak"))
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--only", nargs="*", default=None)
    a = ap.parse_args()
    weak(a.out, a.ranks, a.only)

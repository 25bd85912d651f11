"""A model of the step at scale from the census (issue 46, item 8): `make study-scale-model`.

Inputs: the weak-scaling runs of `make study-weak` (runs/studies/weak/runs/<problem>_<P>/
summary.json, 1..64 ranks, 8 root blocks of 8^3 zones per rank): the census per step
(messages and bytes the busiest rank sends, collectives and the bytes it contributes, the
regrid's share) and, from the 1-rank run (not oversubscribed), the compute time per
zone-update. The model of one step on P ranks:

    T(P) = T_comp + T_p2p + T_coll + T_tree
    T_comp = (zones per rank) x (seconds per zone-update measured on 1 rank)
    T_p2p  = m(P) alpha + b(P) / beta_shm + 48 f b(P) / beta   (the busiest rank's
             messages and bytes: copied through shared memory, and the share f = 48^(-1/3)
             that crosses the node's surface (a node's Morton run of 48 ranks) through the
             node's one link, which all 48 ranks share; no link below 48 ranks)
    T_coll = c(P) 2 alpha log2(P) + 2 k(P) / beta    (recursive doubling for the latency,
                                                   reduce-scatter + all-gather for the bytes)
    T_tree = N(P) t_node / nrefs                 (the replicated tree's rebuild at every
                                                   refinement check of the loop, an upper
                                                   bound; N(P) = tree nodes, all ranks)

m, b and c are taken as measured up to 64 ranks and held at their 64-rank values beyond
(each rank's neighbours are all present from 8 ranks on; the Morton runs of a larger box
have the same surface); the collective bytes k(P) split into the regrid's flags and weights
(proportional to the global tree: N bytes, as measured per node at 64 ranks) and the rest,
fitted as k0 + k1 P^(1/3) (gravity's moments grow with the domain's radius in zones, which
grows as P^(1/3) at fixed work per rank; constant elsewhere). Network: HDR100 InfiniBand as
on Ookami's A64FX nodes (alpha = 1.5 us, beta = 12.5 GB/s per node, shared by its 48
ranks; collectives charged at beta / 48 per rank), beta_shm = 5 GB/s per rank for copies
through shared memory. Two work levels: as measured (8 blocks of 8^3 per rank: little
work, the most communication per zone), and a production rank (64 blocks of 16^3 =
262,144 zones: compute for those zones at the 1-rank run's time per zone, point-to-point
bytes scaled by the rank's surface, (zones / the run's zones per rank at that count)^(2/3),
messages as measured, tree nodes 64 leaves per rank times the nodes per leaf measured).
t_node: the regrid per tree node, 0.33 us: measured on this machine (Intel Xeon) with 2-D
Sedov on 128 x 128 root blocks of 8^2, 16,432 nodes, 1 rank: the step loop's regrid region
took 10.7 ms over 2 checks (flags, 2:1 balance, rebuild, guard plans and the few blocks
that changed: an upper bound for the tree's own part).

Efficiency E(P) = T(1) / T(P) at fixed work per rank. Writes runs/studies/scale-model/
{scale_model.csv, scale_model.png, report.md}.
"""
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALPHA, BETA, BETA_SHM, RANKS_PER_NODE, T_NODE = 1.5e-6, 12.5e9, 5e9, 48, 0.33e-6
# Work per rank: (name, zones per rank, leaves per rank); None: as the runs measured.
LEVELS = [("measured", None, None), ("production", 64 * 16 ** 3, 64)]
PROBLEMS = {"sedov_3d_uniform": "3-D Sedov, one level", "sedov_3d_amr": "3-D Sedov, two levels",
            "diffusion_3d_amr": "3-D diffusion pulse, two levels (implicit, Krylov)",
            "snia_3d": "snia_3d (multipole gravity, flame, three-stage burn)"}
TARGETS = [1, 8, 64, 512, 4096, 32768, 100000]


def load(weak):
    runs = {}
    for d in sorted((weak / "runs").iterdir()):
        name, _, p = d.name.rpartition("_")
        if not p.isdigit() or not (d / "summary.json").is_file():
            continue
        s = json.loads((d / "summary.json").read_text())
        c = s["comm"]
        steps = max(1, c["steps"])
        regrid = sum(v["collective_bytes"] for k, v in c["regions"].items()
                     if not k.startswith("initialise") and "regrid" in k) / steps
        runs.setdefault(name, {})[int(p)] = {
            "m": c["p2p_messages_per_step_max"], "b": c["p2p_bytes_per_step_max"],
            "c": c["collectives_per_step_max"], "k": c["collective_bytes_per_step_max"],
            "k_regrid": regrid, "nodes": s["total_blocks"], "leaves": s["leaf_blocks"],
            "zones": s["zone_updates"] / max(1, s["steps"]),
            "seconds_per_zone": s["evolution_seconds"] / max(1.0, s["zone_updates"]),
            # Refinement checks of the step loop (each may rebuild the tree: an upper bound).
            "loop_checks": next((c["calls"] for c in s["timers"].get("children", [])
                                 if c.get("name") == "mark_refine"), 0),
            "steps": s["steps"]}
    return runs


def fit_k(meas):
    """k(P) - regrid = k0 + k1 P^(1/3), least squares over 8..64 ranks (or all)."""
    pts = [(p ** (1 / 3), v["k"] - v["k_regrid"]) for p, v in meas.items() if p >= 8] or \
          [(p ** (1 / 3), v["k"] - v["k_regrid"]) for p, v in meas.items()]
    n = len(pts)
    sx = sum(x for x, _ in pts)
    sy = sum(y for _, y in pts)
    sxx = sum(x * x for x, _ in pts)
    sxy = sum(x * y for x, y in pts)
    den = n * sxx - sx * sx
    k1 = (n * sxy - sx * sy) / den if den > 0 else 0.0
    k1 = max(0.0, k1)
    return (sy - k1 * sx) / n, k1


def model(meas, P, level=LEVELS[0]):
    top = max(meas)
    Pm = P if P in meas else top  # the run that gives the counts (held beyond 64 ranks)
    v = meas[Pm]
    one = meas[1]
    k0, k1 = fit_k(meas)
    per_node_regrid = meas[top]["k_regrid"] / meas[top]["nodes"]
    nodes_per_leaf = meas[top]["nodes"] / meas[top]["leaves"]
    if level[1]:
        # A production rank: its zones and leaves, whatever the runs had; the measured
        # point-to-point bytes scaled by the rank's surface (zones^(2/3)) against the
        # run's zones per rank at that count.
        zones = level[1]
        b = v["b"] * (zones / (v["zones"] / Pm)) ** (2 / 3)
        nodes = level[2] * nodes_per_leaf * P
    else:
        zones = one["zones"]  # the same work per rank as the 1-rank run
        b = v["b"]
        nodes = meas[top]["nodes"] / top * P if P > top else v["nodes"]
    k_regrid = per_node_regrid * nodes
    k = k0 + k1 * P ** (1 / 3) + k_regrid
    beta_rank = BETA / min(P, RANKS_PER_NODE) if P > 1 else BETA
    t_comp = zones * one["seconds_per_zone"]
    crossing = RANKS_PER_NODE * RANKS_PER_NODE ** (-1 / 3) * b / BETA if P > RANKS_PER_NODE else 0
    t_p2p = 0.0 if P == 1 else v["m"] * ALPHA + b / BETA_SHM + crossing
    t_coll = 0.0 if P == 1 else v["c"] * 2 * ALPHA * math.log2(P) + 2 * k / beta_rank
    regrids_per_step = one["loop_checks"] / max(1, one["steps"])
    t_tree = regrids_per_step * nodes * T_NODE
    return {"t_comp": t_comp, "t_p2p": t_p2p, "t_coll": t_coll, "t_tree": t_tree,
            "total": t_comp + t_p2p + t_coll + t_tree, "tree_nodes": nodes,
            "collective_bytes": k, "regrid_bytes": k_regrid}


def main(out):
    weak = ROOT / "runs" / "studies" / "weak"
    if not (weak / "runs").is_dir():
        sys.exit("study scale-model: run `make study-weak` first (runs/studies/weak/runs)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = load(weak)
    rows = []
    for name in PROBLEMS:
        if name not in runs or 1 not in runs[name]:
            continue
        for level in LEVELS:
            base = model(runs[name], 1, level)["total"]
            for P in TARGETS:
                r = model(runs[name], P, level)
                rows.append({"problem": name, "work": level[0], "ranks": P,
                             **{k: r[k] for k in r}, "efficiency": base / r["total"]})
    if not rows:
        sys.exit("study scale-model: no problem of study-weak has its 1-rank run")
    with open(out / "scale_model.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    for n, name in enumerate(PROBLEMS):
        for level, style in (("production", "o-"), ("measured", "x:")):
            rs = [r for r in rows if r["problem"] == name and r["work"] == level]
            if rs:
                axs[0].semilogx([r["ranks"] for r in rs], [r["efficiency"] for r in rs], style,
                                color=f"C{n}", label=f"{name} ({level})")
    axs[0].set_ylim(0, 1.05)
    axs[0].set_xlabel("ranks (48 per node)")
    axs[0].set_ylabel("weak-scaling efficiency (model)")
    axs[0].legend(fontsize=7)
    rs = [r for r in rows if r["problem"] == "snia_3d" and r["work"] == "production"] or \
        rows[:len(TARGETS)]
    x = range(len(rs))
    bottom = [0.0] * len(rs)
    for key in ("t_comp", "t_p2p", "t_coll", "t_tree"):
        vals = [r[key] * 1e3 for r in rs]
        axs[1].bar(x, vals, bottom=bottom, label=key[2:])
        bottom = [b + v for b, v in zip(bottom, vals)]
    axs[1].set_xticks(list(x), [str(r["ranks"]) for r in rs])
    axs[1].set_ylabel("ms per step (model)")
    axs[1].set_title(f"{rs[0]['problem']} ({rs[0]['work']}): where the step goes", fontsize=9)
    axs[1].legend(fontsize=7)
    fig.suptitle("Tessera at scale: a model from the census (HDR100, 48 ranks per node)")
    fig.tight_layout()
    fig.savefig(out / "scale_model.png", dpi=120)
    sys.path.insert(0, str(ROOT / "tools"))
    from study import machine
    m = machine()
    lines = ["# Tessera at scale: a model from the census (issue 46, item 8)", "",
             f"Compute time per zone-update from the 1-rank runs of `make study-weak` on "
             f"{m['processor']} ({m['cores']} cores); messages, bytes and collectives from "
             "the census of 1..64 oversubscribed ranks (exact counts). Network: HDR100 "
             f"InfiniBand (alpha = {ALPHA * 1e6:.1f} us, beta = {BETA / 1e9:.1f} GB/s per node, "
             f"{RANKS_PER_NODE} ranks per node sharing it; shared-memory copies "
             f"{BETA_SHM / 1e9:.0f} GB/s per rank); tree rebuild {T_NODE * 1e6:.1f} us "
             "per node at each regrid. tools/study_scale_model.py's docstring gives the "
             "formulas. A model, not a measurement: it says which term grows, and from "
             "which scale.", ""]
    for (name, desc), level in [(pd, lv[0]) for pd in PROBLEMS.items() for lv in LEVELS]:
        rs = [r for r in rows if r["problem"] == name and r["work"] == level]
        if not rs:
            continue
        lines += [f"## {name}: {desc}; work per rank {level}", "",
                  "| ranks | tree nodes | compute ms | p2p ms | collectives ms | tree ms | "
                  "coll. KiB | of which regrid | efficiency |", "|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            lines.append(f"| {r['ranks']} | {r['tree_nodes']:.0f} | {r['t_comp'] * 1e3:.2f} | "
                         f"{r['t_p2p'] * 1e3:.3f} | {r['t_coll'] * 1e3:.3f} | "
                         f"{r['t_tree'] * 1e3:.3f} | {r['collective_bytes'] / 1024:.1f} | "
                         f"{r['regrid_bytes'] / 1024:.1f} | {r['efficiency']:.3f} |")
        low = [r for r in rs if r["efficiency"] < 0.8]
        lines += ["", f"Efficiency below 0.8 from {low[0]['ranks']} ranks on." if low else
                  f"Efficiency stays at or above 0.8 to {rs[-1]['ranks']} ranks.", ""]
    lines += ["What grows with the machine: the regrid's flags (1 byte per tree node in an "
              "allreduce; 9 with mesh.balance = cost, the weights too) and the replicated tree's rebuild, both proportional to "
              "the global tree; and gravity's moment reduction, with the domain's radius in "
              "zones. Everything else per rank is constant in P (the sums: ExactSum and "
              "WindowedSums payloads; the guard fills: the Morton run's surface)."]
    lines += [memory_limit(rows), "", "Files: `scale_model.csv`, `scale_model.png`."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"study scale-model: {out}/report.md, scale_model.csv, scale_model.png")


def memory_limit(rows):
    """Where the replicated structures pass their memory limit, from `tessera plan --scale`
    (3-D Sedov's plan), against the largest tree of the production rows."""
    p = subprocess.run([str(ROOT / "build" / "bin" / "tessera"), "plan",
                        str(ROOT / "problems" / "sedov_3d.toml"), "--scale", "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return "Memory: `tessera plan --scale` did not run here, so no limit is stated."
    sc = json.loads(p.stdout)["scale"]
    prod = [r["tree_nodes"] for r in rows if r["work"] == "production"]
    return (f"Memory decides first: past {sc['passes_limit_at_tree_nodes']:.3g} tree nodes the "
            f"replicated structures pass {sc['limit_rule']} ({sc['limit_bytes'] / 2**20:.0f} of "
            f"{sc['rank_share_bytes'] / 2**20:.0f} MiB; `tessera plan --scale`), and the "
            f"production rows reach {max(prod):.3g} nodes: they would not fit without a "
            "distributed tree; the model's time terms there say what the tree would also cost "
            "if they did." if prod else "")


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "runs" / "studies" / "scale-model"))
    main(ap.parse_args().out)

#!/usr/bin/env python3
"""Particle-in-cell throughput: problems/pic_uniform_3d.toml (uniform thermal plasma,
periodic, the WarpX-PM study's "uniform plasma") enlarged to --cells^3 cells in 16^3
blocks at 8 particles per cell, shape orders 1 and 2, on 1 and 2 ranks, interleaved,
REPEAT times (median). No outputs.

Reported per (order, ranks): particle-steps per second per core for the whole step (the
`pic` timer region: gather, push, deposit with the guard accumulation of J, field solve,
redistribution, and the energy diagnostics) and for each phase alone (pic/push is the
Boris push and position update only), nanoseconds per particle-step per core, and bytes
per particle (the particle arena's bytes / particles). Anchors (issue 12): WarpX on KNL
about 3.6e5 particle-steps/s per core for a whole step at 32 particles per cell, shape 3;
a well-vectorised push is tens of ns per particle.

    .venv/bin/python bench/pic.py [--repeat 5] [--steps 20] [--cells 32] [--orders 1,2]
                                  [--ranks 1,2] [--set KEY=VALUE ...]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tracers import region  # max_s of the timer regions whose path ends with a suffix

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
PROBLEM = ROOT / "problems" / "pic_uniform_3d.toml"
QUIET = ["io.write_initial=false", "io.write_final=false", "io.plotfile_interval_steps=0",
         "io.checkpoint_interval_steps=0"]
PHASES = ("gather", "push", "deposit", "field_solve", "redistribute")


def one(ranks, steps, cells, order, extra):
    nblock = max(1, cells // 16)
    dx = 5.44e-6 / 16  # the problem's cell size (about 4 Debye lengths)
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        cmd = [str(EXE), "run", str(PROBLEM), "--dir", d, *QUIET, f"driver.nend={steps}",
               "mesh.nxb=16", f"mesh.nblockx={nblock}", f"mesh.nblocky={nblock}",
               f"mesh.nblockz={nblock}", f"pic.shape_order={order}",
               *(f"mesh.{a}max={16 * nblock * dx!r}" for a in "xyz"), *extra]
        if ranks > 1:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-n", str(ranks)] + cmd
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"bench: run failed ({' '.join(cmd)}):\n{p.stderr[-2000:]}")
        s = json.loads((Path(d) / "summary.json").read_text())
    out = {"pic": region(s["timers"], "pic"), "evolution": s["evolution_seconds"],
           "particle_steps": s["pic"]["particle_steps"], "particles": s["pic"]["particles"]}
    for ph in PHASES:
        out[ph] = region(s["timers"], "pic/" + ph)
    arena = [a for a in s["memory"].get("arenas", []) if a.get("name") == "particles"]
    out["arena_bytes"] = sum(a["bytes"] for a in arena)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cells", type=int, default=32, help="cells per axis (a multiple of 16)")
    ap.add_argument("--orders", default="1,2")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra override for every run")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args()
    if not EXE.exists():
        sys.exit("bench: build/bin/tessera is missing; run `make build` first")
    if a.cells % 16:
        sys.exit("bench: --cells must be a multiple of 16 (blocks of 16^3)")
    (ROOT / "runs").mkdir(exist_ok=True)
    configs = [(o, r) for o in map(int, a.orders.split(",")) for r in map(int, a.ranks.split(","))]
    raw = {c: [] for c in configs}
    for rep in range(a.repeat):
        for order, ranks in configs:  # interleaved: a drift of the machine hits all alike
            raw[(order, ranks)].append(one(ranks, a.steps, a.cells, order, a.set))
            print(f"  order={order} ranks={ranks} rep {rep + 1}: pic "
                  f"{raw[(order, ranks)][-1]['pic']:.2f} s", flush=True)
    rows = []
    for (order, ranks), runs in raw.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        ps = med["particle_steps"]
        row = {"order": order, "ranks": ranks, "particles": med["particles"],
               "particle_steps": ps, "pic_s": med["pic"],
               "step_per_s_per_core": ps / med["pic"] / ranks,
               "bytes_per_particle": med["arena_bytes"] * ranks / med["particles"]}
        for ph in PHASES:
            row[f"{ph}_ns"] = 1e9 * med[ph] * ranks / ps if med[ph] > 0 else None
        rows.append(row)
    print(f"\npic_uniform_3d at {a.cells}^3 cells, 8 particles per cell, {a.steps} steps, "
          f"median of {a.repeat} (ns per particle-step per core)")
    print(f"{'order':>5} {'ranks':>5} {'particles':>10} {'step/s/core':>12} "
          + " ".join(f"{p:>12}" for p in PHASES) + f" {'B/particle':>10}")
    for r in rows:
        print(f"{r['order']:>5} {r['ranks']:>5} {r['particles']:>10} "
              f"{r['step_per_s_per_core']:>12.3e} "
              + " ".join(f"{r[p + '_ns']:>12.1f}" if r[p + "_ns"] else f"{'-':>12}"
                         for p in PHASES) + f" {r['bytes_per_particle']:>10.1f}")
    print("(WarpX on KNL: about 3.6e5 particle-steps/s/core, whole step, 32 ppc, shape 3)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pic.json").write_text(json.dumps({"rows": rows, "steps": a.steps, "cells": a.cells,
                                              "repeat": a.repeat, "set": a.set}, indent=1))
    print(f"written: {out / 'pic.json'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""V2D's radiation-diffusion pulse on this machine (issue 21's speed section).

Part 1, the Ookami case: problems/diffusion_pulse_2d.toml (200 x 100 zones, 2 species, 100
backward-Euler steps, one BiCGSTAB solve with Jacobi of the 200 x 100 x 2 system a step)
on one rank, REPEAT times (median): seconds in all, iterations per solve, seconds per
BiCGSTAB iteration, and that time against a memory-traffic bound: the doubles one
iteration of our implementation reads and writes per unknown (counted from
solvers/krylov.cpp and physics/diffusion/diffusion.cpp, BYTES_PER_UNKNOWN below) over a
streaming bandwidth measured here (numpy a = b + s c on arrays far larger than the
caches, median of 5). V2D's own figure: 182 s on one A64FX core at best.

Part 2, stiff steps: the same pulse with dt = F h^2 / D (F = diffusion.dt_factor, 100 and
1000), 20 steps, solved matrix-free (BiCGSTAB + Jacobi) and by hypre (BiCGSTAB +
BoomerAMG): iterations per solve and seconds per solve, and the ratio.

    .venv/bin/python bench/diffusion_v2d.py [--repeat 5] [--exe build/bin/tessera]
        [--out runs/bench]

Writes OUT/diffusion_v2d.json and prints two tables."""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROBLEM = ROOT / "problems" / "diffusion_pulse_2d.toml"
# One BiCGSTAB iteration (solvers/krylov.cpp), doubles read + written per unknown: p update
# 4, two preconditioner passes 3 + 3, two applies 4 + 4 (x, two face coefficients in 2-D,
# y), s = r - alpha v 3, x and r update 7, and the dot products (each pair a pass of its
# own) (r-hat, v) 2 + (t, s), (t, t), (s, s) 6 + (r, r), (r-hat, r) 4 = 12; 40 doubles in
# all (the solve's first and confirming true residuals are left out: two applies a solve).
BYTES_PER_UNKNOWN = 40 * 8


def run(exe, out, *overrides):
    cmd = [str(exe), "run", str(PROBLEM), "--dir", str(out), "io.plotfile_interval_steps=0",
           *overrides]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    return json.loads((Path(out) / "summary.json").read_text())


def bandwidth():
    """Streaming bandwidth (bytes/s): a = b + s c over 3 x 128 MiB, median of 5."""
    n = 16 * 1024 * 1024
    b, c = np.random.rand(n), np.random.rand(n)
    a = np.empty(n)
    rates = []
    for _ in range(5):
        t0 = time.perf_counter()
        np.multiply(c, 0.5, out=a)
        np.add(a, b, out=a)
        dt = time.perf_counter() - t0
        rates.append(5 * 8 * n / dt)  # c read, a written, a read, b read, a written
    return statistics.median(rates)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=str(ROOT / "build" / "bin" / "tessera"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = [run(a.exe, Path(tmp) / f"v2d{r}") for r in range(a.repeat)]
        wall = statistics.median(r["wall_seconds"] for r in runs)
        solver = statistics.median(r["solver"]["seconds"] for r in runs)
        s = runs[0]["solver"]
        iters = s["iterations_mean"] * s["solves"]
        unknowns = 200 * 100 * 2
        per_iter = solver / iters
        bw = bandwidth()
        bound = unknowns * BYTES_PER_UNKNOWN / bw
        result["v2d"] = {"wall_seconds": wall, "solver_seconds": solver,
                         "iterations_per_solve": s["iterations_mean"],
                         "seconds_per_iteration": per_iter, "bandwidth_bytes_per_s": bw,
                         "bound_seconds_per_iteration": bound, "ratio_to_bound": per_iter / bound,
                         "repeat": a.repeat}
        print(f"V2D pulse, 200 x 100 x 2, 100 steps, 1 rank (median of {a.repeat}):")
        print(f"  whole run {wall:.2f} s, solves {solver:.2f} s, "
              f"{s['iterations_mean']:.2f} iterations per solve")
        print(f"  {per_iter * 1e3:.3f} ms per BiCGSTAB iteration; bound {bound * 1e3:.3f} ms "
              f"({BYTES_PER_UNKNOWN} B per unknown at {bw / 1e9:.1f} GB/s): "
              f"{per_iter / bound:.2f}x the bound")
        result["stiff"] = []
        print("\nStiff steps (20 steps of dt = F h^2 / D):")
        print(f"  {'F':>6} {'backend':>26} {'it/solve':>9} {'s/solve':>9}")
        for f in (100, 1000):
            row = {"dt_factor": f}
            for name, opts in (("tessera bicgstab+jacobi", ["solver.backend=tessera"]),
                               ("hypre bicgstab+boomeramg",
                                ["solver.backend=hypre", "solver.preconditioner=boomeramg"])):
                rs = [run(a.exe, Path(tmp) / f"stiff{f}{name[:5]}{r}", "driver.nend=20",
                          f"diffusion.dt_factor={f}", "solver.max_iterations=5000", *opts)
                      for r in range(max(1, a.repeat // 2))]
                sv = rs[0]["solver"]
                sec = statistics.median(r["solver"]["seconds"] for r in rs) / sv["solves"]
                row[name] = {"iterations_per_solve": sv["iterations_mean"],
                             "seconds_per_solve": sec}
                print(f"  {f:>6} {name:>26} {sv['iterations_mean']:>9.1f} {sec:>9.4f}")
            row["amg_speedup"] = (row["tessera bicgstab+jacobi"]["seconds_per_solve"] /
                                  row["hypre bicgstab+boomeramg"]["seconds_per_solve"])
            print(f"  {f:>6} {'hypre faster by':>26} {row['amg_speedup']:>9.2f}x")
            result["stiff"].append(row)
    (out / "diffusion_v2d.json").write_text(json.dumps(result, indent=1))
    print(f"\n{out / 'diffusion_v2d.json'}")


if __name__ == "__main__":
    main()

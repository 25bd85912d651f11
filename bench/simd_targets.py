#!/usr/bin/env python3
"""Zone-updates/s of one build under every instruction set it can run here (perf.simd:
the Highway targets best first, then "scalar", the C++ reference kernels), runs
interleaved target by target so that machine noise hits all alike; medians, and each
target's rate over the scalar reference's (median of the per-round ratios).

    .venv/bin/python bench/simd_targets.py [--exe build/bin/tessera] [--repeat 5]
        [--steps 20] [--problem problems/sedov_3d_uniform.toml] [--set key=value ...]
        [--targets avx3,avx2,sse4,scalar] [--json out.json]

The rates are whole steps (guard fills, the EOS, the time step included); only the hydro
row kernels (kernels_simd.hpp) change with the target. For a PIC problem (e.g.
problems/pic_uniform_3d.toml) the rate is particle-steps per second of the `pic` operator
(its timer: gather, push, deposit, field solve, redistribution), and the medians of its
particle kernels, ns per particle-step, are printed too (physics/pic/kernels_simd.hpp).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(exe, problem, args):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([str(exe), "run", str(problem), "--dir", d, *args], check=True,
                       capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
        if "pic" not in s:
            return s["zone_updates_per_second"], s["simd"], {}
        pic = next(c for c in s["timers"]["children"] if c["name"] == "pic")
        n = s["pic"]["particle_steps"]
        kernels = {c["name"]: 1e9 * c["avg_s"] / n for c in pic["children"]
                   if c["name"] in ("gather", "push", "deposit")}
        return n / pic["avg_s"], s["simd"], kernels


def available(exe):
    out = subprocess.run([str(exe), "simd", "--json"], capture_output=True, text=True,
                         check=True).stdout
    return [t.lower() for t in json.loads(out)["available"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exe", default=str(ROOT / "build" / "bin" / "tessera"))
    ap.add_argument("--problem", default="problems/sedov_3d_uniform.toml")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--set", action="append", default=[], help="key=value for every run")
    ap.add_argument("--targets", default="", help="comma list (default: all available)")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    targets = a.targets.split(",") if a.targets else available(a.exe)
    common = [f"driver.nend={a.steps}", *a.set]
    if "sedov" in Path(a.problem).name:
        common.append("sedov.nsubzones=1")
    runs = {t: [] for t in targets}
    kernels = {t: {} for t in targets}
    names = {}
    print(f"load average before: {os.getloadavg()[0]:.2f}; targets {targets}", flush=True)
    for r in range(a.repeat):
        for t in targets:
            rate, simd, ns = one_run(a.exe, ROOT / a.problem, common + [f"perf.simd={t}"])
            runs[t].append(rate)
            for k, v in ns.items():
                kernels[t].setdefault(k, []).append(v)
            names[t] = simd
        print(f"  round {r + 1}: " + "  ".join(f"{t} {runs[t][-1]:.4g}" for t in targets),
              flush=True)
    ref = "scalar" if "scalar" in runs else targets[-1]
    out = {"problem": a.problem, "steps": a.steps, "repeat": a.repeat, "exe": a.exe,
           "median_zone_updates_per_second": {t: statistics.median(v) for t, v in runs.items()},
           f"median_ratio_over_{ref}": {
               t: statistics.median(x / y for x, y in zip(v, runs[ref])) for t, v in runs.items()},
           "simd": names, "runs": runs, "load_after": os.getloadavg()[0]}
    if any(kernels.values()):
        out["rate"] = "particle-steps per second of the pic operator"
        out["median_ns_per_particle_step"] = {
            t: {k: round(statistics.median(v), 2) for k, v in ks.items()}
            for t, ks in kernels.items()}
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())

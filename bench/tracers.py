#!/usr/bin/env python3
"""Tracer-particle throughput: problems/sod_3d_tracers.toml (3-D Sod, AMR, 16,384
tracers) with and without tracers, on 1 and 2 ranks, interleaved, REPEAT times (median).

Reported per rank count: the step loop's time with and without tracers and the ratio (the
step overhead of tracers), the tracer work (timer regions particles/advance and
particles/migrate, the maximum over ranks) and particles advanced per second per core
(particle-steps / tracer seconds / ranks; advance includes the guard fill of dens and the
momenta, the Heun predictor and corrector with mapping, and migration). No outputs.

    .venv/bin/python bench/tracers.py [--repeat 5] [--steps 30] [--ranks 1,2]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
PROBLEM = ROOT / "problems" / "sod_3d_tracers.toml"
QUIET = ["io.write_initial=false", "io.write_final=false", "io.plotfile_interval_steps=0",
         "io.checkpoint_interval_steps=0"]


def region(node, path, prefix=""):
    """max_s of the timer region whose path ends with `path`, summed over matches."""
    here = prefix + node["name"]
    total = node["max_s"] if here.endswith(path) else 0.0
    for c in node.get("children", []):
        total += region(c, path, here + "/")
    return total


def one(ranks, steps, tracers):
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        cmd = [str(EXE), "run", str(PROBLEM), "--dir", d, *QUIET, f"driver.nend={steps}",
               f"particles.tracers={'true' if tracers else 'false'}"]
        if ranks > 1:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-n", str(ranks)] + cmd
        subprocess.run(cmd, check=True, capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
    out = {"evolution": s["evolution_seconds"], "zups": s["zone_updates_per_second"]}
    if tracers:
        out["advance"] = region(s["timers"], "particles/advance")
        out["migrate"] = region(s["timers"], "particles/migrate")
        out["count"] = s["particles"]["count"]
        out["migrated"] = s["particles"]["migrated"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args()
    if not EXE.exists():
        sys.exit("bench: build/bin/tessera is missing; run `make build` first")
    (ROOT / "runs").mkdir(exist_ok=True)
    rows = []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        raw = {True: [], False: []}
        for rep in range(a.repeat):
            for tr in (False, True):
                raw[tr].append(one(ranks, a.steps, tr))
                print(f"  ranks={ranks} tracers={tr!s:5} rep {rep + 1}: loop "
                      f"{raw[tr][-1]['evolution']:.2f} s", flush=True)
        with_t = {k: statistics.median(r[k] for r in raw[True]) for k in raw[True][0]}
        without = {k: statistics.median(r[k] for r in raw[False]) for k in raw[False][0]}
        work = with_t["advance"] + with_t["migrate"]
        rows.append({"ranks": ranks, "loop_without": without["evolution"],
                     "loop_with": with_t["evolution"],
                     "overhead": with_t["evolution"] / without["evolution"] - 1,
                     "advance_s": with_t["advance"], "migrate_s": with_t["migrate"],
                     "particles": with_t["count"], "migrated": with_t["migrated"],
                     "particles_per_s_per_core": with_t["count"] * a.steps / work / ranks})
    print(f"\nsod_3d_tracers, {a.steps} steps, median of {a.repeat}")
    print(f"{'ranks':>5} {'loop s':>8} {'+tracers s':>10} {'overhead':>9} {'advance s':>10} "
          f"{'migrate s':>10} {'particles/s/core':>17}")
    for r in rows:
        print(f"{r['ranks']:>5} {r['loop_without']:>8.2f} {r['loop_with']:>10.2f} "
              f"{100 * r['overhead']:>8.1f}% {r['advance_s']:>10.3f} {r['migrate_s']:>10.3f} "
              f"{r['particles_per_s_per_core']:>17.3e}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tracers.json").write_text(json.dumps({"rows": rows, "steps": a.steps,
                                                  "repeat": a.repeat}, indent=1))
    print(f"written: {out / 'tracers.json'}")


if __name__ == "__main__":
    main()

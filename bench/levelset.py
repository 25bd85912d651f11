#!/usr/bin/env python3
"""Level-set speed: LeVeque's single vortex (problems/single_vortex_2d.toml, T = 2, WENO5 +
SSP-RK3 with two redistancing pseudo-steps every step) on a uniform N^2 mesh and on a
narrow-band adaptive mesh whose finest level is the same N^2 (root N/4 in 16^2 blocks,
two levels more), 1 rank, alternating, REPEAT times each (median).

Reported per case: wall seconds of the step loop, level-set zone-updates per second per
core (summary.json zone_updates_per_second_per_rank: leaf zones times steps over the
evolution), the advection and redistancing shares of the loop (timer regions
levelset/advect and levelset/redistance), leaf blocks at the end, and the accuracy at
t = T (area change, shape error); then the AMR/uniform ratios of wall time and of
the rate. Results in OUT/levelset.json.

    .venv/bin/python bench/levelset.py [--n 256] [--repeat 3] [--out runs/bench]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from io_async import find_region as region  # bench/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
PROBLEM = ROOT / "problems" / "single_vortex_2d.toml"


def one(case, n):
    nb = n // 16 if case == "uniform" else n // 64
    extra = [f"mesh.nblockx={nb}", f"mesh.nblocky={nb}", "io.plotfile_interval_time=0",
             "io.write_final=false", "driver.log_every=100000"]
    if case == "amr":
        extra += ["mesh.lrefine_max=3", "mesh.maxblocks=4000"]
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        subprocess.run([str(EXE), "run", str(PROBLEM), "--dir", d, *extra], check=True,
                       capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
    ls = s["levelset"]
    return {"evolution": s["evolution_seconds"], "rate": s["zone_updates_per_second_per_rank"],
            "advect": region(s["timers"], "levelset/advect"),
            "redistance": region(s["timers"], "levelset/redistance"),
            "leaves": s["leaf_blocks"], "steps": ls["steps"],
            "area_change": ls["area_change"], "shape_error": ls["shape_error"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256, help="finest zones per axis (multiple of 64)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args()
    if not EXE.exists():
        sys.exit(f"bench: {EXE} is missing; run `make build` first")
    (ROOT / "runs").mkdir(exist_ok=True)
    raw = {"uniform": [], "amr": []}
    for rep in range(a.repeat):
        for case in raw:
            r = one(case, a.n)
            raw[case].append(r)
            print(f"  {case:8s} rep {rep + 1}/{a.repeat}: {r['evolution']:.2f} s, "
                  f"{r['rate']:.3e} zone-updates/s", flush=True)
    med = {c: {k: statistics.median(x[k] for x in v) for k in v[0]} for c, v in raw.items()}
    print(f"\nsingle vortex T = 2, finest {a.n}^2, 1 rank, median of {a.repeat}")
    print(f"{'case':>8} {'loop s':>7} {'zu/s/core':>10} {'advect':>7} {'redist':>7} "
          f"{'leaves':>7} {'steps':>6} {'area chg':>9} {'shape err':>9}")
    for c, m in med.items():
        print(f"{c:>8} {m['evolution']:>7.2f} {m['rate']:>10.3e} "
              f"{100 * m['advect'] / m['evolution']:>6.1f}% "
              f"{100 * m['redistance'] / m['evolution']:>6.1f}% {m['leaves']:>7.0f} "
              f"{m['steps']:>6.0f} {100 * m['area_change']:>8.3f}% {m['shape_error']:>9.2e}")
    ratio = {"wall": med["amr"]["evolution"] / med["uniform"]["evolution"],
             "rate": med["amr"]["rate"] / med["uniform"]["rate"]}
    print(f"AMR / uniform: wall {ratio['wall']:.3f}, rate per zone {ratio['rate']:.3f}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "levelset.json").write_text(json.dumps(
        {"n": a.n, "repeat": a.repeat, "median": med, "ratio": ratio, "raw": raw}, indent=1))
    print(f"written: {out / 'levelset.json'}")


if __name__ == "__main__":
    main()

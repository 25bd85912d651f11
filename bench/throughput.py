#!/usr/bin/env python3
"""Throughput benchmark: zone-updates per second per core of the real executable.

Runs problems/sedov_3d_uniform.toml (uniform 128^3, 16^3 blocks, PLM + HLLC) and two AMR
cases of problems/sedov_3d.toml (the make-run default; issue 13's 64^3-root, 3-level case)
on 1 and 2 ranks, REPEAT times each, and reports the median
of summary.json's zone_updates_per_second (measured over the evolution loop only) per
core, with the machine's load average before each configuration. A fixed number of steps
keeps a repeat short; the sub-zone averaging of the initial deposit is set to 1 so that
set-up does not dominate (it does not change the per-step work).

    .venv/bin/python bench/throughput.py [--repeat 5] [--steps 20] [--out runs/bench]
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
EXE = ROOT / "build" / "bin" / "tessera"

CASES = {
    "uniform_128^3": ("problems/sedov_3d_uniform.toml", ["sedov.nsubzones=1"]),
    "amr_2level": ("problems/sedov_3d.toml",
                   ["sedov.nsubzones=1", "io.write_final=false", "io.write_initial=false",
                    "io.plotfile_interval_time=0", "io.checkpoint_interval_time=0"]),
    # Issue 13's AMR case: 16^3 blocks, a 64^3 root grid (4^3 roots), 3 levels, 176 leaves,
    # regridding every 2 steps, refined on density and pressure.
    "amr_3level_64root": ("problems/sedov_3d.toml",
                          ["sedov.nsubzones=1", "io.write_final=false", "io.write_initial=false",
                           "io.plotfile_interval_time=0", "io.checkpoint_interval_time=0",
                           "mesh.nblockx=4", "mesh.nblocky=4", "mesh.nblockz=4",
                           "mesh.lrefine_min=1", "mesh.lrefine_max=3", "mesh.nrefs=2",
                           "sedov.r_init=0.013671875", "mesh.refine_var_1=dens",
                           "mesh.refine_var_2=pres", "mesh.derefine_guard_layers=0",
                           "mesh.maxblocks=2000"]),
}


def one_run(problem, extra, ranks, steps):
    with tempfile.TemporaryDirectory() as d:
        cmd = [str(EXE), "run", str(ROOT / problem), "--dir", d, f"driver.nend={steps}", *extra]
        if ranks > 1:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-n", str(ranks)] + cmd
        subprocess.run(cmd, check=True, capture_output=True)
        return json.loads((Path(d) / "summary.json").read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args()
    if not EXE.exists():
        sys.exit("bench: build/bin/tessera is missing; run `make build` first")
    rows = []
    for name, (problem, extra) in CASES.items():
        for ranks in [int(r) for r in a.ranks.split(",")]:
            load = os.getloadavg()[0]
            rates = []
            for i in range(a.repeat):
                s = one_run(problem, extra, ranks, a.steps)
                rates.append(s["zone_updates_per_second"] / ranks)
                print(f"  {name} ranks={ranks} repeat {i + 1}/{a.repeat}: "
                      f"{rates[-1]:.3e} zone-updates/s/core", flush=True)
            rows.append({"case": name, "ranks": ranks, "leaf_blocks": s["leaf_blocks"],
                         "median_zone_updates_per_second_per_core": statistics.median(rates),
                         "all": rates, "loadavg_1min_before": load})
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "throughput.json").write_text(json.dumps(rows, indent=2))
    print(f"\n{'case':<16}{'ranks':>6}{'blocks':>8}{'median zu/s/core':>18}{'load':>7}")
    for r in rows:
        print(f"{r['case']:<16}{r['ranks']:>6}{r['leaf_blocks']:>8}"
              f"{r['median_zone_updates_per_second_per_core']:>18.3e}{r['loadavg_1min_before']:>7.2f}")
    uni = {r["ranks"]: r["median_zone_updates_per_second_per_core"] for r in rows
           if r["case"].startswith("uniform")}
    for r in rows:
        if r["case"].startswith("amr") and r["ranks"] in uni:
            print(f"{r['case']} / uniform, {r['ranks']} rank(s): "
                  f"{r['median_zone_updates_per_second_per_core'] / uni[r['ranks']]:.3f}")
    print(f"written: {out / 'throughput.json'}")


if __name__ == "__main__":
    main()

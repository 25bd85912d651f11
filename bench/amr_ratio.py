#!/usr/bin/env python3
"""AMR/uniform ratio of one or more builds: zone-updates/s per core of issue 26's AMR case
(problems/sedov_3d.toml with 4^3 root blocks, 3 levels, r_init 0.02734375: 176 leaves
after 20 steps) against problems/sedov_3d_uniform.toml (128^3), rounds alternating the
builds (AMR then uniform per build per round), so that machine noise hits all alike.

Reports per build: the median and best rate of each case, and three estimates of the
ratio: of the medians, the median of the rounds' ratios, of the bests. On a noisy machine
(single rounds 0.6-1.3 were seen) compare builds only within one run of this script, and
pool several rounds; the bests are the least disturbed runs.

    .venv/bin/python bench/amr_ratio.py [--rounds 7] [--steps 20] [--set key=value ...]
        EXE [EXE ...]
    # as on an AVX2 machine: x86-64-v3 builds, forced to AVX2
    .venv/bin/python bench/amr_ratio.py --set perf.simd=avx2 build-v3/bin/tessera OTHER
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from compare_builds import one_run  # one run's zone-updates/s from its summary.json

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "amr": ["problems/sedov_3d.toml", "mesh.nblockx=4", "mesh.nblocky=4", "mesh.nblockz=4",
            "mesh.lrefine_max=3", "sedov.r_init=0.02734375"],
    "uniform": ["problems/sedov_3d_uniform.toml"],
}


def case_run(exe, case, steps, extra):
    problem, *args = CASES[case]
    return one_run(exe, ROOT / problem, [f"driver.nend={steps}", "sedov.nsubzones=1", *args,
                                         *extra])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("exe", nargs="+", help="tessera executables to compare")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--set", action="append", default=[], help="key=value for every run")
    a = ap.parse_args()
    exes = [Path(e).resolve() for e in a.exe]
    for e in exes:
        if not e.exists():
            ap.error(f"no executable {e}")
    rates = {str(e): {"amr": [], "uniform": []} for e in exes}
    for r in range(a.rounds):
        line = []
        for e in exes:
            for case in ("amr", "uniform"):
                rates[str(e)][case].append(case_run(e, case, a.steps, a.set))
            amr, uni = rates[str(e)]["amr"][-1], rates[str(e)]["uniform"][-1]
            line.append(f"{e.parent.parent.name}/{e.name}: {amr:.3g} / {uni:.3g} = {amr / uni:.3f}")
        print(f"round {r + 1}/{a.rounds}: " + ";  ".join(line), flush=True)
    out = {"rounds": a.rounds, "steps": a.steps, "set": a.set, "builds": {}}
    for e, c in rates.items():
        amr, uni = c["amr"], c["uniform"]
        out["builds"][e] = {
            "amr_median": statistics.median(amr), "amr_best": max(amr),
            "uniform_median": statistics.median(uni), "uniform_best": max(uni),
            "ratio_of_medians": statistics.median(amr) / statistics.median(uni),
            "median_round_ratio": statistics.median(x / y for x, y in zip(amr, uni)),
            "ratio_of_bests": max(amr) / max(uni), "runs": c}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())

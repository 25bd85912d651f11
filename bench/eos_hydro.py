#!/usr/bin/env python3
"""Hydro with the Helmholtz EOS against the same shock tube with a gamma law: zone-updates
per second per core and the share of the step spent in timer region "eos", runs
interleaved, median of R repeats. The tube is problems/shocktube_helmholtz.toml made
longer (3200 zones) and cut to a fixed number of steps; the gamma-law twin starts from
the same pressures and densities (gamma = 4/3).

    .venv/bin/python bench/eos_hydro.py [--repeat 5] [--steps 150]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
COMMON = ["mesh.nblockx=200", "io.write_final=false", "io.plotfile_interval_time=0",
          "io.write_initial=false"]
CASES = {
    "helmholtz": [],
    "gamma": ["eos.type=gamma", "eos.gamma=1.3333333333333333", "sod.temp_left=0",
              "sod.temp_right=0", "sod.p_left=5.496234054993817e25",
              "sod.p_right=2.2598454211256093e24"],
}


def region_seconds(tree, name):
    """Sum of max_s over every region called `name` in a timers tree."""
    total = 0.0
    for node in tree if isinstance(tree, list) else [tree]:
        if node.get("name") == name:
            total += node.get("max_s", 0.0)
        total += region_seconds(node.get("children", []), name)
    return total


def one(case, steps):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([str(EXE), "run", str(ROOT / "problems/shocktube_helmholtz.toml"), "--dir",
                        d, f"driver.nend={steps}", *COMMON, *CASES[case]], check=True,
                       capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
    # The EOS inside the step (region hydro), not the set-up's.
    hydro = [n for n in s["timers"]["children"] if n["name"] == "hydro"]
    eos = region_seconds(hydro, "eos")
    return s["zone_updates_per_second_per_rank"], eos / s["evolution_seconds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=150)
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    res = {c: {"rate": [], "eos_share": []} for c in CASES}
    for r in range(a.repeat):
        for c in CASES:
            rate, share = one(c, a.steps)
            res[c]["rate"].append(rate)
            res[c]["eos_share"].append(share)
        print(f"  repeat {r + 1}: " + ", ".join(
            f"{c} {res[c]['rate'][-1]:.4g} zone-upd/s (eos {100 * res[c]['eos_share'][-1]:.1f} %)"
            for c in CASES), flush=True)
    out = {c: {"median_zone_updates_per_second": statistics.median(v["rate"]),
               "median_eos_share": statistics.median(v["eos_share"])} for c, v in res.items()}
    out["ratio_helmholtz_over_gamma"] = (out["helmholtz"]["median_zone_updates_per_second"] /
                                         out["gamma"]["median_zone_updates_per_second"])
    out["load_after"] = os.getloadavg()[0]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

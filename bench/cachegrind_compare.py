#!/usr/bin/env python3
"""Noise-free comparison of builds: instructions and simulated last-level cache misses per
zone-update under valgrind's cachegrind, for VMs whose timings scatter too much to resolve
a few per cent (single runs of one binary 0.6-1.4 of their median on some days).

    .venv/bin/python bench/cachegrind_compare.py EXE [EXE ...]
        [--problem problems/sedov_3d_uniform.toml] [--steps 2 4] [--ll-mib 2]
        [--set key=value ...]

Each executable runs the problem twice under `valgrind --tool=cachegrind --cache-sim=yes`
(32 KiB 8-way L1s and a last-level cache of --ll-mib MiB, 16-way, 64-byte lines: a
core's share of a real machine's, the same on every host; a size whose sets are not a
power of two is refused by valgrind), for the two step counts given; the difference between the two runs is the
steps' own cost (setup and the first steps cancel), divided by their zone-updates. The
counts are those of the simulated machine, the same on every run: instructions are exact,
cache misses are a model (no prefetcher, no out-of-order overlap), so they rank changes
that remove memory passes or instructions, not their time. The default mesh is 64^3
(4^3 blocks of 16^3) so that a run takes about a minute; give --set mesh.nblockx=... to
change it. Needs valgrind (Debian: apt install valgrind), which runs AVX2 code but not
AVX-512: compare -DTESSERA_ARCH=x86-64-v3 or portable builds, with the target forced by
TESSERA_SIMD=avx2 in the environment (builds older than perf.simd ignore it) or --set
perf.simd=avx2.
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["mesh.nblockx=4", "mesh.nblocky=4", "mesh.nblockz=4"]


def totals(text):
    """I refs and LL misses (all, read, write) from cachegrind's summary on stderr."""
    def num(pattern):
        m = re.search(pattern, text)
        if not m:
            raise SystemExit(f"cachegrind_compare: no '{pattern}' in valgrind's output:\n{text[-2000:]}")
        return int(m.group(1).replace(",", ""))
    return {"instructions": num(r"I\s+refs:\s+([\d,]+)"),
            "ll_misses": num(r"LL misses:\s+([\d,]+)"),
            "ll_read_misses": num(r"LL misses:\s+[\d,]+\s+\(\s*([\d,]+) rd"),
            "ll_write_misses": num(r"LL misses:\s+[\d,]+\s+\(\s*[\d,]+ rd\s+\+\s*([\d,]+) wr")}


def run(exe, problem, steps, ll_bytes, sets):
    with tempfile.TemporaryDirectory() as d:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--I1=32768,8,64",
               "--D1=32768,8,64", f"--LL={ll_bytes},16,64",
               f"--cachegrind-out-file={d}/cg.out", str(exe), "run", str(problem), "--dir", d,
               f"driver.nend={steps}", *sets]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"cachegrind_compare: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
        t = totals(p.stderr)
        t["zone_updates"] = json.loads((Path(d) / "summary.json").read_text())["zone_updates"]
        return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("exes", nargs="+", help="tessera executables (the first is the reference)")
    ap.add_argument("--problem", default=str(ROOT / "problems" / "sedov_3d_uniform.toml"))
    ap.add_argument("--steps", nargs=2, type=int, default=[2, 4], metavar=("FEW", "MORE"))
    ap.add_argument("--ll-mib", type=float, default=2.0, help="simulated last-level cache")
    ap.add_argument("--set", action="append", default=[], help="key=value for every run")
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("cachegrind_compare: valgrind not found (Debian: apt install valgrind)")
    if a.steps[1] <= a.steps[0]:
        sys.exit("cachegrind_compare: --steps FEW MORE needs MORE > FEW")
    sets = [*SMALL, *a.set]
    ll = int(a.ll_mib * 1024 * 1024)
    out = {"problem": a.problem, "steps": a.steps, "ll_bytes": ll, "set": sets, "builds": {}}
    for exe in a.exes:
        print(f"{exe}: {a.steps[0]} and {a.steps[1]} steps under cachegrind ...", flush=True)
        few, more = (run(exe, a.problem, n, ll, sets) for n in a.steps)
        zu = more["zone_updates"] - few["zone_updates"]
        if zu <= 0:
            sys.exit(f"cachegrind_compare: {exe}: no zone-updates between {a.steps[0]} and "
                     f"{a.steps[1]} steps (did the run stop early?)")
        per = {k: (more[k] - few[k]) / zu for k in few if k != "zone_updates"}
        out["builds"][exe] = {"per_zone_update": per, "zone_updates": zu}
        print("  per zone-update: " + ", ".join(f"{k} {v:.2f}" for k, v in per.items()), flush=True)
    ref = out["builds"][a.exes[0]]["per_zone_update"]
    for exe in a.exes[1:]:
        cur = out["builds"][exe]["per_zone_update"]
        out["builds"][exe]["ratio_to_first"] = {k: cur[k] / ref[k] if ref[k] else None for k in cur}
        print(f"{exe} / {a.exes[0]}: " + ", ".join(
            f"{k} {cur[k] / ref[k]:.3f}" for k in cur if ref[k]))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

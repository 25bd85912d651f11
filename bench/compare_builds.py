#!/usr/bin/env python3
"""Hot-path change check: zone-updates/s of two builds of Tessera on one problem, runs
interleaved (old, new, old, new, ...) so machine noise hits both alike; reports the median
of each and their ratio, with the load average before the runs.

    .venv/bin/python bench/compare_builds.py --base 85700cd [--repeat 7] [--steps 20]
        [--problem problems/sedov_3d_uniform.toml] [--set key=value ...]
        [--arch x86-64-v3 --new-exe build-v3/bin/tessera]
    .venv/bin/python bench/compare_builds.py --base-exe build-native/bin/tessera \
        --new-exe build/bin/tessera   # two builds of this tree (native vs portable)

--base REV is built once (Release, like build/) in a git worktree under build-base/REV-ARCH
(reused if present); the new executable is build/bin/tessera, or --new-exe. --arch says
how: "portable" (no -march, the default configuration), "native" (-DTESSERA_NATIVE=ON),
or an instruction set (-DTESSERA_ARCH=ARCH: x86-64-v3 measures as on an AVX2 processor).
Without --arch the base is built as the new executable was (`tessera simd --json` →
compiled_for; portable for a build too old to say), so that like is compared with like.
(A revision older than the runtime dispatch has no vectorised kernels in a portable build:
compare such a one with --arch native or a named set.) Parameters a build does not know
(renamed keys) can be given per build with --set-base / --set-new. --base-exe takes
an executable already built from this tree instead of --base (e.g. a native build,
-DTESSERA_NATIVE=ON in build-native/, against the default portable one).
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


def build_base(rev, arch="", like=None):
    """Build revision rev with -march arch ("portable": none; "native"; or a named set); no
    arch: as the executable `like` was built (portable if none is given). Returns the
    executable, its worktree and the arch it was built with."""
    arch = arch or (compiled_for(like) if like else "portable")
    tree = ROOT / "build-base" / f"{rev}-{arch}"
    exe = tree / "build" / "bin" / "tessera"
    if exe.exists():
        return exe, tree, arch
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev],
                       check=True, capture_output=True)
    extra = {"portable": ["-DTESSERA_NATIVE=OFF"],
             "native": ["-DTESSERA_NATIVE=ON"]}.get(arch, [f"-DTESSERA_ARCH={arch}"])
    subprocess.run(["cmake", "--preset", "release", *extra], cwd=tree, check=True,
                   capture_output=True)
    print(f"building {rev} in {tree} ...", flush=True)
    subprocess.run(["cmake", "--build", "build", "-j2", "--target", "tessera"], cwd=tree,
                   check=True, capture_output=True)
    return exe, tree, arch


def compiled_for(exe):
    """What exe's code outside the dispatched kernels was compiled for (its `tessera simd
    --json`): "portable", "native" or a -march value; "portable" if it does not say."""
    p = subprocess.run([str(exe), "simd", "--json"], capture_output=True, text=True)
    try:
        arch = json.loads(p.stdout).get("compiled_for", "portable")
    except ValueError:
        arch = "portable"
    return "portable" if arch == "unknown" else arch


def one_run(exe, problem, args):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([str(exe), "run", str(problem), "--dir", d, *args], check=True,
                       capture_output=True)
        return json.loads((Path(d) / "summary.json").read_text())["zone_updates_per_second"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", help="git revision of the old build")
    ap.add_argument("--base-exe", help="an executable of this tree instead of --base")
    ap.add_argument("--problem", default="problems/sedov_3d_uniform.toml")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--set", action="append", default=[], help="key=value for both builds")
    ap.add_argument("--set-base", action="append", default=[])
    ap.add_argument("--set-new", action="append", default=[])
    ap.add_argument("--arch", default="",
                    help="the base build: portable, native, or a -march value (default: as "
                         "the new executable was built)")
    ap.add_argument("--new-exe", default=str(ROOT / "build" / "bin" / "tessera"))
    a = ap.parse_args()
    if bool(a.base) == bool(a.base_exe):
        ap.error("give one of --base REV and --base-exe EXE")
    if a.base_exe:
        base_exe, base_tree = Path(a.base_exe).resolve(), ROOT
        arch = compiled_for(base_exe)
    else:
        base_exe, base_tree, arch = build_base(a.base, a.arch, like=a.new_exe)
    new_exe = Path(a.new_exe)
    common = [f"driver.nend={a.steps}", "sedov.nsubzones=1", *a.set]
    runs = {"base": [], "new": []}
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    for r in range(a.repeat):
        runs["base"].append(one_run(base_exe, base_tree / a.problem, common + a.set_base))
        runs["new"].append(one_run(new_exe, ROOT / a.problem, common + a.set_new))
        print(f"  repeat {r + 1}: base {runs['base'][-1]:.4g}  new {runs['new'][-1]:.4g}",
              flush=True)
    mb, mn = statistics.median(runs["base"]), statistics.median(runs["new"])
    # Each pair ran back to back: the median of the pair ratios is the least sensitive to
    # load that changes over the run (other jobs on a shared machine).
    pairs = statistics.median(n / b for b, n in zip(runs["base"], runs["new"]))
    out = {"problem": a.problem, "base": a.base or str(base_exe), "arch": arch,
           "new_exe": str(new_exe), "repeat": a.repeat, "steps": a.steps,
           "median_zone_updates_per_second": {"base": mb, "new": mn}, "ratio_new_over_base": mn / mb,
           "median_pair_ratio": pairs,
           "runs": runs, "load_after": os.getloadavg()[0]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Refactoring check: every problem of problems/ run by an older build and by this one for
a few steps on 1 and 2 ranks, every output file (plotfiles, checkpoints, particle files)
compared bitwise with tests/python/h5compare.py (creation times and checksums aside;
runtime parameters that only one build declares are allowed, any other difference is
reported). Then one checkpoint of the older build is restarted by this one and continued;
both builds continue it from there and must write the same files.

    .venv/bin/python tools/compare_outputs.py --base REV | --base-exe PATH
        [--arch portable|native|MARCH] [--steps 6] [--ranks 1 2] [--problem NAME ...]
        [--allow-param KEY ...]

--base REV is built as bench/compare_builds.py builds it (a worktree under build-base/).
Prints one line per (problem, ranks) and exits 1 if any output differs.
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "python"))
from compare_builds import build_base  # noqa: E402
from h5compare import differing_datasets, params_of  # noqa: E402
import h5py  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]


def run(exe, problem, out, ranks, extra):
    cmd = [str(exe), "run", str(problem), "--dir", str(out), *extra]
    if ranks > 1:
        cmd = MPIRUN + ["-n", str(ranks)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    # The first "tessera: error" line, or the end of stderr.
    err = [ln for ln in p.stderr.splitlines() if ln.startswith("tessera: error")]
    return p.returncode, err[0] if err else p.stderr[-600:]


def outputs(d):
    return sorted(f for f in os.listdir(d) if "_hdf5_" in f and not f.endswith(".tmp"))


def only_in_one(a, b):
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        pa, pb = params_of(fa), params_of(fb)
    return set(pa) ^ set(pb)


ALLOWED = set()


def compare_dirs(da, db):
    fa, fb = outputs(da), outputs(db)
    if fa != fb:
        return [f"file sets differ: {sorted(set(fa) ^ set(fb))}"]
    bad = []
    for f in fa:
        a, b = Path(da) / f, Path(db) / f
        diff = differing_datasets(a, b, allowed_params=only_in_one(a, b) | ALLOWED)
        bad += [f"{f}: {d}" for d in diff]
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--base", help="git revision of the older build")
    g.add_argument("--base-exe", help="the older build's tessera executable")
    ap.add_argument("--new-exe", default=str(ROOT / "build" / "bin" / "tessera"))
    ap.add_argument("--arch", default="",
                    help="how --base is built: portable, native, or a -march value (default: "
                         "as the new executable was built)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--problem", nargs="*", default=None, help="problem file stems")
    ap.add_argument("--allow-param", action="append", default=[],
                    help="a runtime parameter whose stored value may differ (a changed default)")
    a = ap.parse_args()
    ALLOWED.update(a.allow_param)
    base = Path(a.base_exe) if a.base_exe else build_base(a.base, a.arch, like=a.new_exe)[0]
    new = Path(a.new_exe)
    names = a.problem or sorted(p.stem for p in (ROOT / "problems").glob("*.toml"))
    step = max(1, a.steps // 2)
    extra = [f"driver.nend={a.steps}", f"io.plotfile_interval_steps={step}",
             f"io.checkpoint_interval_steps={step}"]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            problem = ROOT / "problems" / f"{name}.toml"
            for ranks in a.ranks:
                da, db = Path(tmp) / f"{name}-{ranks}-a", Path(tmp) / f"{name}-{ranks}-b"
                da.mkdir()
                db.mkdir()
                ra, ea = run(base, problem, da, ranks, extra)
                rb, eb = run(new, problem, db, ranks, extra)
                if ra != 0 and "unknown parameter" in ea:
                    print(f"{name:32s} {ranks} rank(s): new problem (the older build rejects it)")
                    continue
                if ra != 0 or rb != 0:
                    same = ra == rb
                    print(f"{name:32s} {ranks} rank(s): exit {ra} / {rb}"
                          f"{'' if same else '  DIFFERENT EXIT'}"
                          f"{'' if ra == 0 else ' (older: ' + ea.strip().splitlines()[-1] + ')'}")
                    failed += not same
                    continue
                bad = compare_dirs(da, db)
                # A checkpoint of the older build continued by both builds: the same files
                # (a restart that is not bitwise against the uninterrupted run, such as
                # PIC with absorbing faces, is then the same in both).
                chks = [f for f in outputs(da) if "_chk_" in f]
                if len(chks) >= 2 and ranks == a.ranks[0]:
                    ra_, rb_ = Path(tmp) / f"{name}-{ranks}-ra", Path(tmp) / f"{name}-{ranks}-rb"
                    ra_.mkdir()
                    rb_.mkdir()
                    rst = ["--restart", str(da / chks[-2])]
                    x, ex = run(base, problem, ra_, ranks, extra + rst)
                    y, ey = run(new, problem, rb_, ranks, extra + rst)
                    if x != 0 or y != 0:
                        bad.append(f"restart from {chks[-2]}: exit {x} / {y}: {ey or ex}")
                    else:
                        bad += [f"restart: {d}" for d in compare_dirs(ra_, rb_)]
                print(f"{name:32s} {ranks} rank(s): {len(outputs(da))} files, "
                      f"{'identical' if not bad else 'DIFFERENT'}")
                for line in bad[:6]:
                    print("    " + line)
                failed += bool(bad)
    print(f"{failed} of {len(names) * len(a.ranks)} runs differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

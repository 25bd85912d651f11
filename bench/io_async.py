#!/usr/bin/env python3
"""Asynchronous-checkpoint benchmark: the Flash-X experiment on this machine.

The same run (3-D Sedov, uniform 64^3 in 16^3 blocks, PLM + HLLC) with a checkpoint every
CHK steps, in three modes on 1 and 2 ranks, interleaved, REPEAT times each (median):

  none   no outputs at all: the compute baseline
  sync   checkpoints written by the step loop (io.async=false)
  async  checkpoints handed to the I/O thread (io.async=true)
  async-low, async-idle  the same with io.thread_priority=low / idle (with --priorities)

Reported per (ranks, mode): total wall time, step-loop (evolution) time, checkpoint time
the step loop was blocked vs the time the writes took, the hidden fraction
1 - blocked/write, and the overhead the I/O thread adds to compute:
(evolution - blocked)_async / evolution_none - 1, i.e. how much slower the steps got
while writes ran beside them. Results go to OUT/io_async.json and a bar chart.

    .venv/bin/python bench/io_async.py [--repeat 5] [--steps 60] [--chk 5] [--out runs/bench]

--problem tracers runs the Flash-X study's own case instead: problems/sod_3d_tracers.toml
(3-D Sod along x, AMR, 16,384 tracers) with its schedule: a plotfile and a particle file
every 10 steps and a checkpoint (grid + particles) every --chk steps (default 20). Blocked
and write times are then summed over the three kinds of output (io_async_tracers.json).
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
PROBLEM = ROOT / "problems" / "sedov_3d_uniform.toml"
BASE = ["mesh.nblockx=4", "mesh.nblocky=4", "mesh.nblockz=4", "sedov.nsubzones=1",
        "io.write_initial=false", "io.write_final=false", "io.plotfile_interval_steps=0",
        "io.plotfile_interval_time=0", "io.checkpoint_interval_time=0"]


TRACERS = ROOT / "problems" / "sod_3d_tracers.toml"
TRACERS_BASE = ["io.write_initial=false", "io.write_final=false", "io.plotfile_interval_time=0",
                "io.checkpoint_interval_time=0"]


def one_run(mode, ranks, steps, chk, stage, tracers=False):
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        extra = [f"driver.nend={steps}"]
        if tracers and mode == "none":
            extra += ["io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=0"]
        if mode != "none":
            extra += [f"io.checkpoint_interval_steps={chk}", "io.checkpoint_keep=2",
                      f"io.async={'true' if mode.startswith('async') else 'false'}"]
        if mode.startswith("async-"):
            extra.append(f"io.thread_priority={mode.split('-', 1)[1]}")
        if stage:
            extra.append(f"io.stage_dir={stage}")
        cmd = [str(EXE), "run", str(TRACERS if tracers else PROBLEM), "--dir", d,
               *(TRACERS_BASE if tracers else BASE), *extra]
        if ranks > 1:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-n", str(ranks)] + cmd
        subprocess.run(cmd, check=True, capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
    kinds = ["checkpoint", "plotfile", "particles"] if tracers else ["checkpoint"]
    io = [s["io"][k] for k in kinds if k in s["io"]]
    return {"wall": s["wall_seconds"], "evolution": s["evolution_seconds"],
            "blocked": sum(c["blocked_seconds"] for c in io),
            "write": sum(c["write_seconds"] for c in io), "count": sum(c["count"] for c in io),
            "bytes": sum(c["bytes"] for c in io), "fallbacks": sum(c["sync_fallbacks"] for c in io)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--chk", type=int, default=0,
                    help="steps between checkpoints (default 5; 20 with --problem tracers)")
    ap.add_argument("--problem", choices=["sedov", "tracers"], default="sedov")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--stage", default="", help="io.stage_dir for the sync/async runs")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    ap.add_argument("--priorities", default="",
                    help="also async with these io.thread_priority values, e.g. low,idle")
    a = ap.parse_args()
    tracers = a.problem == "tracers"
    a.chk = a.chk or (20 if tracers else 5)
    if not EXE.exists():
        sys.exit("bench: build/bin/tessera is missing; run `make build` first")
    (ROOT / "runs").mkdir(exist_ok=True)
    modes = ["none", "sync", "async"] + [f"async-{p}" for p in a.priorities.split(",") if p]
    raw = {}
    load0 = os.getloadavg()
    for ranks in [int(r) for r in a.ranks.split(",")]:
        for rep in range(a.repeat):
            for mode in modes:  # interleaved, so drift in the machine's load hits all modes
                r = one_run(mode, ranks, a.steps, a.chk, a.stage if mode != "none" else "",
                            tracers)
                raw.setdefault(f"{ranks}/{mode}", []).append(r)
                print(f"  ranks={ranks} {mode:10s} rep {rep + 1}/{a.repeat}: wall {r['wall']:.2f} s,"
                      f" loop {r['evolution']:.2f} s, blocked {r['blocked']:.3f} s of"
                      f" {r['write']:.3f} s written", flush=True)
    med = {k: {m: statistics.median(x[m] for x in v) for m in v[0]} for k, v in raw.items()}
    rows = []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        base = med[f"{ranks}/none"]["evolution"]
        for mode in modes:
            m = med[f"{ranks}/{mode}"]
            compute = m["evolution"] - m["blocked"]
            rows.append({"ranks": ranks, "mode": mode, **m,
                         "hidden_fraction": (1 - m["blocked"] / m["write"]) if m["write"] else None,
                         "compute_overhead": compute / base - 1})
    what = "plotfile + particle file every 10 steps, " if tracers else ""
    print(f"\n{a.problem}: median of {a.repeat}; {a.steps} steps, {what}checkpoint every {a.chk} steps;"
          f" load {load0[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'ranks':>5} {'mode':>10} {'wall s':>8} {'loop s':>8} {'blocked s':>10} "
          f"{'write s':>8} {'hidden':>7} {'compute +':>9} {'chk MB':>7}")
    for r in rows:
        hid = "-" if r["hidden_fraction"] is None else f"{100 * r['hidden_fraction']:.1f}%"
        print(f"{r['ranks']:>5} {r['mode']:>10} {r['wall']:>8.2f} {r['evolution']:>8.2f} "
              f"{r['blocked']:>10.3f} {r['write']:>8.3f} {hid:>7} "
              f"{100 * r['compute_overhead']:>8.1f}% {r['bytes'] / 1e6:>7.1f}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "io_async_tracers" if tracers else "io_async"
    (out / f"{stem}.json").write_text(json.dumps(
        {"rows": rows, "raw": raw, "steps": a.steps, "chk": a.chk, "repeat": a.repeat,
         "load_start": load0, "load_end": os.getloadavg()}, indent=1))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        labels = [f"{r['ranks']}r {r['mode']}" for r in rows]
        loop = [r["evolution"] for r in rows]
        blocked = [r["blocked"] for r in rows]
        ax.bar(labels, [l - b for l, b in zip(loop, blocked)], label="compute")
        ax.bar(labels, blocked, bottom=[l - b for l, b in zip(loop, blocked)],
               label="blocked on outputs")
        ax.set_ylabel("step-loop seconds (median)")
        ax.set_title(f"{a.problem}: checkpoint every {a.chk} steps: sync vs async")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / f"{stem}.png", dpi=120)
        print(f"written: {out / (stem + '.json')}, {out / (stem + '.png')}")
    except ImportError:
        print(f"written: {out / (stem + '.json')}")


if __name__ == "__main__":
    main()

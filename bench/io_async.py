#!/usr/bin/env python3
"""Asynchronous-checkpoint benchmark: the Flash-X experiment on this machine.

The same run (3-D Sedov, uniform 64^3 in 16^3 blocks, PLM + HLLC) with a checkpoint every
CHK steps, in three modes on 1 and 2 ranks, interleaved, REPEAT times each (median):

  none   no outputs at all: the compute baseline
  sync   checkpoints written by the step loop (io.async=false)
  async  checkpoints handed to the I/O thread (io.async=true)
  async-low, async-idle  the same with io.thread_priority=low / idle (with --priorities)
  async-yield  the same with io.mpi_wait=yield (with --waits yield; combinations such as
               async-idle-yield come from both options)
  async-node   the same with io.writer=node (with --writers node; async-node-low, ...)
  async-rank   the same with io.writer=rank (with --writers rank): every rank's I/O thread
               in a collective write. Plain "async" takes io.writer's default, auto
               (issue 46): node on one node with several ranks, rank on one rank

Reported per (ranks, mode): total wall time, step-loop (evolution) time, checkpoint time
the step loop was blocked vs the time the writes took, the hidden fraction
1 - blocked/write, and the overhead the I/O thread adds to compute:
(evolution - blocked)_async / evolution_none - 1, i.e. how much slower the steps got
while writes ran beside them. "loop io" is the step loop's whole share of the outputs:
its timer region io/checkpoint (the units' deferred-state sync before the snapshot, e.g.
hydro's EOS refresh, plus the blocked time spent there) and io/wait_capture (the wait for
the I/O thread's copy of unk before the next step modifies it); "loop +" is
evolution_async / evolution_none - 1, everything the outputs cost the step loop.

The final checkpoint: io.write_final=false here, so every checkpoint counted is one of
the schedule, and each can be hidden. A run's final checkpoint (io.write_final=true, or
a stop signal) is written synchronously (force_sync: the run must not end before it is
durable), so it can never be hidden; it is timed on its own with --final: one more run
per rank count and mode with io.write_final=true, whose final checkpoint's blocked time
(summary.json io.checkpoint.forced, which the run leaves out of its hidden fraction) is
reported as "final s" (median), apart from the hidden fraction of the scheduled ones. Results go to OUT/io_async.json and a bar chart.

    .venv/bin/python bench/io_async.py [--repeat 5] [--steps 60] [--chk 5] [--out runs/bench]

--problem tracers runs the Flash-X study's own case instead: problems/sod_3d_tracers.toml
(3-D Sod along x, AMR, 16,384 tracers) with its schedule: a plotfile and a particle file
every 10 steps and a checkpoint (grid + particles) every --chk steps (default 20). Blocked
and write times are then summed over the three kinds of output (io_async_tracers.json).

--problem bubble runs the study's second case: Flash-X's deforming bubble
(problems/deforming_bubble_2d.toml: a level set on a narrow-band adaptive mesh, finest
256^2, the mesh changing every few steps) for --steps steps (default 400) with a checkpoint
every --chk steps (default 20), and reports besides the I/O share of the step loop
(blocked / evolution, the study's "I/O share") and the regrids that changed the mesh per
checkpoint interval (io_async_bubble.json and .png: the study's Fig. 6 as far as one
machine allows).

    .venv/bin/python bench/io_async.py --problem bubble --repeat 3

--problem ssw runs the study's third case: thornado's streaming sine wave in 3-D
(problems/streaming_sine_wave_3d.toml, 32^3, M1 transport with --groups groups, default 8:
4 x 8 = 32 moments per zone besides the fluid's) for --steps steps (default 40) with a
checkpoint every --chk (default 10), and reports the checkpoint bytes per zone;
--layout zone_major runs it (or any problem) in the other unk layout.
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
BUBBLE = ROOT / "problems" / "deforming_bubble_2d.toml"
BUBBLE_BASE = ["io.write_initial=false", "io.write_final=false", "io.plotfile_interval_steps=0",
               "driver.log_every=1000"]
SSW = ROOT / "problems" / "streaming_sine_wave_3d.toml"
SSW_BASE = BUBBLE_BASE + ["io.plotfile_interval_time=0", "io.plot_vars=dens"]
EXTRA = []  # --layout, --groups


def find_region(node, name):
    """Seconds (max over ranks) of the first timer region called `name`, or 0."""
    if node.get("name") == name:
        return node.get("max_s", 0.0)
    for c in node.get("children", []):
        t = find_region(c, name)
        if t:
            return t
    return 0.0


def one_run(mode, ranks, steps, chk, stage, tracers=False, final=False, bubble=False, ssw=False):
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        extra = [f"driver.nend={steps}"]
        if final:
            extra.append("io.write_final=true")
        if tracers and mode == "none":
            extra += ["io.plotfile_interval_steps=0", "io.checkpoint_interval_steps=0"]
        if mode != "none":
            extra += [f"io.checkpoint_interval_steps={chk}", "io.checkpoint_keep=2",
                      f"io.async={'true' if mode.startswith('async') else 'false'}"]
        for opt in mode.split("-")[1:]:
            if opt == "yield":
                extra.append("io.mpi_wait=yield")
            elif opt in ("node", "rank"):
                extra.append(f"io.writer={opt}")
            else:
                extra.append(f"io.thread_priority={opt}")
        if stage:
            extra.append(f"io.stage_dir={stage}")
        if bubble or ssw:
            cmd = [str(EXE), "run", str(BUBBLE if bubble else SSW), "--dir", d,
                   *(BUBBLE_BASE if bubble else SSW_BASE), *extra, *EXTRA]
            if mode == "none":
                cmd.append("io.checkpoint_interval_steps=0")
        else:
            cmd = [str(EXE), "run", str(TRACERS if tracers else PROBLEM), "--dir", d,
                   *(TRACERS_BASE if tracers else BASE), *extra]
        if ranks > 1:
            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-n", str(ranks)] + cmd
        subprocess.run(cmd, check=True, capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
    kinds = ["checkpoint", "plotfile", "particles"] if tracers else ["checkpoint"]
    io = [s["io"][k] for k in kinds if k in s["io"]]
    regions = ["io/checkpoint", "io/wait_capture"] + (["io/plotfile"] if tracers else [])
    loop_io = sum(find_region(s["timers"], r) for r in regions)
    return {"wall": s["wall_seconds"], "evolution": s["evolution_seconds"], "loop_io": loop_io,
            "blocked": sum(c["blocked_seconds"] for c in io),
            "write": sum(c["write_seconds"] for c in io), "count": sum(c["count"] for c in io),
            "regrids": s.get("regrid", {}).get("changed", 0),
            "zones": s["leaf_blocks"] * s["nxb"] ** s["ndim"],
            "bytes": sum(c["bytes"] for c in io), "fallbacks": sum(c["sync_fallbacks"] for c in io),
            # the outputs forced synchronous (the final checkpoint), as the run reports them
            # (builds before io.*.forced: -1)
            "forced_blocked": sum(c["forced"]["blocked_seconds"] for c in io)
            if all("forced" in c for c in io) else -1.0}


def main():
    global EXE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=0,
                    help="steps per run (default 60; 400 with --problem bubble)")
    ap.add_argument("--chk", type=int, default=0,
                    help="steps between checkpoints (default 5; 20 with --problem tracers)")
    ap.add_argument("--problem", choices=["sedov", "tracers", "bubble", "ssw"], default="sedov")
    ap.add_argument("--layout", default="", help="mesh.layout for every run (zone_major)")
    ap.add_argument("--groups", type=int, default=8, help="m1.groups of --problem ssw")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--stage", default="", help="io.stage_dir for the sync/async runs")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    ap.add_argument("--priorities", default="",
                    help="also async with these io.thread_priority values, e.g. low,idle")
    ap.add_argument("--waits", default="",
                    help="also async with io.mpi_wait=yield, alone and with each priority")
    ap.add_argument("--writers", default="",
                    help="also async with io.writer=node (alone, with each priority and wait) "
                    "and/or rank (alone and with yield)")
    ap.add_argument("--modes", default="",
                    help="exactly these modes, e.g. none,sync,async,async-node-yield (none first)")
    ap.add_argument("--exe", default=str(EXE),
                    help="the tessera executable (another build's, for a before/after)")
    ap.add_argument("--final", action="store_true",
                    help="also time the final (synchronous) checkpoint: one run more per mode")
    a = ap.parse_args()
    EXE = Path(a.exe)
    tracers = a.problem == "tracers"
    bubble = a.problem == "bubble"
    ssw = a.problem == "ssw"
    a.chk = a.chk or (20 if tracers or bubble else 10 if ssw else 5)
    a.steps = a.steps or (400 if bubble else 40 if ssw else 60)
    if a.layout:
        EXTRA.append(f"mesh.layout={a.layout}")
    if ssw:
        EXTRA.append(f"m1.groups={a.groups}")
    if not EXE.exists():
        sys.exit(f"bench: {EXE} is missing; run `make build` first")
    (ROOT / "runs").mkdir(exist_ok=True)
    prios = [p for p in a.priorities.split(",") if p]
    modes = ["none", "sync", "async"] + [f"async-{p}" for p in prios]
    if "yield" in a.waits.split(","):
        modes += ["async-yield"] + [f"async-{p}-yield" for p in prios]
    if "rank" in a.writers.split(","):
        modes += ["async-rank"] + (["async-rank-yield"] if "yield" in a.waits.split(",") else [])
    if "node" in a.writers.split(","):
        modes += ["async-node"] + [f"async-node-{p}" for p in prios]
        if "yield" in a.waits.split(","):
            modes += ["async-node-yield"]
    if a.modes:
        modes = a.modes.split(",")
    raw = {}
    load0 = os.getloadavg()
    for ranks in [int(r) for r in a.ranks.split(",")]:
        for rep in range(a.repeat):
            for mode in modes:  # interleaved, so drift in the machine's load hits all modes
                r = one_run(mode, ranks, a.steps, a.chk, a.stage if mode != "none" else "",
                            tracers, bubble=bubble, ssw=ssw)
                raw.setdefault(f"{ranks}/{mode}", []).append(r)
                print(f"  ranks={ranks} {mode:10s} rep {rep + 1}/{a.repeat}: wall {r['wall']:.2f} s,"
                      f" loop {r['evolution']:.2f} s, blocked {r['blocked']:.3f} s of"
                      f" {r['write']:.3f} s written", flush=True)
                if a.final and mode != "none":
                    f = one_run(mode, ranks, a.steps, a.chk, a.stage, tracers, final=True,
                                bubble=bubble, ssw=ssw)
                    raw.setdefault(f"{ranks}/{mode}/final", []).append(f)
    med = {k: {m: statistics.median(x[m] for x in v) for m in v[0]} for k, v in raw.items()}
    rows = []
    for ranks in [int(r) for r in a.ranks.split(",")]:
        base = med[f"{ranks}/none"]["evolution"]
        for mode in modes:
            m = med[f"{ranks}/{mode}"]
            compute = m["evolution"] - m["blocked"]
            fin = med.get(f"{ranks}/{mode}/final")
            rows.append({"ranks": ranks, "mode": mode, **m,
                         "hidden_fraction": (1 - m["blocked"] / m["write"]) if m["write"] else None,
                         "blocked_ms_per_output": 1e3 * m["blocked"] / m["count"] if m["count"] else 0,
                         "loop_share": (m["loop_io"] / m["write"]) if m["write"] else None,
                         # the study's I/O share: the step loop's time blocked on outputs
                         "io_share": m["blocked"] / m["evolution"] if m["evolution"] else 0,
                         "regrids_per_interval": m["regrids"] * a.chk / a.steps,
                         "bytes_per_zone": m["bytes"] / m["count"] / m["zones"] if m["count"] else 0,
                         "compute_overhead": compute / base - 1,
                         "loop_overhead": m["evolution"] / base - 1,
                         # the final checkpoint's own blocked time (--final runs); a build
                         # that does not report it: blocked of the final run minus the
                         # scheduled ones' mean times their count (one fewer: the final
                         # checkpoint replaces the scheduled one of the last step)
                         "final_blocked": None if not fin else fin["forced_blocked"]
                         if fin["forced_blocked"] >= 0
                         else fin["blocked"] - m["blocked"] * (fin["count"] - 1) / m["count"]})
    what = "plotfile + particle file every 10 steps, " if tracers else ""
    print(f"\n{a.problem}: median of {a.repeat}; {a.steps} steps, {what}checkpoint every {a.chk} steps;"
          f" load {load0[0]:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'ranks':>5} {'mode':>16} {'wall s':>7} {'loop s':>7} {'blocked s':>9} "
          f"{'ms/out':>7} {'write s':>7} {'hidden':>7} {'loop io s':>9} {'compute +':>9} "
          f"{'loop +':>7} {'final s':>7} {'chk MB':>7} {'io share':>8} {'regrids/chk':>11} "
          f"{'B/zone':>7}")
    for r in rows:
        hid = "-" if r["hidden_fraction"] is None else f"{100 * r['hidden_fraction']:.1f}%"
        fin = "-" if r["final_blocked"] is None else f"{r['final_blocked']:.3f}"
        print(f"{r['ranks']:>5} {r['mode']:>16} {r['wall']:>7.2f} {r['evolution']:>7.2f} "
              f"{r['blocked']:>9.3f} {r['blocked_ms_per_output']:>7.2f} {r['write']:>7.3f} "
              f"{hid:>7} {r['loop_io']:>9.3f} {100 * r['compute_overhead']:>8.1f}% "
              f"{100 * r['loop_overhead']:>6.1f}% {fin:>7} {r['bytes'] / 1e6:>7.1f} "
              f"{100 * r['io_share']:>7.1f}% {r['regrids_per_interval']:>11.1f} "
              f"{r['bytes_per_zone']:>7.0f}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = ("io_async_tracers" if tracers else "io_async_bubble" if bubble
            else f"io_async_ssw{a.groups}" if ssw else "io_async")
    if a.layout:
        stem += f"_{a.layout}"
    (out / f"{stem}.json").write_text(json.dumps(
        {"rows": rows, "raw": raw, "steps": a.steps, "chk": a.chk, "repeat": a.repeat,
         "load_start": load0, "load_end": os.getloadavg(), "exe": str(EXE)}, indent=1))
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

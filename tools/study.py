#!/usr/bin/env python3
"""The studies Tessera reproduces, one command each (`make studies` lists them, `make
study-NAME` runs one): each writes a CSV, a PNG and a short Markdown report into
runs/studies/NAME/, stating the machine (processor, cores, memory, kernel, page sizes,
transparent huge pages, counter availability) and labelling what was unavailable or
emulated. The runs themselves are the experiment harness's (`python -m tessera bench`,
python/tessera/bench.py): this script only chooses the matrix and writes the report.

    .venv/bin/python tools/study.py list
    .venv/bin/python tools/study.py hugepages [--out DIR] [--repeat R] [--steps N]
    .venv/bin/python tools/study.py v2d [--out DIR] [--repeat R] [--ranks N]
    .venv/bin/python tools/study.py async [--out DIR] [--repeat R] [--ranks N]
    .venv/bin/python tools/study.py scaling [--out DIR] [--repeat R] [--ranks N] [--steps K]
    .venv/bin/python tools/study.py weak [--out DIR] [--ranks N]
    .venv/bin/python tools/study.py scale-model [--out DIR]

weak: tools/study_weak.py (its docstring): the communication census of weak scaling.
scale-model: tools/study_scale_model.py (its docstring): a model of the step at scale from
the weak-scaling census (run study-weak first).

hugepages: the huge-page papers' two tests, the "EOS" test (problems/snia_2d.toml) and the
"3-d Hydro" test (problems/sedov_3d.toml), each with memory.pages = none, thp, hugetlb
(what each run achieved is read back from its summary.json), counters cycles,
instructions, dTLB-load-misses, LLC-load-misses and task-clock on every timer region
(reported "unavailable (reason)" where the machine has none). Table: evolution seconds
(trimmed mean of R), ratio to none, huge bytes achieved, counters. Figure: ratio bars.

v2d: the Ookami report's V2D table: problems/diffusion_pulse_2d.toml on every NX1 x NX2
process grid of 1..N ranks (mesh.distribution = "cartesian"), matrix-free BiCGSTAB +
Jacobi and hypre BiCGSTAB + BoomerAMG: seconds, iterations per solve, ms per iteration.

scaling: the Ookami report's strong-scaling method on the EOS test's 3-D sibling
(problems/snia_3d.toml, three-stage burning): one checkpoint written at step 4 on one rank,
then restarted on 1, 2, 4, ... up to N ranks for K more steps (regridding every 2), R runs
each (trimmed mean, `tessera bench --scaling --restart`). Table: seconds, speed-up and
parallel efficiency against 1 rank, zone-updates/s per core, the largest rank's peak RSS
and the memory per node (ranks x that: all ranks on one node, an upper bound). Figure:
evolution time and efficiency against ranks.

async: Flash-X's asynchronous-I/O study as far as one machine allows: its first problem
(Sod with tracers, problems/sod_3d_tracers.toml: a plotfile and a particle file every 10
steps, a checkpoint every 20) and its second (the deforming bubble,
problems/deforming_bubble_2d.toml: 400 steps of a level set on a narrow-band adaptive mesh,
a checkpoint every 20 steps), each with no outputs, synchronous and asynchronous outputs
(io.async, and io.mpi_wait = yield) on 1..N ranks, the median of R runs of
bench/io_async.py. Table: the step loop's I/O share (blocked / evolution: the study's
"I/O share", 22.3 % sync to 4.7 % async at 64 nodes), blocked ms per output, the hidden
fraction of the write time, the loop's slowdown against no outputs, regrids per checkpoint
interval. Its third problem, thornado's streaming sine wave
(problems/streaming_sine_wave_3d.toml with 8 groups: M1, 32 moments per zone), in both unk
layouts, with the checkpoint bytes per zone. Figure: the I/O share per problem, rank count
and mode.
"""
import argparse
import csv
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

STUDIES = {
    "hugepages": "huge pages: the EOS test (snia_2d) and the 3-d Hydro test (sedov_3d), "
                 "memory.pages = none / thp / hugetlb, counters where the machine has them",
    "tiers": "the WarpX-PM placement study on pic_uniform_3d (make tier-study; EMULATED "
             "slow tier on a one-node machine)",
    "v2d": "the Ookami report's V2D table: the radiation pulse (diffusion_pulse_2d) on every "
           "NX1 x NX2 process grid of 1 and 2 ranks, matrix-free and hypre backends",
    "scaling": "the Ookami report's strong scaling: snia_3d restarted from one checkpoint on "
               "1, 2, 4, ... ranks: time, speed-up, efficiency, memory per node",
    "weak": "weak scaling by census (issue 46): 3-D Sedov uniform and AMR, the 3-D diffusion "
            "pulse on AMR and snia_3d on 1..64 oversubscribed ranks, 8 root blocks each: "
            "messages and bytes per rank per step, collective bytes, the tree's bytes",
    "scale-model": "a model of the step at 1..1e5 ranks from the weak-scaling census "
                   "(compute, point-to-point, collectives, the replicated tree; HDR100, 48 "
                   "ranks per node), efficiency per problem",
    "async": "Flash-X's asynchronous-I/O study: Sod with tracers, the deforming bubble and "
             "the streaming sine wave (M1, 8 groups, both layouts), checkpoints sync / async "
             "on 1 and 2 ranks: I/O share, hidden fraction, bytes per zone",
}
COUNTERS = "cycles,instructions,dTLB-load-misses,LLC-load-misses,task-clock"


def read(path, default=""):
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def machine():
    """The facts a reader of a study needs about the machine it ran on."""
    m = {"processor": "", "cores": os.cpu_count(), "kernel": platform.release()}
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            m["processor"] = line.split(":", 1)[1].strip()
            break
    for line in read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal"):
            m["memory"] = line.split(":", 1)[1].strip()
    hp = Path("/sys/kernel/mm/hugepages")
    m["hugetlb_pools"] = {d.name.replace("hugepages-", ""): read(d / "nr_hugepages", "?")
                          for d in sorted(hp.glob("hugepages-*"))} if hp.exists() else {}
    m["thp"] = read("/sys/kernel/mm/transparent_hugepage/enabled", "unavailable")
    m["perf_event_paranoid"] = read("/proc/sys/kernel/perf_event_paranoid", "unavailable")
    return m


def bench(problem, out, vary, sets, repeat, trim):
    cmd = [PY, "-m", "tessera", "bench", str(ROOT / "problems" / problem), "--out", str(out),
           "--repeat", str(repeat), "--trim", str(trim)]
    for v in vary:
        cmd += ["--vary", v]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    print("  " + " ".join(cmd[3:]), flush=True)
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    return json.loads((out / "summary.json").read_text())


def achieved_pages(run_dir):
    """The page policies the runs' arenas achieved (set of strings), from their summaries."""
    got = set()
    for s in Path(run_dir).glob("rep*/summary.json"):
        for a in json.loads(s.read_text()).get("memory", {}).get("arenas", []):
            if a.get("name") == "unk":
                got.add(a.get("policy_achieved", "?"))
    return ",".join(sorted(got)) or "?"


def hugepages(a):
    out = Path(a.out or ROOT / "runs" / "studies" / "hugepages")
    out.mkdir(parents=True, exist_ok=True)
    m = machine()
    tests = [("EOS test", "snia_2d.toml", [f"driver.nend={a.steps}"]),
             ("3-d Hydro test", "sedov_3d.toml", [f"driver.nend={a.steps}"])]
    rows, status = [], {}
    for title, problem, sets in tests:
        print(f"{title} ({problem})", flush=True)
        sub = out / Path(problem).stem
        s = bench(problem, sub, ["memory.pages=none,thp,hugetlb"],
                  sets + [f"perf.counters=[{COUNTERS}]", "io.write_final=false",
                          "io.plotfile_interval_time=0", "io.checkpoint_interval_time=0",
                          "io.write_initial=false"],
                  a.repeat, a.trim)
        for c in s["configurations"]:
            pages = c["overrides"]["memory.pages"]
            st = c["stats"]
            run_dir = sub / "runs" / c["config"]
            status.update(c.get("unavailable", {}))

            def get(metric, key="mean"):
                return st.get(metric, {}).get(key, "")

            row = {"test": title, "problem": problem, "pages_requested": pages,
                   "pages_achieved": achieved_pages(run_dir), "runs": c.get("n", ""),
                   "evolution_seconds": get("evolution_seconds"),
                   "evolution_ratio_to_none": get("evolution_seconds", "ratio"),
                   "zone_updates_per_second": get("zone_updates_per_second"),
                   "huge_bytes": get("memory.huge_bytes")}
            for name in ("cycles", "dTLB-load-misses", "LLC-load-misses", "instructions"):
                keys = sorted((k for k in st if k.startswith("counter.") and k.endswith("." + name)),
                              key=len)
                row[name] = get(keys[0]) if keys else "unavailable"
            rows.append(row)
    with open(out / "hugepages.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    # The figure: evolution time ratio to none per test and policy.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    policies = ["none", "thp", "hugetlb"]
    for i, (title, _, _) in enumerate(tests):
        vals = [next(float(r["evolution_ratio_to_none"] or "nan") for r in rows
                     if r["test"] == title and r["pages_requested"] == p) for p in policies]
        xs = [i * 4 + k for k in range(3)]
        ax.bar(xs, vals, color=["0.6", "tab:blue", "tab:orange"])
        for x, v, p in zip(xs, vals, policies):
            ach = next(r["pages_achieved"] for r in rows
                       if r["test"] == title and r["pages_requested"] == p)
            ax.text(x, v, f"{v:.3f}\n{p}\n(got {ach})", ha="center", va="bottom", fontsize=7)
    ax.set_xticks([1, 5])
    ax.set_xticklabels([t for t, _, _ in tests])
    ax.set_ylabel("evolution time / pages=none")
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set_ylim(0, 1.4)
    ax.set_title(f"Huge pages, {m['processor'][:40]}, {m['cores']} cores", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "hugepages.png", dpi=120)
    # One line per counter (the reason is the same in every region).
    unavailable = {}
    for k, v in status.items():
        name = k.rsplit(".", 1)[-1]
        if k.startswith("counter.") and name not in unavailable:
            unavailable[name] = v
    lines = [
        "# Huge pages: the EOS test and the 3-d Hydro test", "",
        f"Machine: {m['processor']}, {m['cores']} cores, {m.get('memory', '?')}, kernel "
        f"{m['kernel']}; transparent huge pages: `{m['thp']}`; hugetlb pools (pages per "
        f"size): {m['hugetlb_pools'] or 'none'}; perf_event_paranoid {m['perf_event_paranoid']}.",
        "", f"Each configuration {a.repeat} runs (trimmed mean, {a.trim} dropped each side), "
        f"{a.steps} steps, no output; the page policy asked for and the one the unk arena "
        "achieved (read back from /proc/self/smaps by each run).", "",
        "| test | pages asked | achieved | evolution s | ratio to none | cycles | dTLB misses |",
        "|---|---|---|---|---|---|---|"]
    for r in rows:
        def num(x):
            return f"{float(x):.4g}" if x not in ("", "unavailable") else (x or "-")
        lines.append(f"| {r['test']} | {r['pages_requested']} | {r['pages_achieved']} | "
                     f"{num(r['evolution_seconds'])} | {num(r['evolution_ratio_to_none'])} | "
                     f"{num(r['cycles'])} | {num(r['dTLB-load-misses'])} |")
    avail = [c for c in COUNTERS.split(",") if c not in unavailable]
    lines += ["", "Counters: " + "; ".join(
        [f"{k}: {v}" for k, v in sorted(unavailable.items())] +
        ([f"available: {', '.join(avail)}"] if avail else [])) + ".",
        "", "Where a policy was not achieved (hugetlb without a reserved pool: "
        "`tools/reserve_hugepages.sh`), its row measures what was achieved, not what was asked.",
        "", "Files: `hugepages.csv`, `hugepages.png`, the harness's per-test results under "
        "`snia_2d/` and `sedov_3d/` (every run's summary.json kept)."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"study hugepages: {out}/report.md, hugepages.csv, hugepages.png")


def v2d(a):
    """The V2D table: problems/diffusion_pulse_2d.toml (200 x 100 x 2, 100 steps) on every
    NX1 x NX2 grid of 1 and up to --ranks ranks (mesh.distribution = "cartesian"), with the
    matrix-free BiCGSTAB + Jacobi and hypre's BiCGSTAB + BoomerAMG; the median of R runs."""
    import statistics
    import tempfile
    out = Path(a.out or ROOT / "runs" / "studies" / "v2d")
    out.mkdir(parents=True, exist_ok=True)
    exe = ROOT / "build" / "bin" / "tessera"
    problem = ROOT / "problems" / "diffusion_pulse_2d.toml"
    backends = [("tessera", "jacobi"), ("hypre", "boomeramg")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in range(1, a.ranks + 1):
            grids = [(x, ranks // x) for x in range(1, ranks + 1) if ranks % x == 0]
            for nx1, nx2 in grids:
                for backend, pc in backends:
                    runs = []
                    for r in range(a.repeat):
                        d = Path(tmp) / f"{ranks}-{nx1}x{nx2}-{backend}-{r}"
                        cmd = [str(exe), "run", str(problem), "--dir", str(d),
                               "mesh.distribution=cartesian", f"mesh.ranks_x={nx1}",
                               f"mesh.ranks_y={nx2}", f"solver.backend={backend}",
                               f"solver.preconditioner={pc}", "io.plotfile_interval_steps=0"]
                        if ranks > 1:
                            cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-n",
                                   str(ranks)] + cmd
                        p = subprocess.run(cmd, capture_output=True, text=True)
                        if p.returncode != 0:
                            sys.exit(f"study v2d: {' '.join(cmd)} failed:\n{p.stderr[-1500:]}")
                        runs.append(json.loads((d / "summary.json").read_text()))
                    sv = runs[0]["solver"]
                    wall = statistics.median(x["wall_seconds"] for x in runs)
                    sec = statistics.median(x["solver"]["seconds"] for x in runs)
                    iters = sv["iterations_mean"] * sv["solves"]
                    rows.append({"ranks": ranks, "nx1": nx1, "nx2": nx2, "backend": backend,
                                 "preconditioner": pc, "seconds": round(wall, 4),
                                 "solver_seconds": round(sec, 4),
                                 "iterations_per_solve": round(sv["iterations_mean"], 2),
                                 "ms_per_iteration": round(1e3 * sec / iters, 4)})
                    print(f"  {ranks} rank(s) {nx1} x {nx2} {backend:8s} {pc:10s} "
                          f"{wall:7.3f} s  {sv['iterations_mean']:6.2f} it/solve  "
                          f"{1e3 * sec / iters:7.3f} ms/it")
    with open(out / "v2d.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['ranks']}: {r['nx1']}x{r['nx2']}" for r in rows if r["backend"] == "tessera"]
    xs = range(len(labels))
    for k, (backend, pc) in enumerate(backends):
        vals = [r["seconds"] for r in rows if r["backend"] == backend]
        ax.bar([x + 0.4 * k for x in xs], vals, 0.4, label=f"{backend} ({pc})")
    ax.set_xticks([x + 0.2 for x in xs], labels)
    ax.set_xlabel("ranks: NX1 x NX2")
    ax.set_ylabel("seconds (100 steps)")
    ax.set_title("V2D radiation pulse, 200 x 100 x 2 (Ookami table's analogue)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "v2d.png", dpi=120)
    m = machine()
    lines = ["# V2D's radiation-diffusion pulse (the Ookami report's table)", "",
             f"Machine: {m['processor']}, {m['cores']} cores, {m.get('memory', '?')}, "
             f"kernel {m['kernel']}.", "",
             "problems/diffusion_pulse_2d.toml: 200 x 100 zones (blocks of 20^2), 2 species, "
             "100 backward-Euler steps, one solve of the 200 x 100 x 2 system a step; "
             "mesh.distribution = \"cartesian\" with mesh.ranks_x = NX1, mesh.ranks_y = NX2. "
             f"Median of {a.repeat} runs. V2D on Ookami (A64FX): 182-364 s on one core, "
             "11.4-25.6 s on 40-50 ranks.", "",
             "| ranks | NX1 | NX2 | backend | preconditioner | seconds | iterations/solve | "
             "ms/iteration |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['ranks']} | {r['nx1']} | {r['nx2']} | {r['backend']} | "
                     f"{r['preconditioner']} | {r['seconds']} | {r['iterations_per_solve']} | "
                     f"{r['ms_per_iteration']} |")
    lines += ["", "Files: `v2d.csv`, `v2d.png`. Larger process grids need a machine with more "
              "cores: `tools/study.py v2d --ranks N`."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"study v2d: {out}/report.md, v2d.csv, v2d.png")


def scaling(a):
    """Strong scaling from a restart (the Ookami report's method) on problems/snia_3d.toml."""
    out = Path(a.out or ROOT / "runs" / "studies" / "scaling")
    out.mkdir(parents=True, exist_ok=True)
    exe = ROOT / "build" / "bin" / "tessera"
    problem = "snia_3d.toml"
    start = 4
    ranks = [1]
    while ranks[-1] * 2 <= a.ranks:
        ranks.append(ranks[-1] * 2)
    if ranks[-1] != a.ranks:
        ranks.append(a.ranks)
    # The checkpoint every run restarts from (one rank; the restart reads it on any count).
    chk_dir = out / "checkpoint"
    print(f"checkpoint: {problem} to step {start} on one rank", flush=True)
    p = subprocess.run([str(exe), "run", str(ROOT / "problems" / problem), "--dir", str(chk_dir),
                        f"driver.nend={start}", f"io.checkpoint_interval_steps={start}",
                        "io.plotfile_interval_steps=0", "io.write_final=false"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"study scaling: the checkpoint run failed:\n{p.stderr[-1500:]}")
    chks = sorted(chk_dir.glob("*_hdf5_chk_*"))
    if not chks:
        sys.exit(f"study scaling: no checkpoint in {chk_dir}")
    chk = chks[-1]
    cmd = [PY, "-m", "tessera", "bench", str(ROOT / "problems" / problem), "--out",
           str(out / "bench"), "--repeat", str(a.repeat), "--trim", str(a.trim), "--scaling",
           ",".join(map(str, ranks)), "--restart", str(chk),
           "--set", f"driver.nend={start + a.steps}", "--set", "io.plotfile_interval_steps=0",
           "--set", "io.checkpoint_interval_steps=0", "--set", "io.write_final=false"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    print("  " + " ".join(cmd[3:]), flush=True)
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    s = json.loads((out / "bench" / "summary.json").read_text())
    rss = {c["ranks"]: c["stats"].get("memory.peak_rss_bytes", {}).get("mean")
           for c in s["configurations"]}
    rows = []
    for r in s["scaling"]:
        peak = rss.get(r["ranks"])
        rows.append({"ranks": r["ranks"], "runs": r["n"],
                     "wall_seconds": r["wall_seconds_mean"],
                     "evolution_seconds": r["evolution_seconds_mean"],
                     "speedup": r["speedup_evolution"], "efficiency": r["efficiency_evolution"],
                     "zone_updates_per_second_per_core":
                         r["zone_updates_per_second_per_core_mean"],
                     "peak_rss_bytes_largest_rank": peak,
                     "memory_per_node_bytes": peak * r["ranks"] if peak else None})
    with open(out / "scaling.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    xs = [r["ranks"] for r in rows]
    ev = [r["evolution_seconds"] for r in rows]
    ax.loglog(xs, ev, "o-", label="measured")
    ax.loglog(xs, [ev[0] / x for x in xs], "k--", lw=0.8, label="ideal")
    ax.set_xlabel("ranks")
    ax.set_ylabel(f"evolution seconds ({a.steps} steps)")
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.legend()
    ax2.plot(xs, [r["efficiency"] for r in rows], "o-")
    ax2.set_ylim(0, 1.1)
    ax2.set_xlabel("ranks")
    ax2.set_ylabel("parallel efficiency")
    ax2.set_xticks(xs, [str(x) for x in xs])
    fig.suptitle("snia_3d strong scaling from a restart (the Ookami method)")
    fig.tight_layout()
    fig.savefig(out / "scaling.png", dpi=120)
    m = machine()
    over = m["cores"] is not None and ranks[-1] > m["cores"]
    lines = ["# Strong scaling from a restart (the Ookami report's method)", "",
             f"Machine: {m['processor']}, {m['cores']} cores, {m.get('memory', '?')}, "
             f"kernel {m['kernel']}.", "",
             f"problems/snia_3d.toml (the EOS test's 3-D sibling, three-stage burning): a "
             f"checkpoint at step {start} written on one rank ({chk.name}), restarted on "
             f"{', '.join(map(str, ranks))} ranks for {a.steps} steps (regridding every 2); "
             f"trimmed mean of {a.repeat} runs (`tessera bench --scaling --restart`). Memory "
             "per node: ranks x the largest rank's peak RSS (every rank on this one node; an "
             "upper bound).", "",
             "| ranks | evolution s | speed-up | efficiency | zone-updates/s/core | "
             "peak RSS, largest rank | memory per node |", "|---|---|---|---|---|---|---|"]

    def mb(x):
        return f"{x / 2**20:.0f} MiB" if x else "?"
    for r in rows:
        lines.append(f"| {r['ranks']} | {r['evolution_seconds']:.3f} | {r['speedup']:.3f} | "
                     f"{r['efficiency']:.3f} | {r['zone_updates_per_second_per_core']:.3g} | "
                     f"{mb(r['peak_rss_bytes_largest_rank'])} | {mb(r['memory_per_node_bytes'])} |")
    lines += ["", "Files: `scaling.csv`, `scaling.png`, the harness's runs in `bench/`."]
    if over:
        lines += ["", f"Ranks beyond the machine's {m['cores']} cores are oversubscribed: "
                  "their times measure the scheduler, not scaling."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"study scaling: {out}/report.md, scaling.csv, scaling.png")


def async_io(a):
    """Flash-X's asynchronous-I/O study: bench/io_async.py on its problems, one table."""
    out = Path(a.out or ROOT / "runs" / "studies" / "async")
    out.mkdir(parents=True, exist_ok=True)
    ranks = ",".join(str(r) for r in range(1, a.ranks + 1))
    rows = []
    # Each choice of issue 46 item 7: the default (io.writer = auto), every rank's I/O
    # thread (rank, with MPI's polling or yielding waits) and one writer per node with
    # yielding waits. (io.thread_priority = idle, measured once on the bubble on 2 ranks of
    # 2 cores: the loop 97x the synchronous one; not repeated here.)
    choices = ["--modes", "none,sync,async,async-rank,async-rank-yield,async-node-yield"]
    cases = [("tracers", "Sod with tracers", choices, "io_async_tracers"),
             ("bubble", "deforming bubble", choices, "io_async_bubble"),
             ("ssw", "sine wave 8 groups", ["--modes", "none,sync,async"], "io_async_ssw8"),
             ("ssw", "sine wave 8 groups zone_major",
              ["--modes", "none,sync,async", "--layout", "zone_major"],
              "io_async_ssw8_zone_major")]
    for problem, label, opts, stem in cases:
        cmd = [PY, str(ROOT / "bench" / "io_async.py"), "--problem", problem, "--repeat",
               str(a.repeat), "--ranks", ranks, *opts, "--out", str(out)]
        print("study async:", " ".join(cmd[1:]), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"study async: {' '.join(cmd)} failed:\n{p.stderr[-1500:]}")
        res = json.loads((out / f"{stem}.json").read_text())
        for r in res["rows"]:
            rows.append({"problem": label, "ranks": r["ranks"], "mode": r["mode"],
                         "evolution_s": round(r["evolution"], 4),
                         "blocked_s": round(r["blocked"], 4),
                         "io_share": round(r["io_share"], 4),
                         "blocked_ms_per_output": round(r["blocked_ms_per_output"], 3),
                         "hidden_fraction": None if r["hidden_fraction"] is None
                         else round(r["hidden_fraction"], 4),
                         "loop_overhead": round(r["loop_overhead"], 4),
                         "outputs": int(r["count"]), "mb_written": round(r["bytes"] / 1e6, 2),
                         "regrids_per_checkpoint": round(r.get("regrids_per_interval", 0), 2),
                         "bytes_per_zone": round(r.get("bytes_per_zone", 0)),
                         "wall_s": round(r["wall"], 3)})
    with open(out / "async.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [r for r in rows if r["mode"] != "none"]
    known = ["sync", "async", "async-rank", "async-rank-yield", "async-node-yield", "async-yield"]
    modes = sorted({r["mode"] for r in shown}, key=lambda x: known.index(x) if x in known else 99)
    order = {label: n for n, (_, label, _, _) in enumerate(cases)}
    groups = sorted({(r["problem"], r["ranks"]) for r in shown}, key=lambda g: (order[g[0]], g[1]))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        vals = [next((100 * r["io_share"] for r in shown
                      if (r["problem"], r["ranks"]) == g and r["mode"] == mode), 0) for g in groups]
        xs = [x + k * width for x in range(len(groups))]
        ax.bar(xs, vals, width, label=mode)
        # The share hides what the writes cost the loop where the I/O thread has no core:
        # print the loop's slowdown over a bar where it is large.
        for x, v, g in zip(xs, vals, groups):
            over = next((r["loop_overhead"] for r in shown
                         if (r["problem"], r["ranks"]) == g and r["mode"] == mode), 0)
            if over > 0.2:
                ax.text(x, v + 0.3, f"loop\n+{100 * over:.0f} %", ha="center", fontsize=7)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))],
                  [f"{p}\n{n} rank(s)" for p, n in groups])
    ax.set_ylabel("I/O share of the step loop (%)")
    ax.set_title("Checkpoints synchronous vs asynchronous (Flash-X's Fig. 6 analogue)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "async.png", dpi=120)
    m = machine()
    lines = ["# Flash-X's asynchronous-I/O study", "",
             f"Machine: {m['processor']}, {m['cores']} cores, {m.get('memory', '?')}, "
             f"kernel {m['kernel']}.", "",
             f"bench/io_async.py, median of {a.repeat} runs per row, modes interleaved. "
             "I/O share = time the step loop was blocked on outputs / step-loop time; hidden = "
             "1 - blocked / write time; loop + = step loop against the run without outputs. "
             "The study reports the I/O share falling from 22.3 % to 4.7 % at 64 nodes. With "
             "as many ranks as cores the I/O threads have no core of their own. `async` is "
             "the default writer (io.writer = auto, issue 46): one writer per node (rank 0's "
             "I/O thread, the snapshots gathered) when the ranks share a node, outputs with "
             "particles synchronous on a full node; `async-rank` every rank's I/O thread in "
             "a collective write (the earlier default), `-yield` with io.mpi_wait = yield.",
             ""]
    ratios = {}
    for r in rows:
        ratios.setdefault((r["problem"], r["ranks"]), {})[r["mode"]] = r["evolution_s"]
    lines += ["Step loop with asynchronous writes over the loop with synchronous ones:", "",
              "| problem | ranks | " + " | ".join(k for k in known[1:5]) + " |",
              "|---|---|" + "---|" * 4]
    for (prob, nr), ev in ratios.items():
        if "sync" not in ev:
            continue
        lines.append(f"| {prob} | {nr} | " + " | ".join(
            f"{ev[k] / ev['sync']:.3f}" if k in ev else "-" for k in known[1:5]) + " |")
    lines += ["",
             "| problem | ranks | mode | I/O share | blocked ms/output | hidden | loop + | "
             "outputs | MB | regrids/checkpoint | bytes/zone | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        hid = "-" if r["hidden_fraction"] is None else f"{100 * r['hidden_fraction']:.1f} %"
        lines.append(f"| {r['problem']} | {r['ranks']} | {r['mode']} | "
                     f"{100 * r['io_share']:.1f} % | {r['blocked_ms_per_output']} | {hid} | "
                     f"{100 * r['loop_overhead']:.1f} % | {r['outputs']} | {r['mb_written']} | "
                     f"{r['regrids_per_checkpoint']} | {r['bytes_per_zone']} | {r['wall_s']} |")
    lines += ["", "Files: `async.csv`, `async.png`, and bench/io_async.py's own "
              "`io_async_tracers.*`, `io_async_bubble.*`, `io_async_ssw8*.*`. The sine wave "
              "(M1, 8 groups: 32 moments per zone) runs in both unk layouts: compare the "
              "wall and loop times of its var_major and zone_major rows."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"study async: {out}/report.md, async.csv, async.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("study", choices=["list"] + sorted(STUDIES))
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trim", type=int, default=1)
    ap.add_argument("--steps", type=int, default=None,
                    help="hugepages: steps per run (40); scaling: steps after the restart (10)")
    ap.add_argument("--ranks", type=int, default=None,
                    help="v2d, async: largest rank count (2); scaling: (the machine's cores); "
                    "weak: (64)")
    a = ap.parse_args()
    if a.ranks is None:
        a.ranks = {"scaling": os.cpu_count() or 2, "weak": 64}.get(a.study, 2)
    if a.steps is None:
        a.steps = 10 if a.study == "scaling" else 40
    if a.study == "list":
        for k, v in STUDIES.items():
            print(f"make study-{k:10s} {v}")
        return 0
    if a.study == "hugepages":
        hugepages(a)
    if a.study == "v2d":
        v2d(a)
    if a.study == "async":
        async_io(a)
    if a.study == "scaling":
        scaling(a)
    if a.study == "scale-model":
        from study_scale_model import main as scale_model
        scale_model(a.out or ROOT / "runs" / "studies" / "scale-model")
    if a.study == "weak":
        from study_weak import weak
        weak(a.out or ROOT / "runs" / "studies" / "weak", a.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every unit's speed beside the hydro's (issue 49): `make bench-units`.

Each unit's standard problem on 1 rank, no outputs, a few steps, the cases interleaved
REPEAT times (medians): the rate per core in the unit's natural measure, its ratio to the
hydro's one-stage rate measured in the same repeat (3-D Sedov 128^3, PLM + HLLC; the
median of the per-repeat ratios), the state bytes each update reads and writes at least
(8 bytes per unk and scratch variable of a zone, or its particle arena per particle, read
and written once: 2x) against one core's copy bandwidth measured here, and the SIMD target
the run dispatched to. Writes runs/studies/units/{units.csv, units.png, report.md}.

Rates: zone-updates per second (leaf zones x steps over the step loop, every operator of
the problem included: the Type Ia step is hydro + gravity + flame + burn), zone-group-
updates for M1 (x groups), tracer-updates per second over the tracers' own regions
(particles/advance and particles/migrate), particle-updates per second of the whole PIC
step (summary.json pic.particle_updates_per_second).

    .venv/bin/python bench/units.py [--repeat 5] [--out runs/studies/units] [--only a,b]
"""
import argparse
import csv
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tracers import region  # max_s of the timer regions whose path ends with a suffix

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
QUIET = ["io.write_initial=false", "io.write_final=false", "io.plotfile_interval_steps=0",
         "io.checkpoint_interval_steps=0", "io.plotfile_interval_time=0",
         "io.checkpoint_interval_time=0", "driver.log_every=100000"]
TABLES = [f"eos.table={ROOT / 'build' / 'helm_table.dat'}",
          f"burn.nse_table={ROOT / 'build' / 'nse_table.dat'}"]

# (name, unit, problem file, overrides, rate kind, description). The first is the
# reference every ratio divides by.
CASES = [
    ("hydro", "hydro", "sedov_3d_uniform.toml", ["driver.nend=10"], "zone",
     "3-D Sedov 128^3 (blocks of 16^3), PLM + HLLC, one stage (Hancock)"),
    ("hydro_rk2", "hydro", "sedov_3d_uniform.toml", ["driver.nend=10", "hydro.integrator=rk2"],
     "zone", "the same, SSP-RK2 (two stages)"),
    ("hydro_amr", "hydro", "sedov_3d.toml",
     ["driver.nend=20", "mesh.nblockx=4", "mesh.nblocky=4", "mesh.nblockz=4",
      "mesh.lrefine_max=3", "sedov.r_init=0.02734375"], "zone",
     "3-D Sedov, 64^3 root (4^3 blocks of 16^3) and 3 levels (bench/amr_ratio.py's case: "
     "fills, regrids, flux correction included)"),
    ("helmholtz_hydro", "hydro + Helmholtz EOS", "shocktube_helmholtz.toml",
     ["mesh.ndim=2", "mesh.nblockx=32", "mesh.nblocky=32", "mesh.ymax=1.0e8",
      "mesh.maxblocks=1100", "driver.nend=10", *TABLES[:1]], "zone",
     "the Helmholtz shock tube in 2-D, 512^2, C/O"),
    ("snia_2d", "Type Ia step", "snia_2d.toml", ["driver.nend=20", *TABLES], "zone",
     "snia_2d: hydro, Helmholtz, multipole gravity, flame, three-stage burn (AMR)"),
    ("diffusion", "diffusion", "diffusion_pulse_2d.toml",
     ["mesh.nblockx=16", "mesh.nblocky=16", "mesh.maxblocks=300", "driver.nend=20"], "zone",
     "the diffusion pulse, 2-D 256^2 (blocks of 16^2), implicit BiCGSTAB"),
    ("m1_1g", "M1", "streaming_sine_wave_3d.toml", ["m1.groups=1", "driver.nend=50",
                                                    "io.plot_vars=dens"], "zone-group",
     "the streaming sine wave 3-D 32^3, 1 group"),
    ("m1_8g", "M1", "streaming_sine_wave_3d.toml", ["m1.groups=8", "driver.nend=10",
                                                    "io.plot_vars=dens"], "zone-group",
     "the same, 8 groups"),
    ("levelset", "level set", "single_vortex_2d.toml",
     ["mesh.nblockx=16", "mesh.nblocky=16", "driver.nend=100"], "zone",
     "LeVeque's single vortex 256^2, WENO5, SSP-RK3, redistancing every step"),
    ("levelset_amr", "level set", "single_vortex_2d.toml",
     ["mesh.nblockx=4", "mesh.nblocky=4", "mesh.lrefine_max=3", "mesh.maxblocks=4000",
      "driver.nend=200"], "zone", "the same on a narrow band, 3 levels (finest 256^2)"),
    ("tracers", "tracers", "sod_3d_tracers.toml", ["driver.nend=30"], "tracer",
     "3-D Sod with tracers (AMR, 3 levels): the tracers' advance and migration"),
    ("pic", "particle-in-cell", "pic_uniform_3d.toml", ["driver.nend=200"], "particle",
     "uniform thermal plasma 3-D, the whole PIC step"),
]
RATE_UNIT = {"zone": "zone-updates/s", "zone-group": "zone-group-updates/s",
             "tracer": "tracer-updates/s", "particle": "particle-updates/s"}


def copy_bandwidth():
    """One core's copy bandwidth (bytes read + written per second), numpy, best of 5."""
    a = np.ones(32 * 2**20)  # 256 MiB
    b = np.empty_like(a)
    best = 0.0
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        best = max(best, 2 * a.nbytes / (time.perf_counter() - t))
    return best


def arena_bytes(s, names):
    return sum(a["bytes"] for a in s["memory"].get("arenas", []) if a.get("name") in names)


def one(case):
    name, _, problem, over, kind, _ = case
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        cmd = [str(EXE), "run", str(ROOT / "problems" / problem), "--dir", d, *QUIET, *over]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"bench units: {name} failed ({' '.join(cmd)}):\n{p.stderr[-2000:]}")
        s = json.loads((Path(d) / "summary.json").read_text())
    loop = s["evolution_seconds"]
    params = s.get("parameters", {})
    # The unit's state per zone: unk's and the scratch variables' bytes over every slot's
    # zones (guards included), i.e. 8 bytes per variable.
    cells = (s["nxb"] + 2 * s["nguard"]) ** s["ndim"]
    maxblocks = params.get("mesh.maxblocks") or s["total_blocks"]
    state = arena_bytes(s, {"unk", "scratch_vars"}) / (maxblocks * cells)
    if kind == "zone":
        rate, per = s["zone_updates"] / loop, state
    elif kind == "zone-group":
        g = s["m1"]["groups"]
        rate, per = s["zone_updates"] * g / loop, state / g
    elif kind == "tracer":
        t = region(s["timers"], "particles/advance") + region(s["timers"], "particles/migrate")
        n = s["particles"]["count"]
        rate = n * s["steps"] / t
        per = arena_bytes(s, {"particles"}) / max(n, 1)
    else:
        rate = s["pic"]["particle_updates_per_second"]
        per = arena_bytes(s, {"particles"}) / max(s["pic"]["particles"], 1)
    return {"rate": rate, "bytes_per_update": 2 * per, "simd": s["simd"]["target"],
            "loop": loop}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "runs" / "studies" / "units"))
    ap.add_argument("--only", default="", help="comma-separated case names (hydro is always run)")
    a = ap.parse_args()
    if not EXE.exists():
        sys.exit(f"bench units: {EXE} is missing; run `make build` first")
    only = set(filter(None, a.only.split(",")))
    cases = [c for c in CASES if not only or c[0] in only or c[0] == "hydro"]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (ROOT / "runs").mkdir(exist_ok=True)
    bw = copy_bandwidth()
    print(f"bench units: copy bandwidth {bw / 1e9:.1f} GB/s (one core, numpy)", flush=True)
    raw = {c[0]: [] for c in cases}
    ratios = {c[0]: [] for c in cases}
    for rep in range(a.repeat):
        ref = None
        for c in cases:
            r = one(c)
            raw[c[0]].append(r)
            if c[0] == "hydro":
                ref = r["rate"]
            ratios[c[0]].append(r["rate"] / ref)
            print(f"  rep {rep + 1}/{a.repeat} {c[0]:16s} {r['rate']:.3e} "
                  f"{RATE_UNIT[c[4]]} ({r['loop']:.2f} s)", flush=True)
    rows = []
    for c in cases:
        rs = raw[c[0]]
        rate = statistics.median(r["rate"] for r in rs)
        per = statistics.median(r["bytes_per_update"] for r in rs)
        rows.append({"unit": c[1], "problem": c[0], "rate": rate, "rate_unit": RATE_UNIT[c[4]],
                     "ratio_to_hydro": statistics.median(ratios[c[0]]),
                     "bytes_per_update": per, "bandwidth_fraction": rate * per / bw,
                     "simd_target": rs[0]["simd"], "description": c[5]})
    with open(out / "units.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, out)
    report(rows, out, bw, a.repeat)


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    names = [f"{r['problem']} ({r['rate_unit'].split('/')[0]})" for r in rows]
    ax.barh(names[::-1], [r["ratio_to_hydro"] for r in rows][::-1], color="tab:blue")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.axvline(0.5, color="tab:red", lw=0.8, ls="--")
    ax.set_xlabel("rate per core / the hydro's one-stage zone-update rate (same repeat)")
    ax.set_title(f"Every unit beside the hydro ({rows[0]['simd_target']}, 1 rank)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "units.png", dpi=120)


def report(rows, out, bw, repeat):
    sys.path.insert(0, str(ROOT / "tools"))
    from study import machine
    m = machine()
    lines = ["# Every unit's speed beside the hydro (issue 49)", "",
             f"Machine: {m['processor']}, {m['cores']} cores; SIMD target "
             f"{rows[0]['simd_target']}; one core's copy bandwidth {bw / 1e9:.1f} GB/s (numpy, "
             f"read + write). 1 rank, no outputs, medians of {repeat} interleaved repeats; the "
             "ratio is the median of each repeat's rate over that repeat's hydro rate.", "",
             "| unit | case | rate per core | ratio to hydro | bytes/update (min.) | "
             "of bandwidth | SIMD |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['unit']} | {r['problem']} | {r['rate']:.3g} {r['rate_unit']} | "
                     f"{r['ratio_to_hydro']:.3f} | {r['bytes_per_update']:.0f} | "
                     f"{100 * r['bandwidth_fraction']:.1f} % | {r['simd_target']} |")
    lines += ["", "Cases:", ""] + [f"- `{r['problem']}`: {r['description']}." for r in rows]
    lines += ["", "Bytes per update: the state each update reads and writes at least once (8 "
              "bytes per unk and scratch variable of a zone, read and written: 16 per "
              "variable; a particle's record, twice), so `of bandwidth` is a floor of the "
              "memory traffic, not a measurement of it (this machine has no counters).", "",
              "Files: `units.csv`, `units.png`."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(f"bench units: {out}/report.md, units.csv, units.png")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""M1 throughput: the 3-D streaming sine wave (problems/streaming_sine_wave_3d.toml, 32^3 in
8^3 blocks, periodic) for STEPS steps with 1, 8 and 16 energy groups, in both unk layouts
(mesh.layout = var_major, zone_major), 1 rank, no outputs, alternating, REPEAT times each
(median).

Reported per case: zone-group-updates per second per core (leaf zones x groups x steps over
the step loop), its ratio to 1 group (the issue's aim: at 16 groups at least 70 % of the
per-variable throughput of 1 group), the zone_major / var_major ratio, and the shares of
the timer regions m1/flux, m1/update. Results in OUT/m1.json.

    .venv/bin/python bench/m1.py [--steps 10] [--repeat 3] [--groups 1,8,16]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from io_async import find_region as region  # bench/ is the script's directory

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "bin" / "tessera"
PROBLEM = ROOT / "problems" / "streaming_sine_wave_3d.toml"


def one(groups, layout, steps):
    with tempfile.TemporaryDirectory(dir=ROOT / "runs") as d:
        subprocess.run([str(EXE), "run", str(PROBLEM), "--dir", d, f"m1.groups={groups}",
                        f"mesh.layout={layout}", f"driver.nend={steps}", "io.plot_vars=dens",
                        "io.plotfile_interval_time=0", "io.write_final=false",
                        "driver.log_every=100000"], check=True, capture_output=True)
        s = json.loads((Path(d) / "summary.json").read_text())
    loop = s["evolution_seconds"]
    zones = s["zone_updates"]
    return {"loop": loop, "rate": zones * groups / loop,
            "flux": region(s["timers"], "m1/flux") / loop,
            "update": region(s["timers"], "m1/update") / loop}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--groups", default="1,8,16")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    a = ap.parse_args()
    if not EXE.exists():
        sys.exit(f"bench: {EXE} is missing; run `make build` first")
    (ROOT / "runs").mkdir(exist_ok=True)
    groups = [int(g) for g in a.groups.split(",")]
    raw = {}
    for rep in range(a.repeat):
        for g in groups:
            for layout in ("var_major", "zone_major"):
                r = one(g, layout, a.steps)
                raw.setdefault(f"{g}/{layout}", []).append(r)
                print(f"  {g:3d} groups {layout:10s} rep {rep + 1}/{a.repeat}: "
                      f"{r['rate']:.3e} zone-group-updates/s", flush=True)
    med = {k: {m: statistics.median(x[m] for x in v) for m in v[0]} for k, v in raw.items()}
    print(f"\nstreaming sine wave 3-D, 32^3, {a.steps} steps, 1 rank, median of {a.repeat}")
    print(f"{'groups':>6} {'layout':>10} {'zgu/s/core':>11} {'vs 1 group':>10} "
          f"{'zm/vm':>6} {'flux':>6} {'update':>7}")
    rows = []
    for g in groups:
        for layout in ("var_major", "zone_major"):
            m = med[f"{g}/{layout}"]
            rel = m["rate"] / med[f"{groups[0]}/{layout}"]["rate"]
            zm = med[f"{g}/zone_major"]["rate"] / med[f"{g}/var_major"]["rate"]
            rows.append({"groups": g, "layout": layout, **m, "vs_first": rel, "zone_over_var": zm})
            print(f"{g:>6} {layout:>10} {m['rate']:>11.3e} {rel:>10.3f} {zm:>6.3f} "
                  f"{100 * m['flux']:>5.1f}% {100 * m['update']:>6.1f}%")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "m1.json").write_text(json.dumps({"rows": rows, "raw": raw, "steps": a.steps,
                                             "repeat": a.repeat}, indent=1))
    print(f"written: {out / 'm1.json'}")


if __name__ == "__main__":
    main()

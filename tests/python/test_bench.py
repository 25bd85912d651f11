"""The experiment harness (``python -m tessera bench``): a configuration matrix of real
runs, trimmed means that are the middle of the sorted repeats, ratio tables, plots,
failed runs and usage errors, and the scaling mode.

The system tests need TESSERA_EXE (set by ctest) or build/bin/tessera; the statistics
and metric-extraction tests and the fake-executable test (counters, memory) do not.
"""
import csv
import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tessera import bench

ROOT = Path(__file__).resolve().parents[2]
EXE = os.environ.get("TESSERA_EXE", str(ROOT / "build" / "bin" / "tessera"))
needs_exe = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")
SOD = str(ROOT / "problems" / "sod.toml")
# 20 steps of 1-D Sod with no plotfiles: a run is well under a second.
SMALL = ["--set", "driver.nend=20", "--set", "io.plotfile_interval_time=0"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def bench_cli(*args, exe=EXE):
    env = dict(os.environ, TESSERA_EXE=str(exe))
    return subprocess.run([sys.executable, "-m", "tessera", "bench", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=ROOT)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def assert_png(path):
    data = Path(path).read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000, path


# ---------------------------------------------------------------- statistics

def test_given_seven_repeats_trim_one_drops_the_extremes_and_averages_the_middle_five():
    s = bench.trimmed_stats([9.0, 1.0, 5.0, 4.0, 6.0, 100.0, 5.0], trim=1)
    assert s["mean"] == pytest.approx((4 + 5 + 5 + 6 + 9) / 5)
    assert (s["n"], s["min"], s["max"], s["trim"]) == (7, 1.0, 100.0, 1)


def test_given_fewer_runs_than_the_trim_needs_the_trim_is_lowered_not_everything_dropped():
    assert bench.trimmed_stats([3.0, 1.0], trim=1)["mean"] == pytest.approx(2.0)
    assert bench.trimmed_stats([], trim=1)["mean"] is None


def test_matrix_is_the_cartesian_product_first_key_slowest():
    configs = bench.build_matrix([("a", ["1", "2"]), ("b", ["x", "y", "z"])], [1])
    assert [c.label for c in configs][:4] == ["a=1 b=x", "a=1 b=y", "a=1 b=z", "a=2 b=x"]
    assert len(configs) == 6 and len({c.slug for c in configs}) == 6


def test_metrics_take_numbers_from_counters_memory_and_io_and_list_unavailable_ones():
    summary = {
        "ranks": 2, "wall_seconds": 2.0, "zone_updates_per_second": 1e6,
        "timers": {"name": "total", "max_s": 2.0, "children": [
            {"name": "initialise", "max_s": 0.5, "children": []},
            {"name": "hydro", "max_s": 1.2, "children": [{"name": "riemann", "max_s": 0.4}]}]},
        "counters": {"hydro": {"cycles": 10, "llc_misses": "unavailable (no PAPI)",
                               "derived": {"ipc": 1.5, "bandwidth": "unavailable (x)"}}},
        "memory": {"arenas": [{"name": "a", "bytes": 100, "huge_bytes": 64},
                              {"name": "b", "bytes": 50, "huge_bytes": 0}],
                   "peak_rss_bytes": 1000},
        "io": {"checkpoint": {"bytes": 10, "seconds": 0.1, "codec": "none"}},
        "comm": {"ranks": 2, "steps": 5, "p2p_bytes_per_step_max": 300.0,
                 "collectives_per_step_max": 3.0, "regions": {"x": {"p2p_bytes": 1}}},
    }
    m, unavailable = bench.extract_metrics(summary)
    assert m["zone_updates_per_second_per_core"] == pytest.approx(5e5)
    assert m["evolution_seconds"] == pytest.approx(1.5)  # no loop region, no key: total - init
    assert m["timer.hydro"] == 1.2 and "timer.hydro/riemann" not in m
    assert m["counter.hydro.cycles"] == 10 and m["derived.hydro.ipc"] == 1.5
    assert m["memory.huge_bytes"] == 64 and m["memory.arena_bytes"] == 150
    assert m["memory.peak_rss_bytes"] == 1000
    assert m["io.checkpoint.bytes"] == 10 and "io.checkpoint.codec" not in m
    assert m["comm.p2p_bytes_per_step_max"] == 300 and m["comm.collectives_per_step_max"] == 3
    assert "comm.steps" not in m and not any(k.startswith("comm.regions") for k in m)
    assert unavailable == {"counter.hydro.llc_misses": "unavailable (no PAPI)",
                           "derived.hydro.bandwidth": "unavailable (x)"}
    # The driver's own step-loop time wins over the timer arithmetic.
    with_key = bench.extract_metrics(dict(summary, evolution_seconds=1.4))[0]
    assert with_key["evolution_seconds"] == 1.4


# ---------------------------------------------------------------- fake executable

FAKE = textwrap.dedent('''\
    #!{python}
    """Stands in for tessera: writes a summary.json with counters and memory."""
    import json, sys, zlib
    a = sys.argv[1:]
    if a[0] == "params":
        print("  name  type  default  range  description")
        print("[fake]")
        print("  speed  int  1  [1, 10]  how fast")
        sys.exit(0)
    out = a[a.index("--dir") + 1]
    kv = dict(x.split("=", 1) for x in a if "=" in x)
    speed = int(kv.get("fake.speed", 1))
    rep = int(out.rstrip("/").split("rep")[-1])
    wall = 1.0 / speed + 0.01 * rep
    json.dump({{"problem": "fake", "ranks": 1, "wall_seconds": wall, "evolution_seconds": wall / 2,
               "zone_updates_per_second": 1e6 * speed,
               "counters": {{"hydro": {{"cycles": 100.0 / speed, "misses": "unavailable (test)",
                                      "derived": {{"ipc": 0.5 * speed}}}}}},
               "memory": {{"arenas": [{{"name": "blocks", "bytes": 4096, "huge_bytes": 2048,
                                      "policy_requested": "thp", "policy_achieved": "thp"}}],
                          "peak_rss_bytes": 8192}}}}, open(out + "/summary.json", "w"))
    ''')


def test_counters_and_memory_become_metrics_ratios_and_one_png_each(tmp_path):
    exe = tmp_path / "fake_tessera"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    p = bench_cli(SOD, "--vary", "fake.speed=1,2", "--repeat", 3, "--trim", 1,
                  "--baseline", "fake.speed=2", "--out", out, exe=exe)
    assert p.returncode == 0, p.stderr
    rows = {r["fake.speed"]: r for r in read_csv(out / "results.csv")}
    assert float(rows["2"]["wall_seconds_ratio"]) == 1.0
    # middle repeat: wall = 1/speed + 0.02
    assert float(rows["1"]["wall_seconds_ratio"]) == pytest.approx(1.02 / 0.52)
    assert float(rows["1"]["counter.hydro.cycles_ratio"]) == pytest.approx(2.0)
    assert float(rows["1"]["derived.hydro.ipc_mean"]) == pytest.approx(0.5)
    assert float(rows["1"]["memory.huge_bytes_mean"]) == 2048
    assert float(rows["1"]["memory.peak_rss_bytes_mean"]) == 8192
    for name in ("counter.hydro.cycles", "derived.hydro.ipc"):
        assert_png(out / "counters" / f"{name}.png")
    s = json.loads((out / "summary.json").read_text())
    assert s["baseline"]["label"] == "fake.speed=2"
    assert s["configurations"][0]["unavailable"] == {"counter.hydro.misses": "unavailable (test)"}
    assert "counter.hydro.cycles" in p.stdout  # the counter ratio table


FAKE_TIERS = textwrap.dedent('''\
    #!{python}
    """Stands in for tessera: a PIC-like timer tree and a tier report."""
    import json, sys
    a = sys.argv[1:]
    if a[0] == "params":
        print("  name  type  default  range  description")
        print("[fake]")
        print("  slow  int  1  [1, 10]  slowdown of push")
        print("  emul  int  1  [0, 1]  1: the tier report says emulated")
        print("[memory]")
        print("  tier.backend  string  none  {{none, emulated}}  a group key")
        sys.exit(0)
    out = a[a.index("--dir") + 1]
    kv = dict(x.split("=", 1) for x in a if "=" in x)
    slow, emul = int(kv.get("fake.slow", 1)), int(kv.get("fake.emul", 1))
    rep = int(out.rstrip("/").split("rep")[-1])
    push = 1.0 * slow + 0.01 * rep
    kids = [{{"name": "push", "max_s": push}}, {{"name": "deposit", "max_s": 2.0}}]
    json.dump({{"problem": "fake", "ranks": 1, "wall_seconds": push + 2.5,
               "timers": {{"name": "total", "max_s": push + 2.5, "children": [
                   {{"name": "pic", "max_s": push + 2.0, "children": kids}}]}},
               "memory": {{"tiers": {{"backend": "emulated" if emul else "none",
                                    "emulated": bool(emul)}}}}}},
              open(out + "/summary.json", "w"))
    ''')


def fake_exe(tmp_path, text):
    exe = tmp_path / "fake_tessera"
    exe.write_text(text.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_phases_are_tabulated_with_ratios_and_emulated_runs_say_so(tmp_path):
    exe = fake_exe(tmp_path, FAKE_TIERS)
    out = tmp_path / "out"
    p = bench_cli(SOD, "--vary", "fake.slow=1,3", "--repeat", 3, "--trim", 1,
                  "--set", "memory.tier.backend=emulated",  # a group key the listing has
                  "--phases", "pic/push,pic/deposit", "--out", out, exe=exe)
    assert p.returncode == 0, p.stderr
    rows = {r["fake.slow"]: r for r in read_csv(out / "phases.csv")}
    # middle repeat: push = slow + 0.02
    assert float(rows["3"]["pic/push_ratio"]) == pytest.approx(3.02 / 1.02)
    assert float(rows["3"]["pic/deposit_ratio"]) == pytest.approx(1.0)
    assert float(rows["1"]["pic/push_mean"]) == pytest.approx(1.02)
    assert {r["tiers"] for r in rows.values()} == {"emulated"}
    assert {r["tiers"] for r in read_csv(out / "results.csv")} == {"emulated"}
    assert_png(out / "phases.png")
    assert "EMULATED" in p.stdout and "pic/push [s]" in p.stdout
    s = json.loads((out / "summary.json").read_text())
    assert s["tiers"]["emulated"] is True and "EMULATED" in s["tiers"]["label"]
    assert s["phases"] == ["pic/push", "pic/deposit"]


def test_emulated_and_real_tier_results_are_never_tabulated_together(tmp_path):
    exe = fake_exe(tmp_path, FAKE_TIERS)
    # Known before running: the backend values themselves mix.
    p = bench_cli(SOD, "--vary", "memory.tier.backend=none,emulated", "--repeat", 1,
                  "--trim", 0, "--out", tmp_path / "a", exe=exe)
    assert p.returncode == 2 and "emulated and real" in p.stderr
    assert not (tmp_path / "a" / "runs").exists()
    # Known only from the runs' own reports: refused after running, runs kept.
    p = bench_cli(SOD, "--vary", "fake.emul=0,1", "--repeat", 1, "--trim", 0,
                  "--out", tmp_path / "b", exe=exe)
    assert p.returncode == 2 and "refusing to tabulate emulated and real" in p.stderr
    assert not (tmp_path / "b" / "results.csv").exists()
    assert len(json.loads((tmp_path / "b" / "runs.json").read_text())) == 2


# ---------------------------------------------------------------- real runs

@needs_exe
def test_matrix_of_two_riemann_solvers_writes_rows_trimmed_means_and_a_png(tmp_path):
    out = tmp_path / "b"
    p = bench_cli(SOD, "--vary", "hydro.riemann=hllc,hlle", "--repeat", 3, "--trim", 1,
                  *SMALL, "--out", out)
    assert p.returncode == 0, p.stderr
    # one progress line per run, then the ratio table
    progress = [l for l in p.stdout.splitlines() if l.startswith("[")]
    assert len(progress) == 6 and progress[0].startswith("[1/6] hydro.riemann=hllc rep 1: ")
    assert progress[0].endswith(" s")
    assert "x base" in p.stdout

    rows = read_csv(out / "results.csv")
    assert [r["hydro.riemann"] for r in rows] == ["hllc", "hlle"]
    cols = rows[0].keys()
    for metric in bench.CORE_METRICS:
        for stat_ in bench.STATS:
            assert f"{metric}_{stat_}" in cols
    assert {"config", "ranks", "n"} <= set(cols)
    assert all(r["n"] == "3" for r in rows)
    assert float(rows[0]["wall_seconds_ratio"]) == 1.0

    s = json.loads((out / "summary.json").read_text())
    assert s["repeat"] == 3 and s["trim"] == 1 and len(s["runs"]) == 6
    assert {"hostname", "nproc", "loadavg_start", "loadavg_end"} <= set(s["machine"])
    base_mean = {}
    for entry, row in zip(s["configurations"], rows):
        runs = [r for r in s["runs"] if r["config"] == entry["config"]]
        assert all("--dir" in r["command"] and "hydro.riemann=" in r["command"] for r in runs)
        for metric in ("wall_seconds", "evolution_seconds", "zone_updates_per_second"):
            values = [r["metrics"][metric] for r in runs]
            middle = sorted(values)[1]  # repeat 3, trim 1: the middle run
            assert entry["stats"][metric]["mean"] == pytest.approx(middle, rel=1e-12)
            assert float(row[f"{metric}_mean"]) == pytest.approx(middle, rel=1e-12)
            assert float(row[f"{metric}_min"]) == min(values)
            assert float(row[f"{metric}_max"]) == max(values)
            base_mean.setdefault(metric, middle)
            assert float(row[f"{metric}_ratio"]) == pytest.approx(middle / base_mean[metric])
        # the harness keeps each run's own summary.json in its directory
        for r in runs:
            kept = json.loads((out / r["dir"] / "summary.json").read_text())
            assert kept["wall_seconds"] == r["metrics"]["wall_seconds"]
            assert kept["parameters"]["hydro.riemann"] == entry["overrides"]["hydro.riemann"]
    assert_png(out / "ratios.png")


@needs_exe
def test_a_failing_configuration_is_reported_and_the_rest_still_written(tmp_path):
    out = tmp_path / "b"
    p = bench_cli(SOD, "--vary", "hydro.riemann=hllc,roe", "--repeat", 1, "--trim", 0,
                  *SMALL, "--out", out)
    assert p.returncode == 1
    assert "FAILED" in p.stdout and "hydro.riemann" in p.stderr and "roe" in p.stderr
    rows = read_csv(out / "results.csv")
    assert [(r["hydro.riemann"], r["n"]) for r in rows] == [("hllc", "1"), ("roe", "0")]
    assert json.loads((out / "summary.json").read_text())["failed_runs"] == 1


@needs_exe
@pytest.mark.parametrize("args,needle", [
    (["--vary", "hydro.riemman=hllc,hlle"], "hydro.riemann"),  # typo: names the real key
    (["--vary", "hydro.riemann=hllc,hlle", "--repeat", "2", "--trim", "1"], "too large"),
    (["--vary", "hydro.riemann=hllc,hlle", "--baseline", "hydro.riemann=roe"], "--baseline"),
])
def test_usage_errors_stop_before_any_run_with_one_clear_line(tmp_path, args, needle):
    p = bench_cli(SOD, *args, "--out", tmp_path / "b")
    assert p.returncode == 2
    assert p.stderr.startswith("tessera bench: error:") and needle in p.stderr
    assert not (tmp_path / "b" / "runs").exists()


@needs_exe
def test_scaling_on_one_and_two_ranks_writes_efficiency_and_plot(tmp_path):
    out = tmp_path / "s"
    p = bench_cli(SOD, "--scaling", "1,2", "--repeat", 1, "--trim", 0, *SMALL, "--out", out)
    assert p.returncode == 0, p.stderr
    rows = read_csv(out / "scaling.csv")
    assert [r["ranks"] for r in rows] == ["1", "2"]
    assert float(rows[0]["efficiency_wall"]) == 1.0
    t1, t2 = (float(r["evolution_seconds_mean"]) for r in rows)
    assert float(rows[1]["efficiency_evolution"]) == pytest.approx(t1 / (2 * t2))
    s = json.loads((out / "summary.json").read_text())
    assert s["mode"] == "scaling" and [r["ranks"] for r in s["scaling"]] == [1, 2]
    assert any(r["command"].startswith("mpirun") and " -n 2 " in r["command"] for r in s["runs"])
    assert_png(out / "scaling.png")

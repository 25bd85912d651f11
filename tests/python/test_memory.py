"""Memory and measurement (issue "Memory and measurement"): page policies that report what
they got, hardware counters that say why they are unavailable, and the memory planner
against the measured peak RSS."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXE = os.environ.get("TESSERA_EXE", str(ROOT / "build" / "bin" / "tessera"))
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]
pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")
QUIET = ["io.write_initial=false", "io.write_final=false", "io.plotfile_interval_steps=0",
         "io.checkpoint_interval_steps=0", "io.plotfile_interval_time=0",
         "io.checkpoint_interval_time=0"]


def run(problem, out, *overrides, ranks=1, check=True):
    cmd = [EXE, "run", str(ROOT / "problems" / problem), "--dir", str(out), *overrides]
    if ranks > 1:
        cmd = MPIRUN + ["-n", str(ranks)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:]
    return p


def summary(out):
    return json.loads((Path(out) / "summary.json").read_text())


def unk(s):
    arenas = [a for a in s["memory"]["arenas"] if a["name"] == "unk"]
    assert len(arenas) == 1
    return arenas[0]


def thp_mode():
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return None
    return text[text.index("[") + 1:text.index("]")]


# ---------------------------------------------------------------- page policies

# Every arena a run maps: block storage, flux register, hydro work arrays, the Runge-Kutta
# stage copy (PPM + RK3), and the I/O staging snapshots (reported as the largest one was
# just before it was written and released).
ARENAS = {"unk", "flux", "scratch", "rk_stage", "staging"}
WITH_OUTPUT = ["driver.nend=2", "hydro.reconstruction=ppm", "io.write_initial=false",
               "io.write_final=true"]


def arenas(s):
    got = {a["name"]: a for a in s["memory"]["arenas"]}
    assert ARENAS <= set(got), sorted(got)
    assert got["staging"]["released"] is True
    return got


@pytest.mark.skipif(thp_mode() not in ("madvise", "always"), reason="THP is off on this kernel")
def test_thp_backs_at_least_90_percent_of_every_arena(tmp_path):
    run("sedov_2d.toml", tmp_path, "memory.pages=thp", *WITH_OUTPUT)
    for name, a in arenas(summary(tmp_path)).items():
        assert a["policy_requested"] == "thp" and a["policy_achieved"] == "thp", a
        assert a["huge_bytes"] >= 0.9 * a["bytes"], a


def test_no_huge_pages_with_policy_none(tmp_path):
    run("sedov_2d.toml", tmp_path, "memory.pages=none", *WITH_OUTPUT)
    for name, a in arenas(summary(tmp_path)).items():
        assert a["policy_achieved"] == "none" and a["huge_bytes"] == 0, a


def test_per_arena_policy_overrides_memory_pages(tmp_path):
    run("sedov_2d.toml", tmp_path, "memory.pages=none", "memory.pages_flux=thp",
        "memory.pages_staging=thp", *WITH_OUTPUT)
    got = arenas(summary(tmp_path))
    want = {"unk": "none", "flux": "thp", "scratch": "none", "rk_stage": "none",
            "staging": "thp"}
    assert {n: got[n]["policy_requested"] for n in want} == want


def pool(size_kb=2048):
    d = Path(f"/sys/kernel/mm/hugepages/hugepages-{size_kb}kB")
    return d if d.exists() else None


def test_hugetlb_with_an_empty_pool_falls_back_and_says_so(tmp_path):
    d = pool()
    if d is None:
        pytest.skip("no 2 MiB hugetlb support")
    if int((d / "free_hugepages").read_text()) > 0:
        pytest.skip("a hugetlb pool is reserved on this machine")
    p = run("sedov_2d.toml", tmp_path, "driver.nend=2", "memory.pages=hugetlb", *QUIET)
    a = unk(summary(tmp_path))
    assert a["policy_requested"] == "hugetlb" and a["policy_achieved"] != "hugetlb"
    assert "fell back" in a["warning"]
    assert "warning: memory: arena unk: hugetlb" in p.stdout


def test_hugetlb_with_a_reserved_pool_backs_the_whole_arena(tmp_path):
    d = pool()
    if d is None or os.geteuid() != 0:
        pytest.skip("needs root and 2 MiB hugetlb support to reserve a pool")
    nr = d / "nr_hugepages"
    old = int(nr.read_text())
    try:
        nr.write_text(str(old + 16))
        if int((d / "free_hugepages").read_text()) < 2:
            pytest.skip("the kernel could not reserve hugetlb pages")
        run("sedov_2d.toml", tmp_path, "driver.nend=2", "memory.pages=hugetlb", *QUIET)
    finally:
        nr.write_text(str(old))
    a = unk(summary(tmp_path))
    assert a["policy_achieved"] == "hugetlb", a
    assert a["huge_bytes"] == a["mapped_bytes"] >= a["bytes"]


def test_a_bad_page_policy_is_a_clear_error(tmp_path):
    p = run("sedov_2d.toml", tmp_path, "memory.pages=huge", check=False)
    assert p.returncode != 0
    assert "memory.pages" in p.stderr and "huge" in p.stderr


# ---------------------------------------------------------------- counters

def test_counters_report_values_or_unavailable_with_a_reason(tmp_path):
    run("sedov_2d.toml", tmp_path, "driver.nend=3", *QUIET,
        "perf.counters=instructions,cycles,PAPI_TLB_DM,task-clock,page-faults,context-switches",
        ranks=2)
    c = summary(tmp_path)["counters"]
    hydro = [k for k in c if k.endswith("/hydro")]
    assert hydro, list(c)
    region = c[hydro[0]]
    for name in ("task-clock", "page-faults", "context-switches"):
        assert isinstance(region[name], (int, float)) and region[name] >= 0, region[name]
    assert region["task-clock"] > 0
    for name in ("instructions", "cycles", "PAPI_TLB_DM"):
        v = region[name]
        assert isinstance(v, (int, float)) or (v.startswith("unavailable (") and len(v) > 20), v
    if not Path("/sys/bus/event_source/devices/cpu").exists():
        # no PMU here: the hardware events must say so
        assert str(region["instructions"]).startswith("unavailable (")


def test_unknown_counter_name_is_a_clear_error(tmp_path):
    p = run("sedov_2d.toml", tmp_path, "perf.counters=instrucsions", check=False)
    assert p.returncode != 0
    assert "instrucsions" in p.stderr and "instructions" in p.stderr


# ---------------------------------------------------------------- planner

@pytest.mark.parametrize("problem,extra,ranks", [
    ("sedov_2d.toml", ["driver.nend=5", "io.checkpoint_interval_steps=0",
                       "io.plotfile_interval_steps=0"], 1),
    ("sedov_3d_uniform.toml", ["driver.nend=2", "mesh.nblockx=4", "mesh.nblocky=4",
                               "mesh.nblockz=4", "mesh.maxblocks=80", "io.write_final=true"], 2),
])
def test_plan_is_within_10_percent_of_the_measured_peak_rss(tmp_path, problem, extra, ranks):
    run(problem, tmp_path, *extra, ranks=ranks)
    s = summary(tmp_path)
    measured = s["memory"]["peak_rss_bytes"]
    plan = subprocess.run([EXE, "plan", str(ROOT / "problems" / problem), "--json",
                           "--ranks", str(ranks), *extra], capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    predicted = json.loads(plan.stdout)["per_rank"]["peak_rss_bytes"]
    print(f"\n{problem}: predicted {predicted / 2**20:.1f} MiB, measured {measured / 2**20:.1f} MiB")
    assert abs(predicted - measured) <= 0.10 * measured
    # the run's own prediction (made before it allocated) is in summary.json too
    assert abs(s["memory"]["predicted_bytes"] - measured) <= 0.10 * measured


def test_summary_reports_the_trees_bytes_as_the_plan_counts_them(tmp_path):
    # issue 46: the replicated tree's bytes on this rank (summary.json memory.tree_bytes),
    # at least a node (56 bytes) per tree node, and per node within a factor 2 of what the
    # plan counts per node of its (fully refined) tree.
    extra = ["driver.nend=2", "io.checkpoint_interval_steps=0", "io.plotfile_interval_steps=0"]
    run("sedov_2d_amr.toml", tmp_path, *extra)
    m = summary(tmp_path)["memory"]
    assert m["tree_bytes"] >= 56 * m["tree_nodes"] > 0
    plan = subprocess.run([EXE, "plan", str(ROOT / "problems" / "sedov_2d_amr.toml"), "--json",
                           *extra], capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    item = [i for i in json.loads(plan.stdout)["items"] if i["name"].startswith("tree metadata")]
    assert len(item) == 1
    per_node = float(item[0]["formula"].split("*")[1].split()[0])  # "N*108 (...)"
    measured = m["tree_bytes"] / m["tree_nodes"]
    print(f"\ntree: {measured:.0f} bytes per node measured, {per_node:.0f} planned")
    assert 0.5 <= measured / per_node <= 2.0


def test_plan_prints_a_table_and_capacity(tmp_path):
    p = subprocess.run([EXE, "plan", str(ROOT / "problems" / "sedov_3d.toml"),
                        "--ranks-per-node", "48", "--memory-per-node", "27G"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "unk arena" in p.stdout and "capacity:" in p.stdout
    bad = subprocess.run([EXE, "plan", str(ROOT / "problems" / "sedov_3d.toml"),
                          "--memory-per-node", "lots"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--memory-per-node" in bad.stderr

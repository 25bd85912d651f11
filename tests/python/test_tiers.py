"""Memory tiers at run time (issue 12 items 4-5, memory/tier_runtime): every arena a run
maps is placed by the policy asked for and summary.json -> memory -> tiers says where its
bytes went per object class; no placement or backend changes a single bit of the results;
numa on a one-node machine falls back with one warning; emulation says so everywhere.

The problem is the 3-D PIC plasma (problems/pic_uniform_3d.toml: 8 blocks of 8^3, 32768
electrons) with mesh.maxblocks = 8, so its arenas are small: unk 2 MiB, particles 4 MiB (the
mappings are rounded to 2 MiB by the THP page policy; a PIC run maps no flux register)."""
from pathlib import Path

import pytest

from h5compare import differing_datasets
from runner import EXE, ROOT, run, shared_run, summary

pytestmark = pytest.mark.skipif(not Path(EXE).exists(), reason="tessera executable not built")

PROBLEM = "pic_uniform_3d.toml"
SMALL = ["driver.nend=2", "mesh.maxblocks=8", "io.write_initial=false",
         "io.plotfile_interval_steps=0", "io.write_final=true"]
MiB = 1 << 20
# Fast memory: room for the fields (unk, 2 MiB; a PIC run maps no flux register) but not
# for the particles (4 MiB more): first touch splits the particles 2 MiB fast, 2 MiB slow
# (THP pages: the split falls on 2 MiB), static placement then moves them out.
FAST = "memory.tier.fast_bytes=5M"
PLACEMENTS = ["fast_only", "slow_only", "first_touch", "static", "static_prefetch", "dynamic"]


def tiers(out):
    return summary(out)["memory"]["tiers"]


def by_class(t, kind="achieved"):
    return {c: (v[kind]["fast"], v[kind]["slow"]) for c, v in t["classes"].items()}


def checkpoint(out):
    chk = sorted(Path(out).glob("*_hdf5_chk_*"))
    assert chk, list(Path(out).iterdir())
    return chk[-1]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The run without tiers (the defaults): no runtime at all."""
    return shared_run(tmp_path_factory, "tiers-none", PROBLEM, *SMALL)


@pytest.fixture(scope="module", params=PLACEMENTS)
def model_run(request, tmp_path_factory):
    p = request.param
    return p, shared_run(tmp_path_factory, f"tiers-model-{p}", PROBLEM, *SMALL,
                         "memory.tier.backend=model", f"memory.tier.placement={p}", FAST)


def test_without_tiers_there_is_no_runtime_and_the_summary_says_so(baseline):
    t = tiers(baseline)
    assert t["installed"] is False
    assert t["backend"] == "none" and t["placement"] == "fast_only"
    assert "classes" not in t and "arenas" not in t


def test_each_placement_puts_each_class_where_the_policy_says(model_run):
    placement, out = model_run
    t = tiers(out)
    assert t["installed"] is True and t["backend"] == "model" and t["emulated"] is True
    assert t["placement"] == placement and t["fast_bytes"] == 5 * MiB
    got = by_class(t)
    # The model backend achieves what was asked for.
    assert got == by_class(t, "requested")
    total = {c: f + s for c, (f, s) in got.items()}
    assert total["field"] >= 2 * MiB and total["particle"] >= 4 * MiB
    assert "flux" not in [a["name"] for a in t["arenas"]]  # no unit stores fluxes
    fast = sum(f for f, s in got.values())
    slow = sum(s for f, s in got.values())
    if placement == "fast_only":
        assert slow == 0 and all(p[1] == 0 for p in by_class(t, "peak").values())
    elif placement == "slow_only":
        assert fast == 0 and all(p[0] == 0 for p in by_class(t, "peak").values())
    elif placement == "first_touch":
        # Mapping order: unk and flux (at start-up) take the fast tier, the particles
        # (mapped when they are loaded) spill.
        assert got["field"] == (total["field"], 0)
        assert got["particle"] == (2 * MiB, 2 * MiB)
        assert fast <= 5 * MiB
    else:
        # Static: after the first step temporaries and fields first, particles last.
        sp = t["static_placement"]
        assert sp["done"] is True and sp["log"].startswith("memory: tiers (model): static")
        assert got["temporary"][1] == 0 and got["field"][1] == 0, got
        assert got["particle"] == (0, total["particle"]), got
        # The particles' first-touch fast half left fast memory after the first step.
        assert by_class(t, "peak")["particle"][0] == 2 * MiB
        assert sp["moves"]["to_slow"]["bytes"] == 2 * MiB
        # Copies: the placement moves (by the step's thread) and, under dynamic, the
        # particle batches the streamer staged and wrote back (helper threads; weight and
        # type are never written back: unmodified).
        streamed = t["streamer"]["phases"].get("pic/particles") if placement == "dynamic" else None
        out_bytes = streamed["bytes_out"] if streamed else 0
        in_bytes = streamed["bytes_in"] if streamed else 0
        assert t["copies"]["fast_to_slow"]["bytes"] == sp["moves"]["to_slow"]["bytes"] + out_bytes
        assert t["copies"]["slow_to_fast"]["bytes"] == sp["moves"]["to_fast"]["bytes"] + in_bytes
        assert t["copies"]["fast_to_slow"]["helper_threads"] == (1 if streamed else 0)
        if streamed:
            assert streamed["batches"] == 8 and streamed["bytes_skipped"] == in_bytes // 4
            assert out_bytes == in_bytes * 3 // 4  # 6 of 8 properties modified
        assert t["plan"]["prefetch"] is (placement != "static")
        assert t["model"]["prefetch"]["wanted"] is (placement != "static")
        if placement == "dynamic":
            assert t["plan"]["migration_bytes"] > 0
            assert "migration space" in sp["log"]
    for a in t["arenas"]:
        assert a["requested"]["fast"] + a["requested"]["slow"] == a["bytes"], a


def test_every_placement_and_backend_gives_the_same_bits(baseline, model_run):
    _, out = model_run
    allowed = [k for k in summary(out)["parameters"] if k.startswith("memory.tier.")]
    assert differing_datasets(checkpoint(baseline), checkpoint(out), allowed) == []


@pytest.mark.parametrize("backend,placement", [("none", "static"), ("emulated", "static"),
                                               ("emulated", "dynamic"),
                                               ("emulated", "slow_only")])
def test_real_and_emulated_backends_give_the_same_bits(tmp_path, baseline, backend, placement):
    # Emulated with a slow tier faster than this machine, so the modelled sleeps are short.
    run(PROBLEM, tmp_path, *SMALL, f"memory.tier.backend={backend}",
        f"memory.tier.placement={placement}", FAST, "memory.tier.slow_read_bw=1e12",
        "memory.tier.slow_write_bw=1e12")
    allowed = [k for k in summary(tmp_path)["parameters"] if k.startswith("memory.tier.")]
    assert differing_datasets(checkpoint(baseline), checkpoint(tmp_path), allowed) == []
    t = tiers(tmp_path)
    assert t["backend"] == backend
    if backend == "none":
        # No slow tier: every byte is reported fast whatever was asked.
        assert all(s == 0 for f, s in by_class(t).values())
        assert any(s > 0 for f, s in by_class(t, "requested").values())


def one_numa_node():
    nodes = [p for p in Path("/sys/devices/system/node").glob("node[0-9]*")]
    return len(nodes) <= 1


@pytest.mark.skipif(not one_numa_node(), reason="this machine has more than one NUMA node")
def test_numa_on_one_node_falls_back_with_one_warning_line(tmp_path, baseline):
    p = run(PROBLEM, tmp_path, *SMALL, "memory.tier.backend=numa",
            "memory.tier.placement=static", FAST)
    warnings = [l for l in p.stdout.splitlines() if l.startswith("warning: memory: tiers")]
    assert len(warnings) == 1, warnings
    assert "numa:" in warnings[0] and "falling back to none" in warnings[0]
    t = tiers(tmp_path)
    assert t["backend_requested"] == "numa" and t["backend"] == "none"
    assert t["warning"].startswith("numa:") and t["emulated"] is False
    allowed = [k for k in summary(tmp_path)["parameters"] if k.startswith("memory.tier.")]
    assert differing_datasets(checkpoint(baseline), checkpoint(tmp_path), allowed) == []


def test_emulation_is_labelled_in_every_tier_line_and_in_the_summary(tmp_path):
    p = run(PROBLEM, tmp_path, *SMALL, "memory.tier.backend=emulated",
            "memory.tier.placement=dynamic", FAST, "memory.tier.slow_read_bw=1e12",
            "memory.tier.slow_write_bw=1e12", ranks=2)
    lines = [l for l in p.stdout.splitlines() if "memory: tiers" in l]
    assert len(lines) >= 5, p.stdout[-3000:]
    assert all("memory: tiers (emulated): " in l for l in lines), lines
    t = tiers(tmp_path)
    assert t["emulated"] is True and t["label"].startswith("emulated: slow tier modelled")
    # The helper-thread model's inputs: two ranks on this node share it; the bandwidth
    # curve was measured (memcpy) and capped at n x the emulated slow bandwidths.
    h = t["model"]["helper_threads"]
    assert h["n_ranks"] == 2 and h["requested"] == 0
    assert len(h["bandwidth_curve"]) == h["n_max"] >= 1
    assert "measured" in h["bandwidth_source"] and "capped" in h["bandwidth_source"]
    for pt in h["bandwidth_curve"]:
        assert 0 < pt["slow_to_fast"] <= pt["threads"] * 1e12
    # The measurement's own buffers are not placed (the streamer's slots are: "migration").
    assert {a["name"] for a in t["arenas"]} <= {"unk", "particles", "staging", "migration"}
    # The particles streamed through those slots, batch by batch, with helper threads.
    st = t["streamer"]["phases"]["pic/particles"]
    assert st["batches"] > 0 and st["bytes_out"] < st["bytes_in"]


def test_prefetch_takes_the_models_distance_and_hides_the_slow_fields_latency(tmp_path):
    # Fields slow (1 MiB of fast memory holds nothing but the first-touch part): static
    # charges the gather one latency per field line, static_prefetch prefetches k ahead
    # (eqs 1-2 with f = 0: k = ceil((5 ns + 304 ns) / the gather's time per particle)) and
    # pays the slow tier's bandwidth instead. The physics is the same to the bit.
    got = {}
    for placement in ("static", "static_prefetch"):
        out = tmp_path / placement
        run(PROBLEM, out, *SMALL, "driver.nend=4", "memory.tier.backend=model",
            f"memory.tier.placement={placement}", "memory.tier.fast_bytes=1M")
        got[placement] = tiers(out)
    pf = got["static_prefetch"]["model"]["prefetch"]
    assert got["static"]["model"]["prefetch"]["distance"] == 0
    assert pf["f"] == 0.0 and pf["prefetch_time"] == pytest.approx(309e-9)
    assert pf["distance"] == -(-pf["prefetch_time"] // pf["time_per_particle"]) >= 1
    gs = got["static"]["charged_seconds"]["pic/gather"]
    gp = got["static_prefetch"]["charged_seconds"]["pic/gather"]
    assert 0 < gp < 0.5 * gs
    assert differing_datasets(checkpoint(tmp_path / "static"),
                              checkpoint(tmp_path / "static_prefetch"),
                              ["memory.tier.placement"]) == []

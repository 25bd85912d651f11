"""The example unit of docs/writing-a-unit.md (section 6), built from the page as it stands
(tools/guide_unit.py, target tessera_guide): it registers, runs on 1 and 2 ranks with the
same bits, and its integral decays as exp(-k t) to round-off."""
import csv
import json
import math
import os
import subprocess
from pathlib import Path

import h5py
import pytest

from runner import MPIRUN, ROOT

EXE = os.environ.get("TESSERA_GUIDE_EXE", str(ROOT / "build" / "bin" / "tessera_guide"))
GUIDE = Path(os.environ.get("TESSERA_GUIDE_DIR", str(ROOT / "build" / "guide")))

pytestmark = pytest.mark.skipif(not Path(EXE).exists(),
                                reason="tessera_guide is not built (cmake --build build)")


def run_guide(out, *overrides, ranks=1):
    cmd = [EXE, "run", str(GUIDE / "decay.toml"), "--dir", str(out), *overrides]
    if ranks > 1:
        cmd = MPIRUN + ["-n", str(ranks)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads((out / "summary.json").read_text())


def test_the_guide_unit_registers_with_its_declarations():
    p = subprocess.run([EXE, "units", "--json"], capture_output=True, text=True, check=True)
    units = {u["name"]: u for u in json.loads(p.stdout)}
    d = units["decay"]
    assert d["role"] == "operator" and d["needs"] == [] and d["provides"] == []
    assert [v["name"] for v in d["variables"]] == ["dcay"] and d["history"] == ["decay_integral"]
    for hook in ("declarations", "bind", "initialise", "max_dt", "advance", "check",
                 "diagnostics", "file_records", "restore"):
        assert hook in d["hooks"], hook
    # The units of tessera are all there too.
    assert {"hydro", "eos", "scalar"} <= set(units)


def test_the_guide_unit_decays_exactly_on_one_and_two_ranks(tmp_path):
    a = run_guide(tmp_path / "one")
    d = a["decay"]
    assert d["time"] == pytest.approx(1.0, rel=1e-12)
    assert d["integral_start"] > 0
    # Exact integration per step: only round-off separates the integral from exp(-k t).
    assert abs(d["integral"] / d["integral_exact"] - 1) < 1e-12
    assert d["integral"] / d["integral_start"] == pytest.approx(math.exp(-2.0), rel=1e-12)
    rows = list(csv.DictReader(open(tmp_path / "one" / "history.csv")))
    assert "decay_integral" in rows[0] and float(rows[-1]["decay_integral"]) == pytest.approx(
        d["integral"], rel=1e-9)
    b = run_guide(tmp_path / "two", ranks=2)
    assert b["decay"]["integral"] == d["integral"]
    fa = sorted((tmp_path / "one").glob("decay_hdf5_chk_*"))[-1]
    fb = tmp_path / "two" / fa.name
    with h5py.File(fa, "r") as x, h5py.File(fb, "r") as y:
        assert x["dcay"][()].tobytes() == y["dcay"][()].tobytes()

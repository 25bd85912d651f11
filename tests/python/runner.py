"""Running the real executable from the system tests, shared by them: where it is
(TESSERA_EXE, set by ctest, or build/bin/tessera), one run of a shipped problem on 1..N
ranks, and its summary.json."""
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = os.environ.get("TESSERA_EXE", str(ROOT / "build" / "bin" / "tessera"))
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]


def run(problem, out, *overrides, ranks=1, check=True):
    """Run problems/<problem> into `out` with section.key=value overrides; with `check`,
    assert that it succeeded (showing the end of stderr)."""
    cmd = [EXE, "run", str(ROOT / "problems" / problem), "--dir", str(out), *overrides]
    if ranks > 1:
        cmd = MPIRUN + ["-n", str(ranks)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check:
        assert p.returncode == 0, p.stderr[-2000:]
    return p


def summary(out):
    """The run directory's summary.json."""
    return json.loads((Path(out) / "summary.json").read_text())

"""Running the real executable from the system tests, shared by them: where it is
(TESSERA_EXE, set by ctest, or build/bin/tessera), one run of a shipped problem on 1..N
ranks, its summary.json, and shared runs that several tests read (module fixtures).

ctest runs the test functions of a file in several pytest processes (tests/CMakeLists.txt,
tests/python/ctest_list.py: a slow function alone, the others together per kind): a module
fixture would then run once per process. With TESSERA_TEST_CACHE
set (ctest sets it under the build directory), shared_run keeps each fixture's run there,
keyed by the executable (its size and modification time), the problem file's text, the
overrides and the rank count, and reuses it while the key holds; a run that did not
finish leaves no `.complete` mark and is run again."""
import fcntl
import hashlib
import json
import os
import shutil
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


def unit_suites_under_mpirun(gtest_filter, ranks, timeout=300):
    """Run tessera_unit's suites matching gtest_filter on `ranks` ranks (ctest runs them on
    one) and assert they pass; skip when tessera_unit is not built."""
    import pytest
    unit = Path(EXE).parent / "tessera_unit"
    if not unit.exists():
        pytest.skip("tessera_unit not built")
    p = subprocess.run(MPIRUN + ["-n", str(ranks), str(unit), f"--gtest_filter={gtest_filter}"],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]


def summary(out):
    """The run directory's summary.json."""
    return json.loads((Path(out) / "summary.json").read_text())


def shared_run(tmp_path_factory, tag, problem, *overrides, ranks=1):
    """A run directory several tests read (never write): run("problem", ...) once, into
    TESSERA_TEST_CACHE when set (reused across pytest processes, see the module doc),
    else into a pytest temporary directory."""
    cache = os.environ.get("TESSERA_TEST_CACHE")
    if not cache:
        out = tmp_path_factory.mktemp(tag)
        run(problem, out, *overrides, ranks=ranks)
        return out
    exe = Path(EXE).stat()
    key = json.dumps([str(exe.st_size), str(exe.st_mtime_ns),
                      (ROOT / "problems" / problem).read_text(), list(overrides), ranks])
    out = Path(cache) / f"{tag}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if (out / ".complete").exists():
        return out
    # ctest -j runs tests at once: the first to take the lock runs it, the others wait.
    Path(cache).mkdir(parents=True, exist_ok=True)
    with open(f"{out}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".complete").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            run(problem, out, *overrides, ranks=ranks)
            (out / ".complete").write_text(key)
    return out

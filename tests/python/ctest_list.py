"""The CTest entries of the Python system tests, for tests/CMakeLists.txt (run at configure
time): which functions run together, on how many processors, and which alone.

`ctest -j2` (make test) runs two tests at once on this project's 2-core machines. A test
that starts tessera on several ranks, directly or through a module fixture or helper it
uses, takes 2 processors (CTest then runs it alone on 2 cores); one that measures time,
resident memory or huge pages, which another process beside it would disturb, runs serial
(SERIAL below, with the reason). The rest take 1.

Multi-rank use is read from the source of the function, of the module fixtures it names
(recursively) and of the module functions it calls: `ranks=2`, `ranks=4`, a rank list
such as `(1, 2, 4)`, or mpirun itself (but not the mpirun of a helper that takes a `ranks`
argument: that helper is multi-rank only where a caller passes ranks >= 2, which the
caller's text shows). A fixture that is a shared run (runner.shared_run:
made once per build, under a lock, then only read) does not count: the one test that makes
it may share the cores with another test for that run.

One pytest process per test function costs 0.6-0.9 s of interpreter, pytest, numpy and
tessera imports before the test runs (yt 2.7 s more, pynucastro 3.6 s): 231 functions
spent 2 to 3 minutes of CPU starting. So a function that takes at least SOLO seconds
(tests/ctest_costs.txt, measured with `ctest -j2` here) is a CTest test of its own,
`<file>.<function>`, and the others of a file run in one pytest process per kind
(processors, serial or not): `<file>.others_1rank`, `<file>.others_2ranks`,
`<file>.others_1rank_serial`... (one pytest session: the same functions, the same assertions; a
failure names its function). A group over GROUP_MAX seconds is split in order
(`..._2`, `..._3`). A function with no measured cost counts as fast.

Output, one line per CTest test: `name|file|func,func,...|processors|serial|cost`."""
import ast
import re
import sys
from pathlib import Path

MULTI = re.compile(r"ranks\s*=\s*[2-9]|\(1, 2(, 4)?\)|\(2, 4\)|MPIRUN|mpirun|RANKS\s*=\s*[2-9]"
                   r"|parametrize\(\"[^\"]*ranks[^\"]*\", \[[^\]]*[2-9]"
                   r"|\"--scaling\", \"[^\"]*[2-9]")

# Timing, RSS or page-size measurements: alone on the machine.
SERIAL = {
    # the asynchronous writer must hide some plotfile time behind the step loop
    "test_io": {"test_async_outputs_are_identical_to_sync_outputs_on_two_ranks",
                "test_async_yielding_idle_and_node_writer_modes_write_the_sync_files",
                "test_staging_directory_drains_to_the_run_directory"},
    # (test_kill_9_at_random_moments... is not here: it measures no time, and a busier
    # machine only makes its kills land inside writes more often.)
    "test_memory": None,  # page policies achieved and RSS against the planner: every test
    "test_tiers": None,   # emulated slow-tier sleeps
    # (test_bench is not here: it asserts the harness's arithmetic on the times its runs
    # report, never a time itself.)
}


def entries(path):
    """(function, processors, runs alone) for each test function of the file."""
    src = path.read_text()
    tree = ast.parse(src)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    fixtures = {n for n, f in funcs.items()
                if any("fixture" in (ast.get_source_segment(src, d) or "") for d in f.decorator_list)}

    def text(name, seen):
        if name in seen or name not in funcs:
            return ""
        seen.add(name)
        f = funcs[name]
        out = "".join(ast.get_source_segment(src, d) or "" for d in f.decorator_list)
        body = ast.get_source_segment(src, f) or ""
        if (not name.startswith("test_") and name not in fixtures
                and any(a.arg == "ranks" for a in f.args.args + f.args.kwonlyargs)):
            # A helper that takes `ranks` starts mpirun only when its caller passes ranks >= 2,
            # which the caller's own text shows: its mpirun line alone does not count (an
            # explicit ranks=2 inside it still does).
            body = body.replace("MPIRUN", "").replace("mpirun", "")
        out += body
        for a in f.args.args:  # fixtures that are not shared runs (those run once)
            if a.arg not in fixtures or "shared_run" not in (ast.get_source_segment(
                    src, funcs[a.arg]) or ""):
                out += text(a.arg, seen)
        for c in ast.walk(f):  # module helpers it calls
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name):
                out += text(c.func.id, seen)
        return out

    stem = path.stem
    serial = SERIAL.get(stem, set())
    for name, f in funcs.items():
        if not name.startswith("test_"):
            continue
        procs = 2 if MULTI.search(text(name, set())) else 1
        is_serial = serial is None or name in serial
        yield name, procs, is_serial


SOLO = 8.0        # seconds: a function at least this long is a CTest test of its own
GROUP_MAX = 30.0  # seconds: a group longer than this is split
DEFAULT_COST = 1.0


def costs(path):
    """Measured seconds per CTest test name (tests/ctest_costs.txt: `name seconds`)."""
    out = {}
    if path.exists():
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#"):
                out[parts[0]] = float(parts[1])
    return out


def groups(path, cost):
    stem = path.stem
    kinds = {}  # (procs, serial) -> [(func, seconds)]
    for func, procs, serial in entries(path):
        c = cost.get(f"{stem}.{func}", DEFAULT_COST)
        if c >= SOLO:
            yield f"{stem}.{func}|{stem}|{func}|{procs}|{int(serial)}|{c:.1f}"
        else:
            kinds.setdefault((procs, serial), []).append((func, c))
    for (procs, serial), funcs in kinds.items():
        base = f"{stem}.others_" + ("1rank" if procs == 1 else f"{procs}ranks") + (
            "_serial" if serial else "")
        chunks, cur, t = [], [], 0.0
        for func, c in funcs:
            if cur and t + c > GROUP_MAX:
                chunks.append((cur, t))
                cur, t = [], 0.0
            cur.append(func)
            t += c
        chunks.append((cur, t))
        for n, (names, t) in enumerate(chunks):
            name = base if n == 0 else f"{base}_{n + 1}"
            yield f"{name}|{stem}|{','.join(names)}|{procs}|{int(serial)}|{t:.1f}"


if __name__ == "__main__":
    cost = costs(Path(__file__).resolve().parent.parent / "ctest_costs.txt")
    for arg in sys.argv[1:]:
        for line in groups(Path(arg), cost):
            print(line)

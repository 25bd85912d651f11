"""Experiment harness: a configuration matrix × R repeats of the real executable.

``python -m tessera bench FILE --vary key=v1,v2 [--vary ...] --repeat R --trim T
--ranks N --out DIR`` runs every configuration of the Cartesian product of the
``--vary`` lists R times, each in its own directory ``DIR/runs/<config>/rep<r>/`` (the
executable's ``summary.json``, ``stdout.log`` and ``stderr.log`` stay there), and writes

* ``DIR/results.csv``: one row per configuration: the varied keys, ``ranks``, ``n``
  (successful runs) and, per metric, ``_mean`` (trimmed mean), ``_min``, ``_max``,
  ``_std`` (sample standard deviation of all n runs) and ``_ratio`` (trimmed mean over
  the baseline configuration's trimmed mean);
* ``DIR/summary.json``: the same statistics plus every run's values and command line,
  and the machine (host name, cores, load average at start and end, git commit);
* ``DIR/ratios.png`` (runtime and zone-updates/s ratios, grouped bars, min/max error
  bars) and ``DIR/counters/<metric>.png``, one per counter or derived metric present.

Trimming follows the protocol of the seed papers: of each metric's R values the T
smallest and the T largest are dropped and the rest averaged (R = 7, T = 1: the mean of
the middle five).  Repetitions are interleaved (rep 1 of every configuration, then rep
2, ...) so that a slow drift of the machine spreads over all configurations alike.

``--scaling 1,2,4`` runs the same matrix on each rank count instead and writes
``scaling.csv`` and ``scaling.png`` (wall and evolution time against ranks, log-log with
the ideal line, and the parallel efficiency T(r0)·r0 / (T(r)·r) against the smallest
rank count) besides ``results.csv`` and ``summary.json``.

Metrics per run, all taken from the run's ``summary.json``:

* ``wall_seconds``; ``evolution_seconds``: the step loop (the driver's own key, else
  total minus ``initialise``);
  ``zone_updates_per_second`` and ``zone_updates_per_second_per_core`` (÷ ranks);
* ``timer.<region>``: max-over-ranks seconds of each region directly under ``total``;
* ``counter.<region>.<name>`` and ``derived.<region>.<name>`` from ``counters`` (numbers
  only; "unavailable (reason)" entries are listed in summary.json, not averaged);
* ``memory.huge_bytes`` (sum over arenas), ``memory.arena_bytes``,
  ``memory.peak_rss_bytes``, ``memory.predicted_bytes`` from ``memory``;
* ``io.<kind>.<key>``: every number under ``io``;
* ``comm.<key>``: the communication census per step (``p2p_messages_per_step_max``,
  ``p2p_bytes_per_step_max``, ``p2p_bytes_per_step_mean``, ``collectives_per_step_max``,
  ``collective_bytes_per_step_max``; issue 46).

``--phases pic/deposit,pic/field_solve,...`` tabulates those timer regions (by path
suffix, any depth) per configuration with their ratios to the baseline, and writes
``phases.csv`` and ``phases.png`` (stacked seconds per phase with the sum's ratio on top,
and each phase's ratio: the WarpX-PM study's Figures 6 and 7).

Tier runs: a run whose ``memory.tiers`` says ``emulated`` (backends emulated and model) is
an emulation, not a measurement.  The harness refuses to put emulated and real results
in one table (before running when the ``memory.tier.backend`` values mix, after running
when the runs' own reports do; the runs are kept), and labels every table, plot title and
its summary.json ``tiers`` entry "EMULATED" when they are emulated.

The harness only launches ``tessera run``; it never reimplements anything it measures.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import difflib
import hashlib
import itertools
import json
import math
import os
import platform
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

__all__ = [
    "BenchError", "Config", "Spec", "parse_assignment", "parse_vary", "build_matrix",
    "parse_int_list", "find_executable", "extract_metrics", "evolution_seconds", "trimmed_stats",
    "run_bench", "CORE_METRICS",
]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MPIRUN = "mpirun --oversubscribe --allow-run-as-root"
#: Metrics every run has, in table order; the rest follow sorted by name.
CORE_METRICS = ("wall_seconds", "evolution_seconds", "zone_updates_per_second",
                "zone_updates_per_second_per_core")
#: Metrics drawn in ratios.png.
RATIO_PLOT_METRICS = ("wall_seconds", "evolution_seconds", "zone_updates_per_second")
#: Timer-region names taken to be the step loop, if the driver emits one.
STATS = ("mean", "min", "max", "std", "ratio")
#: The tier backend parameter, and the backends whose results are emulations (model
#: predicts, emulated throttles copies and charges modelled penalties: neither measures a
#: real slow tier).
TIER_BACKEND_KEY = "memory.tier.backend"
EMULATED_BACKENDS = ("emulated", "model")
EMULATED_LABEL = "EMULATED slow tier (modelled bandwidth/latency, not a measurement)"


class BenchError(Exception):
    """A usage or set-up error: the harness stops before (or instead of) running."""


# ------------------------------------------------------------------ specification

@dataclasses.dataclass(frozen=True)
class Config:
    """One configuration: the varied overrides (in --vary order) and the rank count."""

    index: int
    overrides: Tuple[Tuple[str, str], ...]
    ranks: int
    rank_axis: bool = False  # True in --scaling mode: ranks is part of the label

    @property
    def label(self) -> str:
        """Human-readable ``key=value key=value`` (``(base)`` when nothing varies)."""
        parts = [f"{k}={v}" for k, v in self.overrides]
        if self.rank_axis:
            parts.append(f"ranks={self.ranks}")
        return " ".join(parts) or "(base)"

    @property
    def slug(self) -> str:
        """Directory name: an index (keeps order, makes it unique) plus the label."""
        parts = [f"{k}-{v}" for k, v in self.overrides]
        if self.rank_axis:
            parts.append(f"ranks-{self.ranks}")
        text = re.sub(r"[^A-Za-z0-9._-]+", "_", "__".join(parts)) or "base"
        return f"c{self.index:02d}_{text[:120]}"

    def matches(self, wanted: Dict[str, str]) -> bool:
        """True when every key=value of ``wanted`` (``ranks`` included) holds here."""
        mine = dict(self.overrides)
        mine["ranks"] = str(self.ranks)
        return all(mine.get(k) == v for k, v in wanted.items())


@dataclasses.dataclass
class Spec:
    """Everything the harness needs; built from the command line by ``__main__``."""

    problem: Path
    out: Path
    vary: List[Tuple[str, List[str]]] = dataclasses.field(default_factory=list)
    fixed: List[Tuple[str, str]] = dataclasses.field(default_factory=list)
    repeat: int = 7
    trim: int = 1
    ranks: int = 1
    scaling: Optional[List[int]] = None
    baseline: Dict[str, str] = dataclasses.field(default_factory=dict)
    exe: Optional[str] = None
    mpirun: Optional[str] = None
    restart: Optional[str] = None
    timeout: Optional[float] = None
    timer_depth: int = 1
    phases: List[str] = dataclasses.field(default_factory=list)
    argv: List[str] = dataclasses.field(default_factory=list)


def parse_assignment(text: str, what: str = "--set") -> Tuple[str, str]:
    """``"key=value"`` -> (key, value); BenchError naming ``what`` otherwise."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise BenchError(f"{what} {text!r}: expected key=value")
    return key, value.strip()


def parse_vary(text: str) -> Tuple[str, List[str]]:
    """``"key=v1,v2"`` -> (key, [v1, v2]); empty values and duplicates are errors."""
    key, values = parse_assignment(text, "--vary")
    vals = [v.strip() for v in values.split(",")]
    if not values or any(not v for v in vals):
        raise BenchError(f"--vary {text!r}: expected key=v1,v2,... with no empty value")
    if len(set(vals)) != len(vals):
        raise BenchError(f"--vary {text!r}: a value is listed twice")
    return key, vals


def parse_int_list(text: str, what: str) -> List[int]:
    """``"1,2,4"`` -> [1, 2, 4] (positive, distinct, kept in the given order)."""
    try:
        vals = [int(v) for v in text.split(",")]
    except ValueError:
        raise BenchError(f"{what} {text!r}: expected positive integers like 1,2,4") from None
    if any(v < 1 for v in vals) or len(set(vals)) != len(vals):
        raise BenchError(f"{what} {text!r}: expected distinct positive integers")
    return vals


def build_matrix(vary: Sequence[Tuple[str, List[str]]], ranks: Sequence[int],
                 rank_axis: bool = False) -> List[Config]:
    """Cartesian product of the --vary lists (first key slowest) × the rank counts."""
    keys = [k for k, _ in vary]
    combos = list(itertools.product(*[vals for _, vals in vary])) if vary else [()]
    configs = []
    for combo in combos:
        for r in ranks:
            configs.append(Config(len(configs), tuple(zip(keys, combo)), r, rank_axis))
    return configs


def validate(spec: Spec) -> None:
    """Check the spec's own consistency (not the parameter keys); BenchError if not."""
    if spec.repeat < 1:
        raise BenchError(f"--repeat {spec.repeat}: need at least 1")
    if spec.trim < 0:
        raise BenchError(f"--trim {spec.trim}: cannot be negative")
    if 2 * spec.trim >= spec.repeat:
        raise BenchError(f"--trim {spec.trim} is too large for --repeat {spec.repeat}: dropping "
                         f"the {spec.trim} fastest and {spec.trim} slowest runs leaves none "
                         f"(need --repeat >= {2 * spec.trim + 1})")
    if spec.ranks < 1:
        raise BenchError(f"--ranks {spec.ranks}: need at least 1")
    seen = set()
    for key, _ in spec.vary:
        if key in seen:
            raise BenchError(f"--vary {key} is given twice; list all its values in one --vary")
        seen.add(key)
    for key, _ in spec.fixed:
        if key in seen:
            raise BenchError(f"{key} is both varied (--vary) and fixed (--set)")
    if "ranks" in seen or "ranks" in dict(spec.fixed):
        raise BenchError("ranks is not a parameter: use --ranks N or --scaling 1,2,4")
    if not spec.problem.is_file():
        raise BenchError(f"problem file {spec.problem} does not exist")
    backends = set(dict(spec.vary).get(TIER_BACKEND_KEY, []))
    if TIER_BACKEND_KEY in dict(spec.fixed):
        backends.add(dict(spec.fixed)[TIER_BACKEND_KEY])
    kinds = {("emulated" if b in EMULATED_BACKENDS else "real") for b in backends}
    if len(kinds) > 1:
        raise BenchError(f"{TIER_BACKEND_KEY} takes both emulated ({', '.join(sorted(backends & set(EMULATED_BACKENDS)))}) "
                         f"and real ({', '.join(sorted(backends - set(EMULATED_BACKENDS)))}) values: "
                         "emulated and real tier results never share a table; run them as two "
                         "benches")
    for ph in spec.phases:
        if not ph or ph.startswith("/") or ph.endswith("/"):
            raise BenchError(f"--phases: '{ph}' is not a timer region path (e.g. pic/push)")


# ------------------------------------------------------------------ the executable

def find_executable(explicit: Optional[str] = None) -> Path:
    """--exe, else $TESSERA_EXE, else build/bin/tessera in the repository or the cwd."""
    candidates = [explicit] if explicit else []
    if not explicit:
        if os.environ.get("TESSERA_EXE"):
            candidates.append(os.environ["TESSERA_EXE"])
        candidates += [str(ROOT / "build" / "bin" / "tessera"),
                       str(Path.cwd() / "build" / "bin" / "tessera")]
    for c in candidates:
        p = Path(c)
        if p.is_file() and os.access(p, os.X_OK):
            return p.resolve()
    raise BenchError(f"tessera executable not found (tried {', '.join(candidates)}); "
                     "build it with `make build` or pass --exe PATH")


def known_parameters(exe: Path) -> Optional[List[str]]:
    """Dotted keys listed by ``tessera params``; None when the listing cannot be read."""
    try:
        p = subprocess.run([str(exe), "params"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    keys, section = [], None
    for line in p.stdout.splitlines():
        m = re.match(r"^\[([A-Za-z0-9_]+)\]\s*$", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\s+([A-Za-z0-9_.]+)\s+\S", line)  # group keys: tier.backend
        if m and section:
            keys.append(f"{section}.{m.group(1)}")
    return keys or None


def check_keys(spec: Spec, known: Optional[Sequence[str]]) -> None:
    """Every --vary/--set key must be a parameter the executable declares."""
    if not known:
        return  # cannot tell here: the executable itself rejects unknown keys per run
    given = [(k, "--vary") for k, _ in spec.vary] + [(k, "--set") for k, _ in spec.fixed]
    for key, origin in given:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise BenchError(f"{origin} {key}: unknown parameter{hint}; "
                             "`tessera params` lists them all")


def launcher(spec: Spec, ranks: int) -> List[str]:
    """Command prefix for ``ranks`` ranks: none for 1 rank unless --mpirun was given.

    A ``{n}`` in --mpirun is replaced by the rank count; otherwise ``-n N`` is appended.
    """
    if ranks == 1 and not spec.mpirun:
        return []
    prefix = spec.mpirun or DEFAULT_MPIRUN
    if "{n}" in prefix:
        return shlex.split(prefix.replace("{n}", str(ranks)))
    return shlex.split(prefix) + ["-n", str(ranks)]


def command_for(spec: Spec, exe: Path, config: Config, run_dir: Path) -> List[str]:
    """The full command line of one run."""
    cmd = launcher(spec, config.ranks) + [str(exe), "run", str(spec.problem), "--dir", str(run_dir)]
    if spec.restart:
        cmd += ["--restart", spec.restart]
    cmd += [f"{k}={v}" for k, v in spec.fixed] + [f"{k}={v}" for k, v in config.overrides]
    return cmd


def _error_line(run_dir: Path, returncode: int) -> str:
    """The line that says why a run failed: its ``tessera: error:`` line if any, else
    the last non-blank line of stderr (then stdout), else the exit status."""
    for name in ("stderr.log", "stdout.log"):
        try:
            lines = (run_dir / name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        errs = [l.strip() for l in lines if l.strip().startswith("tessera: error:")]
        if errs:
            return errs[-1]
        lines = [l.strip() for l in lines if l.strip() and not set(l.strip()) <= set("-=*")]
        if lines:
            return lines[-1]
    return f"exit status {returncode}"


def run_one(cmd: List[str], run_dir: Path, timeout: Optional[float]) -> dict:
    """Launch one run (its own session, so that a timeout kills the launcher and its
    ranks); returns {returncode, ok, error, process_seconds, timed_out, summary}."""
    run_dir.mkdir(parents=True, exist_ok=True)
    stale = run_dir / "summary.json"
    if stale.exists():
        stale.unlink()  # so that a failed rerun can never be read as a success
    t0 = datetime.datetime.now()
    with open(run_dir / "stdout.log", "w") as out, open(run_dir / "stderr.log", "w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)  # the launcher and the ranks it started
                    rc = proc.wait(timeout=10)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    rc = proc.returncode if proc.returncode is not None else -9
    seconds = (datetime.datetime.now() - t0).total_seconds()
    res = {"returncode": rc, "ok": False, "error": None, "process_seconds": seconds,
           "timed_out": timed_out, "summary": None}
    if timed_out:
        res["error"] = f"timed out after {timeout:g} s"
    elif rc != 0:
        res["error"] = _error_line(run_dir, rc)
    else:
        try:
            res["summary"] = json.loads(stale.read_text())
            res["ok"] = True
        except (OSError, ValueError) as exc:
            res["error"] = f"exit 0 but no readable summary.json ({exc})"
    return res


# ------------------------------------------------------------------ metrics

def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def evolution_seconds(summary: dict) -> Optional[float]:
    """Seconds in the step loop: the driver's key, else (a summary written without it)
    the timer total minus ``initialise``."""
    if _is_number(summary.get("evolution_seconds")):
        return float(summary["evolution_seconds"])
    timers = summary.get("timers")
    if isinstance(timers, dict) and _is_number(timers.get("max_s")):
        init = sum(c.get("max_s", 0.0) for c in timers.get("children", [])
                   if c.get("name") == "initialise")
        return float(timers["max_s"]) - init
    return None


def _flatten_numbers(prefix: str, node, out: Dict[str, float]) -> None:
    if _is_number(node):
        out[prefix] = float(node)
    elif isinstance(node, dict):
        for k, v in node.items():
            _flatten_numbers(f"{prefix}.{k}", v, out)


def extract_metrics(summary: dict, ranks: Optional[int] = None,
                    timer_depth: int = 1) -> Tuple[Dict[str, float], Dict[str, str]]:
    """Numeric metrics of one run's summary.json, and {metric: reason} of the counters
    reported "unavailable (reason)".  ``ranks`` defaults to the summary's own."""
    m: Dict[str, float] = {}
    unavailable: Dict[str, str] = {}
    ranks = int(summary.get("ranks") or ranks or 1)
    if _is_number(summary.get("wall_seconds")):
        m["wall_seconds"] = float(summary["wall_seconds"])
    evo = evolution_seconds(summary)
    if evo is not None:
        m["evolution_seconds"] = evo
    if _is_number(summary.get("zone_updates_per_second")):
        m["zone_updates_per_second"] = float(summary["zone_updates_per_second"])
        m["zone_updates_per_second_per_core"] = m["zone_updates_per_second"] / ranks

    comm = summary.get("comm")
    if isinstance(comm, dict):
        for key, v in comm.items():
            if key.endswith("_per_step_max") or key.endswith("_per_step_mean"):
                if _is_number(v):
                    m[f"comm.{key}"] = float(v)

    timers = summary.get("timers")
    if isinstance(timers, dict) and timer_depth > 0:
        def walk(node, path, depth):
            for c in node.get("children", []) or []:
                name = f"{path}/{c.get('name')}" if path else str(c.get("name"))
                if _is_number(c.get("max_s")):
                    m[f"timer.{name}"] = float(c["max_s"])
                if depth < timer_depth:
                    walk(c, name, depth + 1)
        walk(timers, "", 1)

    counters = summary.get("counters")
    if isinstance(counters, dict):
        for region, values in counters.items():
            if not isinstance(values, dict):
                continue
            for name, v in values.items():
                if name == "derived" and isinstance(values[name], dict):
                    for dname, dv in values[name].items():
                        key = f"derived.{region}.{dname}"
                        if _is_number(dv):
                            m[key] = float(dv)
                        elif isinstance(dv, str):
                            unavailable[key] = dv
                    continue
                key = f"counter.{region}.{name}"
                if isinstance(v, str):
                    unavailable[key] = v
                else:
                    _flatten_numbers(key, v, m)  # a number, or {stat: number} per rank

    memory = summary.get("memory")
    if isinstance(memory, dict):
        arenas = [a for a in memory.get("arenas", []) or [] if isinstance(a, dict)]
        if arenas:
            huge = [a["huge_bytes"] for a in arenas if _is_number(a.get("huge_bytes"))]
            if huge:
                m["memory.huge_bytes"] = float(sum(huge))
            total = [a["bytes"] for a in arenas if _is_number(a.get("bytes"))]
            if total:
                m["memory.arena_bytes"] = float(sum(total))
        for key in ("peak_rss_bytes", "predicted_bytes"):
            if _is_number(memory.get(key)):
                m[f"memory.{key}"] = float(memory[key])

    io = summary.get("io")
    if isinstance(io, dict):
        _flatten_numbers("io", io, m)
    return m, unavailable


def phase_metrics(summary: dict, phases: Sequence[str]) -> Dict[str, float]:
    """{"phase.<p>": seconds} for each timer region path ``p`` (e.g. ``pic/push``): the
    max-over-ranks seconds of every region whose path from ``total`` ends with ``p``,
    summed (a phase timed under two parents counts both)."""
    out: Dict[str, float] = {}
    timers = summary.get("timers")
    if not isinstance(timers, dict) or not phases:
        return out

    def walk(node, path):
        for c in node.get("children", []) or []:
            name = f"{path}/{c.get('name')}" if path else str(c.get("name"))
            for p in phases:
                if (name == p or name.endswith("/" + p)) and _is_number(c.get("max_s")):
                    out[f"phase.{p}"] = out.get(f"phase.{p}", 0.0) + float(c["max_s"])
            walk(c, name)
    walk(timers, "")
    return out


def tier_info(summary: dict) -> Optional[dict]:
    """{"backend", "emulated"} from summary.json memory.tiers; None when the run has no
    tier report (a build or run without the tier runtime)."""
    tiers = (summary.get("memory") or {}).get("tiers")
    if not isinstance(tiers, dict):
        return None
    emulated = tiers.get("emulated")
    if not isinstance(emulated, bool):
        emulated = tiers.get("backend") in EMULATED_BACKENDS
    return {"backend": tiers.get("backend"), "emulated": emulated}


def order_metrics(names: Iterable[str]) -> List[str]:
    """Core metrics first (in CORE_METRICS order), then the rest by name."""
    names = set(names)
    core = [n for n in CORE_METRICS if n in names]
    return core + sorted(names - set(core))


def trimmed_stats(values: Sequence[float], trim: int) -> dict:
    """{n, mean, min, max, std, trim}: mean after dropping the ``trim`` smallest and
    ``trim`` largest values (trim is lowered when fewer than 2·trim+1 values exist);
    min/max/std (sample, 0 for one value) are over all values."""
    v = sorted(float(x) for x in values)
    n = len(v)
    if n == 0:
        return {"n": 0, "mean": None, "min": None, "max": None, "std": None, "trim": trim}
    t = trim if n > 2 * trim else (n - 1) // 2
    kept = v[t:n - t]
    return {"n": n, "mean": sum(kept) / len(kept), "min": v[0], "max": v[-1],
            "std": statistics.stdev(v) if n > 1 else 0.0, "trim": t}


# ------------------------------------------------------------------ machine

def machine_info() -> dict:
    """Host, cores, CPU model, platform and the repository's git commit (if any)."""
    info = {"hostname": socket.gethostname(), "nproc": os.cpu_count(),
            "platform": platform.platform(), "python": sys.version.split()[0]}
    try:
        info["cores_available"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        if head.returncode == 0:
            info["git_commit"] = head.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                    "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10)
            info["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def _loadavg() -> Optional[List[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _sha256(path: Path) -> Optional[str]:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


# ------------------------------------------------------------------ formatting

def fmt_seconds(t: float) -> str:
    """4.12 / 0.00123 / 123.45: two decimals from 0.1 s up, three digits below."""
    return f"{t:.2f}" if t >= 0.1 else f"{t:.3g}"


def _fmt(x, kind: str = "g") -> str:
    if x is None:
        return "-"
    if kind == "ratio":
        return f"{x:.3f}"
    if kind == "s":
        return fmt_seconds(x)
    return f"{x:.3e}" if abs(x) >= 1e5 or (x != 0 and abs(x) < 1e-3) else f"{x:.4g}"


def _table(header: List[str], rows: List[List[str]], left: int = 1) -> str:
    """Plain-text table; the first ``left`` columns (labels) left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.ljust(w) if i < left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


# ------------------------------------------------------------------ the harness

def _collect(configs: List[Config], runs: List[dict], trim: int, baseline: Config,
             metric_names: List[str]) -> List[dict]:
    """Per-configuration statistics (with ratios against ``baseline``)."""
    out = []
    for c in configs:
        mine = [r for r in runs if r["config"] == c.slug and r["ok"]]
        values = {m: [r["metrics"][m] for r in mine if m in r["metrics"]] for m in metric_names}
        unavailable: Dict[str, str] = {}
        for r in mine:
            unavailable.update(r.get("unavailable", {}))
        stats = {m: trimmed_stats(values[m], trim) for m in metric_names if values[m]}
        out.append({"config": c.slug, "label": c.label, "overrides": dict(c.overrides),
                    "ranks": c.ranks, "n": len(mine),
                    "failed": sum(1 for r in runs if r["config"] == c.slug and not r["ok"]),
                    "stats": stats, "values": {m: v for m, v in values.items() if v},
                    "unavailable": unavailable})
    base = next(e for e in out if e["config"] == baseline.slug)
    for e in out:
        for m, s in e["stats"].items():
            b = base["stats"].get(m, {}).get("mean")
            s["ratio"] = s["mean"] / b if (b not in (None, 0) and s["mean"] is not None) else None
    return out


def _write_results_csv(path: Path, entries: List[dict], keys: List[str],
                       metric_names: List[str], emulated: bool = False) -> None:
    """One row per configuration; emulated tier results carry a `tiers` column saying so."""
    tiers = ["tiers"] if emulated else []
    header = (["config", *keys, "ranks", "n", *tiers]
              + [f"{m}_{s}" for m in metric_names for s in STATS])
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for e in entries:
            row = [e["config"], *[e["overrides"].get(k, "") for k in keys], e["ranks"], e["n"],
                   *(["emulated"] if emulated else [])]
            for m in metric_names:
                s = e["stats"].get(m, {})
                row += ["" if s.get(st) is None else repr(float(s[st])) for st in STATS]
            w.writerow(row)


def _scaling_rows(entries: List[dict], configs: List[Config]) -> List[dict]:
    """One row per (configuration, ranks) with speed-up and parallel efficiency against
    the smallest rank count of the same configuration."""
    rows = []
    by_slug = {c.slug: c for c in configs}
    groups: Dict[tuple, List[dict]] = {}
    for e in entries:
        groups.setdefault(by_slug[e["config"]].overrides, []).append(e)
    for overrides, group in groups.items():
        group = sorted(group, key=lambda e: e["ranks"])
        ref = group[0]
        for e in group:
            row = {"config": e["config"], "overrides": dict(overrides), "ranks": e["ranks"],
                   "n": e["n"]}
            for m in ("wall_seconds", "evolution_seconds"):
                s = e["stats"].get(m, {})
                short = m.split("_")[0]
                for st in ("mean", "min", "max", "std"):
                    row[f"{m}_{st}"] = s.get(st)
                t0 = ref["stats"].get(m, {}).get("mean")
                t = s.get("mean")
                ok = t0 and t
                row[f"speedup_{short}"] = t0 / t if ok else None
                row[f"efficiency_{short}"] = (t0 * ref["ranks"]) / (t * e["ranks"]) if ok else None
            for m in ("zone_updates_per_second", "zone_updates_per_second_per_core"):
                row[f"{m}_mean"] = e["stats"].get(m, {}).get("mean")
            rows.append(row)
    return rows


def _write_scaling_csv(path: Path, rows: List[dict], keys: List[str]) -> None:
    cols = ["wall_seconds_mean", "wall_seconds_min", "wall_seconds_max", "wall_seconds_std",
            "evolution_seconds_mean", "evolution_seconds_min", "evolution_seconds_max",
            "evolution_seconds_std", "zone_updates_per_second_mean",
            "zone_updates_per_second_per_core_mean", "speedup_wall", "efficiency_wall",
            "speedup_evolution", "efficiency_evolution"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", *keys, "ranks", "n", *cols])
        for r in rows:
            w.writerow([r["config"], *[r["overrides"].get(k, "") for k in keys], r["ranks"],
                        r["n"], *["" if r.get(c) is None else repr(float(r[c])) for c in cols]])


def _plot_label(entry: dict, rank_axis: bool) -> str:
    parts = [f"{k}={v}" for k, v in entry["overrides"].items()]
    if rank_axis:
        parts.append(f"ranks={entry['ranks']}")
    return "\n".join(parts) or "(base)"


def _plot_ratios(path: Path, entries: List[dict], base_label: str, title: str,
                 rank_axis: bool) -> Optional[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    metrics = [m for m in RATIO_PLOT_METRICS if any(m in e["stats"] for e in entries)]
    if not metrics:
        return None
    names = {"wall_seconds": "wall time", "evolution_seconds": "evolution time",
             "zone_updates_per_second": "zone-updates/s"}
    n = len(entries)
    x = np.arange(n)
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * n * len(metrics) / 2 + 2), 4.5))
    for i, m in enumerate(metrics):
        r, lo, hi = [], [], []
        for e in entries:
            s = e["stats"].get(m, {})
            ratio = s.get("ratio")
            if ratio is None:
                r.append(np.nan), lo.append(0.0), hi.append(0.0)
                continue
            scale = ratio / s["mean"] if s["mean"] else 0.0  # 1 / baseline mean
            r.append(ratio)
            lo.append(max(ratio - s["min"] * scale, 0.0))
            hi.append(max(s["max"] * scale - ratio, 0.0))
        ax.bar(x + (i - (len(metrics) - 1) / 2) * width, r, width, yerr=[lo, hi], capsize=3,
               label=names.get(m, m))
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels([_plot_label(e, rank_axis) for e in entries], fontsize=8)
    ax.set_ylabel(f"ratio to baseline\n({base_label})")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_metric(path: Path, entries: List[dict], metric: str, title: str,
                 rank_axis: bool) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.arange(len(entries))
    mean, lo, hi = [], [], []
    for e in entries:
        s = e["stats"].get(metric)
        if not s:
            mean.append(np.nan), lo.append(0.0), hi.append(0.0)
            continue
        mean.append(s["mean"])
        lo.append(max(s["mean"] - s["min"], 0.0))
        hi.append(max(s["max"] - s["mean"], 0.0))
    fig, ax = plt.subplots(figsize=(max(6.5, 1.1 * len(entries) + 2), 4.0))
    bars = ax.bar(x, mean, 0.6, yerr=[lo, hi], capsize=3, color="tab:blue")
    for b, e in zip(bars, entries):
        ratio = e["stats"].get(metric, {}).get("ratio")
        if ratio is not None:
            ax.annotate(f"×{ratio:.3g}", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=8, xytext=(0, 3),
                        textcoords="offset points")
    ax.set_xticks(x)
    ax.set_xticklabels([_plot_label(e, rank_axis) for e in entries], fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric}\n{title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_scaling(path: Path, rows: List[dict], title: str) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(11, 4.5))
    groups: Dict[str, List[dict]] = {}
    for r in rows:
        key = " ".join(f"{k}={v}" for k, v in r["overrides"].items())
        groups.setdefault(key, []).append(r)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    i = 0
    all_ranks = sorted({r["ranks"] for r in rows})
    for key, group in groups.items():
        group = sorted(group, key=lambda r: r["ranks"])
        ranks = np.array([r["ranks"] for r in group], dtype=float)
        for m, style, name in (("wall_seconds", "o-", "wall"),
                               ("evolution_seconds", "s--", "evolution")):
            mean = np.array([np.nan if r[f"{m}_mean"] is None else r[f"{m}_mean"] for r in group])
            if np.all(np.isnan(mean)):
                continue
            lo = np.array([0 if r[f"{m}_min"] is None else r[f"{m}_mean"] - r[f"{m}_min"]
                           for r in group])
            hi = np.array([0 if r[f"{m}_max"] is None else r[f"{m}_max"] - r[f"{m}_mean"]
                           for r in group])
            c = colours[i % len(colours)]
            i += 1
            label = f"{name} {key}".strip()
            ax_t.errorbar(ranks, mean, yerr=[np.maximum(lo, 0), np.maximum(hi, 0)], fmt=style,
                          color=c, capsize=3, label=label)
            ax_t.plot(ranks, mean[0] * ranks[0] / ranks, ":", color=c, lw=1,
                      label="ideal T(r0)·r0/r (dotted)" if i == 1 else "_nolegend_")
            short = m.split("_")[0]
            eff = [np.nan if r[f"efficiency_{short}"] is None else r[f"efficiency_{short}"]
                   for r in group]
            ax_e.plot(ranks, eff, style, color=c, label=label)
    for ax in (ax_t, ax_e):
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_ranks)
        ax.set_xticklabels([str(r) for r in all_ranks])
        ax.set_xlabel("MPI ranks")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("time [s] (trimmed mean, min/max bars)")
    ax_e.axhline(1.0, color="k", lw=0.8)
    ax_e.set_ylabel("parallel efficiency T(r0)·r0 / (T(r)·r)")
    ax_e.set_ylim(0, max(1.2, ax_e.get_ylim()[1]))
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _json_default(x):
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _clean(x):
    """NaN/inf -> None so that summary.json stays valid JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _phase_table(entries: List[dict], keys: List[str], phases: Sequence[str],
                 base_label: str, emulated: bool) -> str:
    """Per-phase trimmed-mean seconds per configuration and each phase's ratio to the
    baseline's (the study's Figure 7 as a table), plus their sum."""
    header = [*(keys or ["config"]), "n"]
    for p in phases:
        header += [f"{p} [s]", "x base"]
    header += ["sum [s]", "x base"]
    rows = []
    base = next((e for e in entries if e["label"] == base_label), entries[0])
    base_sum = sum((base["stats"].get(f"phase.{p}", {}).get("mean") or 0.0) for p in phases)
    for e in entries:
        row = [e["overrides"].get(k, "") for k in keys] if keys else [e["label"]]
        row.append(str(e["n"]))
        total = 0.0
        for p in phases:
            st = e["stats"].get(f"phase.{p}", {})
            total += st.get("mean") or 0.0
            row += [_fmt(st.get("mean"), "s"), _fmt(st.get("ratio"), "ratio")]
        row += [_fmt(total, "s"), _fmt(total / base_sum if base_sum else None, "ratio")]
        rows.append(row)
    text = _table(header, rows, left=max(1, len(keys)))
    head = f"phases (ratios to {base_label})" + (f"; {EMULATED_LABEL}" if emulated else "")
    return head + "\n" + text


def _write_phase_csv(path: Path, entries: List[dict], keys: List[str],
                     phases: Sequence[str], emulated: bool = False) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*keys, "ranks", "n", "tiers"] + [f"{p}_{s}" for p in phases
                                                     for s in ("mean", "min", "max", "ratio")])
        for e in entries:
            row = [e["overrides"].get(k, "") for k in keys] + [e["ranks"], e["n"],
                                                               "emulated" if emulated else "real"]
            for p in phases:
                st = e["stats"].get(f"phase.{p}", {})
                row += [st.get(x) for x in ("mean", "min", "max", "ratio")]
            w.writerow(row)


def _plot_phases(path: Path, entries: List[dict], phases: Sequence[str], base_label: str,
                 title: str) -> Path:
    """Left: stacked per-phase seconds per configuration, the sum's ratio to the baseline
    on top (the study's Figure 6); right: each phase's ratio to the baseline (Figure 7)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    keys = sorted({k for e in entries for k in e["overrides"]})
    if len(keys) == 1:  # one varied key: its values label the bars, the key the axis
        labels = [str(e["overrides"].get(keys[0], "")) for e in entries]
    else:
        labels = [_plot_label(e, False) for e in entries]
    x = np.arange(len(entries))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(max(10.0, 1.6 * len(entries) + 5), 4.8))
    bottom = np.zeros(len(entries))
    for p in phases:
        v = np.array([e["stats"].get(f"phase.{p}", {}).get("mean") or 0.0 for e in entries])
        a1.bar(x, v, 0.6, bottom=bottom, label=p)
        bottom += v
    base = next((e for e in entries if e["label"] == base_label), entries[0])
    base_sum = sum((base["stats"].get(f"phase.{p}", {}).get("mean") or 0.0) for p in phases)
    for xi, tot in zip(x, bottom):
        if base_sum:
            a1.annotate(f"×{tot / base_sum:.2f}", (xi, tot), ha="center", va="bottom",
                        fontsize=8, xytext=(0, 2), textcoords="offset points")
    a1.set_xticks(x)
    a1.set_xticklabels(labels, fontsize=7, rotation=20)
    if len(keys) == 1:
        a1.set_xlabel(keys[0], fontsize=8)
    a1.set_ylabel("seconds (max over ranks, trimmed mean)")
    a1.legend(fontsize=7)
    a1.set_title("time per phase", fontsize=9)
    width = 0.8 / max(1, len(phases))
    for i, p in enumerate(phases):
        r = [e["stats"].get(f"phase.{p}", {}).get("ratio") for e in entries]
        a2.bar(x + (i - (len(phases) - 1) / 2) * width,
               [np.nan if v is None else v for v in r], width, label=p)
    a2.axhline(1.0, color="k", lw=0.8)
    a2.set_xticks(x)
    a2.set_xticklabels(labels, fontsize=7, rotation=20)
    if len(keys) == 1:
        a2.set_xlabel(keys[0], fontsize=8)
    a2.set_ylabel(f"ratio to {base_label}")
    a2.set_title("each phase against the baseline", fontsize=9)
    a2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _ratio_tables(entries: List[dict], metric_names: List[str], keys: List[str],
                  baseline_slug: str, rank_axis: bool) -> str:
    """The human-readable tables printed at the end."""
    header = [*(keys or ["config"])]
    if rank_axis:
        header.append("ranks")
    header.append("n")
    cols = [("wall_seconds", "wall [s]", "s"), ("evolution_seconds", "evol [s]", "s"),
            ("zone_updates_per_second", "zone-upd/s", "g"),
            ("memory.peak_rss_bytes", "peak RSS [B]", "g"),
            ("memory.huge_bytes", "huge [B]", "g")]
    cols = [c for c in cols if c[0] in metric_names]
    for _, title, _ in cols:
        header += [title, "x base"]
    rows = []
    for e in entries:
        mark = " *" if e["config"] == baseline_slug else ""
        first = [e["overrides"].get(k, "") for k in keys] if keys else ["(base)"]
        first[0] += mark
        row = first + ([str(e["ranks"])] if rank_axis else []) + [str(e["n"])]
        for m, _, kind in cols:
            s = e["stats"].get(m, {})
            row += [_fmt(s.get("mean"), kind), _fmt(s.get("ratio"), "ratio")]
        rows.append(row)
    text = _table(header, rows, left=max(1, len(keys)))
    others = [m for m in metric_names if m.startswith(("counter.", "derived."))]
    if others:
        h2 = ["metric (ratio to baseline)"] + [_plot_label(e, rank_axis).replace("\n", " ")
                                              for e in entries]
        r2 = [[m] + [_fmt(e["stats"].get(m, {}).get("ratio"), "ratio") for e in entries]
              for m in others]
        text += "\n\n" + _table(h2, r2)
    return text + "\n(* baseline; means are trimmed; x base = mean / baseline mean)"


def run_bench(spec: Spec, log=print) -> int:
    """Run the matrix described by ``spec`` and write its outputs into ``spec.out``;
    ``log`` (print's signature) receives the progress lines and tables.

    Returns 0 when every run succeeded, 1 when any failed (the outputs then hold what
    the successful runs gave).  Raises BenchError for usage and set-up errors.
    """
    spec.problem = spec.problem.resolve()
    validate(spec)
    exe = find_executable(spec.exe)
    check_keys(spec, known_parameters(exe))
    if spec.restart and Path(spec.restart).exists():
        spec.restart = str(Path(spec.restart).resolve())

    rank_axis = spec.scaling is not None
    ranks = sorted(spec.scaling) if rank_axis else [spec.ranks]
    configs = build_matrix(spec.vary, ranks, rank_axis)
    keys = [k for k, _ in spec.vary]
    if spec.baseline:
        unknown = [k for k in spec.baseline if k not in keys and k != "ranks"]
        if unknown:
            raise BenchError(f"--baseline {', '.join(unknown)}: not a varied key "
                             f"(varied: {', '.join(keys) or 'none'})")
        hits = [c for c in configs if c.matches(spec.baseline)]
        if len(hits) != 1:
            what = "no configuration" if not hits else f"{len(hits)} configurations"
            wanted = ",".join(f"{k}={v}" for k, v in spec.baseline.items())
            raise BenchError(f"--baseline {wanted}: matches {what}; name one value "
                             "for each varied key")
        baseline = hits[0]
    else:
        baseline = configs[0]

    out = spec.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    machine = machine_info()
    machine["loadavg_start"] = _loadavg()
    machine["started_at"] = _now()
    cores = machine.get("cores_available") or machine.get("nproc") or 1
    if max(ranks) > cores:
        log(f"warning: {max(ranks)} ranks on {cores} cores: oversubscribed timings "
            "measure the scheduler as much as the code")

    total = len(configs) * spec.repeat
    runs: List[dict] = []
    k = 0
    for rep in range(1, spec.repeat + 1):
        for c in configs:
            k += 1
            run_dir = out / "runs" / c.slug / f"rep{rep}"
            cmd = command_for(spec, exe, c, run_dir)
            res = run_one(cmd, run_dir, spec.timeout)
            record = {"config": c.slug, "label": c.label, "rep": rep, "ranks": c.ranks,
                      "dir": str(run_dir.relative_to(out)), "command": shlex.join(cmd),
                      "returncode": res["returncode"], "ok": res["ok"], "error": res["error"],
                      "process_seconds": res["process_seconds"], "metrics": {},
                      "unavailable": {}}
            if res["ok"]:
                m, unavailable = extract_metrics(res["summary"], c.ranks, spec.timer_depth)
                m.update(phase_metrics(res["summary"], spec.phases))
                record["metrics"], record["unavailable"] = m, unavailable
                record["tiers"] = tier_info(res["summary"])
                t = m.get("wall_seconds", res["process_seconds"])
                log(f"[{k}/{total}] {c.label} rep {rep}: {fmt_seconds(t)} s", flush=True)
            else:
                why = "" if res["timed_out"] else f" (exit {res['returncode']})"
                log(f"[{k}/{total}] {c.label} rep {rep}: FAILED{why}: {res['error']}",
                    flush=True)
            runs.append(record)

    machine["loadavg_end"] = _loadavg()
    machine["finished_at"] = _now()
    emulated_runs = sorted({r["label"] for r in runs if (r.get("tiers") or {}).get("emulated")})
    real_runs = sorted({r["label"] for r in runs
                        if r["ok"] and not (r.get("tiers") or {}).get("emulated")})
    if emulated_runs and real_runs:
        (out / "runs.json").write_text(json.dumps(_clean(runs), indent=1,
                                                  default=_json_default) + "\n")
        raise BenchError("refusing to tabulate emulated and real tier results together: "
                         f"emulated {emulated_runs}, real {real_runs} (their runs are in "
                         f"{out / 'runs'}, listed in {out / 'runs.json'})")
    emulated = bool(emulated_runs)
    metric_names = order_metrics({m for r in runs for m in r["metrics"]})
    entries = _collect(configs, runs, spec.trim, baseline, metric_names)

    files = {"results_csv": "results.csv", "summary_json": "summary.json", "png": []}
    _write_results_csv(out / "results.csv", entries, keys, metric_names, emulated)
    first_ok = next((r for r in runs if r["ok"]), None)
    title = (f"{spec.problem.name}, ranks {','.join(map(str, ranks))}: trimmed mean of "
             f"{spec.repeat} (drop {spec.trim} fastest + {spec.trim} slowest)")
    if emulated:
        title += f"\n{EMULATED_LABEL}"
    scaling_rows = None
    if spec.phases and any(f"phase.{p}" in metric_names for p in spec.phases):
        _write_phase_csv(out / "phases.csv", entries, keys, spec.phases, emulated)
        files["phases_csv"] = "phases.csv"
        _plot_phases(out / "phases.png", entries, spec.phases, baseline.label, title)
        files["png"].append("phases.png")
    if rank_axis:
        scaling_rows = _scaling_rows(entries, configs)
        _write_scaling_csv(out / "scaling.csv", scaling_rows, keys)
        files["scaling_csv"] = "scaling.csv"
        if any(r["wall_seconds_mean"] is not None for r in scaling_rows):
            _plot_scaling(out / "scaling.png", scaling_rows, title)
            files["png"].append("scaling.png")
    else:
        if _plot_ratios(out / "ratios.png", entries, baseline.label, title, rank_axis):
            files["png"].append("ratios.png")
        counter_metrics = [m for m in metric_names if m.startswith(("counter.", "derived."))]
        if counter_metrics:
            (out / "counters").mkdir(exist_ok=True)
        for m in counter_metrics:
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", m) + ".png"
            _plot_metric(out / "counters" / name, entries, m, title, rank_axis)
            files["png"].append(f"counters/{name}")

    failures = [r for r in runs if not r["ok"]]
    doc = {
        "tool": "tessera bench",
        "mode": "scaling" if rank_axis else "matrix",
        "command": shlex.join(spec.argv) if spec.argv else None,
        "problem_file": str(spec.problem),
        "problem": None if first_ok is None else
        json.loads((out / first_ok["dir"] / "summary.json").read_text()).get("problem"),
        "exe": str(exe), "exe_sha256": _sha256(exe),
        "repeat": spec.repeat, "trim": spec.trim,
        "ranks": ranks if rank_axis else spec.ranks,
        "mpirun": spec.mpirun or (DEFAULT_MPIRUN if max(ranks) > 1 else None),
        "restart": spec.restart,
        "vary": {k: v for k, v in spec.vary}, "set": dict(spec.fixed),
        "baseline": {"config": baseline.slug, "label": baseline.label,
                     "overrides": dict(baseline.overrides), "ranks": baseline.ranks},
        "machine": machine,
        "metrics": metric_names,
        "tiers": {"emulated": emulated, "label": EMULATED_LABEL if emulated else None},
        "phases": spec.phases,
        "configurations": entries,
        "runs": runs,
        "failed_runs": len(failures),
        "files": files,
    }
    if scaling_rows is not None:
        doc["scaling"] = scaling_rows
    (out / "summary.json").write_text(json.dumps(_clean(doc), indent=1, default=_json_default)
                                      + "\n")

    log("")
    if emulated:
        log(f"*** {EMULATED_LABEL} ***")
    log(_ratio_tables(entries, metric_names, keys, baseline.slug, rank_axis))
    if spec.phases and any(f"phase.{p}" in metric_names for p in spec.phases):
        log("")
        log(_phase_table(entries, keys, spec.phases, baseline.label, emulated))
    if scaling_rows:
        log("")
        srows = [[" ".join(f"{k}={v}" for k, v in r["overrides"].items()) or "(base)",
                  str(r["ranks"]), str(r["n"]), _fmt(r["wall_seconds_mean"], "s"),
                  _fmt(r["efficiency_wall"], "ratio"), _fmt(r["evolution_seconds_mean"], "s"),
                  _fmt(r["efficiency_evolution"], "ratio"),
                  _fmt(r["zone_updates_per_second_per_core_mean"])] for r in scaling_rows]
        log(_table(["config", "ranks", "n", "wall [s]", "eff wall", "evol [s]", "eff evol",
                    "zone-upd/s/core"], srows))
        log("(efficiency = T(r0)*r0 / (T(r)*r) against the smallest rank count)")
    unavailable = {m: why for e in entries for m, why in e["unavailable"].items()}
    if unavailable:
        # One line per counter and reason, with the regions it applies to counted (a
        # counter the machine lacks is unavailable in every region alike).
        by_reason: Dict[tuple, List[str]] = {}
        for m, why in sorted(unavailable.items()):
            head, _, counter = m.rpartition(".")
            by_reason.setdefault((counter, why), []).append(head)
        for (counter, why), where in sorted(by_reason.items()):
            at = where[0] if len(where) == 1 else f"{len(where)} regions"
            log(f"unavailable: {counter} ({at}): {why}")
    log(f"written: {out / 'results.csv'}, {out / 'summary.json'}"
        + "".join(f", {out / p}" for p in files["png"][:3])
        + (f" (+{len(files['png']) - 3} more PNGs)" if len(files["png"]) > 3 else "")
        + (f", {out / 'scaling.csv'}" if rank_axis else ""))
    if failures:
        print(f"tessera bench: {len(failures)} of {total} runs failed:", file=sys.stderr)
        seen = set()
        for r in failures:
            if (r["label"], r["error"]) in seen:
                continue
            seen.add((r["label"], r["error"]))
            n_same = sum(1 for f in failures
                         if f["label"] == r["label"] and f["error"] == r["error"])
            print(f"  {r['label']} ({n_same}x, e.g. {r['dir']}): {r['error']}", file=sys.stderr)
        return 1
    return 0

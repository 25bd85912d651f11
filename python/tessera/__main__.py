"""Command line: ``python -m tessera {verify,plot,bench} ...``.

verify DIR   print one JSON object with the error norms of the last output in DIR
plot DIR     write a slice (2-D/3-D) or profile (1-D) PNG of the last output in DIR
             (with leaf blocks and zone-updates/s over the run from DIR/history.csv)
bench FILE   run a configuration matrix x R repeats of FILE: trimmed means, ratio table,
             results.csv, summary.json, bar charts (or --scaling: scaling plot)
"""

from __future__ import annotations

import argparse
import json
import sys


def _cmd_verify(args) -> int:
    from .verify import VerifyError, verify

    try:
        result = verify(args.dir)
    except (VerifyError, OSError, KeyError, ValueError) as exc:
        print(f"tessera verify: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1 if args.pretty else None))
    return 0


def _cmd_plot(args) -> int:
    from .plot import plot

    try:
        path = plot(args.dir, out=args.out, var=args.var, file=args.file, log=args.log,
                    history=not args.no_history)
    except (FileNotFoundError, KeyError, OSError, ValueError) as exc:
        print(f"tessera plot: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


def _cmd_bench(args) -> int:
    from pathlib import Path

    from .bench import BenchError, Spec, parse_assignment, parse_int_list, parse_vary, run_bench

    try:
        baseline = {}
        for item in args.baseline.split(",") if args.baseline else []:
            k, v = parse_assignment(item, "--baseline")
            baseline[k] = v
        if args.scaling is not None and args.ranks is not None:
            raise BenchError("give either --ranks N or --scaling LIST, not both")
        spec = Spec(problem=Path(args.file), out=Path(args.out),
                    vary=[parse_vary(v) for v in args.vary],
                    fixed=[parse_assignment(v, "--set") for v in args.set],
                    repeat=args.repeat, trim=args.trim,
                    ranks=args.ranks if args.ranks is not None else 1,
                    scaling=parse_int_list(args.scaling, "--scaling") if args.scaling else None,
                    baseline=baseline, exe=args.exe, mpirun=args.mpirun,
                    restart=args.restart, timeout=args.timeout, timer_depth=args.timer_depth,
                    phases=[x for x in (args.phases or "").split(",") if x],
                    argv=[sys.executable, "-m", "tessera", *sys.argv[1:]])
        return run_bench(spec)
    except BenchError as exc:
        print(f"tessera bench: error: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (one sub-parser per command)."""
    parser = argparse.ArgumentParser(prog="python -m tessera",
                                     description="Tessera verification and plotting tools.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("verify", help="error norms of a run against its exact solution (JSON)")
    p.add_argument("dir", help="run directory (its last output is used) or one output file")
    p.add_argument("--pretty", action="store_true", help="indent the JSON (default: one line)")
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("plot", help="slice image (2-D/3-D) or profile (1-D) of an output")
    p.add_argument("dir", help="run directory")
    p.add_argument("--out", default=None,
                   help="PNG to write (default DIR/density_slice.png, DIR/<var>_slice.png)")
    p.add_argument("--var", default="dens", help="variable to plot (default dens)")
    p.add_argument("--file", default=None, help="plot this output instead of the last one")
    p.add_argument("--log", action="store_true", help="logarithmic colour / y scale")
    p.add_argument("--no-history", action="store_true",
                   help="leave out the panel of leaf blocks and zone-updates/s over the run "
                   "(drawn when DIR holds history.csv)")
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser(
        "bench", help="configuration matrix x repeats: trimmed means, ratios, plots",
        description="Run FILE for every configuration of the Cartesian product of the "
        "--vary lists, --repeat times each (interleaved), and write DIR/results.csv, "
        "DIR/summary.json and bar charts of the ratios to the baseline; with --scaling, "
        "run it on each rank count and write scaling.csv and scaling.png. Means drop the "
        "--trim fastest and slowest runs of each metric. Exit status: 0 all runs "
        "succeeded, 1 some run failed (outputs still written), 2 usage error.")
    p.add_argument("file", help="problem file (TOML), e.g. problems/sedov_2d.toml")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2",
                   help="a parameter and its values; repeat for more axes (the matrix is "
                   "their Cartesian product)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a fixed override for every run (repeatable)")
    p.add_argument("--repeat", type=int, default=7, metavar="R",
                   help="runs per configuration (default 7)")
    p.add_argument("--trim", type=int, default=1, metavar="T",
                   help="drop the T fastest and T slowest runs of each metric before "
                   "averaging (default 1; needs R >= 2T+1)")
    p.add_argument("--ranks", type=int, default=None, metavar="N",
                   help="MPI ranks per run (default 1)")
    p.add_argument("--scaling", default=None, metavar="N1,N2,...",
                   help="scaling mode: run on each of these rank counts; writes scaling.csv "
                   "and scaling.png (efficiency against the smallest count)")
    p.add_argument("--baseline", default=None, metavar="KEY=VALUE[,KEY=VALUE]",
                   help="configuration that ratios are taken against (default: the first); "
                   "must match exactly one configuration")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--exe", default=None, metavar="PATH",
                   help="tessera executable (default $TESSERA_EXE, else build/bin/tessera)")
    p.add_argument("--mpirun", default=None, metavar="PREFIX",
                   help="launcher prefix, '-n N' appended unless it contains {n} (default "
                   "'mpirun --oversubscribe --allow-run-as-root' when ranks > 1; when given "
                   "it is used for 1 rank too)")
    p.add_argument("--restart", default=None, metavar="CHECKPOINT",
                   help="pass --restart CHECKPOINT to every run")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="kill a run (and its ranks) after this long; it counts as failed")
    p.add_argument("--timer-depth", type=int, default=1, metavar="D",
                   help="timer regions down to this depth below 'total' become metrics "
                   "timer.<path> (default 1; 0: none)")
    p.add_argument("--phases", default=None, metavar="R1,R2,...",
                   help="timer regions (paths such as pic/push) tabulated per configuration "
                   "with their ratios to the baseline; writes phases.csv and phases.png "
                   "(stacked seconds, per-phase ratios)")
    p.set_defaults(func=_cmd_bench)
    return parser


def main(argv=None) -> int:
    """Entry point; returns the process exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``python -m tessera {verify,plot} ...``.

verify DIR   print one JSON object with the error norms of the last output in DIR
plot DIR     write a slice (2-D/3-D) or profile (1-D) PNG of the last output in DIR
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
        path = plot(args.dir, out=args.out, var=args.var, file=args.file, log=args.log)
    except (FileNotFoundError, KeyError, OSError, ValueError) as exc:
        print(f"tessera plot: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


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
    p.set_defaults(func=_cmd_plot)

    # bench: the configuration-matrix harness (DESIGN.md, "Python package") will be
    # registered here as `sub.add_parser("bench", ...)` once it exists; it is not
    # implemented yet.
    return parser


def main(argv=None) -> int:
    """Entry point; returns the process exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``python -m dapx info`` and ``python -m dapx demo``."""

from __future__ import annotations

import argparse
import sys

from .cli.info import info_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dapx", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions of dapx and its dependencies, available backends")
    sub.add_parser(
        "demo",
        add_help=False,  # the demo parses its own options (python -m dapx demo --help)
        help="the main job: a 2-D heat equation on a distributed array with a halo "
        "(4 simulated ranks, or MPI under mpiexec)",
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "demo":
        from .cli.demo import main as demo

        return demo(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    print(info_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

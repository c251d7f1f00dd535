"""Command line: ``python -m dapx info``."""

from __future__ import annotations

import argparse
import sys

from .info import info_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dapx", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="versions of dapx and its dependencies, available backends")
    args = parser.parse_args(argv)
    if args.command == "info":
        print(info_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

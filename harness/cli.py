"""The `magbench` command line."""

from __future__ import annotations

import argparse
import logging
import sys

from reference.encoders import ENCODER_NAMES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="magbench", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine decides")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="ingest a generated haystack with needles and search it")
    demo.add_argument("--encoder", choices=ENCODER_NAMES, default="auto")
    demo.add_argument("--size", type=int, default=2000, help="documents in the haystack")
    demo.add_argument("--path", help="persist the memory in this directory (embedded Chroma)")
    demo.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(encoder_name=args.encoder, size=args.size, path=args.path, seed=args.seed)
    return 2


if __name__ == "__main__":
    sys.exit(main())

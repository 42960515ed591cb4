"""The ``kafka-epochs`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kafka_epochs.wire.errors import KafkaEpochsError

#: Where ``generate`` reads and writes by default: this checkout's bundled specs and package.
_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPECS = _ROOT / "messages"
DEFAULT_OUT = Path(__file__).resolve().parent / "messages"


def _generate(args: argparse.Namespace) -> int:
    if not args.specs.is_dir():
        print(f"kafka-epochs: spec directory {args.specs} does not exist (give --specs DIR)", file=sys.stderr)
        return 2
    from kafka_epochs.codegen.build import stale_files, write_construct_modules, write_package

    if args.backend == "construct":
        written = write_construct_modules(args.specs, args.out)
        print(f"wrote construct definitions of {len(written)} messages from {args.specs} into {args.out}")
        return 0
    if args.check:
        stale = stale_files(args.specs, args.out)
        if stale:
            print(f"kafka-epochs: {len(stale)} generated files differ from {args.specs}: "
                  f"{', '.join(sorted(stale)[:5])}; run kafka-epochs generate", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date with {args.specs}")
        return 0
    written = write_package(args.specs, args.out)
    print(f"generated {len(written) - 2} message modules from {args.specs} into {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-epochs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="generate Python modules from a directory of JSON message specs")
    gen.add_argument("--specs", type=Path, default=DEFAULT_SPECS, help="spec directory (default: messages/)")
    gen.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output package directory")
    gen.add_argument("--backend", choices=("python", "construct"), default="python",
                     help="python: the fast classes (default); construct: readable construct definitions per version")
    gen.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if the output differs from what the specs generate")
    gen.set_defaults(run=_generate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except (KafkaEpochsError, OSError, ValueError) as e:
        print(f"kafka-epochs: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

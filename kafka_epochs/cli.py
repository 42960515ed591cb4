"""The kafka-epochs command line: generate codecs from specs, decode captures, audit epochs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_epochs.errors import KafkaEpochsError

#: What ``generate`` regenerates by default: each bundled spec source and its committed package.
_ROOT = Path(__file__).resolve().parent.parent
_PACKAGE = Path(__file__).resolve().parent
CATALOGUE = _ROOT / "messages" / "apache" / "catalogue.json"
BUNDLED_SOURCES = ((_ROOT / "messages", _PACKAGE / "messages"), (CATALOGUE, _PACKAGE / "apache"))
#: The catalogue's default inputs, oldest first: Apache Kafka 3.9.0's specs and Kafka 4.0's
#: development specs of 2024-10-25 beside the checkout (the first with KIP-848's
#: ConsumerGroupHeartbeat v1, EndTxn v5, UpdateFeatures v2), then the Kafka 4.x client-API specs
#: that kafka-python's wheel ships.
KAFKA_39_SPECS = _ROOT.parent / "shared" / "reference" / "kafka-3.9.0" / "message"
KAFKA_40_DEV_SPECS = _ROOT.parent / "shared" / "reference" / "kafka-4.0-dev-2024-10-25" / "message"

EXAMPLES = """examples:
  kafka-epochs decode capture.pcapng                      one JSON line per request/response pair
  kafka-epochs decode captures/ --format table --api produce --errors-only
  tcpdump -i any -w - port 9092 | kafka-epochs decode -   decode live traffic as it arrives
  kafka-epochs decode capture.pcap --protocol apache      Apache Kafka's layouts only
  kafka-epochs spark-decode captures/ --out decoded/      the same at scale, into Parquet
  kafka-epochs audit captures/                            leader-epoch timeline and fenced requests
  kafka-epochs generate --specs my-specs/ --out mypkg/    codecs for your own spec directory

'kafka-epochs COMMAND --help' describes each command's options."""


def _generate(args: argparse.Namespace) -> int:
    if (args.specs is None) != (args.out is None):
        print(
            "kafka-epochs: give both --specs and --out, or neither (to regenerate the bundled packages)",
            file=sys.stderr,
        )
        return 2
    pairs = BUNDLED_SOURCES if args.specs is None else ((args.specs, args.out),)
    for specs, out in pairs:
        if not specs.exists():
            print(f"kafka-epochs: spec source {specs} does not exist (give --specs DIR and --out DIR)", file=sys.stderr)
            return 2
        if not args.check and _installed(out):
            print(
                f"kafka-epochs: refusing to write into {out}: it is inside an installed package "
                "(site-packages); give --out a directory of your project",
                file=sys.stderr,
            )
            return 2
    from kafka_epochs.codegen.build import stale_files, write_construct_modules, write_package

    status = 0
    for specs, out in pairs:
        if args.backend == "construct":
            written = write_construct_modules(specs, out)
            print(f"wrote construct definitions of {len(written)} messages from {specs} into {out}")
        elif args.check:
            stale = stale_files(specs, out)
            if stale:
                print(
                    f"kafka-epochs: {len(stale)} generated files in {out} differ from {specs}: "
                    f"{', '.join(sorted(stale)[:5])}; run kafka-epochs generate",
                    file=sys.stderr,
                )
                status = 1
            else:
                print(f"{out} is up to date with {specs}")
        else:
            written = write_package(specs, out)
            print(f"generated {len(written) - 3} message modules from {specs} into {out}")
    if args.specs is None and args.backend != "construct":
        status = max(status, _typed_profiles(args.check))
    return status


def _typed_profiles(check: bool) -> int:
    """Write (or, with ``check``, compare) the bundled profiles' typed view beside the packages."""
    from kafka_epochs.codegen.build import load_source
    from kafka_epochs.codegen.typed import MODULE_FILE, typed_profiles_source

    text = typed_profiles_source(
        (spec.name for spec in load_source(CATALOGUE)), (spec.name for spec in load_source(_ROOT / "messages"))
    )
    path = _PACKAGE / MODULE_FILE
    if check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            print(
                f"kafka-epochs: {path} differs from what the bundled specs give; run kafka-epochs generate",
                file=sys.stderr,
            )
            return 1
        print(f"{path} is up to date")
        return 0
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    print(f"wrote the typed profiles into {path}")
    return 0


def _installed(path: Path) -> bool:
    """Whether ``path`` is inside an installed Python distribution, where nothing should be written."""
    return any(part in ("site-packages", "dist-packages") for part in path.resolve().parts)


def _catalogue_sources(inputs: list[str] | None) -> list[Any]:
    from kafka_epochs.spec.catalogue import SpecSource

    if inputs:
        sources = []
        for text in inputs:
            label, sep, directory = text.partition("=")
            if not sep or not label:
                raise ValueError(f"--input takes LABEL=DIR, not {text!r}")
            sources.append(SpecSource(label, Path(directory)))
        return sources
    import importlib.util

    found = importlib.util.find_spec("kafka")
    if found is None or found.origin is None:
        raise ValueError("kafka-python is not installed (pip install -e '.[dev]'): it carries the Kafka 4.x specs")
    kafka_4x = Path(found.origin).parent / "protocol" / "schemas" / "resources"
    return [
        SpecSource("kafka-3.9.0", KAFKA_39_SPECS),
        SpecSource("kafka-4.0-dev-2024-10-25", KAFKA_40_DEV_SPECS),
        SpecSource("kafka-4.x@kafka-python-3.0.12", kafka_4x),
    ]


def _catalogue(args: argparse.Namespace) -> int:
    from kafka_epochs.spec.catalogue import build_catalogue, load_catalogue, render_catalogue, verify

    sources = _catalogue_sources(args.input)
    for source in sources:
        if not source.directory.is_dir():
            print(f"kafka-epochs: catalogue input {source.label}: no directory {source.directory}", file=sys.stderr)
            return 2
    text = render_catalogue(build_catalogue(sources))
    if args.check:
        if not args.out.is_file() or args.out.read_text(encoding="utf-8") != text:
            print(
                f"kafka-epochs: {args.out} differs from what its inputs give; run kafka-epochs catalogue",
                file=sys.stderr,
            )
            return 1
        print(f"{args.out} is up to date with {', '.join(s.label for s in sources)}")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    checked = verify(load_catalogue(args.out), sources)
    print(
        f"wrote {args.out}: {text.count(chr(10)) - 5} messages, {checked} (message, version) layouts "
        f"equal to their inputs'"
    )
    return 0


def protocol_for(choices: list[str] | None) -> Any:
    """The protocol of ``--protocol``/``--specs`` values: a profile name or a spec directory each,
    chained in order when there are several; ``auto`` when none is given."""
    from kafka_epochs.protocol import PROFILES, Protocol, ProtocolChain

    def generating(target: Path) -> None:
        print(
            f"kafka-epochs: generating decoders for a spec directory on its first use (a few seconds; "
            f"cached in {target})",
            file=sys.stderr,
        )

    protocols = [
        getattr(Protocol, choice)() if choice in PROFILES else Protocol.from_specs(choice, on_generate=generating)
        for choice in choices or ["auto"]
    ]
    return protocols[0] if len(protocols) == 1 else ProtocolChain(protocols)


def protocol_choice(text: str) -> str:
    """An argparse type for ``--protocol``/``--specs``: a profile name, or a directory of specs."""
    from kafka_epochs.protocol import PROFILES

    if text in PROFILES:
        return text
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is neither a profile ({', '.join(PROFILES)}) nor a directory")
    if not any(path.glob("*.json")):
        raise argparse.ArgumentTypeError(f"{text} holds no Kafka message specs (no *.json files)")
    return text


def add_protocol_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol",
        action="append",
        metavar="apache|kip|auto|DIR",
        dest="protocol",
        type=protocol_choice,
        help="how to read bodies: 'auto' (default: Apache Kafka's layouts, and the KIP layouts of "
        "messages/ where only they fit a frame), 'apache', 'kip', or a spec directory; repeatable: "
        "the first that defines a frame's api and version reads it",
    )
    parser.add_argument(
        "--specs",
        action="append",
        metavar="DIR",
        dest="protocol",
        type=protocol_choice,
        help="a spec directory (same as --protocol DIR)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-epochs", description=__doc__, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action=_VersionAction, help="show the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gen = commands.add_parser("generate", help="generate Python modules from a directory of JSON message specs")
    gen.add_argument(
        "--specs",
        type=Path,
        help="spec directory or catalogue file (with --out; without both, "
        "regenerate the bundled packages of a source checkout: messages/ into kafka_epochs/messages/ "
        "and messages/apache/catalogue.json into kafka_epochs/apache/)",
    )
    gen.add_argument(
        "--out", type=Path, help="output package directory, with --specs (never inside an installed package)"
    )
    gen.add_argument(
        "--backend",
        choices=("python", "construct"),
        default="python",
        help="python: the fast classes (default); construct: readable construct definitions per version",
    )
    gen.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the output differs from what the specs generate"
    )
    gen.set_defaults(run=_generate)

    cat = commands.add_parser("catalogue", help="(maintainers) rebuild the Apache protocol catalogue from its inputs")
    cat.add_argument(
        "--input",
        action="append",
        metavar="LABEL=DIR",
        help="a spec directory, oldest first (repeatable; default: Kafka 3.9.0 from ../shared, "
        "Kafka 4.0's development specs of 2024-10-25 from ../shared, then Kafka 4.x's client APIs from "
        "kafka-python's wheel)",
    )
    cat.add_argument("--out", type=Path, default=CATALOGUE, help="catalogue file (default: %(default)s)")
    cat.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file differs")
    cat.set_defaults(run=_catalogue)

    from kafka_epochs.decode_command import add_decode_command

    add_decode_command(commands)
    from kafka_epochs.spark.job import add_spark_commands  # imports no Spark until a command runs

    add_spark_commands(commands)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (package metadata is slow
    to import, and every other run would pay for it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-epochs")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits with status 2 on bad usage
    try:
        return int(args.run(args))
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted (before OSError, its base)
        sys.stderr.close()  # nothing more can be said, and Python must not complain at exit either
        return 0
    except (KafkaEpochsError, OSError, ValueError) as e:
        print(f"kafka-epochs: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``kafka-epochs generate`` and ``kafka-epochs catalogue``: the code and the catalogue from specs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

#: What ``generate`` regenerates by default: each bundled spec source and its committed package.
_PACKAGE = Path(__file__).resolve().parents[1]
_ROOT = _PACKAGE.parent
CATALOGUE = _ROOT / "messages" / "apache" / "catalogue.json"
BUNDLED_SOURCES = ((_ROOT / "messages", _PACKAGE / "messages"), (CATALOGUE, _PACKAGE / "apache"))
#: The catalogue's default inputs, oldest first: Apache Kafka 3.9.0's specs and Kafka 4.0's
#: development specs of 2024-10-25 beside the checkout (the first with KIP-848's
#: ConsumerGroupHeartbeat v1, EndTxn v5, UpdateFeatures v2), then the Kafka 4.x client-API specs
#: that kafka-python's wheel ships.
KAFKA_39_SPECS = _ROOT.parent / "shared" / "reference" / "kafka-3.9.0" / "message"
KAFKA_40_DEV_SPECS = _ROOT.parent / "shared" / "reference" / "kafka-4.0-dev-2024-10-25" / "message"


def add_generate_commands(commands: Any) -> None:
    """Add ``generate`` and ``catalogue`` to the ``kafka-epochs`` parser's subcommands."""
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

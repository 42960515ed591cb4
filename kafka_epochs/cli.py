"""The ``kafka-epochs`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_epochs.wire.errors import KafkaEpochsError

#: What ``generate`` regenerates by default: each bundled spec source and its committed package.
_ROOT = Path(__file__).resolve().parent.parent
_PACKAGE = Path(__file__).resolve().parent
CATALOGUE = _ROOT / "messages" / "apache" / "catalogue.json"
BUNDLED_SOURCES = ((_ROOT / "messages", _PACKAGE / "messages"), (CATALOGUE, _PACKAGE / "apache"))
#: The catalogue's default inputs, oldest first: Apache Kafka 3.9.0's specs beside the checkout,
#: then the Kafka 4.x client-API specs that kafka-python's wheel ships.
KAFKA_39_SPECS = _ROOT.parent / "shared" / "reference" / "kafka-3.9.0" / "message"
#: The small capture shipped with the package (tests/realclients/make_sample.py makes it).
SAMPLE_CAPTURE = _PACKAGE / "samples" / "sample.pcap"


def _generate(args: argparse.Namespace) -> int:
    if (args.specs is None) != (args.out is None):
        print("kafka-epochs: give both --specs and --out, or neither (to regenerate the bundled packages)",
              file=sys.stderr)
        return 2
    pairs = BUNDLED_SOURCES if args.specs is None else ((args.specs, args.out),)
    for specs, _ in pairs:
        if not specs.exists():
            print(f"kafka-epochs: spec source {specs} does not exist (give --specs DIR)", file=sys.stderr)
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
                print(f"kafka-epochs: {len(stale)} generated files in {out} differ from {specs}: "
                      f"{', '.join(sorted(stale)[:5])}; run kafka-epochs generate", file=sys.stderr)
                status = 1
            else:
                print(f"{out} is up to date with {specs}")
        else:
            written = write_package(specs, out)
            print(f"generated {len(written) - 3} message modules from {specs} into {out}")
    return status


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
    return [SpecSource("kafka-3.9.0", KAFKA_39_SPECS), SpecSource("kafka-4.x@kafka-python-3.0.12", kafka_4x)]


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
            print(f"kafka-epochs: {args.out} differs from what its inputs give; run kafka-epochs catalogue",
                  file=sys.stderr)
            return 1
        print(f"{args.out} is up to date with {', '.join(s.label for s in sources)}")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    checked = verify(load_catalogue(args.out), sources)
    print(f"wrote {args.out}: {text.count(chr(10)) - 5} messages, {checked} (message, version) layouts "
          f"equal to their inputs'")
    return 0


def protocol_for(choices: list[str] | None) -> Any:
    """The protocol of ``--protocol``/``--specs`` values: a profile name or a spec directory each,
    chained in order when there are several; ``auto`` when none is given."""
    from kafka_epochs.protocol import Protocol, ProtocolChain

    protocols = [Protocol.profile(choice) for choice in choices or ["auto"]]
    return protocols[0] if len(protocols) == 1 else ProtocolChain(protocols)


def add_protocol_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol", action="append", metavar="apache|kip|auto|DIR", dest="protocol",
        help="how to read bodies: 'auto' (default: Apache Kafka's layouts, and the KIP layouts of "
             "messages/ where only they fit a frame), 'apache', 'kip', or a spec directory; repeatable: "
             "the first that defines a frame's api and version reads it")
    parser.add_argument("--specs", action="append", metavar="DIR", dest="protocol",
                        help="a spec directory (same as --protocol DIR)")


def _decode(args: argparse.Namespace) -> int:
    from kafka_epochs.capture import CaptureFormatError
    from kafka_epochs.traffic import DecodeSummary, api_name, decode_capture, exchange_json

    if not args.capture.is_file():
        print(f"kafka-epochs: cannot read {args.capture}: no such file", file=sys.stderr)
        return 2
    protocol = protocol_for(args.protocol)
    wanted = {name.removesuffix("Request").removesuffix("Response") for name in args.api or []}
    summary = DecodeSummary()
    progress = _Progress(summary) if sys.stderr.isatty() and not args.quiet else None
    out = sys.stdout
    try:
        for exchange in decode_capture(args.capture, protocol, ports=set(args.port) if args.port else None,
                                       summary=summary):
            summary.count(exchange)
            if progress is not None:
                progress.tick()
            if wanted and api_name(exchange) not in wanted:
                continue
            if args.format == "jsonl":
                row = exchange_json(exchange, records=args.records, secrets=args.sasl_secrets)
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
            else:
                out.write(_table_row(exchange_json(exchange)) + "\n")
    except CaptureFormatError as e:
        print(f"kafka-epochs: {args.capture} is not a readable pcap or pcapng file: {e}", file=sys.stderr)
        return 2
    finally:
        if progress is not None:
            progress.close()
    if not args.quiet:
        print(_summary_text(summary), file=sys.stderr)
    return 1 if summary.problems else 0


class _Progress:
    """A progress bar on a terminal, counting packets read (tqdm, loaded only when shown)."""

    def __init__(self, summary: Any) -> None:
        from tqdm import tqdm

        self.summary = summary
        self.bar = tqdm(unit=" packets", desc="decoding", leave=False, mininterval=0.5)
        self.shown = 0

    def tick(self) -> None:
        stats = self.summary.capture
        packets = stats.packets if stats is not None else 0
        if packets - self.shown >= 1000:
            self.bar.update(packets - self.shown)
            self.shown = packets

    def close(self) -> None:
        self.bar.close()


def _table_row(row: dict[str, Any]) -> str:
    status = row.get("problem") or row.get("request_error") or row.get("response_error")
    if status is None:
        names = sorted({e["name"] for e in row.get("errors", [])})
        status = ",".join(names) if names else "ok"
    api = row.get("api") or "-"
    if row.get("api_version") is not None:
        api = f"{api} v{row['api_version']}"
    flow = f"{row['client']} -> {row['broker']}" if row.get("client") else "-"
    return f"{row['time'] or '-':<27} {flow:<44} {api:<26} {row['correlation_id']!s:>10}  {status}"


def _summary_text(summary: Any) -> str:
    lines = [f"{summary.exchanges} exchanges: {summary.pairs} pairs, {summary.requests} requests, "
             f"{summary.responses} responses, {summary.problems} with problems"]
    stats = summary.capture
    if stats is not None:
        lines.append(f"capture: {stats.packets} packets ({stats.bad_packets} bad), {stats.flows} Kafka connections, "
                     f"{stats.gaps} gaps ({stats.gap_bytes} bytes), {stats.resyncs} resyncs")
    if summary.per_api:
        lines.append("per api: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.per_api.items())))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-epochs", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="generate Python modules from a directory of JSON message specs")
    gen.add_argument("--specs", type=Path, help="spec directory or catalogue file (default: every bundled "
                     "source: messages/ and messages/apache/catalogue.json)")
    gen.add_argument("--out", type=Path, help="output package directory (with --specs)")
    gen.add_argument("--backend", choices=("python", "construct"), default="python",
                     help="python: the fast classes (default); construct: readable construct definitions per version")
    gen.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if the output differs from what the specs generate")
    gen.set_defaults(run=_generate)

    cat = commands.add_parser("catalogue", help="(maintainers) rebuild the Apache protocol catalogue from its inputs")
    cat.add_argument("--input", action="append", metavar="LABEL=DIR",
                     help="a spec directory, oldest first (repeatable; default: Kafka 3.9.0 from ../shared, "
                          "then Kafka 4.x's client APIs from kafka-python's wheel)")
    cat.add_argument("--out", type=Path, default=CATALOGUE, help="catalogue file (default: %(default)s)")
    cat.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file differs")
    cat.set_defaults(run=_catalogue)

    dec = commands.add_parser("decode", help="decode the Kafka traffic in a pcap/pcapng capture")
    dec.add_argument("capture", type=Path, nargs="?", default=SAMPLE_CAPTURE,
                     help="a pcap or pcapng file, optionally gzipped (default: the bundled sample capture)")
    add_protocol_option(dec)
    dec.add_argument("--port", type=int, action="append", metavar="N",
                     help="a Kafka broker port (repeatable; default 9092, plus ports seen in ApiVersions handshakes)")
    dec.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    dec.add_argument("--records", action="store_true", help="decode record batches in Produce/Fetch")
    dec.add_argument("--sasl-secrets", action="store_true",
                     help="show SASL tokens and SaslAuthenticate auth bytes (PLAIN carries passwords in clear); "
                          "hidden by default")
    dec.add_argument("--api", action="append", metavar="NAME", help="only these apis, e.g. Produce (repeatable)")
    dec.add_argument("--quiet", action="store_true", help="no progress bar and no summary on stderr")
    dec.set_defaults(run=_decode)

    from kafka_epochs.spark.job import add_spark_commands  # imports no Spark until a command runs

    add_spark_commands(commands)
    return parser


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

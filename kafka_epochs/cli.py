"""The ``kafka-epochs`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kafka_epochs.wire.errors import KafkaEpochsError

#: Where ``generate`` reads and writes by default: this checkout's bundled specs and package.
_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPECS = _ROOT / "messages"
DEFAULT_OUT = Path(__file__).resolve().parent / "messages"
#: The small capture shipped with the package (tests/realclients/make_sample.py makes it).
SAMPLE_CAPTURE = Path(__file__).resolve().parent / "samples" / "sample.pcap"


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


def _protocol(spec_dirs: list[Path] | None) -> Any:
    from kafka_epochs.protocol import Protocol, ProtocolChain

    if not spec_dirs:
        return Protocol.bundled()
    protocols = [Protocol.from_specs(d) for d in spec_dirs]
    return protocols[0] if len(protocols) == 1 else ProtocolChain(protocols)


def _decode(args: argparse.Namespace) -> int:
    from kafka_epochs.capture import CaptureFormatError
    from kafka_epochs.traffic import DecodeSummary, api_name, decode_capture, exchange_json

    if not args.capture.is_file():
        print(f"kafka-epochs: cannot read {args.capture}: no such file", file=sys.stderr)
        return 2
    protocol = _protocol(args.specs)
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
                out.write(json.dumps(exchange_json(exchange, records=args.records), ensure_ascii=False) + "\n")
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
    api = f"{row['api']} v{row['api_version']}" if row.get("api") else "-"
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
    gen.add_argument("--specs", type=Path, default=DEFAULT_SPECS, help="spec directory (default: messages/)")
    gen.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output package directory")
    gen.add_argument("--backend", choices=("python", "construct"), default="python",
                     help="python: the fast classes (default); construct: readable construct definitions per version")
    gen.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 if the output differs from what the specs generate")
    gen.set_defaults(run=_generate)

    dec = commands.add_parser("decode", help="decode the Kafka traffic in a pcap/pcapng capture")
    dec.add_argument("capture", type=Path, nargs="?", default=SAMPLE_CAPTURE,
                     help="a pcap or pcapng file, optionally gzipped (default: the bundled sample capture)")
    dec.add_argument("--specs", type=Path, action="append", metavar="DIR",
                     help="spec directory to decode with (repeatable: the first that defines a frame's api "
                          "and version decodes it); default: the bundled protocol")
    dec.add_argument("--port", type=int, action="append", metavar="N",
                     help="a Kafka broker port (repeatable; default 9092, plus ports seen in ApiVersions handshakes)")
    dec.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    dec.add_argument("--records", action="store_true", help="decode record batches in Produce/Fetch")
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
    except (KafkaEpochsError, OSError, ValueError) as e:
        print(f"kafka-epochs: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0


if __name__ == "__main__":
    sys.exit(main())

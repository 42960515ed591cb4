"""``kafka-epochs decode``: captures (files, directories, standard input) to JSON lines or a table.

The command reads each capture with :func:`kafka_epochs.traffic.decode_capture`, keeps the
exchanges its filters select, prints them as they complete, and ends with a summary on stderr
that describes what was printed. Exit status: 0 when every printed exchange decoded whole, 1 when
some did not (each printed with its error), 2 for bad usage or an unreadable input.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

#: The small capture shipped with the package (tests/realclients/make_sample.py makes it).
SAMPLE_CAPTURE = Path(__file__).resolve().parent / "samples" / "sample.pcap"
#: Files a directory contributes: what capture tools write (``.gz`` for compressed ones).
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")
STDIN = "-"


def add_decode_command(commands: Any) -> None:
    from kafka_epochs.cli import add_protocol_option

    dec = commands.add_parser(
        "decode",
        help="decode the Kafka traffic in pcap/pcapng captures",
        description="Decode the Kafka traffic in captures: one JSON line (or table row) per request/response "
        "pair, printed as responses complete; a summary goes to stderr.",
    )
    dec.add_argument(
        "captures",
        type=Path,
        nargs="*",
        metavar="CAPTURE",
        help="pcap or pcapng files, optionally gzipped, or directories of them; '-' reads standard "
        "input (e.g. tcpdump -w - | kafka-epochs decode -), as does no CAPTURE with a pipe or file "
        f"on standard input. The bundled sample to try: {SAMPLE_CAPTURE}",
    )
    add_protocol_option(dec)
    dec.add_argument(
        "--port",
        type=int,
        action="append",
        metavar="N",
        help="a Kafka broker port (repeatable; default 9092, plus ports seen in ApiVersions handshakes)",
    )
    dec.add_argument(
        "--format",
        choices=("jsonl", "table"),
        default="jsonl",
        help="jsonl: one JSON object per exchange, bodies included (default); table: one aligned "
        "line per exchange with time, flow, api, correlation id and status, under a header row",
    )
    dec.add_argument(
        "--records",
        action="store_true",
        help="decode the record batches in Produce and Fetch (jsonl only); a batch that does not "
        "decode is kept in place with its error and counted",
    )
    dec.add_argument(
        "--max-records",
        type=_count,
        default=DEFAULT_MAX_RECORDS,
        metavar="N",
        help=f"with --records: records decoded per exchange (default {DEFAULT_MAX_RECORDS:,}); a batch past "
        f"it, or claiming over {DEFAULT_MAX_BATCH_RECORDS:,}, is a batch that did not decode",
    )
    dec.add_argument(
        "--max-capture-records",
        type=_count,
        default=DEFAULT_MAX_CAPTURE_RECORDS,
        metavar="N",
        help=f"with --records: records decoded in all (default {DEFAULT_MAX_CAPTURE_RECORDS:,})",
    )
    dec.add_argument(
        "--fields",
        action="append",
        metavar="PATH,...",
        help="print only these body fields, as columns (one list per path; rows are the elements "
        "of the innermost array, e.g. topics[].name,topics[].partitions[].leader_epoch); each "
        "message shows the paths it has; the rest of the body is skipped, not decoded; repeatable",
    )
    dec.add_argument(
        "--headers-only",
        action="store_true",
        help="print headers and pairing only; bodies are not decoded (the fastest way through a capture)",
    )
    dec.add_argument(
        "--sasl-secrets",
        action="store_true",
        help="show SASL tokens and SaslAuthenticate auth bytes (PLAIN carries passwords in clear); hidden by default",
    )
    filters = dec.add_argument_group("filters (an exchange is printed when it passes all of them)")
    filters.add_argument(
        "--api",
        action="append",
        metavar="NAME|KEY",
        help="only these apis, by name in any case (Produce, produce, ProduceRequest) or api key (0); repeatable",
    )
    filters.add_argument(
        "--topic",
        action="append",
        metavar="NAME",
        help="only exchanges whose request or response names this topic (or topic id); repeatable",
    )
    filters.add_argument(
        "--client",
        action="append",
        metavar="ADDR",
        help="only this client: an address, address:port, or client id; repeatable",
    )
    filters.add_argument(
        "--broker", action="append", metavar="ADDR", help="only this broker: an address or address:port; repeatable"
    )
    filters.add_argument(
        "--correlation-id", type=int, action="append", metavar="N", help="only this correlation id; repeatable"
    )
    filters.add_argument(
        "--errors-only",
        action="store_true",
        help="only exchanges with a problem: a frame that did not decode or pair, a non-zero "
        "error code in the response, a record batch that did not decode",
    )
    dec.add_argument("--quiet", action="store_true", help="no progress bar and no summary on stderr")
    dec.set_defaults(run=run_decode)


# -- inputs ------------------------------------------------------------------------------------


#: The records package's defaults, restated so that building the parser loads nothing (a test
#: holds them equal).
DEFAULT_MAX_RECORDS = 250_000
DEFAULT_MAX_BATCH_RECORDS = 100_000
#: With --records: records decoded over a whole run (a few minutes of work at most).
DEFAULT_MAX_CAPTURE_RECORDS = 5_000_000


def _count(text: str) -> int:
    value = int(text.replace("_", "").replace(",", ""))
    if value < 0:
        raise argparse.ArgumentTypeError(f"a count is >= 0, not {text}")
    return value


def capture_inputs(paths: list[Path]) -> list[Path]:
    """The capture files ``paths`` name: files as given, directories expanded (sorted), ``-`` kept;
    none given, standard input when it is a pipe or a file.

    Raises ValueError with a one-line reason for a path that does not exist, a directory with
    no captures in it, or no capture at all: a script whose capture variable came out empty
    must fail, not decode something else.
    """
    if not paths:
        if not stdin_is_data():
            raise ValueError(
                "no capture given (name pcap/pcapng files or directories, or '-' for standard input; "
                f"the bundled sample is {SAMPLE_CAPTURE})"
            )
        paths = [Path(STDIN)]
    found: list[Path] = []
    for path in paths:
        if str(path) == STDIN:
            found.append(path)
        elif path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CAPTURE_SUFFIXES))
            if not inside:
                raise ValueError(f"{path} is a directory with no capture files in it ({', '.join(CAPTURE_SUFFIXES)})")
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise ValueError(f"cannot read {path}: no such file or directory")
    if sum(str(p) == STDIN for p in found) > 1:
        raise ValueError("standard input ('-') can be read only once")
    return found


def stdin_is_data() -> bool:
    """Whether standard input is a pipe, a socket or a file (not a terminal, not /dev/null, not closed)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # no stdin, or one without a descriptor (io.UnsupportedOperation)
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


class CountingReader:
    """A binary stream that counts the bytes read through it (the progress bar's position).

    On standard input it returns what has arrived rather than waiting for a whole chunk, so
    exchanges are printed as the packets come in (``tcpdump -w - | kafka-epochs decode -``).
    """

    def __init__(self, stream: BinaryIO, live: bool = False) -> None:
        self.stream = stream
        self.count = 0
        read1 = getattr(stream, "read1", None)
        self._read = read1 if live and read1 is not None else stream.read

    def read(self, size: int = -1, /) -> bytes:
        data = self._read(size)
        self.count += len(data)
        return data


# -- filters -----------------------------------------------------------------------------------


@dataclass
class ExchangeFilter:
    """What ``--api``, ``--topic``, ``--client``, ``--broker``, ``--correlation-id`` and
    ``--errors-only`` select; empty means everything."""

    apis: set[str] = field(default_factory=set)
    topics: set[str] = field(default_factory=set)
    clients: set[str] = field(default_factory=set)
    brokers: set[str] = field(default_factory=set)
    correlation_ids: set[int] = field(default_factory=set)
    errors_only: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.apis or self.topics or self.clients or self.brokers or self.correlation_ids or self.errors_only
        )

    def __post_init__(self) -> None:
        from kafka_epochs.exchanges import api_name  # here, not per exchange nor for every command

        self._api_name = api_name

    def matches_flow(self, exchange: Any) -> bool:
        """The filters that need no rendering: api, correlation id, client, broker."""
        if self.apis and self._api_name(exchange) not in self.apis:
            return False
        if self.correlation_ids and _correlation_id(exchange) not in self.correlation_ids:
            return False
        flow = exchange.flow
        if self.clients and not (
            _endpoint_matches(flow, "client", self.clients) or _client_id(exchange) in self.clients
        ):
            return False
        return not self.brokers or _endpoint_matches(flow, "broker", self.brokers)

    def matches_content(self, exchange: Any, row: dict[str, Any]) -> bool:
        """The filters that read the rendered exchange: topic, errors only."""
        if self.topics and not self.topics & _topics_in(row):
            return False
        return not self.errors_only or has_problem(exchange, row)

    def describe(self) -> str:
        parts = [
            f"--api {' '.join(sorted(self.apis))}" if self.apis else "",
            f"--topic {' '.join(sorted(self.topics))}" if self.topics else "",
            f"--client {' '.join(sorted(self.clients))}" if self.clients else "",
            f"--broker {' '.join(sorted(self.brokers))}" if self.brokers else "",
            f"--correlation-id {' '.join(map(str, sorted(self.correlation_ids)))}" if self.correlation_ids else "",
            "--errors-only" if self.errors_only else "",
        ]
        return ", ".join(p for p in parts if p)


def api_names(protocol: Any, wanted: list[str]) -> set[str]:
    """``--api`` values as the names exchanges carry; ValueError naming the known ones otherwise."""
    from kafka_epochs.traffic import SASL_TOKENS

    known = {
        name.removesuffix("Request").removesuffix("Response")
        for name in protocol.names()
        if name.endswith(("Request", "Response"))
    } | {SASL_TOKENS}
    by_lower = {name.lower(): name for name in known}
    names = set()
    for text in wanted:
        if text.lstrip("-").isdigit():
            try:
                names.add(protocol.message_for(int(text), "request").__name__.removesuffix("Request"))
            except KeyError:
                raise ValueError(
                    f"--api {text}: no api has key {text} (known keys: {', '.join(map(str, protocol.api_keys()))})"
                ) from None
            continue
        bare = text.lower().removesuffix("request").removesuffix("response")
        if bare not in by_lower:
            raise ValueError(
                f"--api {text}: no such api{_closest(bare, by_lower)}; known apis: {', '.join(sorted(known))}"
            )
        names.add(by_lower[bare])
    return names


def _closest(text: str, by_lower: dict[str, str]) -> str:
    import difflib

    near = difflib.get_close_matches(text, list(by_lower), n=1)
    return f" (did you mean {by_lower[near[0]]}?)" if near else ""


def _correlation_id(exchange: Any) -> int | None:
    event = exchange.request or exchange.response
    return None if event is None else event.correlation_id


def _client_id(exchange: Any) -> str | None:
    request = exchange.request
    if request is None or request.decoded is None:
        return None
    return getattr(request.decoded.header, "client_id", None)


def _endpoint_matches(flow: Any, side: str, wanted: set[str]) -> bool:
    if flow is None:
        return False
    end = flow.client if side == "client" else flow.broker
    address = str(end.address)
    with_port = f"[{address}]:{end.port}" if ":" in address else f"{address}:{end.port}"
    return address in wanted or with_port in wanted or f"{address}:{end.port}" in wanted


#: Field names that hold a topic's name or id, in every api that names topics.
_TOPIC_FIELDS = frozenset({"topic", "topic_name", "topic_id"})


def _topics_in(row: dict[str, Any]) -> set[str]:
    """Topic names and ids a rendered exchange mentions: ``topic``, ``topic_name`` and ``topic_id``
    fields anywhere, and ``name`` fields of elements of arrays called ``topics``."""
    found: set[str] = set()
    stack: list[tuple[Any, bool]] = [(row.get("request"), False), (row.get("response"), False)]
    while stack:
        value, in_topics = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str) and (key in _TOPIC_FIELDS or (in_topics and key == "name")):
                    found.add(item)
                elif isinstance(item, (dict, list)):
                    stack.append((item, key == "topics"))
        elif isinstance(value, list):
            stack.extend((item, in_topics) for item in value)
    return found


def has_problem(exchange: Any, row: dict[str, Any]) -> bool:
    """A frame that did not decode or pair, a non-zero response error code, a bad record batch."""
    return not exchange.ok or bool(row.get("errors") or row.get("record_errors"))


# -- the command -------------------------------------------------------------------------------


@dataclass
class Printed:
    """What the command printed: the summary's last lines and the exit status come from it."""

    exchanges: int = 0
    problems: int = 0  # printed exchanges that did not decode or pair whole
    record_errors: int = 0  # record batches that did not decode, in printed exchanges
    captures: list[Any] = field(default_factory=list)  # each input's CaptureStats


def fields_reader(protocol: Any, args: argparse.Namespace) -> Any:
    """The body reader of ``--fields`` / ``--headers-only``; ValueError for what cannot work.

    A path that no message of the protocol has is refused: it would print nothing, silently.
    """
    from kafka_epochs.projection.bodies import FieldsReader

    if args.headers_only and args.fields:
        raise ValueError("--headers-only reads no body: give it or --fields, not both")
    for option, given in (("--records", args.records), ("--topic", args.topic), ("--errors-only", args.errors_only)):
        if given:
            reason = "needs whole bodies" if option != "--errors-only" else "needs every error code of a body"
            raise ValueError(f"{option} {reason}; it cannot be combined with --fields or --headers-only")
    paths = [p.strip() for option in args.fields or [] for p in option.split(",") if p.strip()]
    if paths and args.format == "table":
        raise ValueError(
            "--fields prints body columns, which a table row has no room for (--headers-only makes a fast table)"
        )
    if args.fields is not None and not paths and not args.headers_only:
        return FieldsReader([])  # --fields "": headers only
    for path in paths:
        if not protocol.has_field_path(path):
            raise ValueError(f"--fields: no message of the {protocol.name} protocol has the field path {path!r}")
    return FieldsReader(paths)


def run_decode(args: argparse.Namespace) -> int:
    from kafka_epochs.cli import protocol_for
    from kafka_epochs.traffic import DecodeSummary

    if args.records and args.format == "table":
        print(
            "kafka-epochs: --records applies to --format jsonl (a table row has no room for batches)", file=sys.stderr
        )
        return 2
    inputs = capture_inputs(args.captures)
    protocol = protocol_for(args.protocol)
    args.body_reader = None
    if args.fields is not None or args.headers_only:
        args.body_reader = fields_reader(protocol, args)
    selected = ExchangeFilter(
        apis=api_names(protocol, args.api or []),
        topics=set(args.topic or []),
        clients=set(args.client or []),
        brokers=set(args.broker or []),
        correlation_ids=set(args.correlation_id or []),
        errors_only=args.errors_only,
    )
    summary = DecodeSummary()
    printed = Printed()
    live = any(str(p) == STDIN for p in inputs)
    total = None if live else sum(p.stat().st_size for p in inputs)
    progress = _Progress(total) if sys.stderr.isatty() and not args.quiet else None
    if args.format == "table":
        sys.stdout.write(TABLE_HEADER + "\n")
    print_one = _Printer(args, selected, summary, printed, live)
    several = len(inputs) > 1
    try:
        for capture, exchange in _exchanges(inputs, protocol, args, summary, printed, progress):
            print_one(exchange, capture if several else None)
    finally:
        if progress is not None:
            progress.close()
        print_one.flush()
    if not args.quiet:
        print(_summary_text(summary, printed, selected), file=sys.stderr)
    return 1 if printed.problems or printed.record_errors else 0


def _exchanges(
    inputs: list[Path],
    protocol: Any,
    args: argparse.Namespace,
    summary: Any,
    printed: Printed,
    progress: _Progress | None,
) -> Iterator[tuple[str, Any]]:
    from kafka_epochs.capture import CaptureFormatError
    from kafka_epochs.traffic import decode_capture

    ports = set(args.port) if args.port else None
    read_before = 0
    for path in inputs:
        name = "<stdin>" if str(path) == STDIN else str(path)
        summary.capture = None  # decode_capture sets this input's own
        with _open(path) as stream:
            try:
                exchanges = decode_capture(stream, protocol, ports=ports, summary=summary, body_reader=args.body_reader)
                for exchange in exchanges:
                    if progress is not None:
                        progress.update(read_before + stream.count)
                    yield name, exchange
            except CaptureFormatError as e:
                raise ValueError(f"{name} is not a readable pcap or pcapng file: {e}") from None
            finally:
                if summary.capture is not None:
                    printed.captures.append(summary.capture)
            read_before += stream.count


class _open:
    """The capture's bytes behind a :class:`CountingReader`; standard input is read live."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: BinaryIO | None = None

    def __enter__(self) -> CountingReader:
        if str(self.path) == STDIN:
            return CountingReader(sys.stdin.buffer, live=True)
        self.file = open(self.path, "rb")
        return CountingReader(self.file)

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()


class _Printer:
    """Prints each exchange the filters select, counting what the summary says of them.

    JSON lines come from :class:`~kafka_epochs.json_lines.LineWriter` where it can write them
    (no filter looks inside bodies, no record batches), else from the dict that
    :func:`~kafka_epochs.rendering.exchange_json` builds. Lines are written to standard output
    in batches: with ``PYTHONUNBUFFERED`` set (as container images often do) each ``write`` is
    a system call. A live capture's lines go out one by one, as its exchanges complete.
    """

    #: Lines held before one write.
    BATCH = 256

    def __init__(
        self, args: argparse.Namespace, selected: ExchangeFilter, summary: Any, printed: Printed, live: bool
    ) -> None:
        from kafka_epochs.json_lines import LineWriter
        from kafka_epochs.rendering import exchange_json, json_line

        self.args, self.selected, self.summary, self.printed, self.live = args, selected, summary, printed, live
        self.filtering = bool(selected)
        self.exchange_json, self.json_line = exchange_json, json_line
        jsonl = args.format == "jsonl"
        # Bodies go straight to JSON text unless a filter has to look inside them.
        self.as_text = jsonl and not selected.topics
        direct = jsonl and not args.records and not selected.topics and not selected.errors_only
        self.writer = LineWriter(secrets=args.sasl_secrets) if direct else None
        self.lines: list[str] = []
        self.capture_records = None
        if args.records:
            from kafka_epochs.records import RecordBudget

            self.capture_records = RecordBudget(args.max_capture_records, "capture")

    def __call__(self, exchange: Any, capture: str | None) -> None:
        self.summary.count(exchange)
        if self.filtering and not self.selected.matches_flow(exchange):
            return  # decided before anything is rendered
        printed = self.printed
        line = None if self.writer is None else self.writer.line(exchange, capture)
        if line is None:
            args = self.args
            row = self.exchange_json(
                exchange,
                records=args.records,
                secrets=args.sasl_secrets,
                bodies_as_text=self.as_text,
                max_records=args.max_records,
                record_budget=self.capture_records,
            )
            if not self.selected.matches_content(exchange, row):
                return
            printed.record_errors += row.get("record_errors", 0)
            if capture is not None:
                row = {"capture": capture, **row}
            line = self.json_line(row) if args.format == "jsonl" else table_row(row)
        printed.exchanges += 1
        printed.problems += not exchange.ok
        lines = self.lines
        lines.append(line)
        if self.live or len(lines) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the lines held (all of them: a live capture's, as each exchange completes)."""
        if self.lines:
            self.lines.append("")
            sys.stdout.write("\n".join(self.lines))
            self.lines.clear()
        if self.live:
            sys.stdout.flush()


# -- output ------------------------------------------------------------------------------------

_COLUMNS = ((27, "TIME"), (44, "CLIENT -> BROKER"), (26, "API"), (10, "CORR_ID"), (0, "STATUS"))
TABLE_HEADER = (
    " ".join(f"{title:<{width}}" if width else title for width, title in _COLUMNS[:3])
    + f" {_COLUMNS[3][1]:>10}  {_COLUMNS[4][1]}"
)


def table_row(row: dict[str, Any]) -> str:
    """One exchange as an aligned line under :data:`TABLE_HEADER`; a missing value is ``-``."""
    status = row.get("problem") or row.get("request_error") or row.get("response_error")
    if status is None and "errors" not in row and "response_header" in row:
        status = "ok (body not read)"  # --headers-only: the response's error codes were not looked at
    elif status is None:
        names = sorted({e["name"] for e in row.get("errors", [])})
        status = ",".join(names) if names else "ok"
    api = row.get("api") or "-"
    if row.get("api_version") is not None:
        api = f"{api} v{row['api_version']}"
    flow = f"{row['client']} -> {row['broker']}" if row.get("client") else "-"
    correlation = "-" if row.get("correlation_id") is None else str(row["correlation_id"])
    return f"{row.get('time') or '-':<27} {flow:<44} {api:<26} {correlation:>10}  {status}"


def _summary_text(summary: Any, printed: Printed, selected: ExchangeFilter) -> str:
    lines = [
        f"{summary.exchanges} exchanges: {summary.pairs} pairs, {summary.requests} requests, "
        f"{summary.responses} responses, {summary.problems} with problems"
    ]
    if summary.unanswered or summary.cut_off:
        lines.append(
            f"{summary.unanswered} requests never answered, {summary.cut_off} frames cut off "
            "(by the end of their connection or of the capture)"
        )
    if selected:
        lines.append(
            f"printed {printed.exchanges} of {summary.exchanges} exchanges ({selected.describe()}), "
            f"{printed.problems} of them with problems"
        )
    if printed.record_errors:
        lines.append(f"{printed.record_errors} record batches did not decode (each printed in place with its error)")
    if printed.captures:

        def total(name: str) -> int:
            return sum(getattr(stats, name) for stats in printed.captures)

        files = f"{len(printed.captures)} captures: " if len(printed.captures) > 1 else "capture: "
        lines.append(
            f"{files}{total('packets')} packets ({total('bad_packets')} bad), {total('flows')} Kafka "
            f"connections, {total('gaps')} gaps ({total('gap_bytes')} bytes), {total('resyncs')} resyncs"
            + (
                f", {total('evicted_connections')} connections given up (idle, or too many at once)"
                if total("evicted_connections")
                else ""
            )
        )
    if summary.per_api:
        lines.append("per api: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.per_api.items())))
    return "\n".join(lines)


class _Progress:
    """A progress bar on a terminal (tqdm, loaded only when shown): bytes of the input read, with
    a total and an ETA when the inputs are files; bytes so far on standard input."""

    def __init__(self, total: int | None) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=total, unit="B", unit_scale=True, unit_divisor=1024, desc="decoding", leave=False, mininterval=0.5
        )
        self.shown = 0

    def update(self, position: int) -> None:
        if position - self.shown >= 1 << 16:
            self.bar.update(position - self.shown)
            self.shown = position

    def close(self) -> None:
        self.bar.close()

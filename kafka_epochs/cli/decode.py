"""``kafka-epochs decode``: captures (files, directories, standard input) to JSON lines or a table.

The command reads each capture as :func:`kafka_epochs.traffic.decode_capture` does, keeps the
exchanges its filters select, prints them as they complete, and ends with a summary on stderr
that describes what was printed. Exit status: 0 when every printed exchange decoded whole, 1 when
some did not (each printed with its error), 2 for bad usage or an unreadable input.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from kafka_epochs.capture.files.finding import CAPTURE_SUFFIXES, capture_files_under
from kafka_epochs.cli.decode_filters import ExchangeFilter, api_names
from kafka_epochs.cli.decode_output import TABLE_HEADER, Printed, Printer, Progress, summary_text
from kafka_epochs.samples import SAMPLE_CAPTURE_FILE

#: What names standard input among the inputs.
STDIN = "-"


def add_decode_command(commands: Any) -> None:
    from kafka_epochs.cli.options import add_protocol_option, tcp_port

    dec = commands.add_parser(
        "decode",
        help="decode the Kafka traffic in pcap/pcapng captures",
        description="Decode the Kafka traffic in captures: one JSON line (or table row) per request/response "
        "pair, printed as responses complete; a summary goes to stderr.",
    )
    dec.add_argument(
        "captures",
        nargs="*",
        metavar="CAPTURE",
        help="pcap or pcapng files, optionally gzipped, or directories of them; '-' reads standard "
        "input (e.g. tcpdump -w - | kafka-epochs decode -), as does no CAPTURE with a pipe or file "
        "on standard input, and a named pipe is read the same way (e.g. <(zcat old.pcap.gz)). "
        f"The bundled sample to try: {SAMPLE_CAPTURE_FILE}",
    )
    add_protocol_option(dec)
    dec.add_argument(
        "--port",
        type=tcp_port,
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


def capture_inputs(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The capture files ``paths`` name: files as given, directories expanded (sorted), ``-`` and
    named pipes kept (a shell's ``<(zcat capture.pcap.gz)`` is one); none given, standard input
    when it is a pipe or a file.

    Raises ValueError with a one-line reason for a path that does not exist, one that is no
    file, directory or pipe (a device, a socket), a directory with no captures in it, a pipe
    named twice, or no capture at all: a script whose capture variable came out empty must
    fail, not decode something else.
    """
    if not paths:
        if not stdin_is_data():
            raise ValueError(
                "no capture given (name pcap/pcapng files or directories, or '-' for standard input; "
                f"the bundled sample is {SAMPLE_CAPTURE_FILE})"
            )
        paths = [STDIN]
    found: list[str] = []
    pipes: set[str] = set()
    for given in paths:
        path = path_text(os.fspath(given))
        if path == STDIN:
            found.append(path)
        elif os.path.isdir(path):
            inside = capture_files_under(path)
            if not inside:
                raise ValueError(f"{path} is a directory with no capture files in it ({', '.join(CAPTURE_SUFFIXES)})")
            found.extend(inside)
        elif os.path.isfile(path):
            found.append(path)
        elif is_pipe(path):
            if path in pipes:
                raise ValueError(f"{path} is a pipe, which can be read only once")
            pipes.add(path)
            found.append(path)
        elif os.path.exists(path):
            raise ValueError(f"cannot read {path}: it is not a file, a directory or a pipe")
        else:
            raise ValueError(f"cannot read {path}: no such file or directory")
    if found.count(STDIN) > 1:
        raise ValueError("standard input ('-') can be read only once")
    return found


def is_pipe(path: str) -> bool:
    """Whether ``path`` names a pipe (a named one, or a shell's ``/dev/fd/N``): read live, as
    standard input is, and only once."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def path_text(text: str) -> str:
    """``str(pathlib.PurePosixPath(text))``, the name an input has always been given in lines and
    messages (no empty or ``.`` segment, no trailing slash), without importing pathlib: about 2 ms
    of every run's start."""
    root = "/" if text.startswith("/") else ""
    if text.startswith("//") and not text.startswith("///"):
        root = "//"  # (POSIX leaves two leading slashes to the system)
    return root + "/".join(part for part in text.split("/") if part not in ("", ".")) or "."


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


# -- the command -------------------------------------------------------------------------------


def fields_reader(protocol: Any, args: argparse.Namespace) -> Any:
    """The body reader of ``--fields`` / ``--headers-only``; ValueError for what cannot work.

    A path that no message of the protocol has is refused: it would print nothing, silently.
    """
    from kafka_epochs.projection.bodies import FieldsReader
    from kafka_epochs.projection.paths import unknown_path

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
            raise ValueError(f"--fields: {unknown_path(protocol, path)}")
    return FieldsReader(paths)


def run_decode(args: argparse.Namespace) -> int:
    from kafka_epochs.cli.options import protocol_for
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
    live = any(p == STDIN or is_pipe(p) for p in inputs)
    total = None if live else sum(os.stat(p).st_size for p in inputs)
    progress = Progress(total) if sys.stderr.isatty() and not args.quiet else None
    if args.format == "table":
        sys.stdout.write(TABLE_HEADER + "\n")
    print_one = Printer(args, selected, summary, printed, live)
    several = len(inputs) > 1
    interrupted = False
    try:
        for capture, batch in _batches(inputs, protocol, args, summary, printed, progress, print_one.fused):
            print_one(batch, capture if several else None)
    except KeyboardInterrupt:  # Ctrl-C, as a live capture is stopped: what was decoded stands, and is summed up
        interrupted = True
    finally:
        if progress is not None:
            progress.close()
        print_one.flush()
    if not args.quiet:
        print(summary_text(summary, printed, selected), file=sys.stderr)
        if interrupted:
            print("stopped by Ctrl-C: requests still waiting for an answer are not counted", file=sys.stderr)
    if printed.unreadable:
        return 2
    return 1 if printed.problems or printed.record_errors else 0


def _batches(
    inputs: list[str],
    protocol: Any,
    args: argparse.Namespace,
    summary: Any,
    printed: Printed,
    progress: Progress | None,
    fused: tuple[Any, Any],
) -> Iterator[tuple[str, Any]]:
    """(capture name, exchanges) for the exchanges of the inputs, in batches; with a writer in
    ``fused`` (the printer's), most exchanges come as their lines, already written and counted,
    and those its filters leave out not at all (:mod:`kafka_epochs.fused_lines`)."""
    from kafka_epochs.capture import CaptureFormatError
    from kafka_epochs.exchanges import ConnectionExchanges, follow_connection_batches
    from kafka_epochs.framing import Connection, FrameDecoding
    from kafka_epochs.fused_lines import decode_lines

    ports = set(args.port) if args.port else None
    read_before = 0
    several = len(inputs) > 1
    writer, keep = fused
    decoding = FrameDecoding(protocol, args.body_reader)  # shared by every connection of the layered path
    for path in inputs:
        name = "<stdin>" if path == STDIN else path
        summary.capture = None  # decode_capture sets this input's own
        with _open(path) as stream:
            try:
                if writer is not None:
                    exchanges = decode_lines(
                        stream,
                        protocol,
                        writer,
                        capture=name if several else None,
                        ports=ports,
                        summary=summary,
                        body_reader=args.body_reader,
                        keep=keep,
                    )
                else:

                    def layered(flow: Any) -> ConnectionExchanges:
                        connection = Connection(protocol, body_reader=args.body_reader, decoding=decoding)
                        return ConnectionExchanges(flow, connection)

                    exchanges = follow_connection_batches(stream, layered, ports=ports, summary=summary)
                for batch in exchanges:
                    if progress is not None:
                        progress.update(read_before + stream.count)
                    yield name, batch
            except CaptureFormatError as e:
                why = f"{name} is not a readable pcap or pcapng file: {e}"
                if not several:
                    raise ValueError(why) from None
                # One input among several (a directory's stray or half-written file): said at once,
                # and the others are read; the exit status says it (2).
                summary.capture = None  # (no capture of it to count)
                printed.unreadable.append(why)
                print(f"kafka-epochs: {why}", file=sys.stderr)
            finally:
                if summary.capture is not None:
                    printed.captures.append(summary.capture)
            read_before += stream.count


class _open:
    """The capture's bytes behind a :class:`CountingReader`; standard input and pipes are read live."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.file: BinaryIO | None = None

    def __enter__(self) -> CountingReader:
        if self.path == STDIN:
            return CountingReader(sys.stdin.buffer, live=True)
        self.file = open(self.path, "rb")
        return CountingReader(self.file, live=is_pipe(self.path))

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()

"""What ``decode`` prints: JSON lines or table rows on standard output, a summary on standard error."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kafka_epochs.cli.decode_filters import ExchangeFilter
from kafka_epochs.values import Value

__all__ = ["TABLE_HEADER", "Printed", "Printer", "Progress", "summary_text", "table_row"]


class Printed(Value):
    """What the command printed: the summary's last lines and the exit status come from it."""

    __slots__ = ("captures", "exchanges", "problems", "record_errors", "unreadable")
    exchanges: int
    problems: int  # printed exchanges that did not decode or pair whole
    record_errors: int  # record batches that did not decode, in printed exchanges
    captures: list[Any]  # each input's CaptureStats
    unreadable: list[str]  # why each input among several that is not a capture was skipped

    def __init__(
        self,
        exchanges: int = 0,
        problems: int = 0,
        record_errors: int = 0,
        captures: list[Any] | None = None,
        unreadable: list[str] | None = None,
    ) -> None:
        self.exchanges = exchanges
        self.problems = problems
        self.record_errors = record_errors
        self.captures = [] if captures is None else captures
        self.unreadable = [] if unreadable is None else unreadable


class Printer:
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

    @property
    def fused(self) -> tuple[Any, Any]:
        """(writer, keep) for lines written as the capture is read (:mod:`kafka_epochs.fused_lines`):
        the writer when every exchange printed is printed as :class:`~kafka_epochs.json_lines.LineWriter`
        writes it (else None), and the filters that need no rendering (None: no filter)."""
        return self.writer, (self.selected.matches_flow if self.filtering else None)

    def __call__(self, batch: Any, capture: str | None) -> None:
        """Print a batch of exchanges (and of lines already written and counted: see ``fused``)."""
        lines = self.lines
        for exchange in batch:
            if type(exchange) is str:
                self.printed.exchanges += 1
                lines.append(exchange)
            else:
                self.one(exchange, capture)
        if self.live or len(lines) >= self.BATCH:
            self.flush()

    def one(self, exchange: Any, capture: str | None) -> None:
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
        self.lines.append(line)

    def flush(self) -> None:
        """Write the lines held (all of them: a live capture's, as each exchange completes)."""
        if self.lines:
            self.lines.append("")
            text = "\n".join(self.lines)
            self.lines.clear()  # (before writing: a write cut short by Ctrl-C is not written again)
            sys.stdout.write(text)
        if self.live:
            sys.stdout.flush()


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


def summary_text(summary: Any, printed: Printed, selected: ExchangeFilter) -> str:
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
    if printed.unreadable:
        lines.append(f"{len(printed.unreadable)} inputs skipped: not pcap or pcapng files (each said above)")
    if summary.per_api:
        lines.append("per api: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.per_api.items())))
    return "\n".join(lines)


class Progress:
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

"""Incident rows as the report's values and as lines a person reads.

Both engines give incidents as rows with the columns of
:func:`kafka_epochs.spark.audit_report.incident_rows` (``kind`` naming the table each is from):
dicts in-process, Spark ``Row``s from the Spark engine. :func:`to_incident` makes either the
report's :class:`~kafka_epochs.report.model.Incident`; :func:`incident_line` says it in one line,
as ``audit`` and ``audit --follow`` print it; :func:`summary_lines` is the head of the audit's
output: what was read, and what was found.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from typing import Any, Protocol

from kafka_epochs.report.explain import decode_command, explain, rule_of
from kafka_epochs.report.model import (
    DISAGREEMENT,
    FENCED_RESPONSE,
    STALE_REQUEST,
    STOP_REPLICA_FENCED,
    Frame,
    Incident,
    Summary,
)

__all__ = [
    "INCIDENT_COLUMNS",
    "KIND_LABELS",
    "TIMELINE_COLUMNS",
    "capture_problems",
    "count_key",
    "frame_of",
    "incident_line",
    "shown_path",
    "summary_lines",
    "table_lines",
    "timeline_line",
    "to_incident",
    "when",
]

#: An incident row's columns, in the order both engines write them (``kind``: its table).
INCIDENT_COLUMNS = (
    "kind",
    "capture",
    "seq",
    "time_ns",
    "client",
    "broker",
    "correlation_id",
    "cluster",
    "api",
    "api_version",
    "topic",
    "partition",
    "requested_epoch",
    "leader_epoch",
    "error",
    "broker_error",
    "path",
    "delete",
    "profile",
    "warnings",
)
#: A timeline row's columns: one leader epoch of one partition, as the captures saw it.
TIMELINE_COLUMNS = (
    "cluster",
    "topic",
    "partition",
    "leader_epoch",
    "first_seen_ns",
    "last_seen_ns",
    "first_seen_seq",
    "leader",
    "topic_id",
    "sources",
    "brokers",
    "observations",
    "behind",
)

#: How a printed line names its incident's table.
KIND_LABELS = {
    STALE_REQUEST: "stale",
    STOP_REPLICA_FENCED: "fenced StopReplica",
    FENCED_RESPONSE: "answer",
    DISAGREEMENT: "disputed",
}
#: The incident tables in words, for the summary.
_KIND_WORDS = {
    STALE_REQUEST: ("stale request", "stale requests"),
    STOP_REPLICA_FENCED: ("StopReplica fenced", "StopReplicas fenced"),
    FENCED_RESPONSE: ("epoch error in an answer", "epoch errors in answers"),
    DISAGREEMENT: ("verdict the broker disputes", "verdicts the brokers dispute"),
}


class RowLike(Protocol):
    """A dict or a Spark ``Row``: values by column name."""

    def __getitem__(self, name: str, /) -> Any: ...


def to_incident(row: RowLike) -> Incident:
    """The report's incident of one incident row."""
    return Incident(
        kind=row["kind"],
        frame=frame_of(row),
        api=row["api"],
        api_version=row["api_version"],
        cluster=row["cluster"],
        topic=row["topic"],
        partition=row["partition"],
        error=row["error"],
        requested_epoch=row["requested_epoch"],
        leader_epoch=row["leader_epoch"],
        broker_error=row["broker_error"],
        path=row["path"],
        delete=row["delete"],
        profile=row["profile"],
        warnings=tuple(row["warnings"] or ()),
    )


def count_key(kind: str, api: str | None, error: str | None) -> tuple[str, str, str]:
    """How the summary counts an incident: (table, KIP rule, error)."""
    probe = Incident(kind, Frame(None, None, None, None, None, None), api, None, None, None, None, error)
    return (kind, rule_of(probe), error or "?")


def frame_of(row: RowLike) -> Frame:
    """Where a row's frame is (its capture shown relative to the working directory when under it)."""
    capture = row["capture"]
    return Frame(
        _shown(capture),
        row["seq"],
        row["time_ns"],
        row["client"],
        row["broker"],
        row["correlation_id"],
        decodable=_is_file(capture),
    )


@functools.cache
def _is_file(capture: str | None) -> bool:
    return bool(capture) and os.path.isfile(str(capture))


def shown_path(capture: str) -> str:
    """A capture's path as a person reads it (see :func:`_shown`)."""
    return _shown(capture) or capture


def capture_problems(found: dict[str, tuple[str, int]]) -> list[tuple[str, str, int]]:
    """The summary's ``capture_problems`` from capture -> (its first problem, how many), by path."""
    return [(shown_path(capture), problem, n) for capture, (problem, n) in sorted(found.items())]


def _shown(capture: str | None) -> str | None:
    """A capture's path as a person reads it: relative to the working directory when under it
    (the ``decode`` commands offered then run from there)."""
    if not capture or not os.path.isabs(capture):
        return capture
    relative = os.path.relpath(capture)
    return capture if relative.startswith("..") else relative


def when(time_ns: int | None) -> str:
    """A frame's time as printed (UTC, microseconds), or that it has none."""
    if time_ns is None:
        return "time unknown".ljust(26)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time_ns / 1e9)) + f".{time_ns // 1000 % 1_000_000:06d}"


def incident_line(row: RowLike, *, command: bool = False) -> str:
    """One incident in one line: when, which table, the incident in words; with ``command``, the
    ``kafka-epochs decode`` call that shows its frame, where one can."""
    incident = to_incident(row)
    line = f"{when(row['time_ns'])}  {KIND_LABELS[incident.kind]:<18}  {explain(incident)}"
    shown = decode_command(incident.frame) if command else None
    return f"{line}\n{'':28}see it: {shown}" if shown else line


#: The columns ``--format table`` shows, with their titles.
_TABLE = (
    ("time_ns", "TIME"),
    ("kind", "INCIDENT"),
    ("api", "API"),
    ("client", "CLIENT"),
    ("broker", "BROKER"),
    ("partition", "PARTITION"),
    ("requested_epoch", "SENT"),
    ("leader_epoch", "LEADER"),
    ("error", "ERROR"),
    ("broker_error", "BROKER SAID"),
)


def table_lines(rows: Sequence[RowLike]) -> list[str]:
    """Incident rows as an aligned table, a title line first."""

    def cell(row: RowLike, name: str) -> str:
        value = row[name]
        if name == "time_ns":
            return when(value)
        if name == "kind":
            return KIND_LABELS[value]
        if name == "api" and row["api_version"] is not None:
            return f"{value} v{row['api_version']}"
        if name == "partition":
            return "-" if value is None else f"{row['topic'] if row['topic'] is not None else '?'}-{value}"
        return "-" if value is None else str(value)

    cells = [[cell(row, name) for name, _ in _TABLE] for row in rows]
    widths = [max([len(title)] + [len(line[i]) for line in cells]) for i, (_, title) in enumerate(_TABLE)]
    return [
        "  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in [[title for _, title in _TABLE], *cells]
    ]


def timeline_line(row: RowLike) -> str:
    """One leader epoch of one partition in one line: where and when it was seen."""
    partition = f"{row['topic'] if row['topic'] is not None else '?'}-{row['partition']}"
    cluster = f" ({row['cluster']})" if row["cluster"] else ""
    seen = f"{_count(row['observations'], 'sighting')} from {', '.join(row['sources'] or ())}"
    behind = "; first seen after a higher epoch (a broker or controller behind)" if row["behind"] else ""
    return (
        f"{partition}{cluster}: leader epoch {row['leader_epoch']}, leader {row['leader']}, first seen "
        f"{when(row['first_seen_ns']).strip()}, last {when(row['last_seen_ns']).strip()}; {seen}{behind}"
    )


def summary_lines(summary: Summary, captures: int, engine: str) -> list[str]:
    """What the audit read and what it found, for the head of its output."""
    span = "no frame with a time"
    if summary.first_ns is not None and summary.last_ns is not None:
        seconds = (summary.last_ns - summary.first_ns) / 1e9
        span = f"{when(summary.first_ns)} to {when(summary.last_ns)} UTC ({seconds:,.1f} s)"
    lines = [
        f"audit of {captures} capture{'s' if captures != 1 else ''} ({engine}): {span}",
        f"  {summary.frames:,} frames with epochs or epoch errors; {_count(len(summary.clusters), 'cluster')}, "
        f"{_count(len(summary.clients), 'client')}, {_count(len(summary.brokers), 'broker')}, "
        f"{_count(summary.partitions, 'partition')}",
    ]
    if summary.unreadable:
        reasons = "; ".join(f"{why} ({n:,})" for why, n in summary.unreadable_reasons)
        lines.append(
            f"  {summary.unreadable:,} frames that could carry epochs did not decode: {summary.coverage} ({reasons})"
        )
    if summary.capture_problems:
        lines.append(
            f"  {_count(len(summary.capture_problems), 'capture')} not read whole (frames may be missing from "
            f"{'it' if len(summary.capture_problems) == 1 else 'them'}):"
        )
        for capture, problem, count in summary.capture_problems:
            more = f" (and {count - 1:,} more problems)" if count > 1 else ""
            lines.append(f"    {capture}: {problem}{more}")
    for cluster_id, names in summary.split_ids.items():
        lines.append(
            f"  cluster id {cluster_id} names {len(names)} separate clusters (one topic name, different topic ids): "
            f"{', '.join(names)}; judged apart (--cluster-by cluster-id judges them as one)"
        )
    by_kind: dict[str, int] = {}
    for (kind, _, _), n in summary.counts.items():
        by_kind[kind] = by_kind.get(kind, 0) + n
    if not by_kind:
        lines.append("  no incidents" + ("" if summary.complete else " among the frames read"))
        return lines
    found = ", ".join(_count(by_kind[kind], *_KIND_WORDS[kind]) for kind in _KIND_WORDS if kind in by_kind)
    lines.append(f"  incidents: {found}")
    order = list(_KIND_WORDS)
    for (kind, rule, error), n in sorted(
        summary.counts.items(), key=lambda item: (order.index(item[0][0]), -item[1], item[0])
    ):
        lines.append(f"    {n:>6,}  {_KIND_WORDS[kind][0]:<28} {error} ({rule})")
    return lines


def _count(n: int, one: str, many: Sequence[str] | str | None = None) -> str:
    plural = many if isinstance(many, str) else one + "s"
    return f"{n:,} {one if n == 1 else plural}"

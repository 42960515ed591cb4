"""The audit's in-process engine: capture files (or frame tables) judged in this process.

capture files -> frame rows (:mod:`kafka_epochs.frame_rows`) -> events
(:func:`~kafka_epochs.audit.events.audit_events`) -> verdicts
(:meth:`~kafka_epochs.audit.judging.IncrementalAudit.judge_all`), in pure Python and PyArrow. The
same extraction and rules as the Spark engine (:mod:`kafka_epochs.spark.epoch_audit`), and the
same incidents (a test holds the two equal); what it saves is Spark itself: a JVM's start-up and
some twenty small jobs, which are most of the time an audit of a small capture takes. Captures
that outgrow one machine go to Spark (``audit --engine spark``, or ``auto`` past
:data:`LOCAL_ENGINE_BYTES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_epochs.audit.events import (
    EVENT_SCHEMA,
    INPUT_FIELDS,
    LEADER_EPOCH,
    UNREADABLE,
    audit_events,
    check_frame_columns,
)
from kafka_epochs.audit.findings import write_table
from kafka_epochs.audit.incidents import INCIDENT_COLUMNS, TIMELINE_COLUMNS, capture_problems, count_key
from kafka_epochs.audit.judging import Event, Incident, IncrementalAudit, in_capture_order
from kafka_epochs.audit.report_data import report_data
from kafka_epochs.audit.timeline import Timeline
from kafka_epochs.epochs import EqualEpochPolicy
from kafka_epochs.frame_rows import capture_frames, to_batches
from kafka_epochs.protocol_refs import ProtocolLike, protocol_ref
from kafka_epochs.report.model import DISAGREEMENT, ReportData, Summary

__all__ = ["LOCAL_ENGINE_BYTES", "LocalAudit", "audit_captures", "audit_frame_batches"]

#: Inputs up to this size are audited in-process by ``audit --engine auto``; larger ones on Spark.
#: A capture's events are a small fraction of its bytes (one per epoch-carrying partition of a
#: frame that can carry one), so this keeps the driver's memory to some hundreds of MiB.
LOCAL_ENGINE_BYTES = 256 << 20

#: Why frames could not be read: the most frequent this many reasons are named.
_REASONS = 5


@dataclass
class LocalAudit:
    """What the in-process engine found (a :class:`~kafka_epochs.audit.findings.Findings`): the
    incident rows in capture order, every event (each with the cluster and topic name it was
    judged with), and the summary of both."""

    events: list[Event]
    rows: list[Incident]
    summary: Summary
    split_clusters: dict[str, list[str]] = field(default_factory=dict)
    engine: str = "in-process"
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT
    #: what the report names as audited, and how many partitions it draws
    sources: list[str] = field(default_factory=list)
    partitions: int = 20

    @property
    def incident_count(self) -> int:
        return len(self.rows)

    def incidents(self, limit: int | None = None) -> Iterator[dict[str, Any]]:
        if limit is not None and limit < 0:  # (a slice would drop rows from the end, and say nothing)
            raise ValueError(f"limit is a count of incidents, 0 or more, not {limit}")
        chosen = self.rows if limit is None else self.rows[:limit]
        return ({name: row[name] for name in INCIDENT_COLUMNS} for row in chosen)

    def timeline(self) -> list[dict[str, Any]]:
        """One row per (cluster, topic, partition, leader epoch) seen, first sighting first, with
        the Spark engine's ``timeline`` columns (``behind``: first seen after a higher epoch)."""
        return timeline(self.events)

    def write(self, out: Path, fmt: str) -> None:
        write_table(list(self.incidents()), "incidents", out, fmt)
        write_table(self.timeline(), "timeline", out, fmt)

    def report_data(self, *, max_incidents: int = 50, max_markers: int = 500) -> ReportData:
        """What the report shows (the Spark engine's ``report_data``, from this process's events)."""
        return report_data(
            self.events,
            self.rows,
            self.timeline(),
            self.summary,
            equal_epoch=self.equal_epoch,
            max_partitions=self.partitions,
            max_incidents=max_incidents,
            max_markers=max_markers,
        )

    def report(self, path: Path) -> Path:
        """Write the audit as one self-contained HTML file (needs the ``report`` extra)."""
        from kafka_epochs.report import write_report

        data = self.report_data()
        data.sources = list(self.sources)
        return write_report(data, path)


def audit_captures(
    paths: Sequence[str],
    *,
    protocol: ProtocolLike = None,
    ports: Sequence[int] | None = None,
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
    cluster_key: str = "auto",
) -> LocalAudit:
    """The audit of capture files (each path a file; expand directories and globs first)."""
    ref = protocol_ref(protocol)

    def batches() -> Iterator[pa.RecordBatch]:
        for path in paths:
            yield from to_batches(capture_frames(path, ports=ports, protocol=ref))

    return audit_frame_batches(batches(), protocol=ref, equal_epoch=equal_epoch, cluster_key=cluster_key)


def audit_frame_batches(
    batches: Iterable[pa.RecordBatch],
    *,
    protocol: ProtocolLike = None,
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
    cluster_key: str = "auto",
) -> LocalAudit:
    """The audit of frames given as Arrow batches with at least the columns the Spark engine's
    ``audit(frames)`` reads (``frame``, ``direction``, ``request_api_key``,
    ``request_api_version``: ValueError without them; the context columns are filled with nulls
    where absent)."""
    ref = protocol_ref(protocol)
    problems: dict[str, tuple[str, int]] = {}
    found = []
    for batch in batches:
        check_frame_columns(batch.schema.names)
        _note_problems(batch, problems)
        found.append(audit_events(_with_inputs(batch), ref))
    table = pa.Table.from_batches(found, schema=EVENT_SCHEMA)

    def stored(where: pc.Expression | None) -> pa.Table:
        return table if where is None else table.filter(where)

    judge = IncrementalAudit(stored, equal_epoch=equal_epoch, cluster_key=cluster_key)
    events = table.to_pylist()
    incidents = in_capture_order(judge.judge_all(events))
    split = judge.split_ids()
    summary = summarize(events, incidents, split)
    summary.capture_problems = capture_problems(problems)
    return LocalAudit(events, incidents, summary, split, equal_epoch=equal_epoch)


def _note_problems(batch: pa.RecordBatch, problems: dict[str, tuple[str, int]]) -> None:
    """Count the rows of ``batch`` that say a capture could not be read whole (``capture_error``:
    not a capture, cut short, bytes missing, a bad packet), keeping each capture's first."""
    if "capture_error" not in batch.schema.names:
        return
    errors = batch.column("capture_error")
    if errors.null_count == len(errors):
        return
    captures = batch.column("capture").to_pylist()
    for i, error in enumerate(errors.to_pylist()):
        if error is not None:
            first, n = problems.get(captures[i], (error, 0))
            problems[captures[i]] = (first, n + 1)


def _with_inputs(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every column the extraction reads (absent ones null), as the Spark engine
    normalizes a frame table."""
    names = set(batch.schema.names)
    if all(name in names for name, _ in INPUT_FIELDS):
        return batch
    types = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(), "binary": pa.binary()}
    columns = {
        name: batch.column(name) if name in names else pa.nulls(batch.num_rows, types[kind])
        for name, kind in INPUT_FIELDS
    }
    if "time_ns" not in names and "time" in names:  # a table with Spark's microsecond times only
        columns["time_ns"] = pc.multiply(batch.column("time").cast(pa.int64()), 1000)
    return pa.RecordBatch.from_pydict(columns)


def summarize(events: list[Event], incidents: list[Incident], split: dict[str, list[str]]) -> Summary:
    """The audit's summary from judged events (the Spark engine's aggregates, computed here)."""
    read: set[tuple[Any, Any]] = set()
    unread: dict[tuple[Any, Any], str] = {}
    times = [e["time_ns"] for e in events if e["time_ns"] is not None]
    clients: set[str] = set()
    brokers: set[str] = set()
    clusters: set[str] = set()
    partitions: set[tuple[str, Any, int]] = set()
    for e in events:
        frame = (e["capture"], e["seq"])
        if e["kind"] == UNREADABLE:
            unread.setdefault(frame, e["error"] or "?")
        else:
            read.add(frame)
        for seen, value in ((clients, e["client"]), (brokers, e["broker"]), (clusters, e["cluster"])):
            if value is not None:
                seen.add(value)
        if e["partition"] is not None:
            partitions.add((e["cluster"] or "", e["topic"], e["partition"]))
    reasons: dict[str, int] = {}
    for why in unread.values():
        reasons[why] = reasons.get(why, 0) + 1
    counts: dict[tuple[str, str, str], int] = {}
    for row in incidents:
        key = count_key(row["kind"], row["api"], row["error"])
        counts[key] = counts.get(key, 0) + 1
    return Summary(
        first_ns=min(times, default=None),
        last_ns=max(times, default=None),
        frames=len(read),
        clients=sorted(clients),
        brokers=sorted(brokers),
        partitions=len(partitions),
        clusters=sorted(clusters),
        counts=counts,
        disagreements=sum(row["kind"] == DISAGREEMENT for row in incidents),
        unreadable=len(unread),
        unreadable_reasons=sorted(reasons.items(), key=lambda item: (-item[1], item[0]))[:_REASONS],
        split_ids=split,
    )


def timeline(events: list[Event]) -> list[dict[str, Any]]:
    """The leader epochs seen, per partition (see :meth:`LocalAudit.timeline`)."""
    seen = Timeline()
    for e in events:
        if e["kind"] == LEADER_EPOCH:
            time_ns = e["time_ns"]
            seen.add(
                (e["cluster"], e["topic"], e["partition"], e["epoch"]),
                first_ns=time_ns,
                first_seq=e["seq"],
                leader=e["leader"],
                earliest_ns=time_ns,
                latest_ns=time_ns,
                topic_id=e["topic_id"],
                sources=(e["api"],),
                broker=e["broker"],
            )
    return [{name: row[name] for name in TIMELINE_COLUMNS} for row in seen.rows()]

"""Leader-epoch audit of captured traffic: who knew which epoch when, and who was fenced for it.

``audit(frames)`` takes frames as the ``kafka-capture`` data source gives them (``frame``,
``direction``, ``request_api_key``, ``request_api_version``; ``time``/``time_ns``, ``client``,
``broker``, ``correlation_id``, ``capture`` and ``seq`` are used when present) and returns five
DataFrames (:class:`AuditResult`), each row with the ``cluster`` it belongs to:

- ``timeline``: per cluster and topic partition, each leader epoch seen in Metadata responses
  (v7+) and LeaderAndIsr requests, with when it was first and last seen and from where;
- ``stale_requests``: every Produce, Fetch, ListOffsets or OffsetForLeaderEpoch partition whose
  ``CurrentLeaderEpoch`` is older or newer than the leader's epoch at that time (the highest epoch
  its cluster's timeline had seen by then), judged by :func:`kafka_epochs.epochs.check_leader_epoch`;
- ``fenced_responses``: every FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or STALE_CONTROLLER_EPOCH
  in a response, with the topic and partition it is about when the response names them;
- ``stop_replica_fenced``: every StopReplica partition that the KIP-570 rule
  (:func:`kafka_epochs.epochs.stop_replica_epoch_error`) would fence against that epoch;
- ``disagreements``: the requests and StopReplicas whose verdict the broker's own answer
  contradicts (judged stale but answered without that error, or judged fine but fenced).

Clusters: epochs belong to one cluster's partitions, so traffic of independent clusters is
split first (:mod:`kafka_epochs.audit.clusters`; ``cluster_key``). Verdicts against the broker:
each judged request is paired with its response (same connection, same correlation id);
``broker_error`` is the epoch error the broker gave for that partition, and ``agreement`` says
``agrees``, ``disagrees with the broker``, ``no response captured``, or why it cannot tell. A
verdict the broker contradicts goes to ``disagreements``, not to the stale tables.

Every row of the last four says how its frame was read: ``profile`` (the layout: ``apache``,
``kip`` or a spec directory) and ``warnings`` (trailing bytes, an ApiVersions v0 answer, an
unstable version, a frame that two layouts read differently), so a verdict resting on a tolerated
or ambiguous frame says so.

This is the audit's Spark engine; the domain is :mod:`kafka_epochs.audit`, shared with the
in-process engine (:mod:`kafka_epochs.audit.local`), which gives the same rows. Events are
extracted in ``mapInArrow`` tasks (:func:`kafka_epochs.audit.events.audit_events`: frames are
decoded again, only those that can matter, because the rules read decoded objects), each task
summing up on the way what placing them needs (:mod:`kafka_epochs.audit.placement`) and packing
its events by exchange (:mod:`kafka_epochs.audit.shares`: Arrow IPC values, a few per task, where
rows would cost Spark a conversion per value); clusters and the timeline are worked out on the
driver from the summaries; the checks are then judged by
:func:`kafka_epochs.audit.judging.judge_exchanges`, the verdict rule of the
``kafka_epochs.epochs`` functions, in tasks that each unpack some shares (whole exchanges), place
their events and hold every partition's leader epochs (the timeline: one row per epoch seen).

A frame that could carry an epoch and does not decode is an ``unreadable`` event (``error`` says
why): it contributes no verdict, and the audit's summary, report and exit status count it, so an
all-clear never rests on frames it could not read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_epochs.audit.clusters import CLUSTER_KEYS
from kafka_epochs.audit.events import (
    DISAGREES,
    ERROR_RESPONSE,
    EVENT_SCHEMA,
    INPUT_FIELDS,
    REQUEST_EPOCH,
    STOP_REPLICA_EPOCH,
    audit_events,
    check_frame_columns,
)
from kafka_epochs.audit.incidents import TIMELINE_COLUMNS
from kafka_epochs.audit.judging import (
    CHECKS,
    VERDICT_FIELDS,
    LeaderEpochs,
    PartitionKey,
    epoch_errors,
    epoch_index,
    incidents,
    judge_exchanges,
)
from kafka_epochs.audit.placement import JUDGED_KINDS, SUMMARY_SCHEMA, Placement, PlacementSummary, row_keys
from kafka_epochs.audit.shares import SHARES, ShareWriter, unpack
from kafka_epochs.epochs import EqualEpochPolicy, Errors
from kafka_epochs.protocol_refs import ProtocolLike, protocol_ref
from kafka_epochs.report.model import Summary
from kafka_epochs.spark.audit_counts import frame_counts, unreadable_reasons
from kafka_epochs.spark.driver_tables import driver_table
from kafka_epochs.spark.shipping import ship_package
from kafka_epochs.spark.spark_types import spark_schema

# -- Spark: the tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    timeline: DataFrame
    stale_requests: DataFrame
    fenced_responses: DataFrame
    stop_replica_fenced: DataFrame
    #: requests and StopReplicas whose verdict the broker's own answer contradicts
    disagreements: DataFrame
    #: every extracted event, with its cluster (unpacked from the cached shares and placed as
    #: read: cache it to read it often)
    events: DataFrame
    #: builds :attr:`judged` (the query alone costs the driver a fifth of a second: only the
    #: report asks for it)
    judging: Callable[[], DataFrame] = field(repr=False)
    #: the four incident tables before their sort (a query that orders them its own way, or
    #: not at all, need not pay for it)
    unordered: dict[str, DataFrame] = field(default_factory=dict, repr=False)
    #: cluster ids that name several clusters (told apart by their topics' ids), each with those
    #: clusters' names: the audit judged them apart (``cluster_key="cluster-id"`` joins them)
    split_clusters: dict[str, list[str]] = field(default_factory=dict)
    #: what :meth:`unpersist` frees
    cached: list[DataFrame] = field(default_factory=list, repr=False)

    @cached_property
    def judged(self) -> DataFrame:
        """Every judged request and StopReplica partition, whatever its verdict (``verdict`` NONE:
        accepted; null: no epoch known), with ``leader_epoch``, ``broker_error`` and
        ``agreement`` (judged when read, as the report does: the incident tables keep only
        incidents; cache it to read it more than once)."""
        return self.judging()

    def tables(self) -> dict[str, DataFrame]:
        return {
            "timeline": self.timeline,
            "stale_requests": self.stale_requests,
            "fenced_responses": self.fenced_responses,
            "stop_replica_fenced": self.stop_replica_fenced,
            "disagreements": self.disagreements,
        }

    def unreadable(self) -> Summary | None:
        """None when every frame that could carry an epoch decoded; else a summary of how many
        did not (``unreadable``, ``unreadable_reasons``) against those read (``frames``)."""

        row = self.events.agg(*frame_counts()).first()
        if row is None or not row["unreadable"]:
            return None
        return Summary(
            first_ns=None,
            last_ns=None,
            frames=row["frames"],
            clients=[],
            brokers=[],
            partitions=0,
            clusters=[],
            counts={},
            disagreements=0,
            unreadable=row["unreadable"],
            unreadable_reasons=unreadable_reasons(self.events),
        )

    def unpersist(self) -> None:
        """Free the cached events and incidents."""
        for table in self.cached:
            table.unpersist()

    def report(
        self, path: str | Path, *, max_partitions: int = 20, title: str | None = None, sources: Sequence[str] = ()
    ) -> Path:
        """Write the audit as one self-contained HTML file (needs the ``report`` extra): a
        summary, the timelines of the ``max_partitions`` partitions with the most incidents, and
        each incident explained. ``sources`` names what was audited, for the page."""
        from kafka_epochs.spark.audit_report import write_audit_report

        return write_audit_report(self, path, max_partitions=max_partitions, title=title, sources=sources)


def audit(
    frames: DataFrame,
    *,
    protocol: ProtocolLike = None,
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
    cluster_key: str = "auto",
) -> AuditResult:
    """The leader-epoch audit of ``frames`` (see the module docstring for the tables).

    ``cluster_key`` says how traffic is split into clusters, each with its own timeline:
    ``auto``, ``capture``, ``broker`` or ``cluster-id`` (see :mod:`kafka_epochs.audit.clusters`).
    """
    _check_cluster_key(cluster_key)
    ship_package(frames.sparkSession)
    ref = protocol_ref(protocol)

    def extract(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _prepare(audit_events(batch, ref) for batch in batches)

    prepared = _normalized(frames).mapInArrow(extract, spark_schema(_PREPARED)).cache()  # a few rows a task
    return _audit(prepared, equal_epoch, cluster_key)


def extract_events(frames: DataFrame, *, protocol: ProtocolLike = None) -> DataFrame:
    """The epoch events of ``frames`` (:data:`EVENT_SCHEMA`), the audit's first step: the only one
    that reads frames. Events of frames read at different times can be stored and audited
    together (:func:`audit_of_events`), as ``audit --follow`` does."""
    ship_package(frames.sparkSession)  # a cluster's executors get this kafka_epochs
    ref = protocol_ref(protocol)

    def extract(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield audit_events(batch, ref)

    return _normalized(frames).mapInArrow(extract, spark_schema(EVENT_SCHEMA))


def audit_of_events(
    raw: DataFrame,
    *,
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
    cluster_key: str = "auto",
) -> AuditResult:
    """The audit of events :func:`extract_events` gave (from one read or several)."""
    _check_cluster_key(cluster_key)
    ship_package(raw.sparkSession)
    # Spark hands list columns to Python slowly (some 10 us a row, null or not): they cross as JSON text
    lists = ("members", "warnings")
    columns = [F.to_json(name).alias(name) if name in lists else F.col(name) for name in EVENT_SCHEMA.names]

    def listed(batch: pa.RecordBatch) -> pa.RecordBatch:
        for name in lists:
            parsed = [None if v is None else json.loads(v) for v in batch.column(name).to_pylist()]
            batch = batch.set_column(batch.schema.get_field_index(name), name, pa.array(parsed, _LIST))
        return batch

    def prepare(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return _prepare(listed(batch) for batch in batches)

    prepared = raw.select(*columns).mapInArrow(prepare, spark_schema(_PREPARED)).cache()
    return _audit(prepared, equal_epoch, cluster_key)


def _check_cluster_key(cluster_key: str) -> None:
    if cluster_key not in CLUSTER_KEYS:
        raise ValueError(f"cluster_key must be one of {', '.join(CLUSTER_KEYS)}, not {cluster_key!r}")


def _audit(prepared: DataFrame, equal_epoch: EqualEpochPolicy, cluster_key: str) -> AuditResult:
    """The audit of the events in ``prepared`` (cached :data:`_PREPARED` rows: the tasks'
    :class:`~kafka_epochs.audit.placement.PlacementSummary` rows, placing them, and their
    :class:`~kafka_epochs.audit.shares.ShareWriter` shares)."""
    summaries = prepared.where(F.col("summary").isNotNull()).select("summary.*")
    placement = Placement.of(summaries.toArrow().to_pylist(), cluster_key)  # (filling the cache)
    seen = placement.timeline
    shares = prepared.where(F.col("packed").isNotNull()).select("share", "packed")
    events = _unpacked(shares, placement)
    timeline = _timeline_table(prepared.sparkSession, seen)
    epochs = epoch_index(seen)
    tasks = _judging_tasks(prepared.sparkSession, placement.judged_events)
    # the incident tables read the checks that are incidents (a fraction of them) and the epoch
    # errors, both from the judging tasks (cached); every verdict (the report's markers) is judged
    # again only if asked for
    judged = _judged(shares, placement, epochs, equal_epoch, incidents_only=True, tasks=tasks).cache()
    disagrees = F.col("agreement") == DISAGREES
    stale = (F.col("verdict") != Errors.NONE.name) & ~disagrees
    table_of = (
        F.when(F.col("kind") == ERROR_RESPONSE, "fenced_responses")
        .when(disagrees, "disagreements")
        .when((F.col("kind") == REQUEST_EPOCH) & stale, "stale_requests")
        .when((F.col("kind") == STOP_REPLICA_EPOCH) & stale, "stop_replica_fenced")
    )
    found = judged.withColumn("table", table_of)
    # no table has more rows than there are events to judge: under the bound, each is sorted in
    # one task, without the sampling job and shuffle of a distributed sort; over it, how many
    # rows each has decides (a query that judges, filling the cache)
    if placement.judged_events <= _SORTED_IN_ONE_TASK:
        sizes = dict.fromkeys(_INCIDENT_TABLES, placement.judged_events)
    else:
        sizes = {r["table"]: r["count"] for r in found.groupBy("table").count().collect()}
    rows = {name: found.where(F.col("table") == name) for name in _INCIDENT_TABLES}
    incidents = {
        "stale_requests": _report(rows["stale_requests"], "requested_epoch"),
        "fenced_responses": rows["fenced_responses"].select(
            *_REPORTED, "path", "error_code", "error", "profile", "warnings"
        ),
        "stop_replica_fenced": _report(rows["stop_replica_fenced"], "requested_epoch", "delete"),
        "disagreements": _report(rows["disagreements"], "requested_epoch", "kind", "delete"),
    }
    order = ("time_ns", "seq", "topic", "partition", "capture")
    orders = {name: order for name in incidents} | {"fenced_responses": ("time_ns", "seq", "path", "capture")}
    tables = {name: _ordered(incidents[name], orders[name], sizes.get(name, 0)) for name in incidents}
    return AuditResult(
        timeline=_ordered(timeline, ("cluster", "topic", "partition", "first_seen", "leader_epoch"), len(seen)),
        **tables,
        events=events,
        judging=partial(_judged, shares, placement, epochs, equal_epoch, incidents_only=False, tasks=tasks),
        cached=[judged, prepared],
        unordered=incidents,
        split_clusters=placement.split_ids,
    )


#: What an extraction task hands on: summary rows (``summary``) and its events packed by
#: exchange (``share``, ``packed``), one row apiece.
_PREPARED = pa.schema(
    [
        pa.field("summary", pa.struct(list(SUMMARY_SCHEMA))),
        pa.field("share", pa.int32()),
        pa.field("packed", pa.binary()),
    ]
)
_LIST = pa.list_(pa.string())


def _prepare(events: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's ``events`` as :data:`_PREPARED` rows: packed by exchange (as the task holds
    enough of them, and at its end), and what placing them needs, summed up, at its end."""
    summary, shares = PlacementSummary(), ShareWriter()
    for batch in events:
        summary.add(batch)
        packed = shares.add(batch)
        if packed:
            yield _prepared(None, packed)
    yield _prepared(summary, shares.packed())


def _prepared(summary: PlacementSummary | None, packed: list[tuple[int, bytes]]) -> pa.RecordBatch:
    """Shares and (at a task's end) its summary rows as :data:`_PREPARED` rows."""
    summaries = pa.array([], _PREPARED.field("summary").type)
    if summary is not None:
        table = summary.table()
        summaries = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(SUMMARY_SCHEMA))
    share = pa.array([None] * len(summaries) + [share for share, _ in packed], pa.int32())
    blobs = pa.array([None] * len(summaries) + [blob for _, blob in packed], pa.binary())
    summary_column = pa.concat_arrays([summaries, pa.nulls(len(packed), summaries.type)])
    return pa.RecordBatch.from_arrays([summary_column, share, blobs], schema=_PREPARED)


def _unpacked(shares: DataFrame, placement: Placement) -> DataFrame:
    """The events packed in ``shares``, placed (with their ``cluster``, topics named) and with
    their ``time``."""

    def unpacked(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for blob in batch.column("packed").to_pylist():
                yield from placement.place(unpack([blob])).to_batches()

    schema = pa.schema([*EVENT_SCHEMA, pa.field("cluster", pa.string())])
    events = shares.mapInArrow(unpacked, spark_schema(schema))
    # integral division: as a double, a nanosecond time since 1970 has lost its microseconds
    return events.withColumn("time", F.expr("timestamp_micros(time_ns div 1000)"))


def _strings(*names: str) -> list[tuple[str, pa.DataType]]:
    return [(name, pa.string()) for name in names]


def _normalized(frames: DataFrame) -> DataFrame:
    """``frames`` with exactly :data:`INPUT_FIELDS`; absent optional columns are null.

    ``time_ns`` comes from ``time`` when only that is there. Without either, rows keep the
    table's order through ``seq`` and the timeline cannot say when (its times are null).
    """
    names = set(frames.columns)
    check_frame_columns(names)
    columns: dict[str, Column] = {}
    for name, kind in INPUT_FIELDS:
        if name in names:
            columns[name] = F.col(name).cast(kind)
        elif name == "time_ns" and "time" in names:
            columns[name] = (F.unix_micros(F.col("time")) * 1000).cast(kind)
        elif name == "seq":
            columns[name] = F.monotonically_increasing_id()
        else:
            columns[name] = F.lit(None).cast(kind)
    return frames.select(*(columns[name].alias(name) for name, _ in INPUT_FIELDS))


_TIMELINE_SCHEMA = pa.schema(
    [
        *_strings("cluster", "topic"),
        ("partition", pa.int32()),
        ("leader_epoch", pa.int32()),
        ("first_seen_ns", pa.int64()),
        ("last_seen_ns", pa.int64()),
        ("first_seen_seq", pa.int64()),
        ("leader", pa.int32()),
        ("topic_id", pa.string()),
        ("sources", pa.list_(pa.string())),
        ("brokers", pa.list_(pa.string())),
        ("observations", pa.int64()),
        ("behind", pa.bool_()),
    ]
)


def _timeline_table(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """The timeline's rows (:class:`~kafka_epochs.audit.timeline.Timeline`'s) as a table, with
    ``first_seen`` and ``last_seen`` as timestamps."""
    names = TIMELINE_COLUMNS
    assert tuple(_TIMELINE_SCHEMA.names) == names
    table = driver_table(spark, (tuple(row[n] for n in names) for row in rows), _TIMELINE_SCHEMA)
    return table.select(
        *names[:4],
        F.expr("timestamp_micros(first_seen_ns div 1000)").alias("first_seen"),
        F.expr("timestamp_micros(last_seen_ns div 1000)").alias("last_seen"),
        *names[4:],
    )


_INCIDENT_TABLES = ("stale_requests", "fenced_responses", "stop_replica_fenced", "disagreements")
#: A table with at most this many rows is sorted by one task (see :func:`_ordered`).
_SORTED_IN_ONE_TASK = 1_000_000


def _ordered(table: DataFrame, order: Sequence[str], rows: int) -> DataFrame:
    """``table`` sorted by ``order``, knowing it has ``rows`` rows: up to
    :data:`_SORTED_IN_ONE_TASK`, in one task (a distributed sort first samples its input in a job
    of its own, then shuffles it: some 0.1 s apiece, which a small table does not need)."""
    if rows > _SORTED_IN_ONE_TASK:
        return table.orderBy(*order)
    return table.coalesce(1).sortWithinPartitions(*order)


#: A judging task holds its shares of the events at once (an exchange's may be in any of its
#: batches): about this many at most (some 200 MB in Python), while there are shares enough.
_EVENTS_PER_TASK = 500_000


def _judging_tasks(spark: SparkSession, judged_events: int) -> int:
    """How many tasks judge ``judged_events`` events: two per core (a share's size varies), or
    enough for :data:`_EVENTS_PER_TASK` each; at most one per share."""
    cores = spark.sparkContext.defaultParallelism
    return min(SHARES, max(2 * cores, -(-judged_events // _EVENTS_PER_TASK)))


def _judged(
    shares: DataFrame,
    placement: Placement,
    epochs: dict[PartitionKey, LeaderEpochs],
    equal_epoch: EqualEpochPolicy,
    *,
    incidents_only: bool,
    tasks: int,
) -> DataFrame:
    """Every check (a request or StopReplica naming an epoch) judged, with ``leader_epoch``,
    ``verdict``, ``broker_error`` and ``agreement``: the rule of
    :func:`~kafka_epochs.audit.judging.judge_exchanges`; with ``incidents_only``, those that are
    incidents (judged stale or fenced, or contradicted by the broker) and the epoch errors of
    the answers (``error_response`` rows, their verdict columns null).

    A verdict needs its partition's epochs seen before it (``epochs``) and the broker's answer,
    which is on the same connection with the same correlation id: the events the judging reads
    come packed in ``shares`` (:mod:`kafka_epochs.audit.shares`: an exchange's events are in one
    share), ``tasks`` tasks each unpack the shares they are given, place the events
    (:meth:`~kafka_epochs.audit.placement.Placement.place`: clusters, topic names) and judge the
    exchanges they hold whole. One shuffle of a few values per extraction task, no join.
    """
    spread = shares.repartition(tasks, "share")
    ship_package(shares.sparkSession)

    def judge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        packed = [blob for batch in batches for blob in batch.column("packed").to_pylist()]
        if packed:
            table = unpack(packed).combine_chunks()  # (a chunk a share: filters are faster over one)
            table = placement.place(table.filter(pc.is_in(table.column("kind"), _JUDGED_KINDS)))
            if incidents_only:  # a check of a partition with no epoch seen has no verdict: no incident either
                table = table.filter(_judgeable(table, epochs))
            judged = judge_exchanges(table, epochs, equal_epoch)
            if incidents_only:
                yield from incidents(judged).to_batches()
                yield from epoch_errors(table).to_batches()
            else:
                yield from judged.to_batches()

    placed = [*EVENT_SCHEMA, pa.field("cluster", pa.string())]
    judged = spread.mapInArrow(judge, spark_schema(pa.schema([*placed, *VERDICT_FIELDS])))
    return judged.withColumn("time", F.expr("timestamp_micros(time_ns div 1000)"))


def _judgeable(table: pa.Table, epochs: dict[PartitionKey, LeaderEpochs]) -> pa.Array:
    """Which events of ``table`` (placed) are not checks of a partition with no epoch seen."""
    places, which = row_keys(table, ("cluster", "topic", "partition"))
    known = pa.array([place in epochs for place in places], pa.bool_()).take(which)
    return pc.or_(pc.invert(pc.is_in(table.column("kind"), _CHECKS)), known)


#: The events the judging reads, and those it judges.
_JUDGED_KINDS = pa.array(JUDGED_KINDS)
_CHECKS = pa.array(CHECKS)


#: What every verdict table says of the frame it is about, in this order.
_REPORTED = (
    "cluster",
    "time",
    "time_ns",
    "seq",
    "capture",
    "client",
    "broker",
    "correlation_id",
    "api",
    "api_version",
    "topic",
    "topic_id",
    "partition",
)


def _report(checks: DataFrame, epoch_name: str, *extra: str) -> DataFrame:
    return checks.select(
        *_REPORTED,
        F.col("epoch").alias(epoch_name),
        *extra,
        "leader_epoch",
        F.col("verdict").alias("error"),
        "broker_error",
        "agreement",
        "profile",
        "warnings",
    )

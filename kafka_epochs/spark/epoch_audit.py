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
summing up on the way what placing them needs (:mod:`kafka_epochs.audit.placement`); clusters and
the timeline are worked out on the driver from those few rows; each (cluster, topic, partition) is then
judged by :func:`kafka_epochs.audit.judging.judge_exchanges`, the verdict rule of the
``kafka_epochs.epochs`` functions, in tasks that each hold whole exchanges and every partition's
leader epochs (the timeline: one row per epoch seen).

A frame that could carry an epoch and does not decode is an ``unreadable`` event (``error`` says
why): it contributes no verdict, and the audit's summary, report and exit status count it, so an
all-clear never rests on frames it could not read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_epochs.audit.clusters import CLUSTER_KEYS, Node
from kafka_epochs.audit.events import (
    ANSWER,
    CLUSTER_INFO,
    DISAGREES,
    ERROR_RESPONSE,
    EVENT_SCHEMA,
    INPUT_FIELDS,
    REQUEST_EPOCH,
    STOP_REPLICA_EPOCH,
    audit_events,
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
from kafka_epochs.audit.placement import SUMMARY_READS, SUMMARY_SCHEMA, Placement, PlacementSummary
from kafka_epochs.epochs import EqualEpochPolicy, Errors
from kafka_epochs.protocol_refs import ProtocolLike, protocol_ref
from kafka_epochs.report.model import Summary
from kafka_epochs.spark.audit_counts import frame_counts, unreadable_reasons
from kafka_epochs.spark.driver_tables import driver_table
from kafka_epochs.spark.shipping import ship_package
from kafka_epochs.spark.spark_types import spark_schema, spark_type

# -- Spark: the tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    timeline: DataFrame
    stale_requests: DataFrame
    fenced_responses: DataFrame
    stop_replica_fenced: DataFrame
    #: requests and StopReplicas whose verdict the broker's own answer contradicts
    disagreements: DataFrame
    #: every extracted event, with its cluster (the extracted events are cached; the clusters
    #: and topic names are joined on as read)
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
        # the events, then what placing them needs summed up (while the task has them)
        summary = PlacementSummary()
        for batch in batches:
            events = audit_events(batch, ref)
            summary.add(events)
            yield events.append_column("summary", pa.nulls(events.num_rows, _SUMMARY))
        table = summary.table()
        rows = pa.StructArray.from_arrays([c.combine_chunks() for c in table.columns], fields=list(SUMMARY_SCHEMA))
        yield pa.RecordBatch.from_arrays(
            [*(pa.nulls(len(rows), f.type) for f in EVENT_SCHEMA), rows], schema=_SUMMARIZED
        )

    raw = _normalized(frames).mapInArrow(extract, spark_schema(_SUMMARIZED)).cache()
    is_event = F.col("kind").isNotNull()  # summary rows have no kind
    summaries = raw.where(~is_event).select("summary.*")
    return _audit(raw, raw.where(is_event).drop("summary"), summaries, equal_epoch, cluster_key)


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
    raw = raw.cache()  # what everything below reads
    ship_package(raw.sparkSession)
    # what the summing up reads; a list column crosses to Python as text (see _judged)
    read = [c for c in SUMMARY_READS if c != "members"]
    members = F.when(F.col("kind") == CLUSTER_INFO, F.to_json("members")).alias("members")

    def summarize(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        summary = PlacementSummary()
        for batch in batches:
            listed = [None if m is None else json.loads(m) for m in batch.column("members").to_pylist()]
            summary.add(batch.set_column(batch.schema.get_field_index("members"), "members", pa.array(listed, _LIST)))
        yield from summary.table().to_batches()

    summaries = raw.select(*read, members).mapInArrow(summarize, spark_schema(SUMMARY_SCHEMA))
    return _audit(raw, raw, summaries, equal_epoch, cluster_key)


def _check_cluster_key(cluster_key: str) -> None:
    if cluster_key not in CLUSTER_KEYS:
        raise ValueError(f"cluster_key must be one of {', '.join(CLUSTER_KEYS)}, not {cluster_key!r}")


def _audit(
    cached: DataFrame, raw: DataFrame, summaries: DataFrame, equal_epoch: EqualEpochPolicy, cluster_key: str
) -> AuditResult:
    """The audit of the (cached) events ``raw``, placed by their ``summaries``
    (:class:`~kafka_epochs.audit.placement.PlacementSummary` rows)."""
    placement = Placement.of(summaries.toArrow().to_pylist(), cluster_key)  # (filling the cache)
    events, seen = _with_places(raw, placement.clusters, placement.names), placement.timeline
    timeline = _timeline_table(raw.sparkSession, seen)
    epochs = epoch_index(seen)
    tasks = _judging_tasks(events, placement.judged_events)
    # the incident tables read the checks that are incidents (a fraction of them) and the epoch
    # errors, both from the judging tasks (cached); every verdict (the report's markers) is judged
    # again only if asked for
    judged = _judged(events, epochs, equal_epoch, incidents_only=True, tasks=tasks).cache()
    disagrees = F.col("agreement") == DISAGREES
    stale = (F.col("verdict") != Errors.NONE.name) & ~disagrees
    table_of = (
        F.when(F.col("kind") == ERROR_RESPONSE, "fenced_responses")
        .when(disagrees, "disagreements")
        .when((F.col("kind") == REQUEST_EPOCH) & stale, "stale_requests")
        .when((F.col("kind") == STOP_REPLICA_EPOCH) & stale, "stop_replica_fenced")
    )
    found = judged.withColumn("table", table_of)
    # how many rows each table has (this judges, filling the cache): a small table is sorted in
    # one task, without the sampling job and shuffle of a distributed sort
    sizes: dict[str, int] = {r["table"]: r["count"] for r in found.groupBy("table").count().collect()}
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
        judging=partial(_judged, events, epochs, equal_epoch, incidents_only=False, tasks=tasks),
        cached=[judged, cached],
        unordered=incidents,
        split_clusters=placement.split_ids,
    )


#: The extraction's output when the audit runs it: the events, then the task's summary rows
#: (their event columns null, ``kind`` too; an event's ``summary`` is null).
_SUMMARY = pa.struct(list(SUMMARY_SCHEMA))
_SUMMARIZED = pa.schema([*EVENT_SCHEMA, pa.field("summary", _SUMMARY)])
_LIST = pa.list_(pa.string())


def _with_places(raw: DataFrame, clusters: dict[Node, str], known: dict[tuple[str | None, str], str]) -> DataFrame:
    """``raw`` with each event's cluster, and the topic names its topic id has (two broadcast joins)."""
    spark = raw.sparkSession
    nodes = driver_table(
        spark,
        [(capture, broker, name) for (capture, broker), name in clusters.items()],
        _strings("node_capture", "node_broker", "cluster"),
    )
    on_node = raw["capture"].eqNullSafe(nodes["node_capture"]) & raw["broker"].eqNullSafe(nodes["node_broker"])
    placed = raw.join(F.broadcast(nodes), on_node, "left").drop("node_capture", "node_broker")
    # an empty name is no name: the one its topic id has in its cluster, else none
    own = F.when(F.col("topic") != "", F.col("topic"))
    if known:
        names = driver_table(
            spark,
            [(cluster, topic_id, name) for (cluster, topic_id), name in known.items()],
            _strings("name_cluster", "name_topic_id", "known_name"),
        )
        on_id = placed["cluster"].eqNullSafe(names["name_cluster"]) & (placed["topic_id"] == names["name_topic_id"])
        placed = placed.join(F.broadcast(names), on_id, "left")
        own = F.coalesce(own, F.col("known_name"))
    placed = placed.select(*(own.alias(n) if n == "topic" else F.col(n) for n in EVENT_SCHEMA.names), "cluster")
    # integral division: as a double, a nanosecond time since 1970 has lost its microseconds
    return placed.withColumn("time", F.expr("timestamp_micros(time_ns div 1000)"))


def _strings(*names: str) -> list[tuple[str, pa.DataType]]:
    return [(name, pa.string()) for name in names]


def _normalized(frames: DataFrame) -> DataFrame:
    """``frames`` with exactly :data:`INPUT_FIELDS`; absent optional columns are null.

    ``time_ns`` comes from ``time`` when only that is there. Without either, rows keep the
    table's order through ``seq`` and the timeline cannot say when (its times are null).
    """
    names = set(frames.columns)
    for required in ("frame", "direction", "request_api_key", "request_api_version"):
        if required not in names:
            raise ValueError(f"audit needs a {required!r} column, as the kafka-capture data source gives it")
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


#: A judging task holds its share of those events at once (an exchange's may be in any of its
#: batches): at most about this many (some 200 MB in Python), however large the capture.
_EVENTS_PER_TASK = 500_000


def _judging_tasks(events: DataFrame, judged_events: int) -> int | None:
    """How many tasks judge ``judged_events`` events: None (Spark's adaptive choice, from the
    shuffle's size) while that keeps each task's share small enough to hold, else enough tasks
    for :data:`_EVENTS_PER_TASK` each."""
    spark = events.sparkSession
    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions") or 200)
    if judged_events <= _EVENTS_PER_TASK * shuffle:
        return None
    return -(-judged_events // _EVENTS_PER_TASK)


def _judged(
    events: DataFrame,
    epochs: dict[PartitionKey, LeaderEpochs],
    equal_epoch: EqualEpochPolicy,
    *,
    incidents_only: bool,
    tasks: int | None = None,
) -> DataFrame:
    """Every check (a request or StopReplica naming an epoch) judged, with ``leader_epoch``,
    ``verdict``, ``broker_error`` and ``agreement``: the rule of
    :func:`~kafka_epochs.audit.judging.judge_exchanges`; with ``incidents_only``, those that are
    incidents (judged stale or fenced, or contradicted by the broker) and the epoch errors of
    the answers (``error_response`` rows, their verdict columns null).

    A verdict needs its partition's epochs seen before it (``epochs``) and the broker's answer,
    which is on the same connection with the same correlation id: the checks, answers and epoch
    errors are spread over tasks by exchange, each task judging the exchanges it holds whole.
    One shuffle of the events that matter, no join, no Python call per row group.
    """
    # Spark hands list columns to Python slowly (some 10 us a row, null or not): the warnings
    # cross as JSON text and are parsed back in the JVM; what only sightings and cluster answers
    # have stays behind (every column costs per row, null or not)
    crossing = [f for f in EVENT_SCHEMA if f.name not in (*_SIGHTINGS_ONLY, "warnings")]
    columns = [*(F.col(f.name) for f in crossing), F.col("cluster"), F.to_json("warnings").alias("warnings")]
    exchange = [F.col(c) for c in ("capture", "client", "broker", "correlation_id")]
    # a check without a correlation id pairs with nothing: no need to keep those together
    unpaired = F.when(F.col("correlation_id").isNull(), F.col("seq"))
    checks = events.where(F.col("kind").isin(*CHECKS))
    if incidents_only:  # a check of a partition with no epoch seen has no verdict: no incident either
        checks = _of_partitions(checks, epochs)
    # (an answer without a correlation id answers nothing: it need not travel)
    answered = (F.col("kind") == ANSWER) & F.col("correlation_id").isNotNull()
    wanted = checks.unionByName(events.where(answered | (F.col("kind") == ERROR_RESPONSE))).select(*columns)
    spread = (
        wanted.repartition(*exchange, unpaired) if tasks is None else wanted.repartition(tasks, *exchange, unpaired)
    )
    text = [*crossing, pa.field("cluster", pa.string()), pa.field("warnings", pa.string())]
    ship_package(events.sparkSession)

    def judge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held = list(batches)  # the task's whole share: an exchange's events may be in any of its batches
        if held:
            table = pa.Table.from_batches(held)
            judged = judge_exchanges(table, epochs, equal_epoch)
            if incidents_only:
                yield from incidents(judged).to_batches()
                yield from epoch_errors(table).to_batches()
            else:
                yield from judged.to_batches()

    judged = spread.mapInArrow(judge, spark_schema(pa.schema([*text, *VERDICT_FIELDS])))
    judged = judged.withColumn("warnings", F.from_json("warnings", "array<string>"))
    absent = {f.name: F.lit(None).cast(spark_type(f.type)) for f in EVENT_SCHEMA if f.name in _SIGHTINGS_ONLY}
    return judged.withColumns({**absent, "time": F.expr("timestamp_micros(time_ns div 1000)")})


#: Event columns only leader-epoch sightings and cluster answers fill (null in what is judged).
_SIGHTINGS_ONLY = ("leader", "request_type", "cluster_id", "members")


def _of_partitions(events: DataFrame, epochs: dict[PartitionKey, LeaderEpochs]) -> DataFrame:
    """The ``events`` of the partitions ``epochs`` has (a broadcast semi-join: null equals null)."""
    schema = pa.schema([*_strings("known_cluster", "known_topic"), ("known_partition", pa.int32())])
    known = driver_table(events.sparkSession, epochs, schema)
    on = (
        events["cluster"].eqNullSafe(known["known_cluster"])
        & events["topic"].eqNullSafe(known["known_topic"])
        & events["partition"].eqNullSafe(known["known_partition"])
    )
    return events.join(F.broadcast(known), on, "left_semi")


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

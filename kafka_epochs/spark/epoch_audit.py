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
decoded again, only those that can matter, because the rules read decoded objects); clusters are
worked out on the driver from a small collected set; each (cluster, topic, partition) is then
judged by :func:`kafka_epochs.audit.judging.judge_partition`, the verdict rule of the
``kafka_epochs.epochs`` functions, in one ``applyInArrow`` call per partition.

A frame that could carry an epoch and does not decode is an ``unreadable`` event (``error`` says
why): it contributes no verdict, and the audit's summary, report and exit status count it, so an
all-clear never rests on frames it could not read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from kafka_epochs.audit.clusters import CLUSTER_KEYS, ClusterAssigner, ClusterInfo
from kafka_epochs.audit.events import (
    ANSWER,
    CLUSTER_INFO,
    DISAGREES,
    ERROR_RESPONSE,
    EVENT_SCHEMA,
    INPUT_FIELDS,
    LEADER_EPOCH,
    REQUEST_EPOCH,
    STOP_REPLICA_EPOCH,
    audit_events,
)
from kafka_epochs.audit.judging import judge_partition
from kafka_epochs.epochs import EqualEpochPolicy, Errors
from kafka_epochs.protocol_refs import ProtocolLike, protocol_ref
from kafka_epochs.report.model import Summary
from kafka_epochs.spark.audit_counts import frame_counts, unreadable_reasons
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
    #: every extracted event, with its cluster (cached: the tables are built from it)
    events: DataFrame
    #: every judged request and StopReplica partition, whatever its verdict (``verdict`` NONE:
    #: accepted; null: no epoch known), with ``leader_epoch``, ``broker_error`` and ``agreement``
    judged: DataFrame
    #: the four incident tables before their sort (a query that orders them its own way, or
    #: not at all, need not pay for it)
    unordered: dict[str, DataFrame] = field(default_factory=dict, repr=False)
    #: cluster ids that name several clusters (told apart by their topics' ids), each with those
    #: clusters' names: the audit judged them apart (``cluster_key="cluster-id"`` joins them)
    split_clusters: dict[str, list[str]] = field(default_factory=dict)

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
        """Free the cached events and verdicts (and what they were computed from)."""
        self.judged.unpersist()
        self.events.unpersist()

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
    if cluster_key not in CLUSTER_KEYS:
        raise ValueError(f"cluster_key must be one of {', '.join(CLUSTER_KEYS)}, not {cluster_key!r}")
    return audit_of_events(extract_events(frames, protocol=protocol), equal_epoch=equal_epoch, cluster_key=cluster_key)


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
    if cluster_key not in CLUSTER_KEYS:
        raise ValueError(f"cluster_key must be one of {', '.join(CLUSTER_KEYS)}, not {cluster_key!r}")
    raw = raw.cache()  # read twice: for what places events (collected), and to place them
    placed, split = _placed(raw, cluster_key)
    events = placed.cache()
    events.count()  # filled from raw's cache now: once raw is dropped, nothing extracts events again
    raw.unpersist()
    timeline = _timeline(events)
    checks = _judged(events, equal_epoch).cache()  # three incident tables and the report read it
    disagrees = F.col("agreement") == DISAGREES
    stale = checks.where((F.col("kind") == REQUEST_EPOCH) & (F.col("verdict") != Errors.NONE.name) & ~disagrees)
    stops = checks.where((F.col("kind") == STOP_REPLICA_EPOCH) & (F.col("verdict") != Errors.NONE.name) & ~disagrees)
    incidents = {
        "stale_requests": _report(stale, "requested_epoch"),
        "fenced_responses": events.where(F.col("kind") == ERROR_RESPONSE).select(
            *_REPORTED, "path", "error_code", "error", "profile", "warnings"
        ),
        "stop_replica_fenced": _report(stops, "requested_epoch", "delete"),
        "disagreements": _report(checks.where(disagrees), "requested_epoch", "kind", "delete"),
    }
    order = ("time_ns", "seq", "topic", "partition")
    return AuditResult(
        timeline=timeline.orderBy("cluster", "topic", "partition", "first_seen", "leader_epoch"),
        stale_requests=incidents["stale_requests"].orderBy(*order),
        fenced_responses=incidents["fenced_responses"].orderBy("time_ns", "seq", "path"),
        stop_replica_fenced=incidents["stop_replica_fenced"].orderBy(*order),
        disagreements=incidents["disagreements"].orderBy(*order),
        events=events,
        judged=checks,
        unordered=incidents,
        split_clusters=split,
    )


def _placed(raw: DataFrame, cluster_key: str) -> tuple[DataFrame, dict[str, list[str]]]:
    """``raw`` events with a ``cluster`` column (the cluster of each event's broker connection)
    and topic names filled in where an event names its topic by id only (Fetch v13+); and the
    cluster ids that name several clusters (see :meth:`ClusterAssigner.split_ids`).

    What decides both is small (one row per broker endpoint, distinct Metadata answer and topic
    id or name a broker was seen with): it is collected in one query, the clusters and the names
    are worked out on the driver (:class:`kafka_epochs.audit.clusters.ClusterAssigner`), and
    each task applies them to its events in one pass, with no join.
    """
    info = F.when(F.col("kind") == CLUSTER_INFO, F.struct("cluster_id", "members"))
    seen = raw.select("capture", "broker", info.alias("info"), "topic_id", "topic").distinct().collect()
    brokers = list(dict.fromkeys((r["capture"], r["broker"]) for r in seen))
    infos = list(
        dict.fromkeys(
            ClusterInfo(r["capture"], r["broker"], r["info"]["cluster_id"], tuple(r["info"]["members"] or ()))
            for r in seen
            if r["info"] is not None
        )
    )
    topic_ids = list(
        dict.fromkeys((r["capture"], r["broker"], r["topic_id"]) for r in seen if r["topic_id"] is not None)
    )
    named = list(
        dict.fromkeys(
            (r["capture"], r["broker"], r["topic"], r["topic_id"]) for r in seen if r["topic_id"] and r["topic"]
        )
    )
    assigner = ClusterAssigner(cluster_key)
    assigner.add(brokers, infos, topic_ids, named)
    clusters = assigner.names()
    known: dict[tuple[str | None, str], str] = {}  # (cluster, topic id) -> the least name events gave it
    for capture, broker, topic, topic_id in named:
        key = (clusters[(capture, broker)], topic_id)
        known[key] = min(topic, known.get(key, topic))
    schema = spark_schema(pa.schema([*EVENT_SCHEMA, pa.field("cluster", pa.string())]))
    ship_package(raw.sparkSession)

    def place(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            captures, hosts = batch.column("capture").to_pylist(), batch.column("broker").to_pylist()
            cluster = [clusters.get((c, b)) for c, b in zip(captures, hosts, strict=True)]
            topic = [
                name or (None if topic_id is None else known.get((where, topic_id)))
                for name, topic_id, where in zip(
                    batch.column("topic").to_pylist(), batch.column("topic_id").to_pylist(), cluster, strict=True
                )
            ]
            columns = {name: batch.column(name) for name in EVENT_SCHEMA.names}
            columns["topic"] = pa.array(topic, pa.string())
            columns["cluster"] = pa.array(cluster, pa.string())
            yield pa.RecordBatch.from_pydict(columns)

    placed = raw.select(*EVENT_SCHEMA.names).mapInArrow(place, schema)
    # integral division: as a double, a nanosecond time since 1970 has lost its microseconds
    return placed.withColumn("time", F.expr("timestamp_micros(time_ns div 1000)")), assigner.split_ids()


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


def _timeline(events: DataFrame) -> DataFrame:
    """One row per (topic, partition, epoch) seen; ``behind`` marks an epoch first seen after a
    higher one (a lagging broker's Metadata, or a deposed controller's LeaderAndIsr)."""
    seen = events.where(F.col("kind") == LEADER_EPOCH)
    epochs = seen.groupBy("cluster", "topic", "partition", F.col("epoch").alias("leader_epoch")).agg(
        F.min("time").alias("first_seen"),
        F.max("time").alias("last_seen"),
        F.min("time_ns").alias("first_seen_ns"),
        F.max("time_ns").alias("last_seen_ns"),
        # the first sighting's seq: orders sightings and requests at the same instant, or with no time
        F.min_by("seq", F.struct("time_ns", "seq")).alias("first_seen_seq"),
        F.min_by("leader", F.struct("time_ns", "seq")).alias("leader"),
        F.max("topic_id").alias("topic_id"),
        F.array_sort(F.collect_set("api")).alias("sources"),
        F.array_sort(F.collect_set(F.coalesce(F.col("broker"), F.lit("?")))).alias("brokers"),
        F.count(F.lit(1)).alias("observations"),
    )
    earlier = (
        Window.partitionBy("cluster", "topic", "partition")
        .orderBy("first_seen_ns", "leader_epoch")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    highest_before = F.max("leader_epoch").over(earlier)
    return epochs.withColumn("behind", F.coalesce(highest_before > F.col("leader_epoch"), F.lit(False)))


def _judged(events: DataFrame, equal_epoch: EqualEpochPolicy) -> DataFrame:
    """Every check (a request or StopReplica naming an epoch) judged, with ``leader_epoch``,
    ``verdict``, ``broker_error`` and ``agreement``: the rule of
    :func:`~kafka_epochs.audit.judging.judge_partition`, run once per (cluster, topic, partition).

    A verdict needs its partition's epochs seen before it, in capture order, and the broker's
    answer: the errors for the partition travel with it, and whether the request was answered at
    all (a response with its correlation id on its connection, whatever it held) is joined on
    first. One shuffle of the events that matter, one Python call per partition.
    """
    connection = ["capture", "client", "broker", "correlation_id"]
    paired = F.col("correlation_id").isNotNull()  # without one, nothing says which answer is whose
    answered = (
        events.where((F.col("kind") == ANSWER) & paired)
        .select(*connection)
        .distinct()
        .withColumn("answered", F.lit(True))
    )
    columns = [*EVENT_SCHEMA.names, "cluster"]
    checks = _null_safe_join(events.where(F.col("kind").isin(REQUEST_EPOCH, STOP_REPLICA_EPOCH)), answered, connection)
    context = events.where(F.col("kind").isin(LEADER_EPOCH, ERROR_RESPONSE)).withColumn(
        "answered", F.lit(None).cast("boolean")
    )
    rows = checks.select(*columns, "answered").unionByName(context.select(*columns, "answered"))
    judged_schema = pa.schema(
        [
            *EVENT_SCHEMA,
            pa.field("cluster", pa.string()),
            pa.field("leader_epoch", pa.int32()),
            pa.field("verdict", pa.string()),
            pa.field("broker_error", pa.string()),
            pa.field("agreement", pa.string()),
        ]
    )

    def judge(table: pa.Table) -> pa.Table:
        found = judge_partition(table.to_pylist(), equal_epoch)
        return pa.Table.from_pylist([{k: row[k] for k in judged_schema.names} for row in found], schema=judged_schema)

    judged = rows.groupBy("cluster", "topic", "partition").applyInArrow(judge, spark_schema(judged_schema))
    return judged.withColumn("time", F.expr("timestamp_micros(time_ns div 1000)"))


def _null_safe_join(left: DataFrame, right: DataFrame, keys: list[str]) -> DataFrame:
    """A left join on ``keys`` where null equals null (a table may lack client or correlation id)."""
    renamed = right.select(*(F.col(k).alias(f"r_{k}") for k in keys), *(c for c in right.columns if c not in keys))
    condition = None
    for k in keys:
        clause = left[k].eqNullSafe(renamed[f"r_{k}"])
        condition = clause if condition is None else condition & clause
    return left.join(renamed, condition, "left").drop(*(f"r_{k}" for k in keys))


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

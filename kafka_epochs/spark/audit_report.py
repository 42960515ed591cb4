"""An ``AuditResult`` brought to the driver as a report's plain values (:mod:`kafka_epochs.report`).

Only what the page shows is collected, however large the capture: aggregates for the summary,
the ``max_partitions`` partitions with the most incidents (their epochs, their incidents up to
``max_incidents`` each, their requests thinned to ``max_markers`` a verdict), and the
LeaderAndIsr requests (the stray-partition view needs all of them, in order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame, Row, Window
from pyspark.sql import functions as F

from kafka_epochs.audit.incidents import count_key, to_incident
from kafka_epochs.audit.incidents import frame_of as _frame
from kafka_epochs.audit.report_data import marker_verdict, rule_label
from kafka_epochs.report import write_report
from kafka_epochs.report.model import (
    DISAGREEMENT,
    FENCED_RESPONSE,
    STALE_REQUEST,
    STOP_REPLICA_FENCED,
    ControlRequest,
    ControlRule,
    EpochSighting,
    Marker,
    PartitionView,
    ReportData,
    Summary,
    check_limits,
)
from kafka_epochs.report.strays import with_strays
from kafka_epochs.spark.audit_counts import frame_counts, unreadable_reasons

if TYPE_CHECKING:
    from kafka_epochs.spark.epoch_audit import AuditResult

_KEY = ["cluster", "topic", "partition"]
_FRAME = ["capture", "seq", "time_ns", "client", "broker", "correlation_id"]


def write_audit_report(
    result: AuditResult,
    path: str | Path,
    *,
    max_partitions: int = 20,
    max_incidents: int = 50,
    max_markers: int = 500,
    title: str | None = None,
    sources: Sequence[str] = (),
) -> Path:
    """Collect ``result`` (see the module docstring for the bounds) and write the report."""
    data = report_data(result, max_partitions=max_partitions, max_incidents=max_incidents, max_markers=max_markers)
    data.title = title or data.title
    data.sources = list(sources)
    return write_report(data, path)


def report_data(
    result: AuditResult, *, max_partitions: int = 20, max_incidents: int = 50, max_markers: int = 500
) -> ReportData:
    check_limits(max_partitions, max_incidents, max_markers)
    # every table below is read several times: the events (unpacked from their shares when
    # read), the verdicts (which the incident tables are built from) and the incidents are
    # computed once, then dropped
    events = result.events.persist()
    judged = result.judged.persist()
    incidents = incident_rows(result).persist()
    try:
        return _collect(replace(result, events=events), judged, incidents, max_partitions, max_incidents, max_markers)
    finally:
        incidents.unpersist()
        judged.unpersist()
        events.unpersist()


def _collect(
    result: AuditResult,
    judged: DataFrame,
    incidents: DataFrame,
    max_partitions: int,
    max_incidents: int,
    max_markers: int,
) -> ReportData:
    per_partition = (
        incidents.where(F.col("partition").isNotNull()).groupBy(*_KEY).count().withColumnRenamed("count", "n")
    )
    ranked = per_partition.orderBy(F.desc("n"), "cluster", "topic", "partition").collect()
    chosen = ranked[:max_partitions]
    views = {
        (r["cluster"], r["topic"], r["partition"]): PartitionView(r["cluster"], r["topic"], r["partition"])
        for r in chosen
    }
    if views:
        keys = result.events.sparkSession.createDataFrame(
            [tuple(k) for k in views], "cluster string, topic string, partition int"
        )
        _fill_incidents(views, incidents, keys, max_incidents)
        _fill_sightings(views, result.timeline, keys)
        _fill_markers(views, judged, keys, max_markers)
        _fill_rules(views, result.events, keys)
    others = [
        to_incident(r)
        for r in incidents.where(F.col("partition").isNull()).orderBy("time_ns", "seq").limit(max_incidents).collect()
    ]
    control, left_out = _control_requests(result.events, judged)
    return ReportData(
        summary=summary_of(result, incidents),
        partitions=list(views.values()),
        partitions_left_out=len(ranked) - len(chosen),
        incidents_left_out=sum(r["n"] for r in ranked[max_partitions:]),
        other_incidents=others,
        control_requests=control,
        control_requests_left_out=left_out,
    )


def incident_rows(result: AuditResult) -> DataFrame:
    """The four incident tables as one, with a ``kind`` column (the table each row is from)."""
    common = [*_FRAME, "cluster", "api", "api_version", "topic", "partition", "error", "profile", "warnings"]

    # columns only some tables have: null in the others
    some = ("requested_epoch", "leader_epoch", "broker_error", "path", "delete")

    def shaped(table: DataFrame, kind: str) -> DataFrame:
        columns = [F.col(c) for c in common]
        columns += [F.col(c) if c in table.columns else F.lit(None).alias(c) for c in some]
        return table.select(*columns, F.lit(kind).alias("kind"))

    tables = {**result.tables(), **result.unordered}  # unsorted where known: the caller orders
    return (
        shaped(tables["stale_requests"], STALE_REQUEST)
        .unionByName(shaped(tables["stop_replica_fenced"], STOP_REPLICA_FENCED))
        .unionByName(shaped(tables["fenced_responses"], FENCED_RESPONSE))
        .unionByName(shaped(tables["disagreements"], DISAGREEMENT))
    )


def _of(views: dict[tuple[Any, ...], PartitionView], row: Row) -> PartitionView:
    return views[(row["cluster"], row["topic"], row["partition"])]


def _only(table: DataFrame, keys: DataFrame) -> DataFrame:
    """The rows of ``table`` about the chosen partitions (null clusters match each other)."""
    renamed = F.broadcast(keys.withColumnsRenamed({c: f"k_{c}" for c in _KEY}))
    joined = table.join(renamed, [table[c].eqNullSafe(F.col(f"k_{c}")) for c in _KEY])
    return joined.drop(*(f"k_{c}" for c in _KEY))


def _numbered(table: DataFrame, *within: str) -> DataFrame:
    window = Window.partitionBy(*_KEY, *within).orderBy("time_ns", "seq")
    return table.withColumn("rank", F.row_number().over(window)).withColumn(
        "total", F.count(F.lit(1)).over(Window.partitionBy(*_KEY, *within))
    )


def _fill_incidents(
    views: dict[tuple[Any, ...], PartitionView], incidents: DataFrame, keys: DataFrame, limit: int
) -> None:
    rows = _numbered(_only(incidents, keys)).where(F.col("rank") <= limit).orderBy("time_ns", "seq").collect()
    for row in rows:
        view = _of(views, row)
        view.incidents.append(to_incident(row))
        view.incidents_seen = row["total"]


def _fill_sightings(views: dict[tuple[Any, ...], PartitionView], timeline: DataFrame, keys: DataFrame) -> None:
    for row in _only(timeline, keys).collect():
        sources = row["sources"] or []
        _of(views, row).sightings.append(
            EpochSighting(row["first_seen_ns"], row["leader_epoch"], row["leader"], "/".join(sources))
        )


def _fill_markers(views: dict[tuple[Any, ...], PartitionView], judged: DataFrame, keys: DataFrame, limit: int) -> None:
    """Every verdict's requests, thinned evenly over time to ``limit`` a verdict."""
    numbered = _numbered(_only(judged, keys), "verdict")
    step = F.greatest(F.lit(1), F.ceil(F.col("total") / F.lit(limit)))
    kept = numbered.where(((F.col("rank") - 1) % step) == 0).select(
        *_KEY, *_FRAME, "api", "api_version", "epoch", "leader_epoch", "verdict", "kind", "agreement"
    )
    totals = _only(judged, keys).groupBy(*_KEY).count().collect()
    for row in totals:
        _of(views, row).requests_seen = row["count"]
    for row in kept.collect():
        _of(views, row).markers.append(
            Marker(_frame(row), row["api"], row["api_version"], row["epoch"], row["leader_epoch"], marker_verdict(row))
        )


def _fill_rules(views: dict[tuple[Any, ...], PartitionView], events: DataFrame, keys: DataFrame) -> None:
    control = events.where(
        ((F.col("kind") == "leader_epoch") & (F.col("api") == "LeaderAndIsr"))
        | ((F.col("kind") == "stop_replica") & (F.col("delete") | (F.col("epoch") == -2)))
    )
    for row in _only(control, keys).orderBy("time_ns", "seq").collect():
        _of(views, row).rules.append(ControlRule(row["time_ns"], rule_label(row), _frame(row)))


def _control_requests(events: DataFrame, judged: DataFrame, limit: int = 200) -> tuple[list[ControlRequest], int]:
    """The LeaderAndIsr requests in capture order, with the strays of each FULL one (deletions by
    StopReplicas the rules accept count; a fenced one deleted nothing)."""
    name = F.concat_ws("-", F.col("topic"), F.col("partition").cast("string"))
    leader_and_isr = (
        events.where((F.col("kind") == "leader_epoch") & (F.col("api") == "LeaderAndIsr"))
        .groupBy("cluster", *_FRAME, "api_version", "request_type")
        .agg(F.sort_array(F.collect_list(name)).alias("names"))
        .orderBy("time_ns", "seq")
        .collect()
    )
    deletions = [
        (r["time_ns"] or 0, r["cluster"], r["broker"], r["name"])
        for r in judged.where((F.col("kind") == "stop_replica") & F.col("delete") & (F.col("verdict") == "NONE"))
        .select("time_ns", "cluster", "broker", name.alias("name"))
        .collect()
    ]
    requests = [
        ControlRequest(_frame(r), r["cluster"], r["api_version"], r["request_type"] or "", tuple(r["names"]))
        for r in leader_and_isr
    ]
    found = with_strays(requests, deletions)
    return found[:limit], max(0, len(found) - limit)


def summary_of(result: AuditResult, incidents: DataFrame) -> Summary:
    """The summary of an audit (``incidents``: its :func:`incident_rows`)."""
    events = result.events
    row = events.agg(
        F.min("time_ns").alias("first"),
        F.max("time_ns").alias("last"),
        *frame_counts(),
        F.array_sort(F.collect_set("client")).alias("clients"),
        F.array_sort(F.collect_set("broker")).alias("brokers"),
        F.array_sort(F.collect_set("cluster")).alias("clusters"),
        F.count_distinct(
            F.when(F.col("partition").isNotNull(), F.struct(F.coalesce("cluster", F.lit("")), "topic", "partition"))
        ).alias("partitions"),
    ).first()
    assert row is not None
    counts: dict[tuple[str, str, str], int] = {}
    for r in incidents.groupBy("kind", "api", "error").count().collect():
        key = count_key(r["kind"], r["api"], r["error"])
        counts[key] = counts.get(key, 0) + r["count"]
    return Summary(
        first_ns=row["first"],
        last_ns=row["last"],
        frames=row["frames"],
        clients=list(row["clients"] or []),
        brokers=list(row["brokers"] or []),
        partitions=row["partitions"],
        clusters=list(row["clusters"] or []),
        counts=counts,
        disagreements=result.disagreements.count(),
        unreadable=row["unreadable"],
        unreadable_reasons=unreadable_reasons(events) if row["unreadable"] else [],
        split_ids=result.split_clusters,
    )


__all__ = ["incident_rows", "report_data", "summary_of", "write_audit_report"]

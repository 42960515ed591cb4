"""The in-process engine's audit as a report's plain values (:mod:`kafka_epochs.report`).

What the Spark engine collects for the page (:mod:`kafka_epochs.spark.audit_report`), taken
here from the events and incidents the in-process engine holds, with the same bounds: the
``max_partitions`` partitions with the most incidents (their epochs, their first
``max_incidents`` incidents, their requests thinned evenly over time to ``max_markers`` a
verdict), and the LeaderAndIsr requests for the stray-partition view. A test holds the two
engines' report data equal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.audit.events import DISAGREES, EVENT_SCHEMA, LEADER_EPOCH, STOP_REPLICA_EPOCH
from kafka_epochs.audit.incidents import frame_of, to_incident
from kafka_epochs.audit.judging import Event, Incident, epoch_index, judge_exchanges, position
from kafka_epochs.audit.timeline import nulls_first
from kafka_epochs.epochs import EqualEpochPolicy
from kafka_epochs.report.model import (
    ACCEPTED,
    DISPUTED,
    NO_EPOCH,
    STOP_FENCED,
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

__all__ = ["marker_verdict", "report_data", "rule_label"]

PartitionKey = tuple[Any, Any, Any]
_PLACED = pa.schema([*EVENT_SCHEMA, pa.field("cluster", pa.string())])
#: LeaderAndIsr requests listed for the stray-partition view, at most
_CONTROL_REQUESTS = 200


def report_data(
    events: list[Event],
    incidents: list[Incident],
    timeline: list[dict[str, Any]],
    summary: Summary,
    *,
    equal_epoch: EqualEpochPolicy,
    max_partitions: int = 20,
    max_incidents: int = 50,
    max_markers: int = 500,
) -> ReportData:
    """The report of judged ``events`` (each with the cluster and topic name it was judged with),
    their ``incidents`` in capture order, the ``timeline`` and the ``summary``."""
    check_limits(max_partitions, max_incidents, max_markers)
    per_partition: dict[PartitionKey, int] = {}
    for row in incidents:
        if row["partition"] is not None:
            key = (row["cluster"], row["topic"], row["partition"])
            per_partition[key] = per_partition.get(key, 0) + 1
    ranked = sorted(per_partition.items(), key=lambda item: (-item[1], *(nulls_first(v) for v in item[0])))
    chosen = ranked[:max_partitions]
    views = {key: PartitionView(*key) for key, _ in chosen}
    checks = _judged(events, timeline, equal_epoch)
    if views:
        _fill_incidents(views, incidents, max_incidents)
        for row in timeline:
            view = views.get((row["cluster"], row["topic"], row["partition"]))
            if view is not None:
                sources = "/".join(row["sources"] or [])
                view.sightings.append(EpochSighting(row["first_seen_ns"], row["leader_epoch"], row["leader"], sources))
        _fill_markers(views, checks, max_markers)
        _fill_rules(views, events)
    others = [to_incident(row) for row in incidents if row["partition"] is None][:max_incidents]
    control = _control_requests(events, checks)
    return ReportData(
        summary=summary,
        partitions=list(views.values()),
        partitions_left_out=len(ranked) - len(chosen),
        incidents_left_out=sum(n for _, n in ranked[max_partitions:]),
        other_incidents=others,
        control_requests=control[:_CONTROL_REQUESTS],
        control_requests_left_out=max(0, len(control) - _CONTROL_REQUESTS),
    )


def _in_capture_order(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: position(r["time_ns"], r["seq"]))


def _judged(events: list[Event], timeline: list[dict[str, Any]], equal_epoch: EqualEpochPolicy) -> list[Event]:
    """Every check judged (the markers show the accepted requests too), in capture order."""
    epochs = epoch_index(timeline)
    table = pa.Table.from_pylist([{name: e[name] for name in _PLACED.names} for e in events], schema=_PLACED)
    return _in_capture_order(judge_exchanges(table, epochs, equal_epoch).to_pylist())


def _fill_incidents(views: dict[PartitionKey, PartitionView], incidents: list[Incident], limit: int) -> None:
    for row in incidents:  # already in capture order
        view = views.get((row["cluster"], row["topic"], row["partition"]))
        if view is not None:
            view.incidents_seen += 1
            if len(view.incidents) < limit:
                view.incidents.append(to_incident(row))


def marker_verdict(row: Any) -> str:
    """How the report marks a judged check (a row with ``verdict``, ``agreement`` and ``kind``)."""
    if row["agreement"] == DISAGREES:
        return DISPUTED
    if row["verdict"] is None:
        return NO_EPOCH
    if row["verdict"] == "NONE":
        return ACCEPTED
    return STOP_FENCED if row["kind"] == STOP_REPLICA_EPOCH else str(row["verdict"])


def _fill_markers(views: dict[PartitionKey, PartitionView], checks: list[Event], limit: int) -> None:
    """Every verdict's requests, thinned evenly over time to ``limit`` a verdict."""
    groups: dict[tuple[PartitionKey, Any], list[Event]] = {}
    for row in checks:
        key = (row["cluster"], row["topic"], row["partition"])
        view = views.get(key)
        if view is not None:
            view.requests_seen += 1
            groups.setdefault((key, row["verdict"]), []).append(row)
    for (key, _), rows in groups.items():
        step = max(1, -(-len(rows) // limit))
        for row in rows[::step]:
            views[key].markers.append(
                Marker(
                    frame_of(row),
                    row["api"],
                    row["api_version"],
                    row["epoch"],
                    row["leader_epoch"],
                    marker_verdict(row),
                )
            )


def _is_control(e: Event) -> bool:
    if e["kind"] == LEADER_EPOCH:
        return bool(e["api"] == "LeaderAndIsr")
    return e["kind"] == STOP_REPLICA_EPOCH and bool(e["delete"] or e["epoch"] == -2)


def _fill_rules(views: dict[PartitionKey, PartitionView], events: list[Event]) -> None:
    for e in _in_capture_order(e for e in events if _is_control(e)):
        view = views.get((e["cluster"], e["topic"], e["partition"]))
        if view is None:
            continue
        view.rules.append(ControlRule(e["time_ns"], rule_label(e), frame_of(e)))


def rule_label(row: Any) -> str:
    """How the report labels a controller's request drawn as a rule (a LeaderAndIsr sighting, or
    a deleting StopReplica)."""
    if row["api"] == "LeaderAndIsr":
        return f"LeaderAndIsr {row['request_type'] or ''} epoch {row['epoch']}".replace("  ", " ")
    return "StopReplica delete" + (" (-2)" if row["epoch"] == -2 else "")


def _name(e: Event) -> str:
    # as Spark's concat_ws("-", topic, partition) writes it: a null part is left out
    return "-".join(str(part) for part in (e["topic"], e["partition"]) if part is not None)


def _control_requests(events: list[Event], checks: list[Event]) -> list[ControlRequest]:
    """The LeaderAndIsr requests in capture order, with the strays of each FULL one (deletions by
    StopReplicas the rules accept count; a fenced one deleted nothing)."""
    frame = ("capture", "seq", "time_ns", "client", "broker", "correlation_id")
    requests: dict[tuple[Any, ...], list[str]] = {}
    for e in events:
        if e["kind"] == LEADER_EPOCH and e["api"] == "LeaderAndIsr":
            key = (e["cluster"], *(e[c] for c in frame), e["api_version"], e["request_type"])
            requests.setdefault(key, []).append(_name(e))
    ordered = sorted(requests.items(), key=lambda item: position(item[0][3], item[0][2]))
    found = [
        ControlRequest(
            frame_of(dict(zip(frame, key[1:7], strict=True))), key[0], key[7], key[8] or "", tuple(sorted(names))
        )
        for key, names in ordered
    ]
    deletions = [
        (c["time_ns"] or 0, c["cluster"], c["broker"], _name(c))
        for c in checks
        if c["kind"] == STOP_REPLICA_EPOCH and c["delete"] and c["verdict"] == "NONE"
    ]
    return with_strays(found, deletions)

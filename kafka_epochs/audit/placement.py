"""What placing events needs, summed up where the events are.

Before anything is judged, an engine that spreads events over tasks (Spark's) must learn, on its
driver, which broker connections belong to which cluster and what every partition's leader
epochs are: the broker connections and the topic ids and names each was seen with, the cluster
answers, and each connection's sightings of each epoch. A task sums its events up
(:class:`PlacementSummary`, a row per distinct fact rather than per event) while it has them;
the driver merges the tasks' rows (:class:`Placement`) into cluster names and a
:class:`~kafka_epochs.audit.timeline.Timeline`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_epochs.audit.clusters import ClusterAssigner, ClusterInfo, Node
from kafka_epochs.audit.events import ANSWER, CLUSTER_INFO, ERROR_RESPONSE, LEADER_EPOCH
from kafka_epochs.audit.judging import CHECKS
from kafka_epochs.audit.timeline import Timeline

__all__ = ["JUDGED_KINDS", "SUMMARY_SCHEMA", "Placement", "PlacementSummary", "row_keys"]

#: The events the judging reads: the checks, and the answers and epoch errors that pair with them.
JUDGED_KINDS = (*CHECKS, ANSWER, ERROR_RESPONSE)

_WHO = [("capture", pa.string()), ("broker", pa.string()), ("topic_id", pa.string()), ("topic", pa.string())]
#: A summary row: either a connection's (``sighting`` false: the topic id and name it was seen
#: with, a cluster answer when ``cluster_info``, and how many of its events the judging reads)
#: or a connection's sightings of one epoch (``sighting`` true: the first in capture order, the
#: earliest and latest times, how many).
SUMMARY_SCHEMA = pa.schema(
    [
        *_WHO,
        ("sighting", pa.bool_()),
        ("cluster_info", pa.bool_()),
        ("cluster_id", pa.string()),
        ("members", pa.list_(pa.string())),
        ("judged", pa.int64()),
        ("partition", pa.int32()),
        ("epoch", pa.int32()),
        ("api", pa.string()),
        ("first_ns", pa.int64()),
        ("first_seq", pa.int64()),
        ("leader", pa.int32()),
        ("earliest_ns", pa.int64()),
        ("latest_ns", pa.int64()),
        ("observations", pa.int64()),
    ]
)
_WHO_NAMES = [name for name, _ in _WHO]
_SIGHTING_KEY = [*_WHO_NAMES, "partition", "epoch", "api"]


class PlacementSummary:
    """One task's events, summed up (:data:`SUMMARY_SCHEMA` rows), batch by batch.

    The counting is Arrow's (grouped in C++, not per event in Python); a cluster answer, a few
    per connection, is kept as it is.
    """

    def __init__(self) -> None:
        self._who: list[pa.Table] = []
        self._sightings: list[pa.Table] = []
        self._infos: dict[tuple[Any, ...], None] = {}

    def add(self, events: pa.RecordBatch | pa.Table) -> None:
        """Sum up ``events`` (:data:`~kafka_epochs.audit.events.EVENT_SCHEMA` columns)."""
        table = events if isinstance(events, pa.Table) else pa.Table.from_batches([events])
        kind = table.column("kind")
        judged = pc.cast(pc.is_in(kind, pa.array(JUDGED_KINDS)), pa.int64())
        who = table.select(_WHO_NAMES).append_column("judged", judged)
        self._who.append(who.group_by(_WHO_NAMES, use_threads=False).aggregate([("judged", "sum")]))
        sightings = table.filter(pc.equal(kind, LEADER_EPOCH))
        if sightings.num_rows:
            self._sightings.append(sightings.select([*_SIGHTING_KEY, "time_ns", "seq", "leader"]))
        infos = table.filter(pc.equal(kind, CLUSTER_INFO))
        for row in infos.select([*_WHO_NAMES, "cluster_id", "members"]).to_pylist():
            members = tuple(row.pop("members") or ())
            self._infos[(*row.values(), members)] = None

    def table(self) -> pa.Table:
        """The summary rows of everything added."""
        parts = [self._connections(), self._infos_table(), self._sightings_table()]
        return pa.concat_tables([SUMMARY_SCHEMA.empty_table(), *(p for p in parts if p is not None)])

    def _connections(self) -> pa.Table | None:
        if not self._who:
            return None
        summed = pa.concat_tables([t.rename_columns([*_WHO_NAMES, "judged"]) for t in self._who])
        summed = summed.group_by(_WHO_NAMES, use_threads=False).aggregate([("judged", "sum")])
        n = summed.num_rows
        return _rows(
            n,
            {
                **{name: summed.column(name) for name in _WHO_NAMES},
                "sighting": pa.repeat(False, n),
                "cluster_info": pa.repeat(False, n),
                "judged": summed.column("judged_sum"),
            },
        )

    def _infos_table(self) -> pa.Table | None:
        if not self._infos:
            return None
        rows = list(self._infos)
        columns = [*_WHO_NAMES, "cluster_id"]
        n = len(rows)
        return _rows(
            n,
            {
                **{name: [r[i] for r in rows] for i, name in enumerate(columns)},
                "members": [list(r[-1]) for r in rows],
                "sighting": pa.repeat(False, n),
                "cluster_info": pa.repeat(True, n),
                "judged": pa.repeat(0, n),
            },
        )

    def _sightings_table(self) -> pa.Table | None:
        if not self._sightings:
            return None
        seen = pa.concat_tables(self._sightings)
        # in capture order, so that each group's first row is its first sighting
        order = _capture_order(seen)
        seen = seen.take(pc.sort_indices(order, sort_keys=[(name, "ascending") for name in order.column_names]))
        keep_nulls = pc.ScalarAggregateOptions(skip_nulls=False)
        summed = seen.group_by(_SIGHTING_KEY, use_threads=False).aggregate(
            [
                ("time_ns", "first", keep_nulls),
                ("seq", "first", keep_nulls),
                ("leader", "first", keep_nulls),
                ("time_ns", "min"),
                ("time_ns", "max"),
                ("time_ns", "count", pc.CountOptions(mode="all")),
            ]
        )
        n = summed.num_rows
        return _rows(
            n,
            {
                **{name: summed.column(name) for name in _SIGHTING_KEY},
                "sighting": pa.repeat(True, n),
                "cluster_info": pa.repeat(False, n),
                "judged": pa.repeat(0, n),
                "first_ns": summed.column("time_ns_first"),
                "first_seq": summed.column("seq_first"),
                "leader": summed.column("leader_first"),
                "earliest_ns": summed.column("time_ns_min"),
                "latest_ns": summed.column("time_ns_max"),
                "observations": summed.column("time_ns_count"),
            },
        )


def _capture_order(sightings: pa.Table) -> pa.Table:
    """Sort keys putting ``sightings`` in capture order, nulls first, as
    :func:`~kafka_epochs.audit.judging.position` places them (the leader breaks ties)."""
    keys: dict[str, pa.ChunkedArray] = {}
    for name in ("time_ns", "seq", "leader"):
        column = sightings.column(name)
        keys[f"{name}_known"] = pc.is_valid(column)
        keys[name] = pc.fill_null(column, 0)
    return pa.table(keys)


def _rows(n: int, columns: dict[str, Any]) -> pa.Table:
    """A :data:`SUMMARY_SCHEMA` table of ``n`` rows: ``columns`` given, the others null."""
    arrays = []
    for f in SUMMARY_SCHEMA:
        given = columns.get(f.name)
        if given is None:
            arrays.append(pa.nulls(n, f.type))
        elif isinstance(given, list):
            arrays.append(pa.array(given, f.type))
        else:
            arrays.append(pc.cast(given, f.type))
    return pa.Table.from_arrays(arrays, schema=SUMMARY_SCHEMA)


@dataclass
class Placement:
    """What the driver learns from the tasks' summaries: each connection's cluster, the topic
    names topic ids have, the timeline, and how many events the judging reads."""

    clusters: dict[Node, str]
    #: (cluster, topic id) -> the least name events gave it
    names: dict[tuple[str | None, str], str]
    split_ids: dict[str, list[str]]
    timeline: list[dict[str, Any]]
    judged_events: int

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], cluster_key: str) -> Placement:
        """Merge summary rows (:data:`SUMMARY_SCHEMA`, from any number of tasks)."""
        rows = list(rows)
        brokers = list(dict.fromkeys((r["capture"], r["broker"]) for r in rows))
        infos = list(
            dict.fromkeys(
                ClusterInfo(r["capture"], r["broker"], r["cluster_id"], tuple(r["members"] or ()))
                for r in rows
                if r["cluster_info"]
            )
        )
        topic_ids = list(
            dict.fromkeys((r["capture"], r["broker"], r["topic_id"]) for r in rows if r["topic_id"] is not None)
        )
        named = list(
            dict.fromkeys(
                (r["capture"], r["broker"], r["topic"], r["topic_id"]) for r in rows if r["topic_id"] and r["topic"]
            )
        )
        assigner = ClusterAssigner(cluster_key)
        assigner.add(brokers, infos, topic_ids, named)
        clusters = assigner.names()
        names: dict[tuple[str | None, str], str] = {}
        for capture, broker, topic, topic_id in named:
            key = (clusters[(capture, broker)], topic_id)
            names[key] = min(topic, names.get(key, topic))
        timeline = Timeline()
        for r in rows:
            if r["sighting"]:
                cluster = clusters[(r["capture"], r["broker"])]
                topic = r["topic"] or (None if r["topic_id"] is None else names.get((cluster, r["topic_id"])))
                timeline.add(
                    (cluster, topic, r["partition"], r["epoch"]),
                    first_ns=r["first_ns"],
                    first_seq=r["first_seq"],
                    leader=r["leader"],
                    earliest_ns=r["earliest_ns"],
                    latest_ns=r["latest_ns"],
                    topic_id=r["topic_id"],
                    sources=(r["api"],),
                    broker=r["broker"],
                    observations=r["observations"],
                )
        judged = sum(r["judged"] or 0 for r in rows)
        return cls(clusters, names, assigner.split_ids(), timeline.rows(), judged)

    def place(self, events: pa.Table) -> pa.Table:
        """``events`` with each one's ``cluster`` (appended; null for a connection the summaries
        did not have) and its topic named: its own name, else (an empty name is no name) the one
        its topic id has in its cluster, else none."""
        nodes, which = row_keys(events, ("capture", "broker"))
        clusters = self.clusters
        cluster = pa.array([clusters.get(node) for node in nodes], pa.string()).take(which)
        topic = events.column("topic")
        own = pc.if_else(pc.equal(topic, ""), pa.scalar(None, pa.string()), topic)
        topic_ids = events.column("topic_id")
        unnamed = np.flatnonzero(pc.and_(pc.is_null(own), pc.is_valid(topic_ids)).to_numpy(zero_copy_only=False))
        if unnamed.size and self.names:  # (a row at a time, for those rows only)
            named, ids, places = own.to_pylist(), topic_ids.to_pylist(), cluster.to_pylist()
            for i in unnamed.tolist():
                named[i] = self.names.get((places[i], ids[i]))
            own = pa.array(named, pa.string())
        at = events.schema.get_field_index("topic")
        placed = events.set_column(at, events.schema.field(at), own)
        return placed.append_column("cluster", cluster)


#: Combinations of values up to this many are numbered in an int64 (the fast way to tell them apart).
_NUMBERED = 2**62


def row_keys(table: pa.Table, columns: Sequence[str]) -> tuple[list[tuple[Any, ...]], pa.Array]:
    """The distinct combinations of ``columns``' values in ``table`` (a null is a value) and each
    row's index into them: what a lookup by several columns needs, with one Python step per
    distinct combination rather than per row."""
    codes: list[np.ndarray] = []
    values: list[list[Any]] = []
    for name in columns:
        column = table.column(name)
        encoded = (column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column).dictionary_encode()
        distinct = [*encoded.dictionary.to_pylist(), None]  # the last for nulls
        codes.append(pc.fill_null(encoded.indices, len(distinct) - 1).to_numpy(zero_copy_only=False).astype(np.int64))
        values.append(distinct)
    if math.prod(len(v) for v in values) < _NUMBERED:  # one number per combination: a flat unique
        combined = np.zeros(table.num_rows, np.int64)
        for column_codes, distinct in zip(codes, values, strict=True):
            combined = combined * len(distinct) + column_codes
        found, which = np.unique(combined, return_inverse=True)
        rows = []
        for code in found.tolist():
            at = []
            for distinct in reversed(values):
                code, index = divmod(code, len(distinct))
                at.append(index)
            rows.append(at[::-1])
    else:  # too many combinations to number: unique rows of the codes
        stacked, which = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        rows = stacked.tolist()
    keys = [tuple(distinct[i] for distinct, i in zip(values, row, strict=True)) for row in rows]
    return keys, pa.array(which.reshape(-1), pa.int64())

"""The leader-epoch timeline: one row per (cluster, topic, partition, epoch) the captures saw.

Both engines build it here. The in-process one adds each sighting (a ``leader_epoch`` event);
the Spark engine adds what its tasks already summed up per broker connection, a row per epoch
each broker was seen with, so the driver never holds more than the clusters' metadata. A
sighting is a partition's leader epoch in a Metadata response (v7+) or a LeaderAndIsr request;
``behind`` marks an epoch first seen after a higher one (a lagging broker's Metadata, or a
deposed controller's LeaderAndIsr).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka_epochs.audit.judging import Position, position

__all__ = ["Timeline", "nulls_first"]

#: (cluster, topic, partition, leader epoch)
EpochKey = tuple[str | None, str | None, int | None, int | None]


@dataclass(slots=True)
class _Seen:
    """One epoch of one partition: where it was first seen and what else is known of it."""

    first: Position  # the first sighting's place in capture order
    seq: int | None  # ... its seq
    leader: int | None  # ... and the leader it named
    earliest_ns: int | None  # the earliest known time (the first sighting may have none)
    latest_ns: int | None
    topic_id: str | None  # the greatest topic id seen with it
    sources: set[str]
    brokers: set[str]
    observations: int


def _least(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _greatest(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


class Timeline:
    """Sightings in, timeline rows out (:data:`~kafka_epochs.audit.incidents.TIMELINE_COLUMNS`)."""

    def __init__(self) -> None:
        self._seen: dict[EpochKey, _Seen] = {}

    def add(
        self,
        key: EpochKey,
        *,
        first_ns: int | None,
        first_seq: int | None,
        leader: int | None,
        earliest_ns: int | None,
        latest_ns: int | None,
        topic_id: str | None,
        sources: Iterable[str | None],
        broker: str | None,
        observations: int = 1,
    ) -> None:
        """Sightings of the epoch ``key``: ``observations`` of them, the first (in capture order)
        at (``first_ns``, ``first_seq``) naming ``leader``, all between ``earliest_ns`` and
        ``latest_ns`` (their known times), in answers of the ``sources`` apis, from ``broker``."""
        first = position(first_ns, first_seq)
        apis = {api for api in sources if api is not None}
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = _Seen(
                first, first_seq, leader, earliest_ns, latest_ns, topic_id, apis, {broker or "?"}, observations
            )
            return
        if first < seen.first or (first == seen.first and nulls_first(leader, 0) < nulls_first(seen.leader, 0)):
            # (two sightings at one place, which only two captures without times can give: the
            # least leader, so that the order sightings come in does not matter)
            seen.first, seen.seq, seen.leader = first, first_seq, leader
        seen.earliest_ns = _least(seen.earliest_ns, earliest_ns)
        seen.latest_ns = _greatest(seen.latest_ns, latest_ns)
        seen.topic_id = _greatest(seen.topic_id, topic_id)
        seen.sources |= apis
        seen.brokers.add(broker or "?")
        seen.observations += observations

    def rows(self) -> list[dict[str, Any]]:
        """The timeline, partition by partition (nulls first, as Spark sorts), each partition's
        epochs in the order they were first seen."""
        rows: list[dict[str, Any]] = [
            {
                "cluster": cluster,
                "topic": topic,
                "partition": partition,
                "leader_epoch": epoch,
                "first_seen_ns": seen.earliest_ns,
                "last_seen_ns": seen.latest_ns,
                "first_seen_seq": seen.seq,
                "leader": seen.leader,
                "topic_id": seen.topic_id,
                "sources": sorted(seen.sources),
                "brokers": sorted(seen.brokers),
                "observations": seen.observations,
            }
            for (cluster, topic, partition, epoch), seen in self._seen.items()
        ]
        rows.sort(key=_order)
        highest: dict[tuple[Any, ...], int] = {}
        for row in rows:
            partition_key = (row["cluster"], row["topic"], row["partition"])
            before = highest.get(partition_key)
            epoch = row["leader_epoch"]
            row["behind"] = before is not None and epoch is not None and before > epoch
            if epoch is not None:
                highest[partition_key] = epoch if before is None else max(before, epoch)
        return rows


def nulls_first(value: Any, empty: Any = "") -> tuple[bool, Any]:
    """A sort key putting None first, as Spark sorts (``empty`` stands in for it: any value of the type)."""
    return (value is not None, value if value is not None else empty)


def _order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        nulls_first(row["cluster"]),
        nulls_first(row["topic"]),
        nulls_first(row["partition"], 0),
        nulls_first(row["first_seen_ns"], 0),
        nulls_first(row["leader_epoch"], 0),
    )

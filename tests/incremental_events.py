"""Random epoch events (:data:`kafka_epochs.spark.epoch_audit.EVENT_SCHEMA` rows) for the
incremental audit's tests: few captures, brokers, topics and epochs, so that verdicts, ties,
clusters and names interact; nulls wherever the schema allows them."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_epochs.audit.events import (
    ANSWER,
    CLUSTER_INFO,
    ERROR_RESPONSE,
    EVENT_SCHEMA,
    LEADER_EPOCH,
    REQUEST_EPOCH,
    STOP_REPLICA_EPOCH,
)

KINDS = (LEADER_EPOCH, LEADER_EPOCH, REQUEST_EPOCH, REQUEST_EPOCH, STOP_REPLICA_EPOCH, ERROR_RESPONSE, ANSWER)
BROKERS = ("10.0.0.10:9092", "10.0.0.11:9092")
ERRORS = ("FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "STALE_CONTROLLER_EPOCH")


def random_event(rng: random.Random, capture: str, seq: int, *, times: bool = True, at: int = 0) -> dict[str, Any]:
    kind = CLUSTER_INFO if rng.random() < 0.05 else rng.choice(KINDS)
    e: dict[str, Any] = dict.fromkeys(EVENT_SCHEMA.names)
    e.update(
        capture=capture,
        seq=seq if rng.random() < 0.97 else None,
        time_ns=(at + 1_000 + rng.randrange(40) * 10) if times and rng.random() < 0.97 else None,
        client=rng.choice(("10.0.0.1:5000", "10.0.0.2:5000", None)),
        broker=rng.choice(BROKERS),
        correlation_id=rng.choice((1, 2, 3, None)),
        kind=kind,
        api=rng.choice(("Produce", "Fetch", "Metadata", "StopReplica")),
        api_version=rng.choice((3, 12)),
        profile="apache",
        warnings=rng.choice(([], ["trailing bytes"])),
    )
    if kind == CLUSTER_INFO:
        e.update(cluster_id=rng.choice(("A", "B", None)), members=rng.sample(BROKERS, rng.randrange(3)))
        return e
    e.update(
        topic=rng.choice(("orders", "pay", "", None)),
        topic_id=rng.choice(("id-orders", "id-pay", None, None)),
        partition=rng.choice((0, 1, None)),
    )
    if kind in (LEADER_EPOCH, REQUEST_EPOCH, STOP_REPLICA_EPOCH):
        e["epoch"] = rng.choice((1, 2, 3, 4, -1, -2)) if kind != LEADER_EPOCH else rng.choice((1, 2, 3, 4))
    if kind == LEADER_EPOCH:
        e["leader"] = rng.choice((1, 2))
    if kind == STOP_REPLICA_EPOCH:
        e["delete"] = rng.choice((True, False))
    if kind == ERROR_RESPONSE:
        e.update(error=rng.choice(ERRORS), error_code=74, path=rng.choice(("responses[0]", "responses[1]")))
    return e


def random_captures(
    rng: random.Random, captures: int = 3, per_capture: int = 30, *, times: bool = True, in_order: bool = False
) -> pa.Table:
    """Events of ``captures`` files (``c0.pcap``...), each file's rows together, in file order;
    ``in_order``: each file's times after the one before's (a rotating capture), else overlapping."""
    rows = []
    for c in range(captures):
        at = c * 1_000 if in_order else 0
        for _ in range(rng.randrange(1, per_capture)):
            # seqs repeat (one frame, several events) so that sightings and requests tie
            rows.append(
                random_event(rng, f"c{c}.pcap", (c << 32) + rng.randrange(per_capture // 2), times=times, at=at)
            )
    return pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)


def by_capture(events: pa.Table) -> list[pa.Table]:
    """The table cut into one table per capture, in first-appearance order (a follow's batches)."""
    order = list(dict.fromkeys(events.column("capture").to_pylist()))
    rows = events.to_pylist()
    return [pa.Table.from_pylist([r for r in rows if r["capture"] == c], schema=EVENT_SCHEMA) for c in order]


def store_of(tables: list[pa.Table]) -> Callable[[pc.Expression | None], pa.Table]:
    """What a follow's store reads back, over ``tables`` (the list may grow)."""

    def stored(where: pc.Expression | None = None) -> pa.Table:
        everything = pa.concat_tables(tables) if tables else EVENT_SCHEMA.empty_table()
        return everything if where is None else everything.filter(where)

    return stored

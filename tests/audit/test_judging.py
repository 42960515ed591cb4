"""The Spark engine's way of judging (exchange by exchange, against every partition's epochs) held to
the driver-side judging the in-process engine runs, on random events, without Spark."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from incremental_events import random_captures, store_of

from kafka_epochs.audit.events import EVENT_SCHEMA, REQUEST_EPOCH
from kafka_epochs.audit.judging import (
    IncrementalAudit,
    epoch_index,
    incidents,
    judge_exchanges,
)
from kafka_epochs.audit.local import timeline
from kafka_epochs.epochs import EqualEpochPolicy
from kafka_epochs.report.model import DISAGREEMENT, FENCED_RESPONSE, STALE_REQUEST, STOP_REPLICA_FENCED


def _verdict_key(row: dict[str, Any], kind: str) -> tuple[Any, ...]:
    return (
        kind,
        row["capture"],
        row["seq"],
        row["client"],
        row["correlation_id"],
        row["topic"],
        row["partition"],
        row["epoch"] if "epoch" in row else row["requested_epoch"],
        row["leader_epoch"],
        row["broker_error"],
    )


def by_exchanges(events: list[dict[str, Any]], policy: EqualEpochPolicy) -> list[tuple[Any, ...]]:
    """Judged as a Spark task judges: the placed events of a few exchanges at a time."""
    epochs = epoch_index(timeline(events))
    schema = pa.schema([*EVENT_SCHEMA, pa.field("cluster", pa.string())])
    shares: dict[Any, list[dict[str, Any]]] = {}
    for e in events:  # a task holds whole exchanges; which task, a hash decides
        exchange = (e["capture"], e["client"], e["broker"], e["correlation_id"])
        shares.setdefault(hash(exchange) % 3 if e["correlation_id"] is not None else e["seq"], []).append(e)
    found = []
    for share in shares.values():
        judged = incidents(judge_exchanges(pa.Table.from_pylist(share, schema=schema), epochs, policy))
        for row in judged.to_pylist():
            if row["agreement"] == "disagrees with the broker":
                kind = DISAGREEMENT
            else:
                kind = STALE_REQUEST if row["kind"] == REQUEST_EPOCH else STOP_REPLICA_FENCED
            found.append((*_verdict_key(row, kind), row["verdict"]))
    return sorted(found, key=repr)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("policy", list(EqualEpochPolicy))
def test_judging_exchange_by_exchange_finds_what_judging_all_at_once_finds(seed: int, policy: EqualEpochPolicy) -> None:
    table = random_captures(random.Random(seed), captures=3, per_capture=40)
    events = table.to_pylist()
    judge = IncrementalAudit(store_of([table]), equal_epoch=policy)
    at_once = judge.judge_all(events)  # gives each event its cluster and topic name
    expected = sorted(
        ((*_verdict_key(row, row["kind"]), row["error"]) for row in at_once if row["kind"] != FENCED_RESPONSE),
        key=repr,
    )
    assert by_exchanges(events, policy) == expected

"""Events packed into shares by exchange: nothing lost, nothing doubled, an exchange in one share."""

from __future__ import annotations

import random
import zlib
from collections import defaultdict
from typing import Any

import pyarrow as pa
import pytest
from incremental_events import random_captures

from kafka_epochs.audit import shares
from kafka_epochs.audit.events import EVENT_SCHEMA
from kafka_epochs.audit.shares import SHARES, ShareWriter, unpack


def _tasks(rng: random.Random, rows: list[dict[str, Any]]) -> list[list[list[dict[str, Any]]]]:
    """``rows`` shuffled over 1-4 tasks, each with 1-3 batches."""
    rows = rows.copy()
    rng.shuffle(rows)
    tasks: list[list[list[dict[str, Any]]]] = [
        [[] for _ in range(rng.randrange(1, 4))] for _ in range(rng.randrange(1, 5))
    ]
    for row in rows:
        rng.choice(rng.choice(tasks)).append(row)
    return tasks


def _exchange(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["capture"], row["client"], row["broker"], row["correlation_id"])


@pytest.mark.parametrize("seed", range(15))
def test_every_event_comes_back_once_and_an_exchange_is_in_one_share(seed: int) -> None:
    rng = random.Random(seed)
    rows = random_captures(rng, captures=2, per_capture=50, times=True).to_pylist()
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for task in _tasks(rng, rows):  # tasks pack apart: the same exchange must get the same share everywhere
        writer = ShareWriter()
        packed = [p for batch in task for p in writer.add(pa.Table.from_pylist(batch, schema=EVENT_SCHEMA))]
        packed += writer.packed()
        assert writer.packed() == []  # what was packed is no longer held
        for share, blob in packed:
            assert 0 <= share < SHARES
            found[share].extend(unpack([blob]).to_pylist())

    def order(row: dict[str, Any]) -> str:
        return repr(sorted(row.items()))

    assert sorted((r for rs in found.values() for r in rs), key=order) == sorted(rows, key=order)
    where: dict[tuple[Any, ...], set[int]] = defaultdict(set)
    for share, packed_rows in found.items():
        for row in packed_rows:
            if row["correlation_id"] is not None:
                where[_exchange(row)].add(share)
    assert where and all(len(s) == 1 for s in where.values())


def test_a_share_is_the_connections_crc32_mixed_with_the_correlation_id_or_the_frame() -> None:
    """Worked out by hand: the share must not depend on the process (Python's str hash does)."""
    rows = [
        {"capture": "c.pcap", "client": "10.0.0.1:5000", "broker": "10.0.0.2:9092", "correlation_id": 7, "seq": 3},
        {"capture": None, "client": "10.0.0.1:5000", "broker": None, "correlation_id": None, "seq": 12},
        {"capture": None, "client": None, "broker": None, "correlation_id": None, "seq": None},
    ]
    table = pa.Table.from_pylist([{**dict.fromkeys(EVENT_SCHEMA.names), **r} for r in rows], schema=EVENT_SCHEMA)
    expected = [
        (zlib.crc32(b"c.pcap\x0010.0.0.1:5000\x0010.0.0.2:9092") + 7 * 2654435761) % 256,
        (zlib.crc32(b"\x0010.0.0.1:5000\x00") + 12 * 2654435761) % 256,
        zlib.crc32(b"\x00\x00") % 256,
    ]
    assert shares.share_of(table).tolist() == expected


def test_a_task_packs_what_it_holds_once_it_holds_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shares, "PACK_EVERY", 10)
    rows = random_captures(random.Random(1), captures=3, per_capture=60, times=True)
    assert rows.num_rows > 20
    writer = ShareWriter()
    assert writer.add(rows.slice(0, 6)) == []
    early = writer.add(rows.slice(6, 6))  # 12 held: packed now
    assert sum(unpack([b]).num_rows for _, b in early) == 12
    late = writer.add(rows.slice(12))
    rest = writer.packed()
    assert sum(unpack([b]).num_rows for _, b in [*early, *late, *rest]) == rows.num_rows


def test_nothing_held_packs_to_nothing() -> None:
    writer = ShareWriter()
    assert writer.add(EVENT_SCHEMA.empty_table()) == []
    assert writer.packed() == []
    assert unpack([]).num_rows == 0

"""Placing events from tasks' summaries: what judging every event at once in one place learns."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from incremental_events import random_captures, store_of

from kafka_epochs.audit import placement
from kafka_epochs.audit.clusters import CLUSTER_KEYS
from kafka_epochs.audit.events import EVENT_SCHEMA
from kafka_epochs.audit.incidents import TIMELINE_COLUMNS
from kafka_epochs.audit.judging import IncrementalAudit
from kafka_epochs.audit.local import timeline
from kafka_epochs.audit.placement import JUDGED_KINDS, SUMMARY_SCHEMA, Placement, PlacementSummary, row_keys


def _cuts(rng: random.Random, items: list[Any], pieces: int) -> list[list[Any]]:
    """``items`` cut in up to ``pieces`` runs (some empty), in order."""
    at = sorted(rng.randrange(len(items) + 1) for _ in range(pieces - 1))
    return [items[a:b] for a, b in zip([0, *at], [*at, len(items)], strict=True)]


def summed_up_by_tasks(rng: random.Random, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The summary rows of ``events`` spread over tasks, each summing up its batches as they come;
    the tasks' rows reach the driver in any order."""
    shuffled = events.copy()
    rng.shuffle(shuffled)  # a task's frames, and the order of its batches, say nothing of capture order
    rows: list[dict[str, Any]] = []
    for task in _cuts(rng, shuffled, rng.randrange(1, 9)):
        summary = PlacementSummary()
        for batch in _cuts(rng, task, rng.randrange(1, 4)):
            summary.add(pa.Table.from_pylist(batch, schema=EVENT_SCHEMA))
        table = summary.table()
        assert table.schema == SUMMARY_SCHEMA
        rows.extend(table.to_pylist())
    rng.shuffle(rows)
    return rows


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("cluster_key", CLUSTER_KEYS)
def test_summaries_place_events_as_judging_all_at_once_does(seed: int, cluster_key: str) -> None:
    rng = random.Random(seed)
    table = random_captures(rng, captures=3, per_capture=40, times=seed % 3 != 0)
    if seed % 3 == 1:  # some frames without a time: they come first in capture order
        rows = table.to_pylist()
        for row in rng.sample(rows, len(rows) // 3):
            row["time_ns"] = None
        table = pa.Table.from_pylist(rows, schema=EVENT_SCHEMA)
    unnamed = table.to_pylist()
    events = table.to_pylist()
    judge = IncrementalAudit(store_of([table]), cluster_key=cluster_key)
    judge.judge_all(events)  # gives each event its cluster and topic name

    placed = Placement.of(summed_up_by_tasks(rng, unnamed), cluster_key)

    assert placed.clusters == {(e["capture"], e["broker"]): e["cluster"] for e in events}
    assert placed.split_ids == judge.split_ids()
    for before, after in zip(unnamed, events, strict=True):
        if not before["topic"] and before["topic_id"] is not None:  # named by its topic id, if at all
            assert placed.names.get((after["cluster"], before["topic_id"])) == after["topic"]
    assert [{c: row[c] for c in TIMELINE_COLUMNS} for row in placed.timeline] == timeline(events)
    assert placed.judged_events == sum(e["kind"] in JUDGED_KINDS for e in events)
    # and each event, placed by a task (in any batch of it), has the cluster and topic name they give
    rows = pa.Table.from_pylist(unnamed, schema=EVENT_SCHEMA)
    for batch in _cuts(rng, list(range(rows.num_rows)), 3):
        out = placed.place(rows.take(pa.array(batch, pa.int64())))
        assert out.column("cluster").to_pylist() == [events[i]["cluster"] for i in batch]
        assert out.column("topic").to_pylist() == [events[i]["topic"] for i in batch]
        assert out.drop_columns(["topic", "cluster"]) == rows.take(pa.array(batch, pa.int64())).drop_columns(["topic"])


def test_nothing_summed_up_is_an_empty_table_of_the_schema() -> None:
    assert PlacementSummary().table() == SUMMARY_SCHEMA.empty_table()
    assert Placement.of([], "auto").timeline == []


@pytest.mark.parametrize("numbered", [True, False])  # combinations numbered in an int64, or too many for that
@pytest.mark.parametrize("seed", range(20))
def test_row_keys_give_every_row_its_combination_of_values(
    seed: int, numbered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not numbered:
        monkeypatch.setattr(placement, "_NUMBERED", 1)
    rng = random.Random(seed)
    n = rng.randrange(0, 60)
    strings = [None, "", "a", "b", "a\0b"]
    rows = [(rng.choice(strings), rng.choice(strings), rng.choice([None, -1, 0, 1, 2**31 - 1])) for _ in range(n)]
    table = pa.table(
        {
            "x": pa.array([r[0] for r in rows], pa.string()),
            "y": pa.array([r[1] for r in rows], pa.string()),
            "z": pa.array([r[2] for r in rows], pa.int32()),
        }
    )
    chunked = pa.concat_tables([table.slice(0, n // 2), table.slice(n // 2)])  # dictionaries per chunk must not matter
    for source in (table, chunked):
        keys, which = row_keys(source, ("x", "y", "z"))
        assert len(set(keys)) == len(keys)
        assert [keys[i] for i in which.to_pylist()] == rows

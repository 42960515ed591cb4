"""The timeline both engines build: sightings one by one, or summed up per broker connection first."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_epochs.audit.timeline import Timeline

sightings = st.lists(
    st.fixed_dictionaries(
        {
            "cluster": st.sampled_from(["a", "b"]),
            "topic": st.sampled_from(["orders", "payments", None]),
            "partition": st.integers(0, 2),
            "epoch": st.one_of(st.none(), st.integers(0, 6)),
            "time_ns": st.one_of(st.none(), st.integers(0, 50)),
            "leader": st.integers(0, 3),
            "topic_id": st.one_of(st.none(), st.sampled_from(["id-1", "id-2"])),
            "api": st.sampled_from(["Metadata", "LeaderAndIsr"]),
            "broker": st.one_of(st.none(), st.sampled_from(["b1:9092", "b2:9092"])),
        }
    ),
    max_size=40,
).map(lambda seen: [{**s, "seq": 1000 - 7 * i} for i, s in enumerate(seen)])  # a frame's seq is its own


def _key(s: dict[str, Any]) -> tuple[Any, ...]:
    return (s["cluster"], s["topic"], s["partition"], s["epoch"])


def _place(s: dict[str, Any]) -> tuple[Any, ...]:
    return (s["time_ns"] is not None, s["time_ns"] or 0, s["seq"])


def one_by_one(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    timeline = Timeline()
    for s in seen:
        timeline.add(
            _key(s),
            first_ns=s["time_ns"],
            first_seq=s["seq"],
            leader=s["leader"],
            earliest_ns=s["time_ns"],
            latest_ns=s["time_ns"],
            topic_id=s["topic_id"],
            sources=(s["api"],),
            broker=s["broker"],
        )
    return timeline.rows()


def summed_up(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As the Spark engine's query gives them: one row per epoch, broker and api."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for s in seen:
        groups.setdefault((*_key(s), s["broker"], s["api"], s["topic_id"]), []).append(s)
    timeline = Timeline()
    for (*key, broker, api, topic_id), group in reversed(list(groups.items())):
        first = min(group, key=_place)
        times = [s["time_ns"] for s in group if s["time_ns"] is not None]
        timeline.add(
            tuple(key),  # type: ignore[arg-type]
            first_ns=first["time_ns"],
            first_seq=first["seq"],
            leader=first["leader"],
            earliest_ns=min(times, default=None),
            latest_ns=max(times, default=None),
            topic_id=topic_id,
            sources=(api,),
            broker=broker,
            observations=len(group),
        )
    return timeline.rows()


@settings(max_examples=300, deadline=None)
@given(sightings)
def test_summed_up_sightings_give_the_timeline_of_the_sightings_one_by_one(seen: list[dict[str, Any]]) -> None:
    assert summed_up(seen) == one_by_one(seen)


@settings(max_examples=300, deadline=None)
@given(sightings)
def test_each_row_says_what_its_sightings_say(seen: list[dict[str, Any]]) -> None:
    rows = one_by_one(seen)
    assert len(rows) == len({_key(s) for s in seen})
    for row in rows:
        mine = [s for s in seen if _key(s) == (row["cluster"], row["topic"], row["partition"], row["leader_epoch"])]
        times = [s["time_ns"] for s in mine if s["time_ns"] is not None]
        first = min(mine, key=_place)
        assert row["observations"] == len(mine)
        assert (row["first_seen_ns"], row["last_seen_ns"]) == (min(times, default=None), max(times, default=None))
        assert (row["first_seen_seq"], row["leader"]) == (first["seq"], first["leader"])
        assert row["sources"] == sorted({s["api"] for s in mine})
        assert row["brokers"] == sorted({s["broker"] or "?" for s in mine})
        # behind: a higher epoch of the partition was first seen earlier
        others = [
            r
            for r in rows
            if (r["cluster"], r["topic"], r["partition"]) == (row["cluster"], row["topic"], row["partition"])
            and r is not row
        ]

        def at(r: dict[str, Any]) -> tuple[Any, ...]:
            t, e = r["first_seen_ns"], r["leader_epoch"]
            return (t is not None, t or 0, e is not None, e or 0)

        earlier_higher = any(
            at(r) < at(row)
            and r["leader_epoch"] is not None
            and row["leader_epoch"] is not None
            and r["leader_epoch"] > row["leader_epoch"]
            for r in others
        )
        assert row["behind"] == earlier_higher

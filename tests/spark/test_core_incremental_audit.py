"""The follow's judging on the driver (``IncrementalAudit``) against the Spark audit, the reference.

Two claims. On any events, judging them all at once on the driver gives the Spark audit's four
incident tables row for row (real captures, the epoch story, look-alike clusters, a table
without times, random events; every cluster key and both equal-epoch policies). And judging
them batch by batch, as a follow does, ends where judging them at once does: a batch that
changes an earlier verdict's grounds is judged again with everything, and the tests below make
each such batch on purpose, and check that captures landing in time order never need it.
"""

from __future__ import annotations

import random
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
import pyarrow.compute  # noqa: E402, F401  # pa.compute
import pyarrow.parquet as pq  # noqa: E402
from epoch_story import frame_table_rows, write_sample  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from incremental_events import by_capture, random_captures, store_of  # noqa: E402

from kafka_epochs.audit.clusters import CLUSTER_KEYS  # noqa: E402
from kafka_epochs.audit.events import CLUSTER_INFO, EVENT_SCHEMA, LEADER_EPOCH, REQUEST_EPOCH  # noqa: E402
from kafka_epochs.audit.judging import Incident, IncrementalAudit  # noqa: E402
from kafka_epochs.epochs import EqualEpochPolicy  # noqa: E402
from kafka_epochs.spark.audit_report import incident_rows  # noqa: E402
from kafka_epochs.spark.epoch_audit import audit_of_events, extract_events  # noqa: E402
from kafka_epochs.spark.job import read_captures  # noqa: E402

from .test_io_audit_clusters import cluster_capture  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"


def canonical(rows: Iterable[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted(row.items())) for row in rows)


def judged_at_once(events: pa.Table, **options: Any) -> list[Incident]:
    return IncrementalAudit(store_of([events]), **options).reload()


def judged_in_batches(batches: list[pa.Table], **options: Any) -> tuple[dict[str, Incident], list[str | None]]:
    """What a follow ends with: each incident by its printed key, the latest word on it; and for
    each batch what was judged again (None: only the batch): why everything was, or how many
    partitions' earlier requests were."""
    stored: list[pa.Table] = []
    audit = IncrementalAudit(store_of(stored), **options)
    seen: dict[str, Incident] = {}
    why: list[str | None] = []
    for batch in batches:
        stored.append(batch)
        found = audit.add(batch)
        if audit.rejudged is not None:
            why.append(audit.rejudged)
            seen = {}  # judged again: what it gives is the whole of it
        elif audit.rejudged_partitions:
            why.append(f"{len(audit.rejudged_partitions)} partition(s)")
            again = audit.rejudged_partitions  # what it gives of those partitions is the whole of it
            seen = {k: r for k, r in seen.items() if r["kind"] == "fenced_response" or place(r) not in again}
        else:
            why.append(None)
        seen.update(keyed(found))
    return seen, why


def place(row: Incident) -> tuple[Any, ...]:
    return (row["cluster"], row["topic"], row["partition"])


def keyed(incidents: list[Incident]) -> dict[str, Incident]:
    """By the key a follow prints each incident once under (a frame may repeat a partition)."""
    return {repr([r["kind"], r["capture"], r["seq"], r["topic"], r["partition"], r["path"]]): r for r in incidents}


@pytest.fixture(scope="module")
def real_events(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    """The events of the bundled real captures, the story, and two look-alike clusters."""
    root = tmp_path_factory.mktemp("incremental")
    write_sample(root / "story.pcap")
    for name in ("sample.pcap", "clients.pcap"):
        shutil.copy(SAMPLES / name, root / name)
    cluster_capture(root / "a.pcap", 5, "cluster-A")
    cluster_capture(root / "b.pcap", 2, "cluster-B")
    cluster_capture(root / "quiet-b.pcap", 2, "cluster-B", stale_answer=0)
    cluster_capture(root / "anonymous.pcap", 3, None)
    table = extract_events(read_captures(spark, [str(root)])).toArrow().cast(EVENT_SCHEMA)
    return table.sort_by([("capture", "ascending"), ("seq", "ascending")])


def untimed_events(spark: Any, tmp_path: Path) -> pa.Table:
    """The story as a frame table without times: the audit orders it by ``seq`` alone."""
    rows = frame_table_rows()
    path = tmp_path / "frames.parquet"
    columns = {
        "frame": pa.array([r["frame"] for r in rows], pa.binary()),
        "direction": [r["direction"] for r in rows],
        "request_api_key": pa.array([r["key"] for r in rows], pa.int32()),
        "request_api_version": pa.array([r["version"] for r in rows], pa.int32()),
    }
    pq.write_table(pa.table(columns), path)
    return extract_events(spark.read.parquet(str(path))).toArrow().cast(EVENT_SCHEMA)


def spark_incidents(spark: Any, events: pa.Table, tmp_path: Path, **options: Any) -> list[str]:
    path = tmp_path / f"events-{uuid.uuid4().hex}.parquet"
    pq.write_table(events, path)
    result = audit_of_events(spark.read.parquet(str(path)), **options)
    try:
        return canonical(row.asDict() for row in incident_rows(result).collect())
    finally:
        result.unpersist()


@pytest.mark.parametrize("cluster_key", CLUSTER_KEYS)
def test_the_driver_judges_real_events_as_the_spark_audit(
    spark: Any, real_events: pa.Table, tmp_path: Path, cluster_key: str
) -> None:
    expected = spark_incidents(spark, real_events, tmp_path, cluster_key=cluster_key)
    assert len(expected) > 10  # the story's and the clusters' incidents
    assert canonical(judged_at_once(real_events, cluster_key=cluster_key)) == expected


def test_the_equal_epoch_policy_is_the_spark_audits(spark: Any, real_events: pa.Table, tmp_path: Path) -> None:
    fence = EqualEpochPolicy.FENCE
    expected = spark_incidents(spark, real_events, tmp_path, equal_epoch=fence)
    assert expected != spark_incidents(spark, real_events, tmp_path)  # the policy changes a verdict
    assert canonical(judged_at_once(real_events, equal_epoch=fence)) == expected


def test_events_without_times_are_judged_as_the_spark_audit(spark: Any, tmp_path: Path) -> None:
    events = untimed_events(spark, tmp_path)
    assert events.column("time_ns").null_count == len(events)
    expected = spark_incidents(spark, events, tmp_path)
    assert expected and canonical(judged_at_once(events)) == expected


@pytest.mark.parametrize("seed", range(4))
def test_random_events_are_judged_as_the_spark_audit(spark: Any, tmp_path: Path, seed: int) -> None:
    """Nulls, ties, empty names, topic ids across clusters: what real captures rarely show."""
    events = random_captures(random.Random(seed), captures=4, per_capture=60)
    key = CLUSTER_KEYS[seed % len(CLUSTER_KEYS)]
    expected = spark_incidents(spark, events, tmp_path, cluster_key=key)
    assert expected and canonical(judged_at_once(events, cluster_key=key)) == expected


def test_real_captures_landing_one_by_one_are_judged_again_only_out_of_time_order(real_events: pa.Table) -> None:
    batches = by_capture(real_events)  # in name order
    names = [Path(b.column("capture")[0].as_py()).name for b in batches]
    seen, why = judged_in_batches(batches)
    assert canonical(seen.values()) == canonical(keyed(judged_at_once(real_events)).values())
    # sample.pcap and clients.pcap report one cluster id, but their loopback brokers are separate
    # clusters that fix it (their topics' ids differ): sample.pcap, captured days before, lands
    # after clients.pcap in a cluster of its own, and judges nothing again (the epoch-moving case
    # is the synthetic test_an_epoch_first_seen_before_a_judged_request_judges_again)
    assert {n: w for n, w in zip(names, why, strict=True) if w is not None} == {}
    # landing in the order they were captured (a rotating capture's files), each is judged alone
    in_time = sorted(batches, key=lambda b: pa.compute.min(b.column("time_ns")).as_py())
    seen, why = judged_in_batches(in_time)
    # each is judged alone, except where a capture's cluster id first names a second cluster: the
    # clusters it names take their captures into their names (once), and what they judged is
    # judged again
    renamed = [w for w in why if w is not None]
    assert len(renamed) <= 1 and all("in another cluster now" in w for w in renamed), why
    assert canonical(seen.values()) == canonical(keyed(judged_at_once(real_events)).values())


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), in_order=st.booleans(), key=st.sampled_from(CLUSTER_KEYS))
def test_batch_by_batch_ends_where_all_at_once_does(seed: int, in_order: bool, key: str) -> None:
    events = random_captures(random.Random(seed), captures=4, per_capture=25, in_order=in_order)
    seen, _ = judged_in_batches(by_capture(events), cluster_key=key)
    assert canonical(seen.values()) == canonical(keyed(judged_at_once(events, cluster_key=key)).values())


# -- each way a batch can change an earlier verdict's grounds ---------------------------------------


def event(capture: str, seq: int, kind: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(EVENT_SCHEMA.names)
    row.update(capture=capture, seq=seq, time_ns=seq * 1000, broker="b:9092", client="c:1", kind=kind)
    row.update(api="Fetch", api_version=12, topic="orders", partition=0, profile="apache", warnings=[])
    row.update(values)
    return row


def table(*rows: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=EVENT_SCHEMA)


def named(capture: str, seq: int = 0, cluster_id: str = "K") -> dict[str, Any]:
    return event(capture, seq, CLUSTER_INFO, cluster_id=cluster_id, members=["b:9092"], topic=None, partition=None)


def stale_in_the_end(batches: list[pa.Table], expect_rejudged: str) -> list[Incident]:
    seen, why = judged_in_batches(batches)
    assert why[0] is None and why[-1] is not None and expect_rejudged in why[-1], why
    everything = pa.concat_tables(batches)
    assert canonical(seen.values()) == canonical(keyed(judged_at_once(everything)).values())
    return list(seen.values())


def test_an_epoch_first_seen_before_a_judged_request_judges_again() -> None:
    first = table(named("one", 0), event("one", 20, LEADER_EPOCH, epoch=4), event("one", 30, REQUEST_EPOCH, epoch=4))
    # another host's capture of the same cluster, earlier: epoch 5 was out before that request
    late = table(named("two", 1), event("two", 25, LEADER_EPOCH, epoch=5))
    found = stale_in_the_end([first, late], "1 partition(s)")
    assert [(r["kind"], r["requested_epoch"], r["leader_epoch"]) for r in found] == [("stale_request", 4, 5)]


def test_a_cluster_that_takes_in_earlier_brokers_judges_again() -> None:
    # "one" names no cluster: alone, its request has no epoch to be judged against
    first = table(event("one", 10, REQUEST_EPOCH, epoch=4, topic_id="T"))
    # "two" reports cluster K and the same topic id: one cluster, whose epoch 5 came first
    joined = table(named("two", 1), event("two", 5, LEADER_EPOCH, epoch=5, topic_id="T"))
    found = stale_in_the_end([first, joined], "in another cluster")
    assert [(r["capture"], r["leader_epoch"]) for r in found] == [("one", 5)]


def test_a_name_for_a_topic_id_seen_without_one_judges_again() -> None:
    first = table(
        named("one", 0),
        event("one", 1, LEADER_EPOCH, epoch=5),  # orders-0, by name
        event("one", 10, REQUEST_EPOCH, epoch=4, topic="", topic_id="T"),  # a Fetch v13: by id only
    )
    later = table(named("two", 20), event("two", 21, LEADER_EPOCH, epoch=5, topic_id="T"))
    found = stale_in_the_end([first, later], "has a name now")
    assert [(r["capture"], r["topic"], r["leader_epoch"]) for r in found] == [("one", "orders", 5)]


def test_more_events_of_a_judged_capture_judge_again() -> None:
    first = table(named("one", 0), event("one", 1, LEADER_EPOCH, epoch=5))
    again = table(event("one", 10, REQUEST_EPOCH, epoch=4))
    stale_in_the_end([first, again], "capture already judged")


# -- the judging state a follow keeps between runs ---------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), key=st.sampled_from(CLUSTER_KEYS), cut=st.integers(1, 3))
def test_a_snapshot_kept_as_json_resumes_where_the_judging_was(seed: int, key: str, cut: int) -> None:
    """A follow keeps its judging as JSON (data, never code) and a later run resumes from it:
    the resumed audit judges the next batches as the uninterrupted one does."""
    import json

    batches = by_capture(random_captures(random.Random(seed), captures=4, per_capture=25, in_order=True))
    stored: list[pa.Table] = []
    straight = IncrementalAudit(store_of(stored), cluster_key=key)
    for batch in batches[:cut]:
        stored.append(batch)
        straight.add(batch)
    kept = json.loads(json.dumps(straight.snapshot()))
    resumed = IncrementalAudit(store_of(stored), cluster_key=key)
    resumed.restore(kept)
    assert resumed.snapshot() == straight.snapshot()
    for batch in batches[cut:]:
        stored.append(batch)
        assert canonical(resumed.add(batch)) == canonical(straight.add(batch))
        assert resumed.rejudged == straight.rejudged


def test_a_snapshot_that_is_not_one_is_refused_and_changes_nothing() -> None:
    import json

    audit = IncrementalAudit(store_of([]))
    audit.add(table(named("c1")))
    good = json.loads(json.dumps(audit.snapshot()))
    before = audit.snapshot()
    hostile = [
        "cut short",
        {**good, "format": 999},
        {**good, "cluster_key": "broker"},
        {**good, "equal_epoch": "stop"},
        {**good, "captures": [1]},
        {**good, "clusters": [[["c1", 7], "name"]]},
        {**good, "epochs": [[["K", "orders", "0"], []]]},
        {**good, "last_judged": [[["K", "orders", 0], [True, "t", True, 1]]]},
        {**good, "assigner": {"key": "auto"}},
        {**good, "assigner": {**good["assigner"], "pairs": [["c1"]]}},
        {**good, "names": [[["K"], "orders"]]},
    ]
    for snapshot in hostile:
        with pytest.raises(ValueError, match=r"not a snapshot|another cluster key"):
            audit.restore(snapshot)
        assert audit.snapshot() == before

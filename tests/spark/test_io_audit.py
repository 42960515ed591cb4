"""The leader-epoch audit: the story's timeline, stale requests, fenced responses and StopReplicas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import pyarrow as pa
import pyarrow.parquet as pq
from epoch_story import (
    CLIENT,
    CONTROLLER,
    ORDERS_ID,
    fetch_response,
    frame_table_rows,
    leader_and_isr,
    write_sample,
)

from kafka_epochs import Protocol
from kafka_epochs.audit.events import ANSWER, ERROR_RESPONSE, EVENT_SCHEMA, LEADER_EPOCH, EventExtractor
from kafka_epochs.epochs import EqualEpochPolicy
from kafka_epochs.spark.datasource import register
from kafka_epochs.spark.epoch_audit import audit

P = Protocol.bundled()
ORDERS_ID_TEXT = "RlrGd25wRjmW0jTlkbFptQ"
SAMPLE = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples" / "sample.pcap"


@pytest.fixture(scope="module")
def story(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    register(spark)
    path = write_sample(tmp_path_factory.mktemp("audit") / "story.pcap")
    return spark.read.format("kafka-capture").load(str(path))


@pytest.fixture(scope="module")
def result(story: Any) -> Any:
    return audit(story)


def rows(df: Any, *columns: str) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in columns) for r in df.collect()]


def test_timeline_per_partition(result: Any) -> None:
    assert rows(result.timeline, "topic", "partition", "leader_epoch", "sources", "behind", "topic_id") == [
        ("orders", 0, 5, ["Metadata"], False, ORDERS_ID_TEXT),
        ("orders", 0, 7, ["LeaderAndIsr", "Metadata"], False, ORDERS_ID_TEXT),
        ("orders", 1, 3, ["Metadata"], False, ORDERS_ID_TEXT),
        ("orders", 1, 2, ["LeaderAndIsr"], True, ORDERS_ID_TEXT),  # the deposed controller's view
    ]


def test_requests_older_or_newer_than_the_leader(result: Any) -> None:
    controller = f"{CONTROLLER[0]}:{CONTROLLER[1]}"
    assert all(r.client != controller for r in result.stale_requests.collect())
    assert rows(
        result.stale_requests,
        "api",
        "api_version",
        "correlation_id",
        "partition",
        "requested_epoch",
        "leader_epoch",
        "error",
    ) == [
        ("Produce", 12, 4, 0, 4, 5, "FENCED_LEADER_EPOCH"),
        ("Fetch", 12, 5, 1, 4, 3, "UNKNOWN_LEADER_EPOCH"),
        ("Fetch", 12, 9, 0, 6, 7, "FENCED_LEADER_EPOCH"),  # after LeaderAndIsr moved orders-0 to 7
    ]
    # each verdict says which layout read its frame: the KIP-359 Produce v12 is not Apache 4.0's v12
    assert rows(result.stale_requests, "api", "profile", "warnings") == [
        ("Produce", "kip", None),
        ("Fetch", "apache", None),
        ("Fetch", "apache", None),
    ]


def test_epoch_error_responses(result: Any) -> None:
    client = f"{CLIENT[0]}:{CLIENT[1]}"
    assert rows(result.fenced_responses, "client", "api", "correlation_id", "topic", "partition", "error") == [
        (client, "Produce", 4, "orders", 0, "FENCED_LEADER_EPOCH"),
        (client, "Fetch", 5, "orders", 1, "UNKNOWN_LEADER_EPOCH"),
        (f"{CONTROLLER[0]}:{CONTROLLER[1]}", "StopReplica", 2, "orders", 1, "FENCED_LEADER_EPOCH"),
        (client, "Fetch", 9, "orders", 0, "FENCED_LEADER_EPOCH"),
        (f"{CONTROLLER[0]}:{CONTROLLER[1]}", "LeaderAndIsr", 4, None, None, "STALE_CONTROLLER_EPOCH"),  # top level
        (f"{CONTROLLER[0]}:{CONTROLLER[1]}", "LeaderAndIsr", 4, "orders", 1, "STALE_CONTROLLER_EPOCH"),
    ]


@pytest.mark.parametrize("policy", [EqualEpochPolicy.ACCEPT, EqualEpochPolicy.FENCE])
def test_stop_replica_that_kip_570_fences(story: Any, policy: EqualEpochPolicy) -> None:
    result = audit(story, equal_epoch=policy)
    assert rows(
        result.stop_replica_fenced,
        "partition",
        "requested_epoch",
        "delete",
        "leader_epoch",
        "broker_error",
        "agreement",
    ) == [(1, 2, True, 3, "FENCED_LEADER_EPOCH", "agrees")]
    # judged by the rule before KAFKA-13972, the equal epoch is fenced: the story's broker (a newer
    # one) accepted it, so the verdict is reported as one the broker disagrees with, not as fenced
    disagreements = rows(
        result.disagreements,
        "kind",
        "partition",
        "requested_epoch",
        "leader_epoch",
        "error",
        "broker_error",
        "agreement",
    )
    if policy is EqualEpochPolicy.FENCE:
        assert disagreements == [("stop_replica", 0, 7, 7, "FENCED_LEADER_EPOCH", None, "disagrees with the broker")]
    else:
        assert disagreements == []


def test_a_frame_table_without_times_is_audited_in_table_order(spark: Any, tmp_path: Path) -> None:
    table = frame_table_rows()
    path = tmp_path / "frames.parquet"
    pq.write_table(
        pa.table(
            {
                "frame": pa.array([r["frame"] for r in table], pa.binary()),
                "direction": [r["direction"] for r in table],
                "request_api_key": pa.array([r["key"] for r in table], pa.int32()),
                "request_api_version": pa.array([r["version"] for r in table], pa.int32()),
            }
        ),
        path,
    )
    result = audit(spark.read.parquet(str(path)))
    assert rows(result.fenced_responses, "api", "error")[0] == ("Produce", "FENCED_LEADER_EPOCH")
    assert result.timeline.count() == 4
    # without times, the table's row order is the order (the story's rows are in capture order per connection)
    assert [r.error for r in result.stale_requests.collect()] == [
        "FENCED_LEADER_EPOCH",
        "UNKNOWN_LEADER_EPOCH",
        "FENCED_LEADER_EPOCH",
    ]


def test_the_package_attribute_is_callable(story: Any) -> None:
    import kafka_epochs.spark
    import kafka_epochs.spark.epoch_audit  # the module has its own name: the package's audit stays the function

    result = kafka_epochs.spark.audit(story, equal_epoch=EqualEpochPolicy.FENCE)
    assert result.stop_replica_fenced.count() == 1 and result.disagreements.count() == 1


def test_error_context_without_spark() -> None:
    frame = P.encode_response(fetch_response(3, 74), 12, correlation_id=1)
    # an event tuple holds the schema's fields from "kind" on, in order
    names = EVENT_SCHEMA.names[EVENT_SCHEMA.names.index("kind") :]
    kind, topic, topic_id, partition, code, error = (
        names.index(n) for n in ("kind", "topic", "topic_id", "partition", "error_code", "error")
    )
    events = EventExtractor(P).events(frame, "response", 1, 12)
    assert [(e[kind], e[topic], e[topic_id], e[partition], e[code], e[error]) for e in events] == [
        (ANSWER, None, None, None, None, None),  # a Fetch was answered: verdicts can be checked against it
        (ERROR_RESPONSE, "orders", None, 3, 74, "FENCED_LEADER_EPOCH"),
    ]  # v12 has no topic id: the zero id is none
    v13 = EventExtractor(P).events(P.encode_response(fetch_response(3, 75), 13, correlation_id=1), "response", 1, 13)
    assert [(e[topic_id], e[partition], e[error]) for e in v13 if e[kind] == ERROR_RESPONSE] == [
        (ORDERS_ID_TEXT, 3, "UNKNOWN_LEADER_EPOCH")
    ]
    clean = EventExtractor(P).events(P.encode_response(fetch_response(3, 0), 12, correlation_id=1), "response", 1, 12)
    assert [e[kind] for e in clean] == [ANSWER]  # no epoch error bytes: answered, nothing decoded
    assert str(ORDERS_ID) != ORDERS_ID_TEXT  # the audit speaks Kafka's text form of ids
    assert EventExtractor(P).events(b"\x00\x00\x00\x02\x00", "response", 1, 12) == []  # undecodable: nothing


def test_leader_and_isr_events_carry_the_request_type() -> None:
    names = EVENT_SCHEMA.names[EVENT_SCHEMA.names.index("kind") :]
    at = names.index("request_type")
    for kind, expected in ((1, "INCREMENTAL"), (2, "FULL"), (7, None)):  # 7: no type Kafka defines
        frame = P.encode_request(leader_and_isr(2, {0: 7, 1: 4}, kind=kind), 5, correlation_id=1)
        events = EventExtractor(P).events(frame, "request", None, None)
        assert [e[at] for e in events] == [expected, expected]


def test_the_lead_sample_audits(spark: Any) -> None:
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} is not there yet")
    register(spark)
    result = audit(spark.read.format("kafka-capture").load(str(SAMPLE)))
    assert result.events.where(f"kind = '{LEADER_EPOCH}'").count() > 0
    assert result.fenced_responses.count() >= 1


def test_a_large_share_is_judged_by_more_tasks_with_the_same_verdicts(
    story: Any, result: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_epochs.spark import epoch_audit

    spark = story.sparkSession
    least = 2 * spark.sparkContext.defaultParallelism  # two tasks a core, however few the events
    per_task = epoch_audit._EVENTS_PER_TASK
    assert epoch_audit._judging_tasks(spark, 0) == least
    assert epoch_audit._judging_tasks(spark, per_task * (least + 5) + 1) == least + 6
    assert epoch_audit._judging_tasks(spark, per_task * 10_000) == epoch_audit.SHARES  # a share is not split
    monkeypatch.setattr(epoch_audit, "_EVENTS_PER_TASK", 3)  # the story's few events: a task per 3
    spread = audit(story)
    try:
        assert spread.cached[0].rdd.getNumPartitions() > least  # the incidents, as the tasks gave them
        for name, table in spread.tables().items():
            assert table.collect() == result.tables()[name].collect(), name
    finally:
        spread.unpersist()


def test_no_frames_garbage_frames_and_no_events_give_empty_tables(story: Any) -> None:
    from kafka_epochs.spark.epoch_audit import audit_of_events, extract_events

    garbage = story.limit(6).withColumn("frame", story["frame"].substr(1, 3))  # frames cut to 3 bytes
    for frames in (story.limit(0), garbage):
        found = audit(frames)
        try:
            assert {name: table.count() for name, table in found.tables().items()} == dict.fromkeys(found.tables(), 0)
            assert found.judged.count() == 0
        finally:
            found.unpersist()
    found = audit_of_events(extract_events(story.limit(0)))
    try:
        assert [table.count() for table in found.tables().values()] == [0] * 5
        assert found.events.count() == 0
    finally:
        found.unpersist()

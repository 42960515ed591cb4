"""The client leader-epoch check (KIP-320, KIP-359) and where each request carries the epoch."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafka_epochs.epochs import NO_EPOCH, Errors, RequestedLeaderEpoch, check_leader_epoch, requested_leader_epochs

from .builders import (
    TOPIC_A,
    FetchRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    over_the_wire,
    produce,
)

LEADER_EPOCH = 5


@pytest.mark.parametrize(
    ("request_epoch", "expected"),
    [
        pytest.param(NO_EPOCH, Errors.NONE, id="KIP-320/359: -1 (absent, or an older version) skips the check"),
        pytest.param(4, Errors.FENCED_LEADER_EPOCH, id="KIP-320/359: older than the leader's -> FENCED_LEADER_EPOCH"),
        pytest.param(0, Errors.FENCED_LEADER_EPOCH, id="KIP-320/359: much older -> FENCED_LEADER_EPOCH"),
        pytest.param(6, Errors.UNKNOWN_LEADER_EPOCH, id="KIP-320/359: newer than the leader's -> UNKNOWN_LEADER_EPOCH"),
        pytest.param(LEADER_EPOCH, Errors.NONE, id="KIP-320/359: equal -> NONE"),
        pytest.param(-2, Errors.FENCED_LEADER_EPOCH, id="KIP-320: only -1 means absent; other values are compared"),
    ],
)
def test_leader_epoch_check(request_epoch: int, expected: Errors) -> None:
    assert check_leader_epoch(request_epoch, LEADER_EPOCH) is expected


def _fetch(version: int) -> Any:
    req = FetchRequest(
        topics=[
            FetchRequest.FetchTopic(
                topic="orders",
                topic_id=TOPIC_A,
                partitions=[FetchRequest.FetchPartition(partition=3, current_leader_epoch=7)],
            )
        ]
    )
    return over_the_wire(req, version)


def _list_offsets(version: int) -> Any:
    req = ListOffsetsRequest(
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name="orders",
                topic_id=TOPIC_A,
                partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=3, current_leader_epoch=7)],
            )
        ]
    )
    return over_the_wire(req, version)


def _offset_for_leader_epoch(version: int) -> Any:
    req = OffsetForLeaderEpochRequest(
        topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                topic="orders",
                topic_id=TOPIC_A,
                partitions=[OffsetForLeaderEpochRequest.OffsetForLeaderPartition(partition=3, current_leader_epoch=7)],
            )
        ]
    )
    return over_the_wire(req, version)


def _produce(version: int) -> Any:
    return produce(version, "orders", 3, current_leader_epoch=7)


@pytest.mark.parametrize(
    ("build", "version", "expected"),
    [
        pytest.param(_produce, 11, RequestedLeaderEpoch("orders", 3, NO_EPOCH), id="KIP-359: Produce v11 has no epoch"),
        pytest.param(_produce, 12, RequestedLeaderEpoch("orders", 3, 7), id="KIP-359: Produce v12 carries it"),
        pytest.param(_fetch, 8, RequestedLeaderEpoch("orders", 3, NO_EPOCH), id="KIP-320: Fetch v8 has no epoch"),
        pytest.param(_fetch, 9, RequestedLeaderEpoch("orders", 3, 7), id="KIP-320: Fetch v9 carries it"),
        pytest.param(_fetch, 13, RequestedLeaderEpoch("", 3, 7, TOPIC_A), id="KIP-516: Fetch v13 names topics by id"),
        pytest.param(_list_offsets, 3, RequestedLeaderEpoch("orders", 3, NO_EPOCH), id="KIP-320: ListOffsets v3 none"),
        pytest.param(_list_offsets, 4, RequestedLeaderEpoch("orders", 3, 7), id="KIP-320: ListOffsets v4 carries it"),
        pytest.param(
            _list_offsets,
            6,
            RequestedLeaderEpoch("orders", 3, 7, TOPIC_A),
            id="KIP-516 draft: ListOffsets v6 adds the topic id",
        ),
        pytest.param(
            _offset_for_leader_epoch,
            1,
            RequestedLeaderEpoch("orders", 3, NO_EPOCH),
            id="KIP-320: OffsetForLeaderEpoch v1 has no epoch",
        ),
        pytest.param(
            _offset_for_leader_epoch,
            2,
            RequestedLeaderEpoch("orders", 3, 7),
            id="KIP-320: OffsetForLeaderEpoch v2 carries it",
        ),
        pytest.param(
            _offset_for_leader_epoch,
            4,
            RequestedLeaderEpoch("orders", 3, 7, TOPIC_A),
            id="KIP-516 draft: OffsetForLeaderEpoch v4 adds the topic id",
        ),
    ],
)
def test_requested_leader_epochs(build: Any, version: int, expected: RequestedLeaderEpoch) -> None:
    assert requested_leader_epochs(build(version), version) == [expected]


def test_requested_leader_epoch_then_checked_against_the_leader() -> None:
    # KIP-359: the leader at epoch 8 fences a producer that still believes in epoch 7.
    [partition] = requested_leader_epochs(_produce(12), 12)
    assert check_leader_epoch(partition.current_leader_epoch, 8) is Errors.FENCED_LEADER_EPOCH
    assert check_leader_epoch(partition.current_leader_epoch, 6) is Errors.UNKNOWN_LEADER_EPOCH


def test_requests_without_a_client_epoch_are_refused() -> None:
    from kafka_epochs import Protocol

    metadata = Protocol.bundled().message("MetadataRequest")()
    with pytest.raises(ValueError, match="carries no client leader epoch"):
        requested_leader_epochs(metadata, 12)


def test_zero_topic_id_reads_as_no_topic_id() -> None:
    req = over_the_wire(
        ListOffsetsRequest(
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="orders", topic_id=uuid.UUID(int=0), partitions=[ListOffsetsRequest.ListOffsetsPartition()]
                )
            ]
        ),
        6,
    )
    assert requested_leader_epochs(req, 6)[0].topic_id is None


def test_produce_class_is_the_bundled_one() -> None:
    assert ProduceRequest.API_KEY == 0


def test_apache_layouts_without_the_kip_fields_are_read_not_refused() -> None:
    """Apache's ListOffsets v6+ has no topic id and its Produce v12 no CurrentLeaderEpoch (the
    bundled KIP layouts do); Produce v13 names topics by id only. Each reads as what it carries."""
    import uuid

    from kafka_epochs import Protocol
    from kafka_epochs.epochs import requested_from_columns, requested_leader_epochs

    apache = Protocol.apache()
    lo = apache.message("ListOffsetsRequest")
    body = lo(
        topics=[
            lo.ListOffsetsTopic(
                name="t", partitions=[lo.ListOffsetsPartition(partition_index=3, current_leader_epoch=7)]
            )
        ]
    )
    (got,) = requested_leader_epochs(lo.decode(body.encode(6), 6), 6)
    assert (got.topic, got.partition, got.current_leader_epoch, got.topic_id) == ("t", 3, 7, None)

    pr = apache.message("ProduceRequest")
    topic_id = uuid.UUID(int=42)
    body = pr(topic_data=[pr.TopicProduceData(topic_id=topic_id, partition_data=[pr.PartitionProduceData(index=1)])])
    (got,) = requested_leader_epochs(pr.decode(body.encode(13), 13), 13)
    assert (got.topic, got.partition, got.current_leader_epoch, got.topic_id) == ("", 1, -1, topic_id)
    columns = {"topic_data[].topic_id": [topic_id], "topic_data[].partition_data[].index": [1]}
    assert requested_from_columns(0, 13, columns) == [got]
    (got,) = requested_leader_epochs(pr.decode(body.encode(12), 12), 12)
    assert got.current_leader_epoch == -1  # Apache's Produce v12 has no such field

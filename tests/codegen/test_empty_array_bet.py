"""Readers bet that an array of structs between two fixed runs is empty (one ``struct`` call reads
both runs and the count between them): whichever way the bet goes, the bytes read the same."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.errors import DecodeError

APACHE = Protocol.apache()
FETCH = APACHE.message("FetchResponse")
METADATA = APACHE.message("MetadataResponse")


def _fetch(aborted: Any) -> Any:
    partition = FETCH.PartitionData(
        partition_index=3,
        high_watermark=120,
        last_stable_offset=118,
        log_start_offset=7,
        aborted_transactions=aborted,
        preferred_read_replica=2,
        records=b"\x01\x02\x03",
    )
    return FETCH(session_id=9, responses=[FETCH.FetchableTopicResponse(topic="orders", partitions=[partition] * 2)])


def _hand_written_partition(aborted: bytes) -> bytes:
    """PartitionData v12 as the spec lays it out, written field by field."""
    return (
        (3).to_bytes(4, "big")  # partition_index
        + (0).to_bytes(2, "big")  # error_code
        + (120).to_bytes(8, "big")  # high_watermark
        + (118).to_bytes(8, "big")  # last_stable_offset
        + (7).to_bytes(8, "big")  # log_start_offset
        + aborted  # aborted_transactions: compact array
        + (2).to_bytes(4, "big")  # preferred_read_replica
        + b"\x04\x01\x02\x03"  # records: compact bytes, 3 of them
        + b"\x00"  # no tagged fields
    )


ONE_ABORTED = b"\x02" + (5).to_bytes(8, "big") + (100).to_bytes(8, "big") + b"\x00"


@pytest.mark.parametrize(
    ("aborted", "wire"),
    [([], b"\x01"), (None, b"\x00"), ([FETCH.AbortedTransaction(producer_id=5, first_offset=100)], ONE_ABORTED)],
    ids=["empty", "null", "one"],
)
def test_fetch_partitions_read_the_same_whatever_the_aborted_transactions(aborted: Any, wire: bytes) -> None:
    message = _fetch(aborted)
    encoded = message.encode(12)
    partition = _hand_written_partition(wire)
    assert encoded.count(partition) == 2  # the layout above is the wire's
    decoded = FETCH.decode(encoded, 12)
    assert decoded == message
    (first, second) = decoded.responses[0].partitions
    assert (
        first.aborted_transactions == aborted
        and first.preferred_read_replica == 2
        and second.records == b"\x01\x02\x03"
    )


def test_a_bet_on_bytes_that_are_not_there_is_a_decode_error() -> None:
    encoded = _fetch([]).encode(12)
    cut = encoded[: encoded.index(b"\x01\x00\x00\x00\x02") + 3]  # the count, then two bytes of the next run
    with pytest.raises(DecodeError):
        FETCH.decode(cut, 12)


def test_metadata_topics_with_partitions_still_read_them() -> None:
    # the bet loses on every topic here: its partitions are between two fixed runs too
    partitions = [
        METADATA.MetadataResponsePartition(partition_index=i, leader_epoch=i, replica_nodes=[1, 2]) for i in range(3)
    ]
    topic = METADATA.MetadataResponseTopic(name="orders", partitions=partitions, topic_authorized_operations=8)
    empty = METADATA.MetadataResponseTopic(name="empty", partitions=[], topic_authorized_operations=9)
    message = METADATA(topics=[topic, empty])
    decoded = METADATA.decode(message.encode(12), 12)
    assert decoded == message
    assert [t.topic_authorized_operations for t in decoded.topics] == [8, 9]

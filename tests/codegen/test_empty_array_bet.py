"""Readers bet that a nullable array of structs between two fixed runs is null or empty (one
``struct`` call reads both runs and the count between them): whichever way the bet goes, the bytes
read the same."""

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


def _hand_written_partition(aborted: bytes, version: int) -> bytes:
    """PartitionData as the spec lays it out in ``version`` (11: classic, 12: flexible), field by field."""
    flexible = version >= 12
    return (
        (3).to_bytes(4, "big")  # partition_index
        + (0).to_bytes(2, "big")  # error_code
        + (120).to_bytes(8, "big")  # high_watermark
        + (118).to_bytes(8, "big")  # last_stable_offset
        + (7).to_bytes(8, "big")  # log_start_offset
        + aborted  # aborted_transactions
        + (2).to_bytes(4, "big")  # preferred_read_replica
        + (b"\x04" if flexible else (3).to_bytes(4, "big"))  # records' length: 3 bytes
        + b"\x01\x02\x03"
        + (b"\x00" if flexible else b"")  # no tagged fields
    )


ONE = (5).to_bytes(8, "big") + (100).to_bytes(8, "big")  # producer id 5, first offset 100
#: the aborted transactions on the wire, per version: empty, null, one
WIRE = {
    11: {"empty": b"\x00\x00\x00\x00", "null": b"\xff\xff\xff\xff", "one": b"\x00\x00\x00\x01" + ONE},
    12: {"empty": b"\x01", "null": b"\x00", "one": b"\x02" + ONE + b"\x00"},
}
ABORTED = {"empty": [], "null": None, "one": [FETCH.AbortedTransaction(producer_id=5, first_offset=100)]}


@pytest.mark.parametrize("version", [11, 12])
@pytest.mark.parametrize("case", list(ABORTED))
def test_fetch_partitions_read_the_same_whatever_the_aborted_transactions(case: str, version: int) -> None:
    aborted = ABORTED[case]
    message = _fetch(aborted)
    encoded = message.encode(version)
    partition = _hand_written_partition(WIRE[version][case], version)
    assert encoded.count(partition) == 2  # the layout above is the wire's
    decoded = FETCH.decode(encoded, version)
    assert decoded == message
    (first, second) = decoded.responses[0].partitions
    assert first.aborted_transactions == aborted and first.preferred_read_replica == 2
    assert second.records == b"\x01\x02\x03"


@pytest.mark.parametrize("version", [11, 12])
def test_a_bet_on_bytes_that_are_not_there_is_a_decode_error(version: int) -> None:
    encoded = _fetch([]).encode(version)
    count = WIRE[version]["empty"]
    cut = encoded[: encoded.index(count + b"\x00\x00\x00\x02") + len(count) + 2]  # two bytes of the next run
    with pytest.raises(DecodeError):
        FETCH.decode(cut, version)


def test_metadata_topics_with_partitions_still_read_them() -> None:
    # a topic's partitions sit between two fixed runs too, but are not nullable: no bet on them
    partitions = [
        METADATA.MetadataResponsePartition(partition_index=i, leader_epoch=i, replica_nodes=[1, 2]) for i in range(3)
    ]
    topic = METADATA.MetadataResponseTopic(name="orders", partitions=partitions, topic_authorized_operations=8)
    empty = METADATA.MetadataResponseTopic(name="empty", partitions=[], topic_authorized_operations=9)
    message = METADATA(topics=[topic, empty])
    for version in (8, 12):  # classic, flexible
        assert METADATA.decode(message.encode(version), version) == message
    decoded = METADATA.decode(message.encode(12), 12)
    assert [t.topic_authorized_operations for t in decoded.topics] == [8, 9]

"""Bad bytes give a DecodeError with the offset and field path: never another exception or a hang."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import DecodeError
from kafka_epochs.wire.checked import check

import strategies


@pytest.fixture(scope="module")
def metadata(reference_protocol):  # type: ignore[no-untyped-def]
    return reference_protocol.message("MetadataResponse")


def metadata_v12(metadata):  # type: ignore[no-untyped-def]
    mod = __import__(metadata.__module__, fromlist=["x"])

    def partitions() -> list:  # type: ignore[type-arg]
        return [
            mod.MetadataResponsePartition(
                partition_index=i, leader_id=1, leader_epoch=5, replica_nodes=[1, 2], isr_nodes=[1]
            )
            for i in range(2)
        ]

    topics = [
        mod.MetadataResponseTopic(name=f"t{i}", topic_id=uuid.UUID(int=i + 1), partitions=partitions())
        for i in range(4)
    ]
    return metadata(brokers=[mod.MetadataResponseBroker(node_id=1, host="h", port=9092)], topics=topics)


def offset_of(data: bytes, needle: bytes) -> int:
    pos = data.index(needle)
    assert data.count(needle) == 1
    return pos


def test_truncation_reports_offset_and_path(metadata) -> None:  # type: ignore[no-untyped-def]
    data = metadata_v12(metadata).encode(12)
    with pytest.raises(DecodeError) as info:
        metadata.decode(data[:-5], 12)
    err = info.value
    # The body ends: topics[3].topic_authorized_operations (int32), topics[3]'s empty tag section,
    # the message's empty tag section. Cutting 5 bytes leaves 1 byte of the int32.
    assert err.path == "topics[3].topic_authorized_operations"
    assert err.reason == "truncated: int32 needs 4 bytes but 1 are left"
    assert err.offset == len(data) - 6
    assert "MetadataResponse v12" in str(err)


def test_leader_epoch_path(metadata) -> None:  # type: ignore[no-untyped-def]
    obj = metadata_v12(metadata)
    data = obj.encode(12)
    # Cut inside topics[3].partitions[0].leader_epoch: find it from the layout, byte by byte.
    mod = __import__(metadata.__module__, fromlist=["x"])
    obj.topics[3].partitions[0] = mod.MetadataResponsePartition(
        partition_index=0, leader_id=1, leader_epoch=0x0ABBCCDD, replica_nodes=[1, 2], isr_nodes=[1]
    )
    data = obj.encode(12)
    cut = offset_of(data, b"\x0a\xbb\xcc\xdd") + 2
    with pytest.raises(DecodeError) as info:
        metadata.decode(data[:cut], 12)
    assert info.value.path == "topics[3].partitions[0].leader_epoch"
    assert info.value.offset == cut - 2


def test_array_count_larger_than_bytes_left(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("MetadataRequest")
    # v1: topics is an int32-counted nullable array; claim 2**31-1 topics with 0 bytes behind it.
    data = struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(DecodeError, match="array count 2147483647 is larger than the 0 bytes left") as info:
        req.decode(data, 1)
    assert info.value.path == "topics" and info.value.offset == 0


def test_compact_array_count_larger_than_bytes_left(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("MetadataRequest")
    data = bytes.fromhex("ffffffff0f") + b"\x00\x00\x00"  # a compact count of 2**32-2
    with pytest.raises(DecodeError, match="array count"):
        req.decode(data, 12)


def test_string_over_0x7fff(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    length = 0x8000 + 1  # compact: n + 1
    varint = bytes([(length & 0x7F) | 0x80, ((length >> 7) & 0x7F) | 0x80, length >> 14])
    data = varint + b"a" * 0x8000 + b"\x01\x00"
    with pytest.raises(DecodeError, match="string length 32768 is over the limit") as info:
        req.decode(data, 3)
    assert info.value.path == "client_software_name"


def test_invalid_utf8(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    data = b"\x03\xc3\x28" + b"\x01\x00"
    with pytest.raises(DecodeError, match="invalid UTF-8") as info:
        req.decode(data, 3)
    assert info.value.offset == 1
    assert info.value.path == "client_software_name"


def test_over_long_varint(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    data = b"\x81\x80\x80\x80\x80\x00" + b"\x01\x01\x00"
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        req.decode(data, 3)


def test_null_in_non_nullable_field(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    with pytest.raises(DecodeError, match="null in non-nullable field ClientSoftwareName"):
        req.decode(b"\x00\x01\x00", 3)
    topics = reference_protocol.message("CreateTopicsRequest")
    # v0: topics array of int32 count; name is an int16-length string: -1 is null.
    data = struct.pack(">ih", 1, -1)
    with pytest.raises(DecodeError, match="null in non-nullable field Name") as info:
        topics.decode(data, 0)
    assert info.value.path == "topics[0].name" and info.value.offset == 4


def test_trailing_bytes(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    with pytest.raises(DecodeError, match="1 trailing bytes") as info:
        req.decode(req().encode(3) + b"\x00", 3)
    assert info.value.offset == 3
    obj, end = req.read(req().encode(3) + b"\x00", 0, 3)  # the lower-level read allows them
    assert end == 3 and obj == req()


def test_read_at_offset_stays_within_end(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    body = req(client_software_name="abc").encode(3)
    buffer = b"xx" + body + b"yy"
    obj, end = req.read(buffer, 2, 3, end=2 + len(body))
    assert end == 2 + len(body) and obj.client_software_name == "abc"
    with pytest.raises(DecodeError):
        req.read(buffer, 2, 3, end=len(body))  # the struct does not fit before `end`


def test_tag_section_count_larger_than_bytes_left(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")
    with pytest.raises(DecodeError, match="tag count 100"):
        req.decode(b"\x01\x01\x64", 3)


def test_mutation_pairs(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    """Truncated and byte-mutated valid messages of many (api, version) pairs: only DecodeError."""
    names = [
        "MetadataResponse",
        "ProduceRequest",
        "FetchRequest",
        "FetchResponse",
        "ApiVersionsResponse",
        "ListOffsetsResponse",
        "OffsetForLeaderEpochRequest",
        "LeaderAndIsrRequest",
        "StopReplicaRequest",
        "CreateTopicsRequest",
        "JoinGroupResponse",
        "DescribeClusterResponse",
        "ConsumerGroupHeartbeatRequest",
    ]
    pairs = [(reference_protocol.message(n), v) for n in names for v in reference_protocol.message(n).VALID_VERSIONS]

    @settings(max_examples=400, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        cls, version = data.draw(st.sampled_from(pairs), label="pair")
        raw = strategies.damage(data, data.draw(strategies.message(cls, version)).encode(version))
        try:
            cls.decode(raw, version)
            # Accepted by the fast decoder: the careful reader must agree, to the last byte.
            assert check(cls, raw, 0, len(raw), version) == len(raw)
        except DecodeError as e:
            assert e.offset >= 0
            assert "decoder failed" not in e.reason, e  # the checked reader must explain every failure

    run()

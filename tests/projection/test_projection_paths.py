"""Projection paths, rows and errors, on bytes written by hand from the specs."""

from __future__ import annotations

import struct

import pytest

from kafka_epochs import Protocol
from kafka_epochs.projection import Projection, projection
from kafka_epochs.wire.errors import DecodeError

APACHE = Protocol.apache()
PRODUCE_RESPONSE = APACHE.message("ProduceResponse")
METADATA_RESPONSE = APACHE.message("MetadataResponse")


def produce_response_v0() -> bytes:
    """ProduceResponse v0: [topic string, [partition int32, error int16, base_offset int64]]."""

    def topic(name: bytes, partitions: list[tuple[int, int, int]]) -> bytes:
        out = struct.pack(">h", len(name)) + name + struct.pack(">i", len(partitions))
        return out + b"".join(struct.pack(">ihq", *p) for p in partitions)

    topics = [topic(b"orders", [(0, 0, 100), (1, 74, -1)]), topic(b"empty", []), topic(b"audit", [(7, 0, 5)])]
    return struct.pack(">i", len(topics)) + b"".join(topics)


def test_rows_are_innermost_elements_with_enclosing_values_repeated() -> None:
    wanted = Projection(
        PRODUCE_RESPONSE,
        ["responses[].partition_responses[].error_code", "responses[].name", "responses.partition_responses.index"],
    )
    assert wanted.paths == (
        "responses[].partition_responses[].error_code",
        "responses[].name",
        "responses[].partition_responses[].index",
    )
    columns = wanted.decode(produce_response_v0(), 0)
    # the topic with no partitions gives no row
    assert columns == {
        "responses[].partition_responses[].error_code": [0, 74, 0],
        "responses[].name": ["orders", "orders", "audit"],
        "responses[].partition_responses[].index": [0, 1, 7],
    }


def test_a_projection_without_arrays_has_one_row_and_absent_fields_are_none() -> None:
    # throttle_time_ms comes in v1: v0 does not carry it
    columns = Projection(PRODUCE_RESPONSE, ["throttle_time_ms"]).decode(produce_response_v0(), 0)
    assert columns == {"throttle_time_ms": [None]}
    body = produce_response_v0() + struct.pack(">i", 250)
    assert Projection(PRODUCE_RESPONSE, ["ThrottleTimeMs"]).decode(body, 1) == {"throttle_time_ms": [250]}


def test_values_after_the_array_are_repeated_over_its_rows() -> None:
    # In ProduceResponse v1 throttle_time_ms follows the responses array on the wire.
    body = produce_response_v0() + struct.pack(">i", 250)
    columns = Projection(PRODUCE_RESPONSE, ["throttle_time_ms", "responses[].partition_responses[].index"]).decode(
        body, 1
    )
    assert columns["throttle_time_ms"] == [250, 250, 250]
    assert columns["responses[].partition_responses[].index"] == [0, 1, 7]


def test_errors_keep_the_columns_and_name_offset_and_path() -> None:
    wanted = Projection(PRODUCE_RESPONSE, ["responses[].partition_responses[].index"])
    columns = wanted.empty()
    assert wanted.read_into(columns, produce_response_v0(), 0) == 3
    body = produce_response_v0()
    with pytest.raises(DecodeError) as cut:
        wanted.read_into(columns, body[:-3], 0)
    assert "truncated" in str(cut.value)
    assert cut.value.path == "responses[2].partition_responses[0].base_offset"
    with pytest.raises(DecodeError, match="2 trailing bytes"):
        wanted.read_into(columns, body + b"\0\0", 0)
    lying = bytearray(body)
    struct.pack_into(">i", lying, 0, 2**31 - 1)  # a topic count the bytes cannot hold
    with pytest.raises(DecodeError):
        wanted.read_into(columns, bytes(lying), 0)
    assert columns == [[0, 1, 7]]


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["brokers[].host", "topics[].name"], "beside"),
        (["topics[].partitions[].leader_epoch", "brokers[].node_id"], "beside"),
        (["topics[].nope"], "has no field 'nope'"),
        (["topics"], "holds structs"),
        (["topics[].partitions"], "holds structs"),
        (["throttle_time_ms[]"], "is not an array"),
        (["throttle_time_ms.x"], "has no field 'x'"),
        (["topics[].name", "topics.name"], "asked for twice"),
        ([], "at least one field path"),
        (["topics..name"], "empty segment"),
    ],
)
def test_bad_paths_are_refused_with_the_reason(paths: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Projection(METADATA_RESPONSE, paths)


def test_a_single_string_is_not_a_list_of_paths() -> None:
    with pytest.raises(TypeError):
        Projection(METADATA_RESPONSE, "topics[].name")  # type: ignore[arg-type]


def test_projections_are_shared_and_unknown_versions_refused() -> None:
    assert projection(METADATA_RESPONSE, ["topics[].name"]) is projection(METADATA_RESPONSE, ["topics[].name"])
    with pytest.raises(Exception, match="has no version 99"):
        Projection(METADATA_RESPONSE, ["topics[].name"]).decode(b"", 99)

"""decode_batch (Arrow in, Arrow out, no Spark) against the single-process decoder, row for row."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("numpy")

from kafka_epochs.protocol import Decoded, Protocol, ProtocolChain  # noqa: E402  (after the skip, on purpose)
from kafka_epochs.spark.batch import DECODED_SCHEMA, decode_batch  # noqa: E402
from kafka_epochs.spark.bodies import ASSUMED_REQUEST  # noqa: E402


def columns(rows: list[dict[str, Any]], binary: Any = None) -> dict[str, Any]:
    """decode_batch's keyword arguments for ``rows``."""
    return {
        "frames": pa.array([r["frame"] for r in rows], binary or pa.binary()),
        "direction": pa.array([r["direction"] for r in rows], pa.string()),
        "request_api_key": pa.array([r["request_api_key"] for r in rows], pa.int16()),
        "request_api_version": pa.array([r["request_api_version"] for r in rows], pa.int16()),
    }


def decode_rows(rows: list[dict[str, Any]], **options: Any) -> list[dict[str, Any]]:
    args = columns(rows)
    batch = decode_batch(args.pop("frames"), **args, **options)
    assert batch.schema.equals(DECODED_SCHEMA)
    return batch.to_pylist()


def test_equals_the_single_process_decoder_row_for_row(frame_rows: list[dict[str, Any]], reference: Any) -> None:
    decoded = decode_rows(frame_rows)
    assert len(decoded) == len(frame_rows)
    for row, got in zip(frame_rows, decoded, strict=True):
        assert got["error"] is None, (row["id"], got["error"])
        assert reference.comparable(got) == reference.row(row), row["id"]


def test_covers_every_bundled_api_and_version(frame_rows: list[dict[str, Any]]) -> None:
    decoded = decode_rows(frame_rows)
    seen = {(d["api_name"], d["direction"], d["api_version"]) for d in decoded}
    protocol = Protocol.bundled()
    for key in protocol.api_keys():
        for kind in ("request", "response"):
            name = protocol.message_for(key, kind).__name__.removesuffix(kind.capitalize())
            assert {v for n, k, v in seen if (n, k) == (name, kind)} == set(protocol.versions(key, kind))
    # the KIP versions this project adds
    assert {("StopReplica", "request", 3), ("StopReplica", "request", 4), ("Produce", "request", 12)} <= seen


def assumed(expected: dict[str, Any]) -> dict[str, Any]:
    """An expected row, as decoded with no direction column: it says so in its warnings."""
    return {**expected, "warnings": [*(expected["warnings"] or []), ASSUMED_REQUEST]}


def test_requests_only_without_a_direction(frame_rows: list[dict[str, Any]], reference: Any) -> None:
    requests = [r for r in frame_rows if r["direction"] == "request"]
    batch = decode_batch(pa.array([r["frame"] for r in requests], pa.binary()))
    assert batch.column("direction").to_pylist() == ["request"] * len(requests)
    for row, got in zip(requests, batch.to_pylist(), strict=True):
        # the one difference from the reference: each row says its direction was assumed
        assert reference.comparable(got) == assumed(reference.row(row))


#: Rows of the bad set that decode, with a warning or a problem beside their body.
TOLERATED = ("trailing bytes", "unknown trailing bytes", "client id not UTF-8")


def test_bad_rows_carry_their_error_and_never_fail(bad_rows: list[dict[str, Any]], reference: Any) -> None:
    decoded = decode_rows(bad_rows)
    assert len(decoded) == len(bad_rows)  # rows out = rows in, in order
    for row, got in zip(bad_rows, decoded, strict=True):
        expected = reference.row(row)
        assert reference.same(expected, got), (row.get("why"), expected["error"], got["error"])
        if "why" in row and row["why"] not in TOLERATED:
            assert got["error"] and got["body_json"] is None, row["why"]
    by_why = {row.get("why"): got for row, got in zip(bad_rows, decoded, strict=True)}
    quirk = by_why["trailing bytes"]
    assert quirk["warnings"] == ["3 trailing bytes after the body, ignored"] and quirk["error"] is None
    doubtful = by_why["unknown trailing bytes"]
    assert doubtful["warnings"] == ["3 trailing bytes after the body, ignored"]
    assert doubtful["error"].startswith("3 bytes left after the body, which no known client sends")
    assert doubtful["body_json"] is not None  # the body read is kept beside the problem
    assert by_why["response without its request"]["error"].startswith("response without its request")
    assert by_why["unknown direction"]["error"] == "direction must be 'request' or 'response', not 'sideways'"
    assert by_why["null"]["error"] == "no frame (null)"
    # a bad row still shows the header fields its bytes hold
    unknown = by_why["unknown api key"]
    assert (unknown["api_key"], unknown["api_name"], unknown["correlation_id"]) == (999, None, 1)
    assert (by_why["unknown version"]["api_name"], by_why["unknown version"]["api_version"]) == ("Produce", 99)
    # as Kafka's Java side reads it: a replacement character per bad byte, and a warning
    not_utf8 = by_why["client id not UTF-8"]
    assert not_utf8["client_id"] == "\ufffd\ufffd" and not_utf8["error"] is None
    assert not_utf8["warnings"] == [
        "invalid UTF-8 in client_id read with U+FFFD replacements (as Kafka's Java side reads it)"
    ]


def test_sliced_chunked_and_large_binary_input(frame_rows: list[dict[str, Any]], reference: Any) -> None:
    requests = [r for r in frame_rows if r["direction"] == "request"]
    frames = pa.array([r["frame"] for r in requests], pa.binary())
    # a slice shares its parent's buffers: offsets must be read from the slice's own start
    sliced = decode_batch(frames.slice(5, 20)).to_pylist()
    assert [reference.comparable(d) for d in sliced] == [assumed(reference.row(r)) for r in requests[5:25]]
    chunked = pa.chunked_array([frames.slice(0, 10), frames.slice(10)])
    assert decode_batch(chunked).equals(decode_batch(frames))
    large = decode_batch(frames.cast(pa.large_binary()))
    assert large.equals(decode_batch(frames))


def test_columns_of_another_length_are_refused() -> None:
    with pytest.raises(ValueError, match="direction has 1 rows but frames has 2"):
        decode_batch(pa.array([b"", b""]), direction=pa.array(["request"]))


def test_an_empty_batch() -> None:
    batch = decode_batch(pa.array([], pa.binary()))
    assert batch.num_rows == 0 and batch.schema.equals(DECODED_SCHEMA)


def test_tagged_header_fields_take_the_full_decoder() -> None:
    """A request header v2 with tagged fields: the vectorized pass leaves it to decode_request."""
    protocol = Protocol.bundled()
    header = protocol.message("RequestHeader")(
        request_api_key=3, request_api_version=12, correlation_id=8, client_id="c"
    )
    header._unknown_tags = {7: b"xy"}  # type: ignore[attr-defined]
    body = protocol.message("MetadataRequest")(allow_auto_topic_creation=False)
    out: list[bytes] = []
    header.write(out, 2)
    body.write(out, 12)
    frame = struct.pack(">i", sum(map(len, out))) + b"".join(out)
    (got,) = decode_batch(pa.array([frame])).to_pylist()
    assert got["error"] is None and got["client_id"] == "c" and got["correlation_id"] == 8
    assert json.loads(got["body_json"]) == protocol.decode_request(frame).to_dict()["body"]


def test_apiversions_answered_in_v0_reads_again_as_v0() -> None:
    """As framing does: a broker without the asked version answers ApiVersions in v0."""
    protocol = Protocol.bundled()
    answer = protocol.message("ApiVersionsResponse")(error_code=35)
    frame = protocol.encode_response(answer, 0, correlation_id=4)
    batch = decode_batch(
        pa.array([frame]),
        direction=pa.array(["response"]),
        request_api_key=pa.array([18]),
        request_api_version=pa.array([3]),
    )
    (got,) = batch.to_pylist()
    assert got["error"] is None and got["api_version"] == 3
    assert got["warnings"] == ["ApiVersions v3 answered in v0 (UNSUPPORTED_VERSION)"]
    assert got["error_codes"] == [{"path": "error_code", "code": 35, "name": "UNSUPPORTED_VERSION"}]


def test_response_error_codes_are_listed(frame_rows: list[dict[str, Any]]) -> None:
    protocol = Protocol.bundled()
    partition = protocol.message("ProduceResponse").PartitionProduceResponse(index=0, error_code=6)
    topic = protocol.message("ProduceResponse").TopicProduceResponse(name="t", partition_responses=[partition])
    frame = protocol.encode_response(protocol.message("ProduceResponse")(responses=[topic]), 9, correlation_id=1)
    batch = decode_batch(
        pa.array([frame]),
        direction=pa.array(["response"]),
        request_api_key=pa.array([0]),
        request_api_version=pa.array([9]),
    )
    assert batch.column("error_codes").to_pylist() == [
        [{"path": "responses[0].partition_responses[0].error_code", "code": 6, "name": "NOT_LEADER_OR_FOLLOWER"}]
    ]


def test_protocols_by_object_chain_or_spec_directory(frame_rows: list[dict[str, Any]], tmp_path: Any) -> None:
    from pathlib import Path

    requests = [r for r in frame_rows if r["direction"] == "request"][:30]
    frames = pa.array([r["frame"] for r in requests])
    spec_dir = Path(__file__).resolve().parents[2] / "messages"
    from_dir = Protocol.from_specs(spec_dir, cache_dir=tmp_path)
    expected = decode_batch(frames, protocol=from_dir)
    assert set(expected.column("profile").to_pylist()) == {str(spec_dir)}  # each row names its layout
    assert decode_batch(frames, protocol=ProtocolChain([from_dir, Protocol.bundled()])).equals(expected)
    assert decode_batch(frames, protocol=[str(spec_dir)]).equals(expected)
    bundled = decode_batch(frames, protocol=Protocol.bundled())
    assert set(bundled.column("profile").to_pylist()) == {"kip"}
    others = [name for name in expected.schema.names if name != "profile"]
    assert bundled.select(others).equals(expected.select(others))


def test_the_fast_path_matches_decoded_objects(frame_rows: list[dict[str, Any]]) -> None:
    """The in-place body reads give the very objects decode_request gives (not only equal JSON)."""
    from kafka_epochs.spark.batch import DecodedRows

    requests = [r for r in frame_rows if r["direction"] == "request"]
    rows = DecodedRows.of(
        pa.array([r["frame"] for r in requests]), None, None, None, None, lambda body, version, is_response: body
    )
    protocol = Protocol.auto()
    for row, body in zip(requests, rows.bodies.values, strict=True):
        expected: Decoded = protocol.decode_request(row["frame"])
        assert body == expected.body

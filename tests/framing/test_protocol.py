"""Protocol: lookups, Kafka's header-version rules and whole frames (checked against hand-written bytes)."""

from __future__ import annotations

import struct

import pytest

from kafka_epochs import DecodeError, EncodeError, Protocol, UnsupportedVersionError


@pytest.mark.parametrize(
    ("api", "version", "request_header", "response_header"),
    [
        (18, 0, 1, 0),
        (18, 3, 2, 0),
        (18, 4, 2, 0),  # ApiVersions: response header always v0
        (3, 8, 1, 0),
        (3, 9, 2, 1),
        (3, 12, 2, 1),  # Metadata: flexible from v9
        (0, 8, 1, 0),
        (0, 9, 2, 1),  # Produce: flexible from v9
        (1, 11, 1, 0),
        (1, 12, 2, 1),  # Fetch: flexible from v12
        (7, 0, 0, 0),
        (7, 1, 1, 0),
        (7, 3, 2, 1),  # ControlledShutdown v0 is the only header v0 request
        (5, 1, 1, 0),
        (5, 2, 2, 1),  # StopReplica: flexible from v2
    ],
)
def test_header_versions(
    reference_protocol,
    api: int,
    version: int,
    request_header: int,  # type: ignore[no-untyped-def]
    response_header: int,
) -> None:
    assert reference_protocol.request_header_version(api, version) == request_header
    assert reference_protocol.response_header_version(api, version) == response_header


def test_lookup_by_name_and_api_key(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    assert reference_protocol.message_for(5, "request") is reference_protocol.message("StopReplicaRequest")
    assert reference_protocol.message_for(3, "response").__name__ == "MetadataResponse"
    assert 18 in reference_protocol.api_keys()
    assert reference_protocol.versions(3) == range(0, 13)
    assert "FetchRequest" in reference_protocol
    with pytest.raises(KeyError, match="NoSuchRequest"):
        reference_protocol.message("NoSuchRequest")
    with pytest.raises(KeyError, match="api key 9999"):
        reference_protocol.message_for(9999, "request")
    with pytest.raises(ValueError, match="kind"):
        reference_protocol.message_for(3, "reply")


def test_request_frame_header_v1_bytes(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("MetadataRequest")(topics=None)
    frame = reference_protocol.encode_request(req, 1, correlation_id=258, client_id="ab")
    body = bytes.fromhex("ffffffff")  # v1: topics = null (all topics)
    header = bytes.fromhex("000300010000010200026162")  # key, version, correlation, client id
    assert frame == struct.pack(">i", len(header) + len(body)) + header + body


def test_request_frame_header_v2_keeps_client_id_non_compact(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")(client_software_name="x", client_software_version="1")
    frame = reference_protocol.encode_request(req, 3, correlation_id=1, client_id="cli")
    expected = bytes.fromhex(
        "0012"
        "0003"
        "00000001"  # api key 18, version 3, correlation id 1
        "0003"
        "636c69"  # client id: int16 length even in header v2
        "00"  # header tag section
        "02"
        "78"
        "02"
        "31"
        "00"  # body: compact "x", compact "1", tags
    )
    assert frame == struct.pack(">i", len(expected)) + expected
    decoded = reference_protocol.decode_request(frame)
    assert decoded.header_version == 2
    assert decoded.header.client_id == "cli" and decoded.correlation_id == 1
    assert decoded.body == req and (decoded.api_key, decoded.api_version) == (18, 3)


def test_null_client_id(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")()
    frame = reference_protocol.encode_request(req, 0, correlation_id=0, client_id=None)
    assert frame[4:] == bytes.fromhex("0012000000000000ffff")
    assert reference_protocol.decode_request(frame).header.client_id is None


def test_response_frames(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    resp = reference_protocol.message("ApiVersionsResponse")(error_code=35)
    frame = reference_protocol.encode_response(resp, 3, correlation_id=9)
    # Header v0 (correlation id only, no tag section), although v3 bodies are flexible.
    assert frame[4:11] == bytes.fromhex("00000009002301")
    decoded = reference_protocol.decode_response(frame, 18, 3)
    assert decoded.header_version == 0 and decoded.body.error_code == 35

    meta = reference_protocol.message("MetadataResponse")(throttle_time_ms=1)
    frame = reference_protocol.encode_response(meta, 12, correlation_id=9)
    assert frame[4:9] == bytes.fromhex("0000000900")  # header v1: correlation id + tag section
    assert reference_protocol.decode_response(frame, 3, 12).body == meta


def test_frame_errors(reference_protocol) -> None:  # type: ignore[no-untyped-def]
    req = reference_protocol.message("ApiVersionsRequest")()
    frame = reference_protocol.encode_request(req, 3, correlation_id=1)
    with pytest.raises(DecodeError, match="size prefix says"):
        reference_protocol.decode_request(frame + b"\x00")
    with pytest.raises(DecodeError, match="a frame starts with a 4-byte size"):
        reference_protocol.decode_request(b"\x00")
    unknown = struct.pack(">ihhi", 8, 9999, 0, 1)
    with pytest.raises(DecodeError, match="unknown api key 9999"):
        reference_protocol.decode_request(unknown)
    bad_version = struct.pack(">ihhi", 8, 18, 99, 1)
    with pytest.raises(DecodeError, match="v99 is not in") as info:
        reference_protocol.decode_request(bad_version)
    assert info.value.offset == 6
    longer = bytearray(frame)
    longer[-1:] = b"\x00\x00"
    longer[0:4] = struct.pack(">i", len(longer) - 4)
    with pytest.raises(DecodeError, match="trailing bytes"):
        reference_protocol.decode_request(bytes(longer), strict=True)
    tolerated = reference_protocol.decode_request(bytes(longer))  # a broker ignores them; so do we, and say so
    assert tolerated.trailing == 1 and tolerated.warnings == ["1 trailing bytes after the body, ignored"]
    with pytest.raises(UnsupportedVersionError):
        reference_protocol.encode_request(req, 99, correlation_id=1)
    with pytest.raises(EncodeError, match="no api key"):
        reference_protocol.encode_request(reference_protocol.message("RequestHeader")(), 1, correlation_id=1)


def test_from_specs_caches_generated_code(reference_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = Protocol.from_specs(reference_dir, cache_dir=tmp_path)
    cached = list(tmp_path.glob("specs_*"))
    assert len(cached) == 1 and (cached[0] / "MetadataRequest.py").exists()
    stamp = (cached[0] / "MetadataRequest.py").stat().st_mtime_ns
    second = Protocol.from_specs(reference_dir, cache_dir=tmp_path)
    assert (cached[0] / "MetadataRequest.py").stat().st_mtime_ns == stamp  # reused, not rewritten
    assert second.message("MetadataRequest") is first.message("MetadataRequest")


def test_from_specs_missing_directory(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FileNotFoundError):
        Protocol.from_specs(tmp_path / "nope", cache_dir=tmp_path)

"""Protocol profiles (apache, kip, auto) and the broker-tolerant defaults of decode_request/response."""

from __future__ import annotations

import struct
import uuid

import pytest
from produce_frames import apache_produce, kip_produce

from kafka_epochs import DecodeError, Protocol
from kafka_epochs.protocol import AutoProtocol, ProtocolChain

APACHE, KIP, AUTO = Protocol.apache(), Protocol.kip(), Protocol.auto()


def refit(frame: bytes, extra: bytes) -> bytes:
    """``frame`` with ``extra`` bytes after its body and the size prefix fixed."""
    body = frame[4:] + extra
    return struct.pack(">i", len(body)) + body


def test_profiles_by_name() -> None:
    assert Protocol.profile("apache") is APACHE
    assert Protocol.profile("kip") is KIP
    assert Protocol.profile("auto") is AUTO
    assert isinstance(KIP, ProtocolChain) and isinstance(AUTO, AutoProtocol)


def test_apache_profile_has_every_api_of_kafka_3_9_and_4x_clients() -> None:
    keys = APACHE.api_keys()
    assert set(range(0, 69)) - {65, 66, 67} <= set(keys)  # 3.9's keys (65-67 are not client or broker apis)
    assert 74 in keys  # ListConfigResources: Kafka 4.x only
    assert APACHE.versions(0) == range(0, 14)  # Produce: 3.9's v0-v2 and Kafka 4's v12-v13
    assert APACHE.versions(1) == range(0, 19)
    heartbeat_versions = APACHE.message("HeartbeatRequest").VALID_VERSIONS
    assert heartbeat_versions == range(0, 5)


def test_kip_profile_layers_the_seed_versions_over_apache() -> None:
    produce = KIP.decode_request(kip_produce(epoch=4))
    assert produce.profile == "kip"
    assert produce.body.topic_data[0].partition_data[0].current_leader_epoch == 4
    newest = KIP.decode_request(apache_produce(13))  # past the seeds: Apache's layout
    assert newest.profile == "apache" and newest.body.topic_data[0].topic_id == uuid.UUID(int=9)
    heartbeat = APACHE.message("HeartbeatRequest")(group_id="g", generation_id=3, member_id="m")
    decoded = KIP.decode_request(APACHE.encode_request(heartbeat, 4, correlation_id=1))
    assert decoded.profile == "apache" and decoded.body == heartbeat


def test_auto_knows_exactly_which_version_numbers_conflict() -> None:
    assert AUTO.conflicts() == [
        (0, "request", 12),  # Produce v12: KIP-359's epoch vs Kafka 4's v11 bytes; the responses agree
        (2, "request", 6),
        (2, "response", 6),  # ListOffsets v6: the KIP-516 draft's topic id
        (5, "request", 4),
        (5, "response", 4),  # StopReplica v4
        (23, "request", 4),
        (23, "response", 4),  # OffsetForLeaderEpoch v4
    ]


def test_auto_reads_each_produce_v12_with_the_layout_that_fits() -> None:
    kip = AUTO.decode_request(kip_produce(epoch=4))
    assert kip.profile == "kip" and kip.warnings == []
    assert kip.body == KIP.decode_request(kip_produce(epoch=4)).body
    apache = AUTO.decode_request(apache_produce(12))
    assert apache.profile == "apache" and apache.warnings == []
    assert apache.body == APACHE.decode_request(apache_produce(12)).body
    # The fixed profiles do not guess: each refuses (or misreads into an error) the other's bytes.
    with pytest.raises(DecodeError):
        APACHE.decode_request(kip_produce(epoch=4), strict=True)


def test_auto_takes_apache_when_both_layouts_read_the_same_values() -> None:
    empty = APACHE.message("ProduceRequest")(acks=1, timeout_ms=10, topic_data=[])
    decoded = AUTO.decode_request(APACHE.encode_request(empty, 12, correlation_id=1))
    assert decoded.profile == "apache" and decoded.warnings == []


def test_auto_response_follows_the_request_layout() -> None:
    cls = KIP.message("StopReplicaResponse")
    body = cls(
        error_code=0, topics=[cls.StopReplicaTopicError(topic_name="t", topic_id=uuid.UUID(int=3), partition_errors=[])]
    )
    frame = KIP.encode_response(body, 4, correlation_id=8)
    decoded = AUTO.decode_response(frame, 5, 4, prefer="kip")
    assert decoded.profile == "kip" and decoded.body == body
    apache_cls = APACHE.message("StopReplicaResponse")
    apache_body = apache_cls(
        error_code=0,
        partition_errors=[apache_cls.StopReplicaPartitionError(topic_name="t", partition_index=1, error_code=0)],
    )
    decoded = AUTO.decode_response(APACHE.encode_response(apache_body, 4, correlation_id=9), 5, 4, prefer="kip")
    assert decoded.profile == "apache" and decoded.body == apache_body


def test_unknown_api_and_too_new_version_name_themselves() -> None:
    frame = struct.pack(">ihhih", 10, 99, 3, 1, -1)
    with pytest.raises(DecodeError, match=r"unknown api key 99 \(v3\)"):
        APACHE.decode_request(frame)
    frame = refit(apache_produce(13), b"")
    frame = frame[:6] + struct.pack(">h", 14) + frame[8:]
    with pytest.raises(DecodeError, match=r"ProduceRequest v14 is not in the auto protocol \(it has 0-13\)"):
        AUTO.decode_request(frame)


def test_trailing_bytes_are_reported_by_default_and_refused_when_strict() -> None:
    metadata = APACHE.message("MetadataRequest")(topics=None, allow_auto_topic_creation=True)
    frame = refit(APACHE.encode_request(metadata, 12, correlation_id=3, client_id="rdkafka"), b"\x00\x00\x01")
    decoded = APACHE.decode_request(frame)
    assert decoded.trailing == 3 and decoded.body == metadata
    assert decoded.warnings == ["3 trailing bytes after the body, ignored"]
    with pytest.raises(DecodeError, match="3 trailing bytes"):
        APACHE.decode_request(frame, strict=True)


def api_versions_v0_unsupported(correlation_id: int) -> bytes:
    """An ApiVersionsResponse v0 written from the spec by hand: header v0 (correlation id), error
    code 35, and two api keys (key, min, max as int16)."""
    body = struct.pack(">ih", correlation_id, 35) + struct.pack(">i", 2) + struct.pack(">hhh", 0, 3, 11)
    body += struct.pack(">hhh", 18, 0, 2)
    return struct.pack(">i", len(body)) + body


def test_api_versions_answered_in_v0_is_read_as_v0() -> None:
    frame = api_versions_v0_unsupported(17)
    for protocol in (APACHE, KIP, AUTO):
        decoded = protocol.decode_response(frame, 18, 3)
        assert decoded.api_version == 0 and decoded.correlation_id == 17
        assert decoded.body.error_code == 35
        assert [(k.api_key, k.min_version, k.max_version) for k in decoded.body.api_keys] == [(0, 3, 11), (18, 0, 2)]
        assert decoded.warnings == ["ApiVersions v3 answered in v0 (UNSUPPORTED_VERSION)"]


def test_api_versions_v0_fallback_only_for_unsupported_version() -> None:
    frame = bytearray(api_versions_v0_unsupported(17))
    struct.pack_into(">h", frame, 8, 0)  # error code NONE: a v0 body where v3 was asked is just wrong
    with pytest.raises(DecodeError):
        APACHE.decode_response(bytes(frame), 18, 3)


def test_a_refusal_in_v0_is_read_without_explaining_the_version_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal is read as v0 without the checked walk that explains why v3 does not read (a real
    capture holds hundreds: every client that asks a broker for a newer ApiVersions)."""
    from kafka_epochs.projection.bodies import FieldsReader
    from kafka_epochs.wire import checked

    def no_explaining(*args: object) -> DecodeError:
        raise AssertionError("a refusal was explained")

    monkeypatch.setattr(checked, "explain", no_explaining)
    frame = api_versions_v0_unsupported(17)
    for reader in (None, FieldsReader([]), FieldsReader(["api_keys[].max_version"])):
        decoded = APACHE.decode_response(frame, 18, 3, body_reader=reader)
        assert decoded.api_version == 0 and decoded.body.error_code == 35
        assert decoded.warnings == ["ApiVersions v3 answered in v0 (UNSUPPORTED_VERSION)"]


def test_a_v3_body_with_error_35_that_reads_as_v3_stays_v3() -> None:
    """Kafka's clients read the version asked for first and fall back to v0 only when it fails."""
    cls = APACHE.message("ApiVersionsResponse")
    body = cls(error_code=35, api_keys=[], throttle_time_ms=0)
    frame = APACHE.encode_response(body, 3, correlation_id=5)
    decoded = APACHE.decode_response(frame, 18, 3)
    assert decoded.api_version == 3 and decoded.body == body and decoded.warnings == []


def test_a_refusal_that_reads_in_no_version_says_why_the_version_asked_for_does_not() -> None:
    from kafka_epochs.projection.bodies import FieldsReader

    frame = api_versions_v0_unsupported(17)[:-3]  # the last api key cut short
    frame = struct.pack(">i", len(frame) - 4) + frame[4:]
    cls = APACHE.message("ApiVersionsResponse")
    with pytest.raises(DecodeError) as v3:
        cls.read(frame, 8, 3)
    for reader in (None, FieldsReader(["api_keys[].max_version"])):
        with pytest.raises(DecodeError) as caught:
            APACHE.decode_response(frame, 18, 3, body_reader=reader)
        assert str(caught.value) == str(v3.value)


def test_unstable_version_is_flagged() -> None:
    cls = APACHE.message("InitProducerIdRequest")
    assert cls.LATEST_VERSION_UNSTABLE and cls.VALID_VERSIONS.stop - 1 == 6
    body = cls(transactional_id="tx", transaction_timeout_ms=1000)
    decoded = APACHE.decode_request(APACHE.encode_request(body, 6, correlation_id=1))
    assert any("unstable" in w for w in decoded.warnings)
    assert APACHE.decode_request(APACHE.encode_request(body, 5, correlation_id=1)).warnings == []


def test_encode_through_a_chain_uses_the_class_owner() -> None:
    heartbeat = KIP.message("HeartbeatRequest")(group_id="g", generation_id=1, member_id="m")
    assert KIP.encode_request(heartbeat, 4, correlation_id=2) == APACHE.encode_request(heartbeat, 4, correlation_id=2)
    stop = KIP.message("StopReplicaRequest")(controller_id=1, controller_epoch=2)
    frame = KIP.encode_request(stop, 4, correlation_id=3)
    assert KIP.decode_request(frame).body == stop

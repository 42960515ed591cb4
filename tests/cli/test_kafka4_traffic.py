"""Kafka 4 traffic: KIP-848's ConsumerGroupHeartbeat v1 (what librdkafka sends a 4.x broker) decodes,
its bodies agree with kio (generated from Kafka 4.x's specs) both ways, and a frame of a known api
in a version the catalogue lacks still says which api it is."""

from __future__ import annotations

import io
import json
import struct
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import main

from crosscheck.peers import peer, sample_plain
from crosscheck.test_against_peers import cross_check

APACHE = Protocol.apache()
T0 = 1_750_000_000_000_000_000
HEARTBEAT = 68
#: Added to the catalogue by Kafka 4.0's development specs (its third input).
KAFKA_4_PAIRS = [
    ("ConsumerGroupHeartbeatRequest", 0),
    ("ConsumerGroupHeartbeatRequest", 1),
    ("ConsumerGroupHeartbeatResponse", 0),
    ("ConsumerGroupHeartbeatResponse", 1),
    ("EndTxnRequest", 5),
    ("EndTxnResponse", 5),
    ("UpdateFeaturesRequest", 2),
    ("UpdateFeaturesResponse", 2),
]


@pytest.mark.parametrize(("name", "version"), KAFKA_4_PAIRS)
@pytest.mark.parametrize("tagged_defaults", [False, True])
def test_kafka_4_messages_agree_with_kio_both_ways(name: str, version: int, tagged_defaults: bool) -> None:
    kio = peer("kio-0.6.5")
    assert kio.supports(name, version)
    cross_check(APACHE, kio, name, version, sample_plain(kio, name, version, tagged_defaults=tagged_defaults))


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """A request frame with a v2 header (flexible), written from the protocol guide, not our encoder."""
    client = b"rdkafka"
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client + b"\x00" + body
    return struct.pack(">i", len(payload)) + payload


def _response(correlation_id: int, body: bytes) -> bytes:
    payload = struct.pack(">i", correlation_id) + b"\x00" + body  # a v1 header: tags after the id
    return struct.pack(">i", len(payload)) + payload


def _decode(tmp_path: Path, chunks: list[tuple[int, str, bytes]], *extra: str) -> tuple[int, list[Any], str]:
    capture = tmp_path / "kafka4.pcap"
    write_capture(capture, [RecordedConnection(("10.4.0.1", 41000), ("10.4.0.2", 9092), chunks)])
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["decode", str(capture), *extra])
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_consumer_group_heartbeat_v1_decodes_as_kafka_4_sends_it(tmp_path: Path) -> None:
    kio = peer("kio-0.6.5")
    chunks: list[tuple[int, str, bytes]] = []
    for n in range(5):
        request = kio.encode("ConsumerGroupHeartbeatRequest", 1, sample_plain(kio, "ConsumerGroupHeartbeatRequest", 1))
        response = kio.encode(
            "ConsumerGroupHeartbeatResponse", 1, sample_plain(kio, "ConsumerGroupHeartbeatResponse", 1)
        )
        chunks += [(T0 + n * 100, "client", _request(HEARTBEAT, 1, n + 1, request))]
        chunks += [(T0 + n * 100 + 10, "broker", _response(n + 1, response))]
    code, rows, err = _decode(tmp_path, chunks)
    assert code == 0 and "5 exchanges" in err and "0 with problems" in err
    assert {(r["api"], r["api_key"], r["api_version"]) for r in rows} == {("ConsumerGroupHeartbeat", 68, 1)}
    assert all("request_error" not in r and "response_error" not in r for r in rows)
    # v1 was still marked unstable in the specs it comes from: every request says so
    assert all(any("unstable" in w for w in r["request_warnings"]) for r in rows)
    assert rows[0]["request"]["subscribed_topic_regex"] is not None  # a field v1 added
    _, selected, _ = _decode(tmp_path, chunks, "--api", "ConsumerGroupHeartbeat")
    assert len(selected) == 5


def test_a_known_api_in_an_unknown_version_still_says_which_api(tmp_path: Path) -> None:
    chunks = [
        (T0, "client", _request(HEARTBEAT, 9, 1, b"\x00" * 12)),
        (T0 + 10, "broker", _response(1, b"\x00" * 12)),
    ]
    code, rows, err = _decode(tmp_path, chunks)
    (row,) = rows
    assert code == 1 and "1 with problems" in err
    assert (row["api"], row["api_key"], row["api_version"]) == ("ConsumerGroupHeartbeat", 68, 9)
    assert "ConsumerGroupHeartbeatRequest v9 is not in" in row["request_error"]
    _, selected, err = _decode(tmp_path, chunks, "--api", "ConsumerGroupHeartbeat")
    assert len(selected) == 1 and "per api: ConsumerGroupHeartbeat 1" in err


def test_the_table_names_the_api_of_an_unknown_version(tmp_path: Path) -> None:
    capture = tmp_path / "k.pcap"
    chunks = [(T0, "client", _request(HEARTBEAT, 9, 1, b"")), (T0 + 10, "broker", _response(1, b""))]
    write_capture(capture, [RecordedConnection(("10.4.0.1", 41000), ("10.4.0.2", 9092), chunks)])
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["decode", str(capture), "--format", "table"])
    assert "ConsumerGroupHeartbeat v9" in out.getvalue().splitlines()[1]

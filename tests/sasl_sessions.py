"""SASL sessions as a client and a broker write them: a v0 handshake then raw PLAIN tokens, and
captures of them (shared by the framing, command-line and Spark tests)."""

from __future__ import annotations

import struct
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture

P = Protocol.apache()
T0 = 1_700_000_000_000_000_000
PASSWORD = b"s3cret-pw"
#: A PLAIN token: authorization id (empty), NUL, user, NUL, password; written by hand.
PLAIN_TOKEN = b"\x00alice\x00" + PASSWORD


def raw(token: bytes) -> bytes:
    """A token as it crosses the wire after a v0 handshake: a size prefix and nothing else."""
    return struct.pack(">i", len(token)) + token


def handshake(version: int, error_code: int = 0) -> list[tuple[str, bytes]]:
    request = P.message("SaslHandshakeRequest")(mechanism="PLAIN")
    response = P.message("SaslHandshakeResponse")(error_code=error_code, mechanisms=["PLAIN"])
    return [
        ("client", P.encode_request(request, version, correlation_id=1, client_id="app")),
        ("broker", P.encode_response(response, version, correlation_id=1)),
    ]


def metadata(correlation_id: int) -> list[tuple[str, bytes]]:
    request = P.message("MetadataRequest")(topics=None)
    response = P.message("MetadataResponse")(brokers=[], topics=[])
    return [
        ("client", P.encode_request(request, 1, correlation_id=correlation_id, client_id="app")),
        ("broker", P.encode_response(response, 1, correlation_id=correlation_id)),
    ]


def v0_session() -> list[tuple[str, bytes]]:
    return [*handshake(0), ("client", raw(PLAIN_TOKEN)), ("broker", raw(b"")), *metadata(2)]


def capture(tmp_path: Path, chunks: list[tuple[str, bytes]]) -> Path:
    path = tmp_path / "sasl.pcap"
    timed = [(T0 + 10 * n, side, data) for n, (side, data) in enumerate(chunks)]
    write_capture(path, [RecordedConnection(("10.0.0.5", 51000), ("10.0.0.9", 9092), timed)])
    return path

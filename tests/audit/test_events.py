"""Event extraction on frames real brokers send that a first reading gets wrong."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_epochs import Protocol
from kafka_epochs.audit.events import ANSWER, UNREADABLE, audit_events
from kafka_epochs.projection.bodies import FieldsReader

# What a broker without ApiVersions v3 sends back to a v3 request (librdkafka's first request on
# every connection), written by hand in the v0 layout: size, correlation id 7, UNSUPPORTED_VERSION,
# then (api key, min, max) for Produce 0-9, JoinGroup 0-9 and ApiVersions 0-2. JoinGroup's key
# (00 0b) is also the bytes of STALE_CONTROLLER_EPOCH, so the body is looked at for epoch errors.
V0_ANSWER = bytes.fromhex(
    "0000001c"  # size: 28 bytes follow
    "00000007"  # correlation id
    "0023"  # error code 35
    "00000003"  # three api ranges
    "000000000009"  # Produce 0-9
    "000b00000009"  # JoinGroup 0-9
    "001200000002"  # ApiVersions 0-2
)


def _frames(frame: bytes, api_key: int, version: int) -> pa.RecordBatch:
    row = {
        "capture": "c.pcap",
        "seq": 2,
        "time_ns": 1,
        "client": "10.0.0.1:5000",
        "broker": "10.0.0.2:9092",
        "correlation_id": 7,
        "direction": "response",
        "request_api_key": api_key,
        "request_api_version": version,
        "frame": frame,
    }
    return pa.RecordBatch.from_pylist([row])


def test_the_v0_answer_to_a_newer_apiversions_request_is_read_not_unreadable() -> None:
    events = audit_events(_frames(V0_ANSWER, 18, 3)).to_pylist()
    assert [e["kind"] for e in events if e["kind"] == UNREADABLE] == []
    assert all(e["kind"] != "error_response" for e in events)  # STALE_CONTROLLER_EPOCH's bytes are an api key


@pytest.mark.parametrize("reader", [None, FieldsReader(["error_code"]), FieldsReader([])])
def test_apiversions_falls_back_to_v0_whatever_reads_the_body(reader: FieldsReader | None) -> None:
    decoded = Protocol.apache().decode_response(V0_ANSWER, 18, 3, body_reader=reader)
    assert decoded.api_version == 0
    assert decoded.warnings[0] == "ApiVersions v3 answered in v0 (UNSUPPORTED_VERSION)"


def test_a_judged_answer_is_still_noted_without_decoding() -> None:
    # a Produce answer (v8) with no epoch error bytes at all: answered, nothing else
    body = bytes.fromhex("000000010001" + "61" + "00000001" + "00000000" + "0000" + "0000000000000000")
    frame = len(body).to_bytes(4, "big") + body
    assert [e["kind"] for e in audit_events(_frames(frame, 0, 8)).to_pylist()] == [ANSWER]

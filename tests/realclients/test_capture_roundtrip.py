"""Real clients' traffic, recorded by the loopback broker and written as a pcap, decodes to the
same request/response pairs that crossed each connection; `kafka-epochs decode` shows them.

The expected pairs come straight from the recorded bytes (split into frames, paired by
correlation id); the capture path adds TCP segmentation, reassembly, port auto-detection from the
ApiVersions handshake (the broker's port is ephemeral), framing and pairing.
"""

from __future__ import annotations

import importlib.util
import io
import json
import struct
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import main
from kafka_epochs.framing import FrameBuffer
from kafka_epochs.traffic import Kind, decode_capture

from .drivers import record_session

CLIENTS = ["kafka-python", "aiokafka", "confluent-kafka"]
SPARK = importlib.util.find_spec("pyarrow") is not None and importlib.util.find_spec("pyspark") is not None


def to_capture(recordings: list[Any], path: Path) -> None:
    write_capture(
        path, [RecordedConnection(r.client_addr, r.broker_addr, list(r.chunks)) for r in recordings], mss=536
    )  # small segments: frames cross packet boundaries


def expected_pairs(recordings: list[Any]) -> set[tuple[int, int, bytes, bytes | None]]:
    """(client port, correlation id, request frame, response frame) from the raw recorded bytes."""
    pairs = set()
    for rec in recordings:
        requests, responses = FrameBuffer(), FrameBuffer()
        requests.feed(rec.stream("client"))
        responses.feed(rec.stream("broker"))
        answers = {struct.unpack_from(">i", f, 4)[0]: f for f in responses}
        for frame in requests:
            correlation = struct.unpack_from(">i", frame, 8)[0]
            pairs.add((rec.client_addr[1], correlation, frame, answers.get(correlation)))
    return pairs


@pytest.mark.parametrize("client", CLIENTS)
def test_pcap_of_real_client_traffic_decodes_to_the_same_pairs(
    apache_protocol: Any, client: str, tmp_path: Path
) -> None:
    recordings = record_session(apache_protocol, client, codec="lz4")
    path = tmp_path / f"{client}.pcap"
    to_capture(recordings, path)
    got = set()
    # the default profile, no spec directory: what a user who pip-installed the package gets
    for exchange in decode_capture(path, Protocol.auto()):  # no ports: learnt from ApiVersions
        assert exchange.kind in (Kind.PAIR, Kind.REQUEST), exchange.problem
        request, response = exchange.request, exchange.response
        assert request is not None and request.error is None, request
        assert response is None or response.error is None, response
        assert exchange.flow is not None
        got.add(
            (
                exchange.flow.client.port,
                request.correlation_id,
                request.frame,
                response.frame if response is not None else None,
            )
        )
    assert got == expected_pairs(recordings)
    assert any(frame[4:6] == b"\x00\x00" for _, _, frame, _ in got)  # Produce requests are in there
    # and Protocol.apache() alone reads every recorded frame, request and response
    for _, _, request_frame, response_frame in got:
        request = apache_protocol.decode_request(request_frame)
        if response_frame is not None:
            response = apache_protocol.decode_response(response_frame, request.api_key, request.api_version)
            assert response.correlation_id == request.correlation_id


def test_decode_command_on_a_real_client_capture(apache_protocol: Any, tmp_path: Path) -> None:
    recordings = record_session(apache_protocol, "confluent-kafka", codec="zstd")
    path = tmp_path / "rdkafka.pcap"
    to_capture(recordings, path)
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["decode", str(path), "--records", "--quiet"])  # no --specs, no --protocol
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    expected = expected_pairs(recordings)
    assert {(int(r["client"].rsplit(":", 1)[1]), r["correlation_id"]) for r in rows} == {
        (port, cid) for port, cid, _, _ in expected
    }
    produced = [r for r in rows if r["api"] == "Produce"]
    assert produced and code in (0, 1)  # 1 only for a consumer's last, unanswered Fetch
    assert all(r["kind"] == "pair" or r["api"] == "Fetch" for r in rows)
    batches = [
        b
        for r in produced
        for t in r["request"]["topic_data"]
        for p in t["partition_data"]
        for b in p["records"]["batches"]
    ]
    assert batches and {b["compression"] for b in batches} == {"ZSTD"}
    assert {r["request_profile"] for r in rows} == {"apache"}


def spark_rows_without_errors(path: Path) -> int:
    """What spark-decode runs on each batch (the capture source's rows, then decode_batch, defaults
    only): every row must decode; returns how many there were (0 when Spark is not installed)."""
    try:
        from kafka_epochs.frame_rows import capture_frames, to_batches
        from kafka_epochs.spark.batch import decode_batch
    except ImportError:
        return 0
    rows = 0
    for batch in to_batches(capture_frames(path)):
        decoded = decode_batch(
            batch.column("frame"),
            direction=batch.column("direction"),
            request_api_key=batch.column("request_api_key"),
            request_api_version=batch.column("request_api_version"),
            sasl_mechanism=batch.column("sasl_mechanism"),
        ).to_pylist()
        assert [(d["api_name"], d["error"]) for d in decoded if d["error"]] == []
        rows += len(decoded)
    return rows


@pytest.mark.parametrize("client", CLIENTS)
def test_spark_batch_decoder_reads_every_frame_of_a_real_client_capture(
    apache_protocol: Any, client: str, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark")
    path = tmp_path / f"{client}.pcap"
    to_capture(record_session(apache_protocol, client, codec="gzip"), path)
    assert spark_rows_without_errors(path) > 10
    # read in byte ranges, a connection per share, as pcap and as pcapng: the same rows
    from capture_mutations import as_pcapng
    from split_captures import split_rows

    from kafka_epochs.frame_rows import capture_frames

    as_ng = tmp_path / f"{client}.pcapng"
    as_ng.write_bytes(as_pcapng(path.read_bytes()))
    for capture in (path, as_ng):
        rows, learnt = split_rows(capture, 1500, shares=0)
        assert rows == list(capture_frames(str(capture))) and learnt  # the broker's port is ephemeral

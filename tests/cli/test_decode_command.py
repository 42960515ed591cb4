"""`kafka-epochs decode`: captures of traffic encoded by us (real clients: tests/realclients)."""

from __future__ import annotations

import gzip
import io
import json
import uuid
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import main
from kafka_epochs.records import Compression, Record, decode_records, encode_batch
from kafka_epochs.samples import SAMPLE_CAPTURE

P = Protocol.bundled()
ApiVersionsRequest, ApiVersionsResponse = P.message("ApiVersionsRequest"), P.message("ApiVersionsResponse")
ProduceRequest, ProduceResponse = P.message("ProduceRequest"), P.message("ProduceResponse")
MetadataRequest, MetadataResponse = P.message("MetadataRequest"), P.message("MetadataResponse")
T0 = 1_700_000_000_000_000_000
TOPIC_ID = uuid.UUID(int=7)


def produce(acks: int, epoch: int = -1) -> object:
    batch = encode_batch(
        [Record(key=b"k", value=b"v", headers=[("h", b"1"), ("h", b"2")])], compression=Compression.GZIP
    )
    return ProduceRequest(
        acks=acks,
        timeout_ms=100,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="orders",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, current_leader_epoch=epoch, records=batch)
                ],
            )
        ],
    )


def fenced() -> object:
    return ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name="orders", partition_responses=[ProduceResponse.PartitionProduceResponse(index=0, error_code=74)]
            )
        ]
    )


def conversation(*, clean: bool) -> RecordedConnection:
    chunks = [
        (T0, "client", P.encode_request(ApiVersionsRequest(client_software_name="t"), 3, correlation_id=1)),
        (T0 + 10, "broker", P.encode_response(ApiVersionsResponse(), 3, correlation_id=1)),
        (T0 + 20, "client", P.encode_request(MetadataRequest(topics=None), 12, correlation_id=2)),
        (T0 + 30, "client", P.encode_request(produce(1, epoch=3), 12, correlation_id=3)),  # pipelined
        (
            T0 + 40,
            "broker",
            P.encode_response(
                MetadataResponse(topics=[MetadataResponse.MetadataResponseTopic(name="orders", topic_id=TOPIC_ID)]),
                12,
                correlation_id=2,
            ),
        ),
        (T0 + 50, "broker", P.encode_response(fenced(), 12, correlation_id=3)),
        (T0 + 60, "client", P.encode_request(produce(0), 9, correlation_id=4)),  # acks=0: no response
    ]
    if not clean:
        chunks += [
            (T0 + 70, "broker", P.encode_response(ApiVersionsResponse(), 3, correlation_id=999)),  # unmatched
            (T0 + 80, "client", P.encode_request(MetadataRequest(topics=None), 12, correlation_id=5)),  # unanswered
        ]
    return RecordedConnection(("10.1.1.1", 40000), ("10.1.1.2", 9092), chunks)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def clean_capture(tmp_path: Path) -> Path:
    path = tmp_path / "clean.pcap"
    write_capture(path, [conversation(clean=True)], mss=100)  # small segments: frames span packets
    return path


def test_pairs_in_order_with_headers_bodies_and_named_errors(clean_capture: Path) -> None:
    code, out, err = run("decode", str(clean_capture))
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["kind"], r["api"], r["correlation_id"]) for r in rows] == [
        ("pair", "ApiVersions", 1),
        ("pair", "Metadata", 2),
        ("pair", "Produce", 3),
        ("request", "Produce", 4),
    ]
    metadata = rows[1]
    assert metadata["client"] == "10.1.1.1:40000" and metadata["broker"] == "10.1.1.2:9092"
    assert metadata["response"]["topics"][0]["topic_id"] == "AAAAAAAAAAAAAAAAAAAABw"
    produce_row = rows[2]
    assert produce_row["api_version"] == 12
    assert produce_row["request"]["topic_data"][0]["partition_data"][0]["current_leader_epoch"] == 3
    assert produce_row["errors"] == [
        {"path": "responses[0].partition_responses[0].error_code", "code": 74, "name": "FENCED_LEADER_EPOCH"}
    ]
    assert produce_row["time"] == "2023-11-14T22:13:20.000000Z" and produce_row["latency_ms"] == 0.0
    assert "4 exchanges: 3 pairs" in err and "per api: ApiVersions 1, Metadata 1, Produce 2" in err


def test_records_decoded_on_request(clean_capture: Path) -> None:
    _, out, _ = run("decode", str(clean_capture), "--records", "--api", "Produce")
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["api"] for r in rows} == {"Produce"}
    records = rows[0]["request"]["topic_data"][0]["partition_data"][0]["records"]
    (batch,) = records["batches"]
    assert batch["compression"] == "GZIP"
    assert batch["records"][0]["key"] == "aw==" and batch["records"][0]["headers"] == [["h", "MQ=="], ["h", "Mg=="]]
    # without --records the field stays the batch bytes, base64
    _, plain, _ = run("decode", str(clean_capture), "--api", "ProduceRequest")
    raw = json.loads(plain.splitlines()[0])["request"]["topic_data"][0]["partition_data"][0]["records"]
    import base64

    assert decode_records(base64.b64decode(raw)).entries[0].records[0].value == b"v"


def test_unpaired_frames_are_reported_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "messy.pcap"
    write_capture(path, [conversation(clean=False)])
    code, out, _ = run("decode", str(path))
    assert code == 1
    rows = [json.loads(line) for line in out.splitlines()]
    unmatched = [r for r in rows if r["kind"] == "response"]
    unanswered = [r for r in rows if r["kind"] == "request" and r["correlation_id"] == 5]
    assert len(unmatched) == 1 and "no request with correlation id 999" in unmatched[0]["response_error"]
    assert unanswered and unanswered[0]["problem"] == "no response in the capture"


def test_table_format(clean_capture: Path) -> None:
    _, out, _ = run("decode", str(clean_capture), "--format", "table")
    header, *lines = out.splitlines()
    assert header.split() == ["TIME", "CLIENT", "->", "BROKER", "API", "CORR_ID", "STATUS"]
    assert len(lines) == 4
    assert "10.1.1.1:40000 -> 10.1.1.2:9092" in lines[2] and "Produce v12" in lines[2]
    assert lines[2].rstrip().endswith("FENCED_LEADER_EPOCH") and lines[0].rstrip().endswith("ok")
    # each column starts where its title does
    assert [header.index(t) for t in ("CLIENT", "API")] == [lines[0].index("10.1.1.1"), lines[0].index("ApiVersions")]


def test_gzipped_capture_and_other_port(tmp_path: Path) -> None:
    conn = conversation(clean=True)
    conn.broker = ("10.1.1.2", 19092)
    raw = io.BytesIO()
    write_capture(raw, [conn])
    path = tmp_path / "c.pcap.gz"
    path.write_bytes(gzip.compress(raw.getvalue()))
    code, out, _ = run("decode", str(path), "--port", "19092")
    assert code == 0 and len(out.splitlines()) == 4


def test_several_spec_sets_first_defining_wins(clean_capture: Path, reference_dir: Path) -> None:
    # Apache 3.9 has no Produce v12; the bundled specs (listed second) do, and decode it.
    code, out, _ = run("decode", str(clean_capture), "--specs", str(reference_dir), "--specs", "messages")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert rows[2]["api_version"] == 12 and "response" in rows[2]


@pytest.mark.parametrize("content", [b"", b"not a capture at all"])
def test_unreadable_file_exit_2(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    code, out, err = run("decode", str(path))
    assert code == 2 and out == ""
    assert err.startswith("kafka-epochs: ") and len(err.strip().splitlines()) == 1


def test_missing_file_and_bad_usage(tmp_path: Path) -> None:
    code, _, err = run("decode", str(tmp_path / "nope.pcap"))
    assert code == 2 and "no such file" in err
    with pytest.raises(SystemExit) as info, redirect_stderr(io.StringIO()):
        main(["decode", "x.pcap", "--format", "xml"])
    assert info.value.code == 2


def test_bundled_sample_capture_decodes_cleanly() -> None:
    """The README's main job: the sample (real clients plus a controller and a KIP-359 producer)."""
    code, out, err = run("decode", str(SAMPLE_CAPTURE))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    apis = {r["api"] for r in rows}
    assert {"ApiVersions", "Metadata", "Produce", "Fetch", "ListOffsets", "LeaderAndIsr", "StopReplica"} <= apis
    assert all(r["kind"] == "pair" for r in rows)
    fenced = [
        (r["api"], r["api_version"]) for r in rows if any(e["name"] == "FENCED_LEADER_EPOCH" for e in r["errors"])
    ]
    assert sorted(fenced) == [("Produce", 12), ("StopReplica", 3)]
    assert "0 with problems" in err


def test_error_codes_from_objects_and_from_dicts_agree() -> None:
    from kafka_epochs.traffic import error_codes

    body = fenced()
    assert (
        error_codes(body)
        == error_codes(body.to_dict())
        == [  # type: ignore[attr-defined]
            {"path": "responses[0].partition_responses[0].error_code", "code": 74, "name": "FENCED_LEADER_EPOCH"}
        ]
    )


CLIENTS_SAMPLE = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples" / "clients.pcap"


def test_the_real_clients_sample_decodes_whole_with_no_flags() -> None:
    """The README's second example: real clients' traffic, the default profile, no spec directory."""
    code, out, err = run("decode", str(CLIENTS_SAMPLE))
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) > 40 and all(r["kind"] == "pair" for r in rows)
    assert not any("request_error" in r or "response_error" in r for r in rows)
    versions = {(r["api"], r["api_version"]) for r in rows}
    assert ("Metadata", 13) in versions  # librdkafka's and kafka-python's: a Kafka 4.x version
    assert ("Metadata", 5) in versions  # aiokafka's, non-flexible
    assert "0 with problems" in err


def test_a_closed_pipe_ends_quietly() -> None:
    import subprocess
    import sys

    command = f"set -o pipefail; {sys.executable} -m kafka_epochs.cli decode {CLIENTS_SAMPLE} | head -c 10"
    head = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60, check=False)
    assert head.returncode == 0 and len(head.stdout) == 10
    assert "Broken pipe" not in head.stderr and "Traceback" not in head.stderr

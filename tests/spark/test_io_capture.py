"""The ``kafka-capture`` data source: one row per frame, equal to the single-process decoder's view."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from epoch_story import T0, write_damaged, write_sample

from kafka_epochs import Protocol
from kafka_epochs.frame_rows import capture_frames, expand_paths, flow_id
from kafka_epochs.spark.datasource import SCHEMA_DDL, register
from kafka_epochs.traffic import Kind, decode_capture

SAMPLE = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples" / "sample.pcap"
P = Protocol.bundled()


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("captures")
    (root / "not-a-capture.pcap").write_bytes(b"this is no pcap file at all")
    return {
        "story": write_sample(root / "story.pcap"),
        "damaged": write_damaged(root / "damaged.pcap"),
        "garbage": root / "not-a-capture.pcap",
    }


def single_process(path: Path) -> tuple[list[tuple[Any, ...]], list[str]]:
    """What ``decode_capture`` sees: one key per frame, and the capture problems' texts."""
    frames: list[tuple[Any, ...]] = []
    problems: list[str] = []
    for exchange in decode_capture(path, Protocol.auto()):
        if exchange.kind in (Kind.GAP, Kind.PACKET_ERROR, Kind.STREAM_LOST):
            problems.append(exchange.problem or "")
        for label, event in (("request", exchange.request), ("response", exchange.response)):
            if event is None:
                continue
            flow = exchange.flow
            request = event if label == "request" else event.request  # type: ignore[union-attr]
            body = None if event.decoded is None else json.dumps(event.decoded.to_dict()["body"], separators=(",", ":"))
            frames.append(
                (
                    str(flow.client) if flow else None,
                    str(flow.broker) if flow else None,
                    label,
                    event.stream_offset,
                    event.timestamp_ns,
                    event.correlation_id,
                    None if request is None else request.api_key,
                    None if request is None else request.api_version,
                    body,
                    event.error is None,
                    sorted(event.warnings),
                )
            )
    return sorted(frames, key=repr), sorted(problems)


def spark_view(spark: Any, path: Path, **options: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    from kafka_epochs.spark.api import decode_frames

    register(spark)
    reader = spark.read.format("kafka-capture")
    for key, value in options.items():
        reader = reader.option(key, value)
    frames = reader.load(str(path))
    keep = [c for c in frames.columns if c not in ("frame", "direction", "correlation_id")]
    rows = decode_frames(
        frames,
        keep=keep,
        direction_col="direction",
        request_api_key_col="request_api_key",
        request_api_version_col="request_api_version",
    ).collect()
    decoded = [
        (
            r.client,
            r.broker,
            r.direction,
            r.stream_offset,
            r.time_ns,
            r.correlation_id,
            r.api_key,
            r.api_version,
            r.body_json,
            r.error is None,
            sorted(r.warnings or []),
        )
        for r in rows
        if r.capture_error is None
    ]
    return sorted(decoded, key=repr), sorted(r.capture_error for r in rows if r.capture_error is not None)


def test_rows_pair_responses_with_their_requests_without_spark(captures: dict[str, Path]) -> None:
    rows = list(capture_frames(captures["story"]))
    assert [r.seq for r in rows] == sorted(r.seq for r in rows)
    assert all(r.capture_error is None and r.frame is not None for r in rows)
    requests = {
        (r.flow_id, r.correlation_id): (r.request_api_key, r.request_api_version)
        for r in rows
        if r.direction == "request"
    }
    responses = [r for r in rows if r.direction == "response"]
    assert responses and all(
        requests[(r.flow_id, r.correlation_id)] == (r.request_api_key, r.request_api_version) for r in responses
    )
    # the acks=0 Produce (v9, correlation 6 of the client) has no response and waits for none
    assert [(r.request_api_key, r.request_api_version) for r in rows if r.correlation_id == 6] == [(0, 9)]
    first = rows[0]
    assert (first.time_ns, first.client, first.broker, first.stream_offset) == (
        T0,
        "10.0.0.1:50001",
        "10.0.0.10:9092",
        0,
    )
    assert first.frame is not None and int.from_bytes(first.frame[:4], "big") == len(first.frame) - 4


def test_flow_id_is_stable_and_buckets_partition_the_rows(captures: dict[str, Path]) -> None:
    whole = list(capture_frames(captures["story"]))
    buckets = [list(capture_frames(captures["story"], bucket=b, buckets=3)) for b in range(3)]
    assert sorted(r for part in buckets for r in part) == sorted(whole)
    assert all(len({r.flow_id % 3 for r in part}) <= 1 for part in buckets)
    assert flow_id(next(iter(_flows(captures["story"])))) == whole[0].flow_id


def _flows(path: Path) -> list[Any]:
    return [e.flow for e in decode_capture(path, Protocol.auto()) if e.flow is not None]


@pytest.mark.parametrize("name", ["story", "damaged", "lead-sample"])
def test_spark_rows_equal_the_single_process_decoder(spark: Any, captures: dict[str, Path], name: str) -> None:
    path = SAMPLE if name == "lead-sample" else captures[name]
    if not path.is_file():
        pytest.skip(f"{SAMPLE} is not there yet")
    expected_frames, expected_problems = single_process(path)
    frames, problems = spark_view(spark, path)
    assert frames == expected_frames
    assert problems == expected_problems
    if name == "damaged":
        assert any("bytes missing" in p for p in problems) and any(p.startswith("packet ") for p in problems)


def test_flow_buckets_in_spark_give_the_same_rows(spark: Any, captures: dict[str, Path]) -> None:
    register(spark)
    one = spark.read.format("kafka-capture").load(str(captures["story"]))
    three = spark.read.format("kafka-capture").option("flowBuckets", "3").load(str(captures["story"]))
    assert three.rdd.getNumPartitions() == 3
    assert sorted(three.collect()) == sorted(one.collect())
    assert spark.createDataFrame([], SCHEMA_DDL).schema == one.schema


def test_bad_captures_become_rows_and_the_job_succeeds(spark: Any, captures: dict[str, Path]) -> None:
    register(spark)
    df = spark.read.format("kafka-capture").load([str(p) for p in captures.values()])
    assert df.rdd.getNumPartitions() == 3  # one per file
    rows = df.collect()
    garbage = [r for r in rows if r.capture.endswith("not-a-capture.pcap")]
    assert len(garbage) == 1 and garbage[0].frame is None
    assert garbage[0].capture_error.startswith("cannot read ") and "neither pcap nor pcapng" in garbage[0].capture_error
    damaged = [r for r in rows if r.capture.endswith("damaged.pcap") and r.capture_error is not None]
    assert {r.frame for r in damaged} == {None} and len(damaged) == 2


def test_paths_directories_and_globs(captures: dict[str, Path]) -> None:
    root = captures["story"].parent
    assert expand_paths([str(root)]) == sorted(str(p.resolve()) for p in captures.values())
    assert expand_paths([str(root / "s*.pcap"), str(captures["story"])]) == [str(captures["story"].resolve())]
    with pytest.raises(FileNotFoundError, match="no capture files"):
        expand_paths([str(root / "nothing-*.pcap")])


def test_damaged_real_captures_keep_their_other_rows_in_spark(spark: Any, tmp_path: Path) -> None:
    # a pcapng time past any calendar, and a gzip bomb: a row each says so, the rest are read
    from capture_mutations import header_end, real_captures

    captures = real_captures()
    seconds = bytearray(captures["clients-seconds.pcapng"])
    seconds[header_end(bytes(seconds)) + 15] ^= 0x80  # the first packet's timestamp, top bit
    (tmp_path / "late.pcapng").write_bytes(bytes(seconds))
    (tmp_path / "clean.pcapng").write_bytes(captures["clients-seconds.pcapng"])
    (tmp_path / "bomb.pcap.gz").write_bytes(gzip.compress(captures["sample.pcap"][:24] + bytes(64 << 20), 6))
    register(spark)
    rows = spark.read.format("kafka-capture").load(str(tmp_path)).collect()
    late = [r for r in rows if r.capture.endswith("late.pcapng")]
    clean = [r for r in rows if r.capture.endswith("clean.pcapng")]
    errors = [r.capture_error for r in late if r.capture_error is not None]
    assert len(errors) == 1 and "outside the years 1677-2262" in errors[0]
    assert len(late) - 1 == len(clean) > 20  # the first packet is a SYN: every frame is still there
    bomb = [r.capture_error for r in rows if r.capture.endswith("bomb.pcap.gz") and r.capture_error is not None]
    assert bomb and "decompression bomb" in bomb[-1]


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        ({"ports": "9092,70000"}, "ports takes TCP ports (1 to 65535), not 70000"),
        ({"ports": "0"}, "ports takes TCP ports (1 to 65535), not 0"),
        ({"ports": "9092;9093"}, "ports takes whole numbers, not '9092;9093'"),
        ({"flowbuckets": "three"}, "flowBuckets takes whole numbers, not 'three'"),
        ({"flowbuckets": "0"}, "flowBuckets must be at least 1, not 0"),
    ],
)
def test_options_no_read_could_use_are_refused_by_name(options: dict[str, str], refusal: str) -> None:
    """The reader is made on the driver, before any task: a mistyped option is said there, by name."""
    from kafka_epochs.spark.datasource import KafkaCaptureReader

    with pytest.raises(ValueError, match=re.escape(f"kafka-capture: {refusal}")):
        KafkaCaptureReader({"path": "x.pcap", **options})
    ports = KafkaCaptureReader({"path": "x.pcap", "ports": "9092, 19092 1"}).ports
    assert ports == [9092, 19092, 1]

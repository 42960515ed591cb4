"""A plain table of frames (Parquet with a binary column) decoded by Spark, bad rows included."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import pyarrow as pa
import pyarrow.parquet as pq
from epoch_story import fetch, frame_table_rows, metadata_response, produce

from kafka_epochs import Protocol

P = Protocol.bundled()


def generated_rows(count: int, seed: int = 5) -> list[dict[str, Any]]:
    """The story's frames, then ``count`` more requests and responses of varied contents."""
    rng = random.Random(seed)
    rows = frame_table_rows()
    for i in range(count):
        choice = rng.randrange(3)
        if choice == 0:
            frame = P.encode_request(produce(rng.randrange(8), rng.randrange(10)), 12, correlation_id=i)
            rows.append({"frame": frame, "direction": "request", "key": 0, "version": 12})
        elif choice == 1:
            version = rng.choice([11, 12, 13])
            frame = P.encode_request(fetch(rng.randrange(8), rng.randrange(10)), version, correlation_id=i)
            rows.append({"frame": frame, "direction": "request", "key": 1, "version": version})
        else:
            epochs = {p: rng.randrange(20) for p in range(rng.randrange(1, 6))}
            frame = P.encode_response(metadata_response(epochs), 12, correlation_id=i)
            rows.append({"frame": frame, "direction": "response", "key": 3, "version": 12})
    return rows


def bad_rows() -> list[dict[str, Any]]:
    good = P.encode_request(produce(0, 1), 12, correlation_id=1)
    unknown_api = b"\x00\x00\x00\x0c\x00\x0a\x00\x04\x00\x00\x00\x07\xff\xff\x00\x00"  # FindCoordinator: not bundled
    unknown_version = good[:6] + (99).to_bytes(2, "big") + good[8:]
    return [
        {"frame": good[: len(good) // 2], "direction": "request", "key": 0, "version": 12, "why": "truncated"},
        {
            "frame": random.Random(1).randbytes(64),
            "direction": "request",
            "key": None,
            "version": None,
            "why": "garbage",
        },
        {"frame": unknown_api, "direction": "request", "key": 10, "version": 4, "why": "unknown api"},
        {"frame": unknown_version, "direction": "request", "key": 0, "version": 99, "why": "unknown version"},
        {"frame": b"", "direction": "request", "key": None, "version": None, "why": "empty"},
        {"frame": None, "direction": "request", "key": None, "version": None, "why": "null"},
        {
            "frame": P.encode_response(metadata_response({0: 1}), 12, correlation_id=3),
            "direction": "response",
            "key": None,
            "version": None,
            "why": "response without its request",
        },
        {"frame": good, "direction": "sideways", "key": 0, "version": 12, "why": "bad direction"},
    ]


def expected(row: dict[str, Any]) -> tuple[str | None, str | None]:
    """(api name, body JSON) as the single-process decoder gives them; (None, None) if it cannot."""
    try:
        if row["direction"] == "request":
            decoded = Protocol.auto().decode_request(row["frame"])
        elif row["direction"] == "response":
            decoded = Protocol.auto().decode_response(row["frame"], row["key"], row["version"])
        else:
            return None, None
    except Exception:
        return None, None
    name = type(decoded.body).__name__.removesuffix("Request").removesuffix("Response")
    return name, json.dumps(decoded.to_dict()["body"], separators=(",", ":"))


def write_table(path: Path, rows: list[dict[str, Any]]) -> Path:
    table = pa.table(
        {
            "row": pa.array(range(len(rows)), pa.int64()),
            "frame": pa.array([r["frame"] for r in rows], pa.binary()),
            "direction": pa.array([r["direction"] for r in rows], pa.string()),
            "key": pa.array([r["key"] for r in rows], pa.int32()),
            "version": pa.array([r["version"] for r in rows], pa.int32()),
        }
    )
    pq.write_table(table, path, row_group_size=64)  # several row groups: several Spark batches
    return path


def decoded(spark: Any, path: Path) -> list[Any]:
    from kafka_epochs.spark.api import decode_frames

    df = spark.read.parquet(str(path)).repartition(3)
    out = decode_frames(
        df, keep=["row"], direction_col="direction", request_api_key_col="key", request_api_version_col="version"
    )
    return sorted(out.collect(), key=lambda r: r.row)


def test_generated_table_equals_the_single_process_decoder(spark: Any, tmp_path: Path) -> None:
    rows = generated_rows(300)
    out = decoded(spark, write_table(tmp_path / "frames.parquet", rows))
    assert [r.row for r in out] == list(range(len(rows)))
    for row, got in zip(rows, out, strict=True):
        assert (got.api_name, got.body_json) == expected(row)
        assert got.error is None


def test_bad_rows_carry_their_error_and_the_job_succeeds(spark: Any, tmp_path: Path) -> None:
    good = generated_rows(40, seed=9)
    bad = bad_rows()
    mixed = list(good)
    for i, row in enumerate(bad):
        mixed.insert(5 * i + 3, row)
    out = decoded(spark, write_table(tmp_path / "mixed.parquet", mixed))
    assert len(out) == len(mixed)  # rows out = rows in
    for row, got in zip(mixed, out, strict=True):
        if "why" in row:
            assert got.error, f"{row['why']}: no error"
            assert got.body_json is None
        else:
            assert got.error is None and (got.api_name, got.body_json) == expected(row)
    unknown = next(got for row, got in zip(mixed, out, strict=True) if row.get("why") == "unknown api")
    assert unknown.api_key == 10 and unknown.correlation_id == 7

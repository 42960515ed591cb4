"""Raw SASL tokens through the Spark path: marked by the capture source, named (not decoded) by the batch decoder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from sasl_sessions import PASSWORD, capture, v0_session

from kafka_epochs.frame_rows import capture_frames, to_batches
from kafka_epochs.spark.batch import decode_batch


@pytest.fixture(scope="module")
def sasl_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return capture(tmp_path_factory.mktemp("sasl"), v0_session())


def test_capture_source_marks_tokens_and_keeps_pairing(sasl_capture: Path) -> None:
    rows = list(capture_frames(sasl_capture))
    assert [(r.direction, r.request_api_key, r.sasl_mechanism) for r in rows] == [
        ("request", 17, None),
        ("response", 17, None),  # the v0 handshake
        ("request", None, "PLAIN"),
        ("response", None, "PLAIN"),  # the raw token and its (empty) answer
        ("request", 3, None),
        ("response", 3, None),  # Kafka requests again
    ]


def test_batch_decoder_names_tokens_without_errors_or_secrets(sasl_capture: Path) -> None:
    (batch,) = to_batches(capture_frames(sasl_capture))
    decoded = decode_batch(
        batch.column("frame"),
        direction=batch.column("direction"),
        request_api_key=batch.column("request_api_key"),
        request_api_version=batch.column("request_api_version"),
        sasl_mechanism=batch.column("sasl_mechanism"),
    ).to_pylist()
    assert [d["error"] for d in decoded] == [None] * 6
    assert [d["api_name"] for d in decoded] == ["SaslHandshake"] * 2 + ["SaslTokens"] * 2 + ["Metadata"] * 2
    token = decoded[2]
    assert token["body_json"] is None and token["api_key"] is None and token["profile"] is None
    assert "raw SASL PLAIN token of 16 bytes" in token["warnings"][0]
    assert not any(PASSWORD.decode() in str(d) for d in decoded)
    # without the mark, the same rows are what they look like: not Kafka requests
    unmarked = decode_batch(
        batch.column("frame"),
        direction=batch.column("direction"),
        request_api_key=batch.column("request_api_key"),
        request_api_version=batch.column("request_api_version"),
    ).to_pylist()
    assert unmarked[2]["error"] is not None


def test_decode_frames_on_spark_uses_the_mark(spark: Any, sasl_capture: Path) -> None:
    from kafka_epochs.spark import decode_frames, register

    register(spark)
    frames = spark.read.format("kafka-capture").load(str(sasl_capture))
    decoded = (
        decode_frames(
            frames,
            direction_col="direction",
            request_api_key_col="request_api_key",
            request_api_version_col="request_api_version",
        )
        .orderBy("seq")
        .collect()
    )
    assert [r["error"] for r in decoded] == [None] * 6
    assert [r["api_name"] for r in decoded][2:4] == ["SaslTokens", "SaslTokens"]

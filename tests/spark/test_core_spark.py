"""The Spark adapters on a real local session: same rows as the single-process decoder, bad rows kept."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import functions as F

from kafka_epochs.protocol import Protocol
from kafka_epochs.spark import api
from kafka_epochs.spark.api import decode_api, decode_frame, decode_frames, with_variant
from kafka_epochs.spark.batch import DECODED_SCHEMA
from kafka_epochs.spark.schema import spark_type_for

COLUMNS = "id long, direction string, frame binary, request_api_key short, request_api_version short"
DECODED = DECODED_SCHEMA.names


def frames_df(spark: Any, rows: list[dict[str, Any]]) -> Any:
    data = [(r["id"], r["direction"], r["frame"], r["request_api_key"], r["request_api_version"]) for r in rows]
    # a few partitions, so batches reach both worker processes
    return spark.createDataFrame(data, COLUMNS).repartition(3)


def as_dicts(df: Any) -> dict[int, dict[str, Any]]:
    return {row["id"]: row.asDict(recursive=True) for row in df.collect()}


def check_against_reference(rows: list[dict[str, Any]], decoded: dict[int, dict[str, Any]], reference: Any) -> None:
    assert sorted(decoded) == [r["id"] for r in rows]  # rows out = rows in
    for row in rows:
        got = {name: decoded[row["id"]][name] for name in DECODED}
        expected = reference.row(row)
        assert reference.same(expected, got), (row["id"], row.get("why"), expected["error"], got["error"])


PAIRING = {
    "direction_col": "direction",
    "request_api_key_col": "request_api_key",
    "request_api_version_col": "request_api_version",
}


def test_decode_frames_equals_the_single_process_decoder(
    spark: Any, frame_rows: list[dict[str, Any]], reference: Any
) -> None:
    decoded = decode_frames(frames_df(spark, frame_rows), keep=["id"], **PAIRING)
    assert decoded.columns == ["id", *DECODED]
    check_against_reference(frame_rows, as_dicts(decoded), reference)


def test_bad_rows_never_fail_the_job(spark: Any, bad_rows: list[dict[str, Any]], reference: Any) -> None:
    decoded = as_dicts(decode_frames(frames_df(spark, bad_rows), keep=["id"], **PAIRING))
    check_against_reference(bad_rows, decoded, reference)
    broken = [
        r["id"]
        for r in bad_rows
        if r.get("why") not in (None, "trailing bytes", "unknown trailing bytes", "client id not UTF-8")
    ]
    assert len(broken) >= 10 and all(decoded[i]["error"] and decoded[i]["body_json"] is None for i in broken)
    (doubtful,) = [decoded[r["id"]] for r in bad_rows if r.get("why") == "unknown trailing bytes"]
    assert doubtful["error"] and doubtful["body_json"] is not None  # a problem row keeps what was read


def test_decode_frame_column_expression(spark: Any, bad_rows: list[dict[str, Any]], reference: Any) -> None:
    df = frames_df(spark, bad_rows)
    decoded = df.select("id", decode_frame("frame", "direction", "request_api_key", "request_api_version").alias("d"))
    assert decoded.schema["d"].dataType.names == DECODED
    check_against_reference(bad_rows, as_dicts(decoded.select("id", "d.*")), reference)


def test_the_pandas_udf_fallback_gives_the_same_rows(
    spark: Any, bad_rows: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, reference: Any
) -> None:
    """Where PySpark predates @arrow_udf (4.0), decode_frame runs as a @pandas_udf over the same decoder."""
    monkeypatch.delattr(api.F, "arrow_udf", raising=False)
    df = frames_df(spark, bad_rows)
    decoded = df.select("id", decode_frame("frame", "direction", "request_api_key", "request_api_version").alias("d"))
    check_against_reference(bad_rows, as_dicts(decoded.select("id", "d.*")), reference)


def test_requests_only_and_kept_columns(spark: Any, frame_rows: list[dict[str, Any]]) -> None:
    requests = [r for r in frame_rows if r["direction"] == "request"][:40]
    df = frames_df(spark, requests).withColumn("source", F.lit("capture-1"))
    decoded = decode_frames(df)  # keep: every column but the frame, and the decoded "direction" replaces the input's
    assert decoded.columns == ["id", "request_api_key", "request_api_version", "source", *DECODED]
    with pytest.raises(ValueError, match="clash"):
        decode_frames(df, keep=["id", "direction"])  # "direction" is also a decoded column
    decoded = decode_frames(df, keep=["id", "source"])
    assert decoded.where("error is not null").count() == 0
    assert {r["source"] for r in decoded.select("source").collect()} == {"capture-1"}
    with pytest.raises(ValueError, match="binary"):
        decode_frames(df.withColumn("frame", F.col("frame").cast("string")))


def test_decode_api_gives_columns_plain_sql_can_explode(spark: Any, frame_rows: list[dict[str, Any]]) -> None:
    df = frames_df(spark, frame_rows)
    stop = decode_api(df, "StopReplicaRequest", keep=["id"])
    assert stop.schema["body"].dataType == spark_type_for("StopReplicaRequest")
    stop.createOrReplaceTempView("stop_replica")
    per_version = dict(spark.sql("select api_version, count(*) from stop_replica group by api_version").collect())
    assert per_version == {v: 2 for v in range(5)}  # only StopReplica rows, every version
    # KIP-570 leader epochs (v3+): explode the topic states, then their partitions
    exploded = spark.sql("""
        select id, api_version, t.topic_name, t.topic_id, p.partition_index, p.leader_epoch
        from stop_replica lateral view explode(body.topic_states) as t lateral view explode(t.partition_states) as p
        where api_version >= 3""").collect()
    protocol = Protocol.bundled()
    frames = {r["id"]: r["frame"] for r in frame_rows if r["direction"] == "request"}
    expected = [
        (row_id, d.api_version, t.topic_name, p.partition_index, p.leader_epoch)
        for row_id, d in ((i, protocol.decode_request(f)) for i, f in frames.items())
        if type(d.body).__name__ == "StopReplicaRequest" and d.api_version >= 3
        for t in d.body.topic_states
        for p in t.partition_states
    ]
    got = [(r["id"], r["api_version"], r["topic_name"], r["partition_index"], r["leader_epoch"]) for r in exploded]
    assert sorted(got) == sorted(expected)
    # topic ids exist from v4 only: null before, Kafka's base64url text after
    assert all((r["topic_id"] is None) == (r["api_version"] < 4) for r in exploded)
    # unknown tagged fields arrive as a map column (the generated frames carry some)
    tagged = spark.sql("""
        select count(*) from stop_replica
        where body._unknown_tags is not null or exists(body.topic_states, t -> t._unknown_tags is not null)""")
    bodies = [protocol.decode_request(f).body for f in frames.values()]
    expected_tagged = sum(
        1
        for b in bodies
        if type(b).__name__ == "StopReplicaRequest"
        and (b._unknown_tags or any(t._unknown_tags for t in b.topic_states))
    )
    assert expected_tagged > 0 and tagged.first()[0] == expected_tagged


BUNDLED = Protocol.bundled()
API_MESSAGES = [n for n in BUNDLED.names() if BUNDLED.message(n).API_KEY is not None]


@pytest.mark.parametrize("name", API_MESSAGES)
def test_every_version_of_every_api_fits_its_spark_type(
    spark: Any, frames_by_api: Any, frame_rows: list[dict[str, Any]], name: str
) -> None:
    """decode_api end to end: Spark takes every version's typed body (all of it, collected)."""
    typed = decode_api(frames_by_api, name, keep=["id"], **PAIRING)
    assert typed.schema["body"].dataType == spark_type_for(name)
    rows = typed.collect()
    cls = BUNDLED.message(name)
    assert {r["api_version"] for r in rows} == set(cls.VALID_VERSIONS)
    assert all(r["error"] is None and r["body"] is not None for r in rows)
    kind = cls.MESSAGE_TYPE
    expected = sum(
        1
        for r in frame_rows
        if r["direction"] == kind
        and type(
            BUNDLED.decode_request(r["frame"]).body
            if kind == "request"
            else BUNDLED.decode_response(r["frame"], r["request_api_key"], r["request_api_version"]).body
        )
        is cls
    )
    assert len(rows) == expected


@pytest.fixture(scope="module")
def frames_by_api(spark: Any, frame_rows: list[dict[str, Any]]) -> Any:
    # cached: the parametrized test above reads it once per api
    df = frames_df(spark, frame_rows).cache()
    df.count()
    yield df
    df.unpersist()


def test_decode_api_of_a_response(spark: Any, frame_rows: list[dict[str, Any]]) -> None:
    df = frames_df(spark, frame_rows)
    with pytest.raises(ValueError, match="direction_col"):
        decode_api(df.select("id", "frame"), "ProduceResponse")  # nothing says which frames answer what
    produce = decode_api(df, "ProduceResponse", keep=["id"], **PAIRING)
    rows = produce.select("id", "api_version", "error", "body.responses").collect()
    assert {r["api_version"] for r in rows} == set(range(13)) and all(r["error"] is None for r in rows)
    # the capture source's column names are found without being named
    found = decode_api(df, "ProduceResponse", keep=["id"]).select("id", "api_version", "error", "body.responses")
    assert sorted(found.collect()) == sorted(rows)


def test_with_variant_queries_any_api(spark: Any, frame_rows: list[dict[str, Any]]) -> None:
    df = with_variant(decode_frames(frames_df(spark, frame_rows), keep=["id"], **PAIRING))
    got = dict(
        df.where("api_name = 'Metadata' and direction = 'request' and api_version >= 1")
        .selectExpr("id", "to_json(body:topics)")
        .collect()
    )
    frames = {r["id"]: r["frame"] for r in frame_rows}
    for row_id, topics_json in got.items():
        expected = Protocol.bundled().decode_request(frames[row_id]).to_dict()["body"]["topics"]
        assert (json.loads(topics_json) if topics_json is not None else None) == expected
    assert len(got) == 2 * 12

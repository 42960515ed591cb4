"""``decode_api(..., fields=)``: typed columns straight from projections, the same values a full
decode gives, one row per innermost element, bad frames kept as rows with their error."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

import pyarrow as pa

from kafka_epochs.protocol import Protocol
from kafka_epochs.spark.api import decode_api
from kafka_epochs.spark.projected import FRAME_INDEX, Plan, column_names, project_batch
from kafka_epochs.wire.uuids import uuid_text

from .test_core_spark import frames_df

STOP_REPLICA_FIELDS = [
    "topic_states[].topic_name",
    "topic_states[].topic_id",
    "topic_states[].partition_states[].partition_index",
    "topic_states[].partition_states[].leader_epoch",
    "broker_epoch",
]


def expected_stop_replica(frame_rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(id, version, topic, topic id, partition, leader epoch, broker epoch) from full decodes."""
    protocol = Protocol.bundled()
    out = []
    for row in frame_rows:
        if row["direction"] != "request":
            continue
        d = protocol.decode_request(row["frame"])
        if type(d.body).__name__ != "StopReplicaRequest" or d.api_version < 3:
            continue  # topic_states (and so partition_states) come in v3
        for t in d.body.topic_states:
            topic_id = uuid_text(t.topic_id) if d.api_version >= 4 else None
            for p in t.partition_states:
                out.append(
                    (
                        row["id"],
                        d.api_version,
                        t.topic_name,
                        topic_id,
                        p.partition_index,
                        p.leader_epoch,
                        d.body.broker_epoch,
                    )
                )
    return out


def test_project_batch_gives_the_full_decodes_values(frame_rows: list[dict[str, Any]]) -> None:
    plan = Plan("StopReplicaRequest", STOP_REPLICA_FIELDS, "kip")
    assert plan.names == ("topic_name", "topic_id", "partition_index", "leader_epoch", "broker_epoch")
    frames = pa.array([r["frame"] for r in frame_rows], pa.binary())
    direction = pa.array([r["direction"] for r in frame_rows])
    key = pa.array([r["request_api_key"] for r in frame_rows], pa.int16())
    version = pa.array([r["request_api_version"] for r in frame_rows], pa.int16())
    batch = project_batch(
        frames, plan, direction=direction, request_api_key=key, request_api_version=version, protocol="kip"
    )
    rows = batch.to_pylist()
    assert all(r["error"] is None for r in rows)
    ids = [frame_rows[r[FRAME_INDEX]]["id"] for r in rows]
    got = [
        (
            i,
            r["api_version"],
            r["topic_name"],
            r["topic_id"],
            r["partition_index"],
            r["leader_epoch"],
            r["broker_epoch"],
        )
        for i, r in zip(ids, rows, strict=True)
        if r["api_version"] >= 3
    ]
    assert got == expected_stop_replica(frame_rows)
    assert got, "the generated frames should carry some StopReplica partitions"
    assert batch.schema.field("leader_epoch").type == pa.int32()
    assert batch.schema.field("topic_id").type == pa.string()


def test_bad_frames_keep_a_row_with_their_error(frame_rows: list[dict[str, Any]]) -> None:
    good = next(
        r
        for r in frame_rows
        if r["direction"] == "request" and Protocol.bundled().decode_request(r["frame"]).api_key == 5
    )
    cut = good["frame"][:-3]
    cut = len(cut[4:]).to_bytes(4, "big") + cut[4:]  # a consistent size prefix, a truncated body
    plan = Plan("StopReplicaRequest", STOP_REPLICA_FIELDS, "kip")
    batch = project_batch(pa.array([cut], pa.binary()), plan, direction=pa.array(["request"]), protocol="kip")
    (row,) = batch.to_pylist()
    assert row["error"] and "truncated" in row["error"]
    assert row["topic_name"] is None and row["api_key"] == 5


def test_column_names_fall_back_to_whole_paths_where_ambiguous() -> None:
    names = column_names(["topics[].error_code", "topics[].partitions[].error_code", "topics[].name"])
    assert names == ("topics_error_code", "topics_partitions_error_code", "name")
    assert column_names(["error", "api_key"]) == ("body_error", "body_api_key")  # names the header columns use
    with pytest.raises(ValueError, match="has no field"):
        Plan("StopReplicaRequest", ["topic_states[].nope"], "kip")


def test_decode_api_with_fields_on_spark(spark: Any, frame_rows: list[dict[str, Any]]) -> None:
    df = frames_df(spark, frame_rows)
    projected = decode_api(df, "StopReplicaRequest", keep=["id"], fields=STOP_REPLICA_FIELDS, protocol="kip")
    assert projected.columns[:3] == ["id", "direction", "api_key"]
    got = sorted(
        (
            r["id"],
            r["api_version"],
            r["topic_name"],
            r["topic_id"],
            r["partition_index"],
            r["leader_epoch"],
            r["broker_epoch"],
        )
        for r in projected.where("api_version >= 3").collect()
    )
    assert got == sorted(expected_stop_replica(frame_rows))
    named = decode_api(df, "StopReplicaRequest", keep=["id"], fields={"epoch": STOP_REPLICA_FIELDS[3]}, protocol="kip")
    assert named.columns[-4:] == ["epoch", "error", "warnings", "profile"]


def test_headers_only_gives_the_header_columns_of_a_full_decode(frame_rows: list[dict[str, Any]]) -> None:
    from kafka_epochs.spark.batch import HEADER_FIELDS, decode_batch

    frames = pa.array([r["frame"] for r in frame_rows], pa.binary())
    pairing = {
        "direction": pa.array([r["direction"] for r in frame_rows]),
        "request_api_key": pa.array([r["request_api_key"] for r in frame_rows], pa.int16()),
        "request_api_version": pa.array([r["request_api_version"] for r in frame_rows], pa.int16()),
    }
    full = decode_batch(frames, protocol="kip", **pairing)
    heads = decode_batch(frames, protocol="kip", headers_only=True, **pairing)
    for f in HEADER_FIELDS:
        assert heads.column(f.name).equals(full.column(f.name)), f.name
    assert heads.column("body_json").null_count == len(frame_rows)
    assert full.column("body_json").null_count == 0
    assert heads.column("error").null_count == len(frame_rows)  # the generated frames are all good


def test_projection_over_every_message_keeps_every_frame(frame_rows: list[dict[str, Any]]) -> None:
    from kafka_epochs.spark.projected import AnyPlan, project_any_batch

    fields = ["topic_states[].topic_name", "topic_states[].partition_states[].leader_epoch", "broker_epoch"]
    plan = AnyPlan(fields, "kip")
    frames = pa.array([r["frame"] for r in frame_rows], pa.binary())
    pairing = {
        "direction": pa.array([r["direction"] for r in frame_rows]),
        "request_api_key": pa.array([r["request_api_key"] for r in frame_rows], pa.int16()),
        "request_api_version": pa.array([r["request_api_version"] for r in frame_rows], pa.int16()),
    }
    rows = project_any_batch(frames, plan, protocol="kip", **pairing).to_pylist()
    assert {r[FRAME_INDEX] for r in rows} == set(range(len(frame_rows)))  # no frame lost
    got = [
        (frame_rows[r[FRAME_INDEX]]["id"], r["api_version"], r["topic_name"], r["leader_epoch"], r["broker_epoch"])
        for r in rows
        if r["api_key"] == 5 and r["direction"] == "request" and r["api_version"] >= 3
    ]
    want = [(i, v, topic, epoch, broker) for i, v, topic, _, _, epoch, broker in expected_stop_replica(frame_rows)]
    # a StopReplica without partitions keeps its frame as one row of nulls
    assert [g for g in got if g[2] is not None] == want
    empty = {g[0] for g in got if g[2] is None}
    assert empty and not empty & {w[0] for w in want}
    others = [r for r in rows if r["api_key"] in (0, 3, 18)]  # Produce, Metadata, ApiVersions: none of the paths
    assert others and all(r["topic_name"] is None and r["broker_epoch"] is None for r in others)
    with pytest.raises(ValueError, match="no message of the"):
        AnyPlan(["topic_states[].nope"], "kip")


def test_decode_frames_with_fields_on_spark(spark: Any, frame_rows: list[dict[str, Any]]) -> None:
    from kafka_epochs.spark.api import decode_frames

    df = frames_df(spark, frame_rows)
    out = decode_frames(df, keep=["id"], fields=["topic_states[].partition_states[].leader_epoch"], protocol="kip")
    assert out.columns[:2] == ["id", "direction"] and "leader_epoch" in out.columns
    assert out.select("id").distinct().count() == len(frame_rows)
    epochs = sorted(
        (r["id"], r["leader_epoch"])
        for r in out.where("api_key = 5 and direction = 'request' and leader_epoch is not null").collect()
    )
    assert epochs == sorted((i, epoch) for i, _, _, _, _, epoch, _ in expected_stop_replica(frame_rows))

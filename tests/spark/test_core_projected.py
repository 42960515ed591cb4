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


# -- decode_api(fields=) reads only its message's rows: held to reading every row -------------

ONE_MESSAGE_PLANS = [
    ("StopReplicaRequest", [f for f in STOP_REPLICA_FIELDS if "topic_id" not in f]),  # Apache has no topic ids
    (
        "MetadataResponse",
        ["topics[].name", "topics[].partitions[].partition_index", "topics[].partitions[].leader_epoch"],
    ),
    ("ProduceRequest", ["topic_data[].name", "topic_data[].partition_data[].index"]),
    ("ProduceResponse", ["responses[].partition_responses[].index", "responses[].partition_responses[].error_code"]),
    ("FetchResponse", ["responses[].topic_id", "responses[].partitions[].error_code"]),
    ("FetchRequest", ["topics[].partitions[].current_leader_epoch"]),
    ("ApiVersionsRequest", ["client_software_name"]),
]


def _columns(rows: list[dict[str, Any]], sasl_every: int = 0) -> tuple[pa.Array, dict[str, pa.Array]]:
    frames = pa.array([r["frame"] for r in rows], pa.binary())
    pairing = {
        "direction": pa.array([r["direction"] for r in rows]),
        "request_api_key": pa.array([r["request_api_key"] for r in rows], pa.int16()),
        "request_api_version": pa.array([r["request_api_version"] for r in rows], pa.int16()),
    }
    if sasl_every:  # some rows marked as raw SASL tokens, as the capture source marks them
        pairing["sasl_mechanism"] = pa.array([None if i % sasl_every else "PLAIN" for i in range(len(rows))])
    return frames, pairing


@pytest.mark.parametrize("protocol", [None, "kip", "apache"])
@pytest.mark.parametrize(("message", "fields"), ONE_MESSAGE_PLANS)
def test_project_batch_reading_its_rows_only_equals_reading_every_row(
    monkeypatch: pytest.MonkeyPatch,
    bad_rows: list[dict[str, Any]],
    frame_rows: list[dict[str, Any]],
    message: str,
    fields: list[str],
    protocol: str | None,
) -> None:
    """project_batch reads only the frames of its message (``DecodedRows.of(only=...)``); with the
    restriction taken away, every frame is read and the others dropped after, as before: the two
    batches must be equal, bad frames, SASL tokens and every api and version of the table among them."""
    from kafka_epochs.spark import bodies as bodies_module
    from kafka_epochs.spark.batch import DecodedRows

    rows = [*bad_rows, *frame_rows]
    frames, pairing = _columns(rows, sasl_every=13)
    plan = Plan(message, fields, protocol)

    decoded: list[int] = []
    decode_rows = bodies_module._decode_rows

    def counting(headers: Any, proto: Any, render: Any, read_body: Any, picked: Any) -> Any:
        decoded.append(len(headers.starts) if picked is None else len(picked))
        return decode_rows(headers, proto, render, read_body, picked)

    monkeypatch.setattr(bodies_module, "_decode_rows", counting)
    fast = project_batch(frames, plan, protocol=protocol, **pairing)
    assert decoded and 0 < decoded[-1] < len(rows) // 4  # the other messages' frames were not read

    original = DecodedRows.of.__func__  # type: ignore[attr-defined]

    def every_row(cls: Any, *args: Any, only: Any = None, **kwargs: Any) -> Any:
        return original(cls, *args, **kwargs)  # the restriction ignored: every body is read

    monkeypatch.setattr(DecodedRows, "of", classmethod(every_row))
    slow = project_batch(frames, plan, protocol=protocol, **pairing)
    assert decoded[-1] == len(rows)
    assert fast.schema == slow.schema
    assert fast.to_pylist() == slow.to_pylist()
    assert fast.num_rows > 0


def test_decode_bodies_of_some_rows_equal_those_of_every_row(bad_rows: list[dict[str, Any]]) -> None:
    """``decode_bodies(only=mask)``: the marked rows exactly as when every row is decoded, the
    others skipped; checked with random masks (none, all, some) on good and bad frames."""
    import random

    import numpy as np

    from kafka_epochs.protocol_refs import Lookup, resolve
    from kafka_epochs.spark.batch import _as_json
    from kafka_epochs.spark.bodies import SKIPPED, decode_bodies
    from kafka_epochs.spark.headers import read_headers

    frames, pairing = _columns(bad_rows, sasl_every=11)
    proto = resolve(None)
    headers = read_headers(
        frames,
        pairing["direction"],
        pairing["request_api_key"],
        pairing["request_api_version"],
        Lookup(proto),
        pairing["sasl_mechanism"],
    )
    every = decode_bodies(headers, proto, _as_json)
    assert any(every.errors) and any(v is not None for v in every.values)
    rng = random.Random(3)
    n = len(bad_rows)
    masks = [np.zeros(n, bool), np.ones(n, bool)] + [np.array([rng.random() < p for _ in range(n)]) for p in (0.1, 0.5)]
    for mask in masks:
        some = decode_bodies(headers, proto, _as_json, only=mask)
        for i, marked in enumerate(mask.tolist()):
            got = (some.values[i], some.errors[i], some.warnings[i], some.profiles[i])
            if marked:
                assert got == (every.values[i], every.errors[i], every.warnings[i], every.profiles[i]), i
            else:
                assert got == (None, SKIPPED, [], None), i


def _rows_of(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.mark.parametrize(("message", "fields"), [ONE_MESSAGE_PLANS[1], ONE_MESSAGE_PLANS[2], ONE_MESSAGE_PLANS[4]])
def test_decode_api_drops_other_messages_in_the_jvm_without_changing_rows(
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    bad_rows: list[dict[str, Any]],
    frame_rows: list[dict[str, Any]],
    message: str,
    fields: list[str],
) -> None:
    """decode_api filters in Spark, before Python, to the rows that may be its message
    (``_Inputs.only_message``); without that filter every row goes to Python and the decoder's own
    test drops the others. Both ways give the same rows, typed and projected, with and without a
    direction column, on bad frames (odd directions, null frames, responses without requests,
    short frames) and every api and version of the table."""
    from kafka_epochs.spark import api

    rows = [*bad_rows, *frame_rows[::2]]
    for row in rows[::17]:  # short frames whose first bytes could pass for any api key
        row = dict(row, id=len(rows), frame=(row["frame"] or b"")[:7])
        rows.append(row)
    df = frames_df(spark, rows)
    requests_only = df.where("direction = 'request'").select("id", "frame")  # every frame read as a request

    def outputs() -> list[list[tuple[Any, ...]]]:
        out = [
            _rows_of(decode_api(df, message, keep=["id"], fields=fields)),
            _rows_of(decode_api(df, message, keep=["id"]).drop("body")),
        ]
        if message.endswith("Request"):
            out.append(_rows_of(decode_api(requests_only, message, keep=["id"], fields=fields)))
        return out

    filtered = outputs()
    dropped: list[str] = []
    source = api._Inputs.only_message

    def spy(self: Any, *args: Any) -> None:
        before = self.source
        source(self, *args)
        dropped.append(str(self.source is not before))

    monkeypatch.setattr(api._Inputs, "only_message", spy)
    assert outputs() == filtered
    assert set(dropped) == {"True"}  # every call above did filter
    monkeypatch.setattr(api._Inputs, "only_message", lambda self, *args: None)
    unfiltered = outputs()
    assert unfiltered == filtered
    assert all(filtered), "each way should give rows"
    assert any(r[-3] is not None for r in filtered[0]), "bad frames of the message should be among them"

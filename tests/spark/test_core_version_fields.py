"""``body_json`` and the typed ``body`` struct agree on which fields a version carries: the JSON
omits the others, the struct has them as null (no Spark needed: both are Arrow batch decoders)."""

from __future__ import annotations

import json

import pyarrow as pa

from kafka_epochs import Protocol
from kafka_epochs.spark.batch import decode_batch
from kafka_epochs.spark.typed import decode_typed_batch

APACHE = Protocol.apache()


def fetch_frame(version: int) -> bytes:
    fetch = APACHE.message("FetchRequest")
    request = fetch(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        topics=[fetch.FetchTopic(topic="orders", partitions=[fetch.FetchPartition(partition=0, fetch_offset=7)])],
    )
    return APACHE.encode_request(request, version, correlation_id=1, client_id="c")


def test_json_omits_and_the_struct_nulls_what_fetch_v3_lacks() -> None:
    frames = pa.array([fetch_frame(3), fetch_frame(12)], pa.binary())
    as_json = [json.loads(row["body_json"]) for row in decode_batch(frames, protocol="apache").to_pylist()]
    typed = [row["body"] for row in decode_typed_batch(frames, "FetchRequest", protocol="apache").to_pylist()]
    v3, v12 = as_json
    assert "current_leader_epoch" not in v3["topics"][0]["partitions"][0] and "isolation_level" not in v3
    assert v12["topics"][0]["partitions"][0]["current_leader_epoch"] == -1 and v12["isolation_level"] == 0
    assert typed[0]["topics"][0]["partitions"][0]["current_leader_epoch"] is None
    assert typed[0]["isolation_level"] is None and typed[1]["isolation_level"] == 0
    for plain, struct in zip(as_json, typed, strict=True):  # the same fields have values in both
        assert {k for k, v in struct.items() if v is not None} == {k for k, v in plain.items() if v is not None}
        assert set(plain) <= set(struct)  # a null in the JSON is a nullable field's own null

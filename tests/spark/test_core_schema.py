"""Spec -> Arrow/Spark types, and the typed decode every bundled message's every version fits."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("numpy")

from kafka_epochs.protocol import Protocol, ProtocolChain  # noqa: E402  (after the skip, on purpose)
from kafka_epochs.spark.schema import UNKNOWN_TAGS, arrow_type_for  # noqa: E402
from kafka_epochs.spark.typed import decode_typed_batch  # noqa: E402
from kafka_epochs.spec import load_specs  # noqa: E402

BUNDLED = Protocol.bundled()
API_MESSAGES = [n for n in BUNDLED.names() if BUNDLED.message(n).API_KEY is not None]
SPEC_DIR = __import__("pathlib").Path(__file__).resolve().parents[2] / "messages"


def test_every_bundled_api_is_covered() -> None:
    assert len(API_MESSAGES) == 2 * len(BUNDLED.api_keys())


@pytest.mark.parametrize("spec", load_specs(SPEC_DIR), ids=lambda s: s.name)
def test_the_spec_model_and_the_generated_classes_give_one_type(spec: Any) -> None:
    """Two derivations of the same mapping: from the spec files, and from the generated descriptors."""
    assert arrow_type_for(spec).equals(arrow_type_for(spec.name, BUNDLED))


def test_mapping_rules_on_a_spec_with_every_type(features_protocol: Any) -> None:
    struct = arrow_type_for("FeatureTourRequest", features_protocol)
    types = {struct.field(i).name: struct.field(i).type for i in range(struct.num_fields)}
    assert types["port"] == pa.int32()  # uint16: Spark has no unsigned types, so one size up
    assert types["big"] == pa.int64()  # uint32
    assert types["ratio"] == pa.float64()
    assert types["topic_id"] == pa.string()  # uuid: Kafka's base64url text
    assert types["blob"] == pa.binary() and types["batches"] == pa.binary()  # bytes, records
    assert types["ids"] == pa.list_(pa.string())
    assert pa.types.is_struct(types["owner"]) and pa.types.is_struct(types["inner"])  # a tagged struct too
    items = types["items"].value_type
    assert items.field("flags").type == pa.list_(pa.int16())
    assert items.field("note").type == pa.string()  # a tagged field is an ordinary column
    # flexible messages keep unknown tagged fields, in every struct
    assert types[UNKNOWN_TAGS] == pa.map_(pa.int32(), pa.binary())
    assert items.field(UNKNOWN_TAGS).type == pa.map_(pa.int32(), pa.binary())


def test_a_never_flexible_message_has_no_unknown_tags(features_protocol: Any) -> None:
    # every bundled message is flexible in its newer versions; the headers' specs are too, so
    # build the negative case from a class that never is
    cls = type(
        "Plain",
        (),
        {
            "_FIELDS": BUNDLED.message("StopReplicaRequest").StopReplicaPartitionV0._FIELDS,
            "FLEXIBLE_VERSIONS": range(0),
        },
    )
    assert UNKNOWN_TAGS not in arrow_type_for(cls).names


def typed_rows(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    kind = "response" if name.endswith("Response") else "request"
    key = BUNDLED.message(name).API_KEY
    mine = [
        r
        for r in rows
        if r["direction"] == kind
        and (r["request_api_key"] == key if kind == "response" else int.from_bytes(r["frame"][4:6], "big") == key)
    ]
    assert mine
    return mine


@pytest.mark.parametrize("name", API_MESSAGES)
def test_the_typed_struct_takes_every_version(name: str, frame_rows: list[dict[str, Any]]) -> None:
    rows = typed_rows(frame_rows, name)
    batch = decode_typed_batch(
        pa.array([r["frame"] for r in rows]),
        name,
        direction=pa.array([r["direction"] for r in rows]),
        request_api_key=pa.array([r["request_api_key"] for r in rows], pa.int16()),
        request_api_version=pa.array([r["request_api_version"] for r in rows], pa.int16()),
    )
    assert batch.column("body").type.equals(arrow_type_for(name))
    cls = BUNDLED.message(name)
    assert set(batch.column("api_version").to_pylist()) == set(cls.VALID_VERSIONS)
    for row, got in zip(rows, batch.to_pylist(), strict=True):
        assert got["error"] is None, got["error"]
        if row["direction"] == "request":
            decoded = BUNDLED.decode_request(row["frame"])
        else:
            decoded = BUNDLED.decode_response(row["frame"], row["request_api_key"], row["request_api_version"])
        assert_typed_equals(got["body"], decoded.body, decoded.api_version)


def assert_typed_equals(typed: dict[str, Any], obj: Any, version: int) -> None:
    """The typed row holds the object's values, fields absent in ``version`` null, by the schema's rules."""
    for f in type(obj)._FIELDS:
        value = typed[f.attr]
        if not f.present(version):
            assert value is None, f.attr
            continue
        expected = getattr(obj, f.attr)
        if expected is None:
            assert value is None, f.attr
        elif f.kind == "struct":
            assert_typed_equals(value, expected, version)
        elif f.kind == "array" and f.element == "struct":
            assert len(value) == len(expected)
            for v, e in zip(value, expected, strict=True):
                assert_typed_equals(v, e, version)
        else:
            assert value == plain(expected, f.element if f.kind == "array" else f.kind), f.attr
    unknown = getattr(obj, UNKNOWN_TAGS, None)
    if UNKNOWN_TAGS in typed:
        assert (dict(typed[UNKNOWN_TAGS]) if typed[UNKNOWN_TAGS] is not None else None) == (unknown or None)


def plain(value: Any, kind: str | None) -> Any:
    if isinstance(value, list):
        return [plain(v, kind) for v in value]
    if kind == "uuid":
        return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")
    return value


def test_unknown_tags_and_uuids_land_in_their_columns() -> None:
    cls = BUNDLED.message("StopReplicaRequest")
    topic = cls.StopReplicaTopicState(topic_name="t", topic_id=uuid.UUID(int=1))
    topic._unknown_tags = {900: b"\x01\x02"}
    body = cls(topic_states=[topic])
    frame = BUNDLED.encode_request(body, 4, correlation_id=1)
    (row,) = decode_typed_batch(pa.array([frame]), "StopReplicaRequest").to_pylist()
    (state,) = row["body"]["topic_states"]
    assert state["topic_id"] == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert state[UNKNOWN_TAGS] == [(900, b"\x01\x02")]
    assert row["body"]["topics"] is None and row["body"]["delete_partitions"] is None  # v1-2 and v0-2 only


def test_frames_of_another_message_keep_their_rows(frame_rows: list[dict[str, Any]]) -> None:
    requests = [r for r in frame_rows if r["direction"] == "request"]
    batch = decode_typed_batch(pa.array([r["frame"] for r in requests] + [b"junk"]), "StopReplicaRequest")
    assert batch.num_rows == len(requests) + 1
    for got in batch.to_pylist():
        if got["api_name"] == "StopReplica":
            assert got["error"] is None and got["body"] is not None
        else:
            assert got["body"] is None and got["error"]
    assert batch.column("error").to_pylist()[0].endswith("not a StopReplicaRequest")


def test_a_chain_merges_the_types_of_its_protocols(features_protocol: Any) -> None:
    # the same message in two protocols: here bundled twice, which must merge to itself
    chain = ProtocolChain([BUNDLED, Protocol.from_specs(SPEC_DIR)])
    assert arrow_type_for("ProduceRequest", chain).equals(arrow_type_for("ProduceRequest", BUNDLED))


def test_a_chain_unites_fields_across_protocols(reference_protocol: Any) -> None:
    """Kafka 3.9's StopReplicaRequest lacks this project's v4 topic_id; the chain's type has it."""
    chain = ProtocolChain([reference_protocol, BUNDLED])
    merged = arrow_type_for("StopReplicaRequest", chain)
    kafka = arrow_type_for("StopReplicaRequest", reference_protocol)
    assert "topic_id" not in kafka.field("topic_states").type.value_type.names
    assert "topic_id" in merged.field("topic_states").type.value_type.names

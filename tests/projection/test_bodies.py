"""Bodies read through projections (FieldsReader), and how they choose between two layouts."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from produce_frames import apache_produce, kip_produce

import kafka_epochs.decoded as decoded_module
from kafka_epochs import DecodeError, Protocol
from kafka_epochs.projection.bodies import FieldsReader, ProjectedBody

import strategies

APACHE, KIP, AUTO = Protocol.apache(), Protocol.kip(), Protocol.auto()
EPOCHS = ["topic_data[].name", "topic_data[].partition_data[].current_leader_epoch"]


def test_fields_reader_reads_only_the_paths_the_message_has() -> None:
    decoded = KIP.decode_request(kip_produce(epoch=4), body_reader=FieldsReader([*EPOCHS, "topics[].name"]))
    assert isinstance(decoded.body, ProjectedBody)
    assert decoded.body.columns == {"topic_data[].name": ["orders"], EPOCHS[1]: [4]}
    assert decoded.body.acks == -1  # pairing's control value, read although not asked for
    with pytest.raises(AttributeError, match="was not read"):
        _ = decoded.body.timeout_ms
    # another api's control values (properties, for speed) are not read either, and say so
    assert getattr(decoded.body, "mechanism", "none") == "none"
    with pytest.raises(AttributeError, match="was not read"):
        _ = decoded.body.error_code


def test_layouts_are_tried_by_projection_not_by_full_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_full_decode(*args: object) -> None:
        raise AssertionError("a layout was tried with the full decoder")

    monkeypatch.setattr(decoded_module, "_attempt", no_full_decode)
    reader = FieldsReader(EPOCHS)
    kip = AUTO.decode_request(kip_produce(epoch=4), body_reader=reader)
    assert kip.profile == "kip" and kip.warnings == []
    assert kip.body.columns[EPOCHS[1]] == [4]
    apache = AUTO.decode_request(apache_produce(12), body_reader=reader)
    assert apache.profile == "apache" and apache.warnings == []
    assert apache.body.columns == {"topic_data[].name": ["orders"]}  # Apache's v12 has no epoch


def test_layout_choice_by_projection_agrees_with_the_full_decoders() -> None:
    reader = FieldsReader(EPOCHS)
    for frame in (kip_produce(epoch=7), apache_produce(12), apache_produce(13)):
        full = AUTO.decode_request(frame)
        projected = AUTO.decode_request(frame, body_reader=reader)
        assert (projected.profile, projected.api_version) == (full.profile, full.api_version)


def test_a_reader_that_skips_the_body_still_gets_the_right_layout() -> None:
    # headers only: the reader cannot tell layouts apart, so the decoders choose (as without it)
    kip_cls = KIP.message("StopReplicaResponse")
    kip_body = kip_cls(
        error_code=0,
        topics=[kip_cls.StopReplicaTopicError(topic_name="t", topic_id=uuid.UUID(int=3), partition_errors=[])],
    )
    apache_cls = APACHE.message("StopReplicaResponse")
    apache_body = apache_cls(
        error_code=0,
        partition_errors=[apache_cls.StopReplicaPartitionError(topic_name="t", partition_index=1, error_code=0)],
    )
    headers_only = FieldsReader([])
    for body, profile in ((kip_body, "kip"), (apache_body, "apache")):
        frame = Protocol.profile(profile).encode_response(body, 4, correlation_id=8)
        decoded = AUTO.decode_response(frame, 5, 4, prefer="kip", body_reader=headers_only)
        assert decoded.profile == profile and decoded.body is None


def test_bytes_no_layout_fits_fail_as_they_do_without_a_reader() -> None:
    frame = kip_produce(epoch=4)
    for keep in (14, 30, len(frame) - 3):
        body = frame[4:keep]
        cut = len(body).to_bytes(4, "big") + body
        with pytest.raises(DecodeError) as full:
            AUTO.decode_request(cut, strict=True)
        with pytest.raises(DecodeError) as projected:
            AUTO.decode_request(cut, body_reader=FieldsReader(EPOCHS), strict=True)
        assert (str(projected.value), projected.value.path) == (str(full.value), full.value.path)


INT_PATHS = [
    "topics[].partitions[].leader_epoch",  # not in every version: None there
    "topics[].partitions[].replica_nodes",  # a list of ints per row
    "throttle_time_ms",
    "topics[].partitions[].error_code",
]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_int_text_is_the_json_of_the_columns(data: st.DataObject) -> None:
    """A projection of integer fields writes its own JSON text; it equals json.dumps of
    to_dict() for every version (fields missing in some: nulls), and no text is given where a
    column is of another type."""
    metadata = APACHE.message("MetadataResponse")
    version = data.draw(st.sampled_from(list(metadata.VALID_VERSIONS)))
    body = metadata.encode(data.draw(strategies.message(metadata, version)), version)
    paths = data.draw(st.lists(st.sampled_from(INT_PATHS), min_size=1, max_size=4, unique=True))
    read, end = FieldsReader(paths).read(metadata, body, 0, version, None, True)
    assert end == len(body) and read is not None
    expected = json.dumps(read.to_dict(), ensure_ascii=False)
    assert read.int_text() == expected
    mixed, _ = FieldsReader([*paths, "topics[].is_internal"]).read(metadata, body, 0, version, None, True)
    assert mixed is not None and mixed.int_text() is None  # bools are ints to Python, not to JSON


def test_quick_reader_of_a_version_the_message_lacks_is_none() -> None:
    """No quick reader where the projection cannot read the version (the general way says why)."""
    metadata = APACHE.message("MetadataResponse")
    reader = FieldsReader(["topics[].name"])
    assert reader.quick(metadata, max(metadata.VALID_VERSIONS) + 1) is None
    quick = reader.quick(metadata, 12)
    assert quick is not None and quick(b"\x00\x01", 0) is None  # bytes that do not fit

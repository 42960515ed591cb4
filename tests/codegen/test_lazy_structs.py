"""Struct fields that most decoded objects lack (tagged, or absent from some versions) cost nothing
when absent: no default object is built on decode, no equality test runs on encode. Their default
is made on first read, kept, and behaves as before: mutable, per object, written when it differs."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest

from kafka_epochs import Protocol

APACHE = Protocol.apache()
FETCH = APACHE.message("FetchResponse")
PARTITION: Any = FETCH.PartitionData
LAZY = {
    "diverging_epoch": FETCH.EpochEndOffset,
    "current_leader": FETCH.LeaderIdAndEpoch,
    "snapshot_id": FETCH.SnapshotId,
}


def plain_response(partitions: int = 3, **partition_fields: Any) -> Any:
    topic = FETCH.FetchableTopicResponse(
        topic="orders",
        partitions=[PARTITION(partition_index=i, high_watermark=10 + i, **partition_fields) for i in range(partitions)],
    )
    return FETCH(responses=[topic])


def test_the_lazy_fields_are_the_tagged_and_version_limited_structs() -> None:
    slots = set(PARTITION.__slots__)
    for name in LAZY:
        assert f"_{name}" in slots and name not in slots
        assert isinstance(getattr(PARTITION, name), property)
    # a struct field that every version carries untagged stays a plain slot
    member = APACHE.message("ConsumerGroupDescribeResponse").Member
    assert "assignment" in member.__slots__


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_no_default_struct_is_built_when_absent(version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    body = plain_response().encode(version)

    def refuse(self: object, **kwargs: object) -> None:
        raise AssertionError(f"{type(self).__name__} built")

    for cls in LAZY.values():
        monkeypatch.setattr(cls, "__init__", refuse)
    decoded = FETCH.decode(body, version)
    assert decoded.encode(version) == body  # no default built on the way back either
    assert [p._diverging_epoch for p in decoded.responses[0].partitions] == [None, None, None]


def test_an_absent_field_reads_as_its_default_and_keeps_what_is_written_into_it() -> None:
    decoded = FETCH.decode(plain_response().encode(12), 12)
    first, second = decoded.responses[0].partitions[:2]
    assert first.current_leader == FETCH.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    first.current_leader.leader_id = 5  # into the default made on first read
    first.current_leader.leader_epoch = 9
    assert second.current_leader == FETCH.LeaderIdAndEpoch()  # each object its own default
    again = FETCH.decode(decoded.encode(12), 12)
    assert again.responses[0].partitions[0].current_leader == FETCH.LeaderIdAndEpoch(leader_id=5, leader_epoch=9)
    assert again.responses[0].partitions[1]._current_leader is None


def test_a_field_set_to_its_default_is_not_written_and_one_set_otherwise_is() -> None:
    plain = plain_response().encode(12)
    assert plain_response(diverging_epoch=FETCH.EpochEndOffset()).encode(12) == plain
    diverged = plain_response(diverging_epoch=FETCH.EpochEndOffset(epoch=3, end_offset=77)).encode(12)
    assert len(diverged) > len(plain)
    back = FETCH.decode(diverged, 12)
    assert [p.diverging_epoch.end_offset for p in back.responses[0].partitions] == [77, 77, 77]
    # a version without the field refuses a value it cannot hold, and accepts its default
    with pytest.raises(Exception, match="diverging_epoch"):
        plain_response(diverging_epoch=FETCH.EpochEndOffset(epoch=3, end_offset=77)).encode(11)
    assert plain_response(diverging_epoch=FETCH.EpochEndOffset()).encode(11) == plain_response().encode(11)


def test_equality_copy_and_pickle_see_the_default_whether_or_not_it_was_read() -> None:
    decoded = FETCH.decode(plain_response().encode(12), 12)
    clone = copy.deepcopy(decoded)
    unpickled = pickle.loads(pickle.dumps(decoded))
    assert decoded.responses[0].partitions[0]._snapshot_id is None  # not read yet, in any of them
    built = plain_response()
    built.responses[0].partitions[0].snapshot_id  # noqa: B018 - made on read in one object only
    assert decoded == built and built == decoded and unpickled == decoded
    clone.responses[0].partitions[0].snapshot_id.epoch = 4
    assert clone != decoded
    assert decoded.to_dict(12)["responses"][0]["partitions"][0]["snapshot_id"] == {"end_offset": -1, "epoch": -1}


@pytest.mark.parametrize("compact", [False, True])
def test_the_json_renderer_writes_an_unread_default_without_making_it(compact: bool) -> None:
    from kafka_epochs.wire.json_text import json_renderer

    separators = (",", ":") if compact else (", ", ": ")
    set_one = plain_response(current_leader=FETCH.LeaderIdAndEpoch(leader_id=2, leader_epoch=8))
    for message in (plain_response(), set_one):
        decoded = FETCH.decode(message.encode(12), 12)
        text = json_renderer(FETCH, 12, compact=compact)(decoded)
        assert [p._diverging_epoch for p in decoded.responses[0].partitions] == [None, None, None]
        assert text == json.dumps(decoded.to_dict(12), separators=separators)
    assert '"current_leader": {"leader_id": 2, "leader_epoch": 8}' in json_renderer(FETCH, 12)(set_one)

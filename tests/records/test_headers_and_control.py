"""Repeated header keys stay, in order; control batches carry transaction markers."""

from __future__ import annotations

import struct

import pytest
from kafka.record import MemoryRecords

from kafka_epochs import DecodeError, EncodeError
from kafka_epochs.records import (
    Compression,
    ControlRecord,
    ControlRecordType,
    Record,
    RecordBatch,
    decode_records,
    encode_batch,
    encode_records,
    end_transaction_marker,
    parse_control_record,
)

from .helpers import raw_batch

REPEATED = [("trace", b"1"), ("span", None), ("trace", b"2"), ("trace", b"1"), ("", b"")]


@pytest.mark.parametrize("codec", list(Compression), ids=lambda c: c.name)
def test_duplicate_header_keys_are_kept_in_order(codec: Compression) -> None:
    data = encode_batch([Record(key=b"k", value=b"v", headers=list(REPEATED))], compression=codec)
    [batch] = decode_records(data).entries
    assert isinstance(batch, RecordBatch)
    assert batch.records[0].headers == REPEATED
    assert encode_records([batch]) == data
    # and an independent reader sees the same list
    [[their_record]] = [list(b) for b in MemoryRecords(data)]
    assert list(their_record.headers) == REPEATED


def batch_of(*records: Record, transactional: bool = True) -> RecordBatch:
    data = encode_batch(
        list(records),
        is_control=True,
        is_transactional=transactional,
        producer_id=1000,
        producer_epoch=4,
        base_offset=300,
        base_timestamp=1_700_000_000_000,
    )
    [batch] = decode_records(data).entries
    assert isinstance(batch, RecordBatch)
    assert encode_records([batch]) == data
    return batch


def test_transaction_commit_marker() -> None:
    batch = batch_of(end_transaction_marker(ControlRecordType.COMMIT, coordinator_epoch=17))
    assert batch.is_control and batch.is_transactional
    assert batch.producer_id == 1000 and batch.producer_epoch == 4
    assert batch.control_records == [
        ControlRecord(offset=300, version=0, type=ControlRecordType.COMMIT, marker_version=0, coordinator_epoch=17)
    ]
    record = batch.records[0]
    assert record.key == struct.pack(">hh", 0, 1)  # key version 0, type 1 = COMMIT
    assert record.value == struct.pack(">hi", 0, 17)  # value version 0, coordinator epoch


def test_transaction_abort_marker() -> None:
    [control] = batch_of(end_transaction_marker(ControlRecordType.ABORT, coordinator_epoch=2)).control_records
    assert control.type is ControlRecordType.ABORT and control.coordinator_epoch == 2


def test_marker_values_from_newer_versions_are_read_as_far_as_known() -> None:
    record = Record(key=struct.pack(">hh", 3, 1), value=struct.pack(">hi", 5, 9) + b"future fields")
    [control] = batch_of(record).control_records
    assert (control.version, control.type, control.marker_version, control.coordinator_epoch) == (3, 1, 5, 9)


def test_other_control_types_keep_their_value_raw() -> None:
    leader_change = Record(key=struct.pack(">hh", 0, 2), value=b"\x00\x01kraft data")
    unknown = Record(offset_delta=1, key=struct.pack(">hh", 0, 99), value=None)
    batch = batch_of(leader_change, unknown, transactional=False)
    first, second = batch.control_records
    assert first.type is ControlRecordType.LEADER_CHANGE and first.coordinator_epoch is None
    assert second.type == 99 and not isinstance(second.type, ControlRecordType) and second.offset == 301
    assert batch.records[0].value == b"\x00\x01kraft data"


def test_data_batches_have_no_control_records() -> None:
    [batch] = decode_records(encode_batch([Record(key=b"\x00\x00\x00\x01")])).entries
    assert isinstance(batch, RecordBatch) and not batch.is_control and batch.control_records == []


@pytest.mark.parametrize(
    ("key", "value", "path", "words"),
    [
        (b"\x00\x00", b"", "key", "needs 4 bytes, got 2"),
        (None, b"", "key", "got null"),
        (struct.pack(">hh", -1, 0), b"", "key", "negative"),
        (struct.pack(">hh", 0, 1), b"\x00\x00\x00", "value", "needs 6 bytes, got 3"),
        (struct.pack(">hh", 0, 0), None, "value", "got null"),
        (struct.pack(">hh", 0, 0), struct.pack(">hi", -2, 0), "value", "negative"),
    ],
)
def test_malformed_control_records(key: bytes | None, value: bytes | None, path: str, words: str) -> None:
    from kafka_epochs.records.record_encoder import record_bytes

    payload = record_bytes(Record(offset_delta=0, key=key, value=value), "r")
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(payload, attributes=0x20))
    assert info.value.path == f"batches[0].records[0].{path}" and words in info.value.reason
    with pytest.raises(DecodeError):
        parse_control_record(Record(key=key, value=value))


def test_only_commit_and_abort_make_markers() -> None:
    with pytest.raises(EncodeError):
        end_transaction_marker(ControlRecordType.LEADER_CHANGE, 1)
    with pytest.raises(EncodeError):
        end_transaction_marker(ControlRecordType.COMMIT, 1 << 31)

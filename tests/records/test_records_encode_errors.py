"""Values the wire cannot carry give an EncodeError naming the field, not a struct.error."""

from __future__ import annotations

import re

import pytest

from kafka_epochs import EncodeError
from kafka_epochs.records import (
    Compression,
    LegacyMessage,
    Record,
    RecordBatch,
    TimestampType,
    encode_batch,
    encode_legacy,
    encode_records,
    write_batch,
    write_message,
)


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (Record(key="text"), "records[0].key: expected bytes"),  # type: ignore[arg-type]
        (Record(value=5), "records[0].value: expected bytes"),  # type: ignore[arg-type]
        (Record(offset_delta=1 << 31), "records[0].offset_delta: 2147483648 does not fit in int32"),
        (Record(timestamp_delta=1 << 63), "records[0].timestamp_delta"),
        (Record(attributes=200), "records[0].attributes"),
        (Record(headers=[(b"k", b"v")]), "records[0].headers[0].key: expected str"),  # type: ignore[list-item]
        (Record(headers=[("k", "v")]), "records[0].headers[0].value: expected bytes"),  # type: ignore[list-item]
        (Record(headers=[("k",)]), "records[0].headers[0]: expected a (str, bytes | None) pair"),  # type: ignore[list-item]
        (Record(headers=[("\ud800", None)]), "records[0].headers[0].key: not encodable"),
    ],
)
def test_bad_record_values(record: Record, words: str) -> None:
    with pytest.raises(EncodeError, match=re.escape(words)):
        encode_batch([record])


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"base_offset": 1 << 63}, "base_offset"),
        ({"producer_epoch": 1 << 15}, "producer_epoch"),
        ({"partition_leader_epoch": -(1 << 31) - 1}, "partition_leader_epoch"),
        ({"compression": 9}, "compression: unknown codec"),
        ({"timestamp_type": TimestampType.NO_TIMESTAMP}, "timestamp_type"),
        ({"base_sequence": "0"}, "base_sequence: expected an int"),
        ({"base_timestamp": None}, "base_timestamp: expected an int"),
    ],
)
def test_bad_batch_settings(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(EncodeError, match=words):
        encode_batch([Record()], **kwargs)  # type: ignore[arg-type]


def test_records_must_be_records() -> None:
    with pytest.raises(EncodeError, match=r"records\[1\]: expected a Record, got tuple"):
        encode_batch([Record(), (b"k", b"v")])  # type: ignore[list-item]
    with pytest.raises(EncodeError, match=r"records\[0\].timestamp_delta"):
        encode_batch([Record(timestamp_delta="5")])  # type: ignore[arg-type]


def test_write_batch_checks_magic_and_codec() -> None:
    with pytest.raises(EncodeError, match="magic"):
        write_batch(RecordBatch(magic=1))
    with pytest.raises(EncodeError, match="unknown compression codec 6"):
        write_batch(RecordBatch(attributes=6))


def test_bad_legacy_settings() -> None:
    messages = [LegacyMessage(value=b"v")]
    with pytest.raises(EncodeError, match="zstd compression is not valid with magic 1"):
        encode_legacy(messages, magic=1, compression=Compression.ZSTD)
    with pytest.raises(EncodeError, match="magic"):
        encode_legacy(messages, magic=2)
    with pytest.raises(EncodeError, match="at least one"):
        encode_legacy([], compression=Compression.GZIP)
    with pytest.raises(EncodeError, match="timestamp_type"):
        encode_legacy(messages, magic=1, timestamp_type=TimestampType.NO_TIMESTAMP - 1)  # type: ignore[operator]
    with pytest.raises(EncodeError, match=r"messages\[0\]: expected a LegacyMessage"):
        encode_legacy([b"value"])  # type: ignore[list-item]
    with pytest.raises(EncodeError, match=r"messages\[0\].offset"):
        encode_legacy([LegacyMessage(offset=1 << 64)])


def test_bad_wrappers() -> None:
    inner = [LegacyMessage(offset=0, magic=1, timestamp=0, value=b"x")]
    with pytest.raises(EncodeError, match="need a codec"):
        write_message(LegacyMessage(offset=0, inner=inner))
    with pytest.raises(EncodeError, match="needs its inner messages"):
        write_message(LegacyMessage(attributes=1, value=b"already compressed?"))
    with pytest.raises(EncodeError, match="past its last inner"):
        write_message(LegacyMessage(offset=5, attributes=1, inner=inner))
    with pytest.raises(EncodeError, match="inside a magic 1 wrapper"):
        write_message(LegacyMessage(attributes=1, inner=[LegacyMessage(magic=0)]))
    nested = LegacyMessage(attributes=1, inner=list(inner))
    with pytest.raises(EncodeError, match="cannot sit inside another"):
        write_message(LegacyMessage(attributes=1, inner=[nested]))


def test_encode_records_names_the_entry() -> None:
    with pytest.raises(EncodeError, match=r"batches\[1\]\.records\[0\]\.key"):
        encode_records([RecordBatch(), RecordBatch(records=[Record(key="x")])])  # type: ignore[list-item]
    with pytest.raises(EncodeError, match=r"batches\[0\]: expected a RecordBatch"):
        encode_records([b"raw"])  # type: ignore[list-item]

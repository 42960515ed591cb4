"""Bytes written out field by field from Kafka's documented layouts, against encoder and decoder."""

from __future__ import annotations

import struct
import zlib

import crc32c

from kafka_epochs.records import (
    Compression,
    LegacyMessage,
    Record,
    RecordBatch,
    TimestampType,
    decode_records,
    encode_batch,
    encode_legacy,
)

# One record: key "k", value "hello", one header ("h", b"v"), at offset delta 1 and 5 ms after
# the base timestamp. Zig-zag varints: 0 -> 00, 1 -> 02, 5 -> 0a, 7 -> 0e, -1 -> 01.
RECORD_BODY = bytes(
    [
        0x00,  # attributes int8
        0x0A,  # timestampDelta varlong: 5
        0x02,  # offsetDelta varint: 1
        0x02,
        *b"k",  # keyLength varint 1, key
        0x0A,
        *b"hello",  # valueLength varint 5, value
        0x02,  # header count varint: 1
        0x02,
        *b"h",  # header key length 1, key
        0x02,
        *b"v",  # header value length 1, value
    ]
)
RECORD = bytes([len(RECORD_BODY) * 2]) + RECORD_BODY  # length varint (16 -> 0x20), then the body

AFTER_CRC = (
    struct.pack(">h", 0x0010)  # attributes: transactional, no codec, create time
    + struct.pack(">i", 1)  # lastOffsetDelta
    + struct.pack(">q", 1_700_000_000_000)  # baseTimestamp
    + struct.pack(">q", 1_700_000_000_005)  # maxTimestamp
    + struct.pack(">q", 4242)  # producerId
    + struct.pack(">h", 3)  # producerEpoch
    + struct.pack(">i", 17)  # baseSequence
    + struct.pack(">i", 1)  # records count
    + RECORD
)
BATCH = (
    struct.pack(">q", 100)  # baseOffset
    + struct.pack(">i", 4 + 1 + 4 + len(AFTER_CRC))  # batchLength: from partitionLeaderEpoch on
    + struct.pack(">i", 7)  # partitionLeaderEpoch
    + struct.pack(">b", 2)  # magic
    + struct.pack(">I", crc32c.crc32c(AFTER_CRC))
    + AFTER_CRC
)


def test_record_body_is_what_the_layout_says() -> None:
    assert RECORD[0] == 0x20 and len(RECORD) == 17
    assert len(BATCH) == 61 + len(RECORD)


def test_encoder_writes_the_hand_computed_batch() -> None:
    record = Record(timestamp_delta=5, offset_delta=1, key=b"k", value=b"hello", headers=[("h", b"v")])
    data = encode_batch(
        [record],
        base_offset=100,
        partition_leader_epoch=7,
        is_transactional=True,
        base_timestamp=1_700_000_000_000,
        producer_id=4242,
        producer_epoch=3,
        base_sequence=17,
    )
    assert data.hex() == BATCH.hex()


def test_decoder_reads_the_hand_computed_batch() -> None:
    decoded = decode_records(BATCH)
    [batch] = decoded.entries
    assert isinstance(batch, RecordBatch)
    assert batch.base_offset == 100
    assert batch.batch_length == len(BATCH) - 12
    assert batch.partition_leader_epoch == 7
    assert batch.magic == 2
    assert batch.crc == crc32c.crc32c(AFTER_CRC)
    assert batch.compression is Compression.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert batch.is_transactional and not batch.is_control and not batch.has_delete_horizon
    assert batch.last_offset_delta == 1
    assert (batch.base_timestamp, batch.max_timestamp) == (1_700_000_000_000, 1_700_000_000_005)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4242, 3, 17)
    [record] = batch.records
    assert (record.attributes, record.timestamp_delta, record.offset_delta) == (0, 5, 1)
    assert (record.key, record.value, record.headers) == (b"k", b"hello", [("h", b"v")])
    assert (record.offset, record.timestamp) == (101, 1_700_000_000_005)


def test_legacy_v1_message_by_hand() -> None:
    # crc uint32 | magic 1 | attributes 0 | timestamp int64 | key -1 (null) | value length 2, "hi"
    after_crc = bytes([1, 0]) + struct.pack(">q", 1234) + struct.pack(">i", -1) + struct.pack(">i", 2) + b"hi"
    message = struct.pack(">qiI", 9, 4 + len(after_crc), zlib.crc32(after_crc)) + after_crc
    assert encode_legacy([LegacyMessage(offset=9, value=b"hi", timestamp=1234)], magic=1) == message
    [decoded] = decode_records(message).entries
    assert decoded == LegacyMessage(
        offset=9, crc=zlib.crc32(after_crc), magic=1, attributes=0, timestamp=1234, key=None, value=b"hi"
    )


def test_legacy_v0_message_by_hand() -> None:
    # crc uint32 | magic 0 | attributes 0 | key length 1, "k" | value -1 (null): no timestamp in v0
    after_crc = bytes([0, 0]) + struct.pack(">i", 1) + b"k" + struct.pack(">i", -1)
    message = struct.pack(">qiI", 0, 4 + len(after_crc), zlib.crc32(after_crc)) + after_crc
    assert encode_legacy([LegacyMessage(offset=0, key=b"k")], magic=0) == message
    [decoded] = decode_records(message).entries
    assert isinstance(decoded, LegacyMessage)
    assert (decoded.magic, decoded.timestamp, decoded.key, decoded.value) == (0, None, b"k", None)
    assert decoded.timestamp_type is TimestampType.NO_TIMESTAMP

"""One magic 2 record batch: the 61-byte header, the CRC32C, and the (decompressed) records.

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 | crc uint32
    attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    producerId int64 | producerEpoch int16 | baseSequence int32 | recordCount int32 | records...

The CRC covers everything from attributes to the end of the batch; only the records that follow
the header are compressed.
"""

from __future__ import annotations

import struct

from kafka_epochs.errors import DecodeError
from kafka_epochs.records.budget import DecompressionBudget
from kafka_epochs.records.codecs import codec_problem
from kafka_epochs.records.control import parse_control_record
from kafka_epochs.records.cursor import Cursor
from kafka_epochs.records.model import COMPRESSION_MASK, Compression, RecordBatch
from kafka_epochs.records.record_decoder import MIN_RECORD_SIZE, read_records

HEADER = struct.Struct(">qiibIhiqqqhii")
#: Where the fields the CRC covers start, counted from the batch's first byte.
CRC_FROM = 21
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_COUNT_AT = 57
#: The bytes that follow the batchLength field in a batch with no records.
MIN_BATCH_LENGTH = HEADER.size - 12


def read_batch(
    data: bytes, pos: int, end: int, *, path: str, budget: DecompressionBudget, verify_crc: bool
) -> RecordBatch:
    """The batch in ``data[pos:end]``; the caller has checked that ``end`` is where its length says."""
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = HEADER.unpack_from(data, pos)
    if verify_crc:
        import crc32c

        actual = crc32c.crc32c(memoryview(data)[pos + CRC_FROM : end])
        if actual != crc:
            raise DecodeError(
                f"crc mismatch: the batch says {crc:#010x}, its bytes give {actual:#010x} (CRC32C)",
                pos + _CRC_AT,
                f"{path}.crc",
            )
    problem = codec_problem(attributes & COMPRESSION_MASK, magic)
    if problem:
        raise DecodeError(problem, pos + _ATTRIBUTES_AT, f"{path}.attributes")
    if count < 0:
        raise DecodeError(f"record count {count} is negative", pos + _COUNT_AT, f"{path}.record_count")
    batch = RecordBatch(
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
    )
    records_at = pos + HEADER.size
    codec = batch.compression
    if codec is Compression.NONE:
        cur = Cursor(data, records_at, end)
        if count <= cur.remaining // MIN_RECORD_SIZE:  # (more cannot fit: read_records says so)
            budget.take_records(count, pos + _COUNT_AT, f"{path}.record_count")
    else:
        budget.take_records(count, pos + _COUNT_AT, f"{path}.record_count")  # before decompressing
        # A view, not a copy: a large compressed payload should not be held twice.
        payload = memoryview(data)[records_at:end]
        plain = budget.decompress(codec, payload, magic, at=records_at, path=f"{path}.records")
        cur = Cursor(plain, decompressed_at=records_at)
    batch.records = read_records(cur, count, batch, path)
    if batch.is_control:
        for i, record in enumerate(batch.records):
            try:
                batch.control_records.append(parse_control_record(record))
            except DecodeError as exc:
                raise DecodeError(exc.reason, records_at, f"{path}.records[{i}].{exc.path}") from None
    return batch

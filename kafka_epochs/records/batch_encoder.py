"""Write magic 2 record batches: records, optional compression, lengths and the CRC32C.

``encode_batch`` builds a batch from records and header settings; ``write_batch`` writes a
``RecordBatch`` exactly as its fields say (as ``decode_records`` returns it), recomputing only
``batch_length`` and ``crc``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kafka_epochs.errors import EncodeError
from kafka_epochs.records import codecs
from kafka_epochs.records.model import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    Compression,
    Record,
    RecordBatch,
    TimestampType,
)
from kafka_epochs.records.record_encoder import record_bytes
from kafka_epochs.records.wire_values import check_int

#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc: the part before what the CRC covers.
_HEAD = struct.Struct(">qiibI")
#: attributes .. recordCount: the header fields the CRC covers.
_CRC_COVERED = struct.Struct(">hiqqqhii")
#: batchLength counts from partitionLeaderEpoch: 4 + 1 + 4 bytes of head, then the covered part.
_LENGTH_BEFORE_RECORDS = 9 + _CRC_COVERED.size


def encode_batch(
    records: Sequence[Record],
    *,
    compression: Compression = Compression.NONE,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    has_delete_horizon: bool = False,
    base_timestamp: int = 0,
    max_timestamp: int | None = None,
    last_offset_delta: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """One v2 batch of ``records`` (their deltas are relative to ``base_offset``/``base_timestamp``).

    ``max_timestamp`` defaults to ``base_timestamp`` plus the largest timestamp delta, and
    ``last_offset_delta`` to the last record's offset delta (0 for no records), as a producer
    writes them. With ``has_delete_horizon``, ``base_timestamp`` is the delete horizon (KIP-534).
    """
    if timestamp_type not in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME):
        raise EncodeError(f"timestamp_type: a v2 batch has CREATE_TIME or LOG_APPEND_TIME, not {timestamp_type!r}")
    try:
        attributes = int(Compression(compression))
    except ValueError:
        raise EncodeError(f"compression: unknown codec {compression!r}") from None
    if timestamp_type is TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    if has_delete_horizon:
        attributes |= DELETE_HORIZON_BIT
    records = _checked_records(records)
    if max_timestamp is None:
        base_timestamp = check_int(base_timestamp, 64, "base_timestamp")
        # Bad deltas are left for write_batch to name.
        deltas = [r.timestamp_delta for r in records if type(r.timestamp_delta) is int]
        max_timestamp = base_timestamp + max(deltas, default=0)
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset_delta if records else 0
    batch = RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records=records,
    )
    return write_batch(batch)


def write_batch(batch: RecordBatch) -> bytes:
    """``batch`` on the wire, its records compressed by the codec its attributes name."""
    if batch.magic != 2:
        raise EncodeError(f"magic: a record batch has magic 2, not {batch.magic} (use the legacy encoder)")
    attributes = check_int(batch.attributes, 16, "attributes")
    problem = codecs.codec_problem(attributes & COMPRESSION_MASK, 2)
    if problem:
        raise EncodeError(f"attributes: {problem}")
    records = _checked_records(batch.records)
    body = b"".join([record_bytes(record, f"records[{i}]") for i, record in enumerate(records)])
    payload = codecs.compress(Compression(attributes & COMPRESSION_MASK), body, 2)
    covered = _CRC_COVERED.pack(
        attributes,
        check_int(batch.last_offset_delta, 32, "last_offset_delta"),
        check_int(batch.base_timestamp, 64, "base_timestamp"),
        check_int(batch.max_timestamp, 64, "max_timestamp"),
        check_int(batch.producer_id, 64, "producer_id"),
        check_int(batch.producer_epoch, 16, "producer_epoch"),
        check_int(batch.base_sequence, 32, "base_sequence"),
        check_int(len(records), 32, "records"),
    )
    import crc32c

    crc = crc32c.crc32c(payload, crc32c.crc32c(covered))
    head = _HEAD.pack(
        check_int(batch.base_offset, 64, "base_offset"),
        check_int(_LENGTH_BEFORE_RECORDS + len(payload), 32, "batch_length"),
        check_int(batch.partition_leader_epoch, 32, "partition_leader_epoch"),
        2,
        crc,
    )
    return head + covered + payload


def _checked_records(records: Sequence[Record]) -> list[Record]:
    records = list(records)
    for i, record in enumerate(records):
        if not isinstance(record, Record):
            raise EncodeError(f"records[{i}]: expected a Record, got {type(record).__name__}")
    return records

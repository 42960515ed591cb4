"""Cross-check against an independent implementation: kafka-python 3.0.12's ``kafka.record``.

Both directions, every magic, every codec kafka-python supports (its codecs come from the dev
extra: python-snappy, lz4, zstandard, xxhash): what it builds we decode to the same offsets,
timestamps, keys, values and headers as it reads back itself, and what we build it reads back
as we wrote it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords, MemoryRecordsBuilder

from kafka_epochs.records import (
    Compression,
    ControlRecordType,
    LegacyMessage,
    Record,
    RecordBatch,
    decode_records,
    encode_batch,
    encode_legacy,
    encode_records,
    end_transaction_marker,
)

from .helpers import headers, legacy_lists, maybe_bytes, record_lists

CASES = [(m, c) for m in (0, 1, 2) for c in Compression if not (m < 2 and c is Compression.ZSTD)]
IDS = [f"v{m}-{c.name}" for m, c in CASES]
CHECK = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Row = tuple[int, int | None, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def theirs(data: bytes) -> list[Row]:
    """What kafka-python reads from ``data``, one row per record, after checking every CRC."""
    rows = []
    for batch in MemoryRecords(data):
        assert batch.validate_crc()
        for record in batch:
            rows.append((record.offset, record.timestamp, record.key, record.value, list(record.headers)))
    return rows


def ours(data: bytes) -> list[Row]:
    rows: list[Row] = []
    for entry in decode_records(data):
        if isinstance(entry, RecordBatch):
            rows += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in entry.records]
        else:
            for message in entry.inner if entry.inner is not None else [entry]:
                rows.append((message.offset, message.timestamp, message.key, message.value, []))
    return rows


appends = st.lists(
    st.tuples(st.integers(0, 1 << 42), maybe_bytes | st.binary(min_size=100, max_size=3000), maybe_bytes, headers),
    min_size=1,
    max_size=6,
)


@pytest.mark.parametrize(("magic", "codec"), CASES, ids=IDS)
@CHECK
# kafka-python writes v2 offsets as deltas from 0 (the broker assigns the base), so int32 ones.
@given(rows=appends, base_offset=st.integers(0, 1 << 30), producer=st.booleans())
def test_what_kafka_python_builds_we_decode(
    magic: int, codec: Compression, rows: list[Any], base_offset: int, producer: bool
) -> None:
    builder = MemoryRecordsBuilder(magic, int(codec), batch_size=1 << 22, offset=base_offset)
    if producer and magic == 2:
        builder.set_producer_state(producer_id=77, producer_epoch=3, base_sequence=12, is_transactional=True)
    for timestamp, value, key, record_headers in rows:
        assert builder.append(timestamp, key, value, record_headers if magic == 2 else None) is not None
    builder.close()
    data = bytes(builder.buffer())

    assert ours(data) == theirs(data)
    assert [(k, v) for _, _, k, v, _ in ours(data)] == [(k, v) for _, v, k, _ in rows]
    decoded = decode_records(data)
    if magic == 2:
        [batch] = decoded.entries
        assert isinstance(batch, RecordBatch)
        [their_batch] = list(MemoryRecords(data))
        assert batch.compression == their_batch.compression_type  # NONE when compressing did not pay
        assert (batch.producer_id, batch.is_transactional) == ((77, True) if producer else (-1, False))
        assert [r.headers for r in batch.records] == [h for *_, h in rows]
    # Re-encoding reproduces their bytes where the codec settings agree (no codec), and the
    # same values otherwise (their gzip level, lz4 frame flags and zstd header differ from ours).
    again = encode_records(decoded)
    if all(getattr(e, "compression", None) is Compression.NONE for e in decoded.entries):
        assert again == data
    assert ours(again) == ours(data)


@pytest.mark.parametrize(("magic", "codec"), CASES, ids=IDS)
@CHECK
@given(records=record_lists(), messages=legacy_lists(min_size=1), base_offset=st.integers(0, 1 << 40))
def test_what_we_build_kafka_python_decodes(
    magic: int, codec: Compression, records: list[Record], messages: list[LegacyMessage], base_offset: int
) -> None:
    if magic == 2:
        for record in records:
            # Record attributes are unused (always 0) in Kafka; kafka-python reads the int8 as a
            # varint, so a byte of 0x80 or more would derail it.
            record.attributes = 0
        data = encode_batch(
            records,
            compression=codec,
            base_offset=base_offset,
            base_timestamp=1 << 40,
            producer_id=9,
            producer_epoch=1,
            base_sequence=0,
            is_transactional=True,
        )
        if not records:
            assert theirs(data) == []
            return
        [their_batch] = list(MemoryRecords(data))
        assert their_batch.compression_type == codec
        assert (their_batch.producer_id, their_batch.producer_epoch, their_batch.is_transactional) == (9, 1, True)
    else:
        data = encode_legacy(messages, magic=magic, compression=codec)
    assert theirs(data) == ours(data)


def test_kafka_python_reads_our_commit_marker() -> None:
    marker = end_transaction_marker(ControlRecordType.COMMIT, coordinator_epoch=12)
    data = encode_batch(
        [marker], is_control=True, is_transactional=True, producer_id=5, producer_epoch=2, base_offset=40
    )
    [their_batch] = list(MemoryRecords(data))
    assert their_batch.is_control_batch and their_batch.is_transactional
    [their_record] = list(their_batch)
    assert their_record.commit and not their_record.abort and their_record.version == 0
    assert their_record.offset == 40

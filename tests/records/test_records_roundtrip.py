"""encode -> decode gives the values back, and decode -> encode gives the bytes back, for every
magic and every codec it allows.

Every codec here is deterministic (stdlib zlib with a fixed header, cramjam's snappy, lz4 and
zstd at fixed settings), so re-encoding a decoded entry reproduces our own bytes exactly.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs.errors import EncodeError
from kafka_epochs.records import (
    Compression,
    LegacyMessage,
    RecordBatch,
    TimestampType,
    decode_records,
    encode_batch,
    encode_legacy,
    encode_records,
    write_message,
)

from .helpers import ALL_CODECS, INT16, INT32, INT64, LEGACY_CODECS, legacy_lists, record_lists

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@FAST
@given(
    records=record_lists(),
    base_offset=INT64,
    leader_epoch=INT32,
    base_timestamp=st.integers(0, 1 << 50),
    producer_id=INT64,
    producer_epoch=INT16,
    base_sequence=INT32,
    flags=st.integers(0, 15),
    log_append=st.booleans(),
)
def test_v2_batches_round_trip(
    codec: Compression,
    records,
    base_offset,
    leader_epoch,
    base_timestamp,  # type: ignore[no-untyped-def]
    producer_id,
    producer_epoch,
    base_sequence,
    flags,
    log_append,
) -> None:
    data = encode_batch(
        records,
        compression=codec,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        is_transactional=bool(flags & 1),
        has_delete_horizon=bool(flags & 2),
        base_timestamp=base_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    decoded = decode_records(data)
    assert decoded.truncated_tail == 0
    [batch] = decoded.entries
    assert isinstance(batch, RecordBatch)
    assert batch.records == records
    assert batch.compression is codec
    assert (batch.base_offset, batch.partition_leader_epoch, batch.base_timestamp) == (
        base_offset,
        leader_epoch,
        base_timestamp,
    )
    assert (batch.producer_id, batch.producer_epoch) == (producer_id, producer_epoch)
    assert batch.base_sequence == base_sequence
    assert batch.is_transactional == bool(flags & 1)
    assert batch.has_delete_horizon == bool(flags & 2)
    assert batch.batch_length == len(data) - 12
    for record in batch.records:
        assert record.offset == base_offset + record.offset_delta
        expected_time = batch.max_timestamp if log_append else base_timestamp + record.timestamp_delta
        assert record.timestamp == expected_time
    assert encode_records(decoded) == data


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
@FAST
@given(messages=legacy_lists(min_size=1), log_append=st.booleans())
def test_legacy_message_sets_round_trip(
    magic: int, codec: Compression, messages: list[LegacyMessage], log_append: bool
) -> None:
    timestamp_type = TimestampType.LOG_APPEND_TIME if log_append and magic == 1 else TimestampType.CREATE_TIME
    data = encode_legacy(messages, magic=magic, compression=codec, timestamp_type=timestamp_type)
    decoded = decode_records(data)
    if codec is Compression.NONE:
        got = decoded.entries
    else:
        [wrapper] = decoded.entries
        assert isinstance(wrapper, LegacyMessage)
        assert wrapper.compression is codec and wrapper.key is None
        assert wrapper.offset == messages[-1].offset
        assert wrapper.inner is not None
        got = list(wrapper.inner)
    assert all(isinstance(m, LegacyMessage) and m.magic == magic for m in got)
    assert [(m.offset, m.key, m.value) for m in got] == [(m.offset, m.key, m.value) for m in messages]  # type: ignore[union-attr]
    expected_times = [m.timestamp for m in messages] if magic == 1 else [None] * len(messages)
    assert [m.timestamp for m in got] == expected_times  # type: ignore[union-attr]
    assert {m.timestamp_type for m in got} == {TimestampType.NO_TIMESTAMP if magic == 0 else timestamp_type}  # type: ignore[union-attr]
    assert encode_records(decoded) == data


@FAST
@given(
    parts=st.lists(
        st.tuples(
            st.sampled_from([0, 1, 2]),
            st.sampled_from(ALL_CODECS),
            record_lists(3),
            legacy_lists(min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_mixed_formats_in_one_records_field(parts) -> None:  # type: ignore[no-untyped-def]
    """A log upgraded across formats hands out v0, v1 and v2 entries side by side."""
    chunks = []
    for magic, codec, records, messages in parts:
        if magic == 2:
            chunks.append(encode_batch(records, compression=codec))
        else:
            chunks.append(
                encode_legacy(
                    messages, magic=magic, compression=codec if codec is not Compression.ZSTD else Compression.NONE
                )
            )
    data = b"".join(chunks)
    decoded = decode_records(data)
    assert encode_records(decoded) == data
    assert [e.magic for e in decoded.entries if isinstance(e, RecordBatch)] == [2] * sum(p[0] == 2 for p in parts)


def test_empty_records_field_is_no_entries() -> None:
    decoded = decode_records(b"")
    assert decoded.entries == [] and decoded.truncated_tail == 0
    assert len(decoded) == 0 and list(decoded) == []


def test_bytearray_and_memoryview_input_decode_like_bytes() -> None:
    data = encode_batch([], compression=Compression.NONE)
    assert decode_records(bytearray(data)) == decode_records(memoryview(data)) == decode_records(data)


def test_encode_batch_defaults_follow_the_producer() -> None:
    from kafka_epochs.records import Record

    records = [Record(offset_delta=i, timestamp_delta=t) for i, t in enumerate([0, 30, 10])]
    [batch] = decode_records(encode_batch(records, base_timestamp=1_000)).entries
    assert isinstance(batch, RecordBatch)
    assert batch.max_timestamp == 1_030 and batch.last_offset_delta == 2 and batch.last_offset == 2
    assert batch.timestamp_type is TimestampType.CREATE_TIME and not batch.is_control


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("high_bits", [0x80, 0xC8, 0xF8])
def test_legacy_attribute_bits_kafka_never_set_still_round_trip(magic: int, high_bits: int) -> None:
    # a peer may set the unused high bits: the decoder gives the byte as 0-255, and the encoder
    # takes back exactly what the decoder gave (and the same byte read signed)
    message = LegacyMessage(offset=3, magic=magic, attributes=high_bits, timestamp=7 if magic else None, value=b"v")
    data = write_message(message)
    (got,) = decode_records(data)
    assert isinstance(got, LegacyMessage) and got.attributes == high_bits
    assert write_message(got) == data
    assert write_message(dataclasses.replace(got, attributes=high_bits - 256)) == data
    with pytest.raises(EncodeError, match="attributes is one byte"):
        write_message(dataclasses.replace(got, attributes=256))

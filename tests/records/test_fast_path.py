"""The fast record reader accepts exactly what the checked one accepts, with the same result."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import DecodeError
from kafka_epochs.records import RecordBatch, TimestampType
from kafka_epochs.records.cursor import Cursor
from kafka_epochs.records.fast_reader import read_records_fast
from kafka_epochs.records.record_decoder import read_records_checked
from kafka_epochs.records.record_encoder import record_bytes
from kafka_epochs.wire.primitives import Malformed

from .helpers import record_lists


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=record_lists(5), data=st.data(), log_append=st.booleans())
def test_fast_and_checked_readers_agree(records, data, log_append: bool) -> None:  # type: ignore[no-untyped-def]
    payload = bytearray(b"".join(record_bytes(r, "r") for r in records))
    for _ in range(data.draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):  # often valid, often not
        if payload:
            payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.integers(0, 3)) == 0:
        payload += data.draw(st.binary(max_size=3))
    # Bytes past ``end`` (the next batch, in a real buffer) must not change the outcome.
    trailing = data.draw(st.binary(max_size=12))
    buffer = bytes(payload) + trailing
    count = data.draw(st.just(len(records)) | st.integers(0, len(records) + 1))
    batch = RecordBatch(base_offset=1000, base_timestamp=5000, max_timestamp=9000, attributes=0x08 if log_append else 0)
    assert batch.timestamp_type is (TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME)
    try:
        fast = read_records_fast(buffer, 0, len(payload), count, 1000, 5000, 9000 if log_append else None)
    except (Malformed, IndexError, UnicodeDecodeError):
        fast = None
    try:
        checked = read_records_checked(Cursor(buffer, 0, len(payload)), count, batch, "batch")
    except DecodeError:
        checked = None
    assert (fast is None) == (checked is None)
    if fast is not None and checked is not None:
        assert fast == checked
        assert [(r.offset, r.timestamp) for r in fast] == [(r.offset, r.timestamp) for r in checked]

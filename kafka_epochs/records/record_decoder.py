"""The records inside a v2 batch (after decompression): length-prefixed, varint-encoded fields.

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
    keyLength varint | key | valueLength varint | value
    headerCount varint | per header: keyLength varint | key (UTF-8) | valueLength varint | value

Varints are zig-zag; a length of -1 is null (not allowed for a header key).

Valid records go through ``fast_reader``; this module's checked reader runs only when that one
fails, to name the field and the byte.
"""

from __future__ import annotations

from kafka_epochs.records.cursor import Cursor
from kafka_epochs.records.fast_reader import read_records_fast
from kafka_epochs.records.model import Record, RecordBatch, TimestampType
from kafka_epochs.wire.primitives import Malformed

#: The smallest record: a one-byte length, then six one-byte fields.
MIN_RECORD_SIZE = 7
#: The smallest header: two one-byte lengths (empty key, empty value).
_MIN_HEADER_SIZE = 2


def read_records(cur: Cursor, count: int, batch: RecordBatch, path: str) -> list[Record]:
    """``count`` records filling ``cur`` exactly; absolute offsets and timestamps from ``batch``."""
    if count > cur.remaining // MIN_RECORD_SIZE:
        raise cur.fail(f"record count {count} cannot fit in {cur.remaining} bytes", path, "record_count")
    try:
        return read_records_fast(
            cur.data, cur.pos, cur.end, count, batch.base_offset, batch.base_timestamp, _fixed_timestamp(batch)
        )
    except (Malformed, IndexError, UnicodeDecodeError):
        pass  # something is wrong: the checked reader finds what, and where
    return read_records_checked(cur, count, batch, path)


def read_records_checked(cur: Cursor, count: int, batch: RecordBatch, path: str) -> list[Record]:
    """As ``read_records``, one checked field at a time; raises a DecodeError naming the field."""
    base_offset = batch.base_offset
    base_timestamp = batch.base_timestamp
    fixed_timestamp = _fixed_timestamp(batch)
    records = []
    for i in range(count):
        record = _read_record(cur, f"{path}.records[{i}]")
        record.offset = base_offset + record.offset_delta
        record.timestamp = base_timestamp + record.timestamp_delta if fixed_timestamp is None else fixed_timestamp
        records.append(record)
    if cur.remaining:
        raise cur.fail(f"{cur.remaining} bytes follow the last of {count} records", path, "records")
    return records


def _fixed_timestamp(batch: RecordBatch) -> int | None:
    """The broker's time, which replaces every record's own in a LOG_APPEND_TIME batch (KIP-32)."""
    if batch.timestamp_type is TimestampType.LOG_APPEND_TIME:
        return batch.max_timestamp
    return None


def _read_record(cur: Cursor, path: str) -> Record:
    start = cur.pos
    length = cur.varint(path, "length")
    if length < 0 or length > cur.remaining:
        raise cur.fail(f"record length {length} does not fit in the {cur.remaining} bytes left", path, "length", start)
    body_start = cur.pos
    end = body_start + length
    outer_end = cur.end
    cur.end = end  # no field may read past its record
    attributes = cur.int8(path, "attributes")
    timestamp_delta = cur.varlong(path, "timestamp_delta")
    offset_delta = cur.varint(path, "offset_delta")
    key = _read_nullable_bytes(cur, path, "key")
    value = _read_nullable_bytes(cur, path, "value")
    header_count = cur.varint(path, "header_count")
    if header_count < 0 or header_count > cur.remaining // _MIN_HEADER_SIZE:
        raise cur.fail(f"header count {header_count} cannot fit in {cur.remaining} bytes", path, "header_count")
    headers = []
    for j in range(header_count):
        headers.append(_read_header(cur, f"{path}.headers[{j}]"))
    if cur.pos != end:
        # Reads stop at ``end``, so the fields can only have taken fewer bytes than the length says.
        raise cur.fail(
            f"record length says {length} bytes but its fields take {cur.pos - body_start}", path, "length", start
        )
    cur.end = outer_end
    return Record(attributes, timestamp_delta, offset_delta, key, value, headers)


def _read_nullable_bytes(cur: Cursor, path: str, name: str) -> bytes | None:
    at = cur.pos
    size = cur.varint(path, name)
    if size == -1:
        return None
    if size < -1:
        raise cur.fail(f"invalid length {size}", path, name, at)
    return cur.take(size, path, name)


def _read_header(cur: Cursor, path: str) -> tuple[str, bytes | None]:
    at = cur.pos
    size = cur.varint(path, "key")
    if size < 0:
        raise cur.fail(f"header key length {size}: a header key cannot be null", path, "key", at)
    raw = cur.take(size, path, "key")
    try:
        key = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise cur.fail(f"header key is not UTF-8: {exc.reason}", path, "key", at) from None
    return key, _read_nullable_bytes(cur, path, "value")

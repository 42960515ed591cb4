"""The fast path for v2 records: one loop with the one-byte varints inlined.

It accepts exactly what the checked reader (``record_decoder``) accepts, but does not say why
it rejects: on anything wrong it raises (``Malformed``, ``IndexError``, ``UnicodeDecodeError``),
and the caller re-reads with the checked reader, which names the field. Every length is checked
against the record's end before use, so a lie in the bytes costs no more than the bytes.
"""

from __future__ import annotations

from kafka_epochs.records.model import Record
from kafka_epochs.wire.primitives import Malformed, read_uvarint, read_uvarlong


def read_records_fast(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None
) -> list[Record]:
    """``count`` records filling ``data[pos:end]`` exactly; raises on anything malformed."""
    records: list[Record] = []
    append = records.append
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        length = (b >> 1) ^ -(b & 1)
        stop = pos + length
        if length < 0 or stop > end:
            raise Malformed("record length")
        attributes = data[pos]
        if attributes > 127:
            attributes -= 256
        b = data[pos + 1]
        if b < 0x80:
            pos += 2
        else:
            b, pos = read_uvarlong(data, pos + 1)
        timestamp_delta = (b >> 1) ^ -(b & 1)
        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        offset_delta = (b >> 1) ^ -(b & 1)

        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        size = (b >> 1) ^ -(b & 1)
        if size >= 0:
            if pos + size > stop:
                raise Malformed("key")
            key: bytes | None = data[pos : pos + size]
            pos += size
        elif size == -1:
            key = None
        else:
            raise Malformed("key length")

        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        size = (b >> 1) ^ -(b & 1)
        if size >= 0:
            if pos + size > stop:
                raise Malformed("value")
            value: bytes | None = data[pos : pos + size]
            pos += size
        elif size == -1:
            value = None
        else:
            raise Malformed("value length")

        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        header_count = (b >> 1) ^ -(b & 1)
        headers: list[tuple[str, bytes | None]] = []
        if header_count:
            if header_count < 0 or header_count > (stop - pos) // 2:
                raise Malformed("header count")
            pos = _read_headers(data, pos, stop, header_count, headers)
        # Reads never check ``stop`` on the way, but positions only grow: one past it shows here.
        if pos != stop:
            raise Malformed("record length")
        timestamp = base_timestamp + timestamp_delta if fixed_timestamp is None else fixed_timestamp
        append(
            Record(
                attributes, timestamp_delta, offset_delta, key, value, headers, base_offset + offset_delta, timestamp
            )
        )
    if pos != end:
        raise Malformed("bytes after the last record")
    return records


def _read_headers(data: bytes, pos: int, stop: int, count: int, headers: list[tuple[str, bytes | None]]) -> int:
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        size = (b >> 1) ^ -(b & 1)
        if size < 0 or pos + size > stop:
            raise Malformed("header key")
        key = data[pos : pos + size].decode("utf-8")
        pos += size
        b = data[pos]
        if b < 0x80:
            pos += 1
        else:
            b, pos = read_uvarint(data, pos)
        size = (b >> 1) ^ -(b & 1)
        if size >= 0:
            if pos + size > stop:
                raise Malformed("header value")
            headers.append((key, data[pos : pos + size]))
            pos += size
        elif size == -1:
            headers.append((key, None))
        else:
            raise Malformed("header value length")
    return pos

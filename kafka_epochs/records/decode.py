"""``decode_records``: the content of a Produce or Fetch ``records`` field, entry by entry.

Each entry starts with an int64 offset and an int32 size, and has its magic byte at the same
place (byte 16) in every format, so entries of different formats can follow one another, as they
do in a log upgraded from one format to the next.
"""

from __future__ import annotations

import struct

from kafka_epochs.errors import DecodeError
from kafka_epochs.records.batch_decoder import MIN_BATCH_LENGTH, read_batch
from kafka_epochs.records.budget import (
    DEFAULT_MAX_BATCH_RECORDS,
    DEFAULT_MAX_RECORDS,
    DecompressionBudget,
    RecordBudget,
)
from kafka_epochs.records.codecs import DEFAULT_MAX_DECOMPRESSED
from kafka_epochs.records.cursor import Cursor
from kafka_epochs.records.legacy_decoder import LOG_OVERHEAD, MIN_MESSAGE_SIZE, read_message
from kafka_epochs.records.model import BadEntry, DecodedRecords

_SIZE = struct.Struct(">i")
_SIZE_AT = 8
_MAGIC_AT = 16
#: No entry of any format is smaller than a magic 0 message with null key and value.
_SMALLEST_SIZE = min(MIN_MESSAGE_SIZE.values())


def decode_records(
    data: bytes | bytearray | memoryview,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    verify_crc: bool = True,
    allow_truncated_tail: bool = True,
    strict: bool = False,
    keep_going: bool = False,
    max_records: int = DEFAULT_MAX_RECORDS,
    max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    budget: DecompressionBudget | None = None,
) -> DecodedRecords:
    """Decode every record batch (magic 2) and legacy message (magic 0/1) in ``data``.

    ``max_decompressed`` bounds the bytes that decompression may produce over the whole call
    (default 64 MiB); past it, a DecodeError, raised before more than that is held.
    A last entry that the data ends inside of is not an error: brokers cut Fetch responses at the
    fetch size. Its length goes to ``truncated_tail``; pass ``allow_truncated_tail=False`` (for a
    Produce request, say) to have it raise instead.

    What real clients send and brokers store is decoded even where Kafka's rules would refuse it
    (zstd in a magic 1 message, from kafkajs), and said in ``warnings``; ``strict=True`` refuses it.

    ``keep_going=True`` keeps every entry that decodes: a bad one goes to ``bad`` (with its error)
    and decoding goes on after it, since each entry's size says where the next one starts. Only a
    size that cannot be trusted ends the walk, as a last bad entry spanning the rest.

    Records are budgeted too (:mod:`~kafka_epochs.records.budget`): a batch claiming more than
    ``max_batch_records`` records, or more than are left of ``max_records`` for the call, is a bad
    entry, refused before it is read. ``budget`` replaces the three limits by a budget the caller
    shares across calls (every records field of one exchange, say).
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    if budget is None:
        budget = DecompressionBudget(
            max_decompressed, records=RecordBudget(max_records), max_batch_records=max_batch_records
        )
    result = DecodedRecords()
    pos = 0
    while pos < len(data):
        if not keep_going:
            pos = _entry(data, pos, result, budget, verify_crc, allow_truncated_tail, strict)
            continue
        try:
            pos = _entry(data, pos, result, budget, verify_crc, allow_truncated_tail, strict)
        except DecodeError as e:
            end = _entry_end(data, pos)
            result.bad.append(BadEntry(len(result.entries), pos, end - pos, e))
            pos = end
    return result


def _entry(
    data: bytes,
    pos: int,
    result: DecodedRecords,
    budget: DecompressionBudget,
    verify_crc: bool,
    allow_truncated_tail: bool,
    strict: bool,
) -> int:
    """Decode the entry at ``pos`` into ``result``; returns where the next one starts (the end
    of the data after a cut-off last entry)."""
    entries = result.entries
    total = len(data)
    path = f"batches[{len(entries) + len(result.bad)}]"  # bad entries keep their place
    left = total - pos
    if left < LOG_OVERHEAD:
        return _cut_off(result, left, LOG_OVERHEAD, pos, path, allow_truncated_tail, total)
    (size,) = _SIZE.unpack_from(data, pos + _SIZE_AT)
    if size < _SMALLEST_SIZE:
        raise DecodeError(
            f"entry size {size} is below the smallest entry ({_SMALLEST_SIZE} bytes)",
            pos + _SIZE_AT,
            f"{path}.{_size_name(data, pos)}",
        )
    if size > left - LOG_OVERHEAD:
        return _cut_off(result, left, LOG_OVERHEAD + size, pos, path, allow_truncated_tail, total)
    end = pos + LOG_OVERHEAD + size
    magic = data[pos + _MAGIC_AT]
    if magic == 2:
        if size < MIN_BATCH_LENGTH:
            raise DecodeError(
                f"batch length {size} is below the {MIN_BATCH_LENGTH} bytes of a batch header",
                pos + _SIZE_AT,
                f"{path}.batch_length",
            )
        entries.append(read_batch(data, pos, end, path=path, budget=budget, verify_crc=verify_crc))
    elif magic in MIN_MESSAGE_SIZE:
        entries.append(
            read_message(
                Cursor(data, pos, end),
                path,
                budget=budget,
                verify_crc=verify_crc,
                warnings=None if strict else result.warnings,
            )
        )
    else:
        signed = magic - 256 if magic > 127 else magic
        raise DecodeError(
            f"unknown magic {signed} (0 and 1 are legacy messages, 2 is a record batch)",
            pos + _MAGIC_AT,
            f"{path}.magic",
        )
    return end


def _cut_off(result: DecodedRecords, left: int, needed: int, pos: int, path: str, allowed: bool, total: int) -> int:
    if not allowed:
        raise DecodeError(f"the data ends inside an entry: {left} of its {needed} bytes are here", pos, path)
    result.truncated_tail = left
    return total


def _entry_end(data: bytes, pos: int) -> int:
    """Where the entry at ``pos`` ends by its own size field, or the end of the data when that
    size is unusable (too small to be an entry, or past the end)."""
    total = len(data)
    if total - pos < LOG_OVERHEAD:
        return total
    (size,) = _SIZE.unpack_from(data, pos + _SIZE_AT)
    if size < _SMALLEST_SIZE or size > total - pos - LOG_OVERHEAD:
        return total
    return pos + LOG_OVERHEAD + size


def _size_name(data: bytes, pos: int) -> str:
    """What the entry's format calls its size field, when its magic byte is there to tell."""
    if len(data) > pos + _MAGIC_AT and data[pos + _MAGIC_AT] == 2:
        return "batch_length"
    return "message_size"

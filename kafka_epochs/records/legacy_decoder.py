"""Legacy messages (magic 0 and 1), and the message sets compressed inside wrapper messages.

    offset int64 | messageSize int32 | crc uint32 | magic int8 | attributes int8
    [timestamp int64, magic 1 only] | keyLength int32 | key | valueLength int32 | value

The CRC32 covers magic to the end of the value; a length of -1 is null. A wrapper message has a
codec in its attributes and a compressed message set as its value. The inner messages carry the
wrapper's magic and no codec of their own. Their offsets are absolute in magic 0; in magic 1 they
count from 0 and the wrapper carries the absolute offset of the last one (KIP-31), from which the
decoder makes them absolute.
"""

from __future__ import annotations

import struct
import zlib

from kafka_epochs.records.budget import DecompressionBudget
from kafka_epochs.records.codecs import codec_problem, is_known_codec
from kafka_epochs.records.cursor import Cursor
from kafka_epochs.records.model import COMPRESSION_MASK, Compression, LegacyMessage

#: offset and messageSize: the part of an entry outside its size.
LOG_OVERHEAD = 12
#: The smallest messageSize for each magic: a message with null key and null value.
MIN_MESSAGE_SIZE = {0: 14, 1: 22}
_SIZE = struct.Struct(">i")
_CRC_AT = 12
_MAGIC_AT = 16


def read_message(
    cur: Cursor, path: str, *, budget: DecompressionBudget, verify_crc: bool, warnings: list[str] | None = None
) -> LegacyMessage:
    """The message filling ``cur`` (from its offset field to ``cur.end``), wrappers decompressed.

    A known codec that Kafka's rules do not allow with the message's magic (zstd with magic 1,
    which kafkajs writes and brokers have stored) is decoded and reported in ``warnings``; with
    ``warnings=None`` it is refused.
    """
    message = _read_plain(cur, path, verify_crc=verify_crc, warnings=warnings)
    codec = message.compression
    if codec is Compression.NONE:
        return message
    if message.value is None:
        raise cur.fail("a wrapper message needs a value", path, "value")
    value_at = cur.end - len(message.value)
    where = value_at if cur.decompressed_at < 0 else cur.decompressed_at
    plain = budget.decompress(codec, message.value, message.magic, at=where, path=f"{path}.value")
    message.inner = _read_inner(Cursor(plain, decompressed_at=where), message, path, verify_crc, budget)
    return message


def _read_plain(cur: Cursor, path: str, *, verify_crc: bool, warnings: list[str] | None = None) -> LegacyMessage:
    start = cur.pos
    offset = cur.int64(path, "offset")
    size = cur.int32(path, "message_size")
    crc = cur.int32(path, "crc") & 0xFFFFFFFF
    magic = cur.int8(path, "magic")
    if magic not in MIN_MESSAGE_SIZE:
        raise cur.fail(f"magic {magic} is not a legacy message", path, "magic", start + _MAGIC_AT)
    if size < MIN_MESSAGE_SIZE[magic]:
        raise cur.fail(
            f"message size {size} is below magic {magic}'s minimum of {MIN_MESSAGE_SIZE[magic]}",
            path,
            "message_size",
            start + 8,
        )
    if verify_crc:
        actual = zlib.crc32(memoryview(cur.data)[start + _MAGIC_AT : cur.end])
        if actual != crc:
            raise cur.fail(
                f"crc mismatch: the message says {crc:#010x}, its bytes give {actual:#010x} (CRC32)",
                path,
                "crc",
                start + _CRC_AT,
            )
    attributes = cur.int8(path, "attributes") & 0xFF
    problem = codec_problem(attributes & COMPRESSION_MASK, magic)
    if problem:
        if warnings is None or not is_known_codec(attributes & COMPRESSION_MASK):
            raise cur.fail(problem, path, "attributes", cur.pos - 1)
        warnings.append(f"{path}: {problem}; decoded anyway, as a broker may have stored it")
    timestamp = cur.int64(path, "timestamp") if magic == 1 else None
    key = _read_nullable_bytes(cur, path, "key")
    value = _read_nullable_bytes(cur, path, "value")
    if cur.remaining:
        raise cur.fail(f"{cur.remaining} bytes follow the value, inside the message size", path, "value")
    return LegacyMessage(offset, crc, magic, attributes, timestamp, key, value)


def _read_nullable_bytes(cur: Cursor, path: str, name: str) -> bytes | None:
    at = cur.pos
    size = cur.int32(path, name)
    if size == -1:
        return None
    if size < -1:
        raise cur.fail(f"invalid length {size}", path, name, at)
    return cur.take(size, path, name)


def _read_inner(
    cur: Cursor, wrapper: LegacyMessage, path: str, verify_crc: bool, budget: DecompressionBudget
) -> list[LegacyMessage]:
    inner: list[LegacyMessage] = []
    while cur.remaining:
        inner_path = f"{path}.inner[{len(inner)}]"
        start = cur.pos
        if len(inner) >= budget.max_batch_records:  # a message set has no count: it is charged as it is read
            budget.take_records(len(inner) + 1, start, inner_path)
        budget.records.take(1, start, inner_path)
        cur.need(LOG_OVERHEAD, inner_path)
        (size,) = _SIZE.unpack_from(cur.data, start + 8)
        if size < 0 or size > cur.remaining - LOG_OVERHEAD:
            raise cur.fail(
                f"message size {size} runs past the end of the decompressed message set",
                inner_path,
                "message_size",
                start + 8,
            )
        message = _read_plain(
            Cursor(cur.data, start, start + LOG_OVERHEAD + size, decompressed_at=cur.decompressed_at),
            inner_path,
            verify_crc=verify_crc,
        )
        if message.magic != wrapper.magic:
            raise cur.fail(
                f"inner message has magic {message.magic} inside a magic {wrapper.magic} wrapper",
                inner_path,
                "magic",
                start + _MAGIC_AT,
            )
        if message.compression is not Compression.NONE:
            raise cur.fail(
                "a compressed message inside a compressed message", inner_path, "attributes", start + _MAGIC_AT + 1
            )
        inner.append(message)
        cur.pos = start + LOG_OVERHEAD + size
    if not inner:
        raise cur.fail("a wrapper message with no inner messages (Kafka refuses these too)", path, "value", 0)
    if wrapper.magic == 1:
        # Relative offsets: the wrapper's offset is the absolute offset of the last inner message.
        # A producer's set, before the broker assigns offsets, has wrapper offset 0; like Kafka's
        # readers, we then leave the relative offsets as they are.
        shift = wrapper.offset - inner[-1].offset
        if shift > 0:
            for message in inner:
                message.offset += shift
    return inner

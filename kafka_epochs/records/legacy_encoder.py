"""Write legacy messages (magic 0 and 1), with the CRC32 and, for compression, a wrapper message.

``encode_legacy`` builds a message set from messages' offsets, keys, values and timestamps;
``write_message`` writes a ``LegacyMessage`` exactly as its fields say (as ``decode_records``
returns it), recomputing the size, the CRC and, for a wrapper, the compressed value from ``inner``.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from kafka_epochs.errors import EncodeError
from kafka_epochs.records import codecs
from kafka_epochs.records.model import COMPRESSION_MASK, TIMESTAMP_TYPE_BIT, Compression, LegacyMessage, TimestampType
from kafka_epochs.records.wire_values import check_bytes, check_int

_HEAD = struct.Struct(">qiI")
_LENGTH = struct.Struct(">i")
_NULL = _LENGTH.pack(-1)
#: What a v1 message without a timestamp holds in its timestamp field.
NO_TIMESTAMP = -1


def encode_legacy(
    messages: Sequence[LegacyMessage],
    *,
    magic: int = 1,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> bytes:
    """A magic ``magic`` message set of ``messages``; with compression, one wrapper message.

    Only each message's ``offset``, ``key``, ``value`` and (magic 1) ``timestamp`` are used.
    A wrapper gets the last message's offset and, in magic 1, the largest timestamp, as a
    broker writes them; magic 1 inner offsets are then written relative to the first message.
    """
    if magic not in (0, 1):
        raise EncodeError(f"magic: legacy messages have magic 0 or 1, not {magic}")
    try:
        codec = Compression(compression)
    except ValueError:
        raise EncodeError(f"compression: unknown codec {compression!r}") from None
    problem = codecs.codec_problem(codec, magic)
    if problem:
        raise EncodeError(f"compression: {problem}")
    flags = 0
    if magic == 1 and timestamp_type is TimestampType.LOG_APPEND_TIME:
        flags = TIMESTAMP_TYPE_BIT
    elif timestamp_type not in (TimestampType.CREATE_TIME, TimestampType.NO_TIMESTAMP):
        raise EncodeError(f"timestamp_type: magic {magic} cannot carry {timestamp_type!r}")
    for i, message in enumerate(messages):
        if not isinstance(message, LegacyMessage):
            raise EncodeError(f"messages[{i}]: expected a LegacyMessage, got {type(message).__name__}")
    plain = [
        LegacyMessage(
            offset=m.offset,
            magic=magic,
            attributes=flags,
            key=m.key,
            value=m.value,
            timestamp=(NO_TIMESTAMP if m.timestamp is None else m.timestamp) if magic == 1 else None,
        )
        for m in messages
    ]
    if codec is Compression.NONE:
        return b"".join([write_message(m, f"messages[{i}]") for i, m in enumerate(plain)])
    if not plain:
        raise EncodeError("messages: a compressed message set needs at least one message")
    wrapper_timestamp = max(m.timestamp for m in plain if m.timestamp is not None) if magic == 1 else None
    wrapper = LegacyMessage(
        offset=plain[-1].offset, magic=magic, attributes=codec | flags, timestamp=wrapper_timestamp, inner=plain
    )
    return write_message(wrapper, "wrapper")


def _attributes_byte(value: object, path: str) -> int:
    """The attributes byte: 0-255 as the decoder gives it, or -128..-1, the same byte read signed."""
    if type(value) is not int or not -128 <= value <= 255:
        raise EncodeError(f"{path}: attributes is one byte (0 to 255, or -128 to -1 read signed), not {value!r}")
    return value & 0xFF


def write_message(message: LegacyMessage, path: str = "message") -> bytes:
    """``message`` with its offset/size header; a wrapper's value is made from ``message.inner``."""
    magic = message.magic
    if magic not in (0, 1):
        raise EncodeError(f"{path}.magic: legacy messages have magic 0 or 1, not {magic}")
    attributes = _attributes_byte(message.attributes, f"{path}.attributes")
    problem = codecs.codec_problem(attributes & COMPRESSION_MASK, magic)
    if problem:
        raise EncodeError(f"{path}.attributes: {problem}")
    codec = Compression(attributes & COMPRESSION_MASK)
    value = check_bytes(message.value, f"{path}.value")
    if message.inner is not None:
        if codec is Compression.NONE:
            raise EncodeError(f"{path}.inner: inner messages need a codec in the wrapper's attributes")
        value = codecs.compress(codec, _inner_set(message, path), magic)
    elif codec is not Compression.NONE:
        raise EncodeError(f"{path}.inner: a message with a codec needs its inner messages")
    parts = [bytes((magic, attributes))]
    if magic == 1:
        timestamp = NO_TIMESTAMP if message.timestamp is None else message.timestamp
        parts.append(check_int(timestamp, 64, f"{path}.timestamp").to_bytes(8, "big", signed=True))
    for raw in (check_bytes(message.key, f"{path}.key"), value):
        if raw is None:
            parts.append(_NULL)
        else:
            parts.append(_LENGTH.pack(check_int(len(raw), 32, f"{path}.value")))
            parts.append(raw)
    body = b"".join(parts)
    size = check_int(4 + len(body), 32, f"{path}.message_size")
    return _HEAD.pack(check_int(message.offset, 64, f"{path}.offset"), size, zlib.crc32(body)) + body


def _inner_set(wrapper: LegacyMessage, path: str) -> bytes:
    """The uncompressed message set a wrapper holds, with the offsets its magic calls for."""
    inner = wrapper.inner or []
    if not inner:
        raise EncodeError(f"{path}.inner: a wrapper message needs at least one inner message")
    base = 0
    if wrapper.magic == 1:
        # KIP-31: inner offsets count from the first message and the wrapper holds the last one's
        # absolute offset. A wrapper offset below the last inner one is a producer's set, whose
        # inner offsets are already relative (the decoder leaves them so); they are kept as given.
        if wrapper.offset > inner[-1].offset:
            raise EncodeError(
                f"{path}.offset: a magic 1 wrapper's offset ({wrapper.offset}) is past its last inner"
                f" message's ({inner[-1].offset})"
            )
        if wrapper.offset == inner[-1].offset:
            base = inner[0].offset
    parts = []
    for i, message in enumerate(inner):
        inner_path = f"{path}.inner[{i}]"
        if not isinstance(message, LegacyMessage):
            raise EncodeError(f"{inner_path}: expected a LegacyMessage, got {type(message).__name__}")
        if message.magic != wrapper.magic:
            raise EncodeError(f"{inner_path}.magic: {message.magic} inside a magic {wrapper.magic} wrapper")
        if message.inner is not None or message.attributes & COMPRESSION_MASK:
            raise EncodeError(f"{inner_path}: a compressed message cannot sit inside another")
        relative = LegacyMessage(
            offset=message.offset - base,
            magic=message.magic,
            attributes=message.attributes,
            timestamp=message.timestamp,
            key=message.key,
            value=message.value,
        )
        parts.append(write_message(relative, inner_path))
    return b"".join(parts)

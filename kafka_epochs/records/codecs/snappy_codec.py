"""snappy through cramjam, raw or in the xerial framing that Java's Kafka clients write.

Java clients wrap snappy in xerial's SnappyOutputStream for every magic: a 16-byte header
(``\\x82SNAPPY\\x00``, then the format version and the oldest compatible version as big-endian
int32s), then chunks of an int32 length and that many bytes of raw snappy, each chunk from at most
32 KiB of input. Readers (xerial's SnappyInputStream, librdkafka) take raw snappy too, when the
header is absent, and an empty stream as no data. So do we; we write the xerial framing, as the
Java client does.

Every raw snappy block starts with its decompressed length, so the limit is checked before any
block is decompressed.
"""

from __future__ import annotations

import struct

from kafka_epochs.records.codecs.errors import DecompressedTooLarge, DecompressionFailed

XERIAL_MAGIC = b"\x82SNAPPY\x00"
#: The version pair xerial writes (version 1, compatible with 1).
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE = 16
#: xerial's (and so Kafka's) default: at most this much input per chunk.
XERIAL_CHUNK_INPUT = 32 * 1024
_CHUNK_LENGTH = struct.Struct(">i")


def is_xerial(data: bytes | memoryview) -> bool:
    # The version fields are not checked: some producers write them little-endian.
    return len(data) >= _XERIAL_HEADER_SIZE and bytes(data[: len(XERIAL_MAGIC)]) == XERIAL_MAGIC


def compress(data: bytes) -> bytes:
    """xerial framing, as Kafka's Java producer writes it; raw snappy for no data at all.

    A header with no chunks is valid xerial, but some readers (kafka-python) only take the framing
    when a chunk follows, and every reader takes a raw block.
    """
    import cramjam

    if not data:
        return compress_raw(data)
    parts = [_XERIAL_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), XERIAL_CHUNK_INPUT):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + XERIAL_CHUNK_INPUT]))
        parts.append(_CHUNK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def compress_raw(data: bytes) -> bytes:
    import cramjam

    return bytes(cramjam.snappy.compress_raw(data))


def decompress(data: bytes | memoryview, limit: int) -> bytes:
    if not data:
        return b""  # xerial's reader takes an empty stream as empty data
    if not is_xerial(data):
        return _decompress_block(data, limit)
    parts: list[bytes] = []
    total = 0
    pos = _XERIAL_HEADER_SIZE
    while pos < len(data):
        if len(data) - pos < _CHUNK_LENGTH.size:
            raise DecompressionFailed(f"xerial snappy chunk length cut off at byte {pos}")
        (size,) = _CHUNK_LENGTH.unpack_from(data, pos)
        pos += _CHUNK_LENGTH.size
        if size < 0 or size > len(data) - pos:
            raise DecompressionFailed(f"xerial snappy chunk of {size} bytes at byte {pos} overruns the data")
        block = _decompress_block(data[pos : pos + size], limit - total)
        total += len(block)
        parts.append(block)
        pos += size
    return b"".join(parts)


def _decompress_block(block: bytes | memoryview, limit: int) -> bytes:
    import cramjam

    try:
        declared = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise DecompressionFailed(f"snappy data is corrupt: {exc}") from None
    if declared > limit:
        raise DecompressedTooLarge(limit)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise DecompressionFailed(f"snappy data is corrupt: {exc}") from None

"""Compression for record batches and legacy wrapper messages: which codec each magic allows,
and bounded decompression.

Each codec module imports its library inside its functions, so importing this package costs
nothing until a compressed payload is met.
"""

from __future__ import annotations

from kafka_epochs.records.codecs import gzip_codec, lz4_codec, snappy_codec, zstd_codec
from kafka_epochs.records.codecs.errors import DecompressedTooLarge, DecompressionFailed
from kafka_epochs.records.model import Compression

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED",
    "DecompressedTooLarge",
    "DecompressionFailed",
    "codec_problem",
    "compress",
    "decompress",
    "is_known_codec",
]

#: The default bound on decompressed bytes per ``decode_records`` call.
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

#: zstd came with magic 2 (KIP-110); Kafka refuses it in older formats.
_ALLOWED: dict[int, frozenset[Compression]] = {
    0: frozenset({Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4}),
    1: frozenset({Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4}),
    2: frozenset(Compression),
}


def codec_problem(codec_id: int, magic: int) -> str | None:
    """Why ``codec_id`` cannot appear in a magic ``magic`` entry, or None if it can."""
    try:
        codec = Compression(codec_id)
    except ValueError:
        return f"unknown compression codec {codec_id}"
    if codec not in _ALLOWED[magic]:
        return f"{codec.name.lower()} compression is not valid with magic {magic}"
    return None


def is_known_codec(codec_id: int) -> bool:
    return codec_id in _KNOWN


_KNOWN = frozenset(c.value for c in Compression)


def compress(codec: Compression, data: bytes, magic: int) -> bytes:
    if codec == Compression.GZIP:
        return gzip_codec.compress(data)
    if codec == Compression.SNAPPY:
        return snappy_codec.compress(data)
    if codec == Compression.LZ4:
        return lz4_codec.compress(data, magic)
    if codec == Compression.ZSTD:
        return zstd_codec.compress(data)
    return data


def decompress(codec: Compression, data: bytes | memoryview, magic: int, limit: int) -> bytes:
    """The decompressed payload; DecompressionFailed if corrupt, DecompressedTooLarge past ``limit``."""
    if codec == Compression.GZIP:
        return gzip_codec.decompress(data, limit)
    if codec == Compression.SNAPPY:
        return snappy_codec.decompress(data, limit)
    if codec == Compression.LZ4:
        return lz4_codec.decompress(data, magic, limit)
    if codec == Compression.ZSTD:
        return zstd_codec.decompress(data, limit)
    return bytes(data)

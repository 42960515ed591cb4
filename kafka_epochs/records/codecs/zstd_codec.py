"""zstd through cramjam."""

from __future__ import annotations

from kafka_epochs.records.codecs.bounded import decompress_into_bounded

#: Kafka's default zstd level.
LEVEL = 3


def compress(data: bytes) -> bytes:
    import cramjam

    return bytes(cramjam.zstd.compress(data, level=LEVEL))


def decompress(data: bytes | memoryview, limit: int) -> bytes:
    import cramjam

    return decompress_into_bounded(cramjam.zstd.decompress_into, data, limit, "zstd")

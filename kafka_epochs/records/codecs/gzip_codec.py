"""gzip through the standard library's zlib, whose ``max_length`` bounds each step's output."""

from __future__ import annotations

from kafka_epochs.records.codecs.errors import DecompressedTooLarge, DecompressionFailed

#: zlib's window-bits value for "gzip header and trailer, nothing else".
_GZIP_WBITS = 31
#: Kafka's default gzip level (java.util.zip's default).
LEVEL = 6
#: Output asked of zlib per step.
_STEP = 1 << 20


def compress(data: bytes) -> bytes:
    import zlib

    # compressobj writes a fixed header (mtime 0), so equal input gives equal bytes.
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, _GZIP_WBITS)
    return packer.compress(data) + packer.flush()


def decompress(data: bytes | memoryview, limit: int) -> bytes:
    """Every gzip member in ``data``, concatenated (as java.util.zip reads them)."""
    import zlib

    out = bytearray()
    rest: bytes | memoryview = data
    unpacker = zlib.decompressobj(_GZIP_WBITS)
    while True:
        # One step past the room left is how an overflow shows; small steps keep the peak near
        # the limit rather than twice it.
        asked = min(limit + 1 - len(out), _STEP)
        try:
            piece = unpacker.decompress(rest, asked)
        except zlib.error as exc:
            raise DecompressionFailed(f"gzip data is corrupt: {exc}") from None
        out += piece
        if len(out) > limit:
            raise DecompressedTooLarge(limit)
        if unpacker.eof:
            rest = unpacker.unused_data
            if not rest:
                return bytes(out)
            unpacker = zlib.decompressobj(_GZIP_WBITS)
            continue
        rest = unpacker.unconsumed_tail
        # A full step may leave output pending inside zlib; a short one means the input ran out.
        if len(piece) < asked and not rest:
            raise DecompressionFailed("gzip data ends before its end-of-stream marker")

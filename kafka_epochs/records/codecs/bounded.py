"""Run a cramjam ``decompress_into`` so that no more than ``limit + 1`` bytes are ever held.

cramjam's one-shot decoders stream into a caller's buffer and stop with an error as soon as it is
full, without decoding the rest. That is the bound: the output buffer starts small and doubles
while the decoder reports it full, up to ``limit + 1`` bytes; a payload that fills even that one is
over the limit. Memory stays within twice the real output size (capped by the limit), and time
within about twice a single decode.
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_epochs.records.codecs.errors import DecompressedTooLarge, DecompressionFailed

#: The smallest first guess; small payloads then decode in one pass.
_MIN_FIRST_GUESS = 64 * 1024
#: First guess as a multiple of the compressed size (typical record data compresses 2-10x).
_FIRST_GUESS_RATIO = 4
#: cramjam's message when the output buffer fills (Rust's io::ErrorKind::WriteZero).
_BUFFER_FULL = "failed to write whole buffer"

DecompressInto = Callable[[bytes | memoryview, bytearray], int]


def decompress_into_bounded(decompress_into: DecompressInto, data: bytes | memoryview, limit: int, codec: str) -> bytes:
    """The decompressed bytes, or DecompressedTooLarge if they are more than ``limit``."""
    import cramjam

    size = min(limit + 1, max(_MIN_FIRST_GUESS, _FIRST_GUESS_RATIO * len(data)))
    while True:
        out = bytearray(size)
        try:
            written = decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if _BUFFER_FULL not in str(exc):
                raise DecompressionFailed(f"{codec} data is corrupt: {exc}") from None
            if size > limit:
                raise DecompressedTooLarge(limit) from None
            del out  # let the smaller buffer go before the larger one is allocated
            size = min(limit + 1, size * 2)
            continue
        if written > limit:
            raise DecompressedTooLarge(limit)
        return bytes(memoryview(out)[:written])

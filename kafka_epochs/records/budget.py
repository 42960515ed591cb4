"""The decompressed-size limit, shared by every compressed payload in one ``decode_records`` call.

One budget for the whole call, not one per batch: then the memory that decompression can take is
bounded by the limit however many batches the bytes pack in.
"""

from __future__ import annotations

from kafka_epochs.errors import DecodeError
from kafka_epochs.records import codecs
from kafka_epochs.records.model import Compression


class DecompressionBudget:
    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"max_decompressed must be >= 0, not {limit}")
        self.limit = limit
        self.used = 0

    def decompress(self, codec: Compression, payload: bytes | memoryview, magic: int, *, at: int, path: str) -> bytes:
        """``payload`` decompressed, charged to the budget; a DecodeError at ``at`` if it can't be."""
        try:
            out = codecs.decompress(codec, payload, magic, self.limit - self.used)
        except codecs.DecompressedTooLarge:
            raise DecodeError(
                f"{codec.name.lower()} payload decompresses past max_decompressed={self.limit} bytes"
                f" ({self.used} already used by earlier entries)",
                at,
                path,
            ) from None
        except codecs.DecompressionFailed as exc:
            raise DecodeError(str(exc), at, path) from None
        self.used += len(out)
        return out

"""What a codec raises; the record decoders turn it into a DecodeError with the field's path."""

from __future__ import annotations


class DecompressionFailed(Exception):
    """The payload is not valid for its codec (the reason says how)."""


class DecompressedTooLarge(DecompressionFailed):
    """The payload would decompress past the caller's limit; raised before holding more than that."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"decompressed size exceeds the limit of {limit} bytes")
        self.limit = limit

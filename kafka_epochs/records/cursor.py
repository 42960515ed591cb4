"""A reader over one buffer whose every failure is a DecodeError naming the field and the byte.

Records are read either from the caller's buffer or from a decompressed payload. Offsets in a
DecodeError are always positions in the caller's buffer, so for a decompressed payload the error
points at the compressed bytes and the reason says where inside the decompressed ones it failed.
"""

from __future__ import annotations

import struct

from kafka_epochs.errors import DecodeError
from kafka_epochs.wire.primitives import Malformed, read_uvarint, read_uvarlong, zigzag_decode

_INT8 = struct.Struct(">b").unpack_from
_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from
_INT64 = struct.Struct(">q").unpack_from


class Cursor:
    """Reads ``data[pos:end]`` front to back; ``end`` may stop short of ``len(data)``."""

    __slots__ = ("data", "decompressed_at", "end", "pos")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None, *, decompressed_at: int = -1) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end
        #: -1 for the caller's buffer; else where the compressed bytes start in the caller's buffer.
        self.decompressed_at = decompressed_at

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fail(self, reason: str, path: str, name: str = "", at: int | None = None) -> DecodeError:
        """The error to raise for field ``path.name`` at byte ``at`` (default: the current position).

        The path comes in two parts so that the happy path never builds the joined string.
        """
        if name:
            path = f"{path}.{name}" if path else name
        where = self.pos if at is None else at
        if self.decompressed_at < 0:
            return DecodeError(reason, where, path)
        return DecodeError(f"{reason} (at byte {where} of the decompressed records)", self.decompressed_at, path)

    def need(self, n: int, path: str, name: str = "") -> None:
        if n > self.end - self.pos:
            raise self.fail(f"needs {n} bytes, {self.end - self.pos} left", path, name)

    def int8(self, path: str, name: str = "") -> int:
        self.need(1, path, name)
        value: int = _INT8(self.data, self.pos)[0]
        self.pos += 1
        return value

    def int16(self, path: str, name: str = "") -> int:
        self.need(2, path, name)
        value: int = _INT16(self.data, self.pos)[0]
        self.pos += 2
        return value

    def int32(self, path: str, name: str = "") -> int:
        self.need(4, path, name)
        value: int = _INT32(self.data, self.pos)[0]
        self.pos += 4
        return value

    def int64(self, path: str, name: str = "") -> int:
        self.need(8, path, name)
        value: int = _INT64(self.data, self.pos)[0]
        self.pos += 8
        return value

    def varint(self, path: str, name: str = "") -> int:
        """A zig-zag varint of at most 5 bytes, so a signed 32-bit value."""
        start = self.pos
        try:
            raw, pos = read_uvarint(self.data, start)
        except IndexError:
            raise self.fail("ends inside a varint", path, name, start) from None
        except Malformed as exc:
            raise self.fail(str(exc), path, name, start) from None
        if pos > self.end:
            raise self.fail("varint runs past the end of its record", path, name, start)
        self.pos = pos
        return zigzag_decode(raw)

    def varlong(self, path: str, name: str = "") -> int:
        """A zig-zag varint of at most 10 bytes, so a signed 64-bit value."""
        start = self.pos
        try:
            raw, pos = read_uvarlong(self.data, start)
        except IndexError:
            raise self.fail("ends inside a varlong", path, name, start) from None
        except Malformed as exc:
            raise self.fail(str(exc), path, name, start) from None
        if pos > self.end:
            raise self.fail("varlong runs past the end of its record", path, name, start)
        self.pos = pos
        return zigzag_decode(raw)

    def take(self, n: int, path: str, name: str = "") -> bytes:
        self.need(n, path, name)
        start = self.pos
        self.pos = start + n
        return bytes(self.data[start : self.pos])

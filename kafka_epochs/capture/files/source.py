"""Where capture bytes come from: a path or a binary file object, maybe gzip-compressed, read in chunks.

Readers never call ``read(n)`` with a length taken from the file: a corrupt length field could
otherwise make Python allocate that much up front. They ask :func:`refill` for more bytes, which
reads fixed-size chunks until the request is met or the stream ends, so memory only grows with
bytes that really exist.
"""

from __future__ import annotations

import io
import zlib
from typing import BinaryIO, Protocol

from kafka_epochs.capture.errors import CaptureFormatError

READ_CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
#: A gzip capture may expand this many times its compressed size (real captures: 3-10x) ...
MAX_GZIP_RATIO = 200
#: ... once past this much output (small files are never refused).
GZIP_RATIO_FREE = 1 << 20


class ByteStream(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def refill(stream: ByteStream, buffer: bytes, pos: int, need: int) -> bytes:
    """``buffer[pos:]`` followed by more of ``stream``, until it holds ``need`` bytes or the stream ends."""
    parts = [buffer[pos:]]
    have = len(parts[0])
    while have < need:
        piece = stream.read(READ_CHUNK)
        if not piece:
            break
        parts.append(piece)
        have += len(piece)
    return b"".join(parts)


class _Prefixed:
    """A stream whose first bytes were already read (to sniff the magic) and are handed back first."""

    def __init__(self, prefix: bytes, rest: ByteStream) -> None:
        self._prefix = prefix
        self._rest = rest
        self.consumed = 0  # bytes handed out so far

    def read(self, size: int = -1, /) -> bytes:
        data = self._read(size)
        self.consumed += len(data)
        return data

    def _read(self, size: int) -> bytes:
        if not self._prefix:
            return self._rest.read(size)
        if size < 0:
            data, self._prefix = self._prefix + self._rest.read(), b""
            return data
        data, self._prefix = self._prefix[:size], self._prefix[size:]
        if len(data) < size:
            data += self._rest.read(size - len(data))
        return data

    def seek(self, offset: int, /) -> object:  # part of what GzipFile expects; never needed to read forwards
        raise io.UnsupportedOperation("a capture is read once, from start to end")


class GzipInput:
    """A gzip-compressed capture. A corrupt or cut compressed stream reads as end of data, and
    the problem is kept in :attr:`error` so that the reader can report it after the last packet."""

    def __init__(self, prefix: bytes, rest: ByteStream, max_ratio: int = MAX_GZIP_RATIO) -> None:
        import gzip  # (here: it costs every run's start, and few captures are gzipped)

        self._compressed = _Prefixed(prefix, rest)
        self._inner = gzip.GzipFile(None, "rb", fileobj=self._compressed)
        self.error: CaptureFormatError | None = None
        self._position = 0
        self._max_ratio = max_ratio

    def read(self, size: int = -1, /) -> bytes:
        if self.error is None and self._position > GZIP_RATIO_FREE:
            self._check_ratio()  # before reading on: what was read so far is handed out whole
        if self.error is not None:
            return b""
        try:
            # read1: a buffered read(n) would lose the bytes it had when the stream turns out cut.
            data = self._inner.read1(size) if size > 0 else self._inner.read()
        except (OSError, EOFError, zlib.error) as exc:
            self.error = CaptureFormatError(
                f"compressed stream is damaged or cut short ({exc})", self._position, "gzip"
            )
            return b""
        self._position += len(data)
        return data

    def _check_ratio(self) -> None:
        if self._position > self._max_ratio * self._compressed.consumed:
            # a decompression bomb (or a file of nothing): millions of empty records would take
            # minutes to read and tell nothing
            self.error = CaptureFormatError(
                f"the compressed capture expands more than {self._max_ratio} times its size "
                f"({self._position:,} bytes from {self._compressed.consumed:,}); no capture of real traffic "
                "does: refused as a decompression bomb (decompress it yourself to read it anyway)",
                self._position,
                "gzip",
            )


def read_head(stream: BinaryIO | ByteStream, size: int) -> bytes:
    """Up to ``size`` bytes from the start of ``stream`` (fewer only at its end)."""
    return refill(_ChunkLimited(stream, size), b"", 0, size)


class _ChunkLimited:
    """Reads at most ``limit`` bytes in total: sniffing the magic must not consume packets."""

    def __init__(self, stream: BinaryIO | ByteStream, limit: int) -> None:
        self._stream = stream
        self._left = limit

    def read(self, size: int = -1, /) -> bytes:
        if self._left <= 0:
            return b""
        data = self._stream.read(min(size, self._left) if size >= 0 else self._left)
        self._left -= len(data)
        return data

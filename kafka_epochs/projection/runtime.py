"""What projected decoders call on their slow paths (long varints, nulls, tag sections)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat

from kafka_epochs.wire.primitives import (
    Malformed,
    fixed_array,
    fixed_array_unpackers,
    read_uvarint,
    uuid_from_bytes,
)

__all__ = [
    "Malformed",
    "classic_null",
    "fixed_items",
    "read_uvarint",
    "repeat",
    "skip_compact",
    "skip_compact_array",
    "skip_tags",
    "uuid_from_bytes",
]


def skip_compact(data: bytes, pos: int, nullable: bool) -> int:
    """Step over a compact string or bytes whose length byte was 0 (null) or is a long varint."""
    n, pos = read_uvarint(data, pos)
    if n == 0:
        if not nullable:
            raise Malformed("null in a field that is not nullable")
        return pos
    return pos + n - 1


def skip_compact_array(data: bytes, pos: int, width: int, nullable: bool) -> int:
    """Step over a compact array of ``width``-byte values whose count byte was 0 (null) or is long."""
    n, pos = read_uvarint(data, pos)
    if n == 0:
        if not nullable:
            raise Malformed("null in a field that is not nullable")
        return pos
    return pos + width * (n - 1)


def classic_null(n: int, pos: int, nullable: bool) -> int:
    """Check a negative classic length (-1 is null, where allowed); returns the position after it."""
    if n != -1 or not nullable:
        raise Malformed(f"invalid length {n}")
    return pos


def skip_tags(data: bytes, pos: int, end: int) -> int:
    """Step over a whole tag section, checking each tagged field's size against ``end``."""
    count, pos = read_uvarint(data, pos)
    if count > end - pos:
        raise Malformed("tag count larger than the bytes left")
    for _ in range(count):
        _, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        pos += size
        if pos > end:
            raise Malformed("tagged field runs past the end")
    return pos


_TABLES: dict[str, tuple[Callable[..., tuple[object, ...]], ...]] = {}


def fixed_items(code: str, data: bytes, pos: int, n: int) -> list[object]:
    """``n`` big-endian values of one ``struct`` code at ``pos``, as a list (uuids as ``UUID``)."""
    if code == "16s":
        return [uuid_from_bytes(data[p : p + 16]) for p in range(pos, pos + 16 * n, 16)]
    table = _TABLES.get(code)
    if table is None:
        table = _TABLES[code] = fixed_array_unpackers(code)
    unpack = table[n] if n < len(table) else fixed_array(code, n)
    return list(unpack(data, pos))

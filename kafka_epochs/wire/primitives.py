"""Wire primitives the generated code calls on its slow paths (varints, tagged fields, uuids).

The generated code inlines the common cases (one-byte varints, empty tag sections); everything
here is for the rarer shapes, kept small because it is called rarely.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable

from kafka_epochs.wire.errors import EncodeError

_UUID = uuid.UUID
_SAFE_UNKNOWN = uuid.SafeUUID.unknown
_new = object.__new__
# (a UUID refuses assignment: its slots' own setters cost less than object.__setattr__)
_set_uuid_int = _UUID.__dict__["int"].__set__
_set_uuid_is_safe = _UUID.__dict__["is_safe"].__set__

#: ``UVARINT1[n]`` is the one-byte unsigned varint for ``n < 128``.
UVARINT1: tuple[bytes, ...] = tuple(bytes((n,)) for n in range(128))


class Malformed(Exception):
    """Raised by fast paths; the caller re-decodes with the checked reader for a precise error."""


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 5 bytes (a 32-bit value); returns ``(value, new_pos)``."""
    return _read_unsigned(data, pos, 5, "varint")


def read_uvarlong(data: bytes, pos: int) -> tuple[int, int]:
    """Unsigned varint of at most 10 bytes (a 64-bit value)."""
    return _read_unsigned(data, pos, 10, "varlong")


def _read_unsigned(data: bytes, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    value = 0
    shift = 0
    limit = 7 * (max_bytes - 1)
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > limit:
            raise Malformed(f"{what} is longer than {max_bytes} bytes")
    if value.bit_length() > (32 if max_bytes == 5 else 64):
        raise Malformed(f"{what} does not fit in {32 if max_bytes == 5 else 64} bits")
    return value, pos


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (the compact-length and tag encoding)."""
    if value < 0x80:
        return UVARINT1[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag_decode(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def zigzag_encode(value: int) -> int:
    """Signed to unsigned (zig-zag) for a 64-bit value."""
    return (value << 1) ^ (value >> 63)


def uuid_from_bytes(raw: bytes) -> uuid.UUID:
    """A ``uuid.UUID`` from 16 bytes, about 3x cheaper than ``UUID(bytes=...)``'s checks."""
    u = _new(_UUID)
    _set_uuid_int(u, int.from_bytes(raw, "big"))
    _set_uuid_is_safe(u, _SAFE_UNKNOWN)
    return u


def read_unknown_tags(
    data: bytes,
    pos: int,
    end: int,
    invalid: frozenset[int] = frozenset(),
) -> tuple[dict[int, bytes] | None, int]:
    """Read a tag section with no known tags; returns the raw unknown tags (or ``None``).

    ``invalid`` holds tags the struct knows in other versions: meeting one is an error.
    """
    count, pos = read_uvarint(data, pos)
    if count > end - pos:
        raise Malformed("tag count larger than the bytes left")
    unknown: dict[int, bytes] | None = None
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        stop = pos + size
        if stop > end:
            raise Malformed("tagged field runs past the end")
        if tag in invalid:
            raise Malformed(f"tag {tag} is not valid in this version")
        if unknown is None:
            unknown = {}
        unknown[tag] = data[pos:stop]
        pos = stop
    return unknown, pos


def write_tags(out: list[bytes], tags: list[tuple[int, bytes]]) -> None:
    """Write a tag section from ``(tag, value bytes)`` pairs, sorted by tag."""
    tags.sort(key=_first)
    out.append(uvarint(len(tags)))
    last = -1
    for tag, value in tags:
        if tag == last:
            raise EncodeError(f"tag {tag} is written twice (a known field and an unknown tag?)")
        last = tag
        out.append(uvarint(tag))
        out.append(uvarint(len(value)))
        out.append(value)


def _first(pair: tuple[int, bytes]) -> int:
    return pair[0]


_ARRAY_STRUCTS: dict[tuple[str, int], Callable[..., tuple[object, ...]]] = {}


def fixed_array(code: str, count: int) -> Callable[..., tuple[object, ...]]:
    """``unpack_from`` for ``count`` big-endian values of one ``struct`` code, cached."""
    key = (code, count)
    fn = _ARRAY_STRUCTS.get(key)
    if fn is None:
        fn = struct.Struct(f">{count}{code}").unpack_from
        if len(_ARRAY_STRUCTS) < 4096:
            _ARRAY_STRUCTS[key] = fn
    return fn


#: Arrays of fixed-width values shorter than this use a table of precompiled structs indexed by
#: the count: a tuple index instead of a call, a key tuple and a dict lookup per array.
SMALL_ARRAY = 64
_UNPACK_TABLES: dict[str, tuple[Callable[..., tuple[object, ...]], ...]] = {}
_PACK_TABLES: dict[str, tuple[Callable[..., bytes], ...]] = {}


def fixed_array_unpackers(code: str) -> tuple[Callable[..., tuple[object, ...]], ...]:
    """``unpack_from`` functions for 0..SMALL_ARRAY-1 values of one ``struct`` code (shared)."""
    table = _UNPACK_TABLES.get(code)
    if table is None:
        table = _UNPACK_TABLES[code] = tuple(struct.Struct(f">{n}{code}").unpack_from for n in range(SMALL_ARRAY))
    return table


def fixed_array_packers(code: str) -> tuple[Callable[..., bytes], ...]:
    """``pack`` functions for 0..SMALL_ARRAY-1 values of one ``struct`` code (shared)."""
    table = _PACK_TABLES.get(code)
    if table is None:
        table = _PACK_TABLES[code] = tuple(struct.Struct(f">{n}{code}").pack for n in range(SMALL_ARRAY))
    return table


_ARRAY_PACKERS: dict[tuple[str, int], Callable[..., bytes]] = {}


def fixed_array_pack(code: str, count: int) -> Callable[..., bytes]:
    """``pack`` for ``count`` big-endian values of one ``struct`` code, cached."""
    key = (code, count)
    fn = _ARRAY_PACKERS.get(key)
    if fn is None:
        fn = struct.Struct(f">{count}{code}").pack
        if len(_ARRAY_PACKERS) < 4096:
            _ARRAY_PACKERS[key] = fn
    return fn

"""A careful, interpreted decoder that explains why bytes failed to decode.

The generated decoders are tuned for valid input and carry no bookkeeping. When one of them
fails, :func:`explain` decodes the same bytes again by walking the class's field descriptors,
checking every rule, and returns a :class:`DecodeError` with the exact offset and field path.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka_epochs.wire.errors import DecodeError
from kafka_epochs.wire.schema import FieldInfo

_FIXED = {
    "bool": struct.Struct(">?"),
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
    "uuid": struct.Struct(">16s"),
}
_MAX_STRING = 0x7FFF


class _Fail(Exception):
    def __init__(self, reason: str, offset: int, path: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset
        self.path = path


def check(cls: Any, data: bytes, offset: int, end: int, version: int) -> int:
    """Walk ``data[offset:end]`` with every rule checked; returns the end offset or raises DecodeError."""
    label = f"{cls.__name__} v{version}"
    try:
        return _Reader(data, end, version, version in cls.FLEXIBLE_VERSIONS).struct(cls, offset, "")
    except _Fail as f:
        raise DecodeError(f.reason, f.offset, f.path, label) from None


def explain(cls: Any, data: bytes, offset: int, end: int, version: int) -> DecodeError:
    """Decode ``data[offset:end]`` carefully and describe the first rule it breaks."""
    label = f"{cls.__name__} v{version}"
    flexible = version in cls.FLEXIBLE_VERSIONS
    reader = _Reader(data, end, version, flexible)
    try:
        reader.struct(cls, offset, "")
    except _Fail as f:
        return DecodeError(f.reason, f.offset, f.path, label)
    # The careful reader accepted what the fast path refused: report it as a decoder fault
    # rather than pretend the bytes were fine.
    return DecodeError("the generated decoder failed on bytes the checked decoder accepts", offset, "", label)


def utf8_damage(cls: Any, data: bytes, offset: int, end: int, version: int) -> list[tuple[int, int, str]] | None:
    """The strings of ``data[offset:end]`` that are not valid UTF-8, as (start, length, field
    path), when that is all that is wrong with the bytes; None when something else is too."""
    reader = _Reader(data, end, version, version in cls.FLEXIBLE_VERSIONS)
    reader.bad_utf8 = []
    try:
        reader.struct(cls, offset, "")
    except _Fail:
        return None
    return reader.bad_utf8


class _Reader:
    def __init__(self, data: bytes, end: int, version: int, flexible: bool) -> None:
        self.data = data
        self.end = end
        self.version = version
        self.flexible = flexible
        # where strings that are not UTF-8 are listed, instead of failing, when not None
        self.bad_utf8: list[tuple[int, int, str]] | None = None

    def need(self, pos: int, size: int, path: str, what: str, end: int | None = None) -> None:
        end = self.end if end is None else end
        if pos < 0 or pos + size > end:
            left = max(end - pos, 0)
            raise _Fail(f"truncated: {what} needs {size} bytes but {left} are left", pos, path)

    def fixed(self, kind: str, pos: int, path: str, end: int) -> tuple[Any, int]:
        s = _FIXED[kind]
        self.need(pos, s.size, path, kind, end)
        return s.unpack_from(self.data, pos)[0], pos + s.size

    def uvarint(self, pos: int, path: str, end: int, what: str) -> tuple[int, int]:
        """An unsigned 32-bit varint: at most 5 bytes, as Kafka reads lengths and tags."""
        start = pos
        value = 0
        for i in range(5):
            if pos >= end:
                raise _Fail(f"truncated: {what} varint runs past the end", start, path)
            b = self.data[pos]
            pos += 1
            value |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if value > 0xFFFFFFFF:
                    raise _Fail(f"{what} varint does not fit in 32 bits", start, path)
                return value, pos
        raise _Fail(f"{what} varint is longer than 5 bytes", start, path)

    def length(self, pos: int, path: str, end: int, compact: bool, wide: bool) -> tuple[int, int]:
        """A length or count: compact (uvarint n+1) or int16/int32; -1 means null."""
        if compact:
            n, after = self.uvarint(pos, path, end, "length")
            return n - 1, after
        n, after = self.fixed("int32" if wide else "int16", pos, path, end)
        return n, after

    def check_null(self, f: FieldInfo, n: int, pos: int, path: str) -> bool:
        if n < -1:
            raise _Fail(f"invalid negative length {n}", pos, path)
        if n == -1:
            if not f.is_nullable(self.version):
                raise _Fail(f"null in non-nullable field {f.name}", pos, path)
            return True
        return False

    def compact_for(self, f: FieldInfo) -> bool:
        if f.compact is not None:
            return f.compact[0] <= self.version <= f.compact[1]
        return self.flexible

    def value(self, f: FieldInfo, kind: str, pos: int, path: str, end: int, element: bool = False) -> int:
        """Check one value of ``kind`` at ``pos``; returns the position after it."""
        if kind in _FIXED:
            return self.fixed(kind, pos, path, end)[1]
        compact = self.compact_for(f)
        if kind in ("string", "bytes", "records"):
            n, after = self.length(pos, path, end, compact, wide=kind != "string")
            if element and n == -1:
                raise _Fail(f"null element in {f.name}", pos, path)
            if self.check_null(f, n, pos, path):
                return after
            if kind == "string" and n > _MAX_STRING:
                raise _Fail(f"string length {n} is over the limit of {_MAX_STRING}", pos, path)
            self.need(after, n, path, f"{kind} of length {n}", end)
            if kind == "string":
                try:
                    self.data[after : after + n].decode("utf-8")
                except UnicodeDecodeError as e:
                    if self.bad_utf8 is None:
                        raise _Fail(f"invalid UTF-8 in string: {e.reason}", after + e.start, path) from None
                    self.bad_utf8.append((after, n, path))
            return after + n
        if kind == "array":
            n, after = self.length(pos, path, end, self.flexible, wide=True)
            if self.check_null(f, n, pos, path):
                return after
            if n > end - after:
                raise _Fail(f"array count {n} is larger than the {end - after} bytes left", pos, path)
            for i in range(n):
                after = self.value(f, f.element or "", after, f"{path}[{i}]", end, element=True)
            return after
        if kind == "struct":
            if not element and f.is_nullable(self.version):
                marker, pos = self.fixed("int8", pos, path, end)
                if marker < 0:
                    return pos
            return self.struct(f.struct, pos, path, end)
        raise _Fail(f"unknown kind {kind}", pos, path)  # pragma: no cover - generator never emits it

    def struct(self, cls: Any, pos: int, path: str, end: int | None = None) -> int:
        end = self.end if end is None else end
        v = self.version
        prefix = f"{path}." if path else ""
        tagged: dict[int, FieldInfo] = {}
        for f in cls._FIELDS:
            if not f.present(v):
                continue
            if f.tag >= 0:
                tagged[f.tag] = f
                if f.is_tagged(v):
                    continue
            pos = self.value(f, f.kind, pos, prefix + f.attr, end)
        if self.flexible:
            pos = self.tags(cls, tagged, pos, path, end)
        return pos

    def tags(self, cls: Any, tagged: dict[int, FieldInfo], pos: int, path: str, end: int) -> int:
        where = f"{path}._tagged_fields" if path else "_tagged_fields"
        count, pos = self.uvarint(pos, where, end, "tag count")
        if count > end - pos:
            raise _Fail(f"tag count {count} is larger than the {end - pos} bytes left", pos, where)
        all_tags = {f.tag: f for f in cls._FIELDS if f.tag >= 0}
        for _ in range(count):
            tag_pos = pos
            tag, pos = self.uvarint(pos, where, end, "tag")
            size, pos = self.uvarint(pos, where, end, "tag size")
            stop = pos + size
            if stop > end:
                raise _Fail(f"tagged field {tag} of {size} bytes runs past the end", tag_pos, where)
            f = all_tags.get(tag)
            if f is not None:
                fpath = f"{path}.{f.attr}" if path else f.attr
                if not (f.present(self.version) and f.is_tagged(self.version)):
                    raise _Fail(f"tag {tag} ({f.name}) is not valid in version {self.version}", tag_pos, fpath)
                after = self.value(f, f.kind, pos, fpath, stop)
                if after != stop:
                    raise _Fail(f"tagged field {f.name} used {after - pos} of its {size} bytes", pos, fpath)
            pos = stop
        return pos

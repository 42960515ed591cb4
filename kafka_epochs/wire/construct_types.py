"""Kafka's wire types as ``construct`` building blocks: the vocabulary of the construct backend.

The definitions that :mod:`kafka_epochs.codegen.construct_backend` emits are made of construct's
own integers (``Int32sb``, ``Flag``, ...) and the pieces below:

* :data:`UVarInt` - the unsigned varint of compact lengths, tag numbers and tag sizes (at most
  5 bytes, at most ``2**32 - 1``); :data:`CompactLength` reads it as ``n - 1`` so that a stored
  ``0`` is the null length ``-1``.
* strings and bytes: ``String16``/``NullableString16`` (int16 length), ``Bytes32``/
  ``NullableBytes32`` (int32 length) and their compact forms; records use the bytes types.
* arrays: :func:`Array32`, :func:`NullableArray32`, :func:`CompactArray`,
  :func:`CompactNullableArray`, with the element count checked against the bytes left.
* :class:`NullableStruct` (an int8 marker, negative for null), :data:`Uuid` (16 bytes as a
  ``uuid.UUID``).
* :class:`KafkaStruct` with an optional :class:`TagSection` of :class:`TaggedField` entries: the
  tagged values are merged into the struct's ``Container`` under their names (the default when
  absent) and tags the version does not know stay raw under ``_unknown_tags``.

This is the slow, readable reference; the generated Python classes are the fast path.
"""

from __future__ import annotations

import copy
import io
import itertools
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from construct import (  # type: ignore[import-untyped]
    Adapter,
    Bytes,
    Construct,
    Container,
    ExprValidator,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int32sb,
    IntegerError,
    ListContainer,
    PascalString,
    Prefixed,
    PrefixedArray,
    RangeError,
    Struct,
    Subconstruct,
    ValidationError,
    stream_read,
    stream_seek,
    stream_tell,
    stream_write,
)

__all__ = [
    "UNKNOWN_TAGS",
    "UUID",
    "Array32",
    "Bytes32",
    "CompactArray",
    "CompactBytes",
    "CompactLength",
    "CompactNullableArray",
    "CompactNullableBytes",
    "CompactNullableString",
    "CompactString",
    "KafkaStruct",
    "Nullable",
    "NullableArray32",
    "NullableBytes32",
    "NullableString16",
    "NullableStruct",
    "String16",
    "TagSection",
    "TaggedField",
    "UVarInt",
    "Uuid",
    "same_value",
]

#: Re-exported so generated definitions can spell uuid defaults without another import.
UUID = uuid.UUID

_VARINT_MAX_BYTES = 5
_UINT32_MAX = 0xFFFFFFFF
_MAX_STRING_BYTES = 0x7FFF
#: The key the tag section's values travel under inside a :class:`KafkaStruct`'s inner ``Struct``.
_TAGS_KEY = "_tagged_fields"
#: The key of the raw tags a version does not know.
UNKNOWN_TAGS = "_unknown_tags"


# -- varints and lengths ----------------------------------------------------------------------


class _UVarInt(Construct):
    """Unsigned base-128 varint, low group first, limited to 5 bytes and 32 bits like Kafka's."""

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        value = 0
        for i in range(_VARINT_MAX_BYTES):
            byte: int = stream_read(stream, 1, path)[0]
            value |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                if value > _UINT32_MAX:
                    raise IntegerError(f"unsigned varint {value} does not fit in 32 bits", path=path)
                return value
        raise IntegerError(f"unsigned varint is longer than {_VARINT_MAX_BYTES} bytes", path=path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        if not isinstance(obj, int) or isinstance(obj, bool) or not 0 <= obj <= _UINT32_MAX:
            raise IntegerError(f"unsigned varint needs an int in 0..{_UINT32_MAX}, not {obj!r}", path=path)
        out = bytearray()
        rest = obj
        while rest >= 0x80:
            out.append((rest & 0x7F) | 0x80)
            rest >>= 7
        out.append(rest)
        stream_write(stream, bytes(out), len(out), path)
        return obj


UVarInt: Any = _UVarInt()


class _CompactLength(Adapter):
    """A compact length or count: stored as ``n + 1`` in a :data:`UVarInt`, so ``0`` means null (-1)."""

    def _decode(self, obj: int, context: Any, path: str) -> int:
        return obj - 1

    def _encode(self, obj: int, context: Any, path: str) -> int:
        return obj + 1


CompactLength: Any = _CompactLength(UVarInt)


def _remaining(stream: Any, path: str) -> int | None:
    """Bytes left in a seekable stream (``None`` when the stream cannot tell)."""
    try:
        here = stream_tell(stream, path)
        end = stream_seek(stream, 0, io.SEEK_END, path)
        stream_seek(stream, here, io.SEEK_SET, path)
    except Exception:  # an unseekable stream just goes unchecked
        return None
    return int(end) - int(here)


class _BoundedCount(Subconstruct):
    """An array's element count, refused when larger than the bytes left (as Kafka refuses it).

    Every element takes at least one byte in practice, and the check keeps a corrupt count from
    making the parser loop for billions of (empty) elements.
    """

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        count = int(self.subcon._parsereport(stream, context, path))
        if count >= 0:
            left = _remaining(stream, path)
            if left is not None and count > left:
                raise RangeError(f"array count {count} is larger than the {left} bytes left", path=path)
        return count


class Nullable(Subconstruct):
    """``subcon`` (which starts with ``lengthfield``), or ``None`` written as the length -1.

    Parsing peeks at the length: -1 gives ``None``; anything else rewinds and lets ``subcon`` read
    the value whole, length included (so, like construct's ``Peek``, it needs a seekable stream;
    ``parse`` of bytes always has one). Building ``None`` writes the length -1 alone.
    """

    def __init__(self, lengthfield: Any, subcon: Any) -> None:
        super().__init__(subcon)
        self.lengthfield = lengthfield

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream_tell(stream, path)
        if self.lengthfield._parsereport(stream, context, path) == -1:
            return None
        stream_seek(stream, start, io.SEEK_SET, path)
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            self.lengthfield._build(-1, stream, context, path)
            return None
        return self.subcon._build(obj, stream, context, path)


# -- strings and bytes ------------------------------------------------------------------------


def _within_string_limit(obj: Any, context: Any) -> bool:
    return isinstance(obj, str) and len(obj.encode("utf-8")) <= _MAX_STRING_BYTES


#: A non-nullable string with an int16 length (Kafka's STRING).
String16: Any = PascalString(Int16sb, "utf8")
#: A string with an int16 length, -1 for null (NULLABLE_STRING).
NullableString16: Any = Nullable(Int16sb, String16)
#: A string with a compact length (COMPACT_STRING); Kafka caps strings at 32767 bytes.
CompactString: Any = ExprValidator(PascalString(CompactLength, "utf8"), _within_string_limit)
#: COMPACT_NULLABLE_STRING: a compact string, or the length byte 0 for null.
CompactNullableString: Any = Nullable(CompactLength, CompactString)

#: Bytes with an int32 length (BYTES).
Bytes32: Any = Prefixed(Int32sb, GreedyBytes)
#: Bytes with an int32 length, -1 for null (NULLABLE_BYTES, and RECORDS before flexible versions).
NullableBytes32: Any = Nullable(Int32sb, Bytes32)
#: Bytes with a compact length (COMPACT_BYTES).
CompactBytes: Any = Prefixed(CompactLength, GreedyBytes)
#: COMPACT_NULLABLE_BYTES (and COMPACT_RECORDS).
CompactNullableBytes: Any = Nullable(CompactLength, CompactBytes)


class _UuidAdapter(Adapter):
    def _decode(self, obj: bytes, context: Any, path: str) -> uuid.UUID:
        return uuid.UUID(bytes=obj)

    def _encode(self, obj: uuid.UUID, context: Any, path: str) -> bytes:
        return obj.bytes


#: A uuid: 16 bytes, big-endian, as ``uuid.UUID``.
Uuid: Any = _UuidAdapter(Bytes(16))


# -- arrays and nullable structs --------------------------------------------------------------


def Array32(subcon: Any) -> Any:
    """An array with an int32 element count (ARRAY)."""
    return PrefixedArray(_BoundedCount(Int32sb), subcon)


def NullableArray32(subcon: Any) -> Any:
    """An array with an int32 element count, -1 for null."""
    return Nullable(Int32sb, Array32(subcon))


def CompactArray(subcon: Any) -> Any:
    """An array with a compact element count (COMPACT_ARRAY)."""
    return PrefixedArray(_BoundedCount(CompactLength), subcon)


def CompactNullableArray(subcon: Any) -> Any:
    """An array with a compact element count, 0 on the wire for null."""
    return Nullable(CompactLength, CompactArray(subcon))


class NullableStruct(Subconstruct):
    """A struct behind an int8 marker: negative for null (written -1), otherwise present (written 1)."""

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if Int8sb._parsereport(stream, context, path) < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            Int8sb._build(-1, stream, context, path)
            return None
        Int8sb._build(1, stream, context, path)
        return self.subcon._build(obj, stream, context, path)


# -- tagged fields and structs ----------------------------------------------------------------


def same_value(a: Any, b: Any) -> bool:
    """Deep equality that, unlike ``Container.__eq__``, also compares keys starting with ``_``.

    A struct without an ``_unknown_tags`` key counts as having ``None`` there.
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        keys = a.keys() | b.keys()
        if a.keys() - {UNKNOWN_TAGS} != b.keys() - {UNKNOWN_TAGS}:
            return False
        return all(same_value(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _as_parsed(value: Any) -> Any:
    """A default in the shape parsing gives: ``Container`` for dicts, ``ListContainer`` for lists."""
    if isinstance(value, Mapping):
        return Container((k, _as_parsed(v)) for k, v in value.items())
    if isinstance(value, list):
        return ListContainer(_as_parsed(v) for v in value)
    return value


class TaggedField:
    """One known entry of a tag section: its tag, its named construct and its default.

    The value is written only when it differs from ``default``, and parsing gives ``default``
    when the tag is absent.
    """

    def __init__(self, tag: int, subcon: Any, default: Any = None) -> None:
        if not isinstance(tag, int) or not 0 <= tag <= _UINT32_MAX:
            raise ValueError(f"a tag is an int in 0..{_UINT32_MAX}, not {tag!r}")
        if not getattr(subcon, "name", None):
            raise ValueError('a tagged field needs a named construct, e.g. "field" / Int32sb')
        self.tag = tag
        self.name: str = subcon.name
        self.subcon = subcon
        self.default = default

    def __repr__(self) -> str:
        return f"TaggedField({self.tag}, {self.name!r}, default={self.default!r})"

    def fresh_default(self) -> Any:
        return _as_parsed(copy.deepcopy(self.default))


class TagSection(Construct):
    """A tagged-field section: a count, then (tag, size, value) triples.

    Parses to a ``Container`` with every known field (its default when absent) and
    ``_unknown_tags``: ``{tag: raw bytes}`` for tags this version does not know, or ``None``.
    Tags listed in ``invalid`` (known to the struct in other versions) are refused. Building
    reads the known fields by name from the given mapping, writes those that differ from their
    defaults, merges in the raw unknown tags, and orders everything by tag.
    """

    def __init__(self, *fields: TaggedField, invalid: Iterable[int] = ()) -> None:
        super().__init__()
        self.fields = fields
        self.by_tag = {f.tag: f for f in fields}
        if len(self.by_tag) != len(fields):
            raise ValueError("two tagged fields share a tag")
        self.invalid = frozenset(invalid)

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        count = UVarInt._parsereport(stream, context, path)
        left = _remaining(stream, path)
        if left is not None and count > left:
            raise RangeError(f"tag count {count} is larger than the {left} bytes left", path=path)
        values: dict[str, Any] = {}
        unknown: dict[int, bytes] | None = None
        for _ in range(count):
            tag = UVarInt._parsereport(stream, context, path)
            size = UVarInt._parsereport(stream, context, path)
            payload = stream_read(stream, size, path)
            field = self.by_tag.get(tag)
            if field is not None:
                inner = io.BytesIO(payload)
                values[field.name] = field.subcon._parsereport(inner, context, f"{path} -> tag {tag}")
                if inner.tell() != size:
                    raise ValidationError(
                        f"tagged field {field.name} used {inner.tell()} of its {size} bytes", path=path
                    )
            elif tag in self.invalid:
                raise ValidationError(f"tag {tag} is not valid in this version", path=path)
            else:
                if unknown is None:
                    unknown = {}
                unknown[tag] = payload
        out = Container()
        for f in self.fields:
            out[f.name] = values[f.name] if f.name in values else f.fresh_default()
        out[UNKNOWN_TAGS] = unknown
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            obj = {}
        entries: list[tuple[int, bytes]] = []
        for f in self.fields:
            value = obj.get(f.name, f.default)
            if same_value(value, f.default):
                continue
            buffer = io.BytesIO()
            f.subcon._build(value, buffer, context, f"{path} -> tag {f.tag}")
            entries.append((f.tag, buffer.getvalue()))
        unknown = obj.get(UNKNOWN_TAGS)
        if unknown:
            entries.extend((int(tag), bytes(raw)) for tag, raw in unknown.items())
        entries.sort(key=lambda entry: entry[0])
        for (tag, _), (following, _) in itertools.pairwise(entries):
            if tag == following:
                raise ValidationError(f"tag {tag} is written twice (a known field and an unknown tag?)", path=path)
        UVarInt._build(len(entries), stream, context, path)
        for tag, raw in entries:
            UVarInt._build(tag, stream, context, path)
            UVarInt._build(len(raw), stream, context, path)
            stream_write(stream, raw, len(raw), path)
        return obj


class KafkaStruct(Adapter):
    """A Kafka struct: its regular fields in order, then (in flexible versions) its tag section.

    A ``Struct`` underneath; parsing flattens the tag section's values into the one
    ``Container`` (and leaves out construct's ``_io`` bookkeeping), so a parsed struct holds
    exactly its fields, plus ``_unknown_tags`` when it has a tag section.
    """

    def __init__(self, *subcons: Any, tags: TagSection | None = None) -> None:
        members = list(subcons)
        if tags is not None:
            members.append(_TAGS_KEY / tags)
        super().__init__(Struct(*members))
        self.tags = tags

    def _decode(self, obj: Any, context: Any, path: str) -> Any:
        out = Container()
        for key, value in obj.items():
            if key not in ("_io", _TAGS_KEY):
                out[key] = value
        if self.tags is not None:
            out.update(obj[_TAGS_KEY])
        return out

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        if self.tags is None:
            return obj
        # The tag section picks its own fields (and _unknown_tags) out of the whole struct.
        return {**obj, _TAGS_KEY: obj}

"""Base classes of the generated messages and structs, with their generic (non-hot) methods."""

from __future__ import annotations

import operator
import uuid
from binascii import a2b_base64, b2a_base64  # (base64's primitives: base64 itself costs every start a millisecond)
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from kafka_epochs.wire.errors import DecodeError, EncodeError, UnsupportedVersionError
from kafka_epochs.wire.schema import FieldInfo
from kafka_epochs.wire.support import MissingField
from kafka_epochs.wire.uuids import parse_uuid, uuid_text

Decoder = Callable[[bytes, int, int], tuple[Any, int]]
Encoder = Callable[[Any, list[bytes]], None]


#: An empty version range: a message with no flexible (or no deprecated) versions says so with it.
NO_VERSIONS = range(0)


class Struct:
    """A generated struct: ``__slots__`` for its fields, generic equality, repr and dict views."""

    __slots__ = ()
    _FIELDS: ClassVar[tuple[FieldInfo, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        # By field, not by slot: a lazily defaulted struct's slot holds None until it is read.
        names = _EQ_NAMES.get(type(self)) or _eq_names(type(self))
        return all(getattr(self, name) == getattr(other, name) for name in names)

    __hash__ = None  # type: ignore[assignment]  # mutable, so unhashable like a list

    def __repr__(self) -> str:
        parts = [f"{f.attr}={getattr(self, f.attr)!r}" for f in self._FIELDS]
        unknown = getattr(self, "_unknown_tags", None)
        if unknown:
            parts.append(f"_unknown_tags={unknown!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_dict(self, version: int | None = None) -> dict[str, Any]:
        """A JSON-ready view: snake_case keys; bytes as base64, uuids as Kafka's base64url text.

        With ``version``, only the fields that version carries (nested structs too): what a
        frame of that version held, without the defaults of fields it has no room for. Without
        it, every field (an object built in code belongs to no version).
        """
        cls = type(self)
        plan = _PLANS.get((cls, version)) or _plan(cls, version)
        out = dict(zip(plan.keys, plan.values(self), strict=True))
        for key, convert in plan.conversions:
            value = out[key]
            if value is not None:
                out[key] = convert(value)
        unknown = getattr(self, "_unknown_tags", None)
        if unknown:
            out["_unknown_tags"] = {str(t): b2a_base64(v, newline=False).decode() for t, v in sorted(unknown.items())}
        return out

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        """The inverse of :meth:`to_dict`; absent keys take the spec default."""
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}.from_dict needs a dict, not {type(data).__name__}")
        known = {f.attr for f in cls._FIELDS}
        extra = set(data) - known - {"_unknown_tags"}
        if extra:
            raise ValueError(f"{cls.__name__} has no field {sorted(extra)[0]!r}")
        obj = cls()
        for f in cls._FIELDS:
            if f.attr in data:
                setattr(obj, f.attr, _from_plain(data[f.attr], f))
        if data.get("_unknown_tags"):
            if not hasattr(cls, "_unknown_tags"):
                raise ValueError(f"{cls.__name__} is never flexible, so it has no tagged fields")
            obj._unknown_tags = {  # type: ignore[attr-defined]
                int(t): a2b_base64(v) for t, v in data["_unknown_tags"].items()
            }
        return obj


#: (made after its class, so that its bound is the class, not a name typing would compile at import)
T = TypeVar("T", bound=Struct)


class Message(Struct):
    """A top-level generated message: versioned ``encode``/``decode`` entry points."""

    __slots__ = ()
    API_KEY: ClassVar[int | None] = None
    MESSAGE_TYPE: ClassVar[str] = ""
    VALID_VERSIONS: ClassVar[range] = NO_VERSIONS
    FLEXIBLE_VERSIONS: ClassVar[range] = NO_VERSIONS
    DEPRECATED_VERSIONS: ClassVar[range] = NO_VERSIONS
    LATEST_VERSION_UNSTABLE: ClassVar[bool] = False
    _DECODERS: ClassVar[dict[int, Decoder]] = {}
    _ENCODERS: ClassVar[dict[int, Encoder]] = {}

    def encode(self, version: int) -> bytes:
        """The body at ``version`` as bytes (no size prefix, no header)."""
        out: list[bytes] = []
        self.write(out, version)
        return b"".join(out)

    def write(self, out: list[bytes], version: int) -> None:
        """Append the encoding at ``version`` to ``out`` (for framing without extra copies)."""
        try:
            encoder = self._ENCODERS[version]
        except KeyError:
            raise _unsupported(type(self), version) from None
        try:
            encoder(self, out)
        except MissingField as e:  # raised by a writer shared between versions: name the version
            raise e.in_version(version) from None
        except EncodeError:
            raise
        except Exception as e:  # any failure here is a value the version cannot hold
            from kafka_epochs.wire.encode_check import find_bad_value

            where = find_bad_value(self, version) or _describe(e)
            raise EncodeError(f"cannot encode {type(self).__name__} v{version}: {where}") from e

    @classmethod
    def decode(cls: type[M], data: bytes | bytearray | memoryview, version: int) -> M:
        """Decode exactly one body at ``version``; trailing bytes are an error."""
        obj, pos = cls.read(data, 0, version)
        if pos != len(data):
            raise DecodeError(
                f"{len(data) - pos} trailing bytes after the message", pos, "", f"{cls.__name__} v{version}"
            )
        return obj

    @classmethod
    def read(
        cls: type[M],
        data: bytes | bytearray | memoryview,
        offset: int,
        version: int,
        end: int | None = None,
    ) -> tuple[M, int]:
        """Decode one body starting at ``offset``; returns the object and the offset after it.

        Reads never go past ``end`` (default: the end of ``data``).
        """
        if type(data) is not bytes:
            data = bytes(data)
        if end is None:
            end = len(data)
        try:
            decoder = cls._DECODERS[version]
        except KeyError:
            raise _unsupported(cls, version) from None
        try:
            obj, pos = decoder(data, offset, end)
            if pos <= end:
                return obj, pos
        except Exception:
            pass
        from kafka_epochs.wire.checked import explain

        raise explain(cls, data, offset, end, version)


#: (as T)
M = TypeVar("M", bound=Message)


def read_replacing(cls: Any, data: bytes, offset: int, version: int, end: int) -> tuple[Any, int, list[str]]:
    """``cls.read``, except that strings which are not UTF-8 are read with U+FFFD for each bad
    sequence, as Kafka's Java side reads them; returns the object, the offset after it, and a
    warning per string so read. Anything else wrong with the bytes raises as ``read`` does."""
    try:
        obj, pos = cls.read(data, offset, version, end)
        return obj, pos, []
    except DecodeError as first:
        from kafka_epochs.wire.checked import utf8_damage

        damage = utf8_damage(cls, data, offset, end, version)
        if not damage:
            raise first from None
    # Read once with each bad string's bytes replaced by as many valid ones (every offset stays),
    # then give each such field the replacement reading of its own bytes.
    repaired = bytearray(data)
    for start, length, _ in damage:
        repaired[start : start + length] = b"?" * length
    obj, pos = cls.read(bytes(repaired), offset, version, end)
    warnings = []
    for start, length, path in damage:
        _set_path(obj, path, data[start : start + length].decode("utf-8", "replace"))
        warnings.append(f"invalid UTF-8 in {path} read with U+FFFD replacements (as Kafka's Java side reads it)")
    return obj, pos, warnings


def _set_path(obj: Any, path: str, value: str) -> None:
    """Set the field at ``path`` (``topics[3].name``, ``client_id``, ``names[0]``) of ``obj``."""
    steps = path.split(".")
    for step in steps[:-1]:
        obj = _step(obj, step)
    last = steps[-1]
    if last.endswith("]"):
        name, index = last[:-1].split("[")
        getattr(obj, name)[int(index)] = value
    else:
        setattr(obj, last, value)


def _step(obj: Any, step: str) -> Any:
    if step.endswith("]"):
        name, index = step[:-1].split("[")
        return getattr(obj, name)[int(index)]
    return getattr(obj, step)


def _unsupported(cls: type, version: int) -> UnsupportedVersionError:
    valid = getattr(cls, "VALID_VERSIONS", NO_VERSIONS)
    return UnsupportedVersionError(f"{cls.__name__} has no version {version} (valid: {valid.start}-{valid.stop - 1})")


def _describe(e: Exception) -> str:
    return f"{type(e).__name__}: {e}"


class _DictPlan:
    """How ``to_dict`` renders one class: every value fetched by one ``attrgetter`` call, and only
    the fields that are not already JSON-ready (structs, bytes, uuids, arrays) converted."""

    __slots__ = ("conversions", "keys", "values")

    def __init__(self, cls: type, version: int | None) -> None:
        fields = [f for f in cls._FIELDS if version is None or f.present(version)]  # type: ignore[attr-defined]
        self.keys = tuple(f.attr for f in fields)
        getter = operator.attrgetter(*self.keys) if self.keys else (lambda obj: ())
        self.values: Callable[[Any], tuple[Any, ...]] = getter if len(self.keys) != 1 else (lambda obj: (getter(obj),))
        self.conversions = tuple(
            (f.attr, convert) for f in fields if (convert := _converter(f.kind, f.element, version)) is not None
        )


def _converter(kind: str, element: str | None, version: int | None) -> Callable[[Any], Any] | None:
    """The conversion a non-null value of ``kind`` needs to be JSON-ready, or None."""
    if kind == "array":
        inner = _converter(element or "", None, version)
        if inner is None:
            return list  # a copy, so the dict does not alias the message's list
        return lambda items: [None if v is None else inner(v) for v in items]
    if kind == "struct":
        # nested fields' version ranges are the message's versions: the same version applies
        return _struct_to_dict if version is None else lambda value: value.to_dict(version)
    if kind in ("bytes", "records"):
        return _base64
    if kind == "uuid":
        return uuid_text
    return None


def _struct_to_dict(value: Struct) -> dict[str, Any]:
    return value.to_dict()


def _base64(value: bytes) -> str:
    return b2a_base64(value, newline=False).decode()


_PLANS: dict[tuple[type, int | None], _DictPlan] = {}
_EQ_NAMES: dict[type, tuple[str, ...]] = {}


def _eq_names(cls: type[Struct]) -> tuple[str, ...]:
    names = tuple(f.attr for f in cls._FIELDS)
    if "_unknown_tags" in cls.__slots__:
        names += ("_unknown_tags",)
    _EQ_NAMES[cls] = names
    return names


def _plan(cls: type, version: int | None) -> _DictPlan:
    plan = _PLANS[cls, version] = _DictPlan(cls, version)
    return plan


def _from_plain(value: Any, f: FieldInfo) -> Any:
    if value is None:
        return None
    if f.kind == "array":
        return [_element_from_plain(v, f) for v in value]
    return _element_from_plain(value, f, f.kind)


def _element_from_plain(value: Any, f: FieldInfo, kind: str | None = None) -> Any:
    kind = kind or f.element
    if value is None:
        return None
    if kind == "struct":
        return f.struct.from_dict(value)
    if kind in ("bytes", "records"):
        return a2b_base64(value) if isinstance(value, str) else bytes(value)
    if kind == "uuid":
        return value if isinstance(value, uuid.UUID) else parse_uuid(value)
    return value

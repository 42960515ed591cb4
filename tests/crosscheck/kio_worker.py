"""Plain-value adapter for kio, usable in-process and as a subprocess worker.

This module imports nothing but the standard library and ``kio`` itself, so the
same code serves two purposes:

* ``tests.crosscheck.peers`` imports :class:`KioCodec` and runs it in-process
  against the kio installed in the venv (0.6.5);
* ``python -s -S kio_worker.py [--preload]`` (with ``PYTHONPATH`` pointing at a
  private ``--target`` install of kio 0.5.0) serves :class:`KioCodec` over a pipe,
  because two versions of the same top-level package cannot share one
  interpreter. ``--preload`` imports every schema module in a background thread
  after the handshake, overlapping that cost with the parent's own work.

Wire format of the pipe (both directions): a 4-byte big-endian length, then a
pickle of a tuple. The worker first sends ``("hello", kio.__file__,
kio.__version__, pairs)``; afterwards every request ``(op, *args)`` with ``op`` in
``encode | decode | shape`` is answered by ``("ok", result)`` or
``("err", exception_type_name, message)``. EOF on stdin ends the worker.

See ``peers.py`` for the plain-value format and the list of kio quirks.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import pickle
import re
import struct
import sys
import threading
import types
import typing
import uuid
from collections.abc import Callable
from importlib import import_module
from typing import Any

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ONE_MS = datetime.timedelta(milliseconds=1)
_ZERO_UUID = uuid.UUID(int=0)

# kio field types whose Python representation is not the wire integer. kio drops
# the "Ms" suffix of such fields (ThrottleTimeMs -> throttle_time).
_TIMEDELTA_TYPES = frozenset({"timedelta_i32", "timedelta_i64"})
_DATETIME_TYPES = frozenset({"datetime_i64"})
_WIRE_KIND = {
    "error_code": "int16",
    "timedelta_i32": "int32",
    "timedelta_i64": "int64",
    "datetime_i64": "int64",
}

# Fields kio names differently from the Kafka 3.9 specs, beyond the generic rules
# above and the trailing "_" kio appends to names that shadow builtins (id_, type_).
# Keyed by message name; values map kio's snake name -> our plain (3.9) name.
# kio 0.6.5 is generated from Kafka 4.x, which renamed VoteRequest's Candidate*
# fields to Replica* (same wire layout for the versions 3.9 knows).
FIELD_ALIASES: dict[str, dict[str, str]] = {
    "VoteRequest": {
        "replica_epoch": "candidate_epoch",
        "replica_id": "candidate_id",
        "replica_directory_id": "candidate_directory_id",
    },
}

_SUFFIX = {"request": "Request", "response": "Response"}


def _message_name(kio_api: str, entity_type: str) -> str:
    camel = "".join(part.capitalize() for part in kio_api.split("_"))
    return camel + _SUFFIX.get(entity_type, "")


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    attr: str  # kio attribute name
    plain: str  # our snake_case name
    kafka_type: str | None  # kio's metadata["kafka_type"] (None for structs)
    optional: bool  # Python-level "X | None"
    array: bool
    entity: type | None  # nested dataclass, if the field (or its items) is a struct
    tag: int | None


class KioCodec:
    """Maps plain values to and from kio's generated dataclasses."""

    def __init__(self) -> None:
        import kio
        from kio.schema.errors import ErrorCode
        from kio.schema.index import schema_name_map
        from kio.serial import entity_reader, entity_writer

        self.kio_file: str = kio.__file__ or ""
        self.kio_version: str = str(getattr(kio, "__version__", "?"))
        self._error_code: Callable[[int], Any] = ErrorCode
        self._reader = entity_reader
        self._writer = entity_writer
        self._paths: dict[tuple[str, int], str] = {}
        for api, versions in schema_name_map.items():
            for version, by_type in versions.items():
                for entity_type, path in by_type.items():
                    name = _message_name(api, entity_type.name)
                    self._paths[(name, int(version))] = path
        self._classes: dict[tuple[str, int], type] = {}
        self._plans: dict[type, tuple[_FieldPlan, ...]] = {}

    # -- discovery ---------------------------------------------------------

    def preload(self) -> None:
        """Import every schema module (what a sweep over all pairs will need)."""
        for name, version in self.pairs():
            self.entity_class(name, version)

    def pairs(self) -> list[tuple[str, int]]:
        return sorted(self._paths)

    def supports(self, name: str, version: int) -> bool:
        return (name, version) in self._paths

    def entity_class(self, name: str, version: int) -> type:
        key = (name, version)
        cls = self._classes.get(key)
        if cls is None:
            try:
                path = self._paths[key]
            except KeyError:
                raise LookupError(f"kio has no {name} v{version}") from None
            module_name, _, attr = path.partition(":")
            module = import_module(module_name)
            cls = getattr(module, attr)
            # The generator names its source spec in the module docstring; make sure
            # our CamelCase reconstruction of the message name agrees with it.
            found = re.search(r"message/(\w+)\.json", module.__doc__ or "")
            if found and found.group(1) != name:
                raise LookupError(f"{path} was generated from {found.group(1)}, not {name}")
            self._classes[key] = cls
        return cls

    def _plan(self, cls: type, message: str) -> tuple[_FieldPlan, ...]:
        plan = self._plans.get(cls)
        if plan is not None:
            return plan
        fields = dataclasses.fields(cls)
        hints: dict[str, Any] = {}
        if any(isinstance(f.type, str) for f in fields):
            hints = typing.get_type_hints(cls)
        aliases = FIELD_ALIASES.get(message, {})
        items = []
        for f in fields:
            optional, array, inner = _unwrap(hints.get(f.name, f.type))
            kafka_type = f.metadata.get("kafka_type")
            entity = inner if dataclasses.is_dataclass(inner) else None
            plain = f.name
            if kafka_type in _TIMEDELTA_TYPES or kafka_type in _DATETIME_TYPES:
                plain += "_ms"
            elif plain.endswith("_"):
                plain = plain[:-1]
            plain = aliases.get(plain, plain)
            tag = f.metadata.get("tag")
            items.append(
                _FieldPlan(
                    attr=f.name,
                    plain=plain,
                    kafka_type=kafka_type,
                    optional=optional,
                    array=array,
                    entity=entity,  # type: ignore[arg-type]
                    tag=None if tag is None else int(tag),
                )
            )
        plan = tuple(items)
        self._plans[cls] = plan
        return plan

    # -- encode ----------------------------------------------------------------

    def encode(self, name: str, version: int, plain: dict[str, Any]) -> bytes:
        cls = self.entity_class(name, version)
        entity = self._to_entity(cls, plain, name, name)
        buffer = io.BytesIO()
        self._writer(cls)(buffer, entity)
        return buffer.getvalue()

    def _to_entity(self, cls: type, plain: Any, message: str, where: str) -> Any:
        if not isinstance(plain, dict):
            raise TypeError(f"{where}: expected a dict, got {type(plain).__name__}")
        plan = self._plan(cls, message)
        known = {p.plain for p in plan}
        extra = sorted(set(plain) - known)
        if extra:
            raise KeyError(f"{where}: fields not in this version: {extra}")
        kwargs = {}
        for p in plan:
            if p.plain not in plain:
                raise KeyError(f"{where}: missing field {p.plain!r}")
            kwargs[p.attr] = self._to_kio(p, plain[p.plain], message, f"{where}.{p.plain}")
        return cls(**kwargs)

    def _to_kio(self, p: _FieldPlan, value: Any, message: str, where: str) -> Any:
        if value is None:
            return None
        if p.array:
            return tuple(self._item_to_kio(p, item, message, where) for item in value)
        return self._item_to_kio(p, value, message, where)

    def _item_to_kio(self, p: _FieldPlan, value: Any, message: str, where: str) -> Any:
        if p.entity is not None:
            return self._to_entity(p.entity, value, message, where)
        kind = p.kafka_type
        if kind == "error_code":
            return self._error_code(value)
        if kind in _TIMEDELTA_TYPES:
            return datetime.timedelta(milliseconds=value)
        if kind in _DATETIME_TYPES:
            if value == -1 and p.optional:
                return None
            if value < 0:
                raise ValueError(f"{where}: kio cannot represent timestamp {value}")
            return _EPOCH + datetime.timedelta(milliseconds=value)
        if kind == "uuid" and p.optional and value == _ZERO_UUID:
            # kio models "zero uuid" as None; tagged uuid fields default to None,
            # so passing the zero uuid itself would make kio write the tag.
            return None
        return value

    # -- decode ----------------------------------------------------------------

    def decode(self, name: str, version: int, data: bytes) -> dict[str, Any]:
        cls = self.entity_class(name, version)
        entity: Any
        entity, size = self._reader(cls)(data, 0)
        if size != len(data):
            raise ValueError(f"{name} v{version}: {len(data) - size} trailing bytes")
        result: dict[str, Any] = self._from_entity(cls, entity, name)
        return result

    def _from_entity(self, cls: type, entity: Any, message: str) -> dict[str, Any]:
        return {p.plain: self._from_kio(p, getattr(entity, p.attr), message) for p in self._plan(cls, message)}

    def _from_kio(self, p: _FieldPlan, value: Any, message: str) -> Any:
        if p.array:
            if value is None:
                return None
            return [self._item_from_kio(p, item, message) for item in value]
        return self._item_from_kio(p, value, message)

    def _item_from_kio(self, p: _FieldPlan, value: Any, message: str) -> Any:
        kind = p.kafka_type
        if p.entity is not None:
            return None if value is None else self._from_entity(p.entity, value, message)
        if kind in _DATETIME_TYPES:
            return -1 if value is None else (value - _EPOCH) // _ONE_MS
        if kind == "uuid":
            return _ZERO_UUID if value is None else value
        if value is None:
            return None
        if kind in _TIMEDELTA_TYPES:
            return value // _ONE_MS
        return _native(value)

    # -- shape -----------------------------------------------------------------

    def shape(self, name: str, version: int) -> list[dict[str, Any]]:
        """Neutral description of the fields (see ``peers.FieldShape``)."""
        return self._shape(self.entity_class(name, version), name)

    def _shape(self, cls: type, message: str) -> list[dict[str, Any]]:
        from kio.serial._implicit_defaults import get_tagged_field_default

        out = []
        for p, f in zip(self._plan(cls, message), dataclasses.fields(cls), strict=True):
            kind = "struct" if p.entity is not None else str(p.kafka_type)
            nullable = p.optional and kind not in ("uuid", "datetime_i64")
            default = None
            if p.tag is not None:
                # the value kio compares against to decide whether to write the tag
                default = self._from_kio(p, get_tagged_field_default(f), message)
            out.append(
                {
                    "name": p.plain,
                    "kind": _WIRE_KIND.get(kind, kind),
                    "array": p.array,
                    "nullable": nullable,
                    "tagged": p.tag is not None,
                    "default": default,
                    "fields": [] if p.entity is None else self._shape(p.entity, message),
                }
            )
        return out


def _unwrap(tp: Any) -> tuple[bool, bool, Any]:
    """``X | None`` / ``tuple[X, ...]`` -> (optional, is_array, X)."""
    optional = False
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        rest = [a for a in args if a is not type(None)]
        optional = len(rest) != len(args)
        if len(rest) != 1:
            raise TypeError(f"unsupported union {tp!r}")
        tp = rest[0]
    if typing.get_origin(tp) is tuple:
        return optional, True, typing.get_args(tp)[0]
    return optional, False, tp


def _native(value: Any) -> Any:
    """Strip kio's phantom/enum subclasses down to builtin types."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return value


# -- subprocess server ---------------------------------------------------------

_LENGTH = struct.Struct(">I")


def write_frame(stream: typing.IO[bytes], obj: object) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(payload)) + payload)
    stream.flush()


def read_frame(stream: typing.IO[bytes]) -> Any:
    """Next pickled frame, or ``EOFError`` at a clean end of stream."""
    head = stream.read(_LENGTH.size)
    if not head:
        raise EOFError
    if len(head) != _LENGTH.size:
        raise EOFError("truncated frame header")
    (size,) = _LENGTH.unpack(head)
    payload = stream.read(size)
    if len(payload) != size:
        raise EOFError("truncated frame")
    return pickle.loads(payload)


def serve(stdin: typing.IO[bytes], stdout: typing.IO[bytes], preload: bool = False) -> None:
    codec = KioCodec()
    write_frame(stdout, ("hello", codec.kio_file, codec.kio_version, codec.pairs()))
    if preload:
        # Import the ~650 schema modules while the parent is busy with other peers;
        # the import system's per-module locks make this safe alongside requests.
        threading.Thread(target=codec.preload, daemon=True).start()
    operations: dict[str, Callable[..., Any]] = {
        "encode": codec.encode,
        "decode": codec.decode,
        "shape": codec.shape,
    }
    while True:
        try:
            request = read_frame(stdin)
        except EOFError:
            return
        op, *args = request
        try:
            result = operations[op](*args)
        except Exception as exc:  # reported to the parent, which re-raises
            write_frame(stdout, ("err", type(exc).__name__, str(exc)))
        else:
            write_frame(stdout, ("ok", result))


def main() -> None:
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the frame stream
    serve(sys.stdin.buffer, stdout, preload="--preload" in sys.argv[1:])


if __name__ == "__main__":
    main()

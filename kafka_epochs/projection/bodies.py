"""Bodies read through projections: what ``decode --fields`` and ``--headers-only`` print.

A :class:`FieldsReader` stands in for ``Message.read`` when frames are decoded (see
``Protocol.decode_request(..., body_reader=)``): for each message class it keeps the asked-for
paths that exist in that message (a ``topics[].name`` means something in a Metadata response
and nothing in a Produce request) and reads them as columns. With no paths it reads no body at
all. A few values the pairing of requests and responses cannot do without are always read,
whatever was asked: a Produce request's ``acks`` (acks=0 is never answered) and SaslHandshake's
``mechanism`` and ``error_code`` (the tokens that follow are raw).
"""

from __future__ import annotations

from binascii import b2a_base64  # (base64's primitives: base64 itself costs every start a millisecond)
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from kafka_epochs.projection import Projection, has_path, projection
from kafka_epochs.projection.paths import leaf_field
from kafka_epochs.wire.errors import DecodeError
from kafka_epochs.wire.uuids import uuid_text

__all__ = ["FieldsReader", "ProjectedBody", "ProjectingReader", "error_paths", "projecting"]

PRODUCE, SASL_HANDSHAKE, API_VERSIONS = 0, 17, 18

#: what pairing reads from a body, by (api key, request or response)
CONTROL: dict[tuple[int, str], tuple[str, ...]] = {
    (PRODUCE, "request"): ("acks",),
    (SASL_HANDSHAKE, "request"): ("mechanism",),
    (SASL_HANDSHAKE, "response"): ("error_code",),
    (API_VERSIONS, "response"): ("error_code",),  # an UNSUPPORTED_VERSION answer is read again as v0
}


class ProjectedBody:
    """The asked-for fields of one body, as columns (one list of values per path)."""

    __slots__ = ("columns", "control", "error_paths", "int_keys", "message", "note", "version")

    def __init__(
        self,
        message: Any,
        version: int,
        columns: dict[str, list[Any]],
        control: dict[str, Any],
        note: str | None = None,
        int_keys: tuple[str, ...] | None = None,
        error_paths: tuple[str, ...] | None = None,
    ) -> None:
        self.message = message
        self.version = version
        self.columns = columns
        self.control = control  # the values pairing needs (acks, mechanism, error_code)
        self.note = note  # why some asked-for paths were not read, if so
        # the columns' paths as JSON strings, when every column is of integers (or lists of them)
        self.int_keys = int_keys
        # the columns that hold error codes (what a line's "errors" looks at), when known
        self.error_paths = error_paths

    def __getattr__(self, name: str) -> Any:
        control = object.__getattribute__(self, "control")
        if name in control:
            return control[name]
        raise AttributeError(f"{name!r} was not read: a projected body holds only the fields asked for")

    # CONTROL's names, asked of every produce request and SASL handshake: as properties, since
    # __getattr__ is called only once a plain lookup has failed (an exception made and dropped,
    # six times the cost). A value not read raises AttributeError, and __getattr__ says why.
    @property
    def acks(self) -> Any:
        return self.control["acks"] if "acks" in self.control else self.__getattr__("acks")

    @property
    def mechanism(self) -> Any:
        return self.control["mechanism"] if "mechanism" in self.control else self.__getattr__("mechanism")

    @property
    def error_code(self) -> Any:
        return self.control["error_code"] if "error_code" in self.control else self.__getattr__("error_code")

    def __repr__(self) -> str:
        return f"ProjectedBody({self.message.__name__} v{self.version}, {self.columns!r})"

    def to_dict(self, version: int | None = None) -> dict[str, Any]:
        """The columns, JSON-ready (bytes as base64, uuids as Kafka's base64url text)."""
        return {path: [_plain(v) for v in values] for path, values in self.columns.items()}

    def int_text(self) -> str | None:
        """:meth:`to_dict` as JSON text (``json.dumps``'s separators), when every column holds
        integers or lists of them, or None where a version does not carry the field (or an
        array is null): a column is written as Python writes the list, its Nones as JSON's
        nulls (nothing else in such a column writes "None"). None for a column of another type."""
        keys = self.int_keys
        if keys is None:
            return None
        if len(keys) == 1:  # (one path asked for: no list of parts to join)
            (values,) = self.columns.values()
            text = repr(values)
            return f"{{{keys[0]}: {text.replace('None', 'null') if None in values else text}}}"
        parts = []
        for key, values in zip(keys, self.columns.values(), strict=True):
            text = repr(values)
            parts.append(f"{key}: {text.replace('None', 'null') if None in values else text}")
        return "{" + ", ".join(parts) + "}"


def error_paths(paths: Any) -> tuple[str, ...]:
    """The paths among ``paths`` that name error codes."""
    return tuple(p for p in paths if p.endswith("error_code"))


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return b2a_base64(value, newline=False).decode()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is not None and type(value).__name__ == "UUID":
        return uuid_text(value)
    return value


class _Plan:
    """How one message class is read: its share of the paths, and the control values."""

    def __init__(self, message: Any, paths: tuple[str, ...]) -> None:
        self.message = message
        kind = getattr(message, "MESSAGE_TYPE", "")
        control = CONTROL.get((message.API_KEY, kind), ())
        self.control = projection(message, list(control)) if control else None
        own = [p for p in paths if has_path(message, p)]
        self.note: str | None = None
        self.fields: Projection | None = None
        self.int_keys: tuple[str, ...] | None = None
        self.error_paths: tuple[str, ...] = ()
        if own:
            try:
                self.fields = projection(message, own)
            except ValueError as e:
                self.note = f"fields not read: {e}"
            else:
                self.error_paths = error_paths(self.fields.paths)
                if all(_integers(leaf_field(message, p)) for p in self.fields.paths):
                    self.int_keys = tuple(encode_basestring(p) for p in self.fields.paths)
        self.reads_body = self.fields is not None or self.control is not None


_INTEGERS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


def _integers(field: Any) -> bool:
    """Whether a field's values are integers, or lists of them (not bools, which are ints too)."""
    return field.kind in _INTEGERS or (field.kind == "array" and field.element in _INTEGERS)


class ProjectingReader:
    """A body reader built on projections, which can also *try* a layout cheaply.

    Where two layouts of a message share a version (the KIP documents' and Apache's), the
    protocol reads the body with each to choose one. ``attempt`` lets it do that with the
    projections themselves: bytes a layout does not fit cost no explanation and no full decode.
    """

    def read(
        self, message: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool
    ) -> tuple[Any, int]:
        raise NotImplementedError

    def __call__(self, message: Any, data: bytes, pos: int, version: int, end: int | None = None) -> tuple[Any, int]:
        """The body at ``data[pos:end]`` (``end``: the frame's end, default the end of ``data``)."""
        return self.read(message, data, pos, version, end, True)

    def attempt(self, message: Any, data: bytes, pos: int, version: int) -> tuple[Any, int] | None:
        """The body and the offset after it, or None when ``message`` at ``version`` does not fit."""
        try:
            return self.read(message, data, pos, version, None, False)
        except DecodeError:
            return None


ReadFunction = Callable[[Any, bytes, int, int, "int | None", bool], tuple[Any, int]]
#: A body reader of one (message, version) made once (see :meth:`FieldsReader.quick`).
QuickRead = Callable[[bytes, int], "tuple[ProjectedBody | None, int] | None"]


class _Projecting(ProjectingReader):
    def __init__(self, function: ReadFunction) -> None:
        self.read = function  # type: ignore[method-assign,assignment]


def projecting(function: ReadFunction) -> ProjectingReader:
    """A body reader of ``function(message, data, pos, version, end, explain)``, which reads with
    projections and passes ``end`` and ``explain`` on to each ``Projection.read``."""
    return _Projecting(function)


class FieldsReader(ProjectingReader):
    """``Message.read``'s stand-in that reads only ``paths`` (none: headers only). It reads by
    field tables alone, so a protocol hands it each message's shape, not its class, and a run
    loads no message module for bodies (see ``kafka_epochs.decoded.body_message``)."""

    reads_shapes = True

    def __init__(self, paths: list[str] | tuple[str, ...]) -> None:
        self.paths = tuple(paths)
        self._plans: dict[Any, _Plan] = {}

    def _plan(self, message: Any) -> _Plan:
        plan = self._plans.get(message)
        if plan is None:
            plan = self._plans[message] = _Plan(message, self.paths)
        return plan

    def skips(self, message: Any) -> bool:
        """Whether this reader looks at no body of ``message`` (reading one gives None and the
        frame's end): no path asked for is in it, and pairing needs nothing from it."""
        return not self._plan(message).reads_body

    def read(
        self, message: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool
    ) -> tuple[ProjectedBody | None, int]:
        plan = self._plan(message)
        limit = len(data) if end is None else end
        if not plan.reads_body:
            return None, limit  # headers only: the body is not looked at
        stop = limit
        control: dict[str, Any] = {}
        if plan.control is not None:
            columns = plan.control.empty()
            stop = plan.control.read(columns, data, version, pos, limit, explain=explain)
            control = {path: column[0] for path, column in zip(plan.control.paths, columns, strict=True)}
        values: dict[str, list[Any]] = {}
        if plan.fields is not None:
            columns = plan.fields.empty()
            stop = plan.fields.read(columns, data, version, pos, limit, explain=explain)
            values = dict(zip(plan.fields.paths, columns, strict=True))
        return ProjectedBody(message, version, values, control, plan.note, plan.int_keys, plan.error_paths), stop

    def quick(self, message: Any, version: int) -> QuickRead | None:
        """:meth:`attempt` of one (message, version), made once, for a caller that wants the
        body to end exactly at the end of ``data``: ``quick(data, pos)`` is the body at
        ``data[pos:]`` and the offset after it (past the end when its bytes ran out: the caller
        takes any offset but the end as not fitting), or None where the bytes do not fit. It
        calls the projections' generated functions itself (none of :meth:`read`'s steps per
        body). None for a version the projections cannot read (the general way says why)."""
        plan = self._plan(message)
        if not plan.reads_body:
            return lambda data, pos: (None, len(data))
        try:
            read_control = None if plan.control is None else plan.control.function(version)
            read_fields = None if plan.fields is None else plan.fields.function(version)
        except (DecodeError, ValueError):
            return None
        control_paths = () if plan.control is None else plan.control.paths
        field_paths = () if plan.fields is None else plan.fields.paths
        note, int_keys, errors = plan.note, plan.int_keys, plan.error_paths
        # what pairing needs is nearly always one value (a Produce's acks), and a body often
        # holds one of the fields asked for: one column is read without the comprehensions
        # (each a call of its own) that several take
        only_control = control_paths[0] if len(control_paths) == 1 else None
        only_field = field_paths[0] if len(field_paths) == 1 else None

        def quick(data: bytes, pos: int) -> tuple[ProjectedBody | None, int] | None:
            end = stop = len(data)
            control: dict[str, Any] = {}
            values: dict[str, list[Any]] = {}
            try:
                if read_control is not None:
                    if only_control is not None:
                        column: list[Any] = []
                        stop = read_control(data, pos, end, column)
                        control = {only_control: column[0]}
                    else:
                        columns: list[list[Any]] = [[] for _ in control_paths]
                        stop = read_control(data, pos, end, *columns)
                        control = {path: column[0] for path, column in zip(control_paths, columns, strict=True)}
                if only_field is not None and read_fields is not None:
                    field: list[Any] = []
                    stop = read_fields(data, pos, end, field)
                    values = {only_field: field}
                elif read_fields is not None:
                    columns = [[] for _ in field_paths]
                    stop = read_fields(data, pos, end, *columns)
                    values = dict(zip(field_paths, columns, strict=True))
            except Exception:
                return None  # (as attempt: bytes the projection does not fit)
            return ProjectedBody(message, version, values, control, note, int_keys, errors), stop

        return quick

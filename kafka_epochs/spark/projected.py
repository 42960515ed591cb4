"""Frames of one message read through a projection: a typed column per field path, no objects.

``decode_api(df, name, fields=[...])`` runs :func:`project_batch` on each Arrow batch: the
frame headers are read as for every decode, the bodies of ``name`` through the projection
(:mod:`kafka_epochs.projection`), and each projected row becomes an output row. So the output
has one row per element of the innermost array the paths walk (like ``explode``: a frame whose
array is empty gives no row), the frame's header columns repeated on each; a frame of that
message that does not decode gives one row, its field columns null and ``error`` saying why.

Columns are named after the field (``leader_epoch``), or, where two paths end in the same
name, after the whole path (``topics_partitions_leader_epoch``); a name the header or status
columns use gets ``body_`` before it (``body_error``). A dict ``{column: path}`` names them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.projection import has_path, projection
from kafka_epochs.projection.bodies import projecting
from kafka_epochs.projection.paths import leaf_field, unknown_path
from kafka_epochs.protocol_refs import ProtocolLike, resolve
from kafka_epochs.spark.batch import HEADER_FIELDS, DecodedRows
from kafka_epochs.spark.bodies import Mask
from kafka_epochs.spark.headers import Headers
from kafka_epochs.spark.schema import message_classes
from kafka_epochs.wire.uuids import uuid_text

#: The status columns of a projected row (no body, no error_codes: ask for error_code paths).
STATUS_FIELDS = [
    pa.field("error", pa.string()),
    pa.field("warnings", pa.list_(pa.string())),
    pa.field("profile", pa.string()),
]
#: Each output row's input row, so that kept columns can be taken along (dropped before output).
FRAME_INDEX = "__frame_index"

_ARROW = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "uint16": pa.uint16(),
    "int32": pa.int32(),
    "uint32": pa.uint32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "uuid": pa.string(),  # Kafka's base64url text, as everywhere else in the Spark API
    "bytes": pa.binary(),
    "records": pa.binary(),
}


class _Columns:
    """What a projection's batch holds: the header columns, one per path, the status columns."""

    names: tuple[str, ...]
    types: tuple[pa.DataType, ...]
    uuids: tuple[int, ...]  # the columns whose values are uuids (written as Kafka's text)

    def schema(self) -> pa.Schema:
        fields = [pa.field(name, t) for name, t in zip(self.names, self.types, strict=True)]
        return pa.schema([*HEADER_FIELDS, *fields, *STATUS_FIELDS])


class Plan(_Columns):
    """Columns, paths and Arrow types of a projection of ``message_name`` (picklable)."""

    def __init__(self, message_name: str, fields: Sequence[str] | Mapping[str, str], protocol: ProtocolLike) -> None:
        cls = message_classes(message_name, protocol)[0]
        if cls.API_KEY is None:
            raise ValueError(f"{message_name} is not a request or a response: frames never carry it alone")
        self.message_name = message_name
        self.api_key: int = cls.API_KEY
        self.kind: str = cls.MESSAGE_TYPE
        given = dict(fields) if isinstance(fields, Mapping) else None
        paths = list(given.values()) if given is not None else list(fields)
        resolved = projection(cls, paths)  # refuses bad paths here, on the driver
        self.paths: tuple[str, ...] = resolved.paths
        self.names: tuple[str, ...] = tuple(given) if given is not None else column_names(self.paths)
        self.uuids = tuple(i for i, p in enumerate(self.paths) if _is_uuid(leaf_field(cls, p)))
        self.types = tuple(_arrow_type(leaf_field(cls, p)) for p in self.paths)


class AnyPlan(_Columns):
    """Columns, paths and Arrow types of a projection applied to every message (picklable).

    Each message reads the paths it has; a path must exist in at least one message of the
    protocol, with one type wherever it exists, and the paths one message has must nest (as in
    one projection).
    """

    def __init__(self, fields: Sequence[str] | Mapping[str, str], protocol: ProtocolLike) -> None:
        given = dict(fields) if isinstance(fields, Mapping) else None
        wanted = list(given.values()) if given is not None else list(fields)
        if not wanted:
            raise ValueError("fields needs at least one field path (headers_only=True reads no body)")
        resolved = resolve(protocol)
        canonical: dict[str, str] = {}  # as given -> written out in full
        types: dict[str, pa.DataType] = {}
        uuids: set[str] = set()
        for name in resolved.names():
            cls = resolved.message(name)
            if cls.API_KEY is None:
                continue
            own = [p for p in wanted if has_path(cls, p)]
            if not own:
                continue
            written = projection(cls, own).paths  # refuses sibling arrays within one message
            for path, full in zip(own, written, strict=True):
                f = leaf_field(cls, full)
                kind = _arrow_type(f)
                seen = types.setdefault(path, kind)
                if seen != kind:
                    raise ValueError(f"{path!r} is {seen} in one message and {kind} in {name}: ask for it per message")
                canonical.setdefault(path, full)
                if _is_uuid(f):
                    uuids.add(path)
        missing = [p for p in wanted if p not in canonical]
        if missing:
            raise ValueError(unknown_path(resolved, missing[0]))
        self.given = tuple(wanted)
        self.paths = tuple(canonical[p] for p in wanted)
        self.names: tuple[str, ...] = tuple(given) if given is not None else column_names(self.paths)
        self.types = tuple(types[p] for p in wanted)
        self.uuids = tuple(i for i, p in enumerate(wanted) if p in uuids)


def project_any_batch(
    frames: pa.Array | pa.ChunkedArray,
    plan: AnyPlan,
    *,
    direction: pa.Array | None = None,
    request_api_key: pa.Array | None = None,
    request_api_version: pa.Array | None = None,
    protocol: ProtocolLike = None,
    sasl_mechanism: pa.Array | None = None,
) -> pa.RecordBatch:
    """Every frame's rows of ``plan``'s paths, with a :data:`FRAME_INDEX` column.

    A frame whose message has none of the paths, or whose arrays are empty, still gives one row
    (its field columns null): no frame disappears, as none does from ``decode_frames``.
    """
    subsets: dict[Any, tuple[list[int], Any] | None] = {}

    @projecting
    def read(cls: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool) -> tuple[Any, int]:
        if cls not in subsets:
            own = [i for i, p in enumerate(plan.given) if has_path(cls, p)]
            subsets[cls] = (own, projection(cls, [plan.given[i] for i in own])) if own else None
        subset = subsets[cls]
        if subset is None:
            return None, len(data) if end is None else end  # none of the paths: the body is not looked at
        own, wanted = subset
        columns = wanted.empty()
        stop = wanted.read(columns, data, version, pos, end, explain=explain)
        return (own, columns), stop

    def keep(body: Any, version: int, is_response: bool) -> Any:
        return body

    rows = DecodedRows.of(
        frames, direction, request_api_key, request_api_version, protocol, keep, sasl_mechanism, read_body=read
    )
    bodies = rows.bodies
    width = len(plan.paths)
    index: list[int] = []
    values: list[list[Any]] = [[] for _ in range(width)]
    for i, body in enumerate(bodies.values):
        count = len(body[1][0]) if body is not None else 0
        if not count:  # no rows of its own: one row of nulls, with the frame's status
            index.append(i)
            for column in values:
                column.append(None)
            continue
        index += [i] * count
        own, columns = body
        filled = dict(zip(own, columns, strict=True))
        for j in range(width):
            values[j] += filled.get(j) or [None] * count
    return _assemble(rows, plan, index, values)


def _assemble(rows: Any, plan: _Columns, index: list[int], values: list[list[Any]]) -> pa.RecordBatch:
    bodies = rows.bodies
    for u in plan.uuids:
        values[u] = [_uuid_text(v) for v in values[u]]
    taken = pa.array(index, pa.int64())
    header_batch = rows.record_batch(pa.schema(HEADER_FIELDS), {}, [None] * len(bodies.values))
    schema = plan.schema()
    out = [header_batch.column(f.name).take(taken) for f in HEADER_FIELDS]
    out += [pa.array(v, t) for v, t in zip(values, plan.types, strict=True)]
    out += [
        pa.array([bodies.errors[i] for i in index], pa.string()),
        pa.array([bodies.warnings[i] for i in index], pa.list_(pa.string())),
        pa.array([bodies.profiles[i] for i in index], pa.string()),
    ]
    return pa.RecordBatch.from_arrays([*out, taken], names=[*schema.names, FRAME_INDEX])


def column_names(paths: Sequence[str]) -> tuple[str, ...]:
    """The last segment of each path, or the whole path joined by ``_`` where that is ambiguous."""
    reserved = {f.name for f in [*HEADER_FIELDS, *STATUS_FIELDS]} | {FRAME_INDEX}
    last = [p.rsplit(".", 1)[-1].removesuffix("[]") for p in paths]
    names = []
    for name, p in zip(last, paths, strict=True):
        if last.count(name) > 1 or name in reserved:
            name = p.replace("[]", "").replace(".", "_")
        names.append(f"body_{name}" if name in reserved else name)
    return tuple(names)


def _is_uuid(f: Any) -> bool:
    return bool(f.kind == "uuid" or (f.kind == "array" and f.element == "uuid"))


def _arrow_type(f: Any) -> pa.DataType:
    if f.kind == "array":
        return pa.list_(_ARROW[f.element])
    return _ARROW[f.kind]


def project_batch(
    frames: pa.Array | pa.ChunkedArray,
    plan: Plan,
    *,
    direction: pa.Array | None = None,
    request_api_key: pa.Array | None = None,
    request_api_version: pa.Array | None = None,
    protocol: ProtocolLike = None,
    sasl_mechanism: pa.Array | None = None,
) -> pa.RecordBatch:
    """The projected rows of the frames of ``plan``'s message, with a :data:`FRAME_INDEX` column."""
    paths = plan.paths

    @projecting
    def read(cls: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool) -> tuple[Any, int]:
        if cls.__name__ != plan.message_name:
            return None, len(data) if end is None else end  # another message: not looked at (rows dropped)
        wanted = projection(cls, paths)
        columns = wanted.empty()
        stop = wanted.read(columns, data, version, pos, end, explain=explain)
        return columns, stop

    def keep(columns: Any, version: int, is_response: bool) -> Any:
        return columns

    def ours(headers: Headers) -> Mask:  # the rows of the plan's message: the others are not read
        return (
            (headers.api_key == plan.api_key) & headers.api_key_ok & (headers.is_response == (plan.kind == "response"))
        )

    rows = DecodedRows.of(
        frames,
        direction,
        request_api_key,
        request_api_version,
        protocol,
        keep,
        sasl_mechanism,
        read_body=read,
        only=ours,
    )
    headers, bodies = rows.headers, rows.bodies
    index: list[int] = []
    values: list[list[Any]] = [[] for _ in paths]
    for i, (mine, columns) in enumerate(zip(ours(headers).tolist(), bodies.values, strict=True)):
        if not mine:
            continue
        count = len(columns[0]) if columns is not None else 1  # a bad frame: one row, with its error
        if not count:
            continue
        index += [i] * count
        for target, column in zip(values, columns or [[None]] * len(paths), strict=True):
            target += column
    return _assemble(rows, plan, index, values)


def _uuid_text(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, list):
        return [uuid_text(v) for v in value]
    return uuid_text(value)

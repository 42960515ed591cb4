"""Frames of one message type decoded into its typed struct (see :mod:`kafka_epochs.spark.schema`).

The values follow the schema's rules: fields the frame's version lacks are left out (so Arrow
fills null), uuids become Kafka's base64url text, bytes and records stay binary.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.protocol_refs import ProtocolLike
from kafka_epochs.spark.batch import HEADER_FIELDS, STATUS_FIELDS, DecodedRows
from kafka_epochs.spark.schema import UNKNOWN_TAGS, arrow_type_for
from kafka_epochs.traffic import error_codes
from kafka_epochs.wire.message import uuid_text

BODY = "body"


def typed_schema(message_name: str, protocol: ProtocolLike = None) -> pa.Schema:
    """What :func:`decode_typed_batch` returns: header columns, ``body``, then the status columns."""
    return pa.schema([*HEADER_FIELDS, pa.field(BODY, arrow_type_for(message_name, protocol)), *STATUS_FIELDS])


def decode_typed_batch(
    frames: pa.Array | pa.ChunkedArray,
    message_name: str,
    *,
    direction: pa.Array | None = None,
    request_api_key: pa.Array | None = None,
    request_api_version: pa.Array | None = None,
    protocol: ProtocolLike = None,
    sasl_mechanism: pa.Array | None = None,
) -> pa.RecordBatch:
    """Like :func:`~kafka_epochs.spark.batch.decode_batch`, with ``body`` typed as ``message_name``.

    Rows out = rows in: a frame of another message (or one that cannot be decoded) has a null
    body and says why in ``error``.
    """
    schema = typed_schema(message_name, protocol)

    def render(body: Any, version: int, is_response: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        if type(body).__name__ != message_name:
            raise ValueError(f"a {type(body).__name__} v{version}, not a {message_name}")
        value = typed_value(body, version)
        # error_codes walks dicts for "error_code" keys, and typed values are such dicts
        return value, error_codes(value) if is_response else None

    decoded = DecodedRows.of(frames, direction, request_api_key, request_api_version, protocol, render, sasl_mechanism)
    values = decoded.bodies.values
    body_column = pa.array([None if v is None else v[0] for v in values], schema.field(BODY).type)
    return decoded.record_batch(schema, {BODY: body_column}, [None if v is None else v[1] for v in values])


def typed_value(obj: Any, version: int) -> dict[str, Any]:
    """One decoded struct as the plain values its Arrow struct type takes."""
    out: dict[str, Any] = {}
    for attr, low, high, convert in _plan(type(obj)):
        if low <= version <= high:  # absent in this version: leave it out, Arrow makes it null
            value = getattr(obj, attr)
            out[attr] = value if convert is None or value is None else convert(value, version)
    unknown = getattr(obj, UNKNOWN_TAGS, None)
    if unknown:
        out[UNKNOWN_TAGS] = sorted(unknown.items())  # a map column takes (key, value) pairs
    return out


Convert = Any  # Callable[[Any, int], Any] | None; None: the value is stored as it is


Plan = tuple[tuple[str, int, int, Convert], ...]
_PLANS: dict[type, Plan] = {}


def _plan(cls: type) -> Plan:
    """Per field of a generated class: attribute, version range and value conversion (once per class)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _make_plan(cls)
    return plan


def _make_plan(cls: type) -> Plan:
    plan = []
    for f in cls._FIELDS:  # type: ignore[attr-defined]
        kind = f.element if f.kind == "array" else f.kind
        one: Convert = _one_converter(kind)
        convert = _each(one) if f.kind == "array" and one is not None else one
        plan.append((f.attr, f.versions[0], f.versions[1], convert))
    return tuple(plan)


def _one_converter(kind: str | None) -> Convert:
    if kind == "struct":
        return typed_value
    if kind == "uuid":
        return _uuid
    return None


def _uuid(value: Any, version: int) -> str:
    return uuid_text(value)


def _each(convert: Any) -> Any:
    def each(values: list[Any], version: int) -> list[Any]:
        return [None if v is None else convert(v, version) for v in values]

    return each

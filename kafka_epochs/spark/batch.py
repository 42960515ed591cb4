"""``decode_batch``: a column of frames in, one Arrow record batch of decoded rows out.

This is the function every Spark adapter calls, and it needs only pyarrow and numpy, so it
works (and is tested) without Spark. Rows out = rows in, in order: a frame that cannot be
decoded gets ``error`` set and ``body_json`` null, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.protocol_refs import Lookup, ProtocolLike, resolve
from kafka_epochs.spark.bodies import Bodies, Mask, ReadBody, Render, decode_bodies
from kafka_epochs.spark.headers import Headers, read_headers
from kafka_epochs.traffic import SASL_TOKENS, error_codes
from kafka_epochs.wire.json_text import json_renderer

ERROR_CODE = pa.struct([("path", pa.string()), ("code", pa.int16()), ("name", pa.string())])

#: The header columns, shared by ``decode_batch`` and the typed decoder.
HEADER_FIELDS: list[pa.Field] = [
    pa.field("direction", pa.string()),
    pa.field("api_key", pa.int16()),
    pa.field("api_name", pa.string()),
    pa.field("api_version", pa.int16()),
    pa.field("correlation_id", pa.int32()),
    pa.field("client_id", pa.string()),
    pa.field("header_version", pa.int8()),
]

#: The status columns that close every decoded row.
STATUS_FIELDS: list[pa.Field] = [
    pa.field("error_codes", pa.list_(ERROR_CODE)),
    pa.field("error", pa.string()),
    pa.field("warnings", pa.list_(pa.string())),
    pa.field("profile", pa.string()),  # the layout that read the body: "apache", "kip" or a spec directory
]

#: What ``decode_batch`` returns, in this order.
DECODED_SCHEMA = pa.schema([*HEADER_FIELDS, pa.field("body_json", pa.string()), *STATUS_FIELDS])


def decode_batch(
    frames: pa.Array | pa.ChunkedArray,
    *,
    direction: pa.Array | None = None,
    request_api_key: pa.Array | None = None,
    request_api_version: pa.Array | None = None,
    protocol: ProtocolLike = None,
    sasl_mechanism: pa.Array | None = None,
    headers_only: bool = False,
) -> pa.RecordBatch:
    """Decode size-prefixed Kafka frames (a binary array) into :data:`DECODED_SCHEMA` rows.

    ``direction`` holds "request" or "response" per row (without it, every frame is a request).
    A response is decoded with its request's api key and version from ``request_api_key`` and
    ``request_api_version``. ``protocol`` is a Protocol, profile names ("apache", "kip", "auto")
    or spec directories, or None for the default profile, ``auto``. ``sasl_mechanism`` (the
    capture source's column) marks raw SASL tokens: they are named, not decoded. With
    ``headers_only``, bodies are not read: ``body_json`` and ``error_codes`` are null.
    """
    if headers_only:
        decoded = DecodedRows.of(
            frames,
            direction,
            request_api_key,
            request_api_version,
            protocol,
            _nothing,
            sasl_mechanism,
            read_body=_skip_body,
        )
    else:
        decoded = DecodedRows.of(
            frames, direction, request_api_key, request_api_version, protocol, _as_json, sasl_mechanism
        )
    values = decoded.bodies.values
    body_json = pa.array([None if v is None else v[0] for v in values], pa.string())
    return decoded.record_batch(DECODED_SCHEMA, {"body_json": body_json}, [None if v is None else v[1] for v in values])


def _skip_body(cls: Any, data: bytes, pos: int, version: int, end: int) -> tuple[None, int]:
    return None, end  # headers only: the body is not looked at


def _nothing(body: Any, version: int, is_response: bool) -> None:
    return None


def _as_json(body: Any, version: int, is_response: bool) -> tuple[str, list[dict[str, Any]] | None]:
    """A body as its JSON text and, for a response, its non-zero error codes."""
    # Only the fields of the version read (as the typed struct's nulls say), written by the
    # generated renderer: the text of json.dumps(body.to_dict(version), separators=(",", ":")).
    text = json_renderer(type(body), version, compact=True)(body)
    return text, error_codes(body) if is_response else None


class DecodedRows:
    """Headers and bodies of one batch, before the body is rendered (as JSON, or typed)."""

    def __init__(self, headers: Headers, bodies: Bodies, lookup: Lookup) -> None:
        self.headers = headers
        self.bodies = bodies
        self.lookup = lookup

    @classmethod
    def of(
        cls,
        frames: pa.Array | pa.ChunkedArray,
        direction: pa.Array | None,
        request_api_key: pa.Array | None,
        request_api_version: pa.Array | None,
        protocol: ProtocolLike,
        render: Render,
        sasl_mechanism: pa.Array | None = None,
        read_body: ReadBody | None = None,
        only: Callable[[Headers], Mask] | None = None,
    ) -> DecodedRows:
        """Read the headers, then the bodies: every row's, or, with ``only``, the rows it marks
        given the headers (the others' bodies are :data:`~kafka_epochs.spark.bodies.SKIPPED`)."""
        frames = _one_chunk(frames)
        pairing = [_maybe_chunk(c) for c in (direction, request_api_key, request_api_version, sasl_mechanism)]
        for name, column in zip(
            ("direction", "request_api_key", "request_api_version", "sasl_mechanism"), pairing, strict=True
        ):
            if column is not None and len(column) != len(frames):
                raise ValueError(f"{name} has {len(column)} rows but frames has {len(frames)}")
        resolved = resolve(protocol)
        lookup = Lookup(resolved)
        headers = read_headers(frames, pairing[0], pairing[1], pairing[2], lookup, pairing[3])
        wanted = None if only is None else only(headers)
        bodies = (
            decode_bodies(headers, resolved, render, read_body, wanted)
            if read_body
            else decode_bodies(headers, resolved, render, only=wanted)
        )
        return cls(headers, bodies, lookup)

    def record_batch(
        self,
        schema: pa.Schema,
        bodies: dict[str, pa.Array],
        codes: list[list[dict[str, Any]] | None],
    ) -> pa.RecordBatch:
        """The header and status columns around ``bodies``, in ``schema``'s order.

        ``codes``: each row's non-zero response error codes (None for requests and bad rows).
        """
        h, b = self.headers, self.bodies
        columns: dict[str, pa.Array] = {
            "direction": h.direction,
            "api_key": _int_column(h.api_key, h.api_key_ok, pa.int16()),
            "api_name": self._api_names(),
            "api_version": _int_column(h.api_version, h.api_version_ok, pa.int16()),
            "correlation_id": _int_column(h.correlation_id, h.correlation_id_ok, pa.int32()),
            "client_id": h.client_id,
            "header_version": _int_column(h.header_version, h.header_version >= 0, pa.int8()),
            "error_codes": pa.array(codes, pa.list_(ERROR_CODE)),
            "error": pa.array(b.errors, pa.string()),
            "warnings": pa.array(b.warnings, pa.list_(pa.string())),
            "profile": pa.array(b.profiles, pa.string()),
            **bodies,
        }
        return pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)

    def _api_names(self) -> pa.Array:
        h = self.headers
        names: list[str | None] = []
        for entry, key, ok, response, mechanism in zip(
            h.entries, h.api_key.tolist(), h.api_key_ok.tolist(), h.is_response.tolist(), h.sasl_mechanism, strict=True
        ):
            if mechanism is not None:
                names.append(SASL_TOKENS)
            elif entry is not None:
                names.append(entry.api_name)
            else:  # the version may be unknown while the api is not: say which api the bad row is
                names.append(self.lookup.api_name(key, "response" if response else "request") if ok else None)
        return pa.array(names, pa.string())


def _int_column(values: np.ndarray, ok: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    # values outside ``ok`` were never read (0 placeholders): they become nulls
    return pa.array(values.astype(arrow_type.to_pandas_dtype()), arrow_type, mask=~ok)


def _one_chunk(frames: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(frames, pa.ChunkedArray):
        return frames.combine_chunks()
    return frames


def _maybe_chunk(column: pa.Array | pa.ChunkedArray | None) -> pa.Array | None:
    return None if column is None else _one_chunk(column)

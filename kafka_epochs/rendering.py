"""Exchanges as JSON-ready dicts: what ``kafka-epochs decode`` prints, one line per exchange.

Bodies show the fields of the version they were read at (``to_dict(version)``); ``records``
fields become decoded batches on request; SASL credentials are hidden unless asked for.
"""

from __future__ import annotations

import enum
import functools
import json
import math
from binascii import a2b_base64, b2a_base64  # (base64's primitives: base64 itself costs every start a millisecond)
from collections.abc import Callable
from time import gmtime, strftime
from types import ModuleType
from typing import Any

from kafka_epochs.capture import Flow
from kafka_epochs.exchanges import SASL_TOKENS, Exchange, Kind, api_name
from kafka_epochs.projection.bodies import ProjectedBody
from kafka_epochs.wire.code_cache import compile_cached
from kafka_epochs.wire.json_text import json_renderer

#: How a time's whole seconds are written (``time.strftime``): ISO 8601, as datetime writes them.
SECOND_FORMAT = "%Y-%m-%dT%H:%M:%S"


def split_time(seconds: float) -> tuple[float, int]:
    """``seconds`` as whole seconds and microseconds rounded half to even, as
    ``datetime.fromtimestamp`` splits a float."""
    fraction, whole = math.modf(seconds)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        return whole + 1.0, micro - 1_000_000
    if micro < 0:
        return whole - 1.0, micro + 1_000_000
    return whole, micro


def _time(ns: int | None) -> str | None:
    """``ns`` as ISO 8601 text in UTC to the microsecond, as ``datetime.fromtimestamp(ns / 1e9,
    UTC)`` writes it. (``time.gmtime`` writes the seconds: datetime costs every start a
    millisecond; the readers keep times within the years 1677-2262, four digits of year either way.)"""
    if ns is None:
        return None
    second, micro = split_time(ns / 1e9)
    return f"{strftime(SECOND_FORMAT, gmtime(second))}.{micro:06d}Z"


@functools.cache
def _error_name(code: int) -> str:
    """Kafka's name for a non-zero error code, as ``Errors.for_code(code).name`` gives it, from
    the table of names alone (:mod:`kafka_epochs.epochs.error_names`: the enum costs ten times as
    much to build), imported on the first error a run meets: a clean capture never needs it."""
    from kafka_epochs.epochs.error_names import FIRST_CODE, NAMES

    index = code - FIRST_CODE
    return NAMES[index] if 0 <= index < len(NAMES) else f"UNKNOWN_CODE_{code}"


def _endpoint(flow: Flow | None, side: str) -> str | None:
    if flow is None:
        return None
    end = flow.client if side == "client" else flow.broker
    return f"[{end.address}]:{end.port}" if ":" in end.address else f"{end.address}:{end.port}"


def exchange_json(
    exchange: Exchange,
    *,
    records: bool = False,
    secrets: bool = False,
    bodies_as_text: bool = False,
    max_records: int | None = None,
    record_budget: Any = None,
) -> dict[str, Any]:
    """One exchange as a JSON-ready dict (bodies via ``to_dict``; ``records`` fields decoded on request).

    With ``records``, every records field of the exchange draws on one budget (see
    :mod:`kafka_epochs.records.budget`): ``max_records`` records (default the records package's
    ``DEFAULT_MAX_RECORDS``), and, given a ``record_budget`` (a capture's ``RecordBudget``), that
    one too; a batch that would overdraw either is shown as a batch that did not decode.

    SASL credentials (raw tokens, ``SaslAuthenticate`` auth bytes) are replaced by their length
    unless ``secrets``: a PLAIN token carries the password in clear. With ``bodies_as_text``
    (and no ``records``), bodies come already rendered as :class:`JsonText`, by the generated
    renderers, for :func:`json_line` to splice in: the same line, without a dict per struct.
    """
    if exchange.kind is Kind.SASL_TOKEN:
        return _sasl_json(exchange, secrets)
    req, resp = exchange.request, exchange.response
    out: dict[str, Any] = {
        "kind": exchange.kind.value,
        "time": _time(exchange.request_time_ns if exchange.request_time_ns is not None else exchange.timestamp_ns),
        "client": _endpoint(exchange.flow, "client"),
        "broker": _endpoint(exchange.flow, "broker"),
        "correlation_id": (req or resp).correlation_id if (req or resp) is not None else None,  # type: ignore[union-attr]
        "api": api_name(exchange),
        "api_key": req.api_key if req is not None else None,
        "api_version": req.api_version if req is not None else None,
    }
    if resp is not None and exchange.request_time_ns is not None and resp.timestamp_ns is not None:
        out["response_time"] = _time(resp.timestamp_ns)
        out["latency_ms"] = round((resp.timestamp_ns - exchange.request_time_ns) / 1e6, 3)
    bad_batches = 0
    budget = _exchange_budget(max_records, record_budget) if records else None
    as_text = bodies_as_text and not records and (secrets or req is None or req.api_key != SASL_AUTHENTICATE)
    for label, event in (("request", req), ("response", resp)):
        if event is None:
            continue
        if event.decoded is not None:
            out[f"{label}_header"] = event.decoded.header.to_dict(event.decoded.header_version)
            body, version = event.decoded.body, event.decoded.api_version
            if body is None:
                pass  # read headers only: the body was not looked at
            elif type(body) is ProjectedBody:
                if body.columns:  # else only what pairing needed was read: nothing asked for
                    out[label] = body.to_dict()
                if body.note:
                    out[f"{label}_fields_note"] = body.note
            elif as_text:
                out[label] = JsonText(json_renderer(type(body), version, ascii=False)(body))
            else:
                out[label], bad = _body_json(event.decoded.body, event.decoded.api_version, budget)
                bad_batches += bad
            out[f"{label}_profile"] = event.decoded.profile
        if event.error is not None:
            out[f"{label}_error"] = str(event.error)
        if event.warnings:
            out[f"{label}_warnings"] = list(event.warnings)
    if not secrets and (req is not None and req.api_key == SASL_AUTHENTICATE):
        for label in ("request", "response"):
            body = out.get(label)
            hidden = body.get("auth_bytes") if isinstance(body, dict) else None
            if isinstance(hidden, list):  # a projection's column (--fields auth_bytes)
                body["auth_bytes"] = [None if v is None else _redacted(len(a2b_base64(v))) for v in hidden]  # type: ignore[index]
            elif hidden is not None:
                body["auth_bytes"] = _redacted(len(a2b_base64(hidden)))  # type: ignore[index]
    body = resp.decoded.body if resp is not None and resp.decoded is not None else None
    # A projected body's errors are those among the fields asked for: none asked, none said.
    if body is not None and (type(body) is not ProjectedBody or any(p.endswith("error_code") for p in body.columns)):
        out["errors"] = error_codes(body)
    if bad_batches:
        out["record_errors"] = bad_batches  # record batches that did not decode (each marked in place)
    if exchange.problem:
        out["problem"] = exchange.problem
    return out


SASL_AUTHENTICATE = 36


class JsonText(str):
    """A value already rendered as JSON text: :func:`json_line` writes it as it is."""

    __slots__ = ()


_LINE = json.JSONEncoder(ensure_ascii=False)
_ESCAPE = json.encoder.encode_basestring  # json's own (C) string escaper, ensure_ascii=False


def json_line(row: dict[str, Any]) -> str:
    """``json.dumps(row, ensure_ascii=False)``, with :class:`JsonText` values written as they are."""
    return "{" + ", ".join(f"{_ESCAPE(key)}: {_json_value(value)}" for key, value in row.items()) + "}"


def _json_value(value: Any) -> str:
    """One value as ``json.dumps`` writes it; the scalars of a row without the encoder's set-up."""
    kind = type(value)
    if kind is JsonText:
        return value
    if kind is str:
        return _ESCAPE(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    return _LINE.encode(value)  # dicts, lists, floats, bools: the encoder's own rules


def _redacted(length: int) -> str:
    return f"<{length} bytes, hidden: pass --sasl-secrets to show>"


def _sasl_json(exchange: Exchange, secrets: bool) -> dict[str, Any]:
    first = exchange.tokens[0]
    out: dict[str, Any] = {
        "kind": exchange.kind.value,
        "time": _time(exchange.request_time_ns if exchange.request_time_ns is not None else exchange.timestamp_ns),
        "client": _endpoint(exchange.flow, "client"),
        "broker": _endpoint(exchange.flow, "broker"),
        "correlation_id": None,
        "api": SASL_TOKENS,
        "api_key": None,
        "api_version": None,
        "mechanism": first.mechanism,
    }
    for token in exchange.tokens:
        label = "client_token" if token.from_client else "broker_token"
        out[label] = _b64(token.frame[4:]) if secrets else _redacted(token.length)
    if exchange.problem:
        out["problem"] = exchange.problem
    return out


def _exchange_budget(max_records: int | None, parent: Any) -> Any:
    """What decoding one exchange's records fields may build (one budget for all its fields)."""
    records = _records()
    limit = records.DEFAULT_MAX_RECORDS if max_records is None else max_records
    return records.DecompressionBudget(
        records.DEFAULT_MAX_DECOMPRESSED, records=records.RecordBudget(limit, "exchange", parent)
    )


def _body_json(body: Any, version: int, budget: Any) -> tuple[Any, int]:
    """A body's JSON view, and how many of its record batches did not decode (with a records
    ``budget``: the records fields decoded; without, they stay base64)."""
    plain = body.to_dict(version)
    bad = _decode_records_in(body, plain, budget) if budget is not None else 0
    return plain, bad


def _paths_to(cls: Any, kind: str, name: str | None = None) -> tuple[Any, ...]:
    """The fields of ``cls`` that are, or contain, a field of ``kind`` (named ``name``), cached.

    Walking only those keeps ``decode --records`` and error collection from visiting every
    partition of every message.
    """
    key = (cls, kind, name)
    found = _PATHS.get(key)
    if found is None:
        _PATHS[key] = ()  # guards against recursive struct definitions
        found = tuple(
            f
            for f in cls._FIELDS
            if (f.kind == kind and (name is None or f.attr == name))
            or (f.struct is not None and _paths_to(f.struct, kind, name))
        )
        _PATHS[key] = found
    return found


_PATHS: dict[tuple[Any, str, str | None], tuple[Any, ...]] = {}


def _decode_records_in(obj: Any, plain: dict[str, Any], budget: Any) -> int:
    """Replace each ``records`` field's base64 by its decoded batches; returns the bad ones' count.

    A batch that does not decode stays in its place as ``{"error", "offset", "length", "base64"}``
    and the batches around it are kept.
    """
    decode_records = _records().decode_records
    bad = 0
    for f in _paths_to(type(obj), "records"):
        value = getattr(obj, f.attr)
        if value is None or f.attr not in plain:
            continue
        if f.kind == "records":
            decoded = decode_records(value, keep_going=True, budget=budget)
            batches: list[dict[str, Any]] = [_entry_json(e) for e in decoded.entries]
            for earlier_bad, entry in enumerate(decoded.bad):  # in order: the earlier bad ones are in place
                batches.insert(
                    entry.index + earlier_bad,
                    {
                        "error": str(entry.error),
                        "offset": entry.offset,
                        "length": entry.length,
                        "base64": _b64(value[entry.offset : entry.offset + entry.length]),
                    },
                )
            plain[f.attr] = {"batches": batches, "truncated_tail": decoded.truncated_tail}
            if decoded.warnings:
                plain[f.attr]["warnings"] = decoded.warnings
            bad += len(decoded.bad)
        elif f.kind == "struct":
            bad += _decode_records_in(value, plain[f.attr], budget)
        elif f.kind == "array" and f.element == "struct":
            for item, item_plain in zip(value, plain[f.attr], strict=True):
                bad += _decode_records_in(item, item_plain, budget)
    return bad


@functools.cache
def _records() -> ModuleType:
    """The records package, loaded the first time batches are decoded (``--records``), not with
    every rendering: it brings its codecs' modules along."""
    from kafka_epochs import records

    return records


def _b64(value: bytes | None) -> str | None:
    return None if value is None else b2a_base64(value, newline=False).decode()


def _entry_json(entry: Any) -> dict[str, Any]:
    """A record batch or legacy message as JSON-ready values (bytes as base64, enums by name).

    Written out field by field: with millions of records, a generic dataclass walk is most of
    the cost of ``decode --records``.
    """
    if isinstance(entry, _records().RecordBatch):
        return {
            "base_offset": entry.base_offset,
            "batch_length": entry.batch_length,
            "partition_leader_epoch": entry.partition_leader_epoch,
            "magic": entry.magic,
            "crc": entry.crc,
            "attributes": entry.attributes,
            "compression": entry.compression.name,
            "timestamp_type": entry.timestamp_type.name,
            "is_transactional": entry.is_transactional,
            "is_control": entry.is_control,
            "last_offset_delta": entry.last_offset_delta,
            "base_timestamp": entry.base_timestamp,
            "max_timestamp": entry.max_timestamp,
            "producer_id": entry.producer_id,
            "producer_epoch": entry.producer_epoch,
            "base_sequence": entry.base_sequence,
            "records": [
                {
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": _b64(r.key),
                    "value": _b64(r.value),
                    "headers": [[k, _b64(v)] for k, v in r.headers],
                    "attributes": r.attributes,
                    "offset_delta": r.offset_delta,
                    "timestamp_delta": r.timestamp_delta,
                }
                for r in entry.records
            ],
            "control_records": [
                {
                    "offset": c.offset,
                    "version": c.version,
                    "type": _name(c.type),
                    "coordinator_epoch": c.coordinator_epoch,
                }
                for c in entry.control_records
            ],
        }
    return {  # a legacy (magic 0/1) message, possibly a wrapper of inner messages
        "offset": entry.offset,
        "magic": entry.magic,
        "crc": entry.crc,
        "attributes": entry.attributes,
        "compression": entry.compression.name,
        "timestamp": entry.timestamp,
        "key": _b64(entry.key),
        "value": _b64(entry.value),
        "inner": None if entry.inner is None else [_entry_json(m) for m in entry.inner],
    }


def _name(value: Any) -> Any:
    return value.name if isinstance(value, enum.Enum) else value


def has_error_codes(cls: type) -> bool:
    """Whether objects of the generated class ``cls`` can hold an ``error_code`` anywhere."""
    return bool(_paths_to(cls, "int16", "error_code"))


def any_error_code(cls: type) -> Callable[[Any], bool]:
    """A function telling whether a ``cls`` object holds a non-zero ``error_code`` anywhere.

    Generated once per class: straight loops down the fields that can hold one, so that the
    answer for the usual response, with no error at all, costs no walk of its own. Where one is
    found, :func:`error_codes` says which.
    """
    found = _ANY_ERROR.get(cls)
    if found is None:
        lines = ["def any_error(o):"]
        _any_error_lines(cls, "o", 1, lines)
        lines.append("    return False")
        namespace: dict[str, Any] = {"_walk": lambda value: bool(error_codes(value))}
        exec(compile_cached("\n".join(lines) + "\n", f"<error codes of {cls.__name__}>"), namespace)
        found = _ANY_ERROR[cls] = namespace["any_error"]
    return found


def _any_error_lines(cls: Any, var: str, depth: int, lines: list[str]) -> None:
    pad = "    " * depth
    if depth > _MAX_STRUCT_DEPTH:  # deeper than any Kafka message nests: ask the generic walk
        lines.append(f"{pad}if _walk({var}): return True")
        return
    for f in _paths_to(cls, "int16", "error_code"):
        if f.kind == "int16":
            lines.append(f"{pad}if {var}.{f.attr}: return True")
            continue
        item = f"v{depth}"
        if f.kind == "struct":
            lines.append(f"{pad}{item} = {var}.{f.slot}")  # a lazy struct not read is its default: no error
            lines.append(f"{pad}if {item} is not None:")
        else:
            lines.append(f"{pad}for {item} in {var}.{f.attr} or ():")
        _any_error_lines(f.struct, item, depth + 1, lines)


_ANY_ERROR: dict[type, Callable[[Any], bool]] = {}
_MAX_STRUCT_DEPTH = 12


def error_codes(body: Any, path: str = "") -> list[dict[str, Any]]:
    """Every non-zero ``error_code`` in a decoded message, with its path and Kafka's name for it.

    ``body`` is a generated message object (walked along the fields that can hold an error
    code) or its ``to_dict()`` form (walked whole).
    """
    if isinstance(body, (dict, list)):
        return _error_codes_in_plain(body, path)
    if type(body) is ProjectedBody:  # the error codes among the fields asked for, by row
        return [
            {"path": where, "row": row, "code": code, "name": _error_name(code)}
            for where, values in body.columns.items()
            if where.endswith("error_code")
            for row, code in enumerate(values)
            if code
        ]
    found: list[dict[str, Any]] = []
    for f in _paths_to(type(body), "int16", "error_code"):
        value = getattr(body, f.attr)
        where = f"{path}.{f.attr}" if path else f.attr
        if f.kind == "int16":
            if value:
                found.append({"path": where, "code": value, "name": _error_name(value)})
        elif f.kind == "struct" and value is not None:
            found.extend(error_codes(value, where))
        elif f.kind == "array" and value:
            for i, item in enumerate(value):
                found.extend(error_codes(item, f"{where}[{i}]"))
    return found


def _error_codes_in_plain(plain: Any, path: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(plain, dict):
        for key, value in plain.items():
            where = f"{path}.{key}" if path else key
            if key == "error_code" and isinstance(value, int) and value != 0:
                found.append({"path": where, "code": value, "name": _error_name(value)})
            elif isinstance(value, (dict, list)):
                found.extend(_error_codes_in_plain(value, where))
    elif isinstance(plain, list):
        for i, item in enumerate(plain):
            found.extend(_error_codes_in_plain(item, f"{path}[{i}]"))
    return found

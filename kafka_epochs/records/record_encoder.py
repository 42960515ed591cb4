"""One v2 record's bytes: the inverse of ``fast_reader``/``record_decoder``.

The common case (ints in range, keys and values of type bytes) is checked inline; anything else
goes through ``wire_values``' checks, which either accept it (a bytearray, an IntEnum) or raise
an EncodeError naming the field.
"""

from __future__ import annotations

from kafka_epochs.errors import EncodeError
from kafka_epochs.records.model import Record
from kafka_epochs.records.wire_values import check_bytes, check_int
from kafka_epochs.wire.primitives import uvarint

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
#: The zig-zag varint of -1: a null key, value or header value.
_NULL = b"\x01"
_INT8 = tuple(bytes((b,)) for b in range(256))


def record_bytes(record: Record, path: str) -> bytes:
    """One record, length prefix included; ``path`` names it in an EncodeError."""
    attributes = record.attributes
    if not (type(attributes) is int and -0x80 <= attributes < 0x80):
        attributes = check_int(attributes, 8, f"{path}.attributes")
    timestamp_delta = record.timestamp_delta
    if not (type(timestamp_delta) is int and _INT64_MIN <= timestamp_delta <= _INT64_MAX):
        timestamp_delta = check_int(timestamp_delta, 64, f"{path}.timestamp_delta")
    offset_delta = record.offset_delta
    if not (type(offset_delta) is int and _INT32_MIN <= offset_delta <= _INT32_MAX):
        offset_delta = check_int(offset_delta, 32, f"{path}.offset_delta")
    parts = [
        _INT8[attributes & 0xFF],
        uvarint((timestamp_delta << 1) ^ (timestamp_delta >> 63)),
        uvarint((offset_delta << 1) ^ (offset_delta >> 63)),
    ]
    key = record.key
    _append_nullable(parts, key if type(key) is bytes else check_bytes(key, f"{path}.key"), path, "key")
    value = record.value
    _append_nullable(parts, value if type(value) is bytes else check_bytes(value, f"{path}.value"), path, "value")
    headers = record.headers
    parts.append(uvarint(len(headers) << 1))
    for j, header in enumerate(headers):
        try:
            header_key, header_value = header
            raw_key = header_key.encode("utf-8") if isinstance(header_key, str) else None
        except (TypeError, ValueError):  # not a pair, or (UnicodeEncodeError) not UTF-8
            raise _header_problem(header, f"{path}.headers[{j}]") from None
        if raw_key is None:
            raise EncodeError(f"{path}.headers[{j}].key: expected str, got {type(header_key).__name__}")
        _append_nullable(parts, raw_key, path, f"headers[{j}].key")
        if type(header_value) is not bytes:
            header_value = check_bytes(header_value, f"{path}.headers[{j}].value")
        _append_nullable(parts, header_value, path, f"headers[{j}].value")
    body = b"".join(parts)
    return uvarint(len(body) << 1) + body


def _append_nullable(parts: list[bytes], raw: bytes | None, path: str, name: str) -> None:
    if raw is None:
        parts.append(_NULL)
        return
    size = len(raw)
    if size > _INT32_MAX:
        raise EncodeError(f"{path}.{name}: {size} bytes is longer than a varint length can say")
    parts.append(uvarint(size << 1))
    parts.append(raw)


def _header_problem(header: object, path: str) -> EncodeError:
    """What is wrong with a header that failed the fast path."""
    key: object
    try:
        key, _ = header  # type: ignore[misc]
    except (TypeError, ValueError):
        return EncodeError(f"{path}: expected a (str, bytes | None) pair")
    if not isinstance(key, str):
        return EncodeError(f"{path}.key: expected str, got {type(key).__name__}")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        return EncodeError(f"{path}.key: not encodable as UTF-8 ({exc.reason})")
    return EncodeError(f"{path}: not a valid header")

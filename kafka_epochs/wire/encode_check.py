"""Find which value made an encode fail, and where: used only after the fast encoder raised.

The generated encoders trust their input; when one fails (a struct range error, a ``None``
where a string belongs...), :func:`find_bad_value` walks the object against its field
descriptors and names the first value the version cannot hold, with its path.
"""

from __future__ import annotations

import uuid
from typing import Any

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


def find_bad_value(obj: Any, version: int, path: str = "") -> str | None:
    """``"path: reason"`` for the first value of ``obj`` that ``version`` cannot encode, else None."""
    for f in type(obj)._FIELDS:
        if not f.present(version):
            continue
        where = f"{path}.{f.attr}" if path else f.attr
        problem = _check(f, f.kind, getattr(obj, f.attr, None), version, where, element=False)
        if problem:
            return problem
    return None


def _check(f: Any, kind: str, value: Any, version: int, where: str, element: bool) -> str | None:
    if value is None:
        if not element and kind in ("string", "bytes", "records", "array", "struct") and f.is_nullable(version):
            return None
        return f"{where}: None is not allowed (the field is not nullable in version {version})"
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        if not isinstance(value, int):
            return f"{where}: expected an int for {kind}, got {type(value).__name__}"
        if not low <= value <= high:
            return f"{where}: {value} is out of range for {kind} ({low}..{high})"
    elif kind == "bool" and not isinstance(value, (bool, int)):
        return f"{where}: expected a bool, got {type(value).__name__}"
    elif kind == "float64" and not isinstance(value, (int, float)):
        return f"{where}: expected a float, got {type(value).__name__}"
    elif kind == "string":
        if not isinstance(value, str):
            return f"{where}: expected a str, got {type(value).__name__}"
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > 0x7FFF:
            return f"{where}: string of {size} bytes is over Kafka's limit of 32767"
        try:
            value.encode()
        except UnicodeEncodeError as e:
            return f"{where}: string cannot be encoded as UTF-8 ({e.reason})"
    elif kind in ("bytes", "records") and not isinstance(value, (bytes, bytearray, memoryview)):
        return f"{where}: expected bytes, got {type(value).__name__}"
    elif kind == "uuid" and not isinstance(value, uuid.UUID):
        return f"{where}: expected a uuid.UUID, got {type(value).__name__}"
    elif kind == "array":
        if not isinstance(value, (list, tuple)):
            return f"{where}: expected a list, got {type(value).__name__}"
        for i, item in enumerate(value):
            problem = _check(f, f.element or "", item, version, f"{where}[{i}]", element=True)
            if problem:
                return problem
    elif kind == "struct":
        if not isinstance(value, f.struct):
            return f"{where}: expected a {f.struct.__name__}, got {type(value).__name__}"
        return find_bad_value(value, version, where)
    return None

"""Hypothesis strategies that build random, valid generated messages for one version.

They walk the generated classes' field descriptors, so they cover any spec directory: every
field the version has gets a random value of its type (null where the version allows it),
tagged fields are sometimes left at their default, and flexible structs sometimes carry
unknown tagged fields.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kafka_epochs.wire.schema import FieldInfo

_INT_BOUNDS = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
MAX_ITEMS = 3


def _ints(kind: str) -> st.SearchStrategy[int]:
    low, high = _INT_BOUNDS[kind]
    # Bias towards the edges, where encodings break.
    return st.one_of(st.integers(low, high), st.sampled_from([low, high, -1 if low < 0 else 0, 0]))


def primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INT_BOUNDS:
        return _ints(kind)
    if kind == "bool":
        return st.booleans()
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=24)
    if kind == "uuid":
        return st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1))
    raise AssertionError(kind)


def value(
    f: FieldInfo,
    kind: str,
    version: int,
    flexible: bool,
    depth: int,
    element: bool = False,
) -> st.SearchStrategy[Any]:
    if kind == "array":
        items = st.lists(value(f, f.element or "", version, flexible, depth + 1, element=True), max_size=MAX_ITEMS)
        base: st.SearchStrategy[Any] = items
    elif kind == "struct":
        base = struct(f.struct, version, flexible, depth + 1)
    else:
        base = primitive(kind)
    if not element and f.is_nullable(version):
        return st.one_of(st.none(), base)
    return base


@st.composite
def _unknown_tags(draw: st.DrawFn, cls: type) -> dict[int, bytes] | None:
    known = {f.tag for f in cls._FIELDS if f.tag >= 0}  # type: ignore[attr-defined]
    tags = draw(st.lists(st.integers(0, 300).filter(lambda t: t not in known), max_size=2, unique=True))
    if not tags:
        return None
    return {t: draw(st.binary(max_size=6)) for t in tags}


def struct(cls: Any, version: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for f in cls._FIELDS:
        if not f.present(version):
            continue
        strategy = value(f, f.kind, version, flexible, depth)
        if f.is_tagged(version):
            strategy = st.one_of(st.builds(f.fresh_default), strategy)
        fields[f.attr] = strategy

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        obj = cls(**{name: draw(s) for name, s in fields.items()})
        if flexible and draw(st.integers(0, 4)) == 0:
            obj._unknown_tags = draw(_unknown_tags(cls))
        return obj

    return build()


def message(cls: Any, version: int) -> st.SearchStrategy[Any]:
    """Random valid instances of a generated message class for ``version``."""
    return struct(cls, version, version in cls.FLEXIBLE_VERSIONS)


def damage(data: st.DataObject, raw: bytes) -> bytes:
    """``raw`` truncated, with a few bytes overwritten, or both (drawn from ``data``)."""
    out = bytearray(raw)
    how = data.draw(st.sampled_from(["truncate", "flip", "both"]), label="damage")
    if how in ("truncate", "both") and out:
        del out[data.draw(st.integers(0, len(out) - 1)) :]
    if how in ("flip", "both") and out:
        for _ in range(data.draw(st.integers(1, 4))):
            out[data.draw(st.integers(0, len(out) - 1))] = data.draw(st.integers(0, 255))
    return bytes(out)

"""Projected decoders give what the full decoder gives, for every message x version.

The oracle here is independent of the projection's generator: it decodes the whole message,
then walks the object along the paths (rows = elements of the innermost array walked,
enclosing values repeated; a field the version does not carry is None, and so is everything
below a null struct). Each (message, version) gets a random projection: a random chain of
nested arrays of structs and random values along it, on random valid messages.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.projection import Projection
from kafka_epochs.wire.errors import DecodeError

import strategies

EXAMPLES = 4


def random_paths(cls: Any, version: int, rng: random.Random) -> list[str]:
    """Up to four values from each level of a random chain of nested arrays of structs."""
    paths: list[str] = []
    prefix = ""
    struct = cls
    while True:
        values, arrays = _reachable(struct, version, prefix)
        paths += rng.sample(values, min(len(values), rng.randint(1, 4)))
        if not arrays or rng.random() < 0.25:
            break
        prefix, struct = rng.choice(arrays)
    return paths or _any_value(cls)


def _reachable(struct: Any, version: int, prefix: str) -> tuple[list[str], list[tuple[str, Any]]]:
    """Value paths and arrays of structs reachable from ``struct`` through plain struct fields.

    Fields the version does not carry are included: the projection must give None for them.
    """
    values: list[str] = []
    arrays: list[tuple[str, Any]] = []
    for f in struct._FIELDS:
        if f.kind == "struct":
            inner_values, inner_arrays = _reachable(f.struct, version, f"{prefix}{f.attr}.")
            values += inner_values
            arrays += inner_arrays
        elif f.kind == "array" and f.element == "struct":
            arrays.append((f"{prefix}{f.attr}[].", f.struct))
        else:
            values.append(prefix + f.attr)
    return values, arrays


def _any_value(cls: Any) -> list[str]:
    """A value path, for a message whose random chain found none (empty when it has no values)."""
    values, arrays = _reachable(cls, 0, "")
    while not values and arrays:
        prefix, struct = arrays[0]
        values, arrays = _reachable(struct, 0, prefix)
    return values[:1]


def expected(obj: Any, version: int, paths: list[str]) -> list[list[Any]]:
    """The columns, computed from a fully decoded object."""
    chain = max((p[: p.rindex("[]") + 2] for p in paths if "[]" in p), key=len, default="")
    rows: list[dict[str, Any]] = []
    _rows(obj, version, chain.split("[]")[:-1] if chain else [], "", {"": obj}, rows)
    return [[row_value(row, version, path) for row in rows] for path in paths]


def _rows(obj: Any, version: int, arrays: list[str], prefix: str, context: dict[str, Any], out: list) -> None:
    """Enumerate rows: ``context`` maps each chain prefix ('' for the message) to its element."""
    if not arrays:
        out.append(dict(context))
        return
    step = arrays[0]  # e.g. "topics" or ".partitions" or "struct.items"
    items = _walk(context[prefix], version, step.lstrip("."))
    if not items:
        return
    for item in items:
        _rows(obj, version, arrays[1:], prefix + step + "[]", {**context, prefix + step + "[]": item}, out)


def _walk(obj: Any, version: int, dotted: str) -> Any:
    for attr in dotted.split("."):
        if obj is None:
            return None
        f = next(f for f in type(obj)._FIELDS if f.attr == attr)
        if not f.present(version):
            return None
        obj = getattr(obj, attr)
    return obj


def row_value(row: dict[str, Any], version: int, path: str) -> Any:
    cut = path.rindex("[]") + 2 if "[]" in path else 0
    return _walk(row[path[:cut]], version, path[cut:].lstrip("."))


def same(a: list[list[Any]], b: list[list[Any]]) -> bool:
    def norm(v: Any) -> Any:
        return "NaN" if isinstance(v, float) and math.isnan(v) else v

    return [[norm(v) for v in column] for column in a] == [[norm(v) for v in column] for column in b]


def check(cls: Any, version: int, obj: Any, rng: random.Random) -> None:
    paths = random_paths(cls, version, rng)
    if not paths:  # a message with no fields (ListClientMetricsResourcesRequest): nothing to ask for
        with pytest.raises(ValueError, match="at least one field path"):
            Projection(cls, paths)
        return
    projection = Projection(cls, paths)
    data = obj.encode(version)
    decoded = cls.decode(data, version)
    columns = projection.empty()
    projection.read_into(columns, data, version)
    want = expected(decoded, version, list(projection.paths))
    assert same(columns, want), (paths, projection.source(version)[0])
    # A cut body fails as the full decoder fails, and leaves the columns as they were.
    if len(data) > 1:
        cut = rng.randrange(1, len(data))
        with pytest.raises(DecodeError) as full:
            cls.decode(data[:cut], version)
        with pytest.raises(DecodeError) as projected:
            projection.read_into(columns, data[:cut], version)
        assert (projected.value.offset, projected.value.path) == (full.value.offset, full.value.path)
        assert same(columns, want)


def versions_property(cls: Any):  # type: ignore[no-untyped-def]
    @settings(max_examples=EXAMPLES * len(cls.VALID_VERSIONS), suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)), label="version")
        obj = data.draw(strategies.message(cls, version), label="message")
        seed = data.draw(st.integers(0, 2**32 - 1), label="projection seed")
        check(cls, version, obj, random.Random(seed))

    return run


APACHE = Protocol.apache()


@pytest.mark.parametrize("name", APACHE.names())
def test_apache_projections_match_full_decode(name: str) -> None:
    cls = APACHE.message(name)
    for version in cls.VALID_VERSIONS:  # defaults, in every version
        check(cls, version, cls(), random.Random(version))
    versions_property(cls)()


@pytest.mark.parametrize("name", Protocol.bundled().names())
def test_bundled_projections_match_full_decode(name: str) -> None:
    versions_property(Protocol.bundled().message(name))()


def test_feature_tour_projections_match_full_decode(features_protocol) -> None:  # type: ignore[no-untyped-def]
    cls = features_protocol.message("FeatureTourRequest")
    EXAMPLES_HERE = 40
    for seed in range(EXAMPLES_HERE):
        version = random.Random(seed).choice(list(cls.VALID_VERSIONS))
        check(cls, version, cls(), random.Random(seed))
    versions_property(cls)()

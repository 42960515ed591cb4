"""Generated JSON renderers write exactly what ``json.dumps(obj.to_dict(version))`` writes.

Over every message x version of the bundled protocols and the feature tour, on random decoded
messages (non-ASCII strings, nulls, NaN and infinite floats, unknown tags, uuids, bytes), in the
two styles the project prints: compact ASCII (Spark's ``body_json``) and the CLI's JSON lines.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.wire.json_text import json_renderer

import strategies

EXAMPLES = 4
STYLES = [
    ({"compact": True, "ascii": True}, {"separators": (",", ":"), "ensure_ascii": True}),
    ({"compact": False, "ascii": False}, {"ensure_ascii": False}),
    ({"compact": False, "ascii": True}, {}),
]


def check(cls: Any, version: int, obj: Any) -> None:
    decoded = cls.decode(obj.encode(version), version)
    for ours, theirs in STYLES:
        assert json_renderer(cls, version, **ours)(decoded) == json.dumps(decoded.to_dict(version), **theirs)


def versions_property(cls: Any):  # type: ignore[no-untyped-def]
    @settings(max_examples=EXAMPLES * len(cls.VALID_VERSIONS), suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)), label="version")
        check(cls, version, data.draw(strategies.message(cls, version), label="message"))

    return run


APACHE = Protocol.apache()


@pytest.mark.parametrize("name", APACHE.names())
def test_apache_bodies_render_as_json_dumps_does(name: str) -> None:
    cls = APACHE.message(name)
    for version in cls.VALID_VERSIONS:
        check(cls, version, cls())
    versions_property(cls)()


@pytest.mark.parametrize("name", Protocol.bundled().names())
def test_bundled_bodies_render_as_json_dumps_does(name: str) -> None:
    versions_property(Protocol.bundled().message(name))()


def test_feature_tour_renders_as_json_dumps_does(features_protocol) -> None:  # type: ignore[no-untyped-def]
    versions_property(features_protocol.message("FeatureTourRequest"))()


def test_special_floats_non_ascii_and_unknown_tags(features_protocol) -> None:  # type: ignore[no-untyped-def]
    cls = features_protocol.message("FeatureTourRequest")
    version = max(cls.VALID_VERSIONS)
    floats = [f for f in cls._FIELDS if f.kind == "float64" and f.present(version)]
    strings = [f for f in cls._FIELDS if f.kind == "string" and f.present(version) and not f.is_tagged(version)]
    assert floats and strings, "the feature tour should have a float64 and a string field"
    for value in (math.nan, math.inf, -math.inf, -0.0, 1e300):
        obj = cls()
        setattr(obj, floats[0].attr, value)
        setattr(obj, strings[0].attr, 'zürich \u2603 "quoted" \\ \x01')
        obj._unknown_tags = {90: b"\x00\xff", 7: b""}
        check(cls, version, obj)

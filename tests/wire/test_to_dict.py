"""``to_dict`` (a cached per-class plan) agrees with a plain recursive walk over the field table."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs.wire.message import uuid_text

import strategies
from conftest import reference_names


def reference_to_dict(obj: Any) -> dict[str, Any]:
    """The rendering spelled out field by field, independent of the plan machinery."""
    out = {f.attr: _plain(getattr(obj, f.attr), f.kind, f.element) for f in type(obj)._FIELDS}
    unknown = getattr(obj, "_unknown_tags", None)
    if unknown:
        out["_unknown_tags"] = {str(t): base64.b64encode(v).decode() for t, v in sorted(unknown.items())}
    return out


def _plain(value: Any, kind: str, element: str | None) -> Any:
    if value is None:
        return None
    if kind == "array":
        return [_plain(v, element or "", None) for v in value]
    if kind == "struct":
        return reference_to_dict(value)
    if kind in ("bytes", "records"):
        return base64.b64encode(value).decode()
    if kind == "uuid":
        return uuid_text(value)
    return value


@pytest.mark.parametrize("name", reference_names())
def test_to_dict_matches_the_reference_walk(reference_protocol: Any, name: str) -> None:
    cls = reference_protocol.message(name)

    @settings(max_examples=4 * len(cls.VALID_VERSIONS), suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)))
        obj = data.draw(strategies.message(cls, version))
        rendered = obj.to_dict()
        assert rendered == reference_to_dict(obj)
        json.dumps(rendered)  # JSON-ready
        assert cls.from_dict(json.loads(json.dumps(rendered))) == obj

    run()


def test_to_dict_does_not_alias_the_objects_lists(features_protocol: Any) -> None:
    tour = features_protocol.message("FeatureTourRequest")
    obj = tour(items=[tour.Item(key="k", flags=[1, 2])])
    rendered = obj.to_dict()
    rendered["items"][0]["flags"].append(3)
    assert obj.items[0].flags == [1, 2]

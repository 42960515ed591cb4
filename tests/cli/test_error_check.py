"""The generated "any error code?" check agrees with the walk that lists them, on every message.

For each Apache message that can hold an ``error_code``: random decoded bodies of each version,
then the same bodies with every error code zeroed, and with exactly one of them set again
(found by a walk of the field descriptors written here, not the renderer's).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.rendering import any_error_code, error_codes, has_error_codes

import strategies

APACHE = Protocol.apache()
WITH_ERRORS = [name for name in APACHE.names() if has_error_codes(APACHE.message(name))]


def error_places(obj: Any, version: int) -> list[tuple[Any, str]]:
    """(struct, attribute) of every error_code the object holds in ``version``'s fields."""
    places = []
    for f in type(obj)._FIELDS:
        if not f.present(version):
            continue
        value = getattr(obj, f.attr)
        if f.attr == "error_code" and f.kind == "int16":
            places.append((obj, f.attr))
        elif f.kind == "struct" and value is not None:
            places += error_places(value, version)
        elif f.kind == "array" and f.element == "struct" and value:
            for item in value:
                places += error_places(item, version)
    return places


def test_there_are_many_messages_to_check() -> None:
    assert len(WITH_ERRORS) > 80 and not has_error_codes(APACHE.message("ProduceRequest"))


@pytest.mark.parametrize("name", WITH_ERRORS)
def test_the_check_agrees_with_the_walk(name: str) -> None:
    cls = APACHE.message(name)
    check = any_error_code(cls)

    @settings(max_examples=len(cls.VALID_VERSIONS), suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)), label="version")
        body = cls.decode(data.draw(strategies.message(cls, version), label="message").encode(version), version)
        assert check(body) == bool(error_codes(body))
        places = error_places(body, version)
        for holder, attr in places:
            setattr(holder, attr, 0)
        assert not check(body) and error_codes(body) == []
        if places:
            holder, attr = random.Random(data.draw(st.integers(0, 1000))).choice(places)
            setattr(holder, attr, 3)
            assert check(body) and len(error_codes(body)) == 1

    run()

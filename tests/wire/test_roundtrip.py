"""Every message x every valid version round-trips, for Kafka 3.9's 186 specs and ours.

objects -> bytes -> equal objects, and bytes -> objects -> identical bytes, on random valid
messages (unknown tagged fields, nulls, uuids, records, every integer width included).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from conftest import FEATURES_DIR, reference_names

EXAMPLES = 12


def check_round_trip(cls, version: int, obj) -> None:  # type: ignore[no-untyped-def]
    data = obj.encode(version)
    back = cls.decode(data, version)
    assert back == obj
    assert back.encode(version) == data


def versions_property(cls):  # type: ignore[no-untyped-def]
    @settings(max_examples=EXAMPLES * len(cls.VALID_VERSIONS), suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)), label="version")
        check_round_trip(cls, version, data.draw(strategies.message(cls, version), label="message"))

    return run


@pytest.mark.parametrize("name", reference_names())
def test_reference_spec_round_trips(reference_protocol, name: str) -> None:  # type: ignore[no-untyped-def]
    cls = reference_protocol.message(name)
    for version in cls.VALID_VERSIONS:  # the defaults, in every version, deterministically
        check_round_trip(cls, version, cls())
    versions_property(cls)()


def test_feature_tour_round_trips(features_protocol) -> None:  # type: ignore[no-untyped-def]
    versions_property(features_protocol.message("FeatureTourRequest"))()
    assert FEATURES_DIR.is_dir()

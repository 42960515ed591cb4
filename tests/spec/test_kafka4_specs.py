"""A second conformance set that needs no ../shared: the Kafka 4.x specs inside kafka-python's wheel.

They carry newer versions than 3.9 (Produce, Fetch, Metadata, ListOffsets, ...), so the generator
is exercised beyond the reference set, on any fresh clone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.spec import load_specs

import strategies


def kafka4_dir() -> Path:
    kafka = pytest.importorskip("kafka", reason="kafka-python (a dev dependency) ships the Kafka 4.x specs")
    return Path(kafka.__file__).parent / "protocol" / "schemas" / "resources"


@pytest.fixture(scope="module")
def kafka4(cache_dir: Path) -> Protocol:
    return Protocol.from_specs(kafka4_dir(), cache_dir=cache_dir)


def test_all_kafka4_specs_load_and_generate(kafka4: Protocol) -> None:
    specs = load_specs(kafka4_dir())
    assert len(specs) >= 100
    for spec in specs:
        cls = kafka4.message(spec.name)
        assert range(spec.valid_versions.low, spec.valid_versions.high + 1) == cls.VALID_VERSIONS
    # Newer than Kafka 3.9: Produce and Fetch have versions 3.9 lacks.
    assert kafka4.message("ProduceRequest").VALID_VERSIONS.stop > 12
    assert kafka4.message("FetchRequest").VALID_VERSIONS.stop > 18


def test_all_kafka4_messages_round_trip(kafka4: Protocol) -> None:
    pairs = [(cls, v) for cls in kafka4 for v in cls.VALID_VERSIONS]

    @settings(max_examples=len(pairs) * 3, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        cls, version = data.draw(st.sampled_from(pairs), label="pair")
        obj = data.draw(strategies.message(cls, version), label="message")
        encoded = obj.encode(version)
        back = cls.decode(encoded, version)
        assert back == obj and back.encode(version) == encoded

    for cls, version in pairs:  # every pair at least once, deterministically
        assert cls.decode(cls().encode(version), version) == cls()
    run()

"""Shared fixtures: Kafka 3.9's reference specs (from ../shared) and their generated protocol."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # for `import strategies`

#: Apache Kafka 3.9.0's message specs; CI has them at ../shared beside the checkout.
REFERENCE_DIR = Path(
    os.environ.get("KAFKA_EPOCHS_REFERENCE_SPECS", ROOT.parent / "shared" / "reference" / "kafka-3.9.0" / "message")
)
REFERENCE_MISSING = (
    f"Apache Kafka's JSON message specs are not at {REFERENCE_DIR}: put the project's shared/ folder "
    "beside the checkout, or point KAFKA_EPOCHS_REFERENCE_SPECS at a copy of "
    "clients/src/main/resources/common/message/ from an Apache Kafka 3.9.0 source release"
)


def reference_specs_available() -> bool:
    return REFERENCE_DIR.is_dir() and any(REFERENCE_DIR.glob("*.json"))


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not reference_specs_available():
        pytest.skip(REFERENCE_MISSING)
    return REFERENCE_DIR


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def apache_protocol():  # type: ignore[no-untyped-def]
    """The bundled Apache Kafka protocol (the catalogue): needs no spec directory."""
    from kafka_epochs import Protocol

    return Protocol.apache()


@pytest.fixture(scope="session")
def reference_protocol(reference_dir: Path, cache_dir: Path):  # type: ignore[no-untyped-def]
    from kafka_epochs import Protocol

    return Protocol.from_specs(reference_dir, cache_dir=cache_dir)


def reference_names() -> list[object]:
    """Spec names for parametrizing; one skipped parameter, saying why, when they are absent."""
    if not reference_specs_available():
        return [pytest.param("<reference specs missing>", marks=pytest.mark.skip(reason=REFERENCE_MISSING))]
    return sorted(p.stem for p in REFERENCE_DIR.glob("*.json"))


FEATURES_DIR = Path(__file__).resolve().parent / "specs" / "features"


@pytest.fixture(scope="session")
def features_protocol(cache_dir: Path):  # type: ignore[no-untyped-def]
    """A protocol from the tests' own spec that uses every attribute of the format."""
    from kafka_epochs import Protocol

    return Protocol.from_specs(FEATURES_DIR, cache_dir=cache_dir)


# CI runs derandomized, so a green run stays green; locally every run explores new inputs.
settings.register_profile("ci", derandomize=True, database=None, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

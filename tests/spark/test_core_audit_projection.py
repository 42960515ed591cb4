"""The audit reads MetadataResponses through projections: the same events as from whole bodies.

Every MetadataResponse version, random bodies (brokers, cluster ids, topic ids, leader epochs
including -1): the events from the projected columns equal those the full decode gives.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("pyspark")

from kafka_epochs import Protocol
from kafka_epochs.audit.events import _ERROR_BYTES, METADATA, METADATA_FIRST_EPOCH_VERSION, EventExtractor

from .conftest import random_message

APACHE = Protocol.apache()


def full_events(extractor: EventExtractor, frame: bytes, version: int) -> list[tuple[Any, ...]]:
    decoded = APACHE.decode_response(frame, METADATA, version)
    return [
        (*e, decoded.profile, decoded.warnings or None) for e in extractor._response_events(decoded, METADATA, version)
    ]


@pytest.mark.parametrize("version", list(APACHE.message("MetadataResponse").VALID_VERSIONS))
def test_projected_metadata_events_equal_the_full_decodes(version: int) -> None:
    cls = APACHE.message("MetadataResponse")
    extractor = EventExtractor(APACHE)
    rng = random.Random(version)
    checked = projected = 0
    for _ in range(20):
        body = random_message(cls, version, rng, version in cls.FLEXIBLE_VERSIONS)
        for topic in body.topics:
            for p in topic.partitions:
                p.error_code = 0  # an epoch error code sends the response down the full decode
                p.leader_epoch = rng.choice([-1, 0, 5, 2**31 - 1])
            topic.error_code = 0
        frame = APACHE.encode_response(body, version, 7)
        events = extractor.events(frame, "response", METADATA, version)
        assert events == full_events(extractor, frame, version)  # Metadata is never "answered": no marker
        checked += len(events)
        projected += not any(code in frame for code in _ERROR_BYTES)  # else read whole, as before
    assert projected >= 10
    assert checked > 20 if version >= METADATA_FIRST_EPOCH_VERSION else checked == 20


JUDGED_RESPONSES = ["ProduceResponse", "FetchResponse", "ListOffsetsResponse", "OffsetForLeaderEpochResponse"]


@pytest.mark.parametrize("name", JUDGED_RESPONSES)
def test_error_codes_checked_by_projection_give_the_full_decodes_events(name: str) -> None:
    """Responses whose bytes look like they hold an epoch error: the projection's check of the
    error_code fields decides whether the body is decoded, and the events are those of a full decode."""
    from kafka_epochs.audit.events import ANSWER

    cls = APACHE.message(name)
    extractor = EventExtractor(APACHE)
    rng = random.Random(name)
    fenced = clean_lookalikes = 0
    for version in cls.VALID_VERSIONS:
        for _ in range(6):
            body = random_message(cls, version, rng, version in cls.FLEXIBLE_VERSIONS)
            codes = iter(rng.choice([0, 0, 6, 74, 75, 11]) for _ in range(10_000))
            _set_error_codes(body, codes)
            frame = APACHE.encode_response(body, version, 3)
            decoded = APACHE.decode_response(frame, cls.API_KEY, version)
            full = [
                (*e, decoded.profile, decoded.warnings or None)
                for e in extractor._response_events(decoded, cls.API_KEY, version)
            ]
            events = extractor.events(frame, "response", cls.API_KEY, version)
            assert events[0][0] == ANSWER
            assert events[1:] == full
            fenced += bool(full)
            clean_lookalikes += not full and any(code in frame for code in _ERROR_BYTES)
    assert fenced > 5
    assert clean_lookalikes >= 1  # bytes that only look like an epoch error: checked, not decoded


def _set_error_codes(obj: Any, codes: Any) -> None:
    for f in type(obj)._FIELDS:
        value = getattr(obj, f.attr)
        if f.attr == "error_code" and f.kind == "int16":
            setattr(obj, f.attr, next(codes))
        elif f.kind == "struct" and value is not None:
            _set_error_codes(value, codes)
        elif f.kind == "array" and f.element == "struct" and value:
            for item in value:
                _set_error_codes(item, codes)


@pytest.mark.parametrize("profile", ["apache", "kip"])
@pytest.mark.parametrize(
    "name", ["ProduceRequest", "FetchRequest", "ListOffsetsRequest", "OffsetForLeaderEpochRequest"]
)
def test_requested_epochs_by_projection_equal_the_full_decodes(profile: str, name: str) -> None:
    """A client request's partitions and epochs, read by projection (EPOCH_PATHS), are the events
    the sans-IO rules give on the whole decoded request, in every version of both layouts."""
    protocol = Protocol.profile(profile)
    cls = protocol.message(name)
    extractor = EventExtractor(protocol)
    rng = random.Random(f"{profile}-{name}")
    rows = 0
    for version in cls.VALID_VERSIONS:
        for _ in range(8):
            body = random_message(cls, version, rng, version in cls.FLEXIBLE_VERSIONS)
            frame = protocol.encode_request(body, version, 9, "client")
            decoded = protocol.decode_request(frame)
            full = [
                (*e, decoded.profile, decoded.warnings or None)
                for e in extractor._request_events(cls.API_KEY, decoded.body, version)
            ]
            assert extractor.events(frame, "request", None, None) == full
            rows += len(full)
    assert rows > 20

"""Our codec against independent implementations, both directions, bytes identical.

For every (message, version) a peer implements that Kafka 3.9 defines:
  peer value -> peer bytes -> our decode -> same value, and our re-encode -> identical bytes;
  the same value built as our object -> our bytes -> identical to the peer's, and the peer
  decodes our bytes back to the value.
Values come from the peer's own idea of the fields (every field set), once with tagged fields
set and once with them at their defaults. kafka-python, which represents any value, also gets
random messages (nulls included) for the issue's core APIs.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from .peers import PeerUnavailable, peer, sample_plain, snake_case, supported_pairs
from conftest import reference_specs_available

PEERS = ["kio-0.6.5", "kio-0.5.0", "kafka-python-3.0.12"]
#: The issue's required set: flexible and non-flexible versions of these must be covered.
CORE = [
    "Produce",
    "Fetch",
    "Metadata",
    "ApiVersions",
    "ListOffsets",
    "OffsetForLeaderEpoch",
    "LeaderAndIsr",
    "StopReplica",
    "CreateTopics",
    "JoinGroup",
]
#: kio 0.6.5 follows Kafka 4.x for this then-unstable message (it adds a leader_epoch field).
KNOWN_DIFFERENCES = {("kio-0.6.5", "ReadShareGroupStateSummaryResponse", 0)}


def from_plain(cls: Any, plain: dict[str, Any]) -> Any:
    kwargs = {}
    for f in cls._FIELDS:
        key = snake_case(f.name)
        if key in plain:
            kwargs[f.attr] = _value_from_plain(f, plain[key])
    unknown = set(plain) - {snake_case(f.name) for f in cls._FIELDS}
    assert not unknown, f"{cls.__name__}: the peer has fields we do not: {unknown}"
    return cls(**kwargs)


def _value_from_plain(f: Any, value: Any) -> Any:
    if value is None:
        return None
    if f.kind == "struct":
        return from_plain(f.struct, value)
    if f.kind == "array" and f.element == "struct":
        return [from_plain(f.struct, v) for v in value]
    return value


def to_plain(obj: Any, version: int) -> dict[str, Any]:
    out = {}
    for f in type(obj)._FIELDS:
        if not f.present(version):
            continue
        value = getattr(obj, f.attr)
        if value is not None and f.kind == "struct":
            value = to_plain(value, version)
        elif value is not None and f.kind == "array" and f.element == "struct":
            value = [to_plain(v, version) for v in value]
        out[snake_case(f.name)] = value
    return out


def cross_check(proto: Any, codec: Any, name: str, version: int, plain: dict[str, Any]) -> None:
    cls = proto.message(name)
    peer_bytes = codec.encode(name, version, plain)
    ours = cls.decode(peer_bytes, version)  # peer -> us
    assert to_plain(ours, version) == plain
    assert ours.encode(version) == peer_bytes
    built = from_plain(cls, plain)  # us -> peer
    assert built.encode(version) == peer_bytes
    assert codec.decode(name, version, built.encode(version)) == plain


def reference_pairs(proto: Any, codec: Any) -> list[tuple[str, int]]:
    return [
        (name, v) for name, v in supported_pairs(codec) if name in proto and v in proto.message(name).VALID_VERSIONS
    ]


@pytest.fixture(scope="module", params=PEERS)
def codec(request: pytest.FixtureRequest) -> Any:
    c = peer(request.param)
    try:
        supported_pairs(c)
    except PeerUnavailable as e:  # kio 0.5.0 is pip-installed on first use
        pytest.fail(f"{request.param} could not be installed: {e}")
    return c


def test_every_shared_pair_both_directions(reference_protocol: Any, codec: Any) -> None:
    pairs = reference_pairs(reference_protocol, codec)
    assert len(pairs) > 400  # each peer shares hundreds of (message, version) pairs with Kafka 3.9
    failures = []
    for name, version in pairs:
        if (codec.name, name, version) in KNOWN_DIFFERENCES:
            continue
        for tagged_defaults in (False, True):
            plain = sample_plain(codec, name, version, tagged_defaults=tagged_defaults)
            try:
                cross_check(reference_protocol, codec, name, version, plain)
            except AssertionError as e:
                failures.append(f"{name} v{version} (tagged defaults: {tagged_defaults}): {e}")
    assert not failures, f"{len(failures)} disagreements with {codec.name}:\n" + "\n".join(failures[:20])


def test_core_apis_are_covered(reference_protocol: Any) -> None:
    """Flexible and non-flexible versions of every core API are checked against some peer."""
    covered: set[tuple[str, int]] = set()
    for name in PEERS:
        covered.update(reference_pairs(reference_protocol, peer(name)))
    for api in CORE:
        for kind in ("Request", "Response"):
            cls = reference_protocol.message(api + kind)
            flexible = [v for v in cls.VALID_VERSIONS if v in cls.FLEXIBLE_VERSIONS]
            rigid = [v for v in cls.VALID_VERSIONS if v not in cls.FLEXIBLE_VERSIONS]
            assert any((api + kind, v) in covered for v in flexible), f"{api}{kind}: no flexible version"
            assert any((api + kind, v) in covered for v in rigid), f"{api}{kind}: no non-flexible version"


@pytest.mark.skipif(not reference_specs_available(), reason="needs Kafka 3.9's specs in ../shared")
def test_random_core_messages_against_kafka_python(reference_protocol: Any) -> None:
    kp = peer("kafka-python-3.0.12")
    pairs = [
        (api + kind, v)
        for api in CORE
        for kind in ("Request", "Response")
        for v in reference_protocol.message(api + kind).VALID_VERSIONS
        if kp.supports(api + kind, v)
    ]
    assert pairs

    @settings(max_examples=300, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        name, version = data.draw(st.sampled_from(pairs), label="pair")
        cls = reference_protocol.message(name)
        obj = data.draw(strategies.message(cls, version), label="message")
        _drop_unknown_tags(obj)  # no peer can express them
        ours = obj.encode(version)
        assert kp.encode(name, version, kp.decode(name, version, ours)) == ours
        assert cls.decode(kp.encode(name, version, to_plain(obj, version)), version) == obj

    run()


def _drop_unknown_tags(obj: Any) -> None:
    if hasattr(obj, "_unknown_tags"):
        obj._unknown_tags = None
    for f in type(obj)._FIELDS:
        value = getattr(obj, f.attr)
        if f.kind == "struct" and value is not None:
            _drop_unknown_tags(value)
        elif f.kind == "array" and f.element == "struct" and value:
            for item in value:
                _drop_unknown_tags(item)

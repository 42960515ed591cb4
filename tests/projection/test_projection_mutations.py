"""Projections on damaged bodies: only DecodeError, always explained, and right whenever they read.

Truncated and byte-mutated valid messages of many (api, version) pairs, with random projections:
a projection either raises a DecodeError that the checked decoder explains (never "decoder
failed"), or reads, in which case, when the full decoder also reads the bytes, the values are the
full decode's. (A projection may read bytes the full decoder refuses: it does not check what it
skips, such as the UTF-8 of a string it steps over.)
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_projection_oracle import expected, random_paths, same

from kafka_epochs import Protocol
from kafka_epochs.projection import Projection
from kafka_epochs.wire.errors import DecodeError

import strategies

NAMES = [
    "MetadataResponse",
    "ProduceRequest",
    "FetchRequest",
    "FetchResponse",
    "ApiVersionsResponse",
    "ListOffsetsResponse",
    "OffsetForLeaderEpochRequest",
    "LeaderAndIsrRequest",
    "StopReplicaRequest",
    "DescribeClusterResponse",
    "ConsumerGroupHeartbeatRequest",
]


def test_damaged_bodies_fail_only_with_explained_decode_errors() -> None:
    apache = Protocol.apache()
    pairs = [(apache.message(n), v) for n in NAMES for v in apache.message(n).VALID_VERSIONS]

    @settings(max_examples=400, suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        cls, version = data.draw(st.sampled_from(pairs), label="pair")
        raw = strategies.damage(data, data.draw(strategies.message(cls, version)).encode(version))
        paths = random_paths(cls, version, random.Random(data.draw(st.integers(0, 2**32 - 1))))
        if not paths:
            return
        projection = Projection(cls, paths)
        columns = projection.empty()
        try:
            projection.read_into(columns, raw, version)
        except DecodeError as e:
            assert e.offset >= 0
            assert "decoder failed" not in e.reason, e
            assert all(not column for column in columns)  # rolled back
            return
        try:
            whole = cls.decode(raw, version)
        except DecodeError:
            return  # something the projection stepped over without checking
        assert same(columns, expected(whole, version, list(projection.paths)))

    run()

"""Self-check of the cross-check peers: are the adapters themselves trustworthy?

* hand-built plain values round-trip through every peer that implements them;
* a few encodings are compared with bytes written out by hand from the Kafka 3.9
  message specs (``../shared/reference/kafka-3.9.0/message``);
* the peers agree byte for byte with each other on every pair they share, for a
  generated value with all fields set and for one with every tagged field at its
  default.
"""

from __future__ import annotations

import itertools
import struct
import uuid
from typing import Any

import pytest

from .peers import (
    KafkaPythonPeer,
    KioPeer,
    KioSubprocessPeer,
    PeerError,
    PeerUnavailable,
    peer,
    peers,
    sample_plain,
    snake_case,
    supported_pairs,
)

KIO6 = "kio-0.6.5"
KIO5 = "kio-0.5.0"
KP = "kafka-python-3.0.12"
PEER_NAMES = (KIO6, KIO5, KP)

TOPIC_ID = uuid.UUID("5d3bb1e6-8a7c-4f0e-9a52-3e6f1c2b7d40")
ZERO_UUID = uuid.UUID(int=0)


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


def _i64(v: int) -> bytes:
    return struct.pack(">q", v)


def _str16(s: str) -> bytes:  # legacy string: int16 length
    return _i16(len(s)) + s.encode()


def _cstr(s: str) -> bytes:  # compact string: uvarint(len + 1), short strings only
    assert len(s) < 127
    return bytes([len(s) + 1]) + s.encode()


@pytest.fixture(scope="session", params=PEER_NAMES)
def any_peer(request: pytest.FixtureRequest) -> Any:
    return _usable(request.param)


def _usable(name: str) -> Any:
    p = peer(name)
    try:
        p.supports("ApiVersionsRequest", 0)
    except PeerUnavailable as exc:  # e.g. no PyPI access for the kio 0.5.0 install
        pytest.skip(str(exc))
    return p


# -- the interface ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kafka", "snake"),
    [
        ("ThrottleTimeMs", "throttle_time_ms"),
        ("isKRaftController", "is_k_raft_controller"),
        ("TopicID", "topic_id"),
        ("ZkVersion", "zk_version"),
        ("ErrorCode", "error_code"),
        ("Name", "name"),
        ("IncludeClusterAuthorizedOperations", "include_cluster_authorized_operations"),
        ("Records", "records"),
        ("SaslAuthBytes", "sasl_auth_bytes"),
        ("Listener2Name", "listener2_name"),
    ],
)
def test_snake_case(kafka: str, snake: str) -> None:
    assert snake_case(kafka) == snake


def test_peers_are_the_three_singletons() -> None:
    first, second = peers(), peers()
    assert [p.name for p in first] == list(PEER_NAMES)
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert isinstance(first[0], KioPeer)
    assert isinstance(first[1], KioSubprocessPeer)
    assert isinstance(first[2], KafkaPythonPeer)


def test_supported_pairs_are_truthful(any_peer: Any) -> None:
    pairs = supported_pairs(any_peer)
    assert pairs == sorted(set(pairs))
    assert len(pairs) > 400
    assert all(any_peer.supports(n, v) for n, v in pairs)
    names = {n for n, _ in pairs}
    for name in names:
        top = max(v for n, v in pairs if n == name)
        assert not any_peer.supports(name, top + 1)
    assert not any_peer.supports("NoSuchRequest", 0)


def test_which_peer_has_what() -> None:
    kio6, kp = peer(KIO6), peer(KP)
    # kio 0.6.5 follows Kafka 4.x: no ZooKeeper controller APIs, Produce from v3
    assert not kio6.supports("StopReplicaRequest", 3)
    assert not kio6.supports("ProduceRequest", 2)
    assert kio6.supports("ProduceRequest", 3) and kio6.supports("ProduceRequest", 13)
    assert kio6.supports("FetchRequest", 18) and not kio6.supports("FetchRequest", 3)
    # kafka-python: client APIs only, every version from 0
    assert kp.supports("ProduceRequest", 0) and kp.supports("ProduceRequest", 13)
    assert not kp.supports("LeaderAndIsrRequest", 0)
    assert kp.supports("ConsumerProtocolAssignment", 3)
    assert kp.supports("RequestHeader", 2) and not kp.supports("RequestHeader", 0)


def test_kio050_runs_in_its_own_process() -> None:
    kio5 = _usable(KIO5)
    for version in range(5):
        assert kio5.supports("StopReplicaRequest", version)
    assert kio5.supports("LeaderAndIsrRequest", 7) and kio5.supports("UpdateMetadataRequest", 8)
    assert kio5.supports("ProduceRequest", 0) and not kio5.supports("ProduceRequest", 12)
    import kio

    assert kio.__version__ == "0.6.5"  # the worker did not disturb this interpreter


def test_errors_are_peer_errors(any_peer: Any) -> None:
    good = {"client_software_name": "a", "client_software_version": "b"}
    assert any_peer.decode("ApiVersionsRequest", 3, any_peer.encode("ApiVersionsRequest", 3, good)) == good
    with pytest.raises(PeerError):
        any_peer.encode("ApiVersionsRequest", 3, {"client_software_name": "a"})  # missing field
    with pytest.raises(PeerError):
        any_peer.encode("ApiVersionsRequest", 3, {**good, "bogus": 1})  # not in this version
    with pytest.raises(PeerError):
        any_peer.encode("ApiVersionsRequest", 0, good)  # fields arrived in v3
    with pytest.raises(PeerError):
        any_peer.encode("NoSuchRequest", 0, {})
    with pytest.raises(PeerError):
        any_peer.decode("ApiVersionsRequest", 3, b"\x02a\x02b\x00\x00")  # trailing byte
    with pytest.raises(PeerError):
        any_peer.decode("ApiVersionsRequest", 3, b"\x02a\x02")  # truncated


# -- hand-built values --------------------------------------------------------

_BROKER = {"node_id": 1, "host": "broker-1", "port": 9092}
_PARTITION = {
    "error_code": 0,
    "partition_index": 0,
    "leader_id": 1,
    "replica_nodes": [1, 2, 3],
    "isr_nodes": [1, 2],
}
_FETCH_PARTITION_V4 = {"partition": 0, "fetch_offset": 100, "partition_max_bytes": 1 << 20}
_LAIR_PARTITION = {
    "partition_index": 0,
    "controller_epoch": 7,
    "leader": 1,
    "leader_epoch": 12,
    "isr": [1, 2],
    "partition_epoch": 3,
    "replicas": [1, 2, 3],
}
_LIVE_LEADERS = [{"broker_id": 1, "host_name": "broker-1", "port": 9092}]

HAND: dict[tuple[str, int], dict[str, Any]] = {
    ("MetadataRequest", 0): {"topics": [{"name": "orders"}]},
    ("MetadataRequest", 1): {"topics": None},
    ("MetadataRequest", 4): {"topics": [{"name": "orders"}], "allow_auto_topic_creation": False},
    ("MetadataRequest", 12): {
        "topics": [{"topic_id": ZERO_UUID, "name": "orders"}, {"topic_id": TOPIC_ID, "name": None}],
        "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": True,
    },
    ("MetadataResponse", 0): {
        "brokers": [_BROKER],
        "topics": [{"error_code": 0, "name": "orders", "partitions": [_PARTITION]}],
    },
    ("MetadataResponse", 5): {
        "throttle_time_ms": 0,
        "brokers": [{**_BROKER, "rack": None}, {**_BROKER, "node_id": 2, "rack": "eu-1a"}],
        "cluster_id": "cluster-A",
        "controller_id": 2,
        "topics": [
            {
                "error_code": 0,
                "name": "orders",
                "is_internal": False,
                "partitions": [{**_PARTITION, "offline_replicas": [3]}],
            }
        ],
    },
    ("MetadataResponse", 12): {
        "throttle_time_ms": 25,
        "brokers": [{**_BROKER, "rack": None}],
        "cluster_id": None,
        "controller_id": -1,
        "topics": [
            {
                "error_code": 0,
                "name": "orders",
                "topic_id": TOPIC_ID,
                "is_internal": False,
                "partitions": [{**_PARTITION, "leader_epoch": 4, "offline_replicas": []}],
                "topic_authorized_operations": -(2**31),
            },
            {
                "error_code": 3,
                "name": None,
                "topic_id": ZERO_UUID,
                "is_internal": True,
                "partitions": [],
                "topic_authorized_operations": 0b1011_1000,
            },
        ],
    },
    ("ProduceRequest", 3): {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": b"\x00" * 61}]}],
    },
    ("ProduceRequest", 9): {
        "transactional_id": "tx-1",
        "acks": 1,
        "timeout_ms": 1500,
        "topic_data": [
            {
                "name": "orders",
                "partition_data": [{"index": 0, "records": None}, {"index": 1, "records": b"batch"}],
            }
        ],
    },
    ("FetchRequest", 4): {
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "isolation_level": 1,
        "topics": [{"topic": "orders", "partitions": [_FETCH_PARTITION_V4]}],
    },
    ("FetchRequest", 12): {
        "cluster_id": None,  # tagged, default null
        "replica_id": -1,
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "isolation_level": 0,
        "session_id": 17,
        "session_epoch": 3,
        "topics": [
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": 5,
                        "fetch_offset": 100,
                        "last_fetched_epoch": 4,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [{"topic": "old", "partitions": [1, 2]}],
        "rack_id": "eu-1a",
    },
    ("FetchRequest", 15): {
        "cluster_id": "cluster-A",  # tagged, non-default
        "replica_state": {"replica_id": 2, "replica_epoch": 9},  # tagged struct
        "max_wait_ms": 500,
        "min_bytes": 1,
        "max_bytes": 52428800,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic_id": TOPIC_ID,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": 5,
                        "fetch_offset": 100,
                        "last_fetched_epoch": 4,
                        "log_start_offset": 0,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    },
    ("ApiVersionsRequest", 0): {},
    ("ApiVersionsRequest", 3): {"client_software_name": "kafka-epochs", "client_software_version": "0.1.0"},
    ("ApiVersionsResponse", 0): {
        "error_code": 0,
        "api_keys": [{"api_key": 0, "min_version": 0, "max_version": 11}],
    },
    ("ApiVersionsResponse", 3): {
        "error_code": 0,
        "api_keys": [
            {"api_key": 18, "min_version": 0, "max_version": 4},
            {"api_key": 3, "min_version": 0, "max_version": 12},
        ],
        "throttle_time_ms": 0,
        "supported_features": [{"name": "metadata.version", "min_version": 1, "max_version": 21}],
        "finalized_features_epoch": 7,
        "finalized_features": [],
        "zk_migration_ready": False,
    },
    ("StopReplicaRequest", 0): {
        "controller_id": 1,
        "controller_epoch": 2,
        "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "t", "partition_index": 0}],
    },
    ("StopReplicaRequest", 1): {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 3,
        "delete_partitions": False,
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
    },
    ("StopReplicaRequest", 2): {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 3,
        "delete_partitions": False,
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
    },
    ("StopReplicaRequest", 3): {
        "controller_id": 1,
        "controller_epoch": 2,
        "broker_epoch": 3,
        "topic_states": [
            {
                "topic_name": "t",
                "partition_states": [{"partition_index": 0, "leader_epoch": 5, "delete_partition": True}],
            }
        ],
    },
    ("LeaderAndIsrRequest", 0): {
        "controller_id": 1,
        "controller_epoch": 7,
        "ungrouped_partition_states": [{"topic_name": "orders", **_LAIR_PARTITION}],
        "live_leaders": _LIVE_LEADERS,
    },
    ("LeaderAndIsrRequest", 4): {
        "controller_id": 1,
        "controller_epoch": 7,
        "broker_epoch": 42,
        "topic_states": [
            {
                "topic_name": "orders",
                "partition_states": [
                    {**_LAIR_PARTITION, "adding_replicas": [3], "removing_replicas": [], "is_new": True}
                ],
            }
        ],
        "live_leaders": _LIVE_LEADERS,
    },
    ("LeaderAndIsrRequest", 7): {
        "controller_id": 1,
        "is_k_raft_controller": True,
        "controller_epoch": 7,
        "broker_epoch": 42,
        "type": 1,
        "topic_states": [
            {
                "topic_name": "orders",
                "topic_id": TOPIC_ID,
                "partition_states": [
                    {
                        **_LAIR_PARTITION,
                        "adding_replicas": [],
                        "removing_replicas": [2],
                        "is_new": False,
                        "leader_recovery_state": 1,
                    }
                ],
            }
        ],
        "live_leaders": _LIVE_LEADERS,
    },
}

# how many of the HAND messages each peer must cover, so no peer passes vacuously
MIN_HAND = {KIO6: 16, KIO5: 23, KP: 16}


def test_hand_values_round_trip(any_peer: Any) -> None:
    covered = 0
    for (name, version), plain in HAND.items():
        if not any_peer.supports(name, version):
            continue
        data = any_peer.encode(name, version, plain)
        assert isinstance(data, bytes)
        assert any_peer.decode(name, version, data) == plain, (name, version)
        covered += 1
    assert covered >= MIN_HAND[any_peer.name]


def test_every_hand_value_has_a_peer() -> None:
    for name, version in HAND:
        assert any(_usable(n).supports(name, version) for n in PEER_NAMES), (name, version)


# -- bytes written out by hand from the 3.9 specs -----------------------------

EXPECTED: dict[tuple[str, int], bytes] = {
    # compact string, compact string, empty tag section
    ("ApiVersionsRequest", 3): _cstr("kafka-epochs") + _cstr("0.1.0") + b"\x00",
    ("ApiVersionsRequest", 0): b"",
    # Topics: int32 count, then the topic's legacy string Name
    ("MetadataRequest", 0): _i32(1) + _str16("orders"),
    # Topics nullable from v1: null is count -1
    ("MetadataRequest", 1): _i32(-1),
    # v4 adds AllowAutoTopicCreation
    ("MetadataRequest", 4): _i32(1) + _str16("orders") + b"\x00",
    ("MetadataRequest", 12): b"".join(
        [
            b"\x03",  # compact array: n + 1
            ZERO_UUID.bytes + _cstr("orders") + b"\x00",  # TopicId, Name, tags
            TOPIC_ID.bytes + b"\x00" + b"\x00",  # TopicId, null Name (0), tags
            b"\x01" + b"\x01" + b"\x00",  # AllowAutoTopicCreation, IncludeTopicAuthorizedOperations, tags
        ]
    ),
    ("ApiVersionsResponse", 0): _i16(0) + _i32(1) + _i16(0) + _i16(0) + _i16(11),
    ("ApiVersionsResponse", 3): b"".join(
        [
            _i16(0),  # ErrorCode
            b"\x03",  # ApiKeys: 2 entries of (key, min, max, tags)
            _i16(18) + _i16(0) + _i16(4) + b"\x00",
            _i16(3) + _i16(0) + _i16(12) + b"\x00",
            _i32(0),  # ThrottleTimeMs
            # tag section in tag order; FinalizedFeatures ([]) and ZkMigrationReady
            # (false) hold their defaults and are left out
            b"\x02",  # 2 tags
            b"\x00" + bytes([1 + 17 + 2 + 2 + 1]),  # tag 0 SupportedFeatures, size
            b"\x02" + _cstr("metadata.version") + _i16(1) + _i16(21) + b"\x00",
            b"\x01\x08" + _i64(7),  # tag 1 FinalizedFeaturesEpoch, size 8, int64
        ]
    ),
    ("ProduceRequest", 3): b"".join(
        [
            _i16(-1),  # TransactionalId: null
            _i16(-1) + _i32(30000),  # Acks, TimeoutMs
            _i32(1) + _str16("orders"),  # TopicData[0].Name
            _i32(1) + _i32(0) + _i32(61) + b"\x00" * 61,  # PartitionData[0]: Index, Records
        ]
    ),
    # KIP-570 StopReplica: v0 ungrouped partitions, v1 topics, v2 flexible, v3 states
    ("StopReplicaRequest", 0): _i32(1) + _i32(2) + b"\x01" + _i32(1) + _str16("t") + _i32(0),
    ("StopReplicaRequest", 1): b"".join(
        [
            _i32(1) + _i32(2) + _i64(3) + b"\x00",  # ControllerId, ControllerEpoch, BrokerEpoch, Delete
            _i32(1) + _str16("t") + _i32(2) + _i32(0) + _i32(1),  # Topics[0]: Name, PartitionIndexes
        ]
    ),
    ("StopReplicaRequest", 2): b"".join(
        [
            _i32(1) + _i32(2) + _i64(3) + b"\x00",
            b"\x02" + _cstr("t") + b"\x03" + _i32(0) + _i32(1) + b"\x00",  # compact, topic tags
            b"\x00",  # tags
        ]
    ),
    ("StopReplicaRequest", 3): b"".join(
        [
            _i32(1) + _i32(2) + _i64(3),  # no DeletePartitions from v3
            b"\x02" + _cstr("t"),  # TopicStates[0].TopicName
            b"\x02" + _i32(0) + _i32(5) + b"\x01" + b"\x00",  # PartitionIndex, LeaderEpoch, Delete, tags
            b"\x00",  # topic state tags
            b"\x00",  # tags
        ]
    ),
}


@pytest.mark.parametrize(("name", "version"), list(EXPECTED), ids=str)
def test_bytes_match_the_spec_by_hand(name: str, version: int) -> None:
    expected = EXPECTED[(name, version)]
    plain = HAND[(name, version)]
    checked = 0
    for peer_name in PEER_NAMES:
        p = _usable(peer_name)
        if not p.supports(name, version):
            continue
        assert p.encode(name, version, plain).hex() == expected.hex(), p.name
        assert p.decode(name, version, expected) == plain, p.name
        checked += 1
    assert checked >= 1


def test_default_tagged_fields_are_not_written(any_peer: Any) -> None:
    plain = {
        **HAND[("ApiVersionsResponse", 3)],
        "supported_features": [],
        "finalized_features_epoch": -1,
    }
    data = any_peer.encode("ApiVersionsResponse", 3, plain)
    assert data.endswith(_i32(0) + b"\x00")  # throttle time, then an empty tag section
    assert any_peer.decode("ApiVersionsResponse", 3, data) == plain


def test_tagged_struct_at_its_defaults_is_left_out(any_peer: Any) -> None:
    if not any_peer.supports("FetchRequest", 15):
        pytest.skip(f"{any_peer.name} has no FetchRequest v15")
    with_tags = HAND[("FetchRequest", 15)]
    plain = {**with_tags, "cluster_id": None, "replica_state": {"replica_id": -1, "replica_epoch": -1}}
    data = any_peer.encode("FetchRequest", 15, plain)
    # the request's tag section is its last byte: empty, as no tag differs from its default
    assert data.endswith(b"\x00")
    tagged = any_peer.encode("FetchRequest", 15, with_tags)
    # cluster_id (tag 0): tag, size, 1 + 9; replica_state (tag 1): tag, size, 4 + 8 + 1
    assert len(tagged) - len(data) == (2 + 10) + (2 + 13)
    assert tagged.endswith(b"\x02" + b"\x00\x0a" + _cstr("cluster-A") + b"\x01\x0d" + _i32(2) + _i64(9) + b"\x00")
    assert any_peer.decode("FetchRequest", 15, data) == plain
    assert any_peer.decode("FetchRequest", 15, tagged) == with_tags


# -- the peers against each other ---------------------------------------------

SHARED_HAND = [
    ("ApiVersionsRequest", 3),
    ("ApiVersionsResponse", 3),
    ("MetadataRequest", 12),
    ("MetadataResponse", 5),
    ("MetadataResponse", 12),
    ("ProduceRequest", 9),
    ("FetchRequest", 12),
    ("FetchRequest", 15),
]


@pytest.mark.parametrize(("name", "version"), SHARED_HAND, ids=str)
def test_kio_and_kafka_python_agree_on_hand_values(name: str, version: int) -> None:
    kio6, kp = peer(KIO6), peer(KP)
    plain = HAND[(name, version)]
    data = kio6.encode(name, version, plain)
    assert kp.encode(name, version, plain) == data
    assert kp.decode(name, version, data) == kio6.decode(name, version, data) == plain


PEER_COMBINATIONS = list(itertools.combinations(PEER_NAMES, 2))


@pytest.mark.parametrize(("a", "b"), PEER_COMBINATIONS, ids=[f"{a}-vs-{b}" for a, b in PEER_COMBINATIONS])
def test_peers_agree_on_every_shared_pair(a: str, b: str) -> None:
    pa, pb = _usable(a), _usable(b)
    shared = sorted(set(supported_pairs(pa)) & set(supported_pairs(pb)))
    assert len(shared) > 400
    problems = []
    for name, version in shared:
        for tagged_defaults in (False, True):
            plain = sample_plain(pa, name, version, tagged_defaults=tagged_defaults)
            if plain != sample_plain(pb, name, version, tagged_defaults=tagged_defaults):
                problems.append((name, version, tagged_defaults, "different fields or tag defaults"))
                continue
            data = pa.encode(name, version, plain)
            if pb.encode(name, version, plain) != data:
                problems.append((name, version, tagged_defaults, "different bytes"))
            elif pa.decode(name, version, data) != plain or pb.decode(name, version, data) != plain:
                problems.append((name, version, tagged_defaults, "different decoding"))
    assert problems == KNOWN_DISAGREEMENTS.get((a, b), [])


# kio 0.6.5 follows Kafka 4.x for this then-unstable API (adds LeaderEpoch to v0)
KNOWN_DISAGREEMENTS = {
    (KIO6, KIO5): [
        ("ReadShareGroupStateSummaryResponse", 0, False, "different fields or tag defaults"),
        ("ReadShareGroupStateSummaryResponse", 0, True, "different fields or tag defaults"),
    ],
}


def test_every_other_pair_round_trips(any_peer: Any) -> None:
    """Pairs no other peer has (the agreement test above round-trips the rest)."""
    others: set[tuple[str, int]] = set()
    for name in PEER_NAMES:
        if name != any_peer.name:
            others.update(supported_pairs(_usable(name)))
    failures: list[tuple[Any, ...]] = []
    for name, version in sorted(set(supported_pairs(any_peer)) - others):
        plain = sample_plain(any_peer, name, version)
        try:
            if any_peer.decode(name, version, any_peer.encode(name, version, plain)) != plain:
                failures.append((name, version))
        except PeerError as exc:
            failures.append((name, version, str(exc)))
    assert failures == []


def test_kio050_truncates_timestamps_to_seconds() -> None:
    """A documented kio 0.5.0 decoding bug, pinned so we notice if it changes."""
    kio5, kp = _usable(KIO5), peer(KP)
    plain = {
        "responses": [
            {
                "name": "t",
                "partition_responses": [
                    {"index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": 1234, "log_start_offset": 0}
                ],
            }
        ],
        "throttle_time_ms": 0,
    }
    data = kp.encode("ProduceResponse", 5, plain)
    assert kio5.encode("ProduceResponse", 5, plain) == data
    decoded = kio5.decode("ProduceResponse", 5, data)
    assert decoded["responses"][0]["partition_responses"][0]["log_append_time_ms"] == 1000
    assert peer(KIO6).decode("ProduceResponse", 5, data) == plain


def test_unknown_tags() -> None:
    """kio rejects unknown tags; kafka-python skips them (the adapter drops them)."""
    data = _cstr("a") + _cstr("b") + b"\x01" + b"\x05\x02hi"
    assert peer(KP).decode("ApiVersionsRequest", 3, data) == {
        "client_software_name": "a",
        "client_software_version": "b",
    }
    for name in (KIO6, KIO5):
        with pytest.raises(PeerError, match="KeyError"):
            _usable(name).decode("ApiVersionsRequest", 3, data)

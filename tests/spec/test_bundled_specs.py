"""The bundled protocol (``messages/``): what it contains, where it matches Apache Kafka 3.9, where not.

* every bundled spec loads and ``Protocol.bundled()`` serves all of them (that the generated
  modules are up to date is ``test_regenerate.py``'s job);
* each version the decided table calls "Apache" has the same wire layout as Kafka 3.9's spec;
* each version that comes from a KIP is checked against bytes written out by hand from the
  seed documents (never produced by our encoder), both ways: encode gives them, decode reads them;
* the versions that diverge from Apache's version of the same number are shown to diverge, and
  how: by the KIP-516 topic id (plus, for the StopReplica v4 response, grouping by topic).

The seed documents live beside the checkout in ``../shared/seeds``; the StopReplica v0-v3
comparison with seed 000's JSON is skipped when they are absent.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.spec import MessageSpec, load_spec, load_specs, parse_spec
from kafka_epochs.spec.layout import WireField, WireLayout, WireType, format_layout, wire_layout

ROOT = Path(__file__).resolve().parents[2]
BUNDLED_DIR = ROOT / "messages"
SEEDS_DIR = ROOT.parent / "shared" / "seeds"

# -- the decided table --------------------------------------------------------------------------

#: Versions whose bytes are Apache Kafka 3.9's.
APACHE_IDENTICAL: dict[str, range] = {
    "RequestHeader": range(0, 3),
    "ResponseHeader": range(0, 2),
    "ApiVersionsRequest": range(0, 5),
    "ApiVersionsResponse": range(0, 5),
    "MetadataRequest": range(0, 13),
    "MetadataResponse": range(0, 13),
    "FetchRequest": range(0, 18),
    "FetchResponse": range(0, 18),
    "ProduceRequest": range(0, 12),
    "ProduceResponse": range(0, 12),
    "ListOffsetsRequest": range(0, 6),
    "ListOffsetsResponse": range(0, 6),
    "OffsetForLeaderEpochRequest": range(0, 4),
    "OffsetForLeaderEpochResponse": range(0, 4),
    "LeaderAndIsrRequest": range(0, 8),
    "LeaderAndIsrResponse": range(0, 8),
    "StopReplicaRequest": range(0, 4),
    "StopReplicaResponse": range(0, 4),
}

#: Versions that come from a KIP seed rather than from Apache Kafka 3.9.
KIP_VERSIONS: dict[str, range] = {
    "ProduceRequest": range(12, 13),  # KIP-359, seed 002
    "ProduceResponse": range(12, 13),  # KIP-359: same bytes as v11
    "ListOffsetsRequest": range(6, 7),  # KIP-516 draft, seed 004
    "ListOffsetsResponse": range(6, 7),
    "OffsetForLeaderEpochRequest": range(4, 5),  # KIP-516 draft, seed 004
    "OffsetForLeaderEpochResponse": range(4, 5),
    "StopReplicaRequest": range(4, 5),  # KIP-516 draft, seed 004
    "StopReplicaResponse": range(4, 5),
}

#: Versions that exist in Apache 3.9 under the same number but with other bytes.
DIVERGING = [
    ("ListOffsetsRequest", 6),
    ("ListOffsetsResponse", 6),
    ("OffsetForLeaderEpochRequest", 4),
    ("OffsetForLeaderEpochResponse", 4),
    ("StopReplicaRequest", 4),
    ("StopReplicaResponse", 4),
]

API_KEYS = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "LeaderAndIsr": 4,
    "StopReplica": 5,
    "ApiVersions": 18,
    "OffsetForLeaderEpoch": 23,
}

TOPIC_ID = uuid.UUID("46bdb63f-9e8d-4a38-bf7b-ee4eb2a794e4")  # the example id in seed 004
TOPIC_ID_HEX = "46bdb63f9e8d4a38bf7bee4eb2a794e4"


def h(*parts: str) -> bytes:
    """Hex pieces (whitespace allowed) joined into bytes."""
    return bytes.fromhex("".join(parts))


@pytest.fixture(scope="module")
def ours() -> dict[str, MessageSpec]:
    return {spec.name: spec for spec in load_specs(BUNDLED_DIR)}


@pytest.fixture(scope="module")
def bundled() -> Protocol:
    return Protocol.bundled()


def _apache(reference_dir: Path, name: str) -> MessageSpec:
    return load_spec(reference_dir / f"{name}.json")


# -- contents -----------------------------------------------------------------------------------


def test_bundled_specs_are_exactly_the_table(ours: dict[str, MessageSpec]) -> None:
    assert set(ours) == set(APACHE_IDENTICAL)
    for name, spec in ours.items():
        expected = set(APACHE_IDENTICAL[name]) | set(KIP_VERSIONS.get(name, range(0)))
        assert set(spec.versions) == expected, name
        assert spec.source == f"{name}.json"


def test_api_keys_and_flexible_versions(ours: dict[str, MessageSpec]) -> None:
    for api, key in API_KEYS.items():
        for kind in ("Request", "Response"):
            assert ours[api + kind].api_key == key
    first_flexible = {name: spec.flexible_versions.low for name, spec in ours.items()}
    assert first_flexible == {
        "RequestHeader": 2,
        "ResponseHeader": 1,
        "ApiVersionsRequest": 3,
        "ApiVersionsResponse": 3,
        "MetadataRequest": 9,
        "MetadataResponse": 9,
        "FetchRequest": 12,
        "FetchResponse": 12,
        "ProduceRequest": 9,
        "ProduceResponse": 9,
        "ListOffsetsRequest": 6,
        "ListOffsetsResponse": 6,  # KIP-516 draft v6 is the first flexible one
        "OffsetForLeaderEpochRequest": 4,
        "OffsetForLeaderEpochResponse": 4,  # likewise v4
        "LeaderAndIsrRequest": 4,
        "LeaderAndIsrResponse": 4,
        "StopReplicaRequest": 2,
        "StopReplicaResponse": 2,
    }


def test_protocol_bundled_serves_every_spec(bundled: Protocol, ours: dict[str, MessageSpec]) -> None:
    assert set(bundled.names()) == set(ours)
    for name, spec in ours.items():
        cls = bundled.message(name)
        assert cls.__name__ == name
        assert spec.versions == cls.VALID_VERSIONS
    for api, key in API_KEYS.items():
        assert bundled.message_for(key, "request").__name__ == f"{api}Request"
        assert bundled.message_for(key, "response").__name__ == f"{api}Response"
    assert bundled.api_keys() == sorted(API_KEYS.values())
    assert bundled.versions(0) == range(0, 13)
    assert bundled.versions(2) == range(0, 7)
    assert bundled.versions(5, "response") == range(0, 5)


# -- identical to Apache Kafka 3.9 --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "version"), [(name, v) for name, versions in APACHE_IDENTICAL.items() for v in versions]
)
def test_same_wire_layout_as_apache(reference_dir: Path, ours: dict[str, MessageSpec], name: str, version: int) -> None:
    mine, theirs = wire_layout(ours[name], version), wire_layout(_apache(reference_dir, name), version)
    assert mine == theirs, f"\nours:\n{format_layout(mine)}\napache:\n{format_layout(theirs)}"


def test_produce_response_v12_is_v11(reference_dir: Path, ours: dict[str, MessageSpec]) -> None:
    """KIP-359: 'The Produce response schema will match the previous version'."""
    response = ours["ProduceResponse"]
    assert wire_layout(response, 12) == wire_layout(response, 11)
    assert wire_layout(response, 12) == wire_layout(_apache(reference_dir, "ProduceResponse"), 11)


def test_stop_replica_v0_to_v3_is_seed_000_json(ours: dict[str, MessageSpec]) -> None:
    """KIP-570's own JSON (seed 000) and our spec give the same bytes for every version it defines."""
    seeds = sorted(SEEDS_DIR.glob("000_*.txt"))
    if not seeds:
        pytest.skip(f"seed documents not found in {SEEDS_DIR}")
    text = seeds[0].read_text(encoding="utf-8")
    start = text.index("```") + 3
    seed = parse_spec(text[start : text.index("```", start)], source="seed 000")
    assert list(seed.versions) == [0, 1, 2, 3]
    for version in seed.versions:
        assert wire_layout(ours["StopReplicaRequest"], version) == wire_layout(seed, version), version


# -- diverging from Apache's version of the same number -----------------------------------------


def _without(fields: tuple[WireField, ...], name: str) -> tuple[WireField, ...]:
    """The fields with every field called ``name`` removed, at any depth."""
    return tuple(f._replace(type=_strip_type(f.type, name)) for f in fields if f.name != name)


def _strip_type(t: WireType, name: str) -> WireType:
    if t.element is not None:
        return t._replace(element=_strip_type(t.element, name))
    return t._replace(fields=_without(t.fields, name))


def _drop(layout: WireLayout, name: str) -> WireLayout:
    return layout._replace(fields=_without(layout.fields, name))


@pytest.mark.parametrize(("name", "version"), DIVERGING)
def test_kip_516_draft_versions_differ_from_apache(
    reference_dir: Path, ours: dict[str, MessageSpec], name: str, version: int
) -> None:
    apache = _apache(reference_dir, name)
    assert version in apache.valid_versions  # Apache 3.9 has a version with this number...
    assert wire_layout(ours[name], version) != wire_layout(apache, version)  # ...with other bytes


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("ListOffsetsRequest", 6),
        ("ListOffsetsResponse", 6),
        ("OffsetForLeaderEpochRequest", 4),
        ("OffsetForLeaderEpochResponse", 4),
    ],
)
def test_draft_version_is_apache_plus_topic_id(
    reference_dir: Path, ours: dict[str, MessageSpec], name: str, version: int
) -> None:
    """The whole divergence is the per-topic TopicId: without it, the bytes are Apache's."""
    mine = wire_layout(ours[name], version)
    assert mine.flexible
    assert _drop(mine, "TopicId") == wire_layout(_apache(reference_dir, name), version)
    topic = mine.fields[-1]
    assert topic.name == "Topics" and topic.type.element is not None
    assert [f.name for f in topic.type.element.fields][:2] in (["Name", "TopicId"], ["Topic", "TopicId"])


def test_stop_replica_request_v4_is_v3_plus_topic_id(reference_dir: Path, ours: dict[str, MessageSpec]) -> None:
    mine = wire_layout(ours["StopReplicaRequest"], 4)
    assert _drop(mine, "TopicId") == wire_layout(ours["StopReplicaRequest"], 3)
    apache_v4 = wire_layout(_apache(reference_dir, "StopReplicaRequest"), 4)
    assert [f.name for f in apache_v4.fields] == [  # Apache's v4 is v3 plus KIP-866's flag instead
        "ControllerId",
        "isKRaftController",
        "ControllerEpoch",
        "BrokerEpoch",
        "TopicStates",
    ]


def test_stop_replica_response_v4_groups_by_topic(reference_dir: Path, ours: dict[str, MessageSpec]) -> None:
    mine = wire_layout(ours["StopReplicaResponse"], 4)
    assert [f.name for f in mine.fields] == ["ErrorCode", "Topics"]
    topic = mine.fields[1].type.element
    assert topic is not None
    assert [f.name for f in topic.fields] == ["TopicName", "TopicId", "PartitionErrors"]
    partition = topic.fields[2].type.element
    assert partition is not None
    assert [f.name for f in partition.fields] == ["PartitionIndex", "ErrorCode"]
    apache = _apache(reference_dir, "StopReplicaResponse")
    assert wire_layout(apache, 4) == wire_layout(apache, 3)  # Apache keeps the flat list in v4


# -- golden bytes for the KIP versions (written by hand from the seeds) ------------------------


def check_golden(cls: Any, version: int, obj: Any, expected: bytes) -> None:
    """Our encoder writes exactly ``expected``, and our decoder reads it back to ``obj``."""
    assert obj.encode(version).hex() == expected.hex()
    assert cls.decode(expected, version) == obj


def _cls(bundled: Protocol, name: str) -> Any:
    """A bundled message class; its struct classes are attributes of it (``Message.SomeStruct``)."""
    return bundled.message(name)


def test_produce_request_v12_golden(bundled: Protocol) -> None:
    """KIP-359 (seed 002): PartitionData => Partition CurrentLeaderEpoch MessageSetSize MessageSet."""
    req = _cls(bundled, "ProduceRequest")
    obj = req(
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            req.TopicProduceData(
                name="t1",
                partition_data=[req.PartitionProduceData(index=0, current_leader_epoch=5, records=b"\x01\x02\x03")],
            )
        ],
    )
    head = h(
        "00",  # transactional_id = null (compact nullable string: length 0)
        "ffff",  # acks = -1
        "00007530",  # timeout_ms = 30000
        "02",  # topic_data: compact array of 1
        "03 7431",  # .name = "t1"
        "02",  # .partition_data: compact array of 1
        "00000000",  # ..index = 0
    )
    epoch = h("00000005")  # ..current_leader_epoch = 5 (new in v12, KIP-359)
    tail = h(
        "04 010203",  # ..records: 3 bytes (compact length 3 + 1)
        "00",  # ..tagged fields: none
        "00",  # .tagged fields: none
        "00",  # tagged fields: none
    )
    check_golden(req, 12, obj, head + epoch + tail)
    # v11 is the same without the epoch; the field is ignorable, so writing v11 drops it and
    # reading v11 gives the "no epoch, skip the check" default.
    assert obj.encode(11) == head + tail
    assert req.decode(head + tail, 11).topic_data[0].partition_data[0].current_leader_epoch == -1


def test_produce_response_v12_golden(bundled: Protocol) -> None:
    """KIP-359: the v12 response has v11's layout; a fenced write reports FENCED_LEADER_EPOCH (74)."""
    resp = _cls(bundled, "ProduceResponse")
    obj = resp(
        throttle_time_ms=0,
        responses=[
            resp.TopicProduceResponse(
                name="t1",
                partition_responses=[
                    resp.PartitionProduceResponse(
                        index=0,
                        error_code=74,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=0,
                        current_leader=resp.LeaderIdAndEpoch(leader_id=2, leader_epoch=6),
                    )
                ],
            )
        ],
    )
    expected = h(
        "02",  # responses: compact array of 1
        "03 7431",  # .name = "t1"
        "02",  # .partition_responses: compact array of 1
        "00000000",  # ..index = 0
        "004a",  # ..error_code = 74 FENCED_LEADER_EPOCH
        "ffffffffffffffff",  # ..base_offset = -1
        "ffffffffffffffff",  # ..log_append_time_ms = -1
        "0000000000000000",  # ..log_start_offset = 0
        "01",  # ..record_errors: empty compact array
        "00",  # ..error_message = null
        "01",  # ..tagged fields: 1
        "00 09",  # ...tag 0 (current_leader), 9 bytes
        "00000002 00000006 00",  # ...leader_id = 2, leader_epoch = 6, no tags
        "00",  # .tagged fields: none
        "00000000",  # throttle_time_ms = 0
        "00",  # tagged fields: none (node_endpoints empty)
    )
    check_golden(resp, 12, obj, expected)
    assert obj.encode(11) == expected


def test_list_offsets_request_v6_golden(bundled: Protocol) -> None:
    """KIP-516 draft (seed 004): ListOffset Request (Version: 6), first flexible, topic_id after topic."""
    req = _cls(bundled, "ListOffsetsRequest")
    obj = req(
        replica_id=-1,
        isolation_level=1,
        topics=[
            req.ListOffsetsTopic(
                name="orders",
                topic_id=TOPIC_ID,
                partitions=[req.ListOffsetsPartition(partition_index=3, current_leader_epoch=7, timestamp=-1)],
            )
        ],
    )
    expected = h(
        "ffffffff",  # replica_id = -1
        "01",  # isolation_level = 1 (READ_COMMITTED)
        "02",  # topics: compact array of 1
        "07 6f7264657273",  # .topic = "orders"
        TOPIC_ID_HEX,  # .topic_id (KIP-516 draft)
        "02",  # .partitions: compact array of 1
        "00000003",  # ..partition = 3
        "00000007",  # ..current_leader_epoch = 7
        "ffffffffffffffff",  # ..timestamp = -1 (latest)
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "00",  # tagged fields
    )
    check_golden(req, 6, obj, expected)


def test_list_offsets_response_v6_golden(bundled: Protocol) -> None:
    resp = _cls(bundled, "ListOffsetsResponse")
    obj = resp(
        throttle_time_ms=0,
        topics=[
            resp.ListOffsetsTopicResponse(
                name="orders",
                topic_id=TOPIC_ID,
                partitions=[
                    resp.ListOffsetsPartitionResponse(
                        partition_index=3, error_code=0, timestamp=-1, offset=42, leader_epoch=7
                    )
                ],
            )
        ],
    )
    expected = h(
        "00000000",  # throttle_time_ms = 0
        "02",  # responses: compact array of 1
        "07 6f7264657273",  # .topic = "orders"
        TOPIC_ID_HEX,  # .topic_id (KIP-516 draft)
        "02",  # .partition_responses: compact array of 1
        "00000003",  # ..partition = 3
        "0000",  # ..error_code = 0
        "ffffffffffffffff",  # ..timestamp = -1
        "000000000000002a",  # ..offset = 42
        "00000007",  # ..leader_epoch = 7
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "00",  # tagged fields
    )
    check_golden(resp, 6, obj, expected)


def test_offset_for_leader_epoch_request_v4_golden(bundled: Protocol) -> None:
    """KIP-516 draft (seed 004): OffsetForLeaderEpoch Request (Version: 4)."""
    req = _cls(bundled, "OffsetForLeaderEpochRequest")
    obj = req(
        replica_id=1,
        topics=[
            req.OffsetForLeaderTopic(
                topic="orders",
                topic_id=TOPIC_ID,
                partitions=[req.OffsetForLeaderPartition(partition=3, current_leader_epoch=7, leader_epoch=5)],
            )
        ],
    )
    expected = h(
        "00000001",  # replica_id = 1 (a follower)
        "02",  # topics: compact array of 1
        "07 6f7264657273",  # .topic = "orders"
        TOPIC_ID_HEX,  # .topic_id (KIP-516 draft)
        "02",  # .partitions: compact array of 1
        "00000003",  # ..partition = 3
        "00000007",  # ..current_leader_epoch = 7
        "00000005",  # ..leader_epoch = 5
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "00",  # tagged fields
    )
    check_golden(req, 4, obj, expected)


def test_offset_for_leader_epoch_response_v4_golden(bundled: Protocol) -> None:
    resp = _cls(bundled, "OffsetForLeaderEpochResponse")
    obj = resp(
        throttle_time_ms=0,
        topics=[
            resp.OffsetForLeaderTopicResult(
                topic="orders",
                topic_id=TOPIC_ID,
                partitions=[resp.EpochEndOffset(error_code=0, partition=3, leader_epoch=5, end_offset=100)],
            )
        ],
    )
    expected = h(
        "00000000",  # throttle_time_ms = 0
        "02",  # topics: compact array of 1
        "07 6f7264657273",  # .topic = "orders"
        TOPIC_ID_HEX,  # .topic_id (KIP-516 draft)
        "02",  # .partitions: compact array of 1
        "0000",  # ..error_code = 0
        "00000003",  # ..partition = 3
        "00000005",  # ..leader_epoch = 5
        "0000000000000064",  # ..end_offset = 100
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "00",  # tagged fields
    )
    check_golden(resp, 4, obj, expected)


def test_leader_and_isr_request_v5_golden(bundled: Protocol) -> None:
    """KIP-516 (seed 004): v5 adds Type (FULL = 2 replaces KIP-550's ContainsAllReplicas) and TopicId."""
    req = _cls(bundled, "LeaderAndIsrRequest")
    obj = req(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=100,
        type=2,
        topic_states=[
            req.LeaderAndIsrTopicState(
                topic_name="orders",
                topic_id=TOPIC_ID,
                partition_states=[
                    req.LeaderAndIsrPartitionState(
                        partition_index=0,
                        controller_epoch=3,
                        leader=1,
                        leader_epoch=7,
                        isr=[1, 2],
                        partition_epoch=9,
                        replicas=[1, 2],
                    )
                ],
            )
        ],
        live_leaders=[req.LeaderAndIsrLiveLeader(broker_id=1, host_name="b1", port=9092)],
    )
    expected = h(
        "00000001",  # controller_id = 1
        "00000003",  # controller_epoch = 3
        "0000000000000064",  # broker_epoch = 100
        "02",  # type = 2 FULL (KIP-516): every replica the broker hosts is listed
        "02",  # topic_states: compact array of 1
        "07 6f7264657273",  # .topic_name = "orders"
        TOPIC_ID_HEX,  # .topic_id (KIP-516)
        "02",  # .partition_states: compact array of 1
        "00000000",  # ..partition_index = 0
        "00000003",  # ..controller_epoch = 3
        "00000001",  # ..leader = 1
        "00000007",  # ..leader_epoch = 7
        "03 00000001 00000002",  # ..isr = [1, 2]
        "00000009",  # ..partition_epoch = 9
        "03 00000001 00000002",  # ..replicas = [1, 2]
        "01",  # ..adding_replicas = []
        "01",  # ..removing_replicas = []
        "00",  # ..is_new = false
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "02",  # live_leaders: compact array of 1
        "00000001",  # .broker_id = 1
        "03 6231",  # .host_name = "b1"
        "00002384",  # .port = 9092
        "00",  # .tagged fields
        "00",  # tagged fields
    )
    check_golden(req, 5, obj, expected)


def _stop_replica_v3_body(topic_id_hex: str) -> bytes:
    return h(
        "00000001",  # controller_id = 1
        "00000003",  # controller_epoch = 3
        "0000000000000064",  # broker_epoch = 100 (no delete_partitions from v3 on)
        "02",  # topic_states: compact array of 1
        "07 6f7264657273",  # .topic_name = "orders"
        topic_id_hex,  # .topic_id (v4 only, KIP-516 draft)
        "03",  # .partition_states: compact array of 2
        "00000000",  # ..partition_index = 0
        "00000007",  # ..leader_epoch = 7
        "00",  # ..delete_partition = false
        "00",  # ..tagged fields
        "00000001",  # ..partition_index = 1
        "fffffffe",  # ..leader_epoch = -2 (KIP-570: topic deletion, overrides any epoch)
        "01",  # ..delete_partition = true
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "00",  # tagged fields
    )


def _stop_replica_request(bundled: Protocol, topic_id: uuid.UUID) -> tuple[Any, Any]:
    req = _cls(bundled, "StopReplicaRequest")
    state = req.StopReplicaPartitionState
    obj = req(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=100,
        topic_states=[
            req.StopReplicaTopicState(
                topic_name="orders",
                topic_id=topic_id,
                partition_states=[
                    state(partition_index=0, leader_epoch=7, delete_partition=False),
                    state(partition_index=1, leader_epoch=-2, delete_partition=True),
                ],
            )
        ],
    )
    return req, obj


def test_stop_replica_request_v3_golden(bundled: Protocol) -> None:
    """KIP-570 (seed 000): per-partition LeaderEpoch and DeletePartition, grouped by topic."""
    req, obj = _stop_replica_request(bundled, uuid.UUID(int=0))
    check_golden(req, 3, obj, _stop_replica_v3_body(""))
    state = _cls(bundled, "StopReplicaRequest").StopReplicaPartitionState
    assert state().leader_epoch == -1  # seed 000: "default": "-1", the "no epoch" sentinel


def test_stop_replica_request_v4_golden(bundled: Protocol) -> None:
    """KIP-516 draft (seed 004): topic_states => topic topic_id [partition_states]."""
    req, obj = _stop_replica_request(bundled, TOPIC_ID)
    check_golden(req, 4, obj, _stop_replica_v3_body(TOPIC_ID_HEX))
    # The topic id is ignorable: a v3 request simply leaves it out.
    assert obj.encode(3) == _stop_replica_v3_body("")


def test_stop_replica_response_v4_golden(bundled: Protocol) -> None:
    """KIP-516 draft (seed 004): error_code [topics => topic topic_id [partitions => partition error_code]]."""
    resp = _cls(bundled, "StopReplicaResponse")
    err = resp.StopReplicaPartitionError
    obj = resp(
        error_code=0,
        topics=[
            resp.StopReplicaTopicError(
                topic_name="orders",
                topic_id=TOPIC_ID,
                partition_errors=[err(partition_index=0, error_code=0), err(partition_index=1, error_code=74)],
            )
        ],
    )
    expected = h(
        "0000",  # error_code = 0
        "02",  # topics: compact array of 1
        "07 6f7264657273",  # .topic = "orders"
        TOPIC_ID_HEX,  # .topic_id (KIP-516 draft)
        "03",  # .partitions: compact array of 2
        "00000000",  # ..partition = 0
        "0000",  # ..error_code = 0
        "00",  # ..tagged fields
        "00000001",  # ..partition = 1
        "004a",  # ..error_code = 74 FENCED_LEADER_EPOCH (KIP-570)
        "00",  # ..tagged fields
        "00",  # .tagged fields
        "00",  # tagged fields
    )
    check_golden(resp, 4, obj, expected)


def test_request_header_v2_client_id_stays_int16(bundled: Protocol) -> None:
    """The header quirk: ClientId keeps its int16 length even in the flexible header v2."""
    header = bundled.message("RequestHeader")
    obj = header(request_api_key=0, request_api_version=12, correlation_id=7, client_id="ab")
    expected = h(
        "0000",  # request_api_key = 0 (Produce)
        "000c",  # request_api_version = 12
        "00000007",  # correlation_id = 7
        "0002 6162",  # client_id = "ab", int16 length (not compact)
        "00",  # tagged fields
    )
    check_golden(header, 2, obj, expected)


# -- wire_layout itself -------------------------------------------------------------------------

_BASE = """{ "apiKey": 99, "type": "request", "name": "LayoutProbeRequest",
  "validVersions": "0-2", "flexibleVersions": "1+", "fields": [
  %s
  { "name": "Items", "type": "[]Item", "versions": "0+", "fields": [
    { "name": "Id", "type": "int32", "versions": "0+" } ]},
  { "name": "Note", "type": "string", "versions": "0+", "nullableVersions": "2+" },
  { "name": "Extra", "type": "int32", "versions": "1+", "taggedVersions": "1+", "tag": 0, "default": "%s" }
]}"""


def _probe(prefix: str = "", default: str = "16") -> MessageSpec:
    return parse_spec(_BASE % (prefix, default))


def test_wire_layout_ignores_what_never_reaches_the_wire() -> None:
    plain = _probe()
    decorated = parse_spec(
        (_BASE % ("", "0x10"))  # the same default, spelt in hex
        .replace('"versions": "0+" } ]}', '"versions": "0+", "mapKey": true, "about": "x" } ]}')
        .replace('"name": "Note", "type": "string"', '"name": "Note", "type": "string", "ignorable": true')
        .replace('"type": "[]Item"', '"type": "[]OtherName"')
    )
    for v in range(3):
        assert wire_layout(plain, v) == wire_layout(decorated, v)
    assert hash(wire_layout(plain, 1)) == hash(wire_layout(decorated, 1))


def test_wire_layout_sees_what_changes_bytes() -> None:
    plain = _probe()
    layouts = [wire_layout(plain, v) for v in range(3)]
    assert len(set(layouts)) == 3  # v1 adds flexibility and a tag, v2 makes Note nullable
    assert wire_layout(_probe(default="0"), 1) != layouts[1]  # a tagged default decides what is written
    assert wire_layout(_probe('{ "name": "Id0", "type": "int8", "versions": "0+" },'), 0) != layouts[0]
    with pytest.raises(ValueError, match="no version 3"):
        wire_layout(plain, 3)
    note = layouts[2].fields[1]
    assert (note.name, note.nullable, note.compact, note.tag) == ("Note", True, True, None)
    extra = layouts[1].fields[-1]
    assert (extra.tag, extra.default) == (0, 16)

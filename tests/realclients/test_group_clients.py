"""Real clients in a consumer group against the loopback broker's one-node coordinator.

Each client subscribes with a group id, consumes what was produced, commits and leaves; the
broker's offset store then holds the end offsets, and the capture of the whole session
(FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup, ...)
decodes whole with the default profile and no spec directory.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.traffic import api_name, decode_capture

from .broker import JOIN_GROUP, OFFSET_COMMIT, SYNC_GROUP, LoopbackBroker
from .drivers import DRIVERS, PARTITIONS, make_records
from .test_capture_roundtrip import SPARK, spark_rows_without_errors, to_capture

TOPIC, GROUP, COUNT, TIMEOUT = "grouped", "kafka-epochs-group", 12, 20.0


def consume_kafka_python(bootstrap: str) -> int:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6000,
        heartbeat_interval_ms=500,
        fetch_max_wait_ms=100,
        request_timeout_ms=int(TIMEOUT * 1000),
    )
    seen = 0
    try:
        deadline = time.monotonic() + TIMEOUT
        while seen < COUNT and time.monotonic() < deadline:
            seen += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        consumer.commit()
    finally:
        consumer.close()  # sends LeaveGroup
    return seen


def consume_confluent(bootstrap: str) -> int:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 100,
            "log_level": 0,
        }
    )
    seen = 0
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + TIMEOUT
        while seen < COUNT and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen


def consume_aiokafka(bootstrap: str) -> int:
    from aiokafka import AIOKafkaConsumer

    async def run() -> int:
        consumer = AIOKafkaConsumer(
            TOPIC,
            bootstrap_servers=bootstrap,
            group_id=GROUP,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            fetch_max_wait_ms=100,
        )
        await consumer.start()
        seen = 0
        try:
            deadline = time.monotonic() + TIMEOUT
            while seen < COUNT and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=200)
                seen += sum(len(batch) for batch in batches.values())
            await consumer.commit()
        finally:
            await consumer.stop()
        return seen

    return asyncio.run(run())


CONSUMERS: dict[str, tuple[str, Callable[[str], int]]] = {
    "kafka-python": ("kafka", consume_kafka_python),
    "confluent-kafka": ("confluent_kafka", consume_confluent),
    "aiokafka": ("aiokafka", consume_aiokafka),
}


@pytest.mark.parametrize("client", list(CONSUMERS))
def test_consumer_group_session_decodes_whole(client: str, tmp_path: Path) -> None:
    module, consume = CONSUMERS[client]
    pytest.importorskip(module)
    records = make_records([TOPIC], COUNT, null_header_values=False)
    with LoopbackBroker(Protocol.apache(), groups=True) as broker:
        broker.create_topic(TOPIC)
        DRIVERS[client].produce(broker.bootstrap, records, "gzip", acks=1, timeout=TIMEOUT)
        seen = consume(broker.bootstrap)
    assert broker.errors == []
    assert seen == COUNT
    # what the group committed: each partition's end offset (records spread over the partitions)
    ends = {p: len([r for r in records if r.partition == p]) for p in range(PARTITIONS)}
    assert {p: broker.committed.get((GROUP, TOPIC, p)) for p in range(PARTITIONS)} == ends
    for key in (JOIN_GROUP, SYNC_GROUP, OFFSET_COMMIT):
        assert broker.requests(key), f"api key {key} never crossed the wire"
    path = tmp_path / f"{client}-group.pcap"
    to_capture(broker.recordings, path)
    assert spark_rows_without_errors(path) > 0 or not SPARK  # spark-decode reads every frame too
    exchanges = list(decode_capture(path, Protocol.auto()))
    problems = [(api_name(x), x.problem, x.request and x.request.error) for x in exchanges if not x.ok]
    # a consumer's last Fetch may still wait for its answer when the connection closes
    assert all(name == "Fetch" for name, _, _ in problems), problems
    assert {"FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit"} <= {api_name(x) for x in exchanges}


def test_librdkafkas_kip848_consumer_group_protocol_decodes(tmp_path: Path) -> None:
    """librdkafka with group.protocol=consumer speaks KIP-848 (Kafka 4's consumer group protocol):
    ConsumerGroupHeartbeat v1, its member id made by the client (KIP-1082). Every frame it sends
    decodes, with no error, from the catalogue's Kafka 4.0 input; the capture of it too."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from .broker import CONSUMER_GROUP_HEARTBEAT

    auto = Protocol.auto()
    with LoopbackBroker(Protocol.apache(), consumer_groups=True) as broker:
        broker.create_topic(TOPIC)
        consumer = confluent_kafka.Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "kip-848", "group.protocol": "consumer"}
        )
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 20
        while len(broker.requests(CONSUMER_GROUP_HEARTBEAT)) < 3 and time.monotonic() < deadline:
            consumer.poll(0.2)
        consumer.close()
    assert broker.errors == []
    heartbeats = broker.requests(CONSUMER_GROUP_HEARTBEAT)
    assert len(heartbeats) >= 3
    decoded = [auto.decode_request(x.request_frame) for x in heartbeats]
    assert {d.api_version for d in decoded} == {1}
    assert all(d.problem is None and all("unstable" in w for w in d.warnings) for d in decoded)
    first = decoded[0].body
    assert first.group_id == "kip-848" and first.subscribed_topic_names == [TOPIC]
    assert first.member_id and first.member_epoch == 0  # KIP-1082: the client names itself
    path = tmp_path / "kip-848.pcap"
    to_capture(broker.recordings, path)
    exchanges = [x for x in decode_capture(path, auto) if api_name(x) == "ConsumerGroupHeartbeat"]
    assert len(exchanges) >= 3 and all(x.ok for x in exchanges)

"""Record production-shaped captures from real Kafka clients, one pcap per client library.

    .venv/bin/python benchmarks/real_shaped.py [--out DIR] [--only NAME] [--rounds N]

Each of kafka-python, aiokafka, confluent-kafka (librdkafka) and kafkajs (Node, installed from
npm into ``.cache/kafkajs`` on first use) talks to its own loopback "cluster" of eight
:class:`LoopbackBroker` s (``tests/realclients/broker.py``) that share their topics, groups and
offsets: Metadata names all eight and spreads the partition leaders over them, FindCoordinator
spreads the group and transaction coordinators, so clients open connections to several brokers.
Nodes 5 to 8 advertise an older Kafka's maxima (:data:`OLD_BROKER`), so clients pick older
versions on them (and are told, in a v0 answer, that their ApiVersions is too new); odd nodes
take SASL/PLAIN tokens inside SaslAuthenticate, even ones raw after a SaslHandshake v0.

The mix, run by several threads at once: client instances that bootstrap and close; producers in
every codec the client has (some idempotent, some over SASL/PLAIN); consumer groups joining,
consuming, committing and leaving, one member after another; consumers assigned by hand;
transactions (committed and aborted, with offsets sent to the transaction); and the client's admin
client calling everything the broker's ``more_admin`` answers. Every wait is bounded; a step that
fails is counted and printed, and the script ends with status 1 (its capture lacks that step's
traffic: record again).

Writes ``kafka-python.pcap``, ``aiokafka.pcap``, ``confluent-kafka.pcap``, ``kafkajs.pcap`` and
``x8.pcap`` (confluent-kafka's capture eight times over, each copy after the previous one on the
capture's clock and on other client ports) into ``--out`` (``.cache/real-shaped/``), then decodes
each with ``kafka-epochs decode --format jsonl`` and prints its shape and problems.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # `realclients` as a package, as pytest sees it

from realclients.broker import (  # noqa: E402
    API_VERSIONS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    PRODUCE,
    ConnectionRecording,
    LoopbackBroker,
)

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.capture.synth import RecordedConnection, write_capture  # noqa: E402

CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs")
X8_OF, X8_TIMES = "confluent-kafka", 8
NODES = 8
#: Every broker listens on Kafka's port, each on its own loopback address (127.0.0.11 to .18), as
#: the brokers of a real cluster do on their hosts.
KAFKA_PORT = 9092
#: An older Kafka (about 2.3) on nodes 5 to 8.
OLD_BROKER = {API_VERSIONS: 2, PRODUCE: 7, FETCH: 10, METADATA: 7, LIST_OFFSETS: 4, OFFSET_FOR_LEADER_EPOCH: 2}
TOPICS = [f"orders-{i}" for i in range(4)] + ["payments", "clicks", "audit-log", "inventory"]
PARTITIONS = 6
USER, PASSWORD = "alice", "alice-secret"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
STEP_TIMEOUT = 8.0  # seconds, for any one client call
WORKERS = 10
#: Clients that run fewer of their steps at once. kafka-python 3.0.12's clients, many at a time in
#: one process on a 2-core machine, can wait out their timeouts together: two of three recordings
#: with ten at once on a fresh machine had 94 of 108 steps fail (a capture of a few hundred
#: bootstraps and little else), one of two with six had 7; three at a time, none in three.
CLIENT_WORKERS = {"kafka-python": 3}
KAFKAJS_JS = Path(__file__).resolve().parent / "real_shaped_kafkajs.js"

log = logging.getLogger("real_shaped")


# -- the cluster ---------------------------------------------------------------------------------


class Cluster:
    """Eight loopback brokers sharing one state; a context manager that stops them all."""

    def __init__(self, protocol: Protocol, nodes: int = NODES, *, mixed: bool = True) -> None:
        """``mixed``: older versions on the upper half of the nodes, and raw SASL tokens on the even
        ones. kafkajs needs ``mixed=False``: it uses its seed broker's versions for every broker,
        and always sends SaslHandshake v1."""
        self.brokers: list[LoopbackBroker] = []
        for node in range(1, nodes + 1):
            broker = LoopbackBroker(
                protocol,
                node_id=node,
                partitions=PARTITIONS,
                max_versions=OLD_BROKER if mixed and node > nodes // 2 else None,
                max_lifetime_s=900.0,
                fetch_wait_cap_s=0.1,
                cluster_id="real-shaped",
                sasl_users={USER: PASSWORD},
                sasl_authenticate=node % 2 == 1 or not mixed,
                transactions=True,
                more_admin=True,
                cluster=self.brokers[0] if self.brokers else None,
                host=f"127.0.0.{10 + node}",
                port=KAFKA_PORT,
            )
            self.brokers.append(broker.start())
        for topic in TOPICS:
            self.brokers[0].create_topic(topic)

    def bootstrap(self, first: int = 0) -> str:
        """Three of the brokers, as a client's bootstrap list."""
        return ",".join(self.brokers[(first + k) % len(self.brokers)].bootstrap for k in range(3))

    def recordings(self) -> list[ConnectionRecording]:
        return [rec for broker in self.brokers for rec in broker.recordings]

    def errors(self) -> list[str]:
        return [f"node {b.node_id}: {e}" for b in self.brokers for e in b.errors]

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        for broker in self.brokers:
            broker.stop()


@dataclass
class Steps:
    """How many workload steps ran and which failed (a failure is reported, not fatal)."""

    done: int = 0
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as e:  # a client's own error type, whichever it raises
            with self.lock:
                self.failures.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
        finally:
            with self.lock:
                self.done += 1


def run_all(steps: Steps, jobs: Iterable[tuple[str, Callable[[], object]]], workers: int = WORKERS) -> None:
    with ThreadPoolExecutor(workers) as pool:
        for future in [pool.submit(steps.run, name, fn) for name, fn in jobs]:
            future.result()


def payload(n: int, i: int) -> tuple[bytes, bytes, list[tuple[str, bytes]]]:
    key = f"key-{n}-{i}".encode()
    value = f"value {i} of {n}: ".encode() + b"lorem ipsum dolor " * 8
    return key, value, [("trace", f"trace-{n}-{i}".encode() * 4)]


# -- kafka-python --------------------------------------------------------------------------------


def kafka_python_jobs(cluster: Cluster, rounds: int) -> Iterator[tuple[str, Callable[[], object]]]:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
        NewPartitions,
        NewTopic,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    ms = int(STEP_TIMEOUT * 1000)
    common: dict[str, Any] = {"request_timeout_ms": ms, "bootstrap_timeout_ms": ms}

    def sasl(n: int) -> dict[str, Any]:
        if n % 3:
            return {}
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": USER,
            "sasl_plain_password": PASSWORD,
        }

    def bootstrap_only(n: int) -> None:
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap(n), client_id=f"kp-probe-{n}", **common, **sasl(n))
        try:
            consumer.topics()
        finally:
            consumer.close()

    def produce(n: int, codec: str) -> None:
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap(n),
            client_id=f"kp-producer-{n}",
            acks="all" if n % 2 else 1,
            enable_idempotence=n % 4 == 1,
            linger_ms=5,
            batch_size=4096,
            compression_type=None if codec == "none" else codec,
            max_block_ms=ms,
            **common,
            **sasl(n),
        )
        try:
            futures = []
            for i in range(120):
                key, value, headers = payload(n, i)
                futures.append(producer.send(TOPICS[i % 5], key=key, value=value, headers=headers))
                if i % 40 == 39:
                    producer.flush(STEP_TIMEOUT)
            producer.flush(STEP_TIMEOUT)
            for future in futures:
                future.get(STEP_TIMEOUT)
        finally:
            producer.close(timeout=5)

    def group_member(n: int, group: str, seconds: float) -> None:
        consumer = KafkaConsumer(
            *TOPICS[:3],
            bootstrap_servers=cluster.bootstrap(n),
            client_id=f"kp-consumer-{n}",
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=True,
            auto_commit_interval_ms=500,
            session_timeout_ms=10000,
            heartbeat_interval_ms=300,
            fetch_max_wait_ms=100,
            **common,
            **sasl(n),
        )
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                consumer.poll(timeout_ms=200)
            consumer.commit()
        finally:
            consumer.close()

    def assigned(n: int, seconds: float) -> None:
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap(n),
            client_id=f"kp-assigned-{n}",
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            **common,
        )
        try:
            consumer.assign([TopicPartition(t, p) for t in TOPICS[3:6] for p in range(PARTITIONS)])
            consumer.seek_to_beginning()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                consumer.poll(timeout_ms=200)
            consumer.end_offsets([TopicPartition(TOPICS[3], p) for p in range(PARTITIONS)])
        finally:
            consumer.close()

    def transact(n: int) -> None:
        producer = KafkaProducer(
            bootstrap_servers=cluster.bootstrap(n),
            client_id=f"kp-txn-{n}",
            transactional_id=f"kp-txn-{n}",
            compression_type="gzip",
            max_block_ms=ms,
            **common,
        )
        try:
            producer.init_transactions()
            for commit in (True, False):
                producer.begin_transaction()
                for i in range(10):
                    key, value, headers = payload(n, i)
                    producer.send(TOPICS[6], key=key, value=value, headers=headers)
                producer.flush(STEP_TIMEOUT)
                if commit:
                    producer.send_offsets_to_transaction(
                        {TopicPartition(TOPICS[0], 0): _offset_and_metadata(3)}, f"kp-txn-group-{n}"
                    )
                    producer.commit_transaction()
                else:
                    producer.abort_transaction()
        finally:
            producer.close(timeout=5)

    def administer(n: int) -> None:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap(n), client_id=f"kp-admin-{n}", **common, **sasl(n))
        topic = f"kp-admin-{n}"
        resource = ConfigResource(ConfigResourceType.TOPIC, TOPICS[0])
        acl = ACL(
            "User:alice",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL),
        )
        acl_filter = ACLFilter(
            "User:alice",
            "*",
            ACLOperation.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL),
        )
        calls: list[tuple[str, Callable[[], object]]] = [
            ("create_topics", lambda: admin.create_topics([NewTopic(topic, 3, 1)])),
            ("create_partitions", lambda: admin.create_partitions({topic: NewPartitions(5)})),
            ("describe_cluster", admin.describe_cluster),
            ("list_topics", admin.list_topics),
            ("describe_topics", lambda: admin.describe_topics([TOPICS[0]])),
            ("describe_configs", lambda: admin.describe_configs([resource])),
            ("alter_configs", lambda: admin.alter_configs([ConfigResource("TOPIC", TOPICS[0], {"retention.ms": "1"})])),
            ("list_groups", admin.list_groups),
            ("describe_groups", lambda: admin.describe_groups(["kp-group-0-0", "kp-group-0-1"])),
            ("list_group_offsets", lambda: admin.list_group_offsets("kp-group-0-0")),
            ("delete_groups", lambda: admin.delete_groups([f"kp-idle-{n}"])),
            ("create_acls", lambda: admin.create_acls([acl])),
            ("describe_acls", lambda: admin.describe_acls(acl_filter)),
            ("delete_acls", lambda: admin.delete_acls([acl_filter])),
            ("describe_log_dirs", admin.describe_log_dirs),
            ("delete_records", lambda: admin.delete_records({TopicPartition(TOPICS[0], 0): 1})),
            ("elect_leaders", lambda: admin.elect_leaders(0, [TopicPartition(TOPICS[0], 0)])),
            ("list_partition_reassignments", admin.list_partition_reassignments),
            ("describe_producers", lambda: admin.describe_producers([TopicPartition(TOPICS[6], 0)])),
            ("list_transactions", admin.list_transactions),
            ("describe_transactions", lambda: admin.describe_transactions(["kp-txn-0"])),
            ("describe_user_scram_credentials", admin.describe_user_scram_credentials),
            ("delete_topics", lambda: admin.delete_topics([topic])),
        ]
        try:
            for name, call in calls:
                steps.run(f"kafka-python admin {name}", call)
        finally:
            admin.close()

    steps = Steps()  # the admin client's own calls, reported with the rest by the caller
    kafka_python_jobs.admin_steps = steps  # type: ignore[attr-defined]
    yield from mix(rounds, bootstrap_only, produce, group_member, assigned, transact, administer, "kp", CODECS)


def _offset_and_metadata(offset: int) -> Any:
    from kafka.structs import OffsetAndMetadata

    try:
        return OffsetAndMetadata(offset, "", -1)
    except TypeError:
        return OffsetAndMetadata(offset, "")


def mix(
    rounds: int,
    bootstrap_only: Callable[[int], None],
    produce: Callable[[int, str], None],
    group_member: Callable[[int, str, float], None],
    assigned: Callable[[int, float], None],
    transact: Callable[[int], None],
    administer: Callable[[int], None],
    prefix: str,
    codecs: Sequence[str],
) -> Iterator[tuple[str, Callable[[], object]]]:
    """The same shape for every Python client: ``rounds`` x (14 bootstraps, 3 producers per codec,
    3 groups of two members in turn, 2 hand-assigned consumers, a transactional producer, an admin)."""
    n = 0
    for r in range(rounds):
        for _ in range(14):
            n += 1
            yield f"bootstrap {n}", lambda k=n: bootstrap_only(k)
        for codec in codecs:
            for _ in range(3):
                n += 1
                yield f"produce {codec} {n}", lambda k=n, c=codec: produce(k, c)
        for g in range(3):
            n += 1

            # One member at a time: the broker completes every join at once, so a second member
            # joining while the first is in would get no assignment (aiokafka fails on that).
            def members(k: int = n, group: str = f"{prefix}-group-{r}-{g}") -> None:
                group_member(k, group, 2.5)
                group_member(k + 1000, group, 2.0)

            yield f"group {prefix}-group-{r}-{g}", members
        for _ in range(2):
            n += 1
            yield f"assigned {n}", lambda k=n: assigned(k, 2.0)
        n += 1
        yield f"transaction {n}", lambda k=n: transact(k)
        n += 1
        yield f"admin {n}", lambda k=n: administer(k)


# -- aiokafka ------------------------------------------------------------------------------------


def aiokafka_jobs(cluster: Cluster, rounds: int) -> Iterator[tuple[str, Callable[[], object]]]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
    from aiokafka.protocol import admin as wire
    from aiokafka.structs import OffsetAndMetadata

    ms = int(STEP_TIMEOUT * 1000)
    first_groups = ["aio-group-0-0", "aio-group-0-1"]

    def sasl(n: int) -> dict[str, Any]:
        if n % 3:
            return {}
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN",
            "sasl_plain_username": USER,
            "sasl_plain_password": PASSWORD,
        }

    def run(coro_fn: Callable[[], Any], seconds: float = 30.0) -> None:
        asyncio.run(asyncio.wait_for(coro_fn(), seconds))

    def bootstrap_only(n: int) -> None:
        async def go() -> None:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=cluster.bootstrap(n), client_id=f"aio-probe-{n}", request_timeout_ms=ms, **sasl(n)
            )
            await admin.start()
            try:
                await admin.list_topics()
            finally:
                await admin.close()

        run(go)

    def produce(n: int, codec: str) -> None:
        async def go() -> None:
            producer = AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap(n),
                client_id=f"aio-producer-{n}",
                acks="all" if n % 2 else 1,
                enable_idempotence=n % 4 == 1,
                linger_ms=5,
                max_batch_size=4096,
                compression_type=None if codec == "none" else codec,
                request_timeout_ms=ms,
                **sasl(n),
            )
            await producer.start()
            try:
                futures = []
                for i in range(120):
                    key, value, headers = payload(n, i)
                    futures.append(await producer.send(TOPICS[i % 5], key=key, value=value, headers=headers))
                    if i % 40 == 39:
                        await producer.flush()
                await asyncio.gather(*futures)
            finally:
                await producer.stop()

        run(go)

    def group_member(n: int, group: str, seconds: float) -> None:
        async def go() -> None:
            consumer = AIOKafkaConsumer(
                *TOPICS[:3],
                bootstrap_servers=cluster.bootstrap(n),
                client_id=f"aio-consumer-{n}",
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=True,
                auto_commit_interval_ms=500,
                session_timeout_ms=10000,
                heartbeat_interval_ms=300,
                fetch_max_wait_ms=100,
                request_timeout_ms=ms,
                **sasl(n),
            )
            await consumer.start()
            try:
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    await consumer.getmany(timeout_ms=200)
                await consumer.commit()
            finally:
                await consumer.stop()

        run(go)

    def assigned(n: int, seconds: float) -> None:
        async def go() -> None:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=cluster.bootstrap(n),
                client_id=f"aio-assigned-{n}",
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                fetch_max_wait_ms=100,
                request_timeout_ms=ms,
            )
            await consumer.start()
            try:
                partitions = [TopicPartition(t, p) for t in TOPICS[3:6] for p in range(PARTITIONS)]
                consumer.assign(partitions)
                await consumer.seek_to_beginning()
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    await consumer.getmany(timeout_ms=200)
                await consumer.end_offsets(partitions[:PARTITIONS])
            finally:
                await consumer.stop()

        run(go)

    def transact(n: int) -> None:
        async def go() -> None:
            producer = AIOKafkaProducer(
                bootstrap_servers=cluster.bootstrap(n),
                client_id=f"aio-txn-{n}",
                transactional_id=f"aio-txn-{n}",
                compression_type="gzip",
                request_timeout_ms=ms,
            )
            await producer.start()
            try:
                for commit in (True, False):
                    await producer.begin_transaction()
                    for i in range(10):
                        key, value, headers = payload(n, i)
                        await producer.send(TOPICS[6], key=key, value=value, headers=headers)
                    await producer.flush()
                    if commit:
                        await producer.send_offsets_to_transaction(
                            {TopicPartition(TOPICS[0], 0): OffsetAndMetadata(3, "")}, f"aio-txn-group-{n}"
                        )
                        await producer.commit_transaction()
                    else:
                        await producer.abort_transaction()
            finally:
                await producer.stop()

        run(go)

    def administer(n: int) -> None:
        async def go() -> None:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=cluster.bootstrap(n), client_id=f"aio-admin-{n}", request_timeout_ms=ms, **sasl(n)
            )
            await admin.start()
            topic = f"aio-admin-{n}"
            acl = (2, topic, 3, "User:alice", "*", 3, 3)  # topic, literal, read, allow

            def raw(request: Any) -> Callable[[], Any]:
                return lambda: admin._send_request(request)

            calls: list[tuple[str, Callable[[], Any]]] = [
                ("create_topics", lambda: admin.create_topics([NewTopic(topic, 3, 1)])),
                ("create_partitions", lambda: admin.create_partitions({topic: NewPartitions(5)})),
                ("describe_cluster", admin.describe_cluster),
                ("describe_topics", lambda: admin.describe_topics([TOPICS[0]])),
                (
                    "describe_configs",
                    lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPICS[0])]),
                ),
                (
                    "alter_configs",
                    lambda: admin.alter_configs(
                        [ConfigResource(ConfigResourceType.TOPIC, TOPICS[0], {"retention.ms": "1"})]
                    ),
                ),
                ("list_consumer_groups", admin.list_consumer_groups),
                ("describe_consumer_groups", lambda: admin.describe_consumer_groups(first_groups)),
                ("list_consumer_group_offsets", lambda: admin.list_consumer_group_offsets("aio-group-0-0")),
                ("delete_records", lambda: admin.delete_records({TopicPartition(TOPICS[0], 0): RecordsToDelete(1)})),
                ("DeleteGroups", raw(wire.DeleteGroupsRequest([f"aio-idle-{n}"]))),
                ("CreateAcls", raw(wire.CreateAclsRequest(*acl))),
                ("DescribeAcls", raw(wire.DescribeAclsRequest(*acl))),
                ("DeleteAcls", raw(wire.DeleteAclsRequest(*acl))),
                ("DescribeClientQuotas", raw(wire.DescribeClientQuotasRequest([("client-id", 1, "")], False))),
                ("ListPartitionReassignments", raw(wire.ListPartitionReassignmentsRequest(ms, [], {}))),
                ("delete_topics", lambda: admin.delete_topics([topic])),
            ]
            try:
                for name, call in calls:
                    try:
                        await asyncio.wait_for(call(), STEP_TIMEOUT)
                    except Exception as e:
                        steps.failures.append(f"aiokafka admin {name}: {type(e).__name__}: {str(e)[:200]}")
            finally:
                await admin.close()

        run(go, 120.0)

    steps = Steps()
    aiokafka_jobs.admin_steps = steps  # type: ignore[attr-defined]
    yield from mix(rounds, bootstrap_only, produce, group_member, assigned, transact, administer, "aio", CODECS)


# -- confluent-kafka (librdkafka) ----------------------------------------------------------------


def confluent_jobs(cluster: Cluster, rounds: int) -> Iterator[tuple[str, Callable[[], object]]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    quiet = logging.getLogger("librdkafka")
    quiet.setLevel(logging.CRITICAL)

    def conf(n: int, **more: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"bootstrap.servers": cluster.bootstrap(n), "logger": quiet, **more}
        if n % 3 == 0:
            out |= {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": USER,
                "sasl.password": PASSWORD,
            }
        return out

    def bootstrap_only(n: int) -> None:
        producer = Producer(conf(n, **{"client.id": f"rd-probe-{n}"}))
        producer.list_topics(timeout=STEP_TIMEOUT)
        producer.flush(1)

    def produce(n: int, codec: str) -> None:
        failures: list[str] = []
        producer = Producer(
            conf(
                n,
                **{
                    "client.id": f"rd-producer-{n}",
                    "acks": "all" if n % 2 else 1,
                    "enable.idempotence": n % 4 == 1,
                    "linger.ms": 5,
                    "batch.size": 4096,
                    "compression.type": codec,
                    "message.timeout.ms": int(STEP_TIMEOUT * 1000),
                },
            )
        )
        for i in range(120):
            key, value, headers = payload(n, i)
            producer.produce(
                TOPICS[i % 5],
                key=key,
                value=value,
                headers=headers,
                on_delivery=lambda err, msg: failures.append(str(err)) if err else None,
            )
            producer.poll(0)
            if i % 40 == 39:
                producer.flush(STEP_TIMEOUT)
        left = producer.flush(STEP_TIMEOUT)
        if left or failures:
            raise RuntimeError(f"{left} undelivered, {failures[:3]}")

    def group_member(n: int, group: str, seconds: float) -> None:
        consumer = Consumer(
            conf(
                n,
                **{
                    "client.id": f"rd-consumer-{n}",
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": True,
                    "auto.commit.interval.ms": 500,
                    "session.timeout.ms": 10000,
                    "heartbeat.interval.ms": 300,
                    "fetch.wait.max.ms": 100,
                },
            )
        )
        try:
            consumer.subscribe(TOPICS[:3])
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                consumer.poll(0.2)
            with contextlib.suppress(Exception):  # nothing to commit yet is an error here
                consumer.commit(asynchronous=False)
        finally:
            consumer.close()

    def assigned(n: int, seconds: float) -> None:
        consumer = Consumer(
            conf(
                n,
                **{
                    "client.id": f"rd-assigned-{n}",
                    "group.id": f"rd-assigned-{n}",
                    "enable.auto.commit": False,
                    "fetch.wait.max.ms": 100,
                },
            )
        )
        try:
            consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t in TOPICS[3:6] for p in range(PARTITIONS)])
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                consumer.poll(0.2)
            consumer.get_watermark_offsets(TopicPartition(TOPICS[3], 0), timeout=STEP_TIMEOUT)
        finally:
            consumer.close()

    def transact(n: int) -> None:
        producer = Producer(
            conf(1, **{"client.id": f"rd-txn-{n}", "transactional.id": f"rd-txn-{n}", "compression.type": "gzip"})
        )
        producer.init_transactions(STEP_TIMEOUT)
        group = Consumer(conf(1, **{"group.id": f"rd-txn-group-{n}"}))
        try:
            for commit in (True, False):
                producer.begin_transaction()
                for i in range(10):
                    key, value, headers = payload(n, i)
                    producer.produce(TOPICS[6], key=key, value=value, headers=headers)
                producer.flush(STEP_TIMEOUT)
                if commit:
                    producer.send_offsets_to_transaction(
                        [TopicPartition(TOPICS[0], 0, 3)], group.consumer_group_metadata(), STEP_TIMEOUT
                    )
                    producer.commit_transaction(STEP_TIMEOUT)
                else:
                    producer.abort_transaction(STEP_TIMEOUT)
        finally:
            group.close()

    def administer(n: int) -> None:
        admin = AdminClient(conf(n, **{"client.id": f"rd-admin-{n}"}))
        topic = f"rd-admin-{n}"
        acl = AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
        acl_filter = AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        tp = TopicPartition(TOPICS[0], 0)
        upsert = UserScramCredentialUpsertion(
            USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"password", b"salt"
        )
        incremental = ConfigResource(
            ResourceType.TOPIC,
            TOPICS[0],
            incremental_configs=[ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)],
        )
        calls: list[tuple[str, Callable[[], Any]]] = [
            ("create_topics", lambda: admin.create_topics([NewTopic(topic, 3, 1)])),
            ("create_partitions", lambda: admin.create_partitions([NewPartitions(topic, 5)])),
            ("describe_cluster", lambda: admin.describe_cluster(request_timeout=STEP_TIMEOUT)),
            ("describe_configs", lambda: admin.describe_configs([ConfigResource(ResourceType.TOPIC, TOPICS[0])])),
            (
                "alter_configs",
                lambda: admin.alter_configs([ConfigResource(ResourceType.TOPIC, TOPICS[0], {"retention.ms": "1"})]),
            ),
            ("incremental_alter_configs", lambda: admin.incremental_alter_configs([incremental])),
            ("list_consumer_groups", lambda: admin.list_consumer_groups(request_timeout=STEP_TIMEOUT)),
            ("describe_consumer_groups", lambda: admin.describe_consumer_groups(["rd-group-0-0", "rd-group-0-1"])),
            (
                "list_consumer_group_offsets",
                lambda: admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("rd-group-0-0")]),
            ),
            (
                "alter_consumer_group_offsets",
                lambda: admin.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(f"rd-idle-{n}", [TopicPartition(TOPICS[0], 0, 1)])]
                ),
            ),
            ("delete_consumer_groups", lambda: admin.delete_consumer_groups([f"rd-idle-{n}"])),
            ("create_acls", lambda: admin.create_acls([acl])),
            ("describe_acls", lambda: admin.describe_acls(acl_filter)),
            ("delete_acls", lambda: admin.delete_acls([acl_filter])),
            ("list_offsets", lambda: admin.list_offsets({tp: OffsetSpec.latest()})),
            ("delete_records", lambda: admin.delete_records([TopicPartition(TOPICS[0], 0, 1)])),
            ("elect_leaders", lambda: _elect(admin, tp)),
            ("describe_user_scram_credentials", lambda: admin.describe_user_scram_credentials([USER])),
            ("alter_user_scram_credentials", lambda: admin.alter_user_scram_credentials([upsert])),
            ("delete_topics", lambda: admin.delete_topics([topic], operation_timeout=5)),
        ]
        for name, call in calls:
            steps.run(f"confluent-kafka admin {name}", lambda call=call: _wait(call()))

    steps = Steps()
    confluent_jobs.admin_steps = steps  # type: ignore[attr-defined]
    yield from mix(rounds, bootstrap_only, produce, group_member, assigned, transact, administer, "rd", CODECS)


def _elect(admin: Any, tp: Any) -> Any:
    from confluent_kafka import ElectionType

    return admin.elect_leaders(ElectionType.PREFERRED, [tp])


def _wait(result: Any) -> None:
    """An admin call's futures (a dict of them, a list, or one), each waited for, bounded."""
    futures = result.values() if isinstance(result, dict) else result if isinstance(result, list) else [result]
    for future in futures:
        future.result(STEP_TIMEOUT)


# -- kafkajs -------------------------------------------------------------------------------------


def run_kafkajs(cluster: Cluster, rounds: int) -> Steps:
    from realclients.node_clients import ensure_kafkajs

    modules = ensure_kafkajs()
    config = {"brokers": cluster.bootstrap(0).split(","), "topics": TOPICS, "user": USER, "password": PASSWORD}
    env = {**os.environ, "NODE_PATH": str(modules), "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    steps = Steps()
    node = subprocess.Popen(
        ["node", str(KAFKAJS_JS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        stdout, stderr = node.communicate(json.dumps({**config, "rounds": rounds}), timeout=90 * rounds)
    except subprocess.TimeoutExpired:
        node.kill()
        stdout, stderr = node.communicate()
    try:
        result = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        steps.failures.append(f"kafkajs printed no result (exit {node.returncode}): {stderr[-1000:]}")
        return steps
    steps.done = result.get("steps", 0)
    steps.failures.extend(f"kafkajs {f}" for f in result.get("failures", []))
    if not result.get("ok"):
        steps.failures.append(f"kafkajs: {result.get('error')}")
    return steps


# -- recording, writing, decoding ----------------------------------------------------------------

JOBS: dict[str, Callable[[Cluster, int], Iterator[tuple[str, Callable[[], object]]]]] = {
    "kafka-python": kafka_python_jobs,
    "aiokafka": aiokafka_jobs,
    "confluent-kafka": confluent_jobs,
}


def record(client: str, rounds: int) -> tuple[list[RecordedConnection], Steps, list[str], float]:
    """Run ``client``'s mix against a fresh cluster; its connections, steps, broker errors, seconds."""
    start = time.monotonic()
    with Cluster(Protocol.apache(), mixed=client != "kafkajs") as cluster:
        if client == "kafkajs":
            steps = run_kafkajs(cluster, rounds)
        else:
            steps = Steps()
            jobs = JOBS[client]
            run_all(steps, jobs(cluster, rounds), CLIENT_WORKERS.get(client, WORKERS))
            admin_steps: Steps = jobs.admin_steps  # type: ignore[attr-defined]
            steps.done += admin_steps.done
            steps.failures.extend(admin_steps.failures)
        time.sleep(0.5)  # the last answers reach their sockets
    recordings = cluster.recordings()
    connections = [RecordedConnection(r.client_addr, r.broker_addr, list(r.chunks)) for r in recordings if r.chunks]
    return connections, steps, cluster.errors(), time.monotonic() - start


def repeated(connections: Sequence[RecordedConnection], times: int) -> list[RecordedConnection]:
    """``connections`` ``times`` over: each copy starts 1 s after the previous one ends, from other
    client ports (never a port an earlier copy or connection used towards the same broker)."""
    start = min(when for c in connections for when, _, _ in c.chunks)
    end = max(when for c in connections for when, _, _ in c.chunks)
    span = end - start + 1_000_000_000
    used = {(c.client, c.broker) for c in connections}
    out = list(connections)
    for k in range(1, times):
        for conn in connections:
            host, port = conn.client
            candidate = 1024 + (port - 1024 + 997 * k) % 64000
            while ((host, candidate), conn.broker) in used:
                candidate = 1024 + (candidate - 1024 + 1) % 64000
            used.add(((host, candidate), conn.broker))
            chunks = [(when + k * span, side, data) for when, side, data in conn.chunks]
            out.append(RecordedConnection((host, candidate), conn.broker, chunks))
    return out


@dataclass
class Shape:
    name: str
    size: int
    packets: int
    exchanges: int
    connections: int
    apis: int
    problems: int
    summary: str
    problem_kinds: Counter[str]


def decode_shape(name: str, path: Path, packets: int) -> Shape:
    """Decode ``path`` with the installed ``kafka-epochs decode --format jsonl``; count what came out."""
    command = [sys.executable, "-c", "import sys; from kafka_epochs.cli import main; sys.exit(main())"]
    done = subprocess.run(
        [*command, "decode", str(path), "--format", "jsonl"], capture_output=True, text=True, check=False, timeout=900
    )
    exchanges = 0
    clients: set[tuple[str, str]] = set()
    apis: set[int] = set()
    kinds: Counter[str] = Counter()
    for line in done.stdout.splitlines():
        row = json.loads(line)
        exchanges += 1
        clients.add((row.get("client", ""), row.get("broker", "")))
        if isinstance(row.get("api_key"), int):
            apis.add(row["api_key"])
        if row.get("problem") or row.get("kind") not in ("pair", "sasl_token"):
            kinds[f"{row.get('api')} v{row.get('api_version')}: {row.get('problem') or row.get('kind')}"] += 1
    summary = " ".join(done.stderr.split())
    found = re.search(r"(\d+) Kafka connections", summary)
    connections = int(found.group(1)) if found else len(clients)
    return Shape(
        name, path.stat().st_size, packets, exchanges, connections, len(apis), sum(kinds.values()), summary, kinds
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".cache" / "real-shaped")
    parser.add_argument("--only", choices=CLIENTS, action="append", help="record only this client (repeatable)")
    parser.add_argument("--rounds", type=int, default=3, help="times each client's mix runs (default 3)")
    parser.add_argument("--no-decode", action="store_true", help="write the captures, skip decoding them")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    args.out.mkdir(parents=True, exist_ok=True)
    written: list[tuple[str, Path, int]] = []
    short: list[str] = []  # the clients some of whose steps failed
    for client in args.only or CLIENTS:
        connections, steps, errors, seconds = record(client, args.rounds)
        path = args.out / f"{client}.pcap"
        packets = write_capture(path, connections)
        written.append((client, path, packets))
        print(
            f"{client}: recorded {len(connections)} connections in {seconds:.0f} s; "
            f"{steps.done} steps, {len(steps.failures)} failed; broker errors: {len(errors)}",
            flush=True,
        )
        if steps.failures:
            short.append(client)
        for failure in steps.failures[:12]:
            print(f"  step failed: {failure}")
        for error in errors[:12]:
            print(f"  broker: {error}")
        if client == X8_OF:
            x8 = args.out / "x8.pcap"
            written.append(("x8", x8, write_capture(x8, repeated(connections, X8_TIMES))))
    status = 0
    if short:
        # (a failed step's traffic is missing: the capture is smaller and narrower than its mix)
        print(f"\nnot the intended shape: steps failed for {', '.join(short)}; record again", file=sys.stderr)
        status = 1
    if args.no_decode:
        return status
    print(f"\n{'capture':<16}{'MiB':>8}{'packets':>10}{'exchanges':>11}{'conns':>7}{'apis':>6}{'problems':>10}")
    shapes = [decode_shape(name, path, packets) for name, path, packets in written]
    for s in shapes:
        print(
            f"{s.name:<16}{s.size / 2**20:>8.1f}{s.packets:>10}{s.exchanges:>11}{s.connections:>7}{s.apis:>6}"
            f"{s.problems:>10}"
        )
    for s in shapes:
        print(f"\n{s.name}: decode said: {s.summary.split(' per api:')[0]}")
        for kind, count in s.problem_kinds.most_common(10):
            print(f"  {count} x {kind}")
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Drive real Kafka client libraries from PyPI: produce a list of records, consume them back.

Each driver takes the same :class:`Sent` records and returns the same shape from its consumer,
so a test can compare what a client was asked to send with what came back. Producers run with
idempotence off and no retries; consumers assign partitions by hand (no consumer group) and
start from the earliest offset. Every wait is bounded by a timeout, and every client is closed
in a ``finally``.

:func:`record_session` runs one small produce-and-consume session against a fresh
:class:`~.broker.LoopbackBroker` and returns the raw bytes of its connections.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .broker import ConnectionRecording, LoopbackBroker

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
PARTITIONS = 3
LINGER_MS = 20
POLL_S = 0.2
#: After the expected count arrived, one more poll of this long shows any duplicate or extra record.
SETTLE_S = 0.3

Header = tuple[str, bytes | None]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sent:
    """One record as a client is asked to produce it, or as a consumer (or the broker) saw it."""

    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


class CodecUnsupported(Exception):
    """The client cannot produce with this codec here (the reason is the message)."""


def make_records(topics: Sequence[str], count: int, *, null_header_values: bool) -> list[Sent]:
    """``count`` records spread over ``topics`` x ``PARTITIONS``, with keys, values and headers.

    They include a null key, a null value, a record without headers, duplicate header keys, an
    empty header value, a non-ASCII header key, binary bytes and, when the client can send them,
    null header values. Every record is compressible on its own (a long repetitive header), so
    that a client that keeps a batch uncompressed when compression would not shrink it
    (librdkafka does) still compresses every batch.
    """
    records = []
    for i in range(count):
        topic = topics[i % len(topics)]
        partition = (i // len(topics)) % PARTITIONS
        key = None if i == 7 else f"key-{i:03d}".encode()
        value = None if i == 4 else f"value {i}: ".encode() + b"lorem ipsum dolor " * 6 + bytes([i, 0, 255])
        headers: list[Header] = [("trace", b"trace-" * 16 + str(i).encode()), ("dup", b"first"), ("dup", b"second")]
        if i % 3 == 0:
            headers.append(("empty", b""))
        if i % 5 == 2:
            headers.append(("cl\u00e9", b"\x00\xff binary"))
        if null_header_values and i % 4 == 1:
            headers.append(("nothing", None))
        if i == 9:
            headers = []
        records.append(Sent(topic, partition, key, value, tuple(headers)))
    return records


def by_partition(records: Sequence[Sent]) -> dict[tuple[str, int], list[Sent]]:
    """Records grouped by (topic, partition), each group in order: the order Kafka keeps."""
    out: dict[tuple[str, int], list[Sent]] = {}
    for record in records:
        out.setdefault((record.topic, record.partition), []).append(record)
    return out


class Driver:
    """One client library: which codecs it has here, and how it produces and consumes."""

    name = ""
    #: Whether the client's API lets a header have a null value.
    null_header_values = False

    def codecs(self) -> dict[str, str | None]:
        """Each codec, with None when the client supports it here, else why not."""
        raise NotImplementedError

    def produce(
        self, bootstrap: str, records: Sequence[Sent], codec: str, acks: int, timeout: float, idempotent: bool = False
    ) -> None:
        """Send ``records`` with ``codec``; ``idempotent`` turns on the client's idempotent producer
        (InitProducerId, producer ids and sequences in the batches; it needs ``acks=-1``)."""
        raise NotImplementedError

    def consume(self, bootstrap: str, partitions: Sequence[tuple[str, int]], count: int, timeout: float) -> list[Sent]:
        raise NotImplementedError


# -- kafka-python -------------------------------------------------------------------------------


class KafkaPythonDriver(Driver):
    name = "kafka-python"
    null_header_values = False  # its producer refuses headers that are not (str, bytes)

    def codecs(self) -> dict[str, str | None]:
        from kafka import codec

        have = {
            "none": True,
            "gzip": codec.has_gzip(),
            "snappy": codec.has_snappy(),
            "lz4": codec.has_lz4(),
            "zstd": codec.has_zstd(),
        }
        return {name: None if ok else f"kafka-python finds no {name} library here" for name, ok in have.items()}

    def produce(
        self, bootstrap: str, records: Sequence[Sent], codec: str, acks: int, timeout: float, idempotent: bool = False
    ) -> None:
        from kafka import KafkaProducer

        reason = self.codecs().get(codec)
        if reason:
            raise CodecUnsupported(reason)
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id="kafka-epochs-kafka-python",
            acks=acks,
            enable_idempotence=idempotent,
            retries=1 if idempotent else 0,
            linger_ms=LINGER_MS,
            compression_type=None if codec == "none" else codec,
            request_timeout_ms=int(timeout * 1000),
            max_block_ms=int(timeout * 1000),
            bootstrap_timeout_ms=int(timeout * 1000),
        )
        try:
            futures = [
                producer.send(r.topic, key=r.key, value=r.value, partition=r.partition, headers=list(r.headers))
                for r in records
            ]
            producer.flush(timeout)
            for future in futures:
                future.get(timeout)  # raises the send's error, if any
        finally:
            producer.close(timeout=5)

    def consume(self, bootstrap: str, partitions: Sequence[tuple[str, int]], count: int, timeout: float) -> list[Sent]:
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            client_id="kafka-epochs-kafka-python",
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            request_timeout_ms=int(timeout * 1000),
            bootstrap_timeout_ms=int(timeout * 1000),
        )
        got: list[Sent] = []

        def poll(seconds: float) -> None:
            for batch in consumer.poll(timeout_ms=int(seconds * 1000)).values():
                got.extend(Sent(m.topic, m.partition, m.key, m.value, tuple(m.headers or ())) for m in batch)

        try:
            consumer.assign([TopicPartition(t, p) for t, p in partitions])
            consumer.seek_to_beginning()
            _poll_until(poll, got, count, timeout)
        finally:
            consumer.close()
        return got


# -- aiokafka -----------------------------------------------------------------------------------


class AiokafkaDriver(Driver):
    name = "aiokafka"
    null_header_values = True

    def codecs(self) -> dict[str, str | None]:
        from aiokafka import codec

        have = {
            "none": True,
            "gzip": codec.has_gzip(),
            "snappy": codec.has_snappy(),
            "lz4": codec.has_lz4(),
            "zstd": codec.has_zstd(),
        }
        return {name: None if ok else f"aiokafka finds no {name} support (cramjam) here" for name, ok in have.items()}

    def produce(
        self, bootstrap: str, records: Sequence[Sent], codec: str, acks: int, timeout: float, idempotent: bool = False
    ) -> None:
        reason = self.codecs().get(codec)
        if reason:
            raise CodecUnsupported(reason)
        asyncio.run(asyncio.wait_for(self._produce(bootstrap, records, codec, acks, timeout, idempotent), timeout))

    async def _produce(
        self, bootstrap: str, records: Sequence[Sent], codec: str, acks: int, timeout: float, idempotent: bool
    ) -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            client_id="kafka-epochs-aiokafka",
            acks=acks,
            enable_idempotence=idempotent,
            linger_ms=LINGER_MS,
            compression_type=None if codec == "none" else codec,
            request_timeout_ms=int(timeout * 1000),
        )
        await producer.start()
        try:
            futures = [
                await producer.send(r.topic, key=r.key, value=r.value, partition=r.partition, headers=list(r.headers))
                for r in records
            ]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    def consume(self, bootstrap: str, partitions: Sequence[tuple[str, int]], count: int, timeout: float) -> list[Sent]:
        return asyncio.run(asyncio.wait_for(self._consume(bootstrap, partitions, count, timeout), timeout + 5))

    async def _consume(
        self, bootstrap: str, partitions: Sequence[tuple[str, int]], count: int, timeout: float
    ) -> list[Sent]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            client_id="kafka-epochs-aiokafka",
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
            request_timeout_ms=int(timeout * 1000),
        )
        got: list[Sent] = []
        await consumer.start()
        try:
            consumer.assign([TopicPartition(t, p) for t, p in partitions])
            await consumer.seek_to_beginning()
            deadline = time.monotonic() + timeout
            settle = None
            while time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=int(POLL_S * 1000))
                for batch in batches.values():
                    got.extend(Sent(m.topic, m.partition, m.key, m.value, tuple(m.headers or ())) for m in batch)
                if len(got) >= count:
                    settle = settle or time.monotonic() + SETTLE_S
                    if time.monotonic() >= settle:
                        break
        finally:
            await consumer.stop()
        return got


# -- confluent-kafka (librdkafka) ---------------------------------------------------------------


class ConfluentDriver(Driver):
    name = "confluent-kafka"
    null_header_values = True

    def _logger(self) -> logging.Logger:
        return logging.getLogger("librdkafka")

    def codecs(self) -> dict[str, str | None]:
        from confluent_kafka import KafkaException, Producer

        out: dict[str, str | None] = {}
        for name in CODECS:
            try:
                # No bootstrap.servers: librdkafka checks the configuration and connects nowhere.
                Producer({"compression.type": name, "logger": self._logger()}).close()
                out[name] = None
            except KafkaException as e:
                out[name] = f"librdkafka in this wheel refuses compression.type={name}: {e}"
        return out

    def produce(
        self, bootstrap: str, records: Sequence[Sent], codec: str, acks: int, timeout: float, idempotent: bool = False
    ) -> None:
        from confluent_kafka import KafkaException, Producer

        failures: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(f"{msg.topic()}[{msg.partition()}]: {err}")

        try:
            producer = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "client.id": "kafka-epochs-confluent",
                    "acks": acks,
                    "enable.idempotence": idempotent,
                    "retries": 1 if idempotent else 0,
                    "linger.ms": LINGER_MS,
                    "compression.type": codec,
                    "message.timeout.ms": int(timeout * 1000),
                    "logger": self._logger(),
                }
            )
        except KafkaException as e:
            raise CodecUnsupported(str(e)) from e
        try:
            for r in records:
                producer.produce(
                    r.topic,
                    value=r.value,
                    key=r.key,
                    partition=r.partition,
                    headers=list(r.headers),
                    on_delivery=delivered,
                )
                producer.poll(0)
            left = producer.flush(timeout)
            if left or failures:
                raise RuntimeError(f"confluent-kafka: {left} records undelivered; failures: {failures}")
        finally:
            producer.close()

    def consume(self, bootstrap: str, partitions: Sequence[tuple[str, int]], count: int, timeout: float) -> list[Sent]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

        # librdkafka insists on a group.id even for manual assignment; the broker does not
        # advertise FindCoordinator, so the group never finds a coordinator and stays idle.
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": "kafka-epochs-confluent",
                "group.id": "kafka-epochs",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 100,
                "logger": self._logger(),
            }
        )
        got: list[Sent] = []

        def poll(seconds: float) -> None:
            message = consumer.poll(seconds)
            if message is None:
                return
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return
                raise KafkaException(message.error())
            got.append(
                Sent(
                    message.topic(), message.partition(), message.key(), message.value(), tuple(message.headers() or ())
                )
            )

        try:
            consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in partitions])
            _poll_until(poll, got, count, timeout)
        finally:
            consumer.close()
        return got


def _poll_until(poll: Callable[[float], None], got: list[Sent], count: int, timeout: float) -> None:
    """Poll until ``count`` records arrived and a short settle time passed, or ``timeout``."""
    deadline = time.monotonic() + timeout
    settle = None
    while time.monotonic() < deadline:
        poll(POLL_S)
        if len(got) >= count:
            settle = settle or time.monotonic() + SETTLE_S
            if time.monotonic() >= settle:
                return


DRIVERS: dict[str, Driver] = {d.name: d for d in (KafkaPythonDriver(), AiokafkaDriver(), ConfluentDriver())}


def record_session(
    protocol: Any,
    client: str = "kafka-python",
    codec: str = "gzip",
    count: int = 6,
    timeout: float = 20.0,
    max_versions: dict[int, int] | None = None,
) -> list[ConnectionRecording]:
    """One small session, returned as the raw bytes of each connection.

    Starts a :class:`LoopbackBroker` (``protocol`` should be Apache Kafka's, e.g. the
    ``reference_protocol`` fixture's), has ``client`` (a key of :data:`DRIVERS`) produce
    ``count`` records with keys and headers to two topics compressed with ``codec`` and consume
    them back, stops the broker and returns its recordings: client and broker addresses, and
    ``(timestamp_ns, "client" | "broker", bytes)`` chunks in the order they crossed. Raises if
    the client failed, the records did not come back, or the broker met a request it could not
    serve.
    """
    driver = DRIVERS[client]
    topics = ("session-a", "session-b")
    records = make_records(topics, count, null_header_values=driver.null_header_values)
    with LoopbackBroker(protocol, max_versions=max_versions) as broker:
        for topic in topics:
            broker.create_topic(topic)
        driver.produce(broker.bootstrap, records, codec, acks=1, timeout=timeout)
        got = driver.consume(broker.bootstrap, [(t, p) for t in topics for p in range(PARTITIONS)], count, timeout)
    if broker.errors:
        raise RuntimeError(f"the broker could not serve {client}: {broker.errors}")
    if by_partition(got) != by_partition(records):
        raise RuntimeError(f"{client} consumed {len(got)} records, not the {count} it produced")
    return broker.recordings

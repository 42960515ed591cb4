"""kafkajs (Node.js, pure JavaScript) produces to the loopback broker; the codec reads it all back.

kafkajs 2.2.4 is installed by npm into ``.cache/kafkajs`` on first use (see ``node_clients.py``);
without node or npm, or when the install fails, every test here is skipped saying why. Each test
has ``kafkajs/produce.js`` send the same records as the Python clients get (``make_records``),
then checks that the broker stored exactly those records, partition by partition and in order,
and that a pcap of the session decodes completely with the default profile and no spec
directory, its Produce requests carrying the same records, through the library and through
``kafka-epochs decode``.

What kafkajs 2.2.4 puts on the wire against this broker (which advertises Apache's maxima):
ApiVersions v2, Metadata v6, Produce v7, ListOffsets v3 (its admin's fetchTopicOffsets) and,
for the idempotent producer, InitProducerId v1; record batches are always magic 2, compressed
per request as asked (GZIP built in, Snappy through kafkajs-snappy, raw snappy without xerial
framing). Two kafkajs limits shape the records: it cannot send a null header value (2.2.4 calls
``Buffer.byteLength`` on it and throws), and a record's headers are a JavaScript object, so the
values of a repeated header name must be adjacent (``make_records`` keeps them so).

Consuming is not tested: kafkajs's consumer only works as a member of a consumer group
(FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch), and has no manual assignment;
this broker answers FindCoordinator with COORDINATOR_NOT_AVAILABLE. What is read back instead is
each partition's offsets, through kafkajs's admin client (ListOffsets).
"""

from __future__ import annotations

import io
import json
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import main as cli_main
from kafka_epochs.records import Compression, RecordBatch, TimestampType, decode_records
from kafka_epochs.traffic import decode_capture

from .broker import (
    API_VERSIONS,
    DEFAULT_APIS,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    ConnectionRecording,
    LoopbackBroker,
)
from .drivers import PARTITIONS, Sent, by_partition, make_records
from .node_clients import KAFKAJS_CODECS, KafkaJS, ProduceResult, kafkajs_or_skip

COUNT = 24  # 4 records in each of 2 topics x 3 partitions
ROUNDS = 2  # sendBatch calls, so that each partition gets 2 batches and offsets continue across them
TIMEOUT = 10.0  # seconds, for any one kafkajs request
#: The api versions kafkajs 2.2.4 picks from this broker's ApiVersions answer (its own maxima).
KAFKAJS_VERSIONS = {API_VERSIONS: 2, METADATA: 6, PRODUCE: 7, LIST_OFFSETS: 3}
KAFKAJS_IDEMPOTENT_VERSIONS = {API_VERSIONS: 2, METADATA: 6, PRODUCE: 7, INIT_PRODUCER_ID: 1}


@pytest.fixture(scope="module")
def kafkajs() -> KafkaJS:
    return kafkajs_or_skip()


@pytest.fixture(scope="module")
def protocol() -> Protocol:
    return Protocol.apache()


@dataclass
class Session:
    broker: LoopbackBroker
    records: list[Sent]
    result: ProduceResult
    started_ms: int
    ended_ms: int


def run(
    kafkajs: KafkaJS,
    protocol: Protocol,
    label: str,
    *,
    compression: str,
    acks: int,
    precreate: bool = True,
    idempotent: bool = False,
    offsets: bool = True,
    advertise: tuple[int, ...] = DEFAULT_APIS,
) -> Session:
    """kafkajs produces COUNT records to two topics of a fresh broker, which is stopped on return."""
    topics = (f"kafkajs.{label}.a", f"kafkajs.{label}.b")
    records = make_records(topics, COUNT, null_header_values=False)  # kafkajs cannot send null header values
    started_ms = time.time_ns() // 1_000_000
    with LoopbackBroker(protocol, partitions=PARTITIONS, advertise=advertise) as broker:
        if precreate:
            for topic in topics:
                broker.create_topic(topic)
        result = kafkajs.produce(
            broker.bootstrap,
            records,
            compression=compression,
            acks=acks,
            rounds=ROUNDS,
            idempotent=idempotent,
            auto_create=not precreate,
            offsets=offsets,
            timeout=TIMEOUT,
        )
        # acks=0: kafkajs may be gone before the broker has read its last request.
        wait_for_records(broker, len(records), TIMEOUT)
    return Session(broker, records, result, started_ms, time.time_ns() // 1_000_000)


def wait_for_records(broker: LoopbackBroker, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(p.next_offset for t in list(broker.topics.values()) for p in t.partitions) >= count:
            return
        time.sleep(0.02)


# -- what the broker stored ----------------------------------------------------------------------


@dataclass
class Stored:
    records: list[Sent] = field(default_factory=list)
    batches: list[RecordBatch] = field(default_factory=list)


def stored(broker: LoopbackBroker) -> Stored:
    """Every record the broker keeps, decoded from its stored batches, partition by partition;
    checks on the way that offsets run on from 0 without a gap in every partition."""
    out = Stored()
    for name, topic in broker.topics.items():
        for index, partition in enumerate(topic.partitions):
            offset = 0
            for base, raw in zip(partition.base_offsets, partition.batches, strict=True):
                for entry in decode_records(raw, allow_truncated_tail=False):
                    assert isinstance(entry, RecordBatch), f"a legacy message in {name}[{index}]"
                    assert entry.base_offset == base == offset
                    assert [r.offset for r in entry.records] == list(range(offset, offset + len(entry.records)))
                    offset += len(entry.records)
                    out.batches.append(entry)
                    out.records.extend(Sent(name, index, r.key, r.value, tuple(r.headers)) for r in entry.records)
    return out


#: What kafkajs stamps into a batch when not idempotent: no producer id, but epoch 0 and base
#: sequence 0 (its batch encoder's defaults; the Java client writes -1 for all three). Kafka
#: ignores both when the producer id is -1.
NO_PRODUCER = (-1, 0)


def check_stored(session: Session, compression: str, producer: tuple[int, int] = NO_PRODUCER) -> Stored:
    kept = stored(session.broker)
    assert by_partition(kept.records) == by_partition(session.records)
    assert len(kept.records) == len(session.records)
    assert {b.magic for b in kept.batches} == {2}
    assert {b.compression for b in kept.batches} == {Compression[compression.upper()]}
    # one batch per partition per sendBatch call: kafkajs does not split or merge them
    assert len(kept.batches) == ROUNDS * len(by_partition(session.records))
    assert {(b.producer_id, b.producer_epoch) for b in kept.batches} == {producer}
    if producer == NO_PRODUCER:
        assert {b.base_sequence for b in kept.batches} == {0}
    assert not any(b.is_transactional or b.is_control for b in kept.batches)
    # kafkajs stamps create times (Date.now()) from its own clock, this machine's
    for batch in kept.batches:
        assert batch.timestamp_type is TimestampType.CREATE_TIME
        assert all(session.started_ms <= r.timestamp <= session.ended_ms for r in batch.records)
    return kept


def check_offsets_read_back(session: Session) -> None:
    """kafkajs's admin (ListOffsets) sees each partition run from 0 to its record count."""
    counts = Counter((r.topic, r.partition) for r in session.records)
    assert session.result.offsets is not None
    seen = {
        (topic, int(p["partition"])): (int(p["low"]), int(p["high"]))
        for topic, partitions in session.result.offsets.items()
        for p in partitions
    }
    assert seen == {key: (0, count) for key, count in counts.items()}


def versions_used(broker: LoopbackBroker) -> dict[int, int]:
    """The one version kafkajs used of each api (it never mixes versions of one api)."""
    used: dict[int, set[int]] = {}
    for exchange in broker.exchanges:
        used.setdefault(exchange.api_key, set()).add(exchange.api_version)
    assert all(len(v) == 1 for v in used.values()), used
    return {key: versions.pop() for key, versions in used.items()}


# -- the capture ---------------------------------------------------------------------------------


@dataclass
class CaptureCheck:
    exchanges: int = 0
    per_api: Counter[int] = field(default_factory=Counter)
    produced: list[Sent] = field(default_factory=list)
    codecs: set[Compression] = field(default_factory=set)
    acks: set[int] = field(default_factory=set)


def write_pcap(recordings: Sequence[ConnectionRecording], path: Path) -> None:
    # small segments, so that frames cross packet boundaries as they would on a real network
    write_capture(path, [RecordedConnection(r.client_addr, r.broker_addr, list(r.chunks)) for r in recordings], mss=536)


def check_capture(session: Session, path: Path) -> CaptureCheck:
    """The session as a pcap, decoded with the default profile (no spec directory, no ports):
    every exchange decodes, and its Produce requests carry exactly the records sent; then the
    command line on the same file."""
    write_pcap(session.broker.recordings, path)
    out = CaptureCheck()
    for exchange in decode_capture(path, Protocol.auto()):
        assert exchange.ok, (exchange.kind, exchange.problem, exchange.request, exchange.response)
        assert exchange.request is not None and exchange.request.decoded is not None
        out.exchanges += 1
        out.per_api[exchange.request.decoded.api_key] += 1
        if exchange.request.decoded.api_key == PRODUCE:
            body = exchange.request.decoded.body
            out.acks.add(body.acks)
            for topic in body.topic_data:
                for part in topic.partition_data:
                    for entry in decode_records(part.records or b"", allow_truncated_tail=False):
                        assert isinstance(entry, RecordBatch)
                        out.codecs.add(entry.compression)
                        out.produced.extend(
                            Sent(topic.name, part.index, r.key, r.value, tuple(r.headers)) for r in entry.records
                        )
    assert by_partition(out.produced) == by_partition(session.records)
    assert len(out.produced) == len(session.records)
    assert out.exchanges == len(session.broker.exchanges)  # the capture lost none, added none
    assert check_cli(path) == out.exchanges
    return out


def check_cli(path: Path) -> int:
    """``kafka-epochs decode --quiet`` exits 0 (every exchange decoded); how many rows it printed."""
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = cli_main(["decode", str(path), "--quiet"])
    rows = [json.loads(line) for line in printed.getvalue().splitlines()]
    assert code == 0, [r for r in rows if r.get("kind") != "pair"]
    return len(rows)


# -- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", KAFKAJS_CODECS)
def test_kafkajs_produces_every_codec(kafkajs: KafkaJS, protocol: Protocol, compression: str, tmp_path: Path) -> None:
    """acks=1, topics created beforehand. kafkajs 2.2.4 uses ApiVersions v2, Metadata v6,
    Produce v7 and (its admin) ListOffsets v3, and writes magic 2 batches with the codec asked."""
    session = run(kafkajs, protocol, compression, compression=compression, acks=1)
    assert session.result.version == "2.2.4"
    assert session.broker.errors == []
    check_stored(session, compression)
    check_offsets_read_back(session)
    assert versions_used(session.broker) == KAFKAJS_VERSIONS
    # every partition of every round was acknowledged, at the offset where its batch went
    assert sorted((r["topicName"], r["partition"], int(r["baseOffset"])) for r in session.result.results) == sorted(
        (t, p, base)
        for t, topic in session.broker.topics.items()
        for p, partition in enumerate(topic.partitions)
        for base in partition.base_offsets
    )
    assert {r["errorCode"] for r in session.result.results} == {0}
    wire = check_capture(session, tmp_path / f"kafkajs-{compression}.pcap")
    assert wire.codecs == {Compression[compression.upper()]}
    assert wire.acks == {1}
    assert wire.per_api[PRODUCE] == ROUNDS  # one request per sendBatch: a single broker leads everything


def test_kafkajs_acks_all_with_auto_created_topics(kafkajs: KafkaJS, protocol: Protocol, tmp_path: Path) -> None:
    """acks=-1 (kafkajs's default), topics created by kafkajs's own Metadata request."""
    session = run(kafkajs, protocol, "auto", compression="gzip", acks=-1, precreate=False)
    assert session.broker.errors == []
    assert set(session.broker.topics) == {r.topic for r in session.records}
    assert any(
        x.request is not None and x.request.body.allow_auto_topic_creation for x in session.broker.requests(METADATA)
    )
    check_stored(session, "gzip")
    check_offsets_read_back(session)
    assert check_capture(session, tmp_path / "kafkajs-acks-all.pcap").acks == {-1}


def test_kafkajs_acks_zero_gets_no_response(kafkajs: KafkaJS, protocol: Protocol, tmp_path: Path) -> None:
    """acks=0: the broker answers no Produce, kafkajs waits for none, and the capture's Produce
    requests stand alone, yet decode (and count as ok)."""
    session = run(kafkajs, protocol, "acks0", compression="gzip", acks=0, offsets=False)
    assert session.broker.errors == []
    assert session.result.results == []
    produce = session.broker.requests(PRODUCE)
    assert len(produce) == ROUNDS and all(x.response_frame is None for x in produce)
    check_stored(session, "gzip")
    wire = check_capture(session, tmp_path / "kafkajs-acks0.pcap")
    assert wire.acks == {0} and wire.per_api[PRODUCE] == ROUNDS


def test_kafkajs_idempotent_producer(kafkajs: KafkaJS, protocol: Protocol, tmp_path: Path) -> None:
    """With InitProducerId advertised, kafkajs's idempotent producer asks for a producer id
    (InitProducerId v1, no transactional id) and stamps it, with per-partition sequences that
    run on from 0 across its batches, into every batch."""
    session = run(
        kafkajs,
        protocol,
        "idem",
        compression="snappy",
        acks=-1,
        idempotent=True,
        offsets=False,
        advertise=(*DEFAULT_APIS, INIT_PRODUCER_ID),
    )
    assert session.broker.errors == []
    assert versions_used(session.broker) == KAFKAJS_IDEMPOTENT_VERSIONS
    init = session.broker.requests(INIT_PRODUCER_ID)
    assert len(init) == 1 and init[0].request is not None and init[0].request.body.transactional_id is None
    producer = (init[0].response.producer_id, init[0].response.producer_epoch)
    kept = check_stored(session, "snappy", producer=producer)
    next_sequence: dict[tuple[str, int], int] = {}
    for batch, record in zip(kept.batches, _first_records(kept), strict=True):
        key = (record.topic, record.partition)
        assert batch.base_sequence == next_sequence.get(key, 0)
        next_sequence[key] = batch.base_sequence + len(batch.records)
    check_capture(session, tmp_path / "kafkajs-idempotent.pcap")


def _first_records(kept: Stored) -> list[Sent]:
    """The first record of each stored batch, which says the batch's topic and partition."""
    firsts, at = [], 0
    for batch in kept.batches:
        firsts.append(kept.records[at])
        at += len(batch.records)
    return firsts

"""Real client libraries from PyPI against a loopback broker built from this codec.

kafka-python, aiokafka and confluent-kafka (librdkafka) produce records with keys, values and
headers to two topics of three partitions, with every compression codec each supports here,
then consume them back by manual assignment. The tests check that the consumer got exactly
what was sent, and that the Produce requests on the wire, read back from the broker's raw
recordings with this project's decoders, carried exactly those records with that codec.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from kafka_epochs.framing import FrameBuffer
from kafka_epochs.records import Compression

from .broker import (
    API_VERSIONS,
    DEFAULT_APIS,
    FETCH,
    INIT_PRODUCER_ID,
    LIST_OFFSETS,
    METADATA,
    OFFSET_FOR_LEADER_EPOCH,
    PRODUCE,
    UNSUPPORTED_VERSION,
    LoopbackBroker,
)
from .drivers import CODECS, DRIVERS, PARTITIONS, Driver, by_partition, make_records, record_session
from .wire import WireProduce, produced_on_the_wire, replay

COUNT = 24  # records per session: 4 in each of the 6 partitions
TIMEOUT = 15.0  # seconds, for any one produce or consume
MODULES = {"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent-kafka": "confluent_kafka"}


def driver_for(client: str) -> Driver:
    pytest.importorskip(MODULES[client], reason=f"{client} is not installed (pip install -e '.[dev]')")
    return DRIVERS[client]


def client_codecs() -> Iterator[object]:
    for client in DRIVERS:
        for codec in CODECS:
            yield pytest.param(client, codec, id=f"{client}-{codec}")


def topic_names(client: str, label: str) -> tuple[str, str]:
    slug = client.replace("-", "_")
    return f"{slug}.{label}.a", f"{slug}.{label}.b"


def run_session(
    protocol: object,
    driver: Driver,
    codec: str,
    *,
    acks: int = 1,
    label: str | None = None,
    broker_options: dict | None = None,
    precreate: bool = False,
    idempotent: bool = False,
) -> tuple[LoopbackBroker, list, list]:
    """Produce COUNT records with ``driver`` and consume them back; returns the stopped broker,
    the records sent and the records consumed."""
    topics = topic_names(driver.name, label or codec)
    records = make_records(topics, COUNT, null_header_values=driver.null_header_values)
    with LoopbackBroker(protocol, **(broker_options or {})) as broker:
        if precreate:
            for topic in topics:
                broker.create_topic(topic)
        driver.produce(broker.bootstrap, records, codec, acks=acks, timeout=TIMEOUT, idempotent=idempotent)
        got = driver.consume(broker.bootstrap, [(t, p) for t in topics for p in range(PARTITIONS)], COUNT, TIMEOUT)
    return broker, records, got


def check_wire(
    protocol: object, broker: LoopbackBroker, records: list, codec: str, acks: int, producers: set | None = None
) -> WireProduce:
    """The Produce requests in the raw recordings carry exactly ``records`` with ``codec``."""
    wire = produced_on_the_wire(protocol, broker.recordings)
    assert wire.requests > 0
    assert wire.magics == {2}
    assert wire.codecs == {Compression[codec.upper()]}, f"batches were compressed with {wire.codecs}"
    assert wire.acks == {acks}
    assert wire.producers == (producers or {(-1, -1)})
    assert {r.topic for r in wire.records} == {r.topic for r in records}
    assert {(r.topic, r.partition) for r in wire.records} == {(r.topic, r.partition) for r in records}
    assert by_partition(wire.records) == by_partition(records)
    assert len(wire.records) == len(records)

    pairing = replay(protocol, broker.recordings)
    assert pairing.problems == []
    # acks=0 Produce requests are never answered, and Connection knows it; nothing else that a
    # client waited for may be left without an answer, except requests in flight at its close.
    assert all(api_key != PRODUCE for api_key, _, _ in pairing.unanswered), pairing.unanswered
    # Every request is of a version the broker advertised; ApiVersions is the exception Kafka
    # allows: a client may ask at its own newest version and be answered in v0.
    advertised = {(k, v) for k, (low, high) in broker.versions.items() for v in range(low, high + 1)}
    assert {(k, v) for k, v in pairing.used if k != API_VERSIONS} <= advertised
    return wire


@pytest.mark.parametrize(("client", "codec"), list(client_codecs()))
def test_produce_and_consume(reference_protocol, client: str, codec: str) -> None:
    driver = driver_for(client)
    reason = driver.codecs()[codec]
    if reason:
        pytest.skip(reason)
    broker, records, got = run_session(reference_protocol, driver, codec)
    assert broker.errors == []
    # The consumer got exactly what was sent, partition by partition, in order, no more.
    assert by_partition(got) == by_partition(records)
    assert len(got) == len(records)
    check_wire(reference_protocol, broker, records, codec, acks=1)
    # Topics were created by the clients' own Metadata requests (auto-creation).
    assert set(broker.topics) == {r.topic for r in records}


@pytest.mark.parametrize("client", list(DRIVERS))
def test_acks_zero_gets_no_response(reference_protocol, client: str) -> None:
    driver = driver_for(client)
    broker, records, got = run_session(reference_protocol, driver, "gzip", acks=0, label="acks0", precreate=True)
    assert broker.errors == []
    assert by_partition(got) == by_partition(records)
    produce = broker.requests(PRODUCE)
    assert produce and all(x.response is None and x.response_frame is None for x in produce)
    check_wire(reference_protocol, broker, records, "gzip", acks=0)
    # No response frame on the wire answers a Produce.
    for recording in broker.recordings:
        asked = set()
        frames = FrameBuffer()
        frames.feed(recording.stream("client"))
        for frame in frames:
            api_key, _, correlation_id = struct.unpack_from(">hhi", frame, 4)
            if api_key == PRODUCE:
                asked.add(correlation_id)
        answers = FrameBuffer()
        answers.feed(recording.stream("broker"))
        assert not asked & {struct.unpack_from(">i", frame, 4)[0] for frame in answers}


#: An older broker: ApiVersions only up to v2 (newer requests get Kafka's v0 UNSUPPORTED_VERSION
#: answer and the client must retry lower), and Kafka 2.1-era versions of the rest.
OLD_BROKER = {API_VERSIONS: 2, PRODUCE: 7, FETCH: 10, METADATA: 7, LIST_OFFSETS: 4, OFFSET_FOR_LEADER_EPOCH: 2}


@pytest.mark.parametrize("client", list(DRIVERS))
def test_older_broker_versions(reference_protocol, client: str) -> None:
    driver = driver_for(client)
    codec = "zstd" if driver.codecs()["zstd"] is None else "gzip"  # zstd needs Produce v7 and Fetch v10
    broker, records, got = run_session(
        reference_protocol, driver, codec, label="old", broker_options={"max_versions": OLD_BROKER}
    )
    assert broker.errors == []
    assert by_partition(got) == by_partition(records)
    check_wire(reference_protocol, broker, records, codec, acks=1)
    used = replay(reference_protocol, broker.recordings).used
    assert all(version <= OLD_BROKER.get(key, version) for key, version in used if key != API_VERSIONS), used
    # A client that asked for a newer ApiVersions was told so, in v0, and asked again on the same
    # connection at a version the broker has.
    exchanges = broker.requests(API_VERSIONS)
    for n, x in enumerate(exchanges):
        if x.request is None:
            assert x.response_version == 0 and x.response.error_code == UNSUPPORTED_VERSION
            retry = next(y for y in exchanges[n + 1 :] if y.connection == x.connection)
            assert retry.request is not None and retry.request.api_version <= OLD_BROKER[API_VERSIONS]
    if client != "aiokafka":  # aiokafka asks in v0 anyway
        assert any(x.request is None for x in exchanges)


@pytest.mark.parametrize("client", list(DRIVERS))
def test_idempotent_producer(reference_protocol, client: str) -> None:
    """With InitProducerId advertised, each client's idempotent producer gets a producer id and
    stamps it, with per-partition sequences from 0, into every batch."""
    driver = driver_for(client)
    broker, records, got = run_session(
        reference_protocol,
        driver,
        "snappy",
        acks=-1,
        label="idem",
        broker_options={"advertise": (*DEFAULT_APIS, INIT_PRODUCER_ID)},
        idempotent=True,
    )
    assert broker.errors == []
    assert by_partition(got) == by_partition(records)
    init = broker.requests(INIT_PRODUCER_ID)
    assert len(init) == 1 and init[0].request.body.transactional_id is None
    producer = (init[0].response.producer_id, init[0].response.producer_epoch)
    wire = check_wire(reference_protocol, broker, records, "snappy", acks=-1, producers={producer})
    for key, sequences in wire.sequences.items():
        expected = 0
        for sequence, count in zip(sequences, _batch_sizes(reference_protocol, broker, key), strict=True):
            assert sequence == expected
            expected += count


def _batch_sizes(protocol: object, broker: LoopbackBroker, key: tuple[str, int]) -> list[int]:
    """Record counts of the batches the broker stored for one partition."""
    from kafka_epochs.records import decode_records

    partition = broker.topics[key[0]].partitions[key[1]]
    return [len(batch.records) for stored in partition.batches for batch in decode_records(stored)]


def test_record_session_returns_both_directions(reference_protocol) -> None:
    driver_for("kafka-python")
    recordings = record_session(reference_protocol, client="kafka-python", codec="gzip", count=6)
    assert recordings
    for recording in recordings:
        assert recording.client_addr[0] == recording.broker_addr[0] == "127.0.0.1"
        times = [t for t, _, _ in recording.chunks]
        assert times == sorted(times)
        assert {d for _, d, _ in recording.chunks} <= {"client", "broker"}
    assert any(d == "broker" for r in recordings for _, d, _ in r.chunks)
    wire = produced_on_the_wire(reference_protocol, recordings)
    assert len(wire.records) == 6 and wire.codecs == {Compression.GZIP}


# -- the broker on its own ----------------------------------------------------------------------


def _exchange(broker: LoopbackBroker, frame: bytes, timeout: float = 5.0) -> bytes:
    """Send one request frame on a fresh connection; the response frame, or b"" on close."""
    with socket.create_connection((broker.host, broker.port), timeout=timeout) as sock:
        sock.sendall(frame)
        frames = FrameBuffer()
        for _ in range(100):
            data = sock.recv(1 << 16)
            if not data:
                return b""
            frames.feed(data)
            response = frames.next_frame()
            if response is not None:
                return response
    raise AssertionError("no response within 100 reads")


def test_broker_answers_a_too_new_api_versions_in_v0(reference_protocol) -> None:
    request = reference_protocol.message("ApiVersionsRequest")(client_software_name="t", client_software_version="1")
    frame = bytearray(reference_protocol.encode_request(request, 3, correlation_id=11, client_id="t"))
    struct.pack_into(">h", frame, 6, 9)  # claim a version from the future
    with LoopbackBroker(reference_protocol) as broker:
        response = _exchange(broker, bytes(frame))
    decoded = reference_protocol.decode_response(response, API_VERSIONS, 0)
    assert decoded.correlation_id == 11
    assert decoded.body.error_code == UNSUPPORTED_VERSION
    assert {k.api_key: k.max_version for k in decoded.body.api_keys}[PRODUCE] == 11
    assert broker.errors == []


def test_broker_closes_on_an_unknown_api(reference_protocol) -> None:
    request = reference_protocol.message("DescribeClusterRequest")()
    frame = reference_protocol.encode_request(request, 0, correlation_id=5, client_id="t")
    with LoopbackBroker(reference_protocol) as broker:
        assert _exchange(broker, frame) == b""
    assert len(broker.errors) == 1 and "api key 60" in broker.errors[0]
    assert broker.recordings[0].stream("client") == frame
    assert broker.recordings[0].stream("broker") == b""


def test_broker_serves_produce_and_fetch_with_offsets(reference_protocol) -> None:
    """Offsets are stamped into stored batches, and Fetch from the middle returns the batch holding it."""
    from kafka_epochs.records import Record, RecordBatch, decode_records, encode_records

    proto = reference_protocol
    produce = proto.message("ProduceRequest")
    batch = RecordBatch(records=[Record(offset_delta=i, value=b"v%d" % i) for i in range(3)], last_offset_delta=2)
    data = encode_records([batch])
    body = produce(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            produce.TopicProduceData(name="t", partition_data=[produce.PartitionProduceData(index=1, records=data)])
        ],
    )
    fetch = proto.message("FetchRequest")
    fetch_body = fetch(
        replica_id=-1,
        max_wait_ms=10,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            fetch.FetchTopic(
                topic="t", partitions=[fetch.FetchPartition(partition=1, fetch_offset=4, partition_max_bytes=1 << 20)]
            )
        ],
    )
    with LoopbackBroker(proto) as broker:
        for n in range(2):
            answer = proto.decode_response(_exchange(broker, proto.encode_request(body, 9, n)), PRODUCE, 9)
            assert answer.body.responses[0].partition_responses[0].base_offset == 3 * n
        answer = proto.decode_response(_exchange(broker, proto.encode_request(fetch_body, 12, 7)), FETCH, 12)
    partition = answer.body.responses[0].partitions[0]
    assert (partition.error_code, partition.high_watermark) == (0, 6)
    batches = decode_records(partition.records)
    assert [b.base_offset for b in batches] == [3]
    assert [r.offset for r in batches[0].records] == [3, 4, 5]
    assert batches[0].partition_leader_epoch == broker.leader_epoch
    assert broker.errors == []

"""Synthetic Kafka traffic for the Spark I/O tests: an epoch story, as captures and as frame tables.

The story (one topic, ``orders``, two partitions) has everything the audit looks for: Metadata v12
responses and LeaderAndIsr v5/v7 requests that set leader epochs, Produce v12 and Fetch/ListOffsets
requests naming older and newer epochs than the leader's, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
and STALE_CONTROLLER_EPOCH responses, and StopReplica v3/v4 with a stale, an equal and a deleting
epoch. Shared by the Spark tests (and any other that wants the story).
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

from kafka_epochs import Protocol
from kafka_epochs.capture.files.writer import write_pcap
from kafka_epochs.capture.synth import LINKTYPE_ETHERNET, RecordedConnection, connection_packets, write_capture
from kafka_epochs.records import Record, encode_batch

P = Protocol.bundled()
T0 = 1_700_000_000_000_000_000
MS = 1_000_000
ORDERS_ID = uuid.UUID("465ac677-6e70-4639-96d2-34e591b169b5")
CLIENT = ("10.0.0.1", 50001)
CONTROLLER = ("10.0.0.20", 40000)
BROKER = ("10.0.0.10", 9092)
FENCED, UNKNOWN, STALE_CONTROLLER = 74, 75, 11


def m(name: str) -> Any:
    return P.message(name)


def metadata_response(epochs: dict[int, int]) -> Any:
    r = m("MetadataResponse")
    return r(
        brokers=[r.MetadataResponseBroker(node_id=1, host="b1", port=9092)],
        controller_id=1,
        topics=[
            r.MetadataResponseTopic(
                name="orders",
                topic_id=ORDERS_ID,
                partitions=[
                    r.MetadataResponsePartition(
                        partition_index=p, leader_id=1, leader_epoch=e, replica_nodes=[1, 2], isr_nodes=[1, 2]
                    )
                    for p, e in sorted(epochs.items())
                ],
            )
        ],
    )


def produce(partition: int, epoch: int, acks: int = -1) -> Any:
    r = m("ProduceRequest")
    batch = encode_batch([Record(key=b"k", value=b"v" * 20)])
    return r(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            r.TopicProduceData(
                name="orders",
                partition_data=[r.PartitionProduceData(index=partition, current_leader_epoch=epoch, records=batch)],
            )
        ],
    )


def produce_response(partition: int, error: int) -> Any:
    r = m("ProduceResponse")
    return r(
        responses=[
            r.TopicProduceResponse(
                name="orders", partition_responses=[r.PartitionProduceResponse(index=partition, error_code=error)]
            )
        ]
    )


def fetch(partition: int, epoch: int) -> Any:
    r = m("FetchRequest")
    return r(
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[
            r.FetchTopic(
                topic="orders",
                topic_id=ORDERS_ID,
                partitions=[
                    r.FetchPartition(
                        partition=partition, current_leader_epoch=epoch, fetch_offset=0, partition_max_bytes=1 << 20
                    )
                ],
            )
        ],
    )


def fetch_response(partition: int, error: int) -> Any:
    r = m("FetchResponse")
    return r(
        responses=[
            r.FetchableTopicResponse(
                topic="orders",
                topic_id=ORDERS_ID,
                partitions=[r.PartitionData(partition_index=partition, error_code=error, high_watermark=0)],
            )
        ]
    )


def list_offsets(partition: int, epoch: int) -> Any:
    r = m("ListOffsetsRequest")
    return r(
        replica_id=-1,
        topics=[
            r.ListOffsetsTopic(
                name="orders",
                partitions=[
                    r.ListOffsetsPartition(partition_index=partition, current_leader_epoch=epoch, timestamp=-1)
                ],
            )
        ],
    )


def list_offsets_response(partition: int, error: int) -> Any:
    r = m("ListOffsetsResponse")
    return r(
        topics=[
            r.ListOffsetsTopicResponse(
                name="orders",
                partitions=[r.ListOffsetsPartitionResponse(partition_index=partition, error_code=error, offset=0)],
            )
        ]
    )


def leader_and_isr(controller_epoch: int, states: dict[int, int], kind: int = 1) -> Any:
    """LeaderAndIsr for ``orders`` partitions (partition -> leader epoch); ``kind`` 1 INCREMENTAL, 2 FULL."""
    r = m("LeaderAndIsrRequest")
    return r(
        controller_id=3,
        controller_epoch=controller_epoch,
        broker_epoch=100,
        type=kind,
        topic_states=[
            r.LeaderAndIsrTopicState(
                topic_name="orders",
                topic_id=ORDERS_ID,
                partition_states=[
                    r.LeaderAndIsrPartitionState(
                        topic_name="orders",
                        partition_index=p,
                        controller_epoch=controller_epoch,
                        leader=1,
                        leader_epoch=e,
                        isr=[1, 2],
                        replicas=[1, 2],
                    )
                    for p, e in sorted(states.items())
                ],
            )
        ],
        live_leaders=[r.LeaderAndIsrLiveLeader(broker_id=1, host_name="b1", port=9092)],
    )


def leader_and_isr_response(error: int, partitions: list[int]) -> Any:
    r = m("LeaderAndIsrResponse")
    return r(
        error_code=error,
        topics=[
            r.LeaderAndIsrTopicError(
                topic_id=ORDERS_ID,
                partition_errors=[
                    r.LeaderAndIsrPartitionError(partition_index=p, error_code=error) for p in partitions
                ],
            )
        ],
    )


def stop_replica(states: dict[int, int], *, delete: bool, topic_id: uuid.UUID | None = None) -> Any:
    r = m("StopReplicaRequest")
    return r(
        controller_id=3,
        controller_epoch=2,
        broker_epoch=100,
        topic_states=[
            r.StopReplicaTopicState(
                topic_name="orders",
                topic_id=topic_id or uuid.UUID(int=0),
                partition_states=[
                    r.StopReplicaPartitionState(partition_index=p, leader_epoch=e, delete_partition=delete)
                    for p, e in sorted(states.items())
                ],
            )
        ],
    )


def stop_replica_response(errors: dict[int, int], topic_id: uuid.UUID | None = None) -> Any:
    r = m("StopReplicaResponse")
    if topic_id is None:  # v3 and older: a flat list
        return r(
            partition_errors=[
                r.StopReplicaPartitionError(topic_name="orders", partition_index=p, error_code=e)
                for p, e in sorted(errors.items())
            ]
        )
    return r(
        topics=[
            r.StopReplicaTopicError(
                topic_name="orders",
                topic_id=topic_id,
                partition_errors=[
                    r.StopReplicaPartitionError(partition_index=p, error_code=e) for p, e in sorted(errors.items())
                ],
            )
        ]
    )


class Script:
    """A connection's frames, written as requests and responses with their times."""

    def __init__(self, client: tuple[str, int], client_id: str) -> None:
        self.conn = RecordedConnection(client, BROKER)
        self.client_id = client_id
        self.correlation = 0

    def request(self, ms: int, body: Any, version: int) -> int:
        self.correlation += 1
        frame = P.encode_request(body, version, correlation_id=self.correlation, client_id=self.client_id)
        self.conn.chunks.append((T0 + ms * MS, "client", frame))
        return self.correlation

    def response(self, ms: int, correlation: int, body: Any, version: int) -> None:
        self.conn.chunks.append((T0 + ms * MS, "broker", P.encode_response(body, version, correlation)))

    def exchange(self, ms: int, request: Any, response: Any, version: int) -> None:
        self.response(ms + 1, self.request(ms, request, version), response, version)


def client_script() -> Script:
    s = Script(CLIENT, "app-1")
    s.exchange(
        0, m("ApiVersionsRequest")(client_software_name="t", client_software_version="1"), m("ApiVersionsResponse")(), 3
    )
    s.exchange(10, m("MetadataRequest")(topics=None), metadata_response({0: 5, 1: 3}), 12)
    s.exchange(20, produce(0, 5), produce_response(0, 0), 12)  # current epoch: fine
    s.exchange(30, produce(0, 4), produce_response(0, FENCED), 12)  # older than 5: fenced
    s.exchange(40, fetch(1, 4), fetch_response(1, UNKNOWN), 12)  # newer than 3: unknown
    s.request(45, produce(1, 3, acks=0), 9)  # acks=0: no answer (and v9 has no epoch)
    s.exchange(70, m("MetadataRequest")(topics=None), metadata_response({0: 7, 1: 3}), 12)
    s.exchange(80, list_offsets(0, 7), list_offsets_response(0, 0), 6)  # caught up with 7
    s.exchange(90, fetch(0, 6), fetch_response(0, FENCED), 12)  # 6 < 7: fenced
    return s


def controller_script() -> Script:
    s = Script(CONTROLLER, "controller-3")
    s.exchange(50, leader_and_isr(2, {0: 7}), leader_and_isr_response(0, [0]), 5)  # epoch 7 for orders-0
    s.exchange(60, stop_replica({1: 2}, delete=True), stop_replica_response({1: FENCED}), 3)  # 2 < 3: fenced
    s.exchange(100, stop_replica({0: 7}, delete=False), stop_replica_response({0: 0}), 3)  # equal: accepted
    s.exchange(110, leader_and_isr(1, {1: 2}), leader_and_isr_response(STALE_CONTROLLER, [1]), 7)  # old controller
    s.exchange(120, stop_replica({0: -2}, delete=True, topic_id=ORDERS_ID), stop_replica_response({0: 0}, ORDERS_ID), 4)
    return s


def sample_connections() -> list[RecordedConnection]:
    return [client_script().conn, controller_script().conn]


def write_sample(path: Path) -> Path:
    """The story as a pcap, with small segments so that frames span packets."""
    write_capture(path, sample_connections(), mss=200)
    return path


def write_damaged(path: Path) -> Path:
    """The client connection with one data packet dropped (a gap) and one packet cut short."""
    packets = connection_packets(client_script().conn, mss=200)
    data = [i for i, (_, frame) in enumerate(packets) if len(frame) > 54 + 100]
    dropped = data[len(data) // 2]
    damaged = [(t, frame[:30] if i == data[1] else frame) for i, (t, frame) in enumerate(packets) if i != dropped]
    write_pcap(path, damaged, LINKTYPE_ETHERNET)
    return path


def frame_table_rows() -> list[dict[str, Any]]:
    """Every frame of the story as a table row: frame bytes, direction, the request's key/version."""
    rows: list[dict[str, Any]] = []
    for conn in sample_connections():
        requests: dict[int, tuple[int, int]] = {}
        for _, side, frame in conn.chunks:
            if side == "client":
                _, key, version, correlation = struct.unpack_from(">ihhi", frame)
                requests[correlation] = (key, version)
                rows.append({"frame": frame, "direction": "request", "key": key, "version": version})
            else:
                key, version = requests[struct.unpack_from(">i", frame, 4)[0]]
                rows.append({"frame": frame, "direction": "response", "key": key, "version": version})
    return rows


# -- captures more than one test module audits ------------------------------------------------


def metadata(epoch: int, cluster_id: str | None, topic_id: uuid.UUID | None = None) -> Any:
    r = m("MetadataResponse")
    return r(
        cluster_id=cluster_id,
        brokers=[r.MetadataResponseBroker(node_id=1, host="10.0.0.10", port=9092)],
        topics=[
            r.MetadataResponseTopic(
                name="orders",
                **({} if topic_id is None else {"topic_id": topic_id}),
                partitions=[r.MetadataResponsePartition(partition_index=0, leader_id=1, leader_epoch=epoch)],
            )
        ],
    )


def cluster_capture(
    path: Path, epoch: int, cluster_id: str | None, *, stale_answer: int = FENCED, topic_id: uuid.UUID | None = None
) -> Path:
    s = Script(("10.0.0.1", 50001), "app")
    s.exchange(0, m("MetadataRequest")(topics=None), metadata(epoch, cluster_id, topic_id), 12)
    s.exchange(10, produce(0, epoch), produce_response(0, 0), 12)  # the current epoch: accepted
    s.exchange(20, produce(0, epoch - 1), produce_response(0, stale_answer), 12)  # one behind
    s.request(30, produce(0, epoch - 1, acks=0), 12)  # one behind, and never answered
    write_capture(path, [s.conn], mss=300)
    return path


UNREADABLE_T0 = 1_800_000_000_000_000_000


def damaged_produce(correlation_id: int) -> bytes:
    """A Produce v12 request whose topic array count says -1 (null, which it may not be)."""
    frame = bytearray(P.encode_request(produce(0, 5), 12, correlation_id=correlation_id, client_id="loader"))
    header_end = 4 + 2 + 2 + 4 + 2 + len(b"loader") + 1  # size, key, version, correlation id, client id, tags
    at = header_end + 1 + 2 + 4  # then a null compact transactional id (1 byte), acks, timeout
    frame[at] = 0  # compact array length 0 means null: not allowed for topic_data
    return bytes(frame)


def write_unreadable(path: Path) -> Path:
    """Three Produce requests whose epochs cannot be read (a null topic array)."""
    chunks = [(UNREADABLE_T0 + n * 1000, "client", damaged_produce(n + 1)) for n in range(3)]
    write_capture(path, [RecordedConnection(("10.7.0.1", 5000), ("10.7.0.2", 9092), chunks)])
    return path

"""Make kafka_epochs/samples/sample.pcap, the small capture the README's main job decodes.

    .venv/bin/python tests/realclients/make_sample.py [OUT]

Three kinds of traffic, so the sample shows what kafka-epochs is for:
- real clients: kafka-python (gzip) and aiokafka (lz4) produce and consume against the loopback
  broker. The broker offers ListOffsets up to v5 and OffsetForLeaderEpoch up to v3, the versions
  the bundled protocol shares with Apache Kafka, so `Protocol.bundled()` decodes every frame;
- a controller (synthetic): LeaderAndIsr v5 (Type FULL) and StopReplica v3, one StopReplica
  carrying a stale leader epoch (KIP-570);
- a KIP-359 producer (synthetic): Produce v12 with a stale CurrentLeaderEpoch.
The synthetic connections' responses come from `kafka_epochs.epochs.ReplicaManager`, the
project's model of a broker, so they carry the errors the KIPs prescribe (FENCED_LEADER_EPOCH).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `realclients` as a package, as pytest sees it

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.capture.synth import RecordedConnection, write_capture  # noqa: E402
from kafka_epochs.epochs import ReplicaManager  # noqa: E402
from kafka_epochs.records import Compression, Record, encode_batch  # noqa: E402
from realclients.drivers import record_session  # noqa: E402

OUT = HERE.parent.parent / "kafka_epochs" / "samples" / "sample.pcap"
LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 2, 23
TOPIC_ID = uuid.UUID("6f1c4b7e-4a1e-4c55-9d1a-2f0c6f7f1a01")
BROKER = ("10.20.0.1", 9092)


def controller_and_producer(start_ns: int) -> list[RecordedConnection]:
    proto = Protocol.bundled()
    lai, stop, produce = (proto.message(n) for n in ("LeaderAndIsrRequest", "StopReplicaRequest", "ProduceRequest"))
    model = ReplicaManager(1, broker_epoch=100, controller_epoch=3)

    def partition_state(index: int, epoch: int) -> object:
        return lai.LeaderAndIsrPartitionState(
            partition_index=index,
            controller_epoch=3,
            leader=1,
            leader_epoch=epoch,
            isr=[1, 2],
            partition_epoch=epoch,
            replicas=[1, 2],
        )

    full = lai(
        controller_id=2,
        controller_epoch=3,
        broker_epoch=100,
        type=2,
        topic_states=[
            lai.LeaderAndIsrTopicState(
                topic_name="orders", topic_id=TOPIC_ID, partition_states=[partition_state(i, 8) for i in range(3)]
            )
        ],
        live_leaders=[lai.LeaderAndIsrLiveLeader(broker_id=1, host_name=BROKER[0], port=BROKER[1])],
    )
    stops = [
        stop(
            controller_id=2,
            controller_epoch=3,
            broker_epoch=100,
            topic_states=[
                stop.StopReplicaTopicState(
                    topic_name="orders",
                    partition_states=[stop.StopReplicaPartitionState(partition_index=0, leader_epoch=6)],
                )
            ],
        ),
        stop(
            controller_id=2,
            controller_epoch=3,
            broker_epoch=100,
            topic_states=[
                stop.StopReplicaTopicState(
                    topic_name="orders",
                    partition_states=[
                        stop.StopReplicaPartitionState(partition_index=2, leader_epoch=9, delete_partition=True)
                    ],
                )
            ],
        ),
    ]
    batch = encode_batch(
        [Record(key=b"order-1", value=b'{"qty": 3}', headers=[("trace", b"abc")])], compression=Compression.GZIP
    )
    fenced_produce = produce(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            produce.TopicProduceData(
                name="orders",
                partition_data=[produce.PartitionProduceData(index=1, current_leader_epoch=6, records=batch)],
            )
        ],
    )

    t = start_ns
    controller = RecordedConnection(("10.20.0.2", 51000), BROKER)
    controller.chunks.append((t, "client", proto.encode_request(full, 5, correlation_id=1, client_id="controller-2")))
    controller.chunks.append(
        (
            t + 2_000_000,
            "broker",
            proto.encode_response(model.handle_leader_and_isr(full, 5, now_ms=t // 1_000_000), 5, correlation_id=1),
        )
    )
    for n, request in enumerate(stops, start=2):
        t += 50_000_000
        controller.chunks.append(
            (t, "client", proto.encode_request(request, 3, correlation_id=n, client_id="controller-2"))
        )
        controller.chunks.append(
            (t + 1_000_000, "broker", proto.encode_response(model.handle_stop_replica(request, 3), 3, correlation_id=n))
        )
    producer = RecordedConnection(("10.20.0.3", 52000), BROKER)
    t += 50_000_000
    producer.chunks.append(
        (t, "client", proto.encode_request(fenced_produce, 12, correlation_id=1, client_id="kip359-producer"))
    )
    producer.chunks.append(
        (t + 1_000_000, "broker", proto.encode_response(model.handle_produce(fenced_produce, 12), 12, correlation_id=1))
    )
    return [controller, producer]


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    reference = Path(__file__).resolve().parents[3] / "shared" / "reference" / "kafka-3.9.0" / "message"
    apache = Protocol.from_specs(reference)  # real clients speak Apache's versions
    caps = {LIST_OFFSETS: 5, OFFSET_FOR_LEADER_EPOCH: 3}
    connections: list[RecordedConnection] = []
    for client, codec in (("kafka-python", "gzip"), ("aiokafka", "lz4")):
        for rec in record_session(apache, client, codec=codec, count=4, max_versions=caps):
            connections.append(RecordedConnection(rec.client_addr, rec.broker_addr, list(rec.chunks)))
    last = max(when for conn in connections for when, _, _ in conn.chunks)
    connections += controller_and_producer(last + 100_000_000)
    out.parent.mkdir(parents=True, exist_ok=True)
    packets = write_capture(out, connections)
    print(f"wrote {out} ({packets} packets, {out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

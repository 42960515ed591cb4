"""Frames per second of `kafka-epochs decode` on a large capture, with `tshark -T json` as the anchor.

    python benchmarks/bench_decode.py [--frames 100000] [--connections 8]

Writes a capture of mixed Kafka traffic (Produce with record batches, Fetch, Metadata,
ListOffsets, OffsetForLeaderEpoch; versions tshark 4.0 dissects, so both tools do full work),
then times both commands over it, output to /dev/null, best of --repeat runs, in one process run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.records import Compression, Record, encode_batch

T0 = 1_700_000_000_000_000_000


def messages() -> list[tuple[object, object, int]]:
    """(request, response, version) samples; each frame pair is reused many times."""
    p = Protocol.bundled()
    produce, produce_resp = p.message("ProduceRequest"), p.message("ProduceResponse")
    fetch, metadata = p.message("FetchRequest"), p.message("MetadataResponse")
    batch = encode_batch(
        [Record(key=b"key-%d" % i, value=b"x" * 200, headers=[("h", b"1")]) for i in range(5)],
        compression=Compression.GZIP,
    )
    topics = [f"topic-{i}" for i in range(4)]
    return [
        (
            produce(
                acks=1,
                timeout_ms=30000,
                topic_data=[
                    produce.TopicProduceData(
                        name=t, partition_data=[produce.PartitionProduceData(index=i, records=batch) for i in range(3)]
                    )
                    for t in topics
                ],
            ),
            produce_resp(
                responses=[
                    produce_resp.TopicProduceResponse(
                        name=t,
                        partition_responses=[
                            produce_resp.PartitionProduceResponse(index=i, base_offset=42) for i in range(3)
                        ],
                    )
                    for t in topics
                ]
            ),
            8,
        ),
        (
            fetch(
                max_wait_ms=500,
                topics=[
                    fetch.FetchTopic(
                        topic=t, partitions=[fetch.FetchPartition(partition=i, fetch_offset=1000) for i in range(3)]
                    )
                    for t in topics
                ],
            ),
            p.message("FetchResponse")(
                responses=[
                    p.message("FetchResponse").FetchableTopicResponse(
                        topic=t,
                        partitions=[
                            p.message("FetchResponse").PartitionData(partition_index=i, records=batch) for i in range(3)
                        ],
                    )
                    for t in topics
                ]
            ),
            11,
        ),
        (
            p.message("MetadataRequest")(topics=None),
            metadata(
                brokers=[metadata.MetadataResponseBroker(node_id=b, host=f"broker-{b}", port=9092) for b in range(3)],
                topics=[
                    metadata.MetadataResponseTopic(
                        name=t,
                        partitions=[
                            metadata.MetadataResponsePartition(
                                partition_index=i,
                                leader_id=i % 3,
                                leader_epoch=5,
                                replica_nodes=[0, 1, 2],
                                isr_nodes=[0, 1, 2],
                            )
                            for i in range(3)
                        ],
                    )
                    for t in topics
                ],
            ),
            9,
        ),
    ]


def write_traffic(path: Path, frames: int, connections: int) -> int:
    proto = Protocol.bundled()
    samples = messages()
    per_connection = frames // (2 * connections)
    recorded = []
    for c in range(connections):
        chunks = []
        for n in range(per_connection):
            request, response, version = samples[n % len(samples)]
            cid = n + 1
            when = T0 + (n * connections + c) * 1000
            chunks.append(
                (
                    when,
                    "client",
                    proto.encode_request(
                        request,
                        version,
                        correlation_id=cid,  # type: ignore[arg-type]
                        client_id="bench",
                    ),
                )
            )
            chunks.append((when + 500, "broker", proto.encode_response(response, version, correlation_id=cid)))  # type: ignore[arg-type]
        recorded.append(RecordedConnection((f"10.0.1.{c + 1}", 40000 + c), ("10.0.0.1", 9092), chunks))
    write_capture(path, recorded)
    return per_connection * connections * 2


def best_time(command: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=3600)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    cli = str(Path(sys.executable).parent / "kafka-epochs")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "traffic.pcap"
        frames = write_traffic(path, args.frames, args.connections)
        print(f"capture: {frames:,} frames, {path.stat().st_size / 1e6:.1f} MB, {args.connections} connections")
        fields = "topics[].partitions[].leader_epoch,topics[].partitions[].current_leader_epoch,topics[].name"
        ways = {
            "kafka-epochs decode (jsonl)": ["--quiet"],
            "kafka-epochs decode --records": ["--quiet", "--records"],
            "kafka-epochs decode --fields (3 paths)": ["--quiet", "--fields", fields],
            "kafka-epochs decode --headers-only": ["--quiet", "--headers-only"],
        }
        times = {name: best_time([cli, "decode", str(path), *options], args.repeat) for name, options in ways.items()}
        tshark = shutil.which("tshark")
        if tshark is not None:
            command = [tshark, "-r", str(path), "-d", "tcp.port==9092,kafka", "-T", "json"]
            times["tshark -T json"] = best_time(command, args.repeat)
        anchor = times.get("tshark -T json")
        for name, seconds in times.items():
            versus = f"{anchor / seconds:6.2f}x tshark" if anchor else ""
            print(f"{name:<40} {seconds:7.2f} s  {frames / seconds:10,.0f} frames/s  {versus}")
        if anchor is None:
            print("tshark not installed: no anchor (apt-get install tshark)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

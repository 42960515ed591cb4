#!/usr/bin/env python
"""One large pcap file: read whole by one task against read in byte ranges by many (``--split-mb``).

Writes a capture of ``--gb`` GiB of busy-broker traffic (``--connections`` clients producing
16-64 KiB batches to one broker, each request cut into 1448-byte segments, a response each),
then reads it with the ``kafka-capture`` pipeline as ``spark-decode`` does, each run a fresh
process: whole (one task: ``split_bytes=0``) on ``local[2]``, and split on ``local[1]``,
``local[2]`` and a standalone cluster of two one-core workers. Every run sums the frames' bytes,
so every frame is made and shipped; the runs' row counts and byte sums are checked equal.

    python benchmarks/bench_split.py [--gb 2] [--connections 64] [--keep PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.records import Record, encode_batch
from kafka_epochs.spark.standalone import StandaloneCluster

T0 = 1_790_000_000 * 1_000_000_000
MSS = 1448
_RECORD = struct.Struct("<IIII")


def _segment(src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int, payload: bytes) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 0x50, 0x18, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 40 + len(payload), 0, 0x4000, 64, 6, 0, src[0], dst[0])
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + tcp + payload


def write_busy_capture(path: Path, size: int, connections: int, seed: int = 7) -> tuple[int, int]:
    """A pcap file of about ``size`` bytes; returns (packets, frames)."""
    proto = Protocol.bundled()
    produce, answer = proto.message("ProduceRequest"), proto.message("ProduceResponse")
    rng = random.Random(seed)
    requests = []
    for kib in (16, 24, 32, 48, 64):
        values = [rng.randbytes(1024) for _ in range(kib)]
        batch = encode_batch([Record(key=None, value=v) for v in values])
        body = produce(
            acks=1,
            timeout_ms=30000,
            topic_data=[
                produce.TopicProduceData(
                    name="events", partition_data=[produce.PartitionProduceData(index=0, records=batch)]
                )
            ],
        )
        requests.append(proto.encode_request(body, 7, correlation_id=0, client_id="bench"))
    reply = answer(
        responses=[
            answer.TopicProduceResponse(
                name="events", partition_responses=[answer.PartitionProduceResponse(index=0, base_offset=1)]
            )
        ]
    )
    response = proto.encode_response(reply, 7, correlation_id=0)
    broker = (bytes([10, 0, 0, 1]), 9092)
    clients = [(bytes([10, 0, 1 + c // 250, 1 + c % 250]), 40000 + c) for c in range(connections)]
    seqs = [[1000 + c * 7919, 5000 + c * 104729, 0] for c in range(connections)]  # client seq, broker seq, cid
    packets = frames = 0
    when = T0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
        written = 24
        while written < size:
            for c in rng.sample(range(connections), connections):
                state = seqs[c]
                state[2] += 1
                frame = bytearray(requests[rng.randrange(len(requests))])
                frame[8:12] = state[2].to_bytes(4, "big")
                out = []
                for i in range(0, len(frame), MSS):
                    piece = bytes(frame[i : i + MSS])
                    out.append(_segment(clients[c], broker, state[0], state[1], piece))
                    state[0] += len(piece)
                answer_bytes = bytearray(response)
                answer_bytes[4:8] = state[2].to_bytes(4, "big")
                out.append(_segment(broker, clients[c], state[1], state[0], bytes(answer_bytes)))
                state[1] += len(answer_bytes)
                for data in out:
                    when += 20_000
                    seconds, nanos = divmod(when, 1_000_000_000)
                    f.write(_RECORD.pack(seconds, nanos, len(data), len(data)))
                    f.write(data)
                    written += 16 + len(data)
                packets += len(out)
                frames += 2
    return packets, frames


READ = """
import json, sys, time
from pyspark.sql import functions as F
from kafka_epochs.spark.job import read_captures, session
path, master, split_mb, conf = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
spark = session(master, quiet=True, conf=conf)
started = time.perf_counter()
df = read_captures(spark, [path], split_bytes=split_mb << 20)
row = df.agg(F.count("*").alias("rows"), F.sum(F.length("frame")).alias("bytes"),
             F.count("capture_error").alias("errors")).collect()[0]
print(json.dumps({"rows": row["rows"], "bytes": row["bytes"], "errors": row["errors"],
                  "seconds": time.perf_counter() - started}))
"""


def run(path: Path, master: str, split_mb: int, conf: dict[str, str] | None = None) -> dict[str, float]:
    started = time.perf_counter()
    command = [sys.executable, "-c", READ, str(path), master, str(split_mb), json.dumps(conf or {})]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{master} split_mb={split_mb} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - started
    print(f"  {master} split_mb={split_mb}: {result}", file=sys.stderr, flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=2.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="write the capture here and keep it (reused when present)")
    parser.add_argument("--skip-cluster", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        path = args.keep or root / "busy.pcap"
        if not path.exists():
            started = time.perf_counter()
            packets, frames = write_busy_capture(path, int(args.gb * (1 << 30)), args.connections)
            print(
                f"wrote {path}: {os.path.getsize(path) / (1 << 30):.2f} GiB, {packets:,} packets, "
                f"{frames:,} frames in {time.perf_counter() - started:.0f} s"
            )
        size = os.path.getsize(path)
        runs: list[tuple[str, int, dict[str, float]]] = []
        runs.append(("whole, one task, local[2]", 1, run(path, "local[2]", 0)))
        runs.append(("split, local[1]", 1, run(path, "local[1]", 64)))
        runs.append(("split, local[2]", 2, run(path, "local[2]", 64)))
        if not args.skip_cluster:
            conf = {
                "spark.pyspark.python": sys.executable,
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.executor.memory": "2g",
            }
            with StandaloneCluster(workers=2, cores=1, memory="3g", root=root / "cluster") as cluster:
                runs.append(("split, standalone 2 x 1 core", 2, run(path, cluster.url, 64, conf)))
    first = runs[0][2]
    for _, _, result in runs:
        assert (result["rows"], result["bytes"]) == (first["rows"], first["bytes"]), (result, first)
    print(f"{size / (1 << 30):.2f} GiB, {first['rows']:,.0f} rows ({first['errors']:.0f} with capture errors)")
    print(f"{'read':<32} {'job s':>7} {'process s':>10} {'MiB/s':>7} {'rows/s/core':>12} {'vs whole':>9}")
    for name, cores, result in runs:
        seconds = result["seconds"]
        print(
            f"{name:<32} {seconds:>7.1f} {result['wall']:>10.1f} {size / (1 << 20) / seconds:>7.1f} "
            f"{result['rows'] / seconds / cores:>12,.0f} {first['seconds'] / seconds:>8.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

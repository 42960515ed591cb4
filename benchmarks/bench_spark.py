#!/usr/bin/env python
"""Spark on local[2] against the single-process decoder, on the same frames, in one run.

Builds ``--frames`` (default 2,000,000) mixed frames: a few hundred distinct requests and
responses (Produce, Fetch, Metadata, ListOffsets, ApiVersions, OffsetForLeaderEpoch; bodies of
1-8 partitions, record batches of 1-4 records), repeated in a shuffled order, written to one
Parquet file without dictionary encoding (a capture's frames are all different). Then, on it:

* single process: ``pyarrow.parquet`` reads it batch by batch and ``decode_batch`` decodes
  each batch (10,000 rows, Spark's default Arrow batch size);
* Spark: ``decode_frames`` over ``spark.read.parquet`` on ``local[2]``, written to the ``noop``
  sink, so all rows are decoded and nothing is stored.

Both get one untimed warm-up on a small file first (module imports, Spark's Python workers).
The single-process decode runs in a fresh interpreter (``multiprocessing`` spawn), so its peak
memory is its own. The peak memory of each Spark Python worker is its ``VmHWM`` (peak resident
set) from ``/proc``, sampled while the job runs.

    python benchmarks/bench_spark.py [--frames 2000000] [--master local[2]] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_epochs import Protocol
from kafka_epochs.records import Record, encode_batch
from kafka_epochs.spark.batch import decode_batch

P = Protocol.bundled()
BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default
TOPICS = [f"topic-{i}" for i in range(6)]
TOPIC_IDS = {t: uuid.UUID(int=i + 1) for i, t in enumerate(TOPICS)}


# -- frames ------------------------------------------------------------------------------------


def _records(rng: random.Random) -> bytes:
    return encode_batch(
        [Record(key=rng.randbytes(8), value=rng.randbytes(rng.randrange(20, 200))) for _ in range(rng.randrange(1, 5))]
    )


def _partitions(rng: random.Random) -> list[int]:
    return sorted(rng.sample(range(16), rng.randrange(1, 9)))


def _produce(rng: random.Random) -> tuple[Any, Any]:
    req, resp = P.message("ProduceRequest"), P.message("ProduceResponse")
    topic, parts = rng.choice(TOPICS), _partitions(rng)
    request = req(
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            req.TopicProduceData(
                name=topic, partition_data=[req.PartitionProduceData(index=p, records=_records(rng)) for p in parts]
            )
        ],
    )
    response = resp(
        responses=[
            resp.TopicProduceResponse(
                name=topic,
                partition_responses=[
                    resp.PartitionProduceResponse(index=p, base_offset=rng.randrange(1 << 30)) for p in parts
                ],
            )
        ]
    )
    return request, response


def _fetch(rng: random.Random) -> tuple[Any, Any]:
    req, resp = P.message("FetchRequest"), P.message("FetchResponse")
    topic, parts = rng.choice(TOPICS), _partitions(rng)
    request = req(
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        session_id=rng.randrange(1000),
        topics=[
            req.FetchTopic(
                topic=topic,
                topic_id=TOPIC_IDS[topic],
                partitions=[
                    req.FetchPartition(
                        partition=p,
                        current_leader_epoch=rng.randrange(10),
                        fetch_offset=rng.randrange(1 << 20),
                        partition_max_bytes=1 << 20,
                    )
                    for p in parts
                ],
            )
        ],
    )
    response = resp(
        session_id=1,
        responses=[
            resp.FetchableTopicResponse(
                topic=topic,
                topic_id=TOPIC_IDS[topic],
                partitions=[
                    resp.PartitionData(
                        partition_index=p,
                        high_watermark=rng.randrange(1 << 20),
                        records=_records(rng) if rng.random() < 0.5 else b"",
                    )
                    for p in parts
                ],
            )
        ],
    )
    return request, response


def _metadata(rng: random.Random) -> tuple[Any, Any]:
    req, resp = P.message("MetadataRequest"), P.message("MetadataResponse")
    topics = rng.sample(TOPICS, rng.randrange(1, 4))
    request = req(topics=[req.MetadataRequestTopic(name=t) for t in topics])

    def partition(p: int) -> Any:
        return resp.MetadataResponsePartition(
            partition_index=p,
            leader_id=p % 3,
            leader_epoch=rng.randrange(9),
            replica_nodes=[0, 1, 2],
            isr_nodes=[0, 1, 2],
        )

    response = resp(
        brokers=[resp.MetadataResponseBroker(node_id=b, host=f"broker-{b}", port=9092) for b in range(3)],
        controller_id=1,
        topics=[
            resp.MetadataResponseTopic(
                name=t, topic_id=TOPIC_IDS[t], partitions=[partition(p) for p in range(rng.randrange(1, 9))]
            )
            for t in topics
        ],
    )
    return request, response


def _list_offsets(rng: random.Random) -> tuple[Any, Any]:
    req, resp = P.message("ListOffsetsRequest"), P.message("ListOffsetsResponse")
    topic, parts = rng.choice(TOPICS), _partitions(rng)
    request = req(
        replica_id=-1,
        topics=[
            req.ListOffsetsTopic(
                name=topic,
                partitions=[
                    req.ListOffsetsPartition(partition_index=p, current_leader_epoch=3, timestamp=-1) for p in parts
                ],
            )
        ],
    )
    response = resp(
        topics=[
            resp.ListOffsetsTopicResponse(
                name=topic,
                partitions=[
                    resp.ListOffsetsPartitionResponse(partition_index=p, offset=rng.randrange(1 << 20), leader_epoch=3)
                    for p in parts
                ],
            )
        ]
    )
    return request, response


def _offset_for_leader_epoch(rng: random.Random) -> tuple[Any, Any]:
    req, resp = P.message("OffsetForLeaderEpochRequest"), P.message("OffsetForLeaderEpochResponse")
    topic, parts = rng.choice(TOPICS), _partitions(rng)
    request = req(
        replica_id=-1,
        topics=[
            req.OffsetForLeaderTopic(
                topic=topic,
                partitions=[
                    req.OffsetForLeaderPartition(partition=p, current_leader_epoch=4, leader_epoch=3) for p in parts
                ],
            )
        ],
    )
    response = resp(
        topics=[
            resp.OffsetForLeaderTopicResult(
                topic=topic,
                partitions=[
                    resp.EpochEndOffset(partition=p, leader_epoch=3, end_offset=rng.randrange(1 << 20)) for p in parts
                ],
            )
        ]
    )
    return request, response


def _api_versions(rng: random.Random) -> tuple[Any, Any]:
    req, resp = P.message("ApiVersionsRequest"), P.message("ApiVersionsResponse")
    response = resp(
        api_keys=[
            resp.ApiVersion(api_key=k, min_version=0, max_version=v)
            for k, v in [(0, 12), (1, 17), (2, 6), (3, 12), (18, 4)]
        ]
    )
    return req(client_software_name="bench", client_software_version=str(rng.randrange(9))), response


#: (builder, version, weight): the request/response mix of a busy client fleet.
MIX = [
    (_produce, 9, 30),
    (_fetch, 12, 30),
    (_metadata, 12, 10),
    (_list_offsets, 6, 10),
    (_offset_for_leader_epoch, 4, 10),
    (_api_versions, 3, 10),
]


def distinct_frames(count: int, seed: int) -> pa.Table:
    """``count`` distinct requests and responses (half each), with what decoding a response needs."""
    rng = random.Random(seed)
    builders = [b for b, _, w in MIX for _ in range(w)]
    versions = {b: v for b, v, _ in MIX}
    frames, directions, keys, api_versions = [], [], [], []
    for correlation in range(count // 2):
        build = rng.choice(builders)
        version = versions[build]
        request, response = build(rng)
        frames += [
            P.encode_request(request, version, correlation_id=correlation, client_id="bench-client"),
            P.encode_response(response, version, correlation_id=correlation),
        ]
        directions += ["request", "response"]
        keys += [type(request).API_KEY] * 2
        api_versions += [version] * 2
    return pa.table(
        {
            "frame": pa.array(frames, pa.binary()),
            "direction": directions,
            "request_api_key": pa.array(keys, pa.int32()),
            "request_api_version": pa.array(api_versions, pa.int32()),
        }
    )


def write_frames(path: Path, total: int, distinct: pa.Table, seed: int) -> None:
    """``total`` rows drawn from ``distinct``, repeated and shuffled (one ``take`` per chunk)."""
    rng = random.Random(seed)
    n = distinct.num_rows
    # no dictionary: repeated frames would otherwise shrink to a few bytes each, which real
    # captures (all frames different) never do, and reading would look cheaper than it is
    with pq.ParquetWriter(path, distinct.schema, use_dictionary=False) as writer:
        for start in range(0, total, 100_000):
            rows = min(100_000, total - start)
            writer.write_table(distinct.take(pa.array([rng.randrange(n) for _ in range(rows)])), row_group_size=50_000)


# -- the two ways ------------------------------------------------------------------------------


def single_process(path: Path) -> tuple[int, int]:
    """Rows decoded and rows with an error, reading ``path`` batch by batch."""
    rows = errors = 0
    # pre_buffer off: with it, pyarrow reads the whole file's columns ahead, and the peak memory
    # measured would be the reader's look-ahead rather than the decoder's
    for batch in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=BATCH_ROWS):
        decoded = decode_batch(
            batch.column("frame"),
            direction=batch.column("direction"),
            request_api_key=batch.column("request_api_key"),
            request_api_version=batch.column("request_api_version"),
        )
        rows += decoded.num_rows
        errors += decoded.num_rows - decoded.column("error").null_count
    return rows, errors


def _single_process_child(path: Path, warm: Path, results: Any) -> None:
    single_process(warm)
    started = time.perf_counter()
    rows, errors = single_process(path)
    seconds = time.perf_counter() - started
    results.put((rows, errors, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))


def single_process_run(path: Path, warm: Path) -> tuple[int, int, float, int]:
    """``single_process`` in a fresh interpreter: its time, and a peak memory that is its own
    (this process has built the frames, and its allocator keeps some of that memory)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_single_process_child, args=(path, warm, results))
    child.start()
    outcome = results.get()
    child.join()
    return outcome  # type: ignore[no-any-return]


def spark_run(spark: Any, path: Path) -> None:
    from kafka_epochs.spark.api import decode_frames

    df = spark.read.parquet(str(path))
    decoded = decode_frames(
        df,
        keep=[],
        direction_col="direction",
        request_api_key_col="request_api_key",
        request_api_version_col="request_api_version",
    )
    decoded.write.format("noop").mode("overwrite").save()


class WorkerMemory:
    """Peak resident memory (VmHWM) of each Spark Python worker, sampled from /proc while running.

    Workers are forked by ``pyspark.daemon`` and carry its command line; the daemon itself (whose
    parent is the JVM) is not a worker and is left out.
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WorkerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        daemons = set()
        found: dict[int, tuple[int, int]] = {}  # pid -> (parent, peak kB)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                if b"pyspark.daemon" not in cmdline:
                    continue
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:  # the process ended between listing and reading
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            parent, peak = int(fields["PPid"]), int(fields.get("VmHWM", "0 kB").split()[0])
            found[int(entry)] = (parent, peak)
        daemons = {pid for pid, (parent, _) in found.items() if parent not in found}
        for pid, (_, peak) in found.items():
            if pid not in daemons:
                self.peaks[pid] = max(self.peaks.get(pid, 0), peak)


# -- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=2_000_000)
    parser.add_argument("--distinct", type=int, default=400, help="distinct frames to repeat (default 400)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=16, help="Spark input partitions to aim for")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        path, warm = Path(tmp) / "frames.parquet", Path(tmp) / "warm.parquet"
        started = time.perf_counter()
        distinct = distinct_frames(args.distinct, args.seed)
        write_frames(path, args.frames, distinct, args.seed)
        write_frames(warm, min(args.frames, 20_000), distinct, args.seed + 1)
        size = path.stat().st_size
        print(
            f"{args.frames:,} frames ({distinct.num_rows} distinct, "
            f"{sum(len(f) for f in distinct.column('frame').to_pylist()) / distinct.num_rows:.0f} bytes on average), "
            f"{size / 2**20:.0f} MiB of Parquet, built in {time.perf_counter() - started:.1f} s",
            flush=True,
        )

        rows, errors, single_seconds, single_rss = single_process_run(path, warm)  # peak in kB (Linux)
        assert rows == args.frames and errors == 0, (rows, errors)
        single_rate = rows / single_seconds
        print(
            f"single process: {single_seconds:.1f} s, {single_rate:,.0f} frames/s, "
            f"peak RSS {single_rss / 1024:.0f} MiB",
            flush=True,
        )

        from kafka_epochs.spark.session import local_session

        spark = local_session(
            args.master,
            "kafka-epochs-bench",
            **{
                # even splits of the one file, so both cores stay busy to the end
                "spark.sql.files.maxPartitionBytes": str(max(size // args.partitions, 1 << 16)),
                "spark.ui.showConsoleProgress": "false",
            },
        )
        spark.sparkContext.setLogLevel("ERROR")
        try:
            spark_run(spark, warm)
            with WorkerMemory() as memory:
                started = time.perf_counter()
                spark_run(spark, path)
                spark_seconds = time.perf_counter() - started
            partitions = spark.read.parquet(str(path)).rdd.getNumPartitions()
        finally:
            spark.stop()
    spark_rate = args.frames / spark_seconds
    peaks = sorted(memory.peaks.values(), reverse=True)
    print(f"spark {args.master}: {spark_seconds:.1f} s, {spark_rate:,.0f} frames/s ({partitions} input partitions)")
    print(f"ratio: {spark_rate / single_rate:.2f}x the single-process rate (target >= 1.4x on 2 cores)")
    print("peak RSS per Python worker: " + (", ".join(f"{p / 1024:.0f} MiB" for p in peaks) or "none seen"))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "frames": args.frames,
                    "distinct": args.distinct,
                    "master": args.master,
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "single_seconds": single_seconds,
                    "single_frames_per_s": single_rate,
                    "single_peak_rss_kib": single_rss,
                    "spark_seconds": spark_seconds,
                    "spark_frames_per_s": spark_rate,
                    "ratio": spark_rate / single_rate,
                    "worker_peak_rss_kib": peaks,
                    "input_partitions": partitions,
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

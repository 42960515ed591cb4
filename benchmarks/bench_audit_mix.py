#!/usr/bin/env python
"""One process over the Spark benchmark's frame mix: full decode against projections and headers.

The frames are ``bench_spark.py``'s mix (Produce, Fetch, Metadata, ListOffsets,
OffsetForLeaderEpoch and ApiVersions requests and responses, bodies of 1-8 partitions, record
batches of 1-4 records), ``--frames`` of them drawn from a few hundred distinct ones, in batches
of 10,000 rows as Spark hands them to Python. Each way reads every batch:

* ``decode_batch``: whole bodies, rendered to ``body_json`` (what ``decode_frames`` does);
* ``audit_events``: the epoch audit's extraction (whole bodies for the requests that carry
  epochs, projections for Metadata responses, error-code bytes checked before anything else);
* the audit's fields by projection: topic, partition, leader epochs and error codes of every
  body, as columns (``FieldsReader`` over the batch);
* headers only: the vectorized header pass, no body read.

    python benchmarks/bench_audit_mix.py [--frames 200000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_spark import BATCH_ROWS, distinct_frames  # noqa: E402  (after the path is set)

from kafka_epochs.audit.events import audit_events  # noqa: E402
from kafka_epochs.projection.bodies import FieldsReader  # noqa: E402
from kafka_epochs.protocol_refs import Lookup, resolve  # noqa: E402
from kafka_epochs.spark.batch import DecodedRows, decode_batch  # noqa: E402
from kafka_epochs.spark.headers import read_headers  # noqa: E402

AUDIT_FIELDS = [
    "topics[].topic",
    "topics[].name",
    "topics[].topic_id",
    "topics[].partitions[].partition",
    "topics[].partitions[].partition_index",
    "topics[].partitions[].current_leader_epoch",
    "topics[].partitions[].leader_epoch",
    "topics[].partitions[].error_code",
    "responses[].topic",
    "responses[].partitions[].partition_index",
    "responses[].partitions[].error_code",
    "responses[].partition_responses[].index",
    "responses[].partition_responses[].error_code",
    "topic_data[].name",
    "topic_data[].partition_data[].index",
]


def batches(total: int, seed: int) -> list[pa.RecordBatch]:
    distinct = distinct_frames(400, seed)
    rng = random.Random(seed)
    table = distinct.take(pa.array([rng.randrange(distinct.num_rows) for _ in range(total)]))
    n = table.num_rows
    context = {
        "capture": pa.array(["bench"] * n),
        "seq": pa.array(range(n), pa.int64()),
        "time_ns": pa.array(range(n), pa.int64()),
        "client": pa.array(["10.0.0.1:5000"] * n),
        "broker": pa.array(["10.0.0.2:9092"] * n),
        # a client numbers its requests, and the answer carries the request's number: one id per
        # two rows (one id for every frame would make the whole table a single exchange)
        "correlation_id": pa.array([i // 2 for i in range(n)], pa.int32()),
    }
    for name, column in context.items():
        table = table.append_column(name, column)
    return table.combine_chunks().to_batches(max_chunksize=BATCH_ROWS)


def pairing(batch: pa.RecordBatch) -> dict[str, pa.Array]:
    return {
        "direction": batch.column("direction"),
        "request_api_key": batch.column("request_api_key"),
        "request_api_version": batch.column("request_api_version"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    data = batches(args.frames, args.seed)
    reader = FieldsReader(AUDIT_FIELDS)
    lookup = Lookup(resolve(None))

    def projected(batch: pa.RecordBatch) -> Any:
        return DecodedRows.of(
            batch.column("frame"), *pairing(batch).values(), None, lambda body, v, r: body, read_body=reader
        )

    ways: dict[str, Callable[[pa.RecordBatch], Any]] = {
        "decode_batch (whole bodies, body_json)": lambda b: decode_batch(b.column("frame"), **pairing(b)),
        "audit_events (the audit's extraction)": audit_events,
        "the audit's fields, projected": projected,
        "headers only": lambda b: read_headers(b.column("frame"), *pairing(b).values(), lookup),
    }
    for way in ways.values():  # warm-up: imports, generated code, projections compiled
        way(data[0])
    times = {}
    for name, way in ways.items():
        start = time.perf_counter()
        for batch in data:
            way(batch)
        times[name] = time.perf_counter() - start
    base = args.frames / times[next(iter(times))]
    print(f"{args.frames:,} frames of the bench_spark mix, one process, batches of {BATCH_ROWS:,}")
    print(f"{'way':<42} {'s':>7} {'frames/s':>12} {'vs decode_batch':>16}")
    for name, seconds in times.items():
        rate = args.frames / seconds
        print(f"{name:<42} {seconds:>7.2f} {rate:>12,.0f} {rate / base:>15.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

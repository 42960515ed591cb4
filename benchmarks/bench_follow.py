#!/usr/bin/env python
"""``audit --follow``: how long after a capture file lands its incidents are printed, and what
judging costs on the driver as the stored events grow.

Part 1 (latency): a follow on ``local[2]`` (``--trigger`` 1 s, ``--settle`` 0.5 s by default)
watches an empty directory; ``--files`` copies of the epoch story's capture (the tests'
``epoch_story``: each copy its own incidents) land one after another, each once the one before
has printed. For each, the time from its landing to its first printed line; the first includes
Spark's Python workers starting.

Part 2 (driver judging): ``--events`` synthetic events (requests over ``--partitions``
partitions, a Metadata sighting per partition) judged from the start (``reload``, what a restart
does), then one more batch of 10,000 judged after them (``add``, what a micro-batch does).

    python benchmarks/bench_follow.py [--files 4] [--trigger 1] [--settle 0.5] [--events 1000000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pyarrow as pa  # type: ignore[import-untyped]

from kafka_epochs.spark.epoch_audit import CLUSTER_INFO, EVENT_SCHEMA, LEADER_EPOCH, REQUEST_EPOCH
from kafka_epochs.spark.incremental_audit import IncrementalAudit


class Lines:
    def __init__(self) -> None:
        self.times: list[float] = []

    def write(self, text: str) -> int:
        self.times += [time.monotonic() for line in text.splitlines() if line.strip()]
        return len(text)

    def flush(self) -> None:
        pass


def latency(files: int, trigger: float, settle: float) -> list[float]:
    from epoch_story import write_sample

    from kafka_epochs.spark.follow import Follow
    from kafka_epochs.spark.session import local_session

    spark = local_session("local[2]")
    spark.sparkContext.setLogLevel("ERROR")
    out = Lines()
    seconds = []
    with tempfile.TemporaryDirectory() as tmp:
        incoming = Path(tmp) / "in"
        incoming.mkdir()
        follow = Follow(
            spark, str(incoming), Path(tmp) / "state", trigger_seconds=trigger, settle_seconds=settle, out=out
        )
        thread = threading.Thread(target=follow.run, kwargs={"stop_after": 600})
        thread.start()
        try:
            time.sleep(3)
            for n in range(files):
                before = len(out.times)
                write_sample(incoming / f"story-{n}.pcap")
                landed = time.monotonic()
                while len(out.times) == before and time.monotonic() - landed < 120:
                    time.sleep(0.02)
                seconds.append(out.times[before] - landed)
                time.sleep(1)  # let the batch finish printing
        finally:
            for query in spark.streams.active:
                query.stop()
            thread.join()
    spark.stop()
    return seconds


def synthetic_events(count: int, partitions: int, start_seq: int = 0) -> pa.Table:
    rows: dict[str, list[Any]] = {name: [None] * count for name in EVENT_SCHEMA.names}
    t0 = 1_790_000_000 * 10**9
    for i in range(count):
        rows["capture"][i] = f"cap-{(start_seq + i) // 100_000}.pcap"
        rows["seq"][i] = (start_seq + i) << 24
        rows["time_ns"][i] = t0 + (start_seq + i) * 1000
        rows["client"][i] = f"10.0.0.{i % 50}:40000"
        rows["broker"][i] = "10.0.1.1:9092"
        rows["correlation_id"][i] = i
        rows["topic"][i] = "events"
        rows["partition"][i] = i % partitions
        sighting = start_seq == 0 and 0 < i <= partitions
        rows["kind"][i] = LEADER_EPOCH if sighting else REQUEST_EPOCH
        if (start_seq + i) % 100_000 == 0:  # each capture's Metadata names the cluster: one timeline
            rows["kind"][i], rows["cluster_id"][i], rows["members"][i] = CLUSTER_INFO, "bench", ["10.0.1.1:9092"]
        rows["api"][i] = "Metadata" if sighting else "Fetch"
        rows["api_version"][i] = 12
        rows["epoch"][i] = 5 if sighting or i % 1000 else 4  # one request in 1000 is stale
        rows["profile"][i] = "apache"
        rows["warnings"][i] = []
    return pa.Table.from_pydict(rows, schema=EVENT_SCHEMA)


def judging(count: int, partitions: int) -> tuple[float, float, int, int]:
    stored = synthetic_events(count, partitions)
    batch = synthetic_events(10_000, partitions, start_seq=count)
    audit = IncrementalAudit(lambda where=None: stored if where is None else stored.filter(where))
    started = time.perf_counter()
    first = audit.reload()
    reload_s = time.perf_counter() - started
    started = time.perf_counter()
    more = audit.add(batch)
    add_s = time.perf_counter() - started
    assert audit.rejudged is None, audit.rejudged
    return reload_s, add_s, len(first), len(more)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--trigger", type=float, default=1.0)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args()

    seconds = latency(args.files, args.trigger, args.settle)
    print(f"follow on local[2], trigger {args.trigger} s, settle {args.settle} s: landing -> first line printed")
    for n, s in enumerate(seconds):
        print(f"  file {n + 1}: {s:5.2f} s{'  (cold: Python workers start)' if n == 0 else ''}")
    reload_s, add_s, first, more = judging(args.events, args.partitions)
    print(f"driver judging, {args.events:,} stored events over {args.partitions:,} partitions:")
    print(f"  reload (a restart): {reload_s:6.2f} s  ({args.events / reload_s:,.0f} events/s, {first:,} incidents)")
    print(f"  add 10,000 more (a micro-batch): {add_s * 1000:6.1f} ms  ({more:,} incidents)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""``audit --follow``: how long after a capture file lands its incidents are printed, and what
judging costs on the driver as the stored events grow.

Part 1 (latency): a follow on ``local[2]`` (``--trigger`` 1 s, ``--settle`` 0.5 s by default)
watches an empty directory (once it has warmed up and looked at it); ``--files`` copies of the
epoch story's capture (the tests' ``epoch_story``: each copy its own incidents) land one after
another, each once the one before has printed. For each, the time from its landing to its first
printed line, and how long its micro-batch took (Spark's ``triggerExecution``).

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
from incremental_events import store_of

from kafka_epochs.audit.events import CLUSTER_INFO, EVENT_SCHEMA, LEADER_EPOCH, REQUEST_EPOCH
from kafka_epochs.audit.judging import IncrementalAudit


class Lines:
    def __init__(self) -> None:
        self.times: list[float] = []

    def write(self, text: str) -> int:
        self.times += [time.monotonic() for line in text.splitlines() if line.strip()]
        return len(text)

    def flush(self) -> None:
        pass


def wait_until_following(spark: Any) -> None:
    """Until the follow's query has looked at the directory once (it warms up first)."""
    while not any(q.recentProgress for q in spark.streams.active):
        time.sleep(0.1)


def latency(files: int, trigger: float, settle: float) -> tuple[list[float], list[int]]:
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
            wait_until_following(spark)
            for n in range(files):
                before = len(out.times)
                write_sample(incoming / f"story-{n}.pcap")
                landed = time.monotonic()
                while len(out.times) == before and time.monotonic() - landed < 120:
                    time.sleep(0.02)
                seconds.append(out.times[before] - landed)
                time.sleep(1)  # let the batch finish printing
            # what Spark measured of the micro-batches that read a file, start to commit
            batches = [
                progress["durationMs"]["triggerExecution"]
                for query in spark.streams.active
                for progress in query.recentProgress
                if progress["numInputRows"]
            ]
        finally:
            for query in spark.streams.active:
                query.stop()
            thread.join()
    spark.stop()
    return seconds, batches


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


def judging(count: int, partitions: int) -> tuple[float, float, float, int, int, int]:
    tables = [synthetic_events(count, partitions)]
    audit = IncrementalAudit(store_of(tables))
    started = time.perf_counter()
    first = audit.reload()
    reload_s = time.perf_counter() - started
    tables.append(batch := synthetic_events(10_000, partitions, start_seq=count))
    started = time.perf_counter()
    more = audit.add(batch)
    add_s = time.perf_counter() - started
    assert audit.rejudged is None and not audit.rejudged_partitions
    # another host's capture of the cluster, of the first minute: epoch 6 of partition 0 came
    # before every request of it judged so far
    late = synthetic_events(2, partitions, start_seq=10 * count).to_pylist()
    late[0].update(seq=0, time_ns=0, kind=CLUSTER_INFO, cluster_id="bench", members=["10.0.1.1:9092"])
    late[1].update(seq=1, time_ns=0, kind=LEADER_EPOCH, api="Metadata", partition=0, epoch=6)
    late = pa.Table.from_pylist(late, schema=EVENT_SCHEMA)
    tables.append(late)
    started = time.perf_counter()
    again = audit.add(late)
    late_s = time.perf_counter() - started
    assert audit.rejudged is None and len(audit.rejudged_partitions) == 1, audit.rejudged
    return reload_s, add_s, late_s, len(first), len(more), len(again)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--trigger", type=float, default=1.0)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args()

    seconds, batches = latency(args.files, args.trigger, args.settle)
    print(f"follow on local[2], trigger {args.trigger} s, settle {args.settle} s: landing -> first line printed")
    for n, s in enumerate(seconds):
        print(f"  file {n + 1}: {s:5.2f} s")
    print(f"  its micro-batch, start to commit: {', '.join(f'{ms / 1000:.2f}' for ms in batches)} s")
    reload_s, add_s, late_s, first, more, again = judging(args.events, args.partitions)
    print(f"driver judging, {args.events:,} stored events over {args.partitions:,} partitions:")
    print(f"  reload (a restart): {reload_s:6.2f} s  ({args.events / reload_s:,.0f} events/s, {first:,} incidents)")
    print(f"  add 10,000 more (a micro-batch): {add_s * 1000:6.1f} ms  ({more:,} incidents)")
    print(
        f"  add an epoch first seen before every request of one partition: {late_s * 1000:6.1f} ms"
        f"  ({again:,} incidents: its {args.events // args.partitions:,} requests judged again)"
    )


if __name__ == "__main__":
    main()

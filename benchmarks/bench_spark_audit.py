#!/usr/bin/env python
"""The audit's Spark engine: the whole audit against its event extraction alone, same frames, one run.

The frames are ``bench_spark.py``'s mix (``--frames``, default 200,000: Produce, Fetch, Metadata,
ListOffsets, OffsetForLeaderEpoch and ApiVersions requests and responses with random leader
epochs, so that many partitions have checks and stale requests), written once to Parquet. For
each master (``local[1]`` and ``local[2]`` by default), two jobs read that file, each writing to
the ``noop`` sink so all of it is computed and nothing stored:

* extraction: ``extract_events(frames)``, the only step that reads frames;
* the whole audit: ``audit(frames)`` with every table the command prints or writes computed
  (the events cached, the checks judged per partition, the four incident tables, the timeline).

Each job runs once untimed (Spark's Python workers, the JVM's code) and ``--rounds`` times timed;
the best round counts. The frames are stored as ``--files`` Parquet files (8), as Spark would
have written them, so that every core has a share to read. Frames per second for each, and the
ratio: the whole audit's rate over the extraction's (the issue's target: at least 0.5 on
local[2]), and local[2] over local[1].

    python benchmarks/bench_spark_audit.py [--frames 200000] [--masters local[1] local[2]] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_audit_mix import batches  # noqa: E402  (after the path is set)

TARGET_RATIO = 0.5


def write_frames(table: pa.Table, path: Path, files: int) -> None:
    """``table`` as ``files`` Parquet files, as a table Spark wrote (a file per task) is stored:
    one file of one row group would be read by one task, however many cores there are."""
    path.mkdir()
    step = -(-table.num_rows // files)
    for i in range(files):
        part = table.slice(i * step, step)
        pq.write_table(part, path / f"part-{i:05d}.parquet", use_dictionary=False)


def timed(job: Callable[[], None], rounds: int) -> float:
    job()  # warm-up
    best = float("inf")
    for _ in range(rounds):
        started = time.monotonic()
        job()
        best = min(best, time.monotonic() - started)
    return best


def measure(master: str, path: Path, frames: int, rounds: int) -> dict[str, float]:
    from kafka_epochs.spark import audit, local_session
    from kafka_epochs.spark.epoch_audit import extract_events

    spark = local_session(master)
    try:
        table = spark.read.parquet(str(path))

        def extraction() -> None:
            extract_events(table).write.format("noop").mode("overwrite").save()

        def whole() -> None:
            result = audit(table)
            for t in result.tables().values():
                t.write.format("noop").mode("overwrite").save()
            result.unpersist()

        return {"extraction": frames / timed(extraction, rounds), "whole audit": frames / timed(whole, rounds)}
    finally:
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=200_000)
    parser.add_argument("--masters", nargs="+", default=["local[1]", "local[2]"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--files", type=int, default=8, help="Parquet files the frames are written as")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "frames"
        write_frames(pa.Table.from_batches(batches(args.frames, args.seed)), path, args.files)
        print(f"{args.frames:,} frames of the Spark benchmark's mix; load average {os.getloadavg()[0]:.2f}")
        rates = {master: measure(master, path, args.frames, args.rounds) for master in args.masters}
    for master, rate in rates.items():
        ratio = rate["whole audit"] / rate["extraction"]
        print(
            f"  {master:<10} extraction {rate['extraction']:>9,.0f} frames/s   whole audit "
            f"{rate['whole audit']:>9,.0f} frames/s   whole / extraction {ratio:.2f}"
        )
    if len(rates) > 1:
        first, last = args.masters[0], args.masters[-1]
        scale = rates[last]["whole audit"] / rates[first]["whole audit"]
        print(f"  whole audit, {last} / {first}: {scale:.2f}x")
    last = rates[args.masters[-1]]
    ratio = last["whole audit"] / last["extraction"]
    print(
        f"\nTarget: {'PASS' if ratio >= TARGET_RATIO else 'MISS'} whole / extraction {ratio:.2f} on "
        f"{args.masters[-1]} (target >= {TARGET_RATIO})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

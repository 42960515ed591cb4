#!/usr/bin/env python
"""The audit's HTML report over a large frame table, on one core: how long the page takes.

The frames are ``bench_spark.py``'s mix (``--frames`` of them, default 100,000): Metadata
responses and client requests with random leader epochs, so that hundreds of partitions have
stale requests and the report's bounds are exercised (partitions drawn, incidents listed,
markers thinned). Spark runs ``local[1]``. Three times are printed:

* the audit itself (its events computed and cached);
* collecting what the page shows (``report_data``: the Spark queries of the report);
* drawing and writing the page (matplotlib and the HTML, on the driver).

The issue's bound is on the last two together: under 30 s on one core for 100,000 frames.

    python benchmarks/bench_report.py [--frames 100000] [--partitions 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_audit_mix import batches  # noqa: E402  (after the path is set)

from kafka_epochs.report import write_report  # noqa: E402
from kafka_epochs.spark import local_session  # noqa: E402
from kafka_epochs.spark.audit_report import report_data  # noqa: E402
from kafka_epochs.spark.epoch_audit import audit  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=20, help="partitions the report draws")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--keep", type=Path, metavar="OUT.html", help="also keep the page here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        table_path = Path(folder) / "frames.parquet"
        table = pa.Table.from_batches(batches(args.frames, args.seed))
        # a time a millisecond apart per frame: the page's time axis spans 100 s
        table = table.set_column(
            table.schema.get_field_index("time_ns"),
            "time_ns",
            pa.array([1_700_000_000_000_000_000 + i * 1_000_000 for i in range(table.num_rows)], pa.int64()),
        )
        pq.write_table(table, table_path)
        spark = local_session("local[1]", "bench-report")
        spark.sparkContext.setLogLevel("ERROR")
        frames = spark.read.parquet(str(table_path))

        start = time.perf_counter()
        result = audit(frames)
        events = result.events.count()
        audited = time.perf_counter() - start

        start = time.perf_counter()
        data = report_data(result, max_partitions=args.partitions)
        collected = time.perf_counter() - start

        start = time.perf_counter()
        page = write_report(data, Path(folder) / "report.html")
        drawn = time.perf_counter() - start
        size = page.stat().st_size
        if args.keep is not None:
            args.keep.write_bytes(page.read_bytes())
        spark.stop()

    with_incidents = len(data.partitions) + data.partitions_left_out
    markers = sum(len(v.markers) for v in data.partitions)
    print(f"{args.frames:,} frames (bench_spark mix), Spark local[1], {events:,} epoch events")
    print(f"partitions with incidents: {with_incidents:,}, drawn: {len(data.partitions)}, markers drawn: {markers:,}")
    print(f"{'step':<44} {'s':>7}")
    print(f"{'audit (events computed)':<44} {audited:>7.2f}")
    print(f"{'report: collect what the page shows':<44} {collected:>7.2f}")
    print(f"{'report: draw and write the page':<44} {drawn:>7.2f}")
    print(f"{'report, total (bound: 30 s)':<44} {collected + drawn:>7.2f}   page {size / 1024:,.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

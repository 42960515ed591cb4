#!/usr/bin/env python
"""``kafka-epochs spark-decode`` on embedded local mode against a real standalone cluster.

Writes ``--files`` captures of ``--frames`` Kafka frames each (``bench_decode.py``'s traffic:
real message types over 20 connections), starts a master and ``--workers`` workers of one core
on 127.0.0.1 from the installed PySpark (``kafka_epochs.spark.standalone``), and times the same
command, as whole processes, on ``local[N]`` (N = the workers' cores) and on the cluster, whose
executors get kafka_epochs shipped by the job. Each run writes Parquet; the row counts are
checked equal. On one machine the cluster cannot be faster (the same cores, plus the executors'
start-up and the shuffle of results through the block manager): this measures what the cluster
path costs, and that it runs.

    python benchmarks/bench_cluster.py [--files 4] [--frames 50000] [--workers 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_decode import write_traffic  # noqa: E402  (after the path is set)

from kafka_epochs.spark.standalone import StandaloneCluster  # noqa: E402

KAFKA_EPOCHS = str(Path(sys.executable).parent / "kafka-epochs")


def decode(captures: Path, out: Path, master: str, extra: list[str]) -> float:
    start = time.perf_counter()
    command = [KAFKA_EPOCHS, "spark-decode", str(captures), "--out", str(out), "--master", master, "--quiet", *extra]
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--frames", type=int, default=50_000, help="frames per file")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        captures = root / "captures"
        captures.mkdir()
        frames = sum(write_traffic(captures / f"part-{n}.pcap", args.frames, 20) for n in range(args.files))
        conf = ["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.driver.host=127.0.0.1"]
        conf += ["--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.executor.memory=1g"]
        local = decode(captures, root / "local", f"local[{args.workers}]", [])
        started = time.perf_counter()
        with StandaloneCluster(workers=args.workers, cores=1, root=root / "cluster") as cluster:
            startup = time.perf_counter() - started
            remote = decode(captures, root / "remote", cluster.url, conf)
        rows_local = pq.read_table(root / "local").num_rows
        rows_remote = pq.read_table(root / "remote").num_rows
    assert rows_local == rows_remote, (rows_local, rows_remote)
    print(
        f"{args.files} captures, {frames:,} frames; {args.workers} workers of 1 core (cluster start-up {startup:.1f} s)"
    )
    print(f"{'master':<34} {'s':>7} {'frames/s':>10}")
    print(f"{f'local[{args.workers}]':<34} {local:>7.1f} {frames / local:>10,.0f}")
    print(f"{'standalone cluster':<34} {remote:>7.1f} {frames / remote:>10,.0f}")
    print(f"cluster / local time: {remote / local:.2f}x; rows equal ({rows_local:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

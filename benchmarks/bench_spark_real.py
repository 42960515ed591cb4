#!/usr/bin/env python
"""Spark on the real-shaped captures: the decoders against a trivial Arrow UDF, same rows, one run.

The captures ``benchmarks/real_shaped.py`` records (``.cache/real-shaped/``: kafka-python,
aiokafka, confluent-kafka and kafkajs, each thousands of exchanges over hundreds of short
connections and ~40 apis) are read once with the ``kafka-capture`` data source and their frame
rows written to one Parquet file (``--repeat`` copies of them, so that a job's fixed cost does
not dominate). Every timed job then reads those rows from that file and writes its output to the
``noop`` sink, so all of it is computed and nothing stored:

* the anchor: a trivial Arrow UDF over the frames, their byte length, through the mechanism the
  project's column UDF uses (``arrow_udf`` on PySpark 4.1+, else ``pandas_udf``), the length
  alone selected: what moving the frames to Python and a column back costs; and the same with
  every column kept beside it (``withColumn``: the JVM holds the rows while Python works);
* ``decode_frames``: what ``kafka-epochs spark-decode`` runs (whole bodies as JSON);
* ``decode_api(..., fields=[...])``: a few apis, with field paths a user would ask for;
* ``extract_events``: the epoch audit's event extraction (its only step that reads frames).

Spark's Python workers are warmed up first (every job once on a small slice, untimed); then
the jobs run in turn, ``--rounds`` times (3), and each one's best round is kept. Each gets its
rows/s (frames in per second) and the ratio of that to the trivial UDF's. Last, for reference,
``kafka-epochs spark-decode`` on one capture as the command line runs it: wall time and the CPU
time of its driver process (and of the JVM it starts), sampled from ``/proc``.

    python benchmarks/bench_spark_real.py [--master 'local[2]'] [--also-local1] [--repeat 4]
        [--rounds 3] [--captures DIR_OR_FILES...] [--cli-capture FILE] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / ".cache" / "real-shaped"
CLIENTS = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs")

#: The projections timed: (message, field paths a user would ask for).
PROJECTIONS: list[tuple[str, list[str]]] = [
    (
        "MetadataResponse",
        ["topics[].name", "topics[].partitions[].partition_index", "topics[].partitions[].leader_epoch"],
    ),
    ("ProduceRequest", ["topic_data[].name", "topic_data[].partition_data[].index"]),
    (
        "ProduceResponse",
        ["responses[].name", "responses[].partition_responses[].index", "responses[].partition_responses[].error_code"],
    ),
    (
        "FetchRequest",
        ["topics[].topic", "topics[].partitions[].partition", "topics[].partitions[].current_leader_epoch"],
    ),
    (
        "FetchResponse",
        ["responses[].topic", "responses[].partitions[].partition_index", "responses[].partitions[].error_code"],
    ),
]


def trivial_udf() -> Any:
    """The anchor: each frame's byte length, by the UDF mechanism ``kafka_epochs.spark.api`` uses."""
    from pyspark.sql import functions as F

    arrow_udf = getattr(F, "arrow_udf", None)
    if arrow_udf is not None:

        def length(frames: pa.Array) -> pa.Array:
            return pc.binary_length(frames)

        return arrow_udf(length, "int")

    import pandas as pd

    def length_pandas(frames: pd.Series) -> pd.Series:
        return frames.map(lambda f: None if f is None else len(f)).astype("Int32")

    return F.pandas_udf(length_pandas, "int")


def jobs(frames: Any) -> dict[str, Callable[[], Any]]:
    """Each timed job's DataFrame, made fresh from ``frames`` (the Parquet rows)."""
    from kafka_epochs.spark import decode_api, decode_frames
    from kafka_epochs.spark.epoch_audit import extract_events

    length = trivial_udf()
    out: dict[str, Callable[[], Any]] = {
        "trivial Arrow UDF (frame bytes)": lambda: frames.select(length("frame").alias("frame_bytes")),
        "trivial Arrow UDF, every column kept": lambda: frames.withColumn("frame_bytes", length("frame")),
        "decode_frames (spark-decode)": lambda: decode_frames(frames),
    }
    for message, paths in PROJECTIONS:
        out[f"decode_api {message}, {len(paths)} fields"] = lambda m=message, p=paths: decode_api(frames, m, fields=p)
    out["extract_events (the audit's extraction)"] = lambda: extract_events(frames)
    return out


def materialise(spark: Any, captures: list[str], out: Path, repeat: int) -> int:
    """The captures' frame rows, ``repeat`` times over, written once to ``out`` (Parquet)."""
    from functools import reduce

    read = spark.read.format("kafka-capture").load(captures)
    once = out.with_name("once.parquet")
    read.write.mode("overwrite").parquet(str(once))
    rows = spark.read.parquet(str(once))
    copies = reduce(lambda a, b: a.unionByName(b), [rows] * repeat)
    # files small enough that the rows split into several tasks per core (Parquet splits by file)
    copies.repartition(4 * repeat).write.mode("overwrite").parquet(str(out))
    return int(spark.read.parquet(str(out)).count())


def run_noop(df: Any) -> None:
    df.write.format("noop").mode("overwrite").save()


def measure(spark: Any, parquet: Path, rounds: int) -> list[dict[str, Any]]:
    frames = spark.read.parquet(str(parquet))
    total = frames.count()
    made = jobs(frames)
    # warm-up, untimed: every job once on a sample of every partition (not limit(), which runs
    # one task), so that every Python worker is started and has imported what the jobs need
    slice_ = frames.sample(fraction=0.05, seed=1)
    for make in jobs(slice_).values():
        run_noop(make())
    best: dict[str, float] = {}
    out_rows: dict[str, int] = {}
    for _ in range(rounds):
        for name, make in made.items():  # in turn, so a burst of load elsewhere hits all alike
            df = make()
            start = time.perf_counter()
            run_noop(df)
            took = time.perf_counter() - start
            best[name] = min(best.get(name, float("inf")), took)
    for name, make in made.items():
        out_rows[name] = int(make().count())
    anchor = total / best[next(iter(made))]
    results = []
    for name in made:
        rate = total / best[name]
        results.append(
            {
                "what": name,
                "rows": total,
                "rows_out": out_rows[name],
                "s": best[name],
                "rows_s": rate,
                "ratio": rate / anchor,
            }
        )
    return results


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, itself only


def _children(pid: int) -> list[int]:
    """The children of every thread of ``pid`` (the JVM starts its Python from other threads)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _descendants(pid: int) -> list[int]:
    out, todo = [], _children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        todo += _children(child)
    return out


def cli_run(capture: str, master: str, out: Path) -> dict[str, float]:
    """``kafka-epochs spark-decode`` on one capture as a user runs it: wall time, and the CPU time
    of the driver (the command's own process), of the JVM it starts and of Spark's Python workers
    (the JVM's children), each process's last sample before it ended (every 50 ms)."""
    command = [
        str(Path(sys.executable).with_name("kafka-epochs")),
        "spark-decode",
        capture,
        "--out",
        str(out),
        "--overwrite",
        "--quiet",
        "--master",
        master,
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(command)
    driver = 0.0
    jvm: dict[int, float] = {}
    workers: dict[int, float] = {}
    while proc.poll() is None:
        driver = _cpu_seconds(proc.pid) or driver
        for child in _children(proc.pid):
            jvm[child] = _cpu_seconds(child) or jvm.get(child, 0.0)
            for worker in _descendants(child):
                workers[worker] = _cpu_seconds(worker) or workers.get(worker, 0.0)
        time.sleep(0.05)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"spark-decode failed ({proc.returncode})")
    return {
        "wall_s": wall,
        "driver_cpu_s": driver,
        "jvm_cpu_s": sum(jvm.values()),
        "python_workers_cpu_s": sum(workers.values()),
    }


def table(results: list[dict[str, Any]], master: str) -> str:
    lines = [
        f"Spark {master}, noop sink, best of the rounds",
        f"{'what':<48} {'rows':>9} {'rows out':>9} {'s':>7} {'rows/s':>9} {'vs trivial':>10}",
    ]
    for r in results:
        counts = f"{r['rows']:>9,} {r['rows_out']:>9,}"
        lines.append(f"{r['what']:<48} {counts} {r['s']:>7.2f} {r['rows_s']:>9,.0f} {r['ratio']:>9.2f}x")
    return "\n".join(lines)


def session(master: str, partition_bytes: int) -> Any:
    from kafka_epochs.spark import register
    from kafka_epochs.spark.session import local_session

    spark = local_session(master=master, **{"spark.sql.files.maxPartitionBytes": str(partition_bytes)})
    register(spark)
    return spark


def child(master: str, parquet: Path, rounds: int, partition_bytes: int, results: Path) -> None:
    spark = session(master, partition_bytes)
    try:
        found = measure(spark, parquet, rounds)
        partitions = spark.read.parquet(str(parquet)).rdd.getNumPartitions()
    finally:
        spark.stop()
    results.write_text(json.dumps({"master": master, "partitions": partitions, "results": found}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", nargs="+", default=[str(CAPTURES / f"{c}.pcap") for c in CLIENTS])
    parser.add_argument("--repeat", type=int, default=4, help="copies of the frame rows in the Parquet file")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--also-local1", action="store_true", help="then the same on local[1]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--partition-mb", type=int, default=16, help="spark.sql.files.maxPartitionBytes, MiB")
    parser.add_argument("--cli-capture", default=str(CAPTURES / "kafka-python.pcap"))
    parser.add_argument("--no-cli", action="store_true")
    parser.add_argument("--cli-only", action="store_true", help="only the spark-decode run")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--work", type=Path, help="keep the Parquet rows here, and reuse them when there")
    parser.add_argument("--_child", nargs=3, help=argparse.SUPPRESS)  # master, parquet, results
    args = parser.parse_args(argv)
    partition_bytes = args.partition_mb << 20
    if args._child:
        child(args._child[0], Path(args._child[1]), args.rounds, partition_bytes, Path(args._child[2]))
        return 0
    for capture in args.captures:
        if not Path(capture).exists():
            raise SystemExit(f"{capture}: not there (record it with benchmarks/real_shaped.py)")

    print(f"Python {platform.python_version()}, {os.cpu_count()} cores; captures: {', '.join(args.captures)}")
    with tempfile.TemporaryDirectory(prefix="bench-spark-real-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        parquet = work / "frames.parquet"
        spark = None if args.cli_only else session(args.master, partition_bytes)
        total = 0
        try:
            start = time.perf_counter()
            if spark is not None and (parquet / "_SUCCESS").exists():
                total = int(spark.read.parquet(str(parquet)).count())
                print(f"{total:,} frame rows, Parquet of an earlier run in {work}")
            elif spark is not None:
                total = materialise(spark, args.captures, parquet, args.repeat)
                print(f"{total:,} frame rows ({args.repeat} copies) in Parquet in {time.perf_counter() - start:.1f} s")
        finally:
            if spark is not None:
                spark.stop()
        report: dict[str, Any] = {"captures": args.captures, "repeat": args.repeat, "rows": total, "runs": []}
        masters = [] if args.cli_only else [args.master, *(["local[1]"] if args.also_local1 else [])]
        # each master in a fresh process: a JVM's master is fixed once it has started
        for master in masters:
            results = work / f"{master}.json"
            subprocess.run(
                [sys.executable, __file__, *_passed(args), "--_child", master, str(parquet), str(results)], check=True
            )
            run = json.loads(results.read_text())
            report["runs"].append(run)
            print()
            print(table(run["results"], f"{master} ({run['partitions']} input partitions)"))
        if not args.no_cli:
            cli = cli_run(args.cli_capture, args.master, work / "cli-out")
            report["cli"] = {"capture": args.cli_capture, "master": args.master, **cli}
            print()
            print(
                f"kafka-epochs spark-decode {Path(args.cli_capture).name} --master {args.master}: "
                f"{cli['wall_s']:.1f} s wall; CPU: driver {cli['driver_cpu_s']:.1f} s, JVM {cli['jvm_cpu_s']:.1f} s, "
                f"Python workers {cli['python_workers_cpu_s']:.1f} s"
            )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


def _passed(args: argparse.Namespace) -> list[str]:
    return ["--rounds", str(args.rounds), "--partition-mb", str(args.partition_mb)]


if __name__ == "__main__":
    sys.exit(main())

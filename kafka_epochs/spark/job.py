"""Spark for the command line: a session started as the commands want it, and captures read into it.

:func:`session` starts an embedded local Spark, or joins a cluster, quietly when asked;
:func:`read_captures` gives the ``kafka-capture`` source's frames of some files, large ones read
in byte ranges by many tasks. Nothing Spark is imported until one of them is called.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_epochs.spark.defaults import DEFAULT_MASTER, DEFAULT_SPLIT_BYTES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def session(
    master: str | None, *, quiet: bool = False, app_name: str = "kafka-epochs", conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for the commands: :func:`local_session` for local masters, else a plain one.

    Spark's stage progress bar shows only on a terminal and not with ``quiet``; ``quiet`` also
    starts the JVM with a log4j configuration that lets only errors through, and sends what the
    JVM itself prints on start-up (not through log4j) to :data:`JVM_LOG` instead of the terminal.
    ``master`` None is :data:`DEFAULT_MASTER`.
    """
    master = master or DEFAULT_MASTER
    settings: dict[str, Any] = {
        "spark.ui.showConsoleProgress": sys.stderr.isatty() and not quiet,
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }
    if quiet:
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={_quiet_log4j()}"
    settings.update(conf or {})  # the caller's settings win
    with _jvm_stderr_to_log(quiet):
        if master == "local" or master.startswith("local["):
            from kafka_epochs.spark.session import local_session

            spark = local_session(master, app_name, **settings)
        else:  # a cluster: its own settings decide addresses and the executors' Python
            from pyspark.sql import SparkSession

            # PySpark names its workers' Python from this process's PYSPARK_PYTHON (the capture
            # source's planner beside the driver, and every executor): spark.pyspark.python
            # sets it, as spark-submit would
            python = settings.get("spark.pyspark.python")
            if python:
                os.environ["PYSPARK_PYTHON"] = str(python)
            from kafka_epochs.spark.shipping import ship_beside_the_driver

            ship_beside_the_driver()  # the capture stream's planner runs beside the driver
            builder = SparkSession.builder.master(master).appName(app_name)
            for key, value in settings.items():
                builder = builder.config(key, str(value).lower() if isinstance(value, bool) else value)
            spark = builder.getOrCreate()
    # Spark's INFO/WARN chatter would bury the progress bar and the summary
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextlib.contextmanager
def ctrl_c_cancels(spark: SparkSession, stop: Callable[[], object] | None = None) -> Iterator[None]:
    """Within: Ctrl-C cancels the session's jobs (or calls ``stop``: a streaming query's), and
    the block ends in ``KeyboardInterrupt``.

    PySpark's own handler cancels them from the thread Ctrl-C interrupts, which is nearly always
    inside the py4j call that waits for a job: a call made inside another on one connection,
    which fails, logs two tracebacks and leaves the job running until the interrupted call
    returns. Here the cancelling is asked from a thread of its own (its own connection), the
    waiting call returns with the job's cancellation, and that is raised as the ``KeyboardInterrupt``
    it is. A second Ctrl-C stops waiting at once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # (signals reach the main thread only)
        return
    pressed = threading.Event()

    def cancel_jobs() -> None:
        context = spark.sparkContext
        context.setLogLevel("OFF")  # (the tasks' errors on being cancelled are what was asked for)
        if stop is None:
            context.cancelAllJobs()
        else:
            stop()

    def cancel(signum: int, frame: Any) -> None:
        if pressed.is_set():
            raise KeyboardInterrupt
        pressed.set()
        threading.Thread(target=cancel_jobs, name="ctrl-c", daemon=True).start()

    previous = signal.signal(signal.SIGINT, cancel)
    try:
        yield
    except Exception:
        if pressed.is_set():  # (what the cancelled job's call raised)
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed.is_set():  # (pressed after the last job ended)
        raise KeyboardInterrupt


#: Where ``--quiet`` sends what the JVM prints on its own (kept, for when something goes wrong).
JVM_LOG = Path(tempfile.gettempdir()) / "kafka-epochs-spark-jvm.log"


#: log4j2 settings for ``--quiet``: errors only, on stderr.
_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _quiet_log4j() -> Path:
    path = Path(tempfile.gettempdir()) / "kafka-epochs-quiet-log4j2.properties"
    if not path.is_file() or path.read_text() != _QUIET_LOG4J:
        path.write_text(_QUIET_LOG4J)
    return path


@contextlib.contextmanager
def _jvm_stderr_to_log(quiet: bool) -> Iterator[None]:
    """While a quiet session starts, file descriptor 2 points at :data:`JVM_LOG`, so the JVM
    launched meanwhile inherits it; ours is restored right after."""
    if not quiet:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(JVM_LOG, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def captures_for(spark: SparkSession, paths: list[str], args: argparse.Namespace) -> DataFrame:
    """The captures as the command's options say to read them."""
    return read_captures(
        spark,
        paths,
        ports=args.port,
        flow_buckets=args.flow_buckets,
        protocol=args.protocol,
        split_bytes=args.split_mb << 20,
    )


def read_captures(
    spark: SparkSession,
    paths: list[str],
    *,
    ports: list[int] | None = None,
    flow_buckets: int = 1,
    protocol: list[str] | None = None,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
) -> DataFrame:
    """The ``kafka-capture`` data source over ``paths`` (registered on first use); uncompressed
    pcap and pcapng files larger than ``split_bytes`` (0: none) are read in ranges by many tasks instead
    (:mod:`kafka_epochs.spark.split`: the same rows)."""
    from kafka_epochs.frame_rows import expand_paths
    from kafka_epochs.protocol_refs import protocol_ref
    from kafka_epochs.spark.datasource import register
    from kafka_epochs.spark.source_options import FORMAT
    from kafka_epochs.spark.split import read_split

    register(spark)
    files = expand_paths([str(p) for p in paths])
    large = [f for f in files if split_bytes and _splittable(f, split_bytes)]
    parts = [read_split(spark, f, ports=ports, protocol=protocol_ref(protocol) if protocol else None) for f in large]
    rest = [f for f in files if f not in large]
    if rest or not parts:
        reader = spark.read.format(FORMAT).option("flowBuckets", str(flow_buckets))
        if ports:
            reader = reader.option("ports", ",".join(str(p) for p in ports))
        if protocol:
            reader = reader.option("protocol", json.dumps([str(p) for p in protocol]))
        parts.insert(0, reader.load(rest))
    return functools.reduce(lambda a, b: a.unionByName(b), parts)


def _splittable(path: str, split_bytes: int) -> bool:
    from kafka_epochs.capture.files.ranges import splittable

    try:
        return os.path.getsize(path) > split_bytes and splittable(path)
    except OSError:
        return False  # the data source reports an unreadable file as a row


def decode_summary(decoded: DataFrame, seconds: float, startup: float = 0.0, projected: bool = False) -> str:
    """Counts of what a decode wrote: rows, errors, per api and direction (one small aggregation).

    ``projected``: rows are projected rows (several per frame, or one), so frames are counted by
    their capture and sequence number, and errors once per frame.
    """
    from pyspark.sql import functions as F

    if projected:
        decoded = decoded.dropDuplicates(["capture", "seq"])

    counts = (
        decoded.groupBy("api_name", "direction")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.count("error").alias("errors"),
            F.count("capture_error").alias("capture_errors"),
        )
        .collect()
    )
    total = sum(r["rows"] for r in counts)
    errors = sum(r["errors"] - r["capture_errors"] for r in counts)  # a capture-error row has no frame to decode
    capture_errors = sum(r["capture_errors"] for r in counts)
    per_api: dict[str, int] = {}
    for r in counts:
        if r["api_name"] is not None:
            per_api[r["api_name"]] = per_api.get(r["api_name"], 0) + r["rows"]
    rate = total / seconds if seconds > 0 else 0.0
    lines = [
        f"{total} frames decoded in {seconds:.1f} s ({rate:,.0f} frames/s, after a {startup:.1f} s Spark "
        f"start-up): {errors} could not be decoded, "
        f"{capture_errors} capture problems (gaps, bad packets, unreadable files)"
    ]
    if per_api:
        lines.append("per api: " + ", ".join(f"{k} {v}" for k, v in sorted(per_api.items())))
    return "\n".join(lines)


def spread(spark: SparkSession, frames: DataFrame, partitions: int | None) -> DataFrame:
    """Repartition the frames when the captures give fewer partitions than there are cores.

    One large capture is one read task; decoding is the costly part and every row carries what
    its decoding needs, so spreading the rows costs one shuffle of the frame bytes and nothing else.
    """
    wanted = partitions or spark.sparkContext.defaultParallelism
    if frames.rdd.getNumPartitions() < wanted:
        return frames.repartition(wanted)
    return frames

"""``kafka-epochs spark-decode`` and ``kafka-epochs audit``: the Spark jobs behind the command line.

``add_spark_commands(subparsers)`` adds both to the ``kafka-epochs`` parser. Nothing Spark is
imported until a command runs, so the rest of the command line works without the extra.

spark-decode: captures -> ``kafka-capture`` data source -> ``decode_frames`` -> Parquet or JSON
files under ``--out``, then a summary read back from what was written. Bad frames and capture
problems are rows with ``error`` / ``capture_error`` set; the job itself succeeds (exit 0).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The data source columns that decoding replaces (decode_frames gives its own of these names).
_DECODED_AGAIN = ("frame", "direction", "correlation_id")
DEFAULT_MASTER = "local[*]"
#: Uncompressed pcap and pcapng files larger than this are read in ranges by many tasks (``--split-mb``).
DEFAULT_SPLIT_BYTES = 256 << 20


def add_spark_commands(subparsers: Any) -> None:
    """Add ``spark-decode`` and ``audit`` to an ``argparse`` subparsers object."""
    dec = subparsers.add_parser(
        "spark-decode", help="decode captures with Spark (embedded, local by default) into Parquet or JSON"
    )
    dec.add_argument("captures", nargs="+", help="pcap/pcapng files, directories of them, or globs")
    dec.add_argument("--out", type=Path, required=True, help="output directory (Spark writes part files there)")
    _common(dec)
    dec.add_argument(
        "--format",
        choices=("parquet", "json"),
        default="parquet",
        help="what Spark writes under --out: parquet (default) or JSON lines part files",
    )
    dec.add_argument(
        "--partitions",
        type=int,
        metavar="N",
        help="decode in N partitions (default: Spark's parallelism when the captures give fewer)",
    )
    dec.add_argument("--keep-frames", action="store_true", help="keep the frame bytes in the output")
    dec.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    dec.add_argument(
        "--fields",
        action="append",
        metavar="PATH,...",
        help="instead of body_json, one typed column per field path, read by projection (each message reads "
        "the paths it has; one row per innermost array element; see docs/projections.md); repeatable",
    )
    dec.add_argument(
        "--headers-only", action="store_true", help="read no body: headers, pairing and timing only (body_json null)"
    )
    dec.set_defaults(run=run_spark_decode)

    aud = subparsers.add_parser(
        "audit",
        help="leader-epoch audit of captures with Spark: timeline, stale requests, fenced responses, "
        "verdicts the brokers disagree with",
    )
    aud.add_argument("inputs", nargs="+", help="captures (as for spark-decode), or with --table frame tables")
    aud.add_argument(
        "--table",
        action="store_true",
        help="inputs are Parquet tables of frames (columns as the kafka-capture source gives them)",
    )
    _common(aud)
    aud.add_argument("--out", type=Path, help="also write the five tables under this directory")
    aud.add_argument("--format", choices=("parquet", "json"), default="parquet", help="format of --out")
    aud.add_argument("--rows", type=int, default=50, metavar="N", help="rows of each table to print (default 50)")
    aud.add_argument(
        "--follow",
        action="store_true",
        help="keep auditing one directory as capture files land in it (rotating captures), printing each new "
        "incident once; stop with Ctrl-C",
    )
    aud.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="--follow's state (frames read, checkpoint, incidents printed): the same DIR resumes a follow",
    )
    aud.add_argument("--trigger-seconds", type=float, default=5.0, help="--follow: how often to look (default 5)")
    aud.add_argument(
        "--settle-seconds",
        type=float,
        default=2.0,
        help="--follow: a file unchanged this long is complete (default 2)",
    )
    aud.add_argument(
        "--once",
        action="store_true",
        help="--follow: read the files complete by now, print, and stop (an incremental audit for a scheduled "
        "job: the same --state resumes it)",
    )
    aud.add_argument("--stop-after", type=float, metavar="SECONDS", help=argparse.SUPPRESS)  # for scripts and tests
    aud.add_argument(
        "--report",
        type=Path,
        metavar="OUT.html",
        help="also write the audit as one self-contained HTML page: summary, timelines, incidents explained "
        "(needs the report extra: pip install 'kafka-epochs[report]')",
    )
    aud.add_argument(
        "--report-partitions",
        type=int,
        default=20,
        metavar="N",
        help="partitions the report draws, those with the most incidents first (default 20)",
    )
    aud.add_argument(
        "--equal-epoch",
        choices=("accept", "fence"),
        default="accept",
        help="StopReplica at the replica's own epoch: accept (Kafka after KAFKA-13972) or fence",
    )
    aud.add_argument(
        "--cluster-by",
        choices=("auto", "capture", "broker", "cluster-id"),
        default="auto",
        help="how traffic is split into clusters, each judged against its own epochs: auto (default: "
        "Metadata's broker lists, cluster ids and topic ids, captures apart unless an id links "
        "them), capture (one cluster per file), broker (broker endpoints across files), "
        "cluster-id (the reported cluster id)",
    )
    aud.set_defaults(run=run_audit)


def _common(parser: argparse.ArgumentParser) -> None:
    from kafka_epochs.cli import add_protocol_option

    add_protocol_option(parser)
    parser.add_argument(
        "--master",
        default=DEFAULT_MASTER,
        help=f"Spark master (default {DEFAULT_MASTER}: embedded, all cores, loopback only)",
    )
    parser.add_argument(
        "--port",
        type=int,
        action="append",
        metavar="N",
        help="a Kafka broker port (repeatable; default 9092 plus ports seen in handshakes)",
    )
    parser.add_argument(
        "--flow-buckets",
        type=int,
        default=1,
        metavar="N",
        help="read each capture as N partitions split by connection (default 1)",
    )
    parser.add_argument(
        "--split-mb",
        type=int,
        default=DEFAULT_SPLIT_BYTES >> 20,
        metavar="N",
        help=f"read an uncompressed pcap or pcapng file larger than N MiB in byte ranges by many tasks "
        f"(the same rows; default {DEFAULT_SPLIT_BYTES >> 20}, 0: never)",
    )
    parser.add_argument("--quiet", action="store_true", help="no Spark progress bar and no summary")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=_conf_pair,
        help="a Spark setting (repeatable), as spark-submit takes it: e.g. on a cluster "
        "spark.pyspark.python=/opt/env/bin/python or spark.archives=env.tar.gz#env",
    )


# -- spark-decode ------------------------------------------------------------------------------


def run_spark_decode(args: argparse.Namespace) -> int:
    if not _spark_installed():
        return 2
    from kafka_epochs.spark.api import decode_frames

    # everything that can be refused is checked before Spark starts: a refusal should not cost a
    # session start-up, nor print a JVM stack trace
    if args.out.exists() and not args.overwrite:
        print(f"kafka-epochs: {args.out} exists (add --overwrite to replace it)", file=sys.stderr)
        return 2
    captures = capture_paths(args.captures)
    if captures is None:
        return 2
    fields = [p.strip() for option in args.fields or [] for p in option.split(",") if p.strip()]
    if fields:
        from kafka_epochs.spark.projected import AnyPlan

        if args.headers_only:
            print("kafka-epochs: --headers-only reads no body: give it or --fields, not both", file=sys.stderr)
            return 2
        try:
            AnyPlan(fields, args.protocol)  # refuse a path no message has before Spark starts
        except ValueError as e:
            print(f"kafka-epochs: --fields: {e}", file=sys.stderr)
            return 2
    starting = time.monotonic()
    spark = session(args.master, quiet=args.quiet, conf=dict(args.conf))
    started = time.monotonic()
    frames = _captures(spark, captures, args)
    frames = _spread(spark, frames, args.partitions)
    keep = [c for c in frames.columns if c not in _DECODED_AGAIN or (args.keep_frames and c == "frame")]
    decoded = decode_frames(
        frames,
        keep=keep,
        direction_col="direction",
        request_api_key_col="request_api_key",
        request_api_version_col="request_api_version",
        protocol=args.protocol,
        headers_only=args.headers_only or (args.fields is not None and not fields),
        fields=fields or None,
    )
    # microsecond Parquet timestamps, whatever session this is (a cluster's own may say INT96)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    decoded.write.mode("overwrite" if args.overwrite else "errorifexists").format(args.format).save(str(args.out))
    if not args.quiet:
        decoding = time.monotonic() - started
        written = spark.read.schema(decoded.schema).format(args.format).load(str(args.out))
        print(decode_summary(written, decoding, started - starting, projected=bool(fields)), file=sys.stderr)
    return 0


def capture_paths(given: list[str]) -> list[str] | None:
    """The capture files ``given`` names, as absolute paths (the data source may plan in another
    directory); None after a one-line error for a path that names no capture."""
    from kafka_epochs.frame_rows import expand_paths

    try:
        return expand_paths(given)
    except FileNotFoundError as e:
        print(f"kafka-epochs: {e} (give pcap/pcapng files, directories holding them, or globs)", file=sys.stderr)
        return None


def table_paths(given: list[str]) -> list[str] | None:
    """Frame tables (Parquet files or directories) as absolute paths; None after a one-line error."""
    missing = [path for path in given if not Path(path).exists()]
    if missing:
        print(f"kafka-epochs: no frame table at {', '.join(missing)}", file=sys.stderr)
        return None
    return [str(Path(path).resolve()) for path in given]


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


def _spread(spark: SparkSession, frames: DataFrame, partitions: int | None) -> DataFrame:
    """Repartition the frames when the captures give fewer partitions than there are cores.

    One large capture is one read task; decoding is the costly part and every row carries what
    its decoding needs, so spreading the rows costs one shuffle of the frame bytes and nothing else.
    """
    wanted = partitions or spark.sparkContext.defaultParallelism
    if frames.rdd.getNumPartitions() < wanted:
        return frames.repartition(wanted)
    return frames


# -- audit -------------------------------------------------------------------------------------


def run_audit(args: argparse.Namespace) -> int:
    if not _spark_installed():
        return 2
    from kafka_epochs.epochs import EqualEpochPolicy
    from kafka_epochs.spark.epoch_audit import audit

    if args.follow:
        return _follow(args)
    inputs = table_paths(args.inputs) if args.table else capture_paths(args.inputs)
    if inputs is None or (args.report is not None and not _report_installed()):
        return 2
    spark = session(args.master, quiet=args.quiet, conf=dict(args.conf))
    if args.table:
        frames = spark.read.parquet(*inputs)
    else:
        frames = _captures(spark, inputs, args)
    policy = EqualEpochPolicy.FENCE if args.equal_epoch == "fence" else EqualEpochPolicy.ACCEPT
    result = audit(frames, protocol=args.protocol, equal_epoch=policy, cluster_key=args.cluster_by)
    for name, table in result.tables().items():
        table = table.cache()  # counted, shown and written: computed once
        rows = table.count()
        print(f"\n== {name}: {rows} rows ==")
        if rows:
            table.show(args.rows, truncate=False)  # prints to sys.stdout
        if args.out is not None:
            table.write.mode("overwrite").format(args.format).save(str(args.out / name))
        table.unpersist()
    if args.report is not None:
        written = result.report(args.report, max_partitions=args.report_partitions, sources=args.inputs)
        print(f"\nreport: {written}")
    unreadable = result.unreadable()
    for cluster_id, names in result.split_clusters.items():
        print(
            f"\nkafka-epochs: cluster id {cluster_id} names {len(names)} separate clusters (they give one topic "
            f"name different topic ids): {', '.join(names)}; judged apart (--cluster-by cluster-id judges them as one)",
            file=sys.stderr,
        )
    result.unpersist()
    if unreadable:  # an all-clear is only as good as the frames it read: never a silent exit 0
        print(
            f"\nkafka-epochs: {unreadable.unreadable:,} frames that could carry epochs did not decode; "
            f"{unreadable.coverage} ({'; '.join(f'{why} ({n:,})' for why, n in unreadable.unreadable_reasons)})",
            file=sys.stderr,
        )
        return 1
    return 0


def _follow(args: argparse.Namespace) -> int:
    if len(args.inputs) != 1 or not Path(args.inputs[0]).is_dir() or args.table:
        print("kafka-epochs: audit --follow takes one directory of capture files", file=sys.stderr)
        return 2
    from kafka_epochs.epochs import EqualEpochPolicy
    from kafka_epochs.spark.follow import Follow

    state = args.state or Path(tempfile.mkdtemp(prefix="kafka-epochs-follow-"))
    state.mkdir(parents=True, exist_ok=True)
    spark = session(args.master, quiet=args.quiet, conf=dict(args.conf))
    policy = EqualEpochPolicy.FENCE if args.equal_epoch == "fence" else EqualEpochPolicy.ACCEPT
    if not args.quiet:
        print(f"following {args.inputs[0]} (state in {state}); Ctrl-C stops", file=sys.stderr)
    follow = Follow(
        spark,
        str(Path(args.inputs[0]).resolve()),
        state,
        protocol=args.protocol,
        equal_epoch=policy,
        cluster_key=args.cluster_by,
        trigger_seconds=args.trigger_seconds,
        settle_seconds=args.settle_seconds,
        out=sys.stdout,
    )
    return follow.run(stop_after=args.stop_after, once=args.once)


def _report_installed() -> bool:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        print(
            "kafka-epochs: --report needs the report extra (matplotlib missing): pip install 'kafka-epochs[report]'",
            file=sys.stderr,
        )
        return False
    return True


# -- shared ------------------------------------------------------------------------------------


def _spark_installed() -> bool:
    """Whether the ``spark`` extra is there; says how to get it when not (the commands exist anyway)."""
    import importlib.util

    missing = [m for m in ("pyspark", "pyarrow", "pandas", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        print(
            f"kafka-epochs: this command needs the spark extra ({', '.join(missing)} missing): "
            "pip install 'kafka-epochs[spark]'",
            file=sys.stderr,
        )
    return not missing


def _conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--conf takes KEY=VALUE, not {text!r}")
    return key.strip(), value


def session(
    master: str, *, quiet: bool = False, app_name: str = "kafka-epochs", conf: dict[str, str] | None = None
) -> SparkSession:
    """A SparkSession for the commands: :func:`local_session` for local masters, else a plain one.

    Spark's stage progress bar shows only on a terminal and not with ``quiet``; ``quiet`` also
    starts the JVM with a log4j configuration that lets only errors through, and sends what the
    JVM itself prints on start-up (not through log4j) to :data:`JVM_LOG` instead of the terminal.
    """
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


def _captures(spark: SparkSession, paths: list[str], args: argparse.Namespace) -> DataFrame:
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
    from kafka_epochs.spark.datasource import FORMAT, register
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

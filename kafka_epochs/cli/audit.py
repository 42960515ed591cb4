"""``kafka-epochs audit``: the leader-epoch audit of captures, said in words.

Two engines run the same rules (:mod:`kafka_epochs.audit`): in-process (pure Python and PyArrow,
no JVM: seconds for what fits one machine) and Spark (any master, for what does not). ``--engine
auto`` (the default) takes the in-process one unless a Spark master is named, the inputs are
larger than :data:`~kafka_epochs.audit.local.LOCAL_ENGINE_BYTES`, or the command follows a
directory. Both print the same: a summary (span, clusters, clients, brokers, partitions,
incidents by rule, frames that could not be read), then each incident in words with the
``kafka-epochs decode`` call that shows its frame; ``--format table`` or ``jsonl`` give the
incident rows instead, ``--timeline`` adds the leader epochs seen, ``--out DIR`` writes both
tables. Exit status: 0, or 1 when frames that could carry epochs did not decode (an all-clear
is only as good as the frames it read), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_epochs.cli.options import (
    add_spark_options,
    arrow_installed,
    at_least,
    capture_paths,
    report_installed,
    seconds,
    spark_installed,
    table_paths,
)

if TYPE_CHECKING:  # (the findings' model is loaded by an audit, not by every command's parser)
    from kafka_epochs.audit.findings import Findings

__all__ = ["add_audit_command", "run_audit"]

ENGINES = ("auto", "local", "spark")
FORMATS = ("words", "table", "jsonl")


def add_audit_command(commands: Any) -> None:
    """Add ``audit`` to the ``kafka-epochs`` parser's subcommands."""
    aud = commands.add_parser(
        "audit",
        help="leader-epoch audit of captures: stale requests, fenced answers and StopReplicas, in words",
        description="The leader-epoch audit of captures (KIP-320, KIP-359, KIP-570): a summary, then each "
        "incident in words.",
    )
    aud.add_argument("inputs", nargs="+", help="captures (files, directories, globs), or with --table frame tables")
    aud.add_argument(
        "--table",
        action="store_true",
        help="inputs are Parquet tables of frames (columns as the kafka-capture source gives them)",
    )
    aud.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="local: in this process (no JVM); spark: on Spark (--master); auto (default): local unless a "
        "master is named or the inputs pass 256 MiB",
    )
    add_spark_options(aud)
    aud.add_argument(
        "--format",
        choices=FORMATS,
        default="words",
        help="words (default): the summary and each incident explained; table: the incident rows aligned; "
        "jsonl: one JSON object per row (the summary goes to stderr)",
    )
    aud.add_argument("--timeline", action="store_true", help="also print the leader epochs seen, per partition")
    aud.add_argument(
        "--rows", type=at_least(0), default=50, metavar="N", help="incidents printed in words or table (default 50)"
    )
    aud.add_argument("--out", type=Path, help="also write the tables (incidents, timeline) under this directory")
    aud.add_argument("--out-format", choices=("parquet", "json"), default="parquet", help="format of --out")
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
    aud.add_argument("--trigger-seconds", type=seconds, default=5.0, help="--follow: how often to look (default 5)")
    aud.add_argument(
        "--settle-seconds",
        type=seconds,
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
        type=at_least(0),
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


def run_audit(args: argparse.Namespace) -> int:
    if not arrow_installed():  # (every way of auditing reads Arrow: said before anything is read)
        return 2
    if args.follow:
        return _follow(args)
    inputs = table_paths(args.inputs) if args.table else capture_paths(args.inputs)
    if inputs is None or (args.report is not None and not report_installed()):
        return 2
    with _pandas_kept_out():
        engine = choose_engine(args, inputs)
        if engine == "local":
            found = _audit_here(args, inputs)
            Printer(args, found.engine, len(inputs)).print(found)
    if engine == "spark":
        if not spark_installed():
            return 2
        found = _audit_on_spark(args, inputs)
    summary = found.summary
    # an all-clear is only as good as what it read: never a silent exit 0
    if summary.unreadable:
        reasons = "; ".join(f"{why} ({n:,})" for why, n in summary.unreadable_reasons)
        print(
            f"kafka-epochs: {summary.unreadable:,} frames that could carry epochs did not decode; "
            f"{summary.coverage} ({reasons})",
            file=sys.stderr,
        )
    if summary.capture_problems:
        print(
            f"kafka-epochs: {len(summary.capture_problems):,} of {len(inputs):,} captures were not read whole; "
            "the verdicts cover what was read",
            file=sys.stderr,
        )
    return 0 if summary.complete else 1


class _NoPandas:
    """An import finder that refuses pandas (see :func:`_pandas_kept_out`)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is kept out of the in-process audit: PyArrow asks for it, nothing uses it")


@contextlib.contextmanager
def _pandas_kept_out() -> Iterator[None]:
    """``import pandas`` fails while this lasts (unless pandas is loaded already). PyArrow imports
    pandas, when it is installed, each time it builds an array from Python objects until it has
    it (to ask whether they are pandas'): a third of the CPU an in-process audit of a real
    capture took (0.33 of 1.0 s), for a question whose answer is no. Nothing of the in-process
    audit uses pandas; the Spark engine, which does, runs after this is over."""
    if "pandas" in sys.modules:
        yield
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _policy(args: argparse.Namespace) -> Any:
    from kafka_epochs.epochs import EqualEpochPolicy

    return EqualEpochPolicy.FENCE if args.equal_epoch == "fence" else EqualEpochPolicy.ACCEPT


def _audit_here(args: argparse.Namespace, inputs: list[str]) -> Findings:
    from kafka_epochs.audit.local import audit_captures, audit_frame_batches

    options = {"protocol": args.protocol, "equal_epoch": _policy(args), "cluster_key": args.cluster_by}
    if args.table:
        import pyarrow.dataset as ds  # type: ignore[import-untyped]

        from kafka_epochs.audit.events import check_frame_columns

        # one dataset per input (a directory of part files, as Spark writes a table, or a file)
        tables = [ds.dataset(path, format="parquet") for path in inputs]
        for path, table in zip(inputs, tables, strict=True):
            check_frame_columns(table.schema.names, path)
        dataset = tables[0] if len(tables) == 1 else ds.dataset(tables)
        found = audit_frame_batches(dataset.to_batches(), **options)
    else:
        found = audit_captures(inputs, ports=args.port, **options)
    found.sources, found.partitions = list(args.inputs), args.report_partitions
    return found


def _audit_on_spark(args: argparse.Namespace, inputs: list[str]) -> Findings:
    """The audit on Spark, printed (its findings are read by Spark jobs as they are printed)."""
    from kafka_epochs.spark.audit_counts import capture_problems
    from kafka_epochs.spark.audit_findings import SparkFindings
    from kafka_epochs.spark.epoch_audit import audit
    from kafka_epochs.spark.job import captures_for, ctrl_c_cancels, session

    spark = session(args.master, quiet=args.quiet, conf=dict(args.conf))
    with ctrl_c_cancels(spark):
        if args.table:
            from kafka_epochs.audit.events import check_frame_columns

            frames = spark.read.parquet(*inputs)
            check_frame_columns(frames.columns, ", ".join(inputs))
        else:
            frames = captures_for(spark, inputs, args)
        result = audit(frames, protocol=args.protocol, equal_epoch=_policy(args), cluster_key=args.cluster_by)
        found = SparkFindings(
            result,
            spark.sparkContext.master or "?",
            sources=args.inputs,
            partitions=args.report_partitions,
            problems=capture_problems(frames),
        )
        Printer(args, found.engine, len(inputs)).print(found)
    return found


def choose_engine(args: argparse.Namespace, inputs: list[str]) -> str:
    """The engine ``--engine`` names, or for ``auto``: in-process unless a Spark master is named
    or the inputs are larger than the in-process engine is meant for."""
    if args.engine != "auto":
        return str(args.engine)
    from kafka_epochs.audit.local import LOCAL_ENGINE_BYTES

    if args.master is not None:
        return "spark"
    size = sum(_size(path) for path in inputs)
    return "local" if size <= LOCAL_ENGINE_BYTES else "spark"


def _size(path: str) -> int:
    if os.path.isdir(path):
        return sum(_size(os.path.join(path, name)) for name in os.listdir(path))
    return os.path.getsize(path)


class Printer:
    """Prints an audit's findings as ``--format`` says (the same for both engines)."""

    def __init__(self, args: argparse.Namespace, engine: str, captures: int) -> None:
        self.args, self.engine, self.captures = args, engine, captures

    def print(self, found: Findings) -> None:
        from kafka_epochs.audit.incidents import summary_lines

        args, out = self.args, sys.stdout
        head = "\n".join(summary_lines(found.summary, self.captures, self.engine))
        if args.format == "jsonl":
            print(head, file=sys.stderr)
            for row in found.incidents():
                out.write(json.dumps({"table": "incidents", **row}, default=str) + "\n")
            if args.timeline:
                for row in found.timeline():
                    out.write(json.dumps({"table": "timeline", **row}, default=str) + "\n")
        else:
            print(head, file=out)
            self._incidents(found.incidents(limit=args.rows), found.incident_count)
            if args.timeline:
                self._timeline(found.timeline())
        if args.out is not None:
            found.write(args.out, args.out_format)
            print(f"\nwrote the tables incidents/ and timeline/ under {args.out}", file=sys.stderr)
        if args.report is not None:
            print(f"\nreport: {found.report(args.report)}", file=sys.stderr)

    def _incidents(self, rows: Iterable[dict[str, Any]], count: int) -> None:
        from kafka_epochs.audit.incidents import incident_line, table_lines

        rows = list(rows)
        if not rows:
            return
        print(file=sys.stdout)
        if self.args.format == "table":
            for line in table_lines(rows):
                print(line)
        else:
            for row in rows:
                print(incident_line(row, command=True))
        if count > len(rows):
            print(f"... and {count - len(rows):,} more incidents (--rows N prints more; --format jsonl prints all)")

    @staticmethod
    def _timeline(rows: list[dict[str, Any]]) -> None:
        from kafka_epochs.audit.incidents import timeline_line

        print(f"\nleader epochs seen: {len(rows):,}")
        for row in rows:
            print("  " + timeline_line(row))


def _follow(args: argparse.Namespace) -> int:
    if len(args.inputs) != 1 or not Path(args.inputs[0]).is_dir() or args.table:
        print("kafka-epochs: audit --follow takes one directory of capture files", file=sys.stderr)
        return 2
    if args.engine == "local":
        print("kafka-epochs: audit --follow runs on Spark (its streaming source): drop --engine local", file=sys.stderr)
        return 2
    if not spark_installed():
        return 2
    import tempfile

    from kafka_epochs.epochs import EqualEpochPolicy
    from kafka_epochs.spark.follow import Follow
    from kafka_epochs.spark.job import session

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

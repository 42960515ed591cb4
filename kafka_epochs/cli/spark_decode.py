"""``kafka-epochs spark-decode``: captures decoded by Spark into Parquet or JSON files.

captures -> ``kafka-capture`` data source -> ``decode_frames`` -> Parquet or JSON files under
``--out``, then a summary read back from what was written. Bad frames and capture problems are
rows with ``error`` / ``capture_error`` set; the job itself succeeds (exit 0). Nothing Spark is
imported until the command runs, so the rest of the command line works without the extra.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kafka_epochs.cli.options import add_spark_options, at_least, capture_paths, spark_installed

#: The data source columns that decoding replaces (decode_frames gives its own of these names).
_DECODED_AGAIN = ("frame", "direction", "correlation_id")


def add_spark_decode_command(commands: Any) -> None:
    """Add ``spark-decode`` to the ``kafka-epochs`` parser's subcommands."""
    dec = commands.add_parser(
        "spark-decode", help="decode captures with Spark (embedded, local by default) into Parquet or JSON"
    )
    dec.add_argument("captures", nargs="+", help="pcap/pcapng files, directories of them, or globs")
    dec.add_argument("--out", type=Path, required=True, help="output directory (Spark writes part files there)")
    add_spark_options(dec)
    dec.add_argument(
        "--format",
        choices=("parquet", "json"),
        default="parquet",
        help="what Spark writes under --out: parquet (default) or JSON lines part files",
    )
    dec.add_argument(
        "--partitions",
        type=at_least(1),
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


def run_spark_decode(args: argparse.Namespace) -> int:
    if not spark_installed():
        return 2
    from kafka_epochs.spark.job import ctrl_c_cancels, session

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
    with ctrl_c_cancels(spark):
        return _decode(spark, captures, fields, args, starting)


def _decode(spark: Any, captures: list[str], fields: list[str], args: argparse.Namespace, starting: float) -> int:
    from kafka_epochs.spark.api import decode_frames
    from kafka_epochs.spark.job import captures_for, decode_summary, spread

    started = time.monotonic()
    frames = captures_for(spark, captures, args)
    frames = spread(spark, frames, args.partitions)
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

"""Options several commands share: how to read bodies (``--protocol``), and how to run Spark."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "add_protocol_option",
    "add_spark_options",
    "arrow_installed",
    "capture_paths",
    "protocol_choice",
    "protocol_for",
    "report_installed",
    "spark_installed",
    "table_paths",
]


def protocol_for(choices: list[str] | None) -> Any:
    """The protocol of ``--protocol``/``--specs`` values: a profile name or a spec directory each,
    chained in order when there are several; ``auto`` when none is given."""
    from kafka_epochs.protocol import PROFILES, Protocol, ProtocolChain

    def generating(target: Path) -> None:
        print(
            f"kafka-epochs: generating decoders for a spec directory on its first use (a few seconds; "
            f"cached in {target})",
            file=sys.stderr,
        )

    protocols = [
        getattr(Protocol, choice)() if choice in PROFILES else Protocol.from_specs(choice, on_generate=generating)
        for choice in choices or ["auto"]
    ]
    return protocols[0] if len(protocols) == 1 else ProtocolChain(protocols)


def protocol_choice(text: str) -> str:
    """An argparse type for ``--protocol``/``--specs``: a profile name, or a directory of specs."""
    from kafka_epochs.protocol import PROFILES

    if text in PROFILES:
        return text
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is neither a profile ({', '.join(PROFILES)}) nor a directory")
    try:
        names = os.listdir(text)
    except OSError:
        names = []  # (unreadable: it holds no specs this can read)
    if not any(name.endswith(".json") for name in names):
        raise argparse.ArgumentTypeError(f"{text} holds no Kafka message specs (no *.json files)")
    return text


def add_protocol_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol",
        action="append",
        metavar="apache|kip|auto|DIR",
        dest="protocol",
        type=protocol_choice,
        help="how to read bodies: 'auto' (default: Apache Kafka's layouts, and the KIP layouts of "
        "messages/ where only they fit a frame), 'apache', 'kip', or a spec directory; repeatable: "
        "the first that defines a frame's api and version reads it",
    )
    parser.add_argument(
        "--specs",
        action="append",
        metavar="DIR",
        dest="protocol",
        type=protocol_choice,
        help="a spec directory (same as --protocol DIR)",
    )


def add_spark_options(parser: argparse.ArgumentParser) -> None:
    """The options of the commands that may run Spark: ``--protocol``, the master, ports, splitting."""
    from kafka_epochs.spark.defaults import DEFAULT_MASTER, DEFAULT_SPLIT_BYTES  # constants only: nothing imported

    add_protocol_option(parser)
    parser.add_argument(
        "--master",
        help=f"Spark master (default {DEFAULT_MASTER}: embedded, all cores, loopback only)",
    )
    parser.add_argument(
        "--port",
        type=tcp_port,
        action="append",
        metavar="N",
        help="a Kafka broker port (repeatable; default 9092 plus ports seen in handshakes)",
    )
    parser.add_argument(
        "--flow-buckets",
        type=at_least(1),
        default=1,
        metavar="N",
        help="read each capture as N partitions split by connection (default 1)",
    )
    parser.add_argument(
        "--split-mb",
        type=at_least(0),
        default=DEFAULT_SPLIT_BYTES >> 20,
        metavar="N",
        help=f"read an uncompressed pcap or pcapng file larger than N MiB in byte ranges by many tasks "
        f"(the same rows; default {DEFAULT_SPLIT_BYTES >> 20}, 0: never)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no Spark progress bar or start-up chatter (and no spark-decode summary)"
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=conf_pair,
        help="a Spark setting (repeatable), as spark-submit takes it: e.g. on a cluster "
        "spark.pyspark.python=/opt/env/bin/python or spark.archives=env.tar.gz#env",
    )


def tcp_port(text: str) -> int:
    """A ``--port`` value: a TCP port, 1 to 65535 (any other number is a typo, which would
    otherwise follow nothing and say nothing)."""
    from kafka_epochs.capture.network.tcp import PORTS  # (only when a port is given)

    port = _integer(text)
    if port not in PORTS:
        raise argparse.ArgumentTypeError(f"{text} is not a TCP port (1 to 65535)")
    return port


def at_least(minimum: int) -> Any:
    """An integer option's type that refuses numbers below ``minimum`` when parsed (before Spark starts)."""

    def count(text: str) -> int:
        value = _integer(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is less than {minimum}")
        return value

    return count


def seconds(text: str) -> float:
    """A duration option's type: seconds, 0 or more (a negative one would fail only once the
    follow had started, in Spark's trigger or in a sleep)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):  # (NaN fails this too)
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds, 0 or more")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def conf_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--conf takes KEY=VALUE, not {text!r}")
    return key.strip(), value


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
    missing = [path for path in given if not os.path.exists(path)]
    if missing:
        print(f"kafka-epochs: no frame table at {', '.join(missing)}", file=sys.stderr)
        return None
    return [os.path.realpath(path) for path in given]


def spark_installed() -> bool:
    """Whether the ``spark`` extra is there; says how to get it when not (the commands exist anyway)."""
    from importlib.util import find_spec  # (not at import: a decode's start does without it)

    missing = [m for m in ("pyspark", "pyarrow", "pandas", "numpy") if find_spec(m) is None]
    if missing:
        print(
            f"kafka-epochs: this command needs the spark extra ({', '.join(missing)} missing): "
            "pip install 'kafka-epochs[spark]'",
            file=sys.stderr,
        )
    return not missing


def arrow_installed() -> bool:
    """Whether PyArrow is there (the audit's in-process engine needs it); says how to get it when not."""
    from importlib.util import find_spec  # (not at import: a decode's start does without it)

    if find_spec("pyarrow") is None:
        print("kafka-epochs: the audit needs pyarrow: pip install 'kafka-epochs[spark]'", file=sys.stderr)
        return False
    return True


def report_installed() -> bool:
    from importlib.util import find_spec  # (not at import: a decode's start does without it)

    if find_spec("matplotlib") is None:
        print(
            "kafka-epochs: --report needs the report extra (matplotlib missing): pip install 'kafka-epochs[report]'",
            file=sys.stderr,
        )
        return False
    return True

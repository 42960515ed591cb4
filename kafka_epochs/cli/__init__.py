"""The kafka-epochs command line: generate codecs from specs, decode captures, audit epochs.

One module per command (``generate``/``catalogue``, ``decode``, ``spark-decode``, ``audit``),
each adding its parser and running it; :mod:`~kafka_epochs.cli.options` holds the options they
share. Nothing a command needs is imported before it runs, so ``--help`` and ``decode`` stay quick.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from kafka_epochs.errors import KafkaEpochsError

__all__ = ["build_parser", "main", "run"]

#: The parser's description: the module's first line, written out (``python -OO`` drops docstrings).
DESCRIPTION = "The kafka-epochs command line: generate codecs from specs, decode captures, audit epochs."
EXAMPLES = """examples:
  kafka-epochs decode capture.pcapng                      one JSON line per request/response pair
  kafka-epochs decode captures/ --format table --api produce --errors-only
  tcpdump -i any -w - port 9092 | kafka-epochs decode -   decode live traffic as it arrives
  kafka-epochs decode capture.pcap --protocol apache      Apache Kafka's layouts only
  kafka-epochs spark-decode captures/ --out decoded/      the same at scale, into Parquet
  kafka-epochs audit captures/                            leader-epoch timeline and fenced requests
  kafka-epochs generate --specs my-specs/ --out mypkg/    codecs for your own spec directory

'kafka-epochs COMMAND --help' describes each command's options."""


#: Each command's module and the function that adds its parser (``generate`` adds ``catalogue`` too).
_COMMANDS = {
    "generate": ("kafka_epochs.cli.generate", "add_generate_commands"),
    "catalogue": ("kafka_epochs.cli.generate", "add_generate_commands"),
    "decode": ("kafka_epochs.cli.decode", "add_decode_command"),
    "spark-decode": ("kafka_epochs.cli.spark_decode", "add_spark_decode_command"),
    "audit": ("kafka_epochs.cli.audit", "add_audit_command"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. Given the ``command`` a run names, only that command's parser
    is built and its module imported (the others' cost every run about 3 ms of a start that is
    most of what a small capture costs); anything else (``--help``, a name that is no command)
    gets them all."""
    parser = _Parser(
        prog="kafka-epochs",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=_RawDescriptionFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="show the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _COMMANDS.get(command or "")
    for module, adder in dict.fromkeys(_COMMANDS.values()) if chosen is None else (chosen,):
        getattr(importlib.import_module(module), adder)(commands)
    return parser


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, given the terminal's width. Left to find it, the formatter
    imports ``shutil`` (which imports ``bz2`` and ``lzma``), and argparse makes one for every
    argument it adds: about 2 ms of every run's start, for help that is seldom printed."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _RawDescriptionFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    """:class:`_Formatter` that prints descriptions and epilogues as written."""


class _Parser(argparse.ArgumentParser):
    """A parser whose help is formatted by :class:`_Formatter` unless told otherwise (the
    commands' parsers are of the top parser's class)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it: ``$COLUMNS`` when it is a
    positive number, else the width of the terminal on standard output, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked (package metadata is slow
    to import, and every other run would pay for it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-epochs")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


#: Allocations between two passes of the cyclic garbage collector in the command's own process
#: (Python's default is 700).
COLLECTOR_THRESHOLD = 50_000


def _tune_collector() -> None:
    """Decoding a capture makes and drops millions of small objects, nearly all freed by their
    reference counts, few in cycles: the cyclic collector's pass every 700 allocations mostly
    walks objects about to go anyway. Every 10,000 saved about 3% of ``decode``'s CPU on a real
    capture (paired runs), every 50,000 another 0.65% of the instructions of ``decode --fields``
    (kafka-python's capture), for at most a few megabytes of cyclic garbage held a little longer
    (x8's peak: 32.4 to 33.0 MB). A caller that runs :func:`main` in its own process (tests,
    notebooks) passes ``argv`` and keeps its settings."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(COLLECTOR_THRESHOLD, older, oldest)


#: The status of a command Ctrl-C stopped, as shells report a command SIGINT ended (128 + 2).
STOPPED_BY_CTRL_C = 130
#: What a command stopped part way leaves behind, by command.
_CUT_SHORT = {
    "audit": ": the audit is incomplete (what it printed or wrote, if anything, is part of it)",
    "spark-decode": ": the output may hold part of the frames (run it again with --overwrite)",
    "generate": ": the output may hold part of the modules (run it again)",
}


def run() -> NoReturn:
    """The ``kafka-epochs`` script and ``python -m kafka_epochs.cli``: :func:`main`, then exit.

    A ``decode`` ends without the interpreter's teardown, which frees every object and module one
    by one only for the process to end anyway: about 25 million instructions (2% of ``decode
    --fields`` on a real capture, 6% of a one-exchange one). What the teardown would still do that
    anyone can see is done first: the exit functions run and the standard streams are flushed
    (a reader gone, as ``head`` goes, is no error, as in :func:`main`). Other commands exit as
    usual: Spark's gateway and the audit's worker processes are shut down by the teardown."""
    status = main()
    if sys.argv[1:2] != ["decode"]:
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone (a broken pipe), or a stream closed
            stream.flush()
    os._exit(status)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; with no ``argv`` (the ``kafka-epochs`` script, ``python -m``), the
    process is the command's own, and its garbage collector is tuned for it (see below, and
    the objects of its start are frozen)."""
    if argv is None:
        _tune_collector()
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)  # exits with status 2 on bad usage
    if argv is None:
        # What is imported by now (the command's modules: some 11,000 objects the collector tracks)
        # lives until the process ends: the full passes need not walk it again and again (0.6% of
        # the instructions of `decode --fields` on a real capture).
        gc.freeze()
    try:
        return int(args.run(args))
    except BrokenPipeError:  # e.g. piped into head: the reader has what it wanted (before OSError, its base)
        sys.stderr.close()  # nothing more can be said, and Python must not complain at exit either
        return 0
    except (KafkaEpochsError, OSError, ValueError) as e:
        print(f"kafka-epochs: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C (decode stops itself, and sums up what it read)
        print(f"kafka-epochs: {words[0]} stopped by Ctrl-C{_CUT_SHORT.get(words[0], '')}", file=sys.stderr)
        return STOPPED_BY_CTRL_C

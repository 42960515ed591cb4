"""A run builds only the parser of the command it names: the same parse and help as the whole
parser gives, and the other commands' modules not imported; the help is argparse's own, though
its width is found without ``shutil``, and ``decode`` imports none of the modules only help or
rare inputs need."""

from __future__ import annotations

import argparse
import ast
import contextlib
import gzip
import io
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_epochs.cli import _COMMANDS, build_parser
from kafka_epochs.samples import CLIENTS_CAPTURE

ARGV = {
    "generate": ["generate", "--specs", "specs", "--out", "out"],
    "catalogue": ["catalogue", "--check"],
    "decode": ["decode", "a.pcap", "--fields", "error_code", "--api", "fetch"],
    "spark-decode": ["spark-decode", "a.pcap", "--out", "out"],
    "audit": ["audit", "a.pcap"],
}


def _help(parser: object, argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args(argv)  # type: ignore[attr-defined]
    return out.getvalue()


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_a_commands_own_parser_parses_as_the_whole_parser(command: str) -> None:
    whole, own = build_parser(), build_parser(command)
    argv = ARGV[command]
    assert vars(own.parse_args(argv)) == vars(whole.parse_args(argv))
    assert _help(own, [command, "--help"]) == _help(whole, [command, "--help"])


def test_anything_but_a_command_gets_every_parser() -> None:
    for first in (None, "--help", "nosuch", "-h"):
        assert _help(build_parser(first), ["--help"]) == _help(build_parser(), ["--help"])
    with pytest.raises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
        build_parser("nosuch").parse_args(["nosuch"])
    assert "choose from 'generate', 'catalogue', 'decode', 'spark-decode', 'audit'" in err.getvalue()


def on_clients_capture(script: str, cwd: Path | None = None) -> str:
    """What ``python -c script CLIENTS_CAPTURE`` prints: a run of the command in a process of its
    own (what it imports and makes at start is the point, and this process has it all loaded)."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(CLIENTS_CAPTURE)], capture_output=True, text=True, check=True, cwd=cwd
    )
    return done.stdout


def test_decode_imports_no_other_commands_module_nor_what_it_does_not_use() -> None:
    script = (
        "import sys, io, contextlib\n"
        "from kafka_epochs.cli import main\n"
        "sys.argv = ['kafka-epochs', 'decode', sys.argv[1], '--quiet']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main()\n"
        "print(sorted(m for m in sys.modules if m.startswith('kafka_epochs.')))\n"
    )
    loaded = ast.literal_eval(on_clients_capture(script))
    assert "kafka_epochs.cli.decode" in loaded
    assert not {"kafka_epochs.cli.audit", "kafka_epochs.cli.generate", "kafka_epochs.cli.spark_decode"} & set(loaded)
    # nor what this run does not use: pcapng reading (a pcap file), projections (no --fields)
    assert not {"kafka_epochs.capture.files.pcapng", "kafka_epochs.projection.emit"} & set(loaded)


@pytest.mark.parametrize("columns", [None, "40", "137", "not a number", "-5"])
@pytest.mark.parametrize("command", [None, *_COMMANDS])
def test_help_is_what_argparses_own_formatter_writes(
    command: str | None, columns: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    parser = build_parser(command)
    if command is not None:
        parser = parser._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    ours = parser.format_help()
    # the same parser, formatted by argparse's formatter, which asks shutil for the width
    parser.formatter_class = argparse.RawDescriptionHelpFormatter if command is None else argparse.HelpFormatter
    assert ours == parser.format_help()


def test_decode_imports_no_module_only_help_or_rare_inputs_need(tmp_path: Path) -> None:
    # shutil (and the bz2 and lzma it imports) for argparse's width, threading for the locks of
    # generated renderers and projections, gzip for gzipped captures, pathlib (and urllib.parse)
    # for directories (an editable install's import hook has imported those before: forgotten)
    script = (
        "import sys, io, contextlib\n"
        "for m in ('pathlib', 'urllib.parse', 'importlib.util'): sys.modules.pop(m, None)\n"
        "from kafka_epochs.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    for way in ([], ['--headers-only'], ['--fields', 'error_code']):\n"
        "        main(['decode', sys.argv[1], '--quiet', *way])\n"
        "seen = ('shutil', 'threading', 'gzip', 'bz2', 'lzma', 'pathlib', 'urllib.parse', 'importlib.util')\n"
        "print(sorted(m for m in seen if m in sys.modules))\n"
    )
    assert on_clients_capture(script, cwd=tmp_path).strip() == "[]"
    # a gzipped capture still reads (gzip imported when one is met)
    packed = tmp_path / "clients.pcap.gz"
    packed.write_bytes(gzip.compress(CLIENTS_CAPTURE.read_bytes()))
    lines, plain = (
        subprocess.run(
            [sys.executable, "-m", "kafka_epochs.cli", "decode", str(path), "--quiet"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        for path in (packed, CLIENTS_CAPTURE)
    )
    assert lines.stdout and (lines.stdout, lines.returncode) == (plain.stdout, plain.returncode), lines.stderr


def test_decode_compiles_no_frame_search_pattern_a_capture_in_sync_does_not_need() -> None:
    # they are compiled at the first search for a frame start (a stream joined mid-way, a gap):
    # 4 million instructions that every start paid before, and most captures never search
    script = (
        "import sys, io, contextlib, re\n"
        "from kafka_epochs.cli import main\n"
        "from kafka_epochs.resync import REQUEST_CANDIDATES, RESPONSE_CANDIDATES\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['decode', sys.argv[1], '--quiet', '--fields', 'error_code'])\n"
        "compiled = {key[1] for key in re._cache}\n"  # (re's own cache of what it compiled)
        "texts = [getattr(p, 'pattern', p) for p in (REQUEST_CANDIDATES, RESPONSE_CANDIDATES)]\n"
        "print(*(text in compiled for text in texts))\n"
    )
    assert on_clients_capture(script).split() == ["False", "False"]


def test_decode_makes_typing_compile_no_annotation() -> None:
    """A ``NamedTuple`` whose fields are annotated as strings (``from __future__ import
    annotations``), or a ``TypeVar`` bound by a class's name, has typing compile each string
    when its module is imported: 0.4 million instructions apiece, 17 million (1.3%) of a
    ``decode --fields`` of kafka-python's capture when the decode path had 43."""
    script = (
        "import sys, io, contextlib, typing\n"
        "made = []\n"
        "plain = typing.ForwardRef.__init__\n"
        "def counted(self, arg, *args, **kwargs):\n"
        "    made.append(arg)\n"
        "    plain(self, arg, *args, **kwargs)\n"
        "typing.ForwardRef.__init__ = counted\n"
        "from kafka_epochs.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    for way in ([], ['--headers-only'], ['--fields', 'error_code,topics[].partitions[].leader_epoch']):\n"
        "        main(['decode', sys.argv[1], '--quiet', *way])\n"
        "print(made)\n"
    )
    made = on_clients_capture(script)
    assert made.strip() == "[]", made


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (["decode", "x.pcap", "--port", "0"], "0 is not a TCP port (1 to 65535)"),
        (["decode", "x.pcap", "--port", "70000"], "70000 is not a TCP port"),
        (["decode", "x.pcap", "--port", "9O92"], "'9O92' is not a whole number"),
        (["spark-decode", "x.pcap", "--out", "o", "--port", "65536"], "65536 is not a TCP port"),
        (["spark-decode", "x.pcap", "--out", "o", "--flow-buckets", "0"], "argument --flow-buckets: 0 is less than 1"),
        (["audit", "x.pcap", "--split-mb", "-1"], "argument --split-mb: -1 is less than 0"),
        (["audit", "x.pcap", "--rows", "-1"], "argument --rows: -1 is less than 0"),
        (["audit", "x.pcap", "--follow", "--rows", "-1"], "argument --rows: -1 is less than 0"),
        # (a slice of the ranked partitions would have dropped the last 3 and drawn the rest)
        (["audit", "x.pcap", "--report-partitions", "-3"], "argument --report-partitions: -3 is less than 0"),
        # (-5 was taken, and spread nothing; 0 meant the default)
        (["spark-decode", "x.pcap", "--out", "o", "--partitions", "0"], "argument --partitions: 0 is less than 1"),
        # (a negative settle time failed in time.sleep once the follow had started)
        (["audit", "d", "--follow", "--settle-seconds", "-1"], "-1 is not a number of seconds, 0 or more"),
        (["audit", "d", "--follow", "--trigger-seconds", "nan"], "nan is not a number of seconds"),
        (["audit", "d", "--follow", "--trigger-seconds", "5s"], "'5s' is not a number of seconds"),
    ],
)
def test_a_number_no_run_could_use_is_refused_as_it_is_parsed(argv: list[str], refusal: str) -> None:
    """A port that cannot exist would follow nothing and say nothing; a bucket count of 0 would
    be refused only after Spark's start-up."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exited:
        build_parser(argv[0]).parse_args(argv)
    assert exited.value.code == 2 and refusal in err.getvalue()


def test_the_numbers_a_run_can_use_are_taken() -> None:
    args = build_parser("decode").parse_args(["decode", "x.pcap", "--port", "1", "--port", "65535"])
    assert args.port == [1, 65535]
    args = build_parser("spark-decode").parse_args(
        ["spark-decode", "x.pcap", "--out", "o", "--flow-buckets", "1", "--split-mb", "0"]
    )
    assert (args.flow_buckets, args.split_mb) == (1, 0)
    args = build_parser("spark-decode").parse_args(["spark-decode", "x.pcap", "--out", "o", "--partitions", "1"])
    assert args.partitions == 1
    args = build_parser("audit").parse_args(
        ["audit", "d", "--follow", "--settle-seconds", "0", "--trigger-seconds", "0.5"]
    )
    assert (args.settle_seconds, args.trigger_seconds) == (0.0, 0.5)

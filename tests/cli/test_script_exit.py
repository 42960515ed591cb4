"""The ``kafka-epochs`` script (``cli.run``) ends a ``decode`` without the interpreter's teardown,
after doing what that teardown would do that anyone can see: its output, exit status and exit
functions are those of an ordinary exit."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

from kafka_epochs.cli import main
from kafka_epochs.samples import CLIENTS_CAPTURE, SAMPLE_CAPTURE

SCRIPT = str(Path(sys.executable).parent / "kafka-epochs")

#: A process that runs the script's entry with a witness of each way out: an exit function, and an
#: audit hook that hears the interpreter's teardown (its state cleared, which only that does).
_WITNESSED = """
import atexit, os, sys
atexit.register(lambda: print("exit functions ran", file=sys.stderr))

def witness(event, args, write=os.write):  # (bound now: the teardown clears os and sys)
    if event == "cpython.PyInterpreterState_Clear":
        write(2, b"torn down\\n")

sys.addaudithook(witness)
from kafka_epochs.cli import run
sys.argv = ["kafka-epochs", *sys.argv[1:]]
run()
"""


def in_process(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = main(list(argv))
    return status, out.getvalue()


def test_the_script_prints_what_main_prints_with_its_status(tmp_path: Path) -> None:
    for argv in (["decode", str(CLIENTS_CAPTURE)], ["decode", str(SAMPLE_CAPTURE), "--fields", "error_code"]):
        done = subprocess.run([SCRIPT, *argv], capture_output=True, text=True, check=False)
        assert (done.returncode, done.stdout) == in_process(*argv)
        assert done.stdout.count("\n") > 30
    # a capture cut short: its status (problems found) is the script's too
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(SAMPLE_CAPTURE.read_bytes()[:15000])
    done = subprocess.run([SCRIPT, "decode", str(cut)], capture_output=True, text=True, check=False)
    status, printed = in_process("decode", str(cut))
    assert status != 0 and (done.returncode, done.stdout) == (status, printed)


def test_a_decode_skips_the_teardown_and_keeps_the_exit_functions() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WITNESSED, "decode", str(CLIENTS_CAPTURE), "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "exit functions ran" in done.stderr and "torn down" not in done.stderr
    # other commands exit as usual (Spark's gateway and the audit's workers are shut down then)
    done = subprocess.run(
        [sys.executable, "-c", _WITNESSED, "audit", "/nonexistent/captures"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "exit functions ran" in done.stderr and "torn down" in done.stderr


def test_a_reader_that_goes_early_is_no_error() -> None:
    """``kafka-epochs decode x | head -1``: what is still to be written when the reader has gone
    is dropped quietly, whether the reader went early in the run or late, as it was before the
    script skipped the teardown (whose flush of standard output the script now does itself)."""
    inputs = [str(CLIENTS_CAPTURE)] * 40  # a megabyte of lines: more than a pipe holds
    for lines_read in (1, 1000):
        decode = subprocess.Popen(
            [SCRIPT, "decode", *inputs, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert decode.stdout is not None and decode.stderr is not None
        first = [decode.stdout.readline() for _ in range(lines_read)]
        decode.stdout.close()
        errors = decode.stderr.read()
        assert decode.wait(timeout=120) == 0
        assert all(line.startswith(b'{"capture": ') for line in first) and errors == b""


def test_the_command_runs_without_docstrings_or_asserts() -> None:
    """``python -OO`` (or ``PYTHONOPTIMIZE=2``) drops docstrings and asserts: the parser's text and
    every decode mode still work, and print what a plain run prints."""
    for mode in ([], ["--fields", "error_code,topics[].partitions[].leader_epoch"], ["--headers-only"]):
        argv = ["decode", str(CLIENTS_CAPTURE), *mode]
        done = subprocess.run(
            [sys.executable, "-OO", "-m", "kafka_epochs.cli", *argv], capture_output=True, text=True, check=False
        )
        assert (done.returncode, done.stdout) == in_process(*argv), done.stderr[-2000:]
    shown = subprocess.run(
        [sys.executable, "-OO", "-m", "kafka_epochs.cli", "--help"], capture_output=True, text=True, check=False
    )
    assert shown.returncode == 0 and "decode captures" in shown.stdout, shown.stderr[-2000:]

"""Ctrl-C stops every command with a line that says so and the shell's status for it (130), never
a ``KeyboardInterrupt`` traceback. (``decode`` stops on its own terms, summing up what it read:
``test_decode_command``.)"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from typing import Any

import pytest

from kafka_epochs import cli
from kafka_epochs.cli import STOPPED_BY_CTRL_C, main
from kafka_epochs.samples import SAMPLE_CAPTURE

#: The ``kafka-epochs`` script's entry in a process of its own, with the in-process audit held at
#: its start until the process is interrupted: "reading" on standard output says it is there.
_HELD_AUDIT = """
import sys, time
import kafka_epochs.audit.local as engine

def held(*args, **kwargs):
    print("reading", flush=True)
    time.sleep(60)
    raise SystemExit("not interrupted")

engine.audit_captures = held
from kafka_epochs.cli import run
sys.argv = ["kafka-epochs", *sys.argv[1:]]
run()
"""


def test_ctrl_c_to_an_audit_says_it_stopped_and_exits_130() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _HELD_AUDIT, "audit", str(SAMPLE_CAPTURE), "--engine", "local"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "reading\n"
        os.kill(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == STOPPED_BY_CTRL_C == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip() == (
        "kafka-epochs: audit stopped by Ctrl-C: the audit is incomplete (what it printed or wrote, if anything, "
        "is part of it)"
    )
    assert out == ""


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["spark-decode", "x.pcap", "--out", "out"], "the output may hold part of the frames"),
        (["generate", "--specs", "specs", "--out", "out"], "the output may hold part of the modules"),
        (["catalogue", "--out", "out"], ""),
    ],
)
def test_ctrl_c_to_any_other_command_is_said_the_same_way(
    argv: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    parse = argparse.ArgumentParser.parse_args

    def parse_then_interrupt(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> argparse.Namespace:
        parsed = parse(self, *args, **kwargs)
        parsed.run = interrupted
        return parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_interrupt)
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.startswith(f"kafka-epochs: {argv[0]} stopped by Ctrl-C")
    assert (says in err) if says else err.strip().endswith("Ctrl-C")
    assert "Traceback" not in err
    assert cli.STOPPED_BY_CTRL_C == 130

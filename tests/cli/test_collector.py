"""The command tunes the garbage collector of its own process only (see ``cli._tune_collector``),
and freezes what its start made."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import subprocess
import sys

from kafka_epochs.cli import COLLECTOR_THRESHOLD, main
from kafka_epochs.samples import CLIENTS_CAPTURE

_CHILD = """
import gc, json, sys
from kafka_epochs.cli import main
before = gc.get_threshold()
sys.argv = ["kafka-epochs", "decode", sys.argv[1], "--quiet"]
status = main()
print(json.dumps([before, gc.get_threshold(), status, gc.get_freeze_count()]), file=sys.stderr)
"""


def test_the_command_run_as_a_script_collects_less_often() -> None:
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(CLIENTS_CAPTURE)], capture_output=True, text=True, check=True
    )
    before, after, status, frozen = json.loads(run.stderr.strip().splitlines()[-1])
    assert status == 0
    assert frozen > 5_000  # the objects of its start (none are frozen unless asked)
    assert before == list(gc.get_threshold())  # (Python's defaults, as this process has them)
    assert after == [COLLECTOR_THRESHOLD, before[1], before[2]]


def test_a_caller_passing_argv_keeps_its_collector_settings() -> None:
    before = gc.get_threshold()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["decode", str(CLIENTS_CAPTURE), "--quiet"]) == 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0

"""``decode`` writes its lines in batches, all of them, in order, whatever stdout's buffering.

With ``PYTHONUNBUFFERED`` set (container images often set it) every ``sys.stdout.write`` is a
system call; the command must not make one per exchange. A live capture (standard input) is the
exception, held by ``test_decode_options``: each exchange goes out as it completes.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from kafka_epochs.capture.files import source
from kafka_epochs.cli import decode_output, main
from kafka_epochs.samples import CLIENTS_CAPTURE

CLIENTS = CLIENTS_CAPTURE


class _CountingOut(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.sizes: list[int] = []  # lines per write

    def write(self, text: str) -> int:
        self.writes += 1
        self.sizes.append(text.count("\n"))
        return super().write(text)


def _decode(*extra: str) -> _CountingOut:
    out = _CountingOut()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["decode", str(CLIENTS), *extra])
    return out


@pytest.mark.parametrize("extra", [(), ("--headers-only",), ("--errors-only",)])
def test_lines_go_out_in_batches_in_order(monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...]) -> None:
    whole = _decode(*extra).getvalue()
    lines = whole.splitlines()
    assert len(lines) >= 1 and whole.endswith("\n")
    monkeypatch.setattr(decode_output.Printer, "BATCH", 4)
    # The capture is read a few KiB at a time, so that its exchanges come in many small batches
    # (each read completes a few); the lines are held until 4 are, then go out in one write.
    monkeypatch.setattr(source, "READ_CHUNK", 4096)
    batched = _decode(*extra)
    assert batched.getvalue() == whole  # same text, nothing lost at the batch edges or the end
    assert all(size >= 4 for size in batched.sizes[:-1]), batched.sizes
    if len(lines) >= 4:  # (--errors-only prints two)
        assert 2 < batched.writes < len(lines)
    else:
        assert batched.writes == 1


def test_one_write_per_batch_not_per_line() -> None:
    out = _decode()
    lines = out.getvalue().count("\n")
    assert lines > 50
    assert out.writes == -(-lines // decode_output.Printer.BATCH)


def test_unbuffered_python_prints_every_line() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "kafka_epochs.cli", "decode", str(CLIENTS), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == _decode("--quiet").getvalue()

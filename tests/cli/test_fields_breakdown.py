"""``benchmarks/fields_breakdown.py`` splits a ``--fields`` run by replacing pieces of the fused
path (a connection's frame sink, the line writer's ``answered``): these tests hold that the
pieces it replaces are still the ones the command runs, so its figures keep meaning something."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_epochs.samples import CLIENTS_CAPTURE

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fields_breakdown.py"


def _child(mode: str, capture: Path) -> list[float]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--child", mode, str(capture)], capture_output=True, text=True, check=True
    )
    return [float(word) for word in done.stdout.split()]


def test_lines_replays_every_pair_the_command_writes() -> None:
    seconds, pairs = _child("lines", CLIENTS_CAPTURE)
    # the bundled clients' capture: 58 exchanges, every one a pair written by the fused path
    assert pairs == 58
    assert seconds > 0


@pytest.mark.parametrize("mode", ["warm", "layers"])
def test_in_process_modes_run(mode: str) -> None:
    seconds = _child(mode, CLIENTS_CAPTURE)
    assert len(seconds) == (2 if mode == "warm" else 1)
    assert all(0 < s < 30 for s in seconds)


def test_first_packets_cuts_whole_records(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from fields_breakdown import first_packets
    finally:
        sys.path.remove(str(SCRIPT.parent))
    cut = first_packets(CLIENTS_CAPTURE, 12, tmp_path / "cut.pcap")
    data = cut.read_bytes()
    original = CLIENTS_CAPTURE.read_bytes()
    assert original.startswith(data)
    pos, records = 24, 0
    while pos < len(data):
        pos += 16 + struct.unpack_from("<IIII", data, pos)[2]
        records += 1
    assert (pos, records) == (len(data), 12)

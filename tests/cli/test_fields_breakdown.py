"""``benchmarks/fields_breakdown.py`` splits a ``--fields`` run by replacing pieces of the fused
path (a connection's frame sink, the line writer's entries for a pair): these tests hold that the
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


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_the_pairs_recorded_are_every_pair_the_command_writes(mode: str) -> None:
    seconds, pairs = _child(mode, CLIENTS_CAPTURE)
    # the bundled clients' capture: 58 exchanges, every one a pair written by the fused path
    assert pairs == 58
    assert seconds >= 0


@pytest.mark.parametrize("mode", ["once", "twice", "layers-once", "layers-twice"])
def test_the_runs_run(mode: str) -> None:
    (seconds,) = _child(mode, CLIENTS_CAPTURE)
    assert 0 < seconds < 30


def test_null_sinks_leave_the_pairs_unwritten(tmp_path: Path) -> None:
    """The capture layers' run writes nearly no lines (else it measures the pairs too): only
    the few whose frames reached their connection the event way (58 without the null sinks)."""
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import fields_breakdown as b; "
        "b._null_sinks(); calls = b._recorded_pairs(sys.argv[2]); print(len(calls))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(SCRIPT.parent), str(CLIENTS_CAPTURE)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout) < 58 // 10


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

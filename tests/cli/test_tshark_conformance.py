"""Our decoding agrees with Wireshark's Kafka dissector, where tshark is installed (Debian: tshark)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "tshark_conformance.py"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed (apt-get install tshark)")
def test_every_api_and_version_tshark_dissects_agrees() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    compared = int(result.stdout.strip().splitlines()[-1].split()[0])
    assert compared >= 50  # every bundled API at the versions tshark knows, requests and responses

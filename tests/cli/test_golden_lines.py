"""``kafka-epochs decode`` prints, character for character, what it printed before issue 20.

Issue 20 rewrote the command's path for speed (lines written straight as text, a one-unpack
dissector, cached renderers, lazy imports). The files in ``golden/`` are what the command printed
at the commit before that work (a1445c1) for the two bundled real-client captures, as JSON
lines, ``--headers-only`` and ``--fields``; every line must come out the same. A change that means
to alter the output regenerates them and says why in its commit.
"""

from __future__ import annotations

import gzip
import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from kafka_epochs.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
FIELDS = (
    "error_code,topics[].partitions[].error_code,topics[].partitions[].leader_epoch,topic_data[].partition_data[].index"
)
MODES = {"jsonl": [], "headers-only": ["--headers-only"], "fields": [f"--fields={FIELDS}"]}


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("capture", ["clients", "sample"])
def test_decode_prints_what_it_printed_before(capture: str, mode: str) -> None:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["decode", str(ROOT / "kafka_epochs" / "samples" / f"{capture}.pcap"), *MODES[mode]])
    expected = gzip.decompress((GOLDEN / f"{capture}-{mode}.jsonl.gz").read_bytes()).decode()
    got = out.getvalue()
    assert got.count("\n") == expected.count("\n") > 30
    for number, (ours, before) in enumerate(zip(got.splitlines(), expected.splitlines(), strict=True)):
        assert ours == before, f"line {number + 1} of {capture} {mode} differs"

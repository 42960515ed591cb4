"""The in-process audit keeps pandas out of its process: PyArrow imports it, when installed, each
time it builds an array from Python objects, and that import was a third of the audit's CPU on a
real capture. Nothing of the in-process audit needs pandas, and pandas still imports after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_epochs.samples import SAMPLE_CAPTURE

SCRIPT = """
import io, sys, contextlib
from kafka_epochs.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["audit", sys.argv[1], "--timeline", "--report", sys.argv[2]])
print(status, "pandas" in sys.modules, "no incidents" in out.getvalue() or "incident" in out.getvalue())
import pandas, pyarrow
print(type(pyarrow.table({"a": [1, 2]}).to_pandas()).__name__)
"""


def test_the_in_process_audit_runs_without_importing_pandas_and_leaves_it_importable(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(SAMPLE_CAPTURE), str(tmp_path / "report.html")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    first, second = done.stdout.split("\n")[:2]
    assert first == "0 False True", done.stderr
    assert second == "DataFrame"
    assert (tmp_path / "report.html").stat().st_size > 10_000  # (the report, written without pandas too)


def test_pyarrow_still_asks_for_pandas_so_keeping_it_out_still_pays() -> None:
    """What the finder is for: if PyArrow stops importing pandas for a list of strings, the
    finder in ``cli/audit.py`` has no more reason to be."""
    script = "import sys, pyarrow as pa; pa.array(['a']); print('pandas' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"

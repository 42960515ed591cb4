"""docs/audit-example.md runs, and prints what it shows.

Each ```python cell runs in one namespace, from the repository root; the ```text block after a
cell is what it printed. After the sample capture changes, refresh the outputs with

    KAFKA_EPOCHS_REGENERATE_DOCS=1 .venv/bin/python -m pytest tests/spark/test_io_audit_doc.py
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "audit-example.md"
SAMPLE = ROOT / "kafka_epochs" / "samples" / "sample.pcap"
# a python cell, then optionally (after blank lines only) the text block of its output
CELL = re.compile(r"```python\n(?P<code>.*?)```\n(?:\s*```text\n(?P<out>.*?)```\n)?", re.S)


def run_cells(text: str) -> list[tuple[re.Match[str], str]]:
    namespace: dict[str, Any] = {"__name__": "__audit_example__"}
    results = []
    for cell in CELL.finditer(text):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(cell["code"], f"{DOC.name} cell", "exec"), namespace)
        results.append((cell, out.getvalue()))
    return results


def _clean(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def test_the_audit_example_runs_and_shows_its_output(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    if not SAMPLE.is_file():
        pytest.skip(f"{SAMPLE} is not there yet")
    monkeypatch.chdir(ROOT)
    text = DOC.read_text()
    results = run_cells(text)
    assert len(results) >= 5
    if os.environ.get("KAFKA_EPOCHS_REGENERATE_DOCS"):
        pieces, last = [], 0
        for cell, printed in results:
            pieces.append(text[last : cell.start()])
            block = f"```python\n{cell['code']}```\n"
            if printed.strip():
                block += f"\n```text\n{_clean(printed)}\n```\n"
            pieces.append(block)
            last = cell.end()
        pieces.append(text[last:])
        DOC.write_text("".join(pieces))
        return
    for cell, printed in results:
        shown = cell["out"] or ""
        assert _clean(printed) == _clean(shown), (
            f"the output of this cell changed (the sample capture changed?):\n{cell['code']}\n"
            "rerun with KAFKA_EPOCHS_REGENERATE_DOCS=1 to refresh docs/audit-example.md"
        )

"""The notebook an analyst starts from runs, cell by cell, and shows what it promises.

``docs/notebooks/audit-a-capture.ipynb`` is executed in a fresh kernel (nbclient) with an
embedded local Spark: every cell must run without an error, the latency plot must be drawn, the
audit's incidents said in words and its report shown. The committed copy carries no outputs,
so what a reader sees first is what their own run gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebooks" / "audit-a-capture.ipynb"


def _text(cell: Any) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            parts.append(out["text"])
        else:
            parts.extend(str(v) for v in out.get("data", {}).values())
    return "".join(parts)


def test_the_committed_notebook_carries_no_outputs() -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)


def test_the_notebook_runs_and_shows_the_audit(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on the first cell that fails
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert not [out for cell in code for out in cell.outputs if out["output_type"] == "error"]
    everything = "\n".join(_text(cell) for cell in code)
    assert "|  request|   58|" in everything  # the clients capture: 58 requests, 58 responses
    assert "session-a" in everything  # a Produce's topics, from the typed body column
    latency = next(cell for cell in code if "percentile_approx" in cell.source)
    assert "Produce" in _text(latency) and "Fetch" in _text(latency)
    plot = next(cell for cell in code if "savefig" in cell.source)
    assert any("image/svg+xml" in out.get("data", {}) for out in plot.outputs)
    assert "fenced StopReplica" in everything and "(KIP-359)" in everything
    report = next(cell for cell in code if "result.report" in cell.source)
    html = "".join(out.get("data", {}).get("text/html", "") for out in report.outputs)
    assert "<svg" in html and "FENCED_LEADER_EPOCH" in html

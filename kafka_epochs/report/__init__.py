"""The epoch audit as one HTML file: a summary, each troubled partition's timeline, incidents in words.

Needs the ``report`` extra (matplotlib). ``AuditResult.report(path)`` and ``kafka-epochs audit
--report out.html`` fill a :class:`~kafka_epochs.report.model.ReportData` from the audit's
tables and write it with :func:`write_report`; the page needs nothing from the network.
"""

from __future__ import annotations

from pathlib import Path

from kafka_epochs.report.model import ReportData

__all__ = ["ReportData", "render_report", "write_report"]


def render_report(data: ReportData) -> str:
    """The report's HTML text."""
    from kafka_epochs.report.page import render  # matplotlib loads here, not on import

    return render(data)


def write_report(data: ReportData, path: str | Path) -> Path:
    """Write the report to ``path`` (parent directories made); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(data), encoding="utf-8")
    return target

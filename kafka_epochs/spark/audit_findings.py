"""The Spark engine's audit as :class:`~kafka_epochs.audit.findings.Findings`: what the command prints.

The tables stay in Spark; what reaches the driver is the summary's aggregates, the incidents
printed (the first ``limit`` in capture order, or all of them streamed for ``--format jsonl``)
and the timeline. ``write`` has Spark write the two tables, with the columns and types the
in-process engine writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_epochs.audit.incidents import INCIDENT_COLUMNS, TIMELINE_COLUMNS, capture_problems
from kafka_epochs.audit.judging import TIE_BREAKERS
from kafka_epochs.report.model import Summary
from kafka_epochs.spark.audit_report import incident_rows, summary_of
from kafka_epochs.spark.epoch_audit import AuditResult

__all__ = ["SparkFindings"]

_TYPES = {"correlation_id": "int", "api_version": "int", "partition": "int", "leader_epoch": "int", "leader": "int"}


class SparkFindings:
    """An :class:`AuditResult` answering as the command line asks (see the module docstring)."""

    def __init__(
        self,
        result: AuditResult,
        master: str,
        *,
        sources: Sequence[str] = (),
        partitions: int = 20,
        problems: dict[str, tuple[str, int]] | None = None,
    ) -> None:
        """``problems``: capture -> (its first problem, how many), from the frames the audit read
        (:func:`~kafka_epochs.spark.audit_counts.capture_problems`)."""
        self.result = result
        self.engine = f"Spark {master}"
        self.sources = list(sources)
        self.partitions = partitions
        rows = incident_rows(result)
        self._incidents = rows.select(*(F.col(c).cast(_TYPES[c]) if c in _TYPES else c for c in INCIDENT_COLUMNS))
        self.summary: Summary = summary_of(result, rows)
        self.summary.capture_problems = capture_problems(problems or {})

    @property
    def incident_count(self) -> int:
        return sum(self.summary.counts.values())

    def incidents(self, limit: int | None = None) -> Iterator[dict[str, Any]]:
        if limit is not None and limit < 0:
            raise ValueError(f"limit is a count of incidents, 0 or more, not {limit}")
        ordered = self._ordered()
        if limit is not None:
            return (row.asDict() for row in ordered.limit(limit).collect())
        return (row.asDict() for row in ordered.toLocalIterator())

    def _ordered(self) -> DataFrame:
        # capture order, nulls first, as the in-process engine sorts
        return self._incidents.orderBy(*(F.col(c).asc_nulls_first() for c in ("time_ns", "seq", *TIE_BREAKERS)))

    def timeline(self) -> list[dict[str, Any]]:
        return [row.asDict() for row in self._timeline().collect()]

    def _timeline(self) -> DataFrame:
        columns = (F.col(c).cast(_TYPES[c]) if c in _TYPES else c for c in TIMELINE_COLUMNS)
        return self.result.timeline.select(*columns)

    def write(self, out: Path, fmt: str) -> None:
        self._ordered().write.mode("overwrite").format(fmt).save(str(out / "incidents"))
        self._timeline().write.mode("overwrite").format(fmt).save(str(out / "timeline"))

    def report(self, path: Path) -> Path:
        return self.result.report(path, max_partitions=self.partitions, sources=self.sources)

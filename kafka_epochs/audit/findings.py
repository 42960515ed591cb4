"""What an audit engine hands the command line: the same questions, whichever engine answered.

:class:`Findings` is the shape both engines' results take (the in-process
:class:`~kafka_epochs.audit.local.LocalAudit`, and the Spark engine's
:class:`~kafka_epochs.spark.audit_findings.SparkFindings`): a summary, the incident rows in
capture order (:data:`~kafka_epochs.audit.incidents.INCIDENT_COLUMNS`), the timeline
(:data:`~kafka_epochs.audit.incidents.TIMELINE_COLUMNS`), and the two tables written to a
directory alike (``incidents/`` and ``timeline/``, Parquet or JSON lines).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from kafka_epochs.report.model import Summary

__all__ = ["TABLES", "Findings", "arrow_schemas", "write_table"]

#: The tables an audit writes, each a directory under ``--out``.
TABLES = ("incidents", "timeline")


class Findings(Protocol):
    #: which engine found them, as the summary names it ("in-process", "Spark local[*]")
    engine: str
    summary: Summary

    @property
    def incident_count(self) -> int: ...

    def incidents(self, limit: int | None = None) -> Iterator[dict[str, Any]]:
        """The incident rows in capture order (time, seq, partition), the first ``limit`` of them."""
        ...

    def timeline(self) -> list[dict[str, Any]]:
        """The leader epochs seen, one row per (cluster, topic, partition, epoch)."""
        ...

    def write(self, out: Path, fmt: str) -> None:
        """Write ``incidents/`` and ``timeline/`` under ``out`` (``fmt``: parquet or json)."""
        ...

    def report(self, path: Path) -> Path:
        """Write the HTML report; returns its path."""
        ...


def arrow_schemas() -> dict[str, Any]:
    """The Arrow schema of each table (what Spark's tables hold, column for column)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    text, int32, int64, texts = pa.string(), pa.int32(), pa.int64(), pa.list_(pa.string())
    incidents = pa.schema(
        [
            ("kind", text),
            ("capture", text),
            ("seq", int64),
            ("time_ns", int64),
            ("client", text),
            ("broker", text),
            ("correlation_id", int32),
            ("cluster", text),
            ("api", text),
            ("api_version", int32),
            ("topic", text),
            ("partition", int32),
            ("requested_epoch", int32),
            ("leader_epoch", int32),
            ("error", text),
            ("broker_error", text),
            ("path", text),
            ("delete", pa.bool_()),
            ("profile", text),
            ("warnings", texts),
        ]
    )
    timeline = pa.schema(
        [
            ("cluster", text),
            ("topic", text),
            ("partition", int32),
            ("leader_epoch", int32),
            ("first_seen_ns", int64),
            ("last_seen_ns", int64),
            ("first_seen_seq", int64),
            ("leader", int32),
            ("topic_id", text),
            ("sources", texts),
            ("brokers", texts),
            ("observations", int64),
            ("behind", pa.bool_()),
        ]
    )
    return {"incidents": incidents, "timeline": timeline}


def write_table(rows: Sequence[dict[str, Any]], name: str, out: Path, fmt: str) -> Path:
    """``rows`` as ``out/name/part-00000.parquet`` (or ``.json``, JSON lines with nulls left out,
    as Spark writes them): a directory, like Spark's, that either engine's readers take."""
    schema = arrow_schemas()[name]
    directory = out / name
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("part-*"):
        old.unlink()
    if fmt == "json":
        target = directory / "part-00000.json"
        with target.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps({k: row[k] for k in schema.names if row[k] is not None}) + "\n")
        return target
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    target = directory / "part-00000.parquet"
    pq.write_table(pa.Table.from_pylist([{k: row[k] for k in schema.names} for row in rows], schema=schema), target)
    return target

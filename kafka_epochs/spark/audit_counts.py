"""How many frames an audit read, and why some could not be: aggregates over its events."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_epochs.audit.events import UNREADABLE

__all__ = ["frame_counts", "unreadable_reasons"]


def frame_counts() -> tuple[Column, Column]:
    """Aggregates over events: the frames read (``frames``) and those that could carry an epoch
    and did not decode (``unreadable``), each frame once."""
    read = F.col("kind") != UNREADABLE
    return (
        F.count_distinct(F.when(read, F.struct("capture", "seq"))).alias("frames"),
        F.count_distinct(F.when(~read, F.struct("capture", "seq"))).alias("unreadable"),
    )


def unreadable_reasons(events: DataFrame, limit: int = 5) -> list[tuple[str, int]]:
    """Why frames could not be read, the most frequent reasons first."""
    rows = (
        events.where(F.col("kind") == UNREADABLE)
        .groupBy(F.coalesce("error", F.lit("?")).alias("error"))
        .agg(F.count_distinct("capture", "seq").alias("n"))
        .orderBy(F.desc("n"), "error")
        .limit(limit)
        .collect()
    )
    return [(r["error"], r["n"]) for r in rows]

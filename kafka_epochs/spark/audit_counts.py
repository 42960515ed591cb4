"""How many frames an audit read, and why some could not be: aggregates over its events."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from kafka_epochs.audit.events import UNREADABLE

__all__ = ["capture_problems", "frame_counts", "unreadable_reasons"]


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
        .agg(F.count_distinct(F.struct("capture", "seq")).alias("n"))  # a frame without a capture name counts too
        .orderBy(F.desc("n"), "error")
        .limit(limit)
        .collect()
    )
    return [(r["error"], r["n"]) for r in rows]


def capture_problems(frames: DataFrame) -> dict[str, tuple[str, int]]:
    """Capture -> (its first problem, how many): the frame rows that say a capture could not be
    read whole (``capture_error``); none for a frame table without that column."""
    if "capture_error" not in frames.columns:
        return {}
    rows = (
        frames.where(F.col("capture_error").isNotNull())
        .groupBy("capture")
        .agg(F.min_by("capture_error", "seq").alias("first"), F.count(F.lit(1)).alias("n"))
        .collect()
    )
    return {r["capture"]: (r["first"], r["n"]) for r in rows}

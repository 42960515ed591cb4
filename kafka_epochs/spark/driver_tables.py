"""Small tables the driver worked out, handed to Spark as local relations.

``createDataFrame`` of a Python list makes an RDD: every broadcast or scan of it runs a Spark
job (some 0.1 s each, whatever the size). Built from an Arrow table, the same rows are a local
relation, which Spark plans and broadcasts from the driver without a job. The audit hands Spark
several such tables (clusters, topic names, partitions with epochs, the timeline) per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql import DataFrame, SparkSession


def driver_table(spark: SparkSession, rows: Iterable[Sequence[Any]], fields: Iterable[Any]) -> DataFrame:
    """``rows`` (tuples in field order) as a Spark table of ``fields``' Arrow types (a schema,
    or ``(name, type)`` pairs)."""
    schema = pa.schema(fields)
    columns: list[list[Any]] = [[] for _ in schema]
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    return spark.createDataFrame(
        pa.Table.from_arrays(
            [pa.array(values, f.type) for values, f in zip(columns, schema, strict=True)], schema=schema
        )
    )

"""Arrow types -> Spark SQL types, for the few Arrow types our schemas use.

Kept to our own mapping (rather than PySpark's internal converters, whose module paths move
between releases) so that the spec -> Arrow rules in :mod:`kafka_epochs.spark.schema` are the
only rules: Spark's type is a mechanical restatement of the Arrow one.
"""

from __future__ import annotations

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql import types as T

_SIMPLE: list[tuple[pa.DataType, T.DataType]] = [
    (pa.bool_(), T.BooleanType()),
    (pa.int8(), T.ByteType()),
    (pa.int16(), T.ShortType()),
    (pa.int32(), T.IntegerType()),
    (pa.int64(), T.LongType()),
    (pa.float64(), T.DoubleType()),
    (pa.string(), T.StringType()),
    (pa.large_string(), T.StringType()),
    (pa.binary(), T.BinaryType()),
    (pa.large_binary(), T.BinaryType()),
]


def spark_type(arrow_type: pa.DataType) -> T.DataType:
    """The Spark type Spark itself would read ``arrow_type`` as (every field nullable)."""
    for arrow, spark in _SIMPLE:
        if arrow_type.equals(arrow):
            return spark
    if pa.types.is_struct(arrow_type):
        return T.StructType(
            [
                T.StructField(arrow_type.field(i).name, spark_type(arrow_type.field(i).type), True)
                for i in range(arrow_type.num_fields)
            ]
        )
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return T.ArrayType(spark_type(arrow_type.value_type), True)
    if pa.types.is_map(arrow_type):
        return T.MapType(spark_type(arrow_type.key_type), spark_type(arrow_type.item_type), True)
    raise TypeError(f"no Spark type for Arrow {arrow_type}")


def spark_schema(schema: pa.Schema) -> T.StructType:
    """A record batch schema as the StructType a ``mapInArrow`` declares."""
    return T.StructType([T.StructField(f.name, spark_type(f.type), True) for f in schema])

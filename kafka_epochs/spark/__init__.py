"""Decoding Kafka frames at scale with Spark (the ``spark`` extra: pyspark, pyarrow, pandas, numpy).

Importing this package may import pyspark; the rest of kafka_epochs never does. The names load
on first use, so ``from kafka_epochs.spark import decode_batch`` needs only pyarrow and numpy.

- :func:`decode_batch` / :func:`decode_typed_batch`: Arrow in, Arrow out (no Spark needed)
- :func:`arrow_type_for` / :func:`spark_type_for`: a message's struct type, from its spec
- :func:`decode_frame`, :func:`decode_frames`, :func:`decode_api`, :func:`with_variant`: Spark
- :func:`local_session`: a local SparkSession set up for all of the above
- :func:`audit`: the epoch audit of decoded traffic (``.timeline``, ``.stale_requests``, ...);
  ``spark.read.format("kafka-capture")`` once :func:`register` has run
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_epochs.spark.api import decode_api, decode_frame, decode_frames, with_variant
    from kafka_epochs.spark.batch import DECODED_SCHEMA, decode_batch
    from kafka_epochs.spark.datasource import register
    from kafka_epochs.spark.epoch_audit import AuditResult, audit
    from kafka_epochs.spark.schema import arrow_type_for, spark_type_for
    from kafka_epochs.spark.session import local_session
    from kafka_epochs.spark.typed import decode_typed_batch

_WHERE = {
    "DECODED_SCHEMA": "batch",
    "decode_batch": "batch",
    "decode_typed_batch": "typed",
    "arrow_type_for": "schema",
    "spark_type_for": "schema",
    "decode_frame": "api",
    "decode_frames": "api",
    "decode_api": "api",
    "with_variant": "api",
    "local_session": "session",
    "audit": "epoch_audit",
    "AuditResult": "epoch_audit",
    "register": "datasource",
}

__all__ = [
    "DECODED_SCHEMA",
    "AuditResult",
    "arrow_type_for",
    "audit",
    "decode_api",
    "decode_batch",
    "decode_frame",
    "decode_frames",
    "decode_typed_batch",
    "local_session",
    "register",
    "spark_type_for",
    "with_variant",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kafka_epochs.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kafka_epochs.spark.{module}"), name)

"""``spark.read.format("kafka-capture")``: pcap/pcapng captures as one row per Kafka frame.

Reading, per file::

    capture file -> kafka_epochs.capture (packets, TCP reassembly, frame alignment)
                 -> FrameBuffer per direction (whole size-prefixed frames)
                 -> request/response pairing by correlation id (the paired request's api key
                    and version are what a response needs to be decoded later)
                 -> Arrow record batches of :data:`ARROW_SCHEMA`

Nothing is decoded here beyond frame headers (and a Produce request's ``acks``, which says
whether a response will follow): decoding is :func:`kafka_epochs.spark.api.decode_frames`' job,
on whatever partitioning suits it. Problems of the capture itself (a gap, an unreadable packet,
a file that is not a capture) become rows with a null ``frame`` and the reason in
``capture_error``, so a bad capture never fails the job and nothing is dropped silently.

Partitioning: one partition per file, or, with ``.option("flowBuckets", N)``, N partitions per
file, each keeping only the connections whose ``flow_id`` falls in its bucket. TCP reassembly
needs every packet of a connection in one place, so a file cannot be cut at byte offsets; each
bucket reads the whole file (packet parsing is repeated N times) but frames and ships only its
share of the connections. Decoding, the expensive part, can be spread independently by
repartitioning the frames, because each row carries everything its decoding needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafka_epochs.frame_rows import capture_frames, expand_paths, to_batches
from kafka_epochs.spark.shipping import ship_package
from kafka_epochs.spark.source_options import (
    FORMAT,
    CapturePartition,
    option_ints,
    option_paths,
    option_ports,
    option_specs,
)

#: The same schema as Spark DDL (what :meth:`KafkaCaptureDataSource.schema` returns).
SCHEMA_DDL = (
    "capture string, seq bigint, packet bigint, time timestamp, time_ns bigint, flow_id bigint, client string, "
    "broker string, direction string, stream_offset bigint, correlation_id int, request_api_key int, "
    "request_api_version int, frame binary, capture_error string, sasl_mechanism string"
)


# -- the Spark data source ---------------------------------------------------------------------


class KafkaCaptureReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.paths = option_paths(options)
        self.ports = option_ports(options)
        buckets = option_ints(options, "flowbuckets", "flowBuckets")
        self.buckets = buckets[0] if buckets else 1
        if self.buckets < 1:
            raise ValueError(f"{FORMAT}: flowBuckets must be at least 1, not {self.buckets}")
        self.protocol = option_specs(options)

    def partitions(self) -> list[InputPartition]:
        return [
            CapturePartition(path, bucket, self.buckets)
            for path in expand_paths(self.paths)
            for bucket in range(self.buckets)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, CapturePartition)
        rows = capture_frames(
            partition.path, ports=self.ports, bucket=partition.bucket, buckets=partition.buckets, protocol=self.protocol
        )
        yield from to_batches(rows)


class KafkaCaptureDataSource(DataSource):
    """``spark.read.format("kafka-capture").load(paths)``; options ``ports``, ``flowBuckets``, ``protocol``.

    Also a stream: ``spark.readStream.format("kafka-capture").load(DIR)`` (option ``settleSeconds``)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        # option names are case-insensitive in Spark: look them up lower-cased, in a plain dict
        return KafkaCaptureReader({k.lower(): v for k, v in self.options.items()})

    def streamReader(self, schema: Any) -> Any:
        """``spark.readStream.format("kafka-capture").load(DIR)``: see :mod:`kafka_epochs.spark.streaming`."""
        from kafka_epochs.spark.streaming import CaptureStreamReader

        return CaptureStreamReader({k.lower(): v for k, v in self.options.items()})


def register(spark: Any) -> None:
    """Make ``format("kafka-capture")`` known to ``spark`` (once per session is enough); on a
    cluster, also ship this kafka_epochs to the executors (:mod:`kafka_epochs.spark.shipping`)."""
    ship_package(spark)
    spark.dataSource.register(KafkaCaptureDataSource)

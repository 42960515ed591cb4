"""One large capture file read by many tasks: byte ranges -> packets keyed by connection -> shuffle -> frames.

The ``kafka-capture`` source reads a file in one task, because TCP reassembly needs each
connection's packets together and in order. Here the file is cut instead:

1. **Ranges.** The file is cut into byte ranges (:data:`DEFAULT_RANGE_BYTES`); a task per range
   counts its records (:func:`count_range`), keeping the first packets of each connection on
   no configured port. The driver then lines the ranges up: each must start where the record
   before it leads (a range whose own search started elsewhere, e.g. at a damaged record the
   whole-file reader would read, is counted again from there). The counts give every record
   its index in the file.
2. **Ports.** A connection on no configured port is Kafka when it, or an earlier one on its port,
   opened with an ApiVersions request. The driver judges each such connection from the packets
   the counts kept and orders what they taught (:func:`learnt_ports`), so every share learns
   each port at the record the whole-file reader would.
3. **Packets.** A task per range reads its records, finds each packet's TCP connection and emits
   it keyed by the connection (unreadable records become error rows there and then).
4. **Frames.** Packets are shuffled by connection and sorted by file offset; each task replays its
   connections through the same pipeline a whole-file read uses (:class:`ShareFrames`).

The rows equal the whole-file read's, ``seq`` included (it is built from file offsets, see
:data:`~kafka_epochs.frame_rows.SEQ_SHIFT`); only their order in the DataFrame differs.
Packets pass through Spark's shuffle once; the file is read twice (the counts, then the
packets). pcap and pcapng files are split (:mod:`~kafka_epochs.capture.files.ranges`,
:mod:`~kafka_epochs.capture.files.pcapng_ranges`); compressed files, and pcapng files that
describe their interfaces again after the first packet, are read whole (by the data source).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.capture.alignment.flows import DEFAULT_PORTS
from kafka_epochs.capture.split import (
    DEFAULT_RANGE_BYTES,
    CaptureEnd,
    RangeCount,
    count_range,
    cut,
    learnt_ports,
    line_up,
    port_learners,
    range_packets,
    readable_in_ranges,
    segment_of,
)
from kafka_epochs.errors import KafkaEpochsError
from kafka_epochs.frame_rows import SEQ_SHIFT, CaptureFrames, FrameRow, to_batches
from kafka_epochs.protocol_refs import ProtocolRef

PACKETS_SCHEMA = pa.schema(
    [
        ("pair", pa.int64()),  # the connection (its two endpoints, in either order), hashed
        ("offset", pa.int64()),  # the record's offset in the file
        ("packet", pa.int64()),  # the record's index in the file
        ("time_ns", pa.int64()),
        # the TCP segment (null on error rows)
        ("source", pa.string()),
        ("source_port", pa.int32()),
        ("destination", pa.string()),
        ("destination_port", pa.int32()),
        ("seq", pa.int64()),
        ("ack", pa.int64()),
        ("flags", pa.int32()),
        ("payload", pa.binary()),
        ("missing", pa.int64()),
        ("error", pa.string()),  # the row's text, for a record that could not be read
    ]
)
PACKETS_DDL = (
    "pair bigint, offset bigint, packet bigint, time_ns bigint, source string, source_port int, "
    "destination string, destination_port int, seq bigint, ack bigint, flags int, payload binary, "
    "missing bigint, error string"
)


def rows_to_batches(rows: Iterable[tuple[Any, ...]], schema: pa.Schema, size: int = 4096) -> Iterator[pa.RecordBatch]:
    chunk: list[tuple[Any, ...]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield _batch(chunk, schema)
            chunk = []
    if chunk:
        yield _batch(chunk, schema)


def _batch(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.RecordBatch:
    columns = zip(*rows, strict=True)
    return pa.RecordBatch.from_arrays(
        [pa.array(c, f.type) for c, f in zip(columns, schema, strict=True)], schema=schema
    )


# -- 4. frames ------------------------------------------------------------------------------------


class ShareFrames(CaptureFrames):
    """The rows of some connections of a file, from their packets in file order (the rest of the
    file told by the ports ``learnt`` elsewhere and the file's ``end``)."""

    def replay(
        self, packets: Iterable[Sequence[Any]], learnt: Sequence[tuple[int, int]], end: CaptureEnd
    ) -> Iterator[FrameRow]:
        """``packets``: :func:`~kafka_epochs.capture.split.range_packets` rows without the pair,
        in offset order."""
        pipeline = self.pipeline()
        pending = iter(sorted(learnt))
        lesson = next(pending, None)
        for row in packets:
            offset, error = row[0], row[-1]
            while lesson is not None and lesson[0] < offset:
                yield from self.rows(pipeline.learn_port(lesson[1]), lesson[0])
                lesson = next(pending, None)
            if error is not None:
                self._seq = offset << SEQ_SHIFT
                yield self._error_row(row[1], row[2], error)
                continue
            yield from self.rows(pipeline.segment(segment_of(row)), offset)
        while lesson is not None:
            yield from self.rows(pipeline.learn_port(lesson[1]), lesson[0])
            lesson = next(pending, None)
        yield from self.end_rows(pipeline.finish(end.last_time_ns, end.last_index), end.last_offset + 1)


# -- Spark -----------------------------------------------------------------------------------------


def read_split(
    spark: Any,
    path: str | os.PathLike[str],
    *,
    range_bytes: int = DEFAULT_RANGE_BYTES,
    ports: Iterable[int] | None = None,
    protocol: ProtocolRef = None,
    partitions: int | None = None,
) -> Any:
    """The ``kafka-capture`` source's rows of one uncompressed pcap or pcapng file, read by many
    tasks. A file that cannot be read in ranges (not such a file, a broken head, a pcapng file
    that describes its interfaces again after its first packet) is read whole, by the source."""
    from kafka_epochs.spark.datasource import SCHEMA_DDL
    from kafka_epochs.spark.shipping import ship_package

    ship_package(spark)
    name = str(Path(path).resolve())
    configured = frozenset(DEFAULT_PORTS if ports is None else ports)
    if not readable_in_ranges(name):
        return _read_whole(spark, name, configured, protocol)
    ranges = cut(os.path.getsize(name), range_bytes)
    sc = spark.sparkContext
    counts = sc.parallelize(ranges, len(ranges)).map(lambda r: _count(name, r[0], r[1], configured)).collect()
    lined_up = None if None in counts else line_up(name, counts, functools.partial(count_range, ports=configured))
    if lined_up is None:
        return _read_whole(spark, name, configured, protocol)
    plans, end, heads = lined_up
    learnt = learnt_ports(port_learners(sorted(heads, key=lambda h: h[1]), configured), configured)
    shares = partitions or max(sc.defaultParallelism, len(plans))
    port_list = sorted(configured)

    def read_ranges(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for number in batch.column(0).to_pylist():
                yield from rows_to_batches(range_packets(name, plans[number]), PACKETS_SCHEMA)

    def frames(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        share = ShareFrames(name, ports=port_list, protocol=protocol)
        rows = (row for batch in batches for row in _rows(batch, _SHARE_COLUMNS))
        yield from to_batches(share.replay(rows, learnt, end))

    packets = spark.range(0, len(plans), numPartitions=len(plans)).mapInArrow(read_ranges, PACKETS_DDL)
    return packets.repartition(shares, "pair").sortWithinPartitions("offset").mapInArrow(frames, SCHEMA_DDL)


def _count(path: str, start: int, end: int, ports: frozenset[int]) -> RangeCount | None:
    try:
        return count_range(path, start, end, ports=ports)
    except (KafkaEpochsError, OSError):
        return None  # the file is read whole, and the data source says what is wrong with it


def _read_whole(spark: Any, path: str, ports: frozenset[int], protocol: ProtocolRef) -> Any:
    from kafka_epochs.spark.datasource import register
    from kafka_epochs.spark.source_options import FORMAT

    register(spark)
    reader = spark.read.format(FORMAT).option("ports", ",".join(str(p) for p in sorted(ports)))
    if protocol:
        reader = reader.option("protocol", json.dumps(list(protocol)))
    return reader.load(path)


#: what a share reads of the packet rows: all but the pair
_SHARE_COLUMNS = PACKETS_SCHEMA.names[1:]


def _rows(batch: pa.RecordBatch, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    return zip(*(batch.column(c).to_pylist() for c in columns), strict=True)

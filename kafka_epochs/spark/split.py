"""One large pcap file read by many tasks: byte ranges -> packets keyed by connection -> shuffle -> frames.

The ``kafka-capture`` source reads a file in one task, because TCP reassembly needs each
connection's packets together and in order. Here the file is cut instead:

1. **Ranges.** The file is cut into byte ranges (:data:`DEFAULT_RANGE_BYTES`); a task per range
   counts its records (:class:`~kafka_epochs.capture.files.ranges.PcapRange`, headers only).
   The driver then lines the ranges up: each must start where the record before it leads (a
   range whose own search started elsewhere, e.g. at a damaged record the whole-file reader
   would read, is counted again from there). The counts give every record its index in the file.
2. **Packets.** A task per range reads its records, finds each packet's TCP connection and emits
   it keyed by the connection (unreadable records become error rows there and then).
3. **Ports.** A connection on no configured port is Kafka when it, or an earlier one on its port,
   opened with an ApiVersions request. Which connection taught which port, and at which record,
   is found per connection and ordered on the driver (:func:`learnt_ports`), so every share
   learns each port at the record the whole-file reader would.
4. **Frames.** Packets are shuffled by connection and sorted by file offset; each task replays its
   connections through the same pipeline a whole-file read uses (:class:`ShareFrames`).

The rows equal the whole-file read's, ``seq`` included (it is built from file offsets, see
:data:`~kafka_epochs.spark.datasource.SEQ_SHIFT`); only their order in the DataFrame differs.
Packets pass through Spark's shuffle once and are kept (memory, then disk) for the two passes
that read them. pcapng and compressed files are read whole (by the data source).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.capture.alignment.flows import DEFAULT_PORTS, FlowClassifier
from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import Endpoint
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.capture.files.ranges import MAX_SEARCH, PcapRange, splittable
from kafka_epochs.capture.network.dissect import Dissector
from kafka_epochs.errors import DecodeError
from kafka_epochs.spark.datasource import SEQ_SHIFT, CaptureFrames, FrameRow, to_batches
from kafka_epochs.spark.protocols import ProtocolRef

#: Bytes per range. No larger than the range reader's search (a range must be searchable to its
#: end after damage, as the whole-file reader searches).
DEFAULT_RANGE_BYTES = MAX_SEARCH
#: Of a packet on no configured port, the bytes kept for telling whether its connection is
#: Kafka: every header up to TCP's, and the payload's first bytes.
CLASSIFY_BYTES = 512

PACKETS_SCHEMA = pa.schema(
    [
        ("pair", pa.int64()),  # the connection (its two endpoints, in either order), hashed
        ("offset", pa.int64()),  # the record's offset in the file
        ("packet", pa.int64()),  # the record's index in the file
        ("time_ns", pa.int64()),
        ("link_type", pa.int32()),
        ("original_length", pa.int64()),
        ("data", pa.binary()),  # null on error rows
        ("error", pa.string()),  # the row's text, for a record that could not be read
        ("known", pa.bool_()),  # on a configured port: no need to learn whether it is Kafka
    ]
)
PACKETS_DDL = (
    "pair bigint, offset bigint, packet bigint, time_ns bigint, link_type int, original_length bigint, "
    "data binary, error string, known boolean"
)
LEARNERS_DDL = "offset bigint, port int, client_port int"


class RangeCount(NamedTuple):
    """What a range holds: the facts the ranges after it and the capture's end need."""

    start: int
    end: int
    exact: bool  # ``start`` is a record's start (else: where the search began)
    records: int
    first_offset: int | None
    last_offset: int | None
    last_time_ns: int | None  # of the last readable packet
    next_offset: int | None  # where the next record starts; None: unknown (searching, or the file ended)


class RangePlan(NamedTuple):
    """One range as the packet tasks read it."""

    start: int
    end: int
    exact: bool
    first_index: int  # the index in the file of its first record
    time_before_ns: int  # the time of the last readable packet before it (0: none)


class CaptureEnd(NamedTuple):
    """The facts of the file's end every share stamps its last rows with."""

    last_time_ns: int
    last_index: int
    last_offset: int


# -- 1. ranges -----------------------------------------------------------------------------------


def cut(size: int, range_bytes: int = DEFAULT_RANGE_BYTES) -> list[tuple[int, int]]:
    """``[start, end)`` ranges covering a file of ``size`` bytes."""
    if not 0 < range_bytes <= MAX_SEARCH:
        raise ValueError(f"a range is 1 to {MAX_SEARCH} bytes, not {range_bytes}")
    return [(start, min(start + range_bytes, size)) for start in range(0, max(size, 1), range_bytes)]


def count_range(path: str, start: int, end: int, exact: bool = False) -> RangeCount:
    """Count the records of one range (data is read, not kept)."""
    reader = PcapRange(path, start, end, exact=exact, report_unfound=False)
    records = 0
    first = last = last_time = None
    for record in reader:
        records += 1
        if first is None:
            first = record.offset
        last = record.offset
        if isinstance(record, Packet):
            last_time = record.timestamp_ns
    return RangeCount(start, end, exact, records, first, last, last_time, reader.next_offset)


def line_up(
    path: str, counts: Sequence[RangeCount], recount: Callable[..., RangeCount] = count_range
) -> tuple[list[RangePlan], CaptureEnd]:
    """Each range starting where the one before leads (recounted when its own search started
    elsewhere), with the index of its first record; and the file's end."""
    plans: list[RangePlan] = []
    index = 0
    time_ns = 0
    last_offset = -1
    leads: int | None = None  # where the range before says the next record starts
    for count in counts:
        if leads is not None:
            if leads >= count.end:  # a record of the range before covers this one
                count = RangeCount(count.end, count.end, True, 0, None, None, None, leads)  # nothing to read
            elif not (count.exact and count.start == leads) and count.first_offset != leads:
                count = recount(path, leads, count.end, True)
        plans.append(RangePlan(count.start, count.end, count.exact, index, time_ns))
        index += count.records
        if count.last_time_ns is not None:
            time_ns = count.last_time_ns
        if count.last_offset is not None:
            last_offset = count.last_offset
        leads = count.next_offset
    return plans, CaptureEnd(time_ns, index - 1, last_offset)


# -- 2. packets ----------------------------------------------------------------------------------


def pair_key(a: Endpoint, b: Endpoint) -> int:
    """A signed 64-bit id of a connection's two endpoints, the same from either end and in every process."""
    low, high = (a, b) if a <= b else (b, a)
    digest = hashlib.blake2b(f"{low}|{high}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def range_packets(path: str, plan: RangePlan, ports: frozenset[int]) -> Iterator[tuple[Any, ...]]:
    """The rows (of :data:`PACKETS_SCHEMA`) of one range's TCP packets and unreadable records."""
    dissector = Dissector()
    keys: dict[tuple[Endpoint, Endpoint], tuple[int, bool]] = {}
    time_ns = plan.time_before_ns
    index = plan.first_index
    for record in PcapRange(path, plan.start, plan.end, exact=plan.exact, report_unfound=False):
        if not isinstance(record, Packet):
            yield (0, record.offset, index, time_ns, None, None, None, f"packet {index}: {record.error}", True)
            index += 1
            continue
        time_ns = record.timestamp_ns
        try:
            segment = dissector.segment(record)
        except (DecodeError, UnsupportedPacket) as exc:
            yield (0, record.offset, index, time_ns, None, None, None, f"packet {index}: {exc}", True)
            index += 1
            continue
        if not isinstance(segment, str):
            ends = (segment.source, segment.destination)
            found = keys.get(ends)
            if found is None:
                known = segment.source.port in ports or segment.destination.port in ports
                found = keys[ends] = (pair_key(*ends), known)
            yield (
                *found[:1],
                record.offset,
                index,
                time_ns,
                record.link_type,
                record.original_length,
                record.data,
                None,
                found[1],
            )
        index += 1


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


# -- 3. ports --------------------------------------------------------------------------------------


def port_learners(
    rows: Iterable[tuple[int, int, int, int, int, bytes]], ports: frozenset[int]
) -> Iterator[tuple[int, int, int]]:
    """``(offset, port, client port)`` where a connection's own handshake teaches a Kafka port,
    each connection judged alone (only ``ports`` known). ``rows``: ``(pair, offset, time_ns,
    link_type, original_length, data)`` in offset order."""
    dissector = Dissector()
    judges: dict[int, FlowClassifier] = {}
    for pair, offset, time_ns, link_type, original_length, data in rows:
        segment = dissector.segment(Packet(time_ns, link_type, data, 0, -1, original_length, offset))
        if isinstance(segment, str):
            continue
        judge = judges.get(pair)
        if judge is None:
            judge = judges[pair] = FlowClassifier(ports)
        judge.classify(segment)
        learnt = judge.stats.detected_ports
        if learnt:
            (port,) = learnt
            client = segment.source.port if segment.destination.port == port else segment.destination.port
            yield offset, port, client
            del judges[pair]  # a connection teaches one port, once


def learnt_ports(learners: Iterable[tuple[int, int, int]], ports: frozenset[int]) -> list[tuple[int, int]]:
    """``(offset, port)``: when the whole-file reader learns each port. A connection teaches its
    port only if neither of its ports was learnt before it spoke (else it was decided by port)."""
    known = set(ports)
    taught: list[tuple[int, int]] = []
    for offset, port, client in sorted(learners):
        if port in known or client in known:
            continue
        known.add(port)
        taught.append((offset, port))
    return taught


# -- 4. frames ------------------------------------------------------------------------------------


class ShareFrames(CaptureFrames):
    """The rows of some connections of a file, from their packets in file order (the rest of the
    file told by the ports ``learnt`` elsewhere and the file's ``end``)."""

    def replay(
        self, packets: Iterable[tuple[Any, ...]], learnt: Sequence[tuple[int, int]], end: CaptureEnd
    ) -> Iterator[FrameRow]:
        pipeline = self.pipeline()
        pending = iter(sorted(learnt))
        lesson = next(pending, None)
        for offset, index, time_ns, link_type, original_length, data, error in packets:
            while lesson is not None and lesson[0] < offset:
                yield from self.rows(pipeline.learn_port(lesson[1]), lesson[0])
                lesson = next(pending, None)
            if error is not None:
                self._seq = offset << SEQ_SHIFT
                yield self._error_row(index, time_ns, error)
                continue
            record = Packet(time_ns, link_type, data, 0, index, original_length, offset)
            yield from self.rows(pipeline.record(record), offset)
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
    """The ``kafka-capture`` source's rows of one uncompressed pcap file, read by many tasks."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from kafka_epochs.spark.datasource import SCHEMA_DDL
    from kafka_epochs.spark.shipping import ship_package

    ship_package(spark)
    name = str(Path(path).resolve())
    if not splittable(name):
        raise ValueError(f"{name}: only uncompressed pcap files are read in ranges")
    configured = frozenset(DEFAULT_PORTS if ports is None else ports)
    ranges = cut(os.path.getsize(name), range_bytes)
    sc = spark.sparkContext
    counts = sc.parallelize(ranges, len(ranges)).map(lambda r: count_range(name, r[0], r[1])).collect()
    plans, end = line_up(name, counts)
    shares = partitions or max(sc.defaultParallelism, len(plans))

    def read_ranges(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for number in batch.column(0).to_pylist():
                yield from rows_to_batches(range_packets(name, plans[number], configured), PACKETS_SCHEMA)

    packets = (
        spark.range(0, len(plans), numPartitions=len(plans))
        .mapInArrow(read_ranges, PACKETS_DDL)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )

    def find_learners(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = (row for batch in batches for row in _rows(batch, batch.schema.names))
        yield from rows_to_batches(port_learners(rows, configured), _LEARNERS_SCHEMA)

    unknown = packets.where(~F.col("known")).select(
        "pair", "offset", "time_ns", "link_type", "original_length", F.substring("data", 1, CLASSIFY_BYTES)
    )
    learners = (
        unknown.repartition(shares, "pair").sortWithinPartitions("offset").mapInArrow(find_learners, LEARNERS_DDL)
    ).collect()
    learnt = learnt_ports([(r.offset, r.port, r.client_port) for r in learners], configured)
    port_list = sorted(configured)

    def frames(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        share = ShareFrames(name, ports=port_list, protocol=protocol)
        columns = ("offset", "packet", "time_ns", "link_type", "original_length", "data", "error")
        rows = (row for batch in batches for row in _rows(batch, columns))
        yield from to_batches(share.replay(rows, learnt, end))

    return packets.repartition(shares, "pair").sortWithinPartitions("offset").mapInArrow(frames, SCHEMA_DDL)


def _rows(batch: pa.RecordBatch, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    return zip(*(batch.column(c).to_pylist() for c in columns), strict=True)


_LEARNERS_SCHEMA = pa.schema([("offset", pa.int64()), ("port", pa.int32()), ("client_port", pa.int32())])

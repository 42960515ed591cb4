"""Reading one capture file in parts, each part on its own: what the parts need from each other.

A byte range of a pcap or pcapng file is read by :class:`~kafka_epochs.capture.files.ranges.PcapRange`
or :class:`~kafka_epochs.capture.files.pcapng_ranges.PcapngRange`. To give, together, exactly
what one reader of the whole file gives, the parts need a few facts from outside themselves:

- where each range's first record starts (:func:`count_range` on every range, then
  :func:`line_up`: a range starts where the records of the one before lead);
- each record's index in the file, and the time of the last packet before a range (the counts);
- which ports were learnt from ApiVersions handshakes, and at which record (the counts keep the
  first packets of connections on no configured port; :func:`port_learners` judges each such
  connection alone and :func:`learnt_ports` orders what they taught);
- the file's end (its last record and last packet time, :class:`CaptureEnd`).

:func:`range_packets` then gives a range's TCP packets keyed by connection (:func:`pair_key`),
for a reader that brings each connection's packets together, in file order, and replays them
through :class:`~kafka_epochs.capture.pipeline.StreamPipeline` (``kafka_epochs.spark.split``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from kafka_epochs.capture.alignment.flows import DEFAULT_PORTS, MAX_HELD_SEGMENTS, FlowClassifier
from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import Endpoint
from kafka_epochs.capture.files.layouts import PCAP_FILE_HEADER_SIZE
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.capture.files.pcap_sync import PcapHeader
from kafka_epochs.capture.files.pcapng import MIN_TIME_NS
from kafka_epochs.capture.files.pcapng_ranges import PcapngRange, read_head
from kafka_epochs.capture.files.ranges import MAX_SEARCH, PcapRange, is_pcapng, splittable
from kafka_epochs.capture.files.reader import DEFAULT_MAX_RECORD_SIZE
from kafka_epochs.capture.network.dissect import Dissector
from kafka_epochs.capture.network.tcp import FIN, RST, SYN, Segment
from kafka_epochs.errors import DecodeError, KafkaEpochsError

#: Bytes per range. No larger than the range reader's search (a range must be searchable to its
#: end after damage, as the whole-file reader searches).
DEFAULT_RANGE_BYTES = MAX_SEARCH
#: Of a packet on no configured port, the bytes kept for telling whether its connection is
#: Kafka: every header up to TCP's, and the payload's first bytes.
CLASSIFY_BYTES = 512
#: Packets kept per connection start for port learning (a classifier decides within
#: MAX_HELD_SEGMENTS of them; the rest is margin).
HEADS_PER_START = MAX_HELD_SEGMENTS + 8

#: A packet as port learning takes it: ``(pair, offset, time_ns, link_type, original_length, data)``.
LearnerRow = tuple[int, int, int, int, int, bytes]


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
    stopped: bool = False  # the file's reading ends in this range (a broken pcapng block length)
    redescribed: bool = False  # a pcapng section or interface changed here: the file cannot be split
    heads: tuple[LearnerRow, ...] = ()  # what port learning needs of the range's packets (see count_range)


class LinedUp(NamedTuple):
    """The ranges as the packet tasks read them, the file's end, and the packets port learning reads."""

    plans: list[RangePlan]
    end: CaptureEnd
    heads: list[LearnerRow]


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


#: The time a count gives a pcapng simple packet block (which has none) that follows no other
#: packet in its range: not a real time, so the count does not take it for the range's last.
_NO_TIME = MIN_TIME_NS - 1


def open_range(
    path: str, start: int, end: int, *, exact: bool = False, time_before_ns: int = 0
) -> PcapRange | PcapngRange:
    """The range reader for the file's format."""
    if is_pcapng(path):
        return PcapngRange(path, start, end, exact=exact, time_before_ns=time_before_ns)
    return PcapRange(path, start, end, exact=exact, report_unfound=False)


def count_range(
    path: str, start: int, end: int, exact: bool = False, ports: frozenset[int] = DEFAULT_PORTS
) -> RangeCount:
    """Count the records of one range, and keep what port learning needs of its packets: those
    of connections on none of ``ports`` that a classifier could still be judging (the first
    :data:`HEADS_PER_START` with payload, SYN, FIN or RST of each connection in the range, and
    as many after each SYN, which starts a connection afresh), cut to :data:`CLASSIFY_BYTES`."""
    reader = open_range(path, start, end, exact=exact, time_before_ns=_NO_TIME)
    dissector = Dissector()
    quota: dict[tuple[Endpoint, Endpoint], int] = {}
    heads: list[LearnerRow] = []
    records = 0
    first = last = last_time = None
    for record in reader:
        records += 1
        if first is None:
            first = record.offset
        last = record.offset
        if not isinstance(record, Packet):
            continue
        if record.timestamp_ns != _NO_TIME:
            last_time = record.timestamp_ns
        seen = dissector.tcp_ports(record)
        if seen is not None and (seen[0] in ports or seen[1] in ports):
            continue  # on a configured port (the cheap look; most packets stop here)
        try:
            segment = dissector.segment(record)
        except (DecodeError, UnsupportedPacket):
            continue
        if isinstance(segment, str) or segment.source.port in ports or segment.destination.port in ports:
            continue
        if not (segment.payload or segment.flags & (SYN | FIN | RST)):
            continue  # a bare ACK: a classifier does not hold it
        ends = (
            (segment.source, segment.destination)
            if segment.source <= segment.destination
            else (segment.destination, segment.source)
        )
        left = HEADS_PER_START if segment.flags & SYN else quota.get(ends, HEADS_PER_START)
        if left:
            quota[ends] = left - 1
            data = record.data[:CLASSIFY_BYTES]
            heads.append(
                (pair_key(*ends), record.offset, record.timestamp_ns, record.link_type, record.original_length, data)
            )
    stopped = isinstance(reader, PcapngRange) and reader.stopped
    redescribed = isinstance(reader, PcapngRange) and reader.redescribed
    return RangeCount(
        start, end, exact, records, first, last, last_time, reader.next_offset, stopped, redescribed, tuple(heads)
    )


def line_up(
    path: str, counts: Sequence[RangeCount], recount: Callable[..., RangeCount] = count_range
) -> LinedUp | None:
    """Each range starting where the one before leads (recounted when its own search started
    elsewhere), with the index of its first record; and the file's end. None when the file
    cannot be read in ranges (a pcapng file that describes its interfaces again after its first
    packet)."""
    plans: list[RangePlan] = []
    heads: list[LearnerRow] = []
    index = 0
    time_ns = 0
    last_offset = -1
    leads: int | None = None  # where the range before says the next record starts
    stopped = False
    for count in counts:
        if stopped:  # the whole-file reader stops there too: nothing after is read
            count = RangeCount(count.end, count.end, True, 0, None, None, None, None, True)
        elif leads is not None:
            if leads >= count.end:  # a record of the range before covers this one
                count = RangeCount(count.end, count.end, True, 0, None, None, None, leads)  # nothing to read
            elif not (count.exact and count.start == leads) and count.first_offset != leads:
                count = recount(path, leads, count.end, True)
        if count.redescribed:
            return None
        stopped = count.stopped
        plans.append(RangePlan(count.start, count.end, count.exact, index, time_ns))
        heads.extend(count.heads)
        index += count.records
        if count.last_time_ns is not None:
            time_ns = count.last_time_ns
        if count.last_offset is not None:
            last_offset = count.last_offset
        leads = count.next_offset
    return LinedUp(plans, CaptureEnd(time_ns, index - 1, last_offset), heads)


def readable_in_ranges(path: str) -> bool:
    """Whether ``path`` is an uncompressed pcap or pcapng file whose head reads (a pcapng file's
    up to its first packet); anything else the data source reads whole, and reports."""
    try:
        if not splittable(path):
            return False
        with open(path, "rb") as f:
            if is_pcapng(path):
                head = read_head(f, DEFAULT_MAX_RECORD_SIZE)
                return head.next_offset is not None and not head.stopped
            PcapHeader(f.read(PCAP_FILE_HEADER_SIZE))
            return True
    except (KafkaEpochsError, OSError):
        return False


# -- 2. packets ----------------------------------------------------------------------------------


def pair_key(a: Endpoint, b: Endpoint) -> int:
    """A signed 64-bit id of a connection's two endpoints, the same from either end and in every process."""
    low, high = (a, b) if a <= b else (b, a)
    digest = hashlib.blake2b(f"{low}|{high}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def range_packets(path: str, plan: RangePlan) -> Iterator[tuple[Any, ...]]:
    """One range's TCP segments and unreadable records, as rows: ``(pair, offset, packet,
    time_ns, client-or-server address and port, the other's, seq, ack, flags, payload, missing,
    error)``; an unreadable record's row has only the first four and its ``error`` text."""
    dissector = Dissector()
    keys: dict[tuple[Endpoint, Endpoint], int] = {}
    time_ns = plan.time_before_ns
    index = plan.first_index
    for record in open_range(path, plan.start, plan.end, exact=plan.exact, time_before_ns=plan.time_before_ns):
        if not isinstance(record, Packet):
            yield (0, record.offset, index, time_ns, *_NO_SEGMENT, f"packet {index}: {record.error}")
            index += 1
            continue
        time_ns = record.timestamp_ns
        try:
            segment = dissector.segment(record)
        except (DecodeError, UnsupportedPacket) as exc:
            yield (0, record.offset, index, time_ns, *_NO_SEGMENT, f"packet {index}: {exc}")
            index += 1
            continue
        if not isinstance(segment, str):
            source, destination = segment.source, segment.destination
            key = keys.get((source, destination))
            if key is None:
                key = keys[(source, destination)] = pair_key(source, destination)
            yield (
                key,
                record.offset,
                index,
                time_ns,
                source.address,
                source.port,
                destination.address,
                destination.port,
                segment.seq,
                segment.ack,
                segment.flags,
                segment.payload,
                segment.missing,
                None,
            )
        index += 1


def segment_of(row: Sequence[Any]) -> Segment:
    """The segment of a :func:`range_packets` row, without its first element (the pair)."""
    _, index, time_ns, source, source_port, destination, destination_port, seq, ack, flags, payload, missing = row[:12]
    return Segment(
        Endpoint(source, source_port),
        Endpoint(destination, destination_port),
        seq,
        ack,
        flags,
        payload,
        missing,
        time_ns,
        index,
    )


_NO_SEGMENT = (None,) * 9


# -- 3. ports --------------------------------------------------------------------------------------


def port_learners(rows: Iterable[LearnerRow], ports: frozenset[int]) -> Iterator[tuple[int, int, int]]:
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

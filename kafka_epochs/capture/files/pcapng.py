"""The pcapng format: sections of blocks, each section with its own byte order and interfaces.

Read: Section Header, Interface Description (link type, snapshot length, ``if_tsresol``,
``if_tsoffset``), Enhanced Packet, Simple Packet and the obsolete Packet block. Every other block
type is skipped by its length. A block whose length is broken ends the file (the next block can
only be found through it); a packet block with bad contents but a sound length is reported and
reading goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.pcap import BATCH_RECORDS
from kafka_epochs.capture.files.pcap_sync import CHAIN
from kafka_epochs.capture.files.pcapng_sync import Unpack, blocks_chain
from kafka_epochs.capture.files.runs import RecordRun
from kafka_epochs.capture.files.source import ByteStream, refill

SUPPORTED_MAJOR_VERSION = 1
DEFAULT_TSRESOL = 6  # microseconds, when an interface has no if_tsresol option
NANOS_PER_SECOND = 1_000_000_000
#: the block types that carry a packet
PACKET_BLOCKS = frozenset({formats.BLOCK_ENHANCED_PACKET, formats.BLOCK_SIMPLE_PACKET, formats.BLOCK_PACKET_OBSOLETE})
#: the times a packet may have: what a signed 64-bit count of nanoseconds holds (Arrow, Spark)
MIN_TIME_NS, MAX_TIME_NS = -(1 << 63), (1 << 63) - 1


class Interface(NamedTuple):
    """An interface of the current section, with its timestamp unit turned into a ratio to nanoseconds."""

    link_type: int
    snaplen: int
    # timestamp_ns = raw * ns_multiplier // ns_divisor + offset_ns
    ns_multiplier: int
    ns_divisor: int
    offset_ns: int


def timestamp_ratio(tsresol: int) -> tuple[int, int]:
    """``(multiplier, divisor)`` turning a raw timestamp into nanoseconds, from an ``if_tsresol`` byte."""
    exponent = tsresol & 0x7F
    if tsresol & 0x80:  # units of 2**-exponent seconds
        return NANOS_PER_SECOND, 1 << exponent
    if exponent <= 9:  # units of 10**-exponent seconds
        return 10 ** (9 - exponent), 1
    return 1, 10 ** (exponent - 9)


def _parse_options(
    body: bytes, start: int, end: int, big_endian: bool, file_offset: int, where: str
) -> dict[int, bytes]:
    """The options of a block (first value of each code), from ``body[start:end]``."""
    unpack = formats.fast_layouts(big_endian).option_header.unpack_from
    options: dict[int, bytes] = {}
    pos = start
    while pos + 4 <= end:
        code, length = unpack(body, pos)
        if code == formats.OPTION_END:
            break
        value_end = pos + 4 + length
        if value_end > end:
            raise CaptureFormatError(
                f"option {code} claims {length} bytes, the block has {end - pos - 4} left",
                file_offset + pos + 2,
                f"{where}.options",
            )
        options.setdefault(code, body[pos + 4 : value_end])
        pos = value_end + (-length % 4)
    return options


def _interface(body: bytes, pos: int, end: int, big_endian: bool, file_offset: int) -> Interface:
    fixed = formats.fast_layouts(big_endian).interface_description
    fixed_size = fixed.size
    if end - pos < fixed_size:
        raise CaptureFormatError("interface description block too short", file_offset, "pcapng.interface")
    link_type, _, snaplen = fixed.unpack_from(body, pos)
    options = _parse_options(body, pos + fixed_size, end, big_endian, file_offset - pos, "pcapng.interface")
    tsresol = options.get(formats.OPTION_IF_TSRESOL, bytes([DEFAULT_TSRESOL]))
    if len(tsresol) != 1:
        raise CaptureFormatError("if_tsresol must be one byte", file_offset, "pcapng.interface.if_tsresol")
    multiplier, divisor = timestamp_ratio(tsresol[0])
    offset_ns = 0
    tsoffset = options.get(formats.OPTION_IF_TSOFFSET)
    if tsoffset is not None:
        if len(tsoffset) != 8:
            raise CaptureFormatError("if_tsoffset must be 8 bytes", file_offset, "pcapng.interface.if_tsoffset")
        offset_ns = int.from_bytes(tsoffset, "big" if big_endian else "little", signed=True) * NANOS_PER_SECOND
    return Interface(link_type, snaplen, multiplier, divisor, offset_ns)


class PcapngState:
    """What reading carries from one block to the next: the section's byte order and interfaces,
    the last packet's time (a simple packet block has none), the record count; and, for a reader
    of part of a file, where it stopped and what it met on the way."""

    def __init__(self) -> None:
        self.big_endian = False
        self.layouts = formats.fast_layouts(False)
        self.interfaces: list[Interface] = []
        self.last_timestamp_ns = 0
        self.index = 0
        self.first_block = True
        #: where the next block starts, when reading stopped at ``end`` or before a packet block
        self.next_offset: int | None = None
        #: a broken block length ended the reading (what follows cannot be found through it)
        self.stopped = False

    def copy(self) -> PcapngState:
        other = PcapngState()
        other.big_endian, other.layouts = self.big_endian, self.layouts
        other.interfaces = list(self.interfaces)
        other.last_timestamp_ns, other.index, other.first_block = self.last_timestamp_ns, self.index, False
        return other


def read_pcapng(stream: ByteStream, head: bytes, *, max_record_size: int) -> Iterator[Packet | BadRecord]:
    """The packets of a pcapng file whose first bytes, ``head``, are a section header's block type."""
    return read_blocks(stream, head, 0, PcapngState(), max_record_size=max_record_size)


def read_pcapng_batches(
    stream: ByteStream, head: bytes, *, max_record_size: int
) -> Iterator[RecordRun | list[Packet | BadRecord]]:
    """:func:`read_pcapng`'s records, a batch at a time (as :func:`~kafka_epochs.capture.files.pcap.read_pcap_batches`
    gives a pcap file's)."""
    return read_block_batches(stream, head, 0, PcapngState(), max_record_size=max_record_size)


def read_blocks(
    stream: ByteStream,
    buf: bytes,
    base: int,
    state: PcapngState,
    *,
    max_record_size: int,
    stop_at: int | None = None,
    before_packets: bool = False,
) -> Iterator[Packet | BadRecord]:
    """The records of the blocks from ``buf[0]`` (at file offset ``base``, a block's start) on,
    read with ``state``; stopping at the first block at or past ``stop_at``, or, with
    ``before_packets``, before the first packet block (:attr:`PcapngState.next_offset` then says where)."""
    for batch in read_block_batches(
        stream, buf, base, state, max_record_size=max_record_size, stop_at=stop_at, before_packets=before_packets
    ):
        yield from batch


def read_block_batches(
    stream: ByteStream,
    buf: bytes,
    base: int,
    state: PcapngState,
    *,
    max_record_size: int,
    stop_at: int | None = None,
    before_packets: bool = False,
) -> Iterator[RecordRun | list[Packet | BadRecord]]:
    """:func:`read_blocks`' records, a batch at a time: the enhanced packet blocks' packets as a
    :class:`RecordRun` of those read before the reader next asks the stream for bytes (at most
    :data:`~kafka_epochs.capture.files.pcap.BATCH_RECORDS`, of one interface), any other record
    alone in a list."""
    pos = 0
    index = state.index
    interfaces = state.interfaces
    layouts = state.layouts
    run: RecordRun | None = None  # the enhanced packet blocks' packets since a run was last handed on
    times: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    # what the quick way below reads a run's next block with, set as the run is begun
    whole_file = stop_at is None and not before_packets
    unpack_block, unpack_u32 = layouts.enhanced_block.unpack_from, layouts.u32.unpack_from
    run_interface = multiplier = divisor = offset_ns = 0
    while True:
        if run is not None and whole_file:
            # Nearly every block of a capture: an enhanced packet block of the run's interface,
            # whole in the buffer, its lengths sound and its time one that fits (the checks of
            # the general way below, in one place), as many as the run has room for; the first
            # block that is anything else goes that way.
            size, enhanced = len(buf), formats.BLOCK_ENHANCED_PACKET
            last, room = size - 32, BATCH_RECORDS - len(times)  # (where a block's fixed part fits)
            whole_ticks = divisor == 1 and not offset_ns  # (micro- or nanosecond ticks: no division)
            taken = 0
            while pos <= last and taken < room:
                block_type, total_length, interface_id, ts_high, ts_low, captured, original = unpack_block(buf, pos)
                end = pos + total_length
                if not (
                    block_type == enhanced
                    and interface_id == run_interface
                    and captured <= total_length - 32  # (so 32 bytes at least: captured is unsigned)
                    and total_length <= max_record_size
                    and not total_length % 4
                    and end <= size
                    and unpack_u32(buf, end - 4)[0] == total_length
                ):
                    break
                ticks = (ts_high << 32) | ts_low
                timestamp_ns = ticks * multiplier if whole_ticks else ticks * multiplier // divisor + offset_ns
                if not MIN_TIME_NS <= timestamp_ns <= MAX_TIME_NS:
                    break
                start = pos + 28
                times.append(timestamp_ns)
                starts.append(start)
                ends.append(start + captured)
                if original != captured:
                    run.originals[len(times) - 1] = original
                taken += 1
                pos = end
            if taken:
                index += taken
                state.last_timestamp_ns = times[-1]
        if stop_at is not None and base + pos >= stop_at:
            state.next_offset = base + pos
            if run is not None:
                yield run
            return
        # 12 bytes: block type, total length and (for a section header) the byte-order magic.
        if len(buf) - pos < formats.MIN_BLOCK_SIZE:
            if run is not None:
                yield run
                run = None
            buf = refill(stream, buf, pos, formats.MIN_BLOCK_SIZE)
            base += pos
            pos = 0
            if len(buf) < formats.MIN_BLOCK_SIZE:
                if buf:
                    error = CaptureFormatError(
                        f"file ends inside a block header ({len(buf)} bytes left)", base, "pcapng.block"
                    )
                    yield [BadRecord(index, base, error)]
                return
        block_type = int.from_bytes(buf[pos : pos + 4], "big")  # the section header's type reads the same both ways
        if before_packets and layouts.u32.unpack_from(buf, pos)[0] in PACKET_BLOCKS:
            state.next_offset = base + pos
            return  # (no packet was read)
        if block_type == formats.BLOCK_SECTION_HEADER:
            magic = buf[pos + 8 : pos + 12]
            if magic == b"\x1a\x2b\x3c\x4d":
                state.big_endian = True
            elif magic == b"\x4d\x3c\x2b\x1a":
                state.big_endian = False
            else:
                error = CaptureFormatError(
                    f"section header has byte-order magic {magic.hex()}, not 1a2b3c4d in either order",
                    base + pos + 8,
                    "pcapng.section_header.byte_order_magic",
                )
                if state.first_block:
                    raise error
                state.stopped = True
                if run is not None:
                    yield run
                yield [BadRecord(index, base + pos, error)]
                return
            state.layouts = layouts = formats.fast_layouts(state.big_endian)
        block_type, total_length = layouts.block_header.unpack_from(buf, pos)
        block_offset = base + pos
        broken: CaptureFormatError | None = None
        if total_length < formats.MIN_BLOCK_SIZE or total_length % 4 or total_length > max_record_size:
            broken = CaptureFormatError(
                f"block total length {total_length} is not a multiple of 4 between {formats.MIN_BLOCK_SIZE} "
                f"and {max_record_size}",
                block_offset + 4,
                "pcapng.block.total_length",
            )
        else:
            if len(buf) - pos < total_length:
                if run is not None:
                    yield run
                    run = None
                buf = refill(stream, buf, pos, total_length)
                base += pos
                pos = 0
            if len(buf) - pos < total_length:
                broken = CaptureFormatError(
                    f"file ends inside a block ({len(buf) - pos} of {total_length} bytes)", block_offset, "pcapng.block"
                )
            else:
                (trailer,) = layouts.u32.unpack_from(buf, pos + total_length - 4)
                if trailer != total_length:
                    broken = CaptureFormatError(
                        f"block ends with length {trailer}, began with {total_length}",
                        block_offset + total_length - 4,
                        "pcapng.block.trailing_total_length",
                    )
        if broken is not None:
            if state.first_block:
                raise broken
            # A length that lies: the blocks after it are found where blocks frame each other
            # again (a cut file, or a damaged length, as pcap records are found again).
            if run is not None:
                yield run
                run = None
            yield [BadRecord(index, block_offset, broken)]
            index += 1
            buf, base, found = _resync(stream, buf, base, pos + 4, layouts.u32.unpack_from, max_record_size)
            if found is None:
                return
            pos = found
            continue
        end = pos + total_length
        body_end = end - 4

        if block_type == formats.BLOCK_ENHANCED_PACKET:
            record: Packet | BadRecord | None = None
            if total_length < 32:
                error = CaptureFormatError("enhanced packet block too short", block_offset, "pcapng.enhanced_packet")
                record = BadRecord(index, block_offset, error)
            else:
                interface_id, ts_high, ts_low, captured, original = layouts.enhanced_packet.unpack_from(buf, pos + 8)
                start = pos + 28
                readable = False  # (else _packet_or_error says why not)
                if interface_id < len(interfaces) and start + captured <= body_end:
                    link_type, _, multiplier, divisor, offset_ns = interfaces[interface_id]
                    timestamp_ns = ((ts_high << 32) | ts_low) * multiplier // divisor + offset_ns
                    readable = MIN_TIME_NS <= timestamp_ns <= MAX_TIME_NS
                if readable:
                    # nearly every record of a capture: its packet joins the run
                    if run is not None and (run.interface != interface_id or len(times) == BATCH_RECORDS):
                        yield run
                        run = None
                    if run is None:
                        run = RecordRun(buf, base, 28, link_type, interface_id, index)
                        times, starts, ends = run.times, run.starts, run.ends
                        run_interface = interface_id
                        unpack_block, unpack_u32 = layouts.enhanced_block.unpack_from, layouts.u32.unpack_from
                    times.append(timestamp_ns)
                    starts.append(start)
                    ends.append(start + captured)
                    if original != captured:
                        run.originals[len(times) - 1] = original
                    state.last_timestamp_ns = timestamp_ns
                else:
                    record = _packet_or_error(
                        buf,
                        interfaces,
                        index,
                        block_offset,
                        start,
                        body_end,
                        interface_id,
                        (ts_high << 32) | ts_low,
                        captured,
                        original,
                        "pcapng.enhanced_packet",
                    )
            if record is not None:
                if run is not None:
                    yield run
                    run = None
                yield [record]
            index += 1
        elif block_type == formats.BLOCK_SIMPLE_PACKET:
            if not interfaces:
                if run is not None:
                    yield run
                    run = None
                yield [
                    BadRecord(
                        index,
                        block_offset,
                        CaptureFormatError(
                            "simple packet block before any interface description", block_offset, "pcapng.simple_packet"
                        ),
                    )
                ]
            elif total_length < 16:
                if run is not None:
                    yield run
                    run = None
                yield [
                    BadRecord(
                        index,
                        block_offset,
                        CaptureFormatError("simple packet block too short", block_offset, "pcapng.simple_packet"),
                    )
                ]
            else:
                (original,) = layouts.simple_packet.unpack_from(buf, pos + 8)
                interface = interfaces[0]
                # No captured length field: the packet is what fits, cut at the snapshot length.
                captured = min(original, body_end - (pos + 12))
                if interface.snaplen:
                    captured = min(captured, interface.snaplen)
                # No timestamp either: the previous packet's keeps the capture's times in order.
                data = buf[pos + 12 : pos + 12 + captured]
                if run is not None:
                    yield run
                    run = None
                yield [Packet(state.last_timestamp_ns, interface.link_type, data, 0, index, original, block_offset)]
            index += 1
        elif block_type == formats.BLOCK_PACKET_OBSOLETE:
            if total_length < 32:
                if run is not None:
                    yield run
                    run = None
                yield [
                    BadRecord(
                        index, block_offset, CaptureFormatError("packet block too short", block_offset, "pcapng.packet")
                    )
                ]
            else:
                interface_id, _, ts_high, ts_low, captured, original = layouts.obsolete_packet.unpack_from(buf, pos + 8)
                record = _packet_or_error(
                    buf,
                    interfaces,
                    index,
                    block_offset,
                    pos + 28,
                    body_end,
                    interface_id,
                    (ts_high << 32) | ts_low,
                    captured,
                    original,
                    "pcapng.packet",
                )
                if isinstance(record, Packet):
                    state.last_timestamp_ns = record.timestamp_ns
                if run is not None:
                    yield run
                    run = None
                yield [record]
            index += 1
        elif block_type == formats.BLOCK_SECTION_HEADER:
            section = layouts.section_header
            problem: CaptureFormatError | None
            if total_length < formats.MIN_BLOCK_SIZE + section.size:
                problem = CaptureFormatError("section header block too short", block_offset, "pcapng.section_header")
            else:
                _, version_major, version_minor, _ = section.unpack_from(buf, pos + 8)
                problem = None
                if version_major != SUPPORTED_MAJOR_VERSION:
                    problem = CaptureFormatError(
                        f"pcapng version {version_major}.{version_minor} is not 1.x",
                        block_offset + 12,
                        "pcapng.section_header.version_major",
                    )
            if problem is not None:
                if state.first_block:
                    raise problem
                state.stopped = True
                if run is not None:
                    yield run
                    run = None
                yield [BadRecord(index, block_offset, problem)]
                return
            if run is not None:  # (a new section: its interfaces are new)
                yield run
                run = None
            state.interfaces = interfaces = []
        elif block_type == formats.BLOCK_INTERFACE_DESCRIPTION:
            try:
                interfaces.append(_interface(buf, pos + 8, body_end, state.big_endian, block_offset + 8))
            except CaptureFormatError as exc:
                # Later packets naming this interface are reported one by one; the ids of
                # the interfaces after it must not shift, so a stand-in keeps its place.
                interfaces.append(Interface(-1, 0, 1000, 1, 0))
                if run is not None:
                    yield run
                    run = None
                yield [BadRecord(index, block_offset, exc)]
                index += 1
        # Any other block (statistics, name resolution, secrets, custom) is not about packets.
        state.first_block = False
        pos = end


def _resync(
    stream: ByteStream, buf: bytes, base: int, start: int, unpack: Unpack, max_record_size: int
) -> tuple[bytes, int, int | None]:
    """The blocks after a broken one: the first multiple of 4 (in the file) from ``buf[start]`` on
    where blocks frame each other. Returns the buffer, its file offset, and the position found in
    it, or None at the end of the data; bytes passed over are dropped."""
    lookahead = CHAIN * max_record_size + 1
    pos = start + (-(base + start) % 4)
    while True:
        if len(buf) < pos + lookahead:
            buf = refill(stream, buf, 0, pos + lookahead)
        at_end = len(buf) < pos + lookahead
        limit = len(buf) if at_end else len(buf) - lookahead + 1
        for i in range(pos, limit, 4):
            if blocks_chain(buf, i, unpack, max_record_size, at_end):
                return buf, base, i
        if at_end:
            return buf, base, None
        after = limit + (-(base + limit) % 4)
        buf, base, pos = buf[after:], base + after, 0


def _packet_or_error(
    buf: bytes,
    interfaces: list[Interface],
    index: int,
    block_offset: int,
    data_start: int,
    body_end: int,
    interface_id: int,
    raw_timestamp: int,
    captured: int,
    original: int,
    where: str,
) -> Packet | BadRecord:
    """The packet of an enhanced (or obsolete) packet block, or why it cannot be read."""
    if interface_id >= len(interfaces):
        return BadRecord(
            index,
            block_offset,
            CaptureFormatError(
                f"packet names interface {interface_id}, the section has {len(interfaces)}",
                block_offset + 8,
                f"{where}.interface_id",
            ),
        )
    if data_start + captured > body_end:
        return BadRecord(
            index,
            block_offset,
            CaptureFormatError(
                f"packet claims {captured} captured bytes, the block holds {body_end - data_start}",
                block_offset + 20,
                f"{where}.captured_length",
            ),
        )
    link_type, _, multiplier, divisor, offset_ns = interfaces[interface_id]
    timestamp_ns = raw_timestamp * multiplier // divisor + offset_ns
    if not MIN_TIME_NS <= timestamp_ns <= MAX_TIME_NS:
        # a flipped bit, or an if_tsresol that does not fit the numbers: no time can be given,
        # and a guessed one would be silently wrong
        return BadRecord(
            index,
            block_offset,
            CaptureFormatError(
                f"timestamp {raw_timestamp} (in the interface's units) is {timestamp_ns // NANOS_PER_SECOND} s "
                "from 1970, outside the years 1677-2262 that a 64-bit nanosecond time holds",
                block_offset + 12,
                f"{where}.timestamp",
            ),
        )
    data = buf[data_start : data_start + captured]
    return Packet(timestamp_ns, link_type, data, interface_id, index, original, block_offset)

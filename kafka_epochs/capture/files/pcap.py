"""The classic pcap format: one file header, then a record header and the bytes of each packet.

Both byte orders, microsecond and nanosecond timestamps, and the record header of Kuznetzov's
patched libpcap (8 more bytes, ignored) are read. pcap has no markers between records: after a
record whose length cannot be, the next is found where record headers chain again
(:mod:`~kafka_epochs.capture.files.pcap_sync`), and reading goes on from there.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.pcap_sync import (
    CHAIN,
    MAX_GAP_SECONDS,
    PCAP_MAGICS,
    SUPPORTED_MAJOR_VERSION,
    PcapHeader,
    chains,
)
from kafka_epochs.capture.files.runs import RecordRun
from kafka_epochs.capture.files.source import ByteStream, refill

__all__ = ["PCAP_MAGICS", "read_pcap", "read_pcap_batches"]

#: Records a batch holds at most: a batch's packets (and what is made of them, up to the lines
#: printed) are still in the processor's caches when they are taken on; a whole buffer's worth of
#: records (2,000 or more) was not, and `decode` took 4% more CPU on a real capture for it.
BATCH_RECORDS = 256


def read_pcap(stream: ByteStream, head: bytes, *, max_record_size: int) -> Iterator[Packet | BadRecord]:
    """The packets of a pcap file whose first bytes, ``head``, hold a pcap magic number."""
    for batch in read_pcap_batches(stream, head, max_record_size=max_record_size):
        yield from batch


def read_pcap_batches(
    stream: ByteStream, head: bytes, *, max_record_size: int
) -> Iterator[RecordRun | list[BadRecord]]:
    """:func:`read_pcap`'s records, a batch at a time: a :class:`RecordRun` of the packets read
    before the reader next asks the stream for bytes (so a live capture's records come as they
    arrive), at most :data:`BATCH_RECORDS` of them; a record that cannot be read, alone in a list."""
    buf = refill(stream, head, 0, formats.PCAP_FILE_HEADER_SIZE)
    if len(buf) < formats.PCAP_FILE_HEADER_SIZE:
        raise CaptureFormatError(
            f"file header needs {formats.PCAP_FILE_HEADER_SIZE} bytes, the file has {len(buf)}", 0, "pcap.header"
        )
    big_endian, fraction_ns, record_size = PCAP_MAGICS[int.from_bytes(buf[:4], "big")]
    header = formats.read_pcap_file_header(big_endian, buf)
    if header.version_major != SUPPORTED_MAJOR_VERSION:
        raise CaptureFormatError(
            f"pcap version {header.version_major}.{header.version_minor} is not 2.x", 4, "pcap.header.version_major"
        )
    link_type = header.link_type_and_fcs & 0xFFFF
    unpack_record = formats.fast_layouts(big_endian).pcap_record.unpack_from
    sync = PcapHeader(buf[: formats.PCAP_FILE_HEADER_SIZE])
    fraction_limit = sync.fraction_limit

    pos = formats.PCAP_FILE_HEADER_SIZE
    base = 0  # file offset of buf[0]
    index = 0
    previous: int | None = None  # the seconds of the record before
    run: RecordRun | None = None  # the packets read since a run was last handed on
    times: list[int] = []  # (the run's lists, and how many more records it may take)
    starts: list[int] = []
    ends: list[int] = []
    room = 0
    while True:
        if run is not None:
            # Nearly every record: in the same second as the one before, with plausible lengths
            # and fraction (so surely one: see below), whole in the buffer, as many as the run
            # has room for; the first that is anything else goes the general way below.
            last, taken = len(buf) - record_size, 0  # (where a record header fits)
            while pos <= last and taken < room:
                seconds, fraction, captured, original = unpack_record(buf, pos)
                start = pos + record_size
                end = start + captured
                if (
                    seconds != previous
                    or original < captured
                    or fraction >= fraction_limit
                    or captured > max_record_size
                    or end > len(buf)
                ):
                    break
                times.append(seconds * 1_000_000_000 + fraction * fraction_ns)
                starts.append(start)
                ends.append(end)
                if original != captured:
                    run.originals[len(times) - 1] = original
                taken += 1
                pos = end
            if taken:
                index += taken
                room -= taken
                if not room:
                    yield run
                    run = None
        if len(buf) - pos < record_size:
            if run is not None:
                yield run
                run = None
            buf = refill(stream, buf, pos, record_size)
            base += pos
            pos = 0
            if len(buf) < record_size:
                if buf:
                    why = f"file ends inside a record header ({len(buf)} of {record_size} bytes)"
                    yield [BadRecord(index, base, CaptureFormatError(why, base, "pcap.record"))]
                return
        seconds, fraction, captured, original = unpack_record(buf, pos)
        # A record in the same second as the one before, with plausible lengths and fraction, is
        # surely one (the one before passed the checks of time): only the others are looked at.
        if seconds != previous or original < captured or fraction >= fraction_limit or captured > max_record_size:
            if index == 0:  # (the first record: no second before it)
                sync.anchor_at(buf[pos : pos + record_size])  # its time, if it can be one
            if sync.doubtful(seconds, fraction, captured, original, previous, max_record_size):
                if run is not None:  # (judging may read ahead)
                    yield run
                    run = None
                buf, base, pos, problem = _judge(stream, buf, base, pos, sync, previous, max_record_size)
                if problem is not None:
                    yield [BadRecord(index, base + pos, problem)]
                    index += 1
                    buf, base, found = _resync(stream, buf, base, pos + 1, sync, max_record_size)
                    if found is None:
                        return
                    pos = found
                    continue
        start = pos + record_size
        end = start + captured
        if end > len(buf):
            if run is not None:
                yield run
                run = None
            buf = refill(stream, buf, pos, record_size + captured)
            base += pos
            pos = 0
            start = record_size
            end = start + captured
            if end > len(buf):
                why = f"file ends inside a packet ({len(buf) - start} of {captured} bytes)"
                yield [BadRecord(index, base, CaptureFormatError(why, base, "pcap.record.data"))]
                index += 1
                # a cut file, or a damaged length: records may still follow if it was the length
                buf, base, found = _resync(stream, buf, base, 1, sync, max_record_size)
                if found is None:
                    return
                pos = found
                continue
        if run is None:
            run = RecordRun(buf, base, record_size, link_type, 0, index)
            times, starts, ends = run.times, run.starts, run.ends
            room = BATCH_RECORDS
        times.append(seconds * 1_000_000_000 + fraction * fraction_ns)
        starts.append(start)
        ends.append(end)
        if original != captured:
            run.originals[len(times) - 1] = original
        room -= 1
        if not room:
            yield run
            run = None
        index += 1
        previous = seconds
        pos = end


def _judge(
    stream: ByteStream, buf: bytes, base: int, pos: int, sync: PcapHeader, previous: int | None, max_record_size: int
) -> tuple[bytes, int, int, CaptureFormatError | None]:
    """Whether the record header at ``buf[pos]``, which a quick look found doubtful, is not one:
    (buffer, its file offset, the header's position in it, why it is not one or None)."""
    seconds, fraction, captured, original = sync.unpack(buf, pos)
    if captured > max_record_size:
        return (
            buf,
            base,
            pos,
            CaptureFormatError(
                f"record claims {captured} captured bytes, more than the limit of {max_record_size}",
                base + pos + 8,
                "pcap.record.captured_length",
            ),
        )
    why = sync.implausible(seconds, fraction, captured, original)
    if why is None and previous is not None and abs(seconds - previous) > MAX_GAP_SECONDS:
        # a long pause in a real capture, or a header read from the wrong place: records chain
        # on from a real one
        lookahead = CHAIN * sync.longest_record(max_record_size) + 1
        if len(buf) - pos < lookahead:
            buf = refill(stream, buf, pos, lookahead)
            base += pos
            pos = 0
        if not chains(buf, pos, sync, max_record_size, len(buf) - pos < lookahead):
            why = f"time {seconds} s is more than a day from the record before ({previous} s), and no records chain on"
    if why is None:
        return buf, base, pos, None
    return buf, base, pos, CaptureFormatError(f"not a record header: {why}", base + pos, "pcap.record")


def _resync(
    stream: ByteStream, buf: bytes, base: int, start: int, sync: PcapHeader, max_record_size: int
) -> tuple[bytes, int, int | None]:
    """The records after a broken one: the first place from ``buf[start]`` on where records chain
    (see :mod:`~kafka_epochs.capture.files.pcap_sync`). Returns the buffer, its file offset, and
    the position found in it, or None at the end of the data. Bytes passed over are dropped, so
    memory stays bounded by the lookahead whatever the damage."""
    lookahead = CHAIN * sync.longest_record(max_record_size) + 1
    pos = start
    while True:
        if len(buf) < pos + lookahead:
            buf = refill(stream, buf, 0, pos + lookahead)
        at_end = len(buf) < pos + lookahead
        limit = len(buf) if at_end else len(buf) - lookahead + 1
        for i in range(pos, limit):
            if chains(buf, i, sync, max_record_size, at_end):
                return buf, base, i
        if at_end:
            return buf, base, None
        buf, base, pos = buf[limit:], base + limit, 0

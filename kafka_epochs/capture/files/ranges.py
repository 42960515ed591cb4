"""One byte range of a large pcap file, read on its own: the first step of reading a capture in parallel.

A range ``[start, end)`` holds the records whose first byte lies in it (a record that begins
before ``end`` is read to its last byte, wherever that is). A range that starts at the file
header starts at the first record; any other finds its first record by looking, from
``start`` on, for a place where :data:`CHAIN` record headers in a row are plausible: a
captured length within the file's snapshot length and no more than the original length, an
original length a link could carry, a timestamp fraction below one second, times within
:data:`MAX_GAP_SECONDS` of each other and within :data:`MAX_SPAN_SECONDS` of the file's first
record. (The time checks are what tell a true chain from the same chain read 4 bytes off,
whose "times" are the true fractions and lengths.)
Each record then leads to the next by its length, as when the whole file is read, so the
ranges of a file, read in order, give its records once each and in order.

Bytes inside a packet can, in principle, look like several record headers in a row (a pcap
file carried in a packet); a range starting in such a packet would begin inside it. This is
the limit of splitting a format without an index, and why ``CHAIN`` is not 1. Undamaged
captures split anywhere read as they do whole (the tests split real captures at every offset).

Packets read from a range have ``index`` -1 (their number in the file is only known to a
reader that started at the top) and their file ``offset``; ordering by offset gives file order.
Only uncompressed files are split (pcapng by :mod:`.pcapng_ranges`); gzip files are read whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.pcap_sync import (
    CHAIN,
    MAX_GAP_SECONDS,
    PCAP_MAGICS,
    PcapHeader,
    chains,
)

#: How far a range looks for its first record before giving up (bytes).
MAX_SEARCH = 64 << 20
_CHUNK = 1 << 20


def splittable(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an uncompressed pcap or pcapng file (whose ranges can be read apart;
    a pcapng file's still needs one description of its interfaces, see
    :mod:`~kafka_epochs.capture.files.pcapng_ranges`)."""
    with open(path, "rb") as f:
        magic = int.from_bytes(f.read(4), "big")
    return magic in PCAP_MAGICS or magic == formats.PCAPNG_SECTION_HEADER


def is_pcapng(path: str | os.PathLike[str]) -> bool:
    with open(path, "rb") as f:
        return int.from_bytes(f.read(4), "big") == formats.PCAPNG_SECTION_HEADER


def read_pcap_range(
    path: str | os.PathLike[str],
    start: int,
    end: int,
    *,
    max_record_size: int = 16 * 1024 * 1024,
) -> Iterator[Packet | BadRecord]:
    """The records of the pcap file at ``path`` whose first byte is in ``[start, end)``."""
    return iter(PcapRange(path, start, end, max_record_size=max_record_size))


class ByteRange:
    """A byte range ``[start, end)`` of a capture file, to be read on its own, and where the
    record after its last one starts once it has been read (:attr:`next_offset`)."""

    def __init__(
        self, path: str | os.PathLike[str], start: int, end: int, *, exact: bool, max_record_size: int
    ) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.exact = exact
        self.max_record_size = max_record_size
        self.next_offset: int | None = None


class PcapRange(ByteRange):
    """The records of one byte range of a pcap file (see the module's description), iterable once.

    ``exact``: ``start`` is known to be where a record starts (a reader that followed the file's
    records to it said so): no search. ``report_unfound``: a range long enough to hold a record
    that finds none yields a bad record saying so; a reader that knows the bytes are the tail of
    damage already reported (the range before ended looking for a record) turns that off.
    After iteration, :attr:`next_offset` is where the record after the range's last one starts
    (at or past ``end``), or None when the range ended looking for a record after damage or
    the file ended.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        start: int,
        end: int,
        *,
        exact: bool = False,
        report_unfound: bool = True,
        max_record_size: int = 16 * 1024 * 1024,
    ) -> None:
        super().__init__(path, start, end, exact=exact, max_record_size=max_record_size)
        self.report_unfound = report_unfound

    def __iter__(self) -> Iterator[Packet | BadRecord]:
        max_record_size = self.max_record_size
        start = self.start
        with open(self.path, "rb") as f:
            header = PcapHeader(f.read(formats.PCAP_FILE_HEADER_SIZE))
            size = os.fstat(f.fileno()).st_size
            end = min(self.end, size)
            pos = formats.PCAP_FILE_HEADER_SIZE
            header.anchor_at(f.read(header.record_size))  # every search, here or after damage, needs it
            if self.exact:
                pos = start
            elif start > pos:
                stop = min(end, start + MAX_SEARCH)
                found = _first_record(f, header, start, stop, size, max_record_size)
                if found is None:
                    if self.report_unfound and (stop < end or _must_hold_a_record(header, start, end, max_record_size)):
                        # never silent: bytes that should hold records, and none could be found
                        yield _bad(start, f"no pcap record could be found in bytes {start}-{stop}", "pcap.record")
                    return
                pos = found
            if pos < end:
                yield from self._records(f, header, pos, end, size)
            elif pos < size:
                self.next_offset = pos

    def _records(self, f: BinaryIO, header: PcapHeader, pos: int, end: int, size: int) -> Iterator[Packet | BadRecord]:
        """Records from ``pos`` (a record start) while they start before ``end``."""
        max_record_size = self.max_record_size
        rs = header.record_size
        previous: int | None = None  # the seconds of the record before (in this range)
        f.seek(pos)
        buf = b""
        at = 0  # position in buf
        base = pos  # file offset of buf[0]
        while base + at < end:
            if len(buf) - at < rs:
                buf = buf[at:] + f.read(_CHUNK)
                base += at
                at = 0
                if len(buf) < rs:
                    if buf:
                        message = f"file ends inside a record header ({len(buf)} of {rs} bytes)"
                        yield _bad(base, message, "pcap.record")
                    return
            seconds, fraction, captured, original = header.unpack(buf, at)
            if header.doubtful(seconds, fraction, captured, original, previous, max_record_size):
                bad = _judge(f, header, base + at, previous, size, max_record_size)
                if bad is not None:
                    yield bad
                    # as the whole-file reader does: look for the records after the broken one
                    found = _first_record(f, header, base + at + 1, end, size, max_record_size)
                    if found is None:
                        return
                    f.seek(found)
                    buf, at, base = b"", 0, found
                    continue
            if at + rs + captured > len(buf):
                buf = buf[at:] + f.read(max(_CHUNK, rs + captured))
                base += at
                at = 0
                if rs + captured > len(buf):
                    have = len(buf) - rs
                    yield _bad(base, f"file ends inside a packet ({have} of {captured} bytes)", "pcap.record.data")
                    # as the whole-file reader does: the length may be what is damaged
                    found = _first_record(f, header, base + 1, end, size, max_record_size)
                    if found is None:
                        return
                    f.seek(found)
                    buf, at, base = b"", 0, found
                    continue
            data = buf[at + rs : at + rs + captured]
            time_ns = seconds * 1_000_000_000 + fraction * header.fraction_ns
            yield Packet(time_ns, header.link_type, data, 0, -1, original, base + at)
            previous = seconds
            at += rs + captured
        if base + at < size:
            self.next_offset = base + at


def _judge(
    f: BinaryIO, header: PcapHeader, offset: int, previous: int | None, size: int, max_record_size: int
) -> BadRecord | None:
    """The record header at ``offset``, which a quick look found doubtful, as a bad record (None:
    it is one), judged as the whole-file reader judges it."""
    seconds, fraction, captured, original = header.unpack(_read_at(f, offset, header.record_size), 0)
    if captured > max_record_size:
        message = f"record claims {captured} captured bytes, more than the limit of {max_record_size}"
        return _bad(offset, message, "pcap.record.captured_length", offset + 8)
    why = header.implausible(seconds, fraction, captured, original)
    if why is None and previous is not None and abs(seconds - previous) > MAX_GAP_SECONDS:
        lookahead = CHAIN * header.longest_record(max_record_size) + 1
        ahead = _read_at(f, offset, min(lookahead, size - offset))
        if not chains(ahead, 0, header, max_record_size, offset + len(ahead) >= size):
            why = f"time {seconds} s is more than a day from the record before ({previous} s), and no records chain on"
    return None if why is None else _bad(offset, f"not a record header: {why}", "pcap.record")


def _must_hold_a_record(header: PcapHeader, start: int, end: int, max_record_size: int) -> bool:
    """Whether ``[start, end)`` is longer than any one record can be: then, in a sound file, some
    record starts in it (a shorter range may lie inside one packet, or after the last start)."""
    return end - start > header.longest_record(max_record_size)


def _read_at(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    return f.read(size)


def _first_record(
    f: BinaryIO, header: PcapHeader, start: int, stop: int, size: int, max_record_size: int
) -> int | None:
    """The first offset in ``[start, stop)`` where :data:`CHAIN` plausible records begin (fewer
    when the file ends first, exactly at its end)."""
    rs = header.record_size
    window = _CHUNK + CHAIN * (rs + max_record_size)
    offset = start
    while offset < stop:
        buf = _read_at(f, offset, min(window, size - offset))
        for i in range(min(_CHUNK, stop - offset, len(buf))):
            if chains(buf, i, header, max_record_size, offset + len(buf) >= size):
                return offset + i
        offset += _CHUNK
    return None


def _bad(offset: int, message: str, path: str, where: int | None = None) -> BadRecord:
    """A bad record at ``offset``, its error pointing at ``where`` (the field at fault) or at it."""
    return BadRecord(-1, offset, CaptureFormatError(message, offset if where is None else where, path))

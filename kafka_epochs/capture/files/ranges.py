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
Only uncompressed pcap files are split; pcapng and gzip files are read whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.pcap import PCAP_MAGICS, SUPPORTED_MAJOR_VERSION

#: Record headers in a row that must be plausible for a range to start at the first of them.
CHAIN = 4
#: Neighbouring records further apart in time than this do not chain (a day: captures are
#: continuous; a stray byte pattern's "times" are anywhere in 136 years).
MAX_GAP_SECONDS = 86_400
#: Records further than this from the file's first record in time are not believed to start
#: a range (a year either way).
MAX_SPAN_SECONDS = 366 * 86_400
#: The largest original length believed when the snapshot length is smaller (jumbo frames and
#: offloaded segments stay far below it).
MAX_ORIGINAL = 1 << 18
#: How far a range looks for its first record before giving up (bytes).
MAX_SEARCH = 64 << 20
_CHUNK = 1 << 20


class PcapHeader:
    """What every range of one pcap file needs from its file header."""

    def __init__(self, head: bytes) -> None:
        if len(head) < formats.PCAP_FILE_HEADER_SIZE:
            raise CaptureFormatError(
                f"file header needs {formats.PCAP_FILE_HEADER_SIZE} bytes, the file has {len(head)}", 0, "pcap.header"
            )
        magic = int.from_bytes(head[:4], "big")
        if magic not in PCAP_MAGICS:
            raise CaptureFormatError(f"magic number {head[:4].hex()} is not pcap's", 0, "magic")
        self.big_endian, self.fraction_ns, self.record_size = PCAP_MAGICS[magic]
        header = formats.pcap_file_header(self.big_endian).parse(head[: formats.PCAP_FILE_HEADER_SIZE])
        if header.version_major != SUPPORTED_MAJOR_VERSION:
            raise CaptureFormatError(
                f"pcap version {header.version_major}.{header.version_minor} is not 2.x", 4, "pcap.header.version_major"
            )
        self.link_type = header.link_type_and_fcs & 0xFFFF
        self.snaplen = header.snaplen
        self.unpack = formats.fast_layouts(self.big_endian).pcap_record.unpack_from
        self.fraction_limit = 1_000_000_000 // self.fraction_ns
        self.original_limit = max(self.snaplen, MAX_ORIGINAL)
        #: the first record's seconds, once known (None: the file has no record to go by)
        self.anchor: int | None = None

    def anchor_at(self, first_record: bytes) -> None:
        if len(first_record) >= self.record_size:
            self.anchor = self.unpack(first_record, 0)[0]

    def plausible(self, buf: bytes, pos: int, max_record_size: int) -> tuple[int, int] | None:
        """(seconds, captured length) of a record header at ``pos`` that could be one, else None."""
        seconds, fraction, captured, original = self.unpack(buf, pos)
        limit = min(max_record_size, self.snaplen) if self.snaplen else max_record_size
        if captured > limit or original < captured or original > self.original_limit:
            return None
        if fraction >= self.fraction_limit:
            return None
        if self.anchor is not None and abs(seconds - self.anchor) > MAX_SPAN_SECONDS:
            return None
        return seconds, captured


def splittable(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an uncompressed pcap file (the format whose ranges can be read apart)."""
    with open(path, "rb") as f:
        return int.from_bytes(f.read(4), "big") in PCAP_MAGICS


def read_pcap_range(
    path: str | os.PathLike[str],
    start: int,
    end: int,
    *,
    max_record_size: int = 16 * 1024 * 1024,
) -> Iterator[Packet | BadRecord]:
    """The records of the pcap file at ``path`` whose first byte is in ``[start, end)``."""
    with open(path, "rb") as f:
        header = PcapHeader(f.read(formats.PCAP_FILE_HEADER_SIZE))
        size = os.fstat(f.fileno()).st_size
        end = min(end, size)
        pos = formats.PCAP_FILE_HEADER_SIZE
        if start > pos:
            header.anchor_at(f.read(header.record_size))
            stop = min(end, start + MAX_SEARCH)
            found = _first_record(f, header, start, stop, size, max_record_size)
            if found is None:
                if stop < end or _must_hold_a_record(header, start, end, max_record_size):
                    # never silent: bytes that should hold records, and none could be found
                    yield _bad(start, f"no pcap record could be found in bytes {start}-{stop}", "pcap.record")
                return
            pos = found
        if pos < end:
            yield from _records(f, header, pos, end, max_record_size)


def _must_hold_a_record(header: PcapHeader, start: int, end: int, max_record_size: int) -> bool:
    """Whether ``[start, end)`` is longer than any one record can be: then, in a sound file, some
    record starts in it (a shorter range may lie inside one packet, or after the last start)."""
    longest = min(max_record_size, header.snaplen) if header.snaplen else max_record_size
    return end - start > header.record_size + longest


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
            if _chains(buf, i, offset, size, header, max_record_size):
                return offset + i
        offset += _CHUNK
    return None


def _chains(buf: bytes, i: int, base: int, size: int, header: PcapHeader, max_record_size: int) -> bool:
    rs = header.record_size
    previous: int | None = None
    pos = i
    for _ in range(CHAIN):
        if base + pos == size:
            return previous is not None  # the file ends right after a whole record
        if pos + rs > len(buf):
            return False
        found = header.plausible(buf, pos, max_record_size)
        if found is None:
            return False
        seconds, captured = found
        if previous is not None and abs(seconds - previous) > MAX_GAP_SECONDS:
            return False
        previous = seconds
        pos += rs + captured
        if base + pos > size:
            return False
    return True


def _records(f: BinaryIO, header: PcapHeader, pos: int, end: int, max_record_size: int) -> Iterator[Packet | BadRecord]:
    """Records from ``pos`` (a record start) while they start before ``end``."""
    rs = header.record_size
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
                    yield _bad(base, f"file ends inside a record header ({len(buf)} of {rs} bytes)", "pcap.record")
                return
        seconds, fraction, captured, original = header.unpack(buf, at)
        if captured > max_record_size:
            message = f"record claims {captured} captured bytes, more than the limit of {max_record_size}"
            yield _bad(base + at, message, "pcap.record.captured_length")
            return
        if at + rs + captured > len(buf):
            buf = buf[at:] + f.read(max(_CHUNK, rs + captured))
            base += at
            at = 0
            if rs + captured > len(buf):
                have = len(buf) - rs
                yield _bad(base, f"file ends inside a packet ({have} of {captured} bytes)", "pcap.record.data")
                return
        data = buf[at + rs : at + rs + captured]
        time_ns = seconds * 1_000_000_000 + fraction * header.fraction_ns
        yield Packet(time_ns, header.link_type, data, 0, -1, original, base + at)
        at += rs + captured


def _bad(offset: int, message: str, path: str) -> BadRecord:
    return BadRecord(-1, offset, CaptureFormatError(message, offset, path))

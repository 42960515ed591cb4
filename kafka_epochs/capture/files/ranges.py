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
from kafka_epochs.capture.files.pcap_sync import CHAIN, PCAP_MAGICS, PcapHeader, chains

#: How far a range looks for its first record before giving up (bytes).
MAX_SEARCH = 64 << 20
_CHUNK = 1 << 20


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
        header.anchor_at(f.read(header.record_size))  # every search, here or after damage, needs it
        if start > pos:
            stop = min(end, start + MAX_SEARCH)
            found = _first_record(f, header, start, stop, size, max_record_size)
            if found is None:
                if stop < end or _must_hold_a_record(header, start, end, max_record_size):
                    # never silent: bytes that should hold records, and none could be found
                    yield _bad(start, f"no pcap record could be found in bytes {start}-{stop}", "pcap.record")
                return
            pos = found
        if pos < end:
            yield from _records(f, header, pos, end, size, max_record_size)


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


def _records(
    f: BinaryIO, header: PcapHeader, pos: int, end: int, size: int, max_record_size: int
) -> Iterator[Packet | BadRecord]:
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
                return
        data = buf[at + rs : at + rs + captured]
        time_ns = seconds * 1_000_000_000 + fraction * header.fraction_ns
        yield Packet(time_ns, header.link_type, data, 0, -1, original, base + at)
        at += rs + captured


def _bad(offset: int, message: str, path: str) -> BadRecord:
    return BadRecord(-1, offset, CaptureFormatError(message, offset, path))

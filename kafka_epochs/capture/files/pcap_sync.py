"""Finding pcap records without reading from the top: what tells a record header from other bytes.

Readers also judge each record header they come to in order (:meth:`PcapHeader.implausible`, and
a time further than :data:`MAX_GAP_SECONDS` from the record before that does not chain): a
header that cannot be one means the record before it lied about its length (or lost bytes), and
reading goes on where records chain again, as after any broken record.

A pcap file has no markers: a record is found only by the length of the one before it. After a
broken record, or at the start of a byte range, the next record is where :data:`CHAIN` record
headers in a row are plausible (see :meth:`PcapHeader.plausible`), each leading to the next by
its length. Times are what tell a true chain from the same chain read 4 bytes off, whose
"seconds" are the true fractions: they must lie within :data:`MAX_SPAN_SECONDS` of the file's
first record and within :data:`MAX_GAP_SECONDS` of each other.
"""

from __future__ import annotations

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats

# magic (read big-endian) -> (file is big-endian, nanoseconds per timestamp fraction unit, record header size)
PCAP_MAGICS: dict[int, tuple[bool, int, int]] = {
    formats.PCAP_MICRO_BIG: (True, 1000, formats.PCAP_RECORD_HEADER_SIZE),
    formats.PCAP_MICRO_LITTLE: (False, 1000, formats.PCAP_RECORD_HEADER_SIZE),
    formats.PCAP_NANO_BIG: (True, 1, formats.PCAP_RECORD_HEADER_SIZE),
    formats.PCAP_NANO_LITTLE: (False, 1, formats.PCAP_RECORD_HEADER_SIZE),
    formats.PCAP_KUZNETZOV_BIG: (True, 1000, formats.PCAP_KUZNETZOV_RECORD_HEADER_SIZE),
    formats.PCAP_KUZNETZOV_LITTLE: (False, 1000, formats.PCAP_KUZNETZOV_RECORD_HEADER_SIZE),
}

SUPPORTED_MAJOR_VERSION = 2


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
        header = formats.read_pcap_file_header(self.big_endian, head)
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
        """Take the file's first record header as the anchor of times, unless it cannot be one."""
        if len(first_record) >= self.record_size:
            seconds, fraction, captured, original = self.unpack(first_record, 0)
            if self.implausible(seconds, fraction, captured, original) is None:
                self.anchor = seconds

    def doubtful(
        self, seconds: int, fraction: int, captured: int, original: int, previous: int | None, max_record_size: int
    ) -> bool:
        """A quick look at a record header read where one should start: False when it is
        surely one; True when it must be judged (:meth:`implausible`, and whether records chain
        on from it after a long pause since ``previous``, the record before's seconds)."""
        anchor = self.anchor
        return (
            captured > max_record_size
            or original < captured
            or fraction >= self.fraction_limit
            or (anchor is not None and abs(seconds - anchor) > MAX_SPAN_SECONDS)
            or (previous is not None and abs(seconds - previous) > MAX_GAP_SECONDS)
        )

    def implausible(self, seconds: int, fraction: int, captured: int, original: int) -> str | None:
        """Why a record header, read where one should start, cannot be one (None: it can be).

        A header read from the wrong place (after a record whose length was damaged, or one that
        lost bytes) gives lengths and times drawn from packet bytes: a captured length above the
        original one, a fraction of a second that is not below one second, a time decades away.
        """
        if original < captured:
            return f"captured length {captured} is more than the original length {original}"
        if fraction >= self.fraction_limit:
            return f"timestamp fraction {fraction} is not below one second"
        if self.anchor is not None and abs(seconds - self.anchor) > MAX_SPAN_SECONDS:
            return f"time {seconds} s is more than a year from the first record's ({self.anchor} s)"
        return None

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

    def longest_record(self, max_record_size: int) -> int:
        """The most bytes one record (header and data) can take."""
        data = min(max_record_size, self.snaplen) if self.snaplen else max_record_size
        return self.record_size + data


def chains(buf: bytes, i: int, header: PcapHeader, max_record_size: int, at_end: bool) -> bool:
    """Whether :data:`CHAIN` plausible records begin at ``buf[i]`` (fewer when the data ends
    right after a whole record, ``at_end`` saying ``buf`` holds all there is)."""
    rs = header.record_size
    previous: int | None = None
    pos = i
    for _ in range(CHAIN):
        if pos == len(buf) and at_end:
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
        if pos > len(buf) and at_end:
            return False
    return True

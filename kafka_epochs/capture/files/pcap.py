"""The classic pcap format: one file header, then a record header and the bytes of each packet.

Both byte orders, microsecond and nanosecond timestamps, and the record header of Kuznetzov's
patched libpcap (8 more bytes, ignored) are read. A record that cannot be read ends the file,
because pcap has no way to find the next record without trusting the broken one's length.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.source import ByteStream, refill

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


def read_pcap(stream: ByteStream, head: bytes, *, max_record_size: int) -> Iterator[Packet | BadRecord]:
    """The packets of a pcap file whose first bytes, ``head``, hold a pcap magic number."""
    buf = refill(stream, head, 0, formats.PCAP_FILE_HEADER_SIZE)
    if len(buf) < formats.PCAP_FILE_HEADER_SIZE:
        raise CaptureFormatError(
            f"file header needs {formats.PCAP_FILE_HEADER_SIZE} bytes, the file has {len(buf)}", 0, "pcap.header"
        )
    big_endian, fraction_ns, record_size = PCAP_MAGICS[int.from_bytes(buf[:4], "big")]
    header = formats.pcap_file_header(big_endian).parse(buf[: formats.PCAP_FILE_HEADER_SIZE])
    if header.version_major != SUPPORTED_MAJOR_VERSION:
        raise CaptureFormatError(
            f"pcap version {header.version_major}.{header.version_minor} is not 2.x", 4, "pcap.header.version_major"
        )
    link_type = header.link_type_and_fcs & 0xFFFF
    unpack_record = formats.fast_layouts(big_endian).pcap_record.unpack_from

    pos = formats.PCAP_FILE_HEADER_SIZE
    base = 0  # file offset of buf[0]
    index = 0
    while True:
        if len(buf) - pos < record_size:
            buf = refill(stream, buf, pos, record_size)
            base += pos
            pos = 0
            if len(buf) < record_size:
                if buf:
                    yield BadRecord(
                        index,
                        base,
                        CaptureFormatError(
                            f"file ends inside a record header ({len(buf)} of {record_size} bytes)", base, "pcap.record"
                        ),
                    )
                return
        seconds, fraction, captured, original = unpack_record(buf, pos)
        if captured > max_record_size:
            yield BadRecord(
                index,
                base + pos,
                CaptureFormatError(
                    f"record claims {captured} captured bytes, more than the limit of {max_record_size}",
                    base + pos + 8,
                    "pcap.record.captured_length",
                ),
            )
            return
        start = pos + record_size
        end = start + captured
        if end > len(buf):
            buf = refill(stream, buf, pos, record_size + captured)
            base += pos
            pos = 0
            start = record_size
            end = start + captured
            if end > len(buf):
                yield BadRecord(
                    index,
                    base,
                    CaptureFormatError(
                        f"file ends inside a packet ({len(buf) - start} of {captured} bytes)", base, "pcap.record.data"
                    ),
                )
                return
        time_ns = seconds * 1_000_000_000 + fraction * fraction_ns
        yield Packet(time_ns, link_type, buf[start:end], 0, index, original, base + pos)
        index += 1
        pos = end

"""Read a capture file: pcap or pcapng, recognised by its magic number, optionally gzip-compressed."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.pcap import PCAP_MAGICS, read_pcap_batches
from kafka_epochs.capture.files.source import GZIP_MAGIC, ByteStream, GzipInput, read_head

#: Sanity bound on one pcap record or pcapng block. Reading never allocates more than the file
#: really holds; the bound only tells a corrupt length field from a large packet.
DEFAULT_MAX_RECORD_SIZE = 16 * 1024 * 1024

#: A path, or anything with ``read(size) -> bytes`` (a binary file, standard input, a counting wrapper).
CaptureSource = str | os.PathLike[str] | BinaryIO | ByteStream


def read_packets(
    source: CaptureSource,
    *,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
) -> Iterator[Packet | BadRecord]:
    """Every record of a pcap or pcapng capture, in file order.

    ``source`` is a path or a binary file object (read from its current position, never closed
    here). A record that cannot be read is yielded as a :class:`BadRecord`; reading goes on when
    the format allows it. A file that is not a capture at all raises :class:`CaptureFormatError`
    when iteration starts.
    """
    for batch in read_packet_batches(source, max_record_size=max_record_size):
        yield from batch


def read_packet_batches(
    source: CaptureSource,
    *,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
) -> Iterator[Sequence[Packet | BadRecord]]:
    """:func:`read_packets`' records a sequence at a time (a pcap file's: what was read before the
    reader next asks the source for bytes), for a consumer that saves a step per record."""
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as stream:
            yield from _read_stream(stream, max_record_size)
    else:
        yield from _read_stream(source, max_record_size)


def _read_stream(stream: BinaryIO | ByteStream, max_record_size: int) -> Iterator[Sequence[Packet | BadRecord]]:
    head = read_head(stream, 4)
    gzip_input: GzipInput | None = None
    if head[:2] == GZIP_MAGIC:
        gzip_input = GzipInput(head, stream)
        stream = gzip_input
        head = read_head(stream, 4)
    if gzip_input is None:
        yield from _read_uncompressed(stream, head, max_record_size, gzip_input)
        return
    last_index = -1
    for batch in _read_uncompressed(stream, head, max_record_size, gzip_input):
        last_index = batch[-1].index
        yield batch
    if gzip_input.error is not None:
        yield [BadRecord(last_index + 1, gzip_input.error.offset, gzip_input.error)]


def _read_uncompressed(
    stream: BinaryIO | ByteStream, head: bytes, max_record_size: int, gzip_input: GzipInput | None
) -> Iterator[Sequence[Packet | BadRecord]]:
    if len(head) < 4:
        if gzip_input is not None and gzip_input.error is not None:
            raise gzip_input.error
        raise CaptureFormatError(f"file is {len(head)} bytes long, too short for a capture", 0, "magic")
    magic = int.from_bytes(head, "big")
    if magic == formats.PCAPNG_SECTION_HEADER:
        from kafka_epochs.capture.files.pcapng import read_pcapng_batches  # (a pcap file's run does without it)

        return read_pcapng_batches(stream, head, max_record_size=max_record_size)
    if magic in PCAP_MAGICS:
        return read_pcap_batches(stream, head, max_record_size=max_record_size)
    raise CaptureFormatError(f"magic number {head.hex()} is neither pcap nor pcapng", 0, "magic")

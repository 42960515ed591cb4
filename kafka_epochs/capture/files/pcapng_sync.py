"""Finding pcapng blocks without reading from the top: where blocks frame each other again.

A pcapng block starts with its type and total length and ends with the length again, and every
length is a multiple of 4, so blocks start at multiples of 4. After a block whose length is
broken, or at the start of a byte range, the next block is where :data:`CHAIN` blocks in a row
frame each other (a known type, a total length within bounds, the same length at the end).
"""

from __future__ import annotations

from collections.abc import Callable

from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.pcap_sync import CHAIN

#: Block types a search believes in (the ones the format defines and capture tools write).
KNOWN_BLOCKS = frozenset({0x0A0D0D0A, 1, 2, 3, 4, 5, 6, 9, 10, 0xBAD, 0x40000BAD})

Unpack = Callable[[bytes, int], tuple[int, ...]]


def blocks_chain(buf: bytes, i: int, unpack: Unpack, max_record_size: int, at_end: bool) -> bool:
    """Whether :data:`CHAIN` blocks frame each other from ``buf[i]`` on (fewer when ``buf``,
    ``at_end`` saying it holds all there is, ends right after a whole block)."""
    pos = i
    for n in range(CHAIN):
        if pos == len(buf) and at_end:
            return n > 0
        if pos + formats.MIN_BLOCK_SIZE > len(buf):
            return False
        (block_type,) = unpack(buf, pos)
        (length,) = unpack(buf, pos + 4)
        if block_type not in KNOWN_BLOCKS or length < formats.MIN_BLOCK_SIZE or length % 4 or length > max_record_size:
            return False
        if pos + length > len(buf):
            return False
        if unpack(buf, pos + length - 4)[0] != length:
            return False
        pos += length
    return True

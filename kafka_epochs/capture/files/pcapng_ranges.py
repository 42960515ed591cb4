"""One byte range of a large pcapng file, read on its own (the pcapng half of :mod:`.ranges`).

Every range reads with the state the file's head leaves (its section header and interface
descriptions, read up to the first packet block): the first range reads the head itself, the
others start at or after the first packet block. A range that does not start at a known block
finds one where :data:`CHAIN` blocks in a row frame each other (a known block type, a total
length that is a multiple of 4, within bounds, and repeated at the block's end); blocks start
at multiples of 4, as every length is one. Each block then leads to the next by its length, as
when the whole file is read, by the same code (:func:`~kafka_epochs.capture.files.pcapng.read_blocks`).

A file whose sections or interfaces change after its first packet cannot be read this way (a
range would need every description before it): :attr:`PcapngRange.redescribed` says so, and
the file is then read whole. After a broken block length, reading goes on where blocks frame
each other again, whole or in ranges alike; a broken section header ends the whole-file reading
(:attr:`PcapngRange.stopped`): nothing after it is read by any range either.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.pcap_sync import CHAIN
from kafka_epochs.capture.files.pcapng import PcapngState, read_blocks
from kafka_epochs.capture.files.pcapng_sync import blocks_chain
from kafka_epochs.capture.files.ranges import ByteRange

#: How far a range looks for its first block before giving up (bytes).
MAX_SEARCH = 64 << 20
_CHUNK = 1 << 20
_NO_END = 1 << 62


def read_head(f: BinaryIO, max_record_size: int) -> PcapngState:
    """The state after the blocks before the file's first packet block (``next_offset`` is that
    block's offset; None when the file has no packet or its head is broken)."""
    f.seek(0)
    state = PcapngState()
    for _ in read_blocks(f, f.read(4), 0, state, max_record_size=max_record_size, before_packets=True):
        pass
    return state


class PcapngRange(ByteRange):
    """The records of one byte range of a pcapng file, iterable once (see the module's description).

    ``exact``: ``start`` is a block's start. ``time_before_ns``: the time of the file's last
    packet before the range (what a simple packet block, which has no time, is given).
    After iteration: :attr:`next_offset` (where the next block starts, at or past ``end``; None
    when the file ended or reading stopped), :attr:`stopped`, :attr:`redescribed`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        start: int,
        end: int,
        *,
        exact: bool = False,
        time_before_ns: int = 0,
        max_record_size: int = 16 * 1024 * 1024,
    ) -> None:
        super().__init__(path, start, end, exact=exact, max_record_size=max_record_size)
        self.time_before_ns = time_before_ns
        self.stopped = False
        self.redescribed = False

    def __iter__(self) -> Iterator[Packet | BadRecord]:
        with open(self.path, "rb") as f:
            head = read_head(f, self.max_record_size)
            first_packet = head.next_offset
            if first_packet is None:
                # no packet, or a broken head: the first range reads it all, as the whole file is read
                if self.start == 0:
                    yield from self._read(f, 0, _NO_END, PcapngState())
                return
            size = os.fstat(f.fileno()).st_size
            if self.start == 0:
                # the head's own records (a broken interface description) are the first range's
                yield from self._read(f, 0, max(self.end, first_packet), PcapngState(), head)
                return
            end = min(self.end, size)
            pos = self._first(f, head, first_packet, end, size)
            if pos is None:
                return
            if pos >= end:
                self.next_offset = pos if pos < size else None
                return
            state = head.copy()
            state.last_timestamp_ns = self.time_before_ns
            yield from self._read(f, pos, end, state, head)

    def _first(self, f: BinaryIO, head: PcapngState, first_packet: int, end: int, size: int) -> int | None:
        """Where this range's first block starts (None: no block found)."""
        if self.start <= first_packet:
            return first_packet
        if self.exact:
            return self.start
        return _first_block(f, head, self.start, min(end, self.start + MAX_SEARCH), size, self.max_record_size)

    def _read(
        self, f: BinaryIO, pos: int, end: int, state: PcapngState, head: PcapngState | None = None
    ) -> Iterator[Packet | BadRecord]:
        f.seek(pos)
        yield from read_blocks(f, b"", pos, state, max_record_size=self.max_record_size, stop_at=end)
        self.next_offset = state.next_offset
        self.stopped = state.stopped
        if head is not None:
            self.redescribed = (state.big_endian, state.interfaces) != (head.big_endian, head.interfaces)


def _first_block(f: BinaryIO, head: PcapngState, start: int, stop: int, size: int, max_record_size: int) -> int | None:
    """The first multiple of 4 in ``[start, stop)`` where :data:`CHAIN` blocks frame each other
    (fewer when the file ends right after a whole block)."""
    u32 = head.layouts.u32.unpack_from
    offset = start + (-start % 4)
    window = _CHUNK + CHAIN * max_record_size
    while offset < stop:
        f.seek(offset)
        buf = f.read(min(window, size - offset))
        at_end = offset + len(buf) >= size
        for i in range(0, min(_CHUNK, stop - offset, len(buf)), 4):
            if blocks_chain(buf, i, u32, max_record_size, at_end):
                return offset + i
        offset += _CHUNK
    return None

"""Packets read in bulk: a run of records that lie in one buffer, with no object made per packet.

A reader that has a file's bytes in a buffer knows, for each record, its time and where its
packet starts and ends in that buffer; a :class:`RecordRun` keeps just those, as three lists
beside the buffer, for records that follow one another in the file (consecutive indices, one
link type and interface). The capture pipeline reads the headers and payloads of most packets
straight from the buffer; a :class:`Packet` is made only when one is asked for (``run[i]``, or
iterating), and it is the packet the reader would have made. On a capture of real clients
(tens of thousands of small packets) the object per packet, and the copy of its bytes that
the pipeline then sliced again, were a tenth of what reading and following the packets cost.

:meth:`RecordRun.holding` makes a run of packets that were made already (a list given to the
pipeline by a reader of its own): their bytes joined in one buffer, the packets themselves
returned as they were given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from kafka_epochs.capture.files.packets import Packet

__all__ = ["RecordRun"]


class RecordRun(Sequence[Packet]):
    """Records ``first_index`` on of one buffer ``buf`` (at file offset ``base``), all of link
    type ``link_type`` on interface ``interface``: record ``i``'s packet is ``buf[starts[i]:ends[i]]``,
    captured at ``times[i]`` (ns); its record starts ``header_size`` bytes before its packet, and its
    length on the wire is the packet's unless ``originals`` says otherwise (a packet the snapshot
    length cut). A reader appends to the three lists as it reads."""

    __slots__ = (
        "base",
        "buf",
        "ends",
        "first_index",
        "header_size",
        "interface",
        "link_type",
        "originals",
        "packets",
        "starts",
        "times",
    )

    def __init__(self, buf: bytes, base: int, header_size: int, link_type: int, interface: int, first_index: int):
        self.buf = buf
        self.base = base
        self.header_size = header_size
        self.link_type = link_type
        self.interface = interface
        self.first_index = first_index
        self.times: list[int] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        #: a record's length on the wire, by its position in the run, where it is not its packet's
        self.originals: dict[int, int] = {}
        #: the packets, for a run :meth:`holding` packets made before
        self.packets: list[Packet] | None = None

    @classmethod
    def holding(cls, packets: list[Packet]) -> RecordRun:
        """A run of packets already made, of one link type (in any order, of any indices): their
        bytes joined in one buffer, and each of them what ``run[i]`` gives back."""
        first = packets[0]
        run = cls(b"", -1, 0, first.link_type, first.interface, first.index)
        run.packets = packets
        run.times = [packet.timestamp_ns for packet in packets]
        if len(packets) == 1:
            run.buf = first.data
            run.starts, run.ends = [0], [len(first.data)]
            return run
        pieces = [packet.data for packet in packets]
        run.buf = b"".join(pieces)
        end = 0
        for piece in pieces:
            run.starts.append(end)
            end += len(piece)
            run.ends.append(end)
        return run

    def index_of(self, i: int) -> int:
        """The file's record index of the run's ``i``-th record."""
        packets = self.packets
        return self.first_index + i if packets is None else packets[i].index

    def offset_of(self, i: int) -> int:
        """Where the run's ``i``-th record starts in the (decompressed) file (-1 where not known)."""
        packets = self.packets
        return self.base + self.starts[i] - self.header_size if packets is None else packets[i].offset

    @property
    def last_index(self) -> int:
        return self.index_of(len(self.times) - 1)

    def __len__(self) -> int:
        return len(self.times)

    @overload
    def __getitem__(self, i: int) -> Packet: ...
    @overload
    def __getitem__(self, i: slice) -> list[Packet]: ...
    def __getitem__(self, i: int | slice) -> Packet | list[Packet]:
        if isinstance(i, slice):
            return [self.packet(n) for n in range(*i.indices(len(self.times)))]
        n = len(self.times)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("record run index out of range")
        return self.packet(i)

    def __iter__(self) -> Iterator[Packet]:
        if self.packets is not None:
            return iter(self.packets)
        return (self.packet(i) for i in range(len(self.times)))

    def packet(self, i: int) -> Packet:
        """The run's ``i``-th packet (0 <= ``i`` < its length)."""
        if self.packets is not None:
            return self.packets[i]
        start, end = self.starts[i], self.ends[i]
        return Packet(
            self.times[i],
            self.link_type,
            self.buf[start:end],
            self.interface,
            self.first_index + i,
            self.originals.get(i, end - start),
            self.base + start - self.header_size,
        )

    def __repr__(self) -> str:
        return f"RecordRun({len(self.times)} records from index {self.first_index}, link type {self.link_type})"

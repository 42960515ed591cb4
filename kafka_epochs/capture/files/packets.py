"""What a capture file yields: packets, and the records that could not be read."""

from __future__ import annotations

from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.values import FrozenValue, Value

_set = object.__setattr__  # how a frozen value's __init__ sets its fields


# Not frozen: one is built per packet, a frozen one (object.__setattr__ per field) costs more.
class Packet(Value):
    """One captured packet, as the file stored it.

    ``index`` counts the file's records from 0 (packets and bad records alike), so ``index + 1`` is
    the frame number Wireshark shows for a file without bad records (-1 when read from a byte
    range, which cannot count the records before it). ``interface`` is the pcapng interface id (0
    for pcap). ``original_length`` is the length on the wire; ``data`` is shorter when the
    capture's snapshot length cut the packet. ``offset`` is where the record starts in the
    (decompressed) file, -1 where not known.
    """

    __slots__ = ("data", "index", "interface", "link_type", "offset", "original_length", "timestamp_ns")
    timestamp_ns: int
    link_type: int
    data: bytes
    interface: int
    index: int
    original_length: int
    offset: int

    def __init__(
        self,
        timestamp_ns: int,
        link_type: int,
        data: bytes,
        interface: int,
        index: int,
        original_length: int,
        offset: int = -1,
    ) -> None:
        self.timestamp_ns = timestamp_ns
        self.link_type = link_type
        self.data = data
        self.interface = interface
        self.index = index
        self.original_length = original_length
        self.offset = offset


class BadRecord(FrozenValue):
    """A record of the file that could not be read; reading goes on after it when it can.

    ``offset`` is the record's byte position in the (decompressed) file.
    """

    __slots__ = ("error", "index", "offset")
    index: int
    offset: int
    error: CaptureFormatError

    def __init__(self, index: int, offset: int, error: CaptureFormatError) -> None:
        _set(self, "index", index)
        _set(self, "offset", offset)
        _set(self, "error", error)

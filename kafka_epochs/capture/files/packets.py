"""What a capture file yields: packets, and the records that could not be read."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_epochs.capture.errors import CaptureFormatError


# Not frozen: one is built per packet, and a frozen dataclass costs four times as much to build.
@dataclass(slots=True)
class Packet:
    """One captured packet, as the file stored it.

    ``index`` counts the file's records from 0 (packets and bad records alike), so ``index + 1`` is
    the frame number Wireshark shows for a file without bad records (-1 when read from a byte
    range, which cannot count the records before it). ``interface`` is the pcapng interface id (0
    for pcap). ``original_length`` is the length on the wire; ``data`` is shorter when the
    capture's snapshot length cut the packet. ``offset`` is where the record starts in the
    (decompressed) file, -1 where not known.
    """

    timestamp_ns: int
    link_type: int
    data: bytes
    interface: int
    index: int
    original_length: int
    offset: int = -1


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record of the file that could not be read; reading goes on after it when it can.

    ``offset`` is the record's byte position in the (decompressed) file.
    """

    index: int
    offset: int
    error: CaptureFormatError

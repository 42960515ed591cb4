"""TCP headers, and the segment a captured packet amounts to."""

# No ``from __future__ import annotations``: with it, each field of Segment and TcpHeader (NamedTuples)
# would be annotated by a string, which typing compiles as the class is made, at every start.

import struct
from typing import NamedTuple

from kafka_epochs.capture.events import Endpoint
from kafka_epochs.errors import DecodeError

FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10

TCP_MIN_HEADER = 20
#: The ports a TCP connection can use (0 is reserved: a port given as 0 is a typo).
PORTS = range(1, 65536)
SEQ_MODULUS = 1 << 32

_TCP = struct.Struct(">HHIIH")


class Segment(NamedTuple):
    """A TCP segment: endpoints as sent, sequence numbers, flags and the payload bytes captured.

    ``missing`` counts payload bytes after ``payload`` that the segment carried but the capture's
    snapshot length cut off. ``packet`` is the index of the packet in the file.
    """

    source: Endpoint
    destination: Endpoint
    seq: int
    ack: int
    flags: int
    payload: bytes
    missing: int
    timestamp_ns: int
    packet: int


class TcpHeader(NamedTuple):
    source_port: int
    destination_port: int
    seq: int
    ack: int
    flags: int
    payload_start: int


def tcp_header(data: bytes, start: int, end: int) -> TcpHeader:
    """The TCP header at ``data[start:]``, whose segment's captured bytes end at ``end``."""
    if end - start < TCP_MIN_HEADER:
        raise DecodeError(f"TCP header needs {TCP_MIN_HEADER} bytes, {end - start} captured", start, "tcp")
    source_port, destination_port, seq, ack, offset_flags = _TCP.unpack_from(data, start)
    header_length = (offset_flags >> 12) * 4
    if header_length < TCP_MIN_HEADER:
        raise DecodeError(
            f"data offset gives a {header_length}-byte header, below the minimum of 20", start + 12, "tcp.data_offset"
        )
    if start + header_length > end:
        raise DecodeError(
            f"data offset gives a {header_length}-byte header, {end - start} bytes captured",
            start + 12,
            "tcp.data_offset",
        )
    return TcpHeader(source_port, destination_port, seq, ack, offset_flags & 0xFF, start + header_length)

"""Turn recorded connection byte streams into TCP/IP packets: a capture of traffic we only logged.

A test broker (or a proxy) sees each connection's bytes, not packets. :func:`connection_packets`
wraps them in Ethernet/IPv4/TCP the way a capture on the wire would show them: a three-way
handshake, data cut into MSS-sized segments with consistent sequence and acknowledgement
numbers, and a FIN exchange; :func:`write_capture` interleaves several connections by time into
a pcap file that any capture tool (and :mod:`kafka_epochs.capture`) reads.
"""

from __future__ import annotations

import ipaddress
import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from kafka_epochs.capture.files.writer import write_pcap

LINKTYPE_ETHERNET = 1
_FIN, _SYN, _PSH, _ACK = 0x01, 0x02, 0x08, 0x10
_CLIENT_MAC = bytes.fromhex("020000000001")
_BROKER_MAC = bytes.fromhex("020000000002")


@dataclass
class RecordedConnection:
    """One TCP connection's payload as it was sent: ``(timestamp_ns, "client"|"broker", bytes)``."""

    client: tuple[str, int]
    broker: tuple[str, int]
    chunks: list[tuple[int, str, bytes]] = field(default_factory=list)
    closed: bool = True


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _packet(
    src: tuple[str, int],
    dst: tuple[str, int],
    seq: int,
    ack: int,
    flags: int,
    payload: bytes,
    src_mac: bytes,
    dst_mac: bytes,
    ident: int,
) -> bytes:
    source, destination = ipaddress.IPv4Address(src[0]).packed, ipaddress.IPv4Address(dst[0]).packed
    header = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    pseudo = source + destination + struct.pack(">BBH", 0, 6, len(header) + len(payload))
    segment = header[:16] + struct.pack(">H", _checksum(pseudo + header + payload)) + header[18:] + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(segment), ident & 0xFFFF, 0x4000, 64, 6, 0, source, destination)
    ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
    return dst_mac + src_mac + b"\x08\x00" + ip + segment


def connection_packets(
    conn: RecordedConnection, *, mss: int = 1460, client_isn: int = 0x10000000, broker_isn: int = 0x20000000
) -> list[tuple[int, bytes]]:
    """The Ethernet frames of one connection, each with its timestamp."""
    if not conn.chunks:
        return []
    out: list[tuple[int, bytes]] = []
    next_seq = {"client": client_isn + 1, "broker": broker_isn + 1}
    ident = {"client": 1, "broker": 1}
    ends = {
        "client": (conn.client, conn.broker, _CLIENT_MAC, _BROKER_MAC),
        "broker": (conn.broker, conn.client, _BROKER_MAC, _CLIENT_MAC),
    }

    def emit(
        when: int, side: str, flags: int, payload: bytes = b"", seq: int | None = None, ack: int | None = None
    ) -> None:
        other = "broker" if side == "client" else "client"
        src, dst, src_mac, dst_mac = ends[side]
        out.append(
            (
                when,
                _packet(
                    src,
                    dst,
                    next_seq[side] if seq is None else seq,
                    next_seq[other] if ack is None else ack,
                    flags,
                    payload,
                    src_mac,
                    dst_mac,
                    ident[side],
                ),
            )
        )
        ident[side] += 1

    start = conn.chunks[0][0] - 3000
    emit(start, "client", _SYN, seq=client_isn, ack=0)
    emit(start + 1000, "broker", _SYN | _ACK, seq=broker_isn)
    emit(start + 2000, "client", _ACK)
    last = start + 2000
    for when, side, data in conn.chunks:
        when = max(when, last)  # keep the capture in time order even if the log was not
        for offset in range(0, len(data), mss):
            piece = data[offset : offset + mss]
            emit(when, side, _PSH | _ACK, piece)
            next_seq[side] += len(piece)
        last = when
    if conn.closed:
        emit(last + 1000, "client", _FIN | _ACK)
        next_seq["client"] += 1
        emit(last + 2000, "broker", _FIN | _ACK)
        next_seq["broker"] += 1
        emit(last + 3000, "client", _ACK)
    return out


def write_capture(
    destination: str | os.PathLike[str] | BinaryIO,
    connections: Sequence[RecordedConnection] | Iterable[RecordedConnection],
    *,
    mss: int = 1460,
) -> int:
    """Write the connections' packets, interleaved by time, as a pcap file; returns the packet count."""
    packets: list[tuple[int, bytes]] = []
    for number, conn in enumerate(connections):
        # Distinct initial sequence numbers per connection, as real stacks pick them.
        packets.extend(
            connection_packets(
                conn, mss=mss, client_isn=0x10000000 + number * 0x01000000, broker_isn=0x80000000 + number * 0x01000000
            )
        )
    packets.sort(key=lambda p: p[0])  # stable: a connection's own packets keep their order
    return write_pcap(destination, packets, LINKTYPE_ETHERNET)

"""Byte-level builders for the capture tests: frames, IP packets, TCP segments, pcap and pcapng files.

Written from the format descriptions independently of ``kafka_epochs.capture``, so that the reader
is tested against bytes it did not produce.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD

# -- Kafka frames


def request_frame(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None = "client", body: bytes = b""
) -> bytes:
    if client_id is None:
        cid = struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        cid = struct.pack(">h", len(raw)) + raw
    payload = struct.pack(">hhi", api_key, api_version, correlation_id) + cid + body
    return struct.pack(">i", len(payload)) + payload


def response_frame(correlation_id: int, body: bytes = b"\x00\x00") -> bytes:
    payload = struct.pack(">i", correlation_id) + body
    return struct.pack(">i", len(payload)) + payload


# -- link layers


def ethernet(payload: bytes, ethertype: int = ETHERTYPE_IPV4) -> bytes:
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack(">H", ethertype) + payload


def ethernet_tagged(payload: bytes, tpids: Sequence[int], ethertype: int = ETHERTYPE_IPV4) -> bytes:
    """An Ethernet frame with one VLAN tag per TPID in ``tpids`` (outermost first)."""
    frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01"
    for number, tpid in enumerate(tpids):
        frame += struct.pack(">HH", tpid, 100 + number)
    return frame + struct.pack(">H", ethertype) + payload


def sll(payload: bytes, protocol: int = ETHERTYPE_IPV4) -> bytes:
    # packet type (0: to us), ARPHRD_ETHER, address length 6, address padded to 8, protocol
    return struct.pack(">HHH8sH", 0, 1, 6, b"\x02\x00\x00\x00\x00\x01", protocol) + payload


def sll2(payload: bytes, protocol: int = ETHERTYPE_IPV4) -> bytes:
    # protocol, reserved, interface index, ARPHRD_ETHER, packet type, address length, address
    return struct.pack(">HHIHBB8s", protocol, 0, 3, 1, 4, 6, b"\x02\x00\x00\x00\x00\x01") + payload


def bsd_null(payload: bytes, family: int, byteorder: Literal["little", "big"] = "little") -> bytes:
    return family.to_bytes(4, byteorder) + payload


# -- IP


def ipv4(
    src: str,
    dst: str,
    payload: bytes,
    *,
    protocol: int = 6,
    flags_fragment: int = 0x4000,
    ihl: int = 5,
    total_length: int | None = None,
    options: bytes = b"",
) -> bytes:
    header_len = 20 + len(options)
    total = header_len + len(payload) if total_length is None else total_length
    header = struct.pack(
        ">BBHHHBBH4s4s",
        (4 << 4) | ihl,
        0,
        total,
        1,
        flags_fragment,
        64,
        protocol,
        0,
        ipaddress.IPv4Address(src).packed,
        ipaddress.IPv4Address(dst).packed,
    )
    return header + options + payload


def ipv6(
    src: str,
    dst: str,
    payload: bytes,
    *,
    next_header: int = 6,
    extensions: bytes = b"",
    payload_length: int | None = None,
) -> bytes:
    length = len(extensions) + len(payload) if payload_length is None else payload_length
    header = struct.pack(
        ">IHBB16s16s",
        6 << 28,
        length,
        next_header,
        64,
        ipaddress.IPv6Address(src).packed,
        ipaddress.IPv6Address(dst).packed,
    )
    return header + extensions + payload


def ipv6_extension(next_header: int, body_words: int = 0) -> bytes:
    """A generic extension header (hop-by-hop, destination options, routing): 8 + 8*words bytes."""
    body = b"\x01\x04\x00\x00\x00\x00" + b"\x00" * (8 * body_words)  # a PadN option filling the rest
    return bytes([next_header, body_words]) + body


def ipv6_fragment_header(next_header: int, offset_units: int, more: bool, ident: int = 7) -> bytes:
    return struct.pack(">BBHI", next_header, 0, (offset_units << 3) | int(more), ident)


# -- TCP


def tcp(
    sport: int,
    dport: int,
    seq: int,
    ack: int,
    flags: int,
    payload: bytes = b"",
    *,
    data_offset: int = 5,
    options: bytes = b"",
) -> bytes:
    header = struct.pack(
        ">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, data_offset << 4, flags, 65535, 0, 0
    )
    return header + options + payload


# -- a TCP conversation


@dataclass
class Conversation:
    """Segments of one TCP connection, as Ethernet/IPv4 frames, with sequence numbers kept for you."""

    client: tuple[str, int] = ("10.0.0.1", 50000)
    broker: tuple[str, int] = ("10.0.0.2", 9092)
    client_isn: int = 1000
    broker_isn: int = 5000
    time_ns: int = 1_700_000_000_000_000_000
    frames: list[tuple[int, bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.next_seq = {"c": (self.client_isn + 1) & 0xFFFFFFFF, "b": (self.broker_isn + 1) & 0xFFFFFFFF}

    def segment(
        self, side: str, flags: int, payload: bytes = b"", *, seq: int | None = None, ack: int | None = None
    ) -> bytes:
        src, dst = (self.client, self.broker) if side == "c" else (self.broker, self.client)
        other = "b" if side == "c" else "c"
        seq = self.next_seq[side] if seq is None else seq
        ack = self.next_seq[other] if ack is None else ack
        return ethernet(ipv4(src[0], dst[0], tcp(src[1], dst[1], seq, ack, flags, payload)))

    def add(self, frame: bytes) -> None:
        self.time_ns += 1000
        self.frames.append((self.time_ns, frame))

    def handshake(self) -> None:
        self.add(self.segment("c", SYN, seq=self.client_isn, ack=0))
        self.add(self.segment("b", SYN | ACK, seq=self.broker_isn))
        self.add(self.segment("c", ACK))

    def send(self, side: str, payload: bytes, *, record: bool = True) -> bytes:
        """A data segment continuing ``side``'s stream (added unless ``record`` is false)."""
        frame = self.segment(side, ACK | PSH, payload)
        self.next_seq[side] = (self.next_seq[side] + len(payload)) & 0xFFFFFFFF
        if record:
            self.add(frame)
        return frame

    def close(self) -> None:
        self.add(self.segment("c", FIN | ACK))
        self.next_seq["c"] = (self.next_seq["c"] + 1) & 0xFFFFFFFF
        self.add(self.segment("b", FIN | ACK))
        self.next_seq["b"] = (self.next_seq["b"] + 1) & 0xFFFFFFFF
        self.add(self.segment("c", ACK))


# -- capture files


def pcap_file(
    frames: Iterable[tuple[int, bytes]],
    link_type: int = 1,
    *,
    big_endian: bool = False,
    nanoseconds: bool = False,
    snaplen: int = 65535,
    original_lengths: Sequence[int] | None = None,
) -> bytes:
    order = ">" if big_endian else "<"
    magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, link_type)]
    for number, (timestamp_ns, data) in enumerate(frames):
        seconds, rest = divmod(timestamp_ns, 1_000_000_000)
        fraction = rest if nanoseconds else rest // 1000
        original = len(data) if original_lengths is None else original_lengths[number]
        out.append(struct.pack(order + "IIII", seconds, fraction, len(data), original) + data)
    return b"".join(out)


def _padded(data: bytes) -> bytes:
    return data + b"\x00" * (-len(data) % 4)


def pcapng_option(code: int, value: bytes, order: str) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + _padded(value)


def pcapng_block(block_type: int, body: bytes, order: str) -> bytes:
    body = _padded(body)
    total = 12 + len(body)
    return struct.pack(order + "II", block_type, total) + body + struct.pack(order + "I", total)


def pcapng_section(order: str = "<", options: bytes = b"") -> bytes:
    return pcapng_block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1) + options, order)


def pcapng_interface(
    link_type: int, order: str = "<", *, tsresol: int | None = None, snaplen: int = 0, tsoffset: int | None = None
) -> bytes:
    options = b""
    if tsresol is not None:
        options += pcapng_option(9, bytes([tsresol]), order)
    if tsoffset is not None:
        options += pcapng_option(14, struct.pack(order + "q", tsoffset), order)
    if options:
        options += pcapng_option(0, b"", order)
    return pcapng_block(1, struct.pack(order + "HHI", link_type, 0, snaplen) + options, order)


def pcapng_enhanced(
    interface: int,
    timestamp: int,
    data: bytes,
    order: str = "<",
    *,
    original_length: int | None = None,
    options: bytes = b"",
) -> bytes:
    original = len(data) if original_length is None else original_length
    body = struct.pack(order + "IIIII", interface, timestamp >> 32, timestamp & 0xFFFFFFFF, len(data), original)
    return pcapng_block(6, body + _padded(data) + options, order)


def pcapng_simple(data: bytes, order: str = "<", *, original_length: int | None = None) -> bytes:
    original = len(data) if original_length is None else original_length
    return pcapng_block(3, struct.pack(order + "I", original) + data, order)


def pcapng_obsolete_packet(interface: int, timestamp: int, data: bytes, order: str = "<") -> bytes:
    body = struct.pack(order + "HHIIII", interface, 0, timestamp >> 32, timestamp & 0xFFFFFFFF, len(data), len(data))
    return pcapng_block(2, body + data, order)

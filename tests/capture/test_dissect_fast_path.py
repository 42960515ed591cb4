"""The dissector's one-unpack path for Ethernet/IPv4/TCP says what the layer-by-layer path says.

Every packet of the bundled real captures, the same packets with header bytes overwritten at
random (lengths, version, header lengths, fragment bits, protocol, data offset) and cut short,
and packets built from random header fields: the segment (or the reason there is none, or the
error with its message and offset) is the same both ways.
"""

from __future__ import annotations

import io
import random
import socket
import struct
from typing import Any

from capture_mutations import real_captures
from hypothesis import given
from hypothesis import strategies as st

from kafka_epochs.capture import read_packets
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.capture.network.dissect import Dissector


def outcome(read: Any, packet: Packet) -> Any:
    try:
        return read(packet)
    except Exception as e:  # the error is part of what must agree
        return (type(e).__name__, str(e))


def agree(packet: Packet) -> Any:
    dissector = Dissector()
    fast = outcome(dissector.segment, packet)
    assert fast == outcome(Dissector()._segment_by_layers, packet)
    return fast


def ethernet_packets() -> list[Packet]:
    packets = []
    for data in real_captures().values():
        for p in read_packets(io.BytesIO(data)):
            if isinstance(p, Packet) and p.link_type == 1:
                packets.append(p)
    return packets


def test_real_packets_and_damaged_headers_agree() -> None:
    packets = ethernet_packets()
    assert len(packets) > 100
    for p in packets:
        assert type(agree(p)).__name__ == "Segment"  # all clean TCP segments
    rng = random.Random(7)
    kinds = set()
    for _ in range(4000):
        p = rng.choice(packets)
        data = bytearray(p.data)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(12, min(len(data), 60))  # ethertype, IPv4 and TCP headers
            data[at] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data) + 1)]
        result = agree(Packet(p.timestamp_ns, 1, bytes(data), 0, p.index, p.original_length, p.offset))
        kinds.add(type(result).__name__)
    assert {"Segment", "tuple", "str"} <= kinds  # segments, errors and non-TCP packets were all seen


@given(
    ihl=st.sampled_from([4, 5, 5, 5, 6, 15]),
    total=st.one_of(st.just(0), st.integers(0, 120)),
    fragment=st.sampled_from([0, 0, 0x4000, 0x2000, 0x0001]),
    protocol=st.sampled_from([6, 6, 17]),
    offset=st.sampled_from([0, 4, 5, 5, 8, 15]),
    payload=st.binary(max_size=40),
    cut=st.integers(0, 30),
)
def test_built_packets_agree(
    ihl: int, total: int, fragment: int, protocol: int, offset: int, payload: bytes, cut: int
) -> None:
    ip = struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total, 1, fragment, 64, protocol, 0, b"\n\0\0\1", b"\n\0\0\2")
    ip += b"\0" * max(0, ihl * 4 - 20)
    tcp = struct.pack(">HHIIHHHH", 50000, 9092, 1, 2, (offset << 12) | 0x18, 1024, 0, 0) + b"\0" * max(
        0, offset * 4 - 20
    )
    data = b"\0" * 12 + b"\x08\x00" + ip + tcp + payload
    agree(Packet(1, 1, data[: len(data) - cut] if cut else data, 0, 0, len(data), 0))


@given(st.binary(min_size=4, max_size=4) | st.binary(min_size=16, max_size=16))
def test_addresses_are_written_as_inet_ntop_writes_them(packed: bytes) -> None:
    family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
    assert Dissector()._address(packed) == socket.inet_ntop(family, packed)

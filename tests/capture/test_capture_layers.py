"""Link layers, IP and TCP headers: from a captured frame to a TCP segment, or a reported problem."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packet_builders import (
    ACK,
    ETHERTYPE_IPV6,
    PSH,
    bsd_null,
    ethernet,
    ethernet_tagged,
    ipv4,
    ipv6,
    ipv6_extension,
    ipv6_fragment_header,
    pcap_file,
    request_frame,
    sll,
    sll2,
    tcp,
)

from kafka_epochs import DecodeError
from kafka_epochs.capture import Endpoint, PacketError, StreamData, UnsupportedPacket, iter_streams, read_packets
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.capture.network.dissect import NOT_IP, NOT_TCP, Dissector
from kafka_epochs.capture.network.tcp import Segment

PAYLOAD = request_frame(3, 12, 7, "layers")
TCP4 = tcp(50000, 9092, 1000, 2000, ACK | PSH, PAYLOAD)
IP4 = ipv4("192.0.2.1", "192.0.2.9", TCP4)
IP6 = ipv6("2001:db8::1", "2001:db8::9", TCP4)


def dissect(frame: bytes, link_type: int) -> Segment | str:
    return Dissector().segment(Packet(5, link_type, frame, 0, 0, len(frame)))


def assert_kafka_segment(result: Segment | str, v6: bool = False) -> None:
    assert isinstance(result, Segment), result
    if v6:
        assert result.source == Endpoint("2001:db8::1", 50000)
        assert result.destination == Endpoint("2001:db8::9", 9092)
    else:
        assert result.source == Endpoint("192.0.2.1", 50000)
        assert result.destination == Endpoint("192.0.2.9", 9092)
    assert (result.seq, result.ack, result.flags) == (1000, 2000, ACK | PSH)
    assert result.payload == PAYLOAD and result.missing == 0 and result.timestamp_ns == 5


@pytest.mark.parametrize(
    "frame, link_type, v6",
    [
        (ethernet(IP4), 1, False),
        (ethernet(IP6, ETHERTYPE_IPV6), 1, True),
        (ethernet_tagged(IP4, [0x8100]), 1, False),
        (ethernet_tagged(IP6, [0x88A8, 0x8100], ETHERTYPE_IPV6), 1, True),  # QinQ
        (ethernet_tagged(IP4, [0x9100, 0x8100]), 1, False),  # pre-standard QinQ
        (sll(IP4), 113, False),
        (sll(IP6, ETHERTYPE_IPV6), 113, True),
        (sll2(IP4), 276, False),
        (sll2(IP6, ETHERTYPE_IPV6), 276, True),
        (bsd_null(IP4, 2, "little"), 0, False),
        (bsd_null(IP4, 2, "big"), 0, False),
        (bsd_null(IP6, 30, "little"), 0, True),  # macOS
        (bsd_null(IP6, 28, "big"), 0, True),  # FreeBSD, big-endian host
        (bsd_null(IP6, 24, "little"), 0, True),  # NetBSD/OpenBSD
        (bsd_null(IP4, 2, "big"), 108, False),  # OpenBSD loop: always network order
        (IP4, 101, False),
        (IP6, 101, True),
        (IP4, 12, False),
        (IP4, 228, False),
        (IP6, 229, True),
    ],
    ids=[
        "eth",
        "eth6",
        "vlan",
        "qinq",
        "qinq9100",
        "sll",
        "sll6",
        "sll2",
        "sll2-6",
        "null-le",
        "null-be",
        "null6-darwin",
        "null6-freebsd-be",
        "null6-bsd",
        "loop",
        "raw4",
        "raw6",
        "raw-dlt12",
        "ipv4",
        "ipv6",
    ],
)
def test_every_link_type_leads_to_the_tcp_segment(frame: bytes, link_type: int, v6: bool) -> None:
    assert_kafka_segment(dissect(frame, link_type), v6)


def test_ethernet_padding_after_the_ip_packet_is_not_payload() -> None:
    small = ipv4("192.0.2.1", "192.0.2.9", tcp(50000, 9092, 1, 1, ACK))
    result = dissect(ethernet(small) + b"\x00" * 6 + b"FCS!", 1)
    assert isinstance(result, Segment) and result.payload == b""


def test_snaplen_cut_payload_is_counted_as_missing() -> None:
    frame = ethernet(IP4)
    result = Dissector().segment(Packet(0, 1, frame[:-10], 0, 0, len(frame)))
    assert isinstance(result, Segment) and result.payload == PAYLOAD[:-10] and result.missing == 10


def test_ipv4_total_length_zero_means_segmentation_offload() -> None:
    result = dissect(ethernet(ipv4("192.0.2.1", "192.0.2.9", TCP4, total_length=0)), 1)
    assert_kafka_segment(result)


def test_ipv4_options_are_skipped() -> None:
    frame = ethernet(ipv4("192.0.2.1", "192.0.2.9", TCP4, ihl=6, options=b"\x01\x01\x01\x00"))
    assert_kafka_segment(dissect(frame, 1))


def test_tcp_options_are_skipped() -> None:
    segment = tcp(50000, 9092, 1000, 2000, ACK | PSH, PAYLOAD, data_offset=8, options=b"\x01\x01\x08\x0a" + b"\x00" * 8)
    assert_kafka_segment(dissect(ethernet(ipv4("192.0.2.1", "192.0.2.9", segment)), 1))


def test_ipv6_extension_headers_are_skipped() -> None:
    extensions = ipv6_extension(60, 0) + ipv6_extension(43, 1) + ipv6_extension(6, 0)
    frame = ethernet(ipv6("2001:db8::1", "2001:db8::9", TCP4, next_header=0, extensions=extensions), ETHERTYPE_IPV6)
    assert_kafka_segment(dissect(frame, 1), v6=True)


def test_ipv6_atomic_fragment_header_is_a_whole_packet() -> None:
    frame = ipv6("2001:db8::1", "2001:db8::9", TCP4, next_header=44, extensions=ipv6_fragment_header(6, 0, more=False))
    assert_kafka_segment(dissect(frame, 229), v6=True)


@pytest.mark.parametrize(
    "frame, link_type",
    [
        (ipv4("192.0.2.1", "192.0.2.9", TCP4, flags_fragment=0x2000), 228),  # first fragment: More Fragments
        (ipv4("192.0.2.1", "192.0.2.9", b"tail of it", flags_fragment=0x0010), 228),  # a later fragment
        (
            ipv6("2001:db8::1", "2001:db8::9", TCP4, next_header=44, extensions=ipv6_fragment_header(6, 0, more=True)),
            229,
        ),
        (
            ipv6(
                "2001:db8::1",
                "2001:db8::9",
                b"later",
                next_header=44,
                extensions=ipv6_fragment_header(6, 8, more=False),
            ),
            229,
        ),
    ],
    ids=["v4-first", "v4-later", "v6-first", "v6-later"],
)
def test_tcp_fragments_are_detected_and_reported_as_unsupported(frame: bytes, link_type: int) -> None:
    with pytest.raises(UnsupportedPacket, match="fragment"):
        dissect(frame, link_type)


def test_fragments_of_other_protocols_are_just_not_tcp() -> None:
    frame = ipv4("192.0.2.1", "192.0.2.9", b"udp fragment", protocol=17, flags_fragment=0x2000)
    assert dissect(frame, 228) == NOT_TCP


@pytest.mark.parametrize(
    "frame, link_type",
    [
        (ethernet(b"\x00\x01" * 14, 0x0806), 1),  # ARP
        (ethernet_tagged(b"\x00" * 28, [0x8100], 0x0806), 1),
        (b"\x00" * 14 + b"\xaa\xaa\x03", 1),  # 802.3 length + LLC
        (sll(b"\x00" * 28, 0x0806), 113),
        (bsd_null(b"\x00" * 20, 7), 0),
    ],
    ids=["arp", "vlan-arp", "llc", "sll-arp", "null-other-family"],
)
def test_non_ip_frames_are_ignored(frame: bytes, link_type: int) -> None:
    assert dissect(frame, link_type) == NOT_IP


def test_unknown_link_type_is_unsupported() -> None:
    with pytest.raises(UnsupportedPacket, match="link type 147"):
        dissect(IP4, 147)


MALFORMED = {
    "short-ethernet": (b"\x00" * 10, 1, "ethernet"),
    "short-vlan": (ethernet(b"\x00\x64", 0x8100), 1, "ethernet.vlan"),
    "short-sll": (b"\x00" * 12, 113, "sll"),
    "short-sll2": (b"\x00" * 12, 276, "sll2"),
    "short-null": (b"\x02\x00", 0, "null"),
    "empty-raw": (b"", 101, "raw"),
    "raw-version-5": (b"\x50" + IP4[1:], 101, "raw.version"),
    "short-ipv4": (ethernet(IP4[:12]), 1, "ipv4"),
    "ipv4-version": (b"\x65" + IP4[1:], 228, "ipv4.version"),
    "bad-ihl": (ethernet(b"\x43" + IP4[1:]), 1, "ipv4.ihl"),
    "ihl-past-end": (ethernet(ipv4("192.0.2.1", "192.0.2.9", b"", ihl=15)), 1, "ipv4.ihl"),
    "total-below-header": (ipv4("192.0.2.1", "192.0.2.9", TCP4, total_length=12), 228, "ipv4.total_length"),
    "short-ipv6": (IP6[:30], 229, "ipv6"),
    "ipv6-version": (b"\x40" + IP6[1:], 229, "ipv6.version"),
    "ipv6-extension-cut": (
        ipv6("2001:db8::1", "2001:db8::9", b"", next_header=0, extensions=b"\x06\x00\x00"),
        229,
        "ipv6.extension",
    ),
    "ipv6-extension-length": (
        ipv6("2001:db8::1", "2001:db8::9", b"", next_header=0, extensions=b"\x06\x09" + b"\x00" * 6),
        229,
        "ipv6.extension.length",
    ),
    "short-tcp": (ipv4("192.0.2.1", "192.0.2.9", TCP4[:15]), 228, "tcp"),
    "bad-data-offset": (ipv4("192.0.2.1", "192.0.2.9", tcp(1, 9092, 0, 0, ACK, data_offset=3)), 228, "tcp.data_offset"),
    "data-offset-past-end": (
        ipv4("192.0.2.1", "192.0.2.9", tcp(1, 9092, 0, 0, ACK, data_offset=15)),
        228,
        "tcp.data_offset",
    ),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_headers_raise_decode_errors_naming_the_field(name: str) -> None:
    frame, link_type, path = MALFORMED[name]
    with pytest.raises(DecodeError) as info:
        dissect(frame, link_type)
    assert info.value.path == path
    assert 0 <= info.value.offset <= len(frame)


def test_malformed_packets_are_reported_one_by_one_and_the_capture_goes_on() -> None:
    good = ethernet(IP4)
    frames = [
        (1, good),
        (2, ethernet(b"\x43" + IP4[1:])),
        (3, b"\x00" * 5),
        (4, ethernet(ipv4("192.0.2.1", "192.0.2.9", tcp(1, 9092, 0, 0, ACK, data_offset=2)))),
        (5, ethernet(ipv4("192.0.2.1", "192.0.2.9", TCP4, flags_fragment=0x2001))),
        (6, ethernet(IP4[:-1] + b"!")),
    ]
    events = list(iter_streams(io.BytesIO(pcap_file(frames, nanoseconds=True)), align_frames=False))
    errors = [e for e in events if isinstance(e, PacketError)]
    assert [(e.packet, e.timestamp_ns, type(e.error).__name__) for e in errors] == [
        (1, 2, "DecodeError"),
        (2, 3, "DecodeError"),
        (3, 4, "DecodeError"),
        (4, 5, "UnsupportedPacket"),
    ]
    data = [e for e in events if isinstance(e, StreamData)]
    assert [e.packet for e in data] == [0]  # packet 5 repeats packet 0's sequence numbers: a retransmission


def test_ignored_packets_are_counted() -> None:
    from kafka_epochs.capture import CaptureStreams

    frames = [(1, ethernet(b"\x00" * 28, 0x0806)), (2, ipv4("192.0.2.1", "192.0.2.9", b"\x00" * 8, protocol=17))]
    streams = CaptureStreams(io.BytesIO(pcap_file(frames[:1])), align_frames=False)
    assert list(streams) == []
    assert streams.stats.ignored == {NOT_IP: 1} and streams.stats.packets == 1
    streams = CaptureStreams(io.BytesIO(pcap_file(frames[1:], link_type=228)))
    assert list(streams) == [] and streams.stats.ignored == {NOT_TCP: 1}


@settings(max_examples=500, deadline=None)
@given(frame=st.binary(max_size=120), link_type=st.sampled_from([0, 1, 12, 101, 108, 113, 228, 229, 276]))
def test_random_frames_give_a_segment_a_reason_or_our_errors(frame: bytes, link_type: int) -> None:
    try:
        result = dissect(frame, link_type)
    except (DecodeError, UnsupportedPacket):
        return
    assert isinstance(result, Segment | str)


@settings(max_examples=500, deadline=None)
@given(
    position=st.integers(0, 200),
    value=st.integers(0, 255),
    cut=st.integers(0, 200),
    base=st.sampled_from(
        [
            (ethernet(IP4), 1),
            (ethernet_tagged(IP6, [0x8100], ETHERTYPE_IPV6), 1),
            (sll2(IP4), 276),
            (bsd_null(IP6, 30), 0),
        ]
    ),
)
def test_damaged_frames_give_a_segment_a_reason_or_our_errors(
    position: int, value: int, cut: int, base: tuple[bytes, int]
) -> None:
    frame = bytearray(base[0])
    frame[position % len(frame)] = value
    try:
        result = dissect(bytes(frame[:cut] if cut < len(frame) else frame), base[1])
    except (DecodeError, UnsupportedPacket):
        return
    assert isinstance(result, Segment | str)


def test_segment_struct_matches_header_layout() -> None:
    # The TCP flags byte sits at offset 13: a sanity check of the builders the other tests rely on.
    assert struct.unpack_from(">B", TCP4, 13)[0] == ACK | PSH


def test_the_cheap_port_look_agrees_with_full_dissection() -> None:
    """``Dissector.tcp_ports`` answers only where ``segment`` finds those same ports (or cannot
    read the packet): on the bundled captures, and on packets it must pass over."""
    samples = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
    dissector = Dissector()
    answered = 0
    for name in ("sample.pcap", "clients.pcap"):
        for record in read_packets(samples / name):
            assert isinstance(record, Packet)
            ports = dissector.tcp_ports(record)
            segment = dissector.segment(record)
            if ports is not None:
                answered += 1
                assert not isinstance(segment, str) and ports == (segment.source.port, segment.destination.port)
    assert answered > 100
    tcp_bytes = tcp(40000, 9092, 1, 1, 0x18, b"x")
    cases = {
        "plain IPv4": (ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp_bytes)), (40000, 9092)),
        "IPv4 options": (ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp_bytes, ihl=6, options=bytes(4))), (40000, 9092)),
        "plain IPv6": (ethernet(ipv6("fe80::1", "fe80::2", tcp_bytes), ETHERTYPE_IPV6), (40000, 9092)),
        "a fragment": (ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp_bytes, flags_fragment=0x2000)), None),
        "UDP": (ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp_bytes, protocol=17)), None),
        "IPv6 extension": (
            ethernet(ipv6("fe80::1", "fe80::2", ipv6_extension(6) + tcp_bytes, next_header=0), ETHERTYPE_IPV6),
            None,
        ),
        "cut short": (ethernet(ipv4("10.0.0.1", "10.0.0.2", tcp_bytes))[:36], None),
    }
    for what, (frame, expected) in cases.items():
        packet = Packet(0, 1, frame, 0, 0, len(frame))
        assert dissector.tcp_ports(packet) == expected, what
        if expected is not None:
            segment = dissector.segment(packet)
            assert not isinstance(segment, str) and (segment.source.port, segment.destination.port) == expected
    assert dissector.tcp_ports(Packet(0, 147, b"\x00" * 60, 0, 0, 60)) is None  # a link type with no decoder

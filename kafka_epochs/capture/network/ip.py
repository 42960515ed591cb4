"""IPv4 and IPv6 headers: addresses, upper-layer protocol and where its bytes are.

Fragments are detected, not reassembled: Kafka's TCP connections practically never fragment
(path MTU discovery sets Don't Fragment), so a TCP fragment is reported and the bytes it carried
show up as a gap in the stream. IPv6 extension headers are skipped. Checksums are not verified:
captures taken on a sending host see checksums the network card fills in later.
"""

# No ``from __future__ import annotations``: with it, each field of IpPacket (NamedTuples)
# would be annotated by a string, which typing compiles as the class is made, at every start.

import struct
from typing import NamedTuple

from kafka_epochs.errors import DecodeError

IPV4_MIN_HEADER = 20
IPV6_HEADER = 40

PROTO_TCP = 6
IPV6_FRAGMENT = 44
IPV6_AUTH = 51  # length in 4-byte words, unlike the other extension headers
# Extension headers shaped as (next header, length in 8-byte words beyond the first 8, ...):
# hop-by-hop, routing, destination options, mobility, HIP, shim6, and the two experimental values.
IPV6_EXTENSIONS = frozenset({0, 43, 60, 135, 139, 140, 253, 254})

_IPV4 = struct.Struct(">BxHxxHxB2x4s4s")
_IPV6 = struct.Struct(">B3xHB1x16s16s")
_U16 = struct.Struct(">H")
_MORE_FRAGMENTS_OR_OFFSET = 0x3FFF  # IPv4 flags/fragment-offset bits that make a packet a fragment


class IpPacket(NamedTuple):
    """Where the upper-layer payload of an IP packet lies in the frame.

    ``payload_end`` is the end of what was captured; ``missing`` counts payload bytes the IP
    header announces beyond it (cut by the snapshot length). Link-layer padding after the IP packet
    is excluded. ``fragment`` is true for any fragment of a fragmented packet.
    """

    version: int
    source: bytes
    destination: bytes
    protocol: int
    payload_start: int
    payload_end: int
    missing: int
    fragment: bool


def _bounds(data: bytes, announced_end: int) -> tuple[int, int]:
    """Captured end and missing count of a payload announced to end at ``announced_end``."""
    if announced_end <= len(data):
        return announced_end, 0
    return len(data), announced_end - len(data)


def ipv4(data: bytes, offset: int) -> IpPacket:
    if len(data) - offset < IPV4_MIN_HEADER:
        raise DecodeError(f"IPv4 header needs {IPV4_MIN_HEADER} bytes, {len(data) - offset} captured", offset, "ipv4")
    version_ihl, total_length, flags_fragment, protocol, source, destination = _IPV4.unpack_from(data, offset)
    if version_ihl >> 4 != 4:
        raise DecodeError(f"version field is {version_ihl >> 4}, not 4", offset, "ipv4.version")
    header_length = (version_ihl & 0x0F) * 4
    if header_length < IPV4_MIN_HEADER:
        raise DecodeError(f"header length {header_length} is below the minimum of 20", offset, "ipv4.ihl")
    if offset + header_length > len(data):
        raise DecodeError(
            f"header length {header_length} runs past the {len(data) - offset} bytes captured", offset, "ipv4.ihl"
        )
    if total_length == 0:
        # Captured on the sending host before segmentation offload split it: the card fills the length in.
        end, missing = len(data), 0
    elif total_length < header_length:
        raise DecodeError(
            f"total length {total_length} is shorter than the {header_length}-byte header",
            offset + 2,
            "ipv4.total_length",
        )
    else:
        end, missing = _bounds(data, offset + total_length)
    return IpPacket(
        4,
        source,
        destination,
        protocol,
        offset + header_length,
        end,
        missing,
        bool(flags_fragment & _MORE_FRAGMENTS_OR_OFFSET),
    )


def ipv6(data: bytes, offset: int) -> IpPacket:
    if len(data) - offset < IPV6_HEADER:
        raise DecodeError(f"IPv6 header needs {IPV6_HEADER} bytes, {len(data) - offset} captured", offset, "ipv6")
    version_class, payload_length, next_header, source, destination = _IPV6.unpack_from(data, offset)
    if version_class >> 4 != 6:
        raise DecodeError(f"version field is {version_class >> 4}, not 6", offset, "ipv6.version")
    start = offset + IPV6_HEADER
    if payload_length == 0:
        # A jumbogram, or segmentation offload as for IPv4: the captured bytes are the payload.
        end, missing = len(data), 0
    else:
        end, missing = _bounds(data, start + payload_length)
    fragment = False
    while next_header in IPV6_EXTENSIONS or next_header in (IPV6_FRAGMENT, IPV6_AUTH):
        if start + 8 > end:
            raise DecodeError(f"extension header {next_header} runs past the captured payload", start, "ipv6.extension")
        if next_header == IPV6_FRAGMENT:
            (offset_flags,) = _U16.unpack_from(data, start + 2)
            next_header = data[start]
            start += 8
            # Fragment offset or More Fragments set; both clear is an "atomic" fragment: a whole packet.
            if offset_flags & 0xFFF9:
                fragment = True
                break
            continue
        length = (data[start + 1] + 2) * 4 if next_header == IPV6_AUTH else (data[start + 1] + 1) * 8
        next_header = data[start]
        start += length
        if start > end:
            raise DecodeError(
                "extension header length runs past the captured payload", start - length, "ipv6.extension.length"
            )
    return IpPacket(6, source, destination, next_header, start, end, missing, fragment)

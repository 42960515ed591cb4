"""Link-layer headers: find the IP packet inside a captured frame.

Each decoder takes the frame's bytes and returns ``(ip_version, offset)`` of the IP header, or
``None`` for a frame that carries something else (ARP, LLC, ...). A frame too short for its own
header raises :class:`DecodeError`. Link types (the LINKTYPE_ values of tcpdump.org):

* 1 Ethernet, with any number of 802.1Q / 802.1ad (QinQ) tags;
* 113 Linux cooked capture (SLL) and 276 its version 2 (SLL2), as ``tcpdump -i any`` writes;
* 0 BSD loopback ("null"): a 4-byte address family in the capturing host's byte order, and
  108 OpenBSD loopback, the same in network byte order;
* 101 raw IP (and 12 and 14, the values some systems wrote for it), 228 raw IPv4, 229 raw IPv6.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from kafka_epochs.errors import DecodeError

LinkDecoder = Callable[[bytes], "tuple[int, int] | None"]

LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW_DLT12 = 12
LINKTYPE_RAW_DLT14 = 14
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
# 802.1Q, 802.1ad, and the pre-standard QinQ values some switches still use.
VLAN_ETHERTYPES = frozenset({0x8100, 0x88A8, 0x9100, 0x9200, 0x9300})

ETHERNET_HEADER = 14
SLL_HEADER = 16
SLL2_HEADER = 20
NULL_HEADER = 4
VLAN_TAG = 4

AF_INET = 2
# AF_INET6 differs by system: Linux 10, Windows 23, NetBSD/OpenBSD 24, FreeBSD 28, macOS 30.
AF_INET6_VALUES = frozenset({10, 23, 24, 28, 30})

_U16 = struct.Struct(">H")


def _ip_after_ethertype(data: bytes, ethertype: int, offset: int, where: str) -> tuple[int, int] | None:
    while ethertype in VLAN_ETHERTYPES:
        if len(data) < offset + VLAN_TAG:
            raise DecodeError(f"frame ends inside a VLAN tag ({len(data)} bytes)", offset, f"{where}.vlan")
        (ethertype,) = _U16.unpack_from(data, offset + 2)
        offset += VLAN_TAG
    if ethertype == ETHERTYPE_IPV4:
        return 4, offset
    if ethertype == ETHERTYPE_IPV6:
        return 6, offset
    return None


def ethernet(data: bytes) -> tuple[int, int] | None:
    if len(data) < ETHERNET_HEADER:
        raise DecodeError(f"Ethernet header needs {ETHERNET_HEADER} bytes, the frame has {len(data)}", 0, "ethernet")
    (ethertype,) = _U16.unpack_from(data, 12)
    return _ip_after_ethertype(data, ethertype, ETHERNET_HEADER, "ethernet")


def linux_sll(data: bytes) -> tuple[int, int] | None:
    if len(data) < SLL_HEADER:
        raise DecodeError(f"Linux cooked header needs {SLL_HEADER} bytes, the frame has {len(data)}", 0, "sll")
    (protocol,) = _U16.unpack_from(data, 14)
    return _ip_after_ethertype(data, protocol, SLL_HEADER, "sll")


def linux_sll2(data: bytes) -> tuple[int, int] | None:
    if len(data) < SLL2_HEADER:
        raise DecodeError(f"Linux cooked v2 header needs {SLL2_HEADER} bytes, the frame has {len(data)}", 0, "sll2")
    (protocol,) = _U16.unpack_from(data, 0)
    return _ip_after_ethertype(data, protocol, SLL2_HEADER, "sll2")


def _ip_for_family(family: int) -> tuple[int, int] | None:
    if family == AF_INET:
        return 4, NULL_HEADER
    if family in AF_INET6_VALUES:
        return 6, NULL_HEADER
    return None


def bsd_null(data: bytes) -> tuple[int, int] | None:
    if len(data) < NULL_HEADER:
        raise DecodeError(f"loopback header needs {NULL_HEADER} bytes, the frame has {len(data)}", 0, "null")
    # The family is in the byte order of the host that captured; families are small numbers, so
    # the reading that gives a small number is the right one.
    family = int.from_bytes(data[:NULL_HEADER], "little")
    if family > 0xFFFF:
        family = int.from_bytes(data[:NULL_HEADER], "big")
    return _ip_for_family(family)


def openbsd_loop(data: bytes) -> tuple[int, int] | None:
    if len(data) < NULL_HEADER:
        raise DecodeError(f"loopback header needs {NULL_HEADER} bytes, the frame has {len(data)}", 0, "loop")
    return _ip_for_family(int.from_bytes(data[:NULL_HEADER], "big"))


def raw_ip(data: bytes) -> tuple[int, int] | None:
    if not data:
        raise DecodeError("empty raw IP packet", 0, "raw")
    version = data[0] >> 4
    if version not in (4, 6):
        raise DecodeError(f"raw IP packet has version {version}", 0, "raw.version")
    return version, 0


def raw_ipv4(data: bytes) -> tuple[int, int] | None:
    return 4, 0


def raw_ipv6(data: bytes) -> tuple[int, int] | None:
    return 6, 0


_DECODERS: dict[int, LinkDecoder] = {
    LINKTYPE_NULL: bsd_null,
    LINKTYPE_ETHERNET: ethernet,
    LINKTYPE_RAW_DLT12: raw_ip,
    LINKTYPE_RAW_DLT14: raw_ip,
    LINKTYPE_RAW: raw_ip,
    LINKTYPE_LOOP: openbsd_loop,
    LINKTYPE_LINUX_SLL: linux_sll,
    LINKTYPE_IPV4: raw_ipv4,
    LINKTYPE_IPV6: raw_ipv6,
    LINKTYPE_LINUX_SLL2: linux_sll2,
}

SUPPORTED_LINK_TYPES = frozenset(_DECODERS)


def link_decoder(link_type: int) -> LinkDecoder | None:
    """The decoder for ``link_type``, or ``None`` if this reader does not know it."""
    return _DECODERS.get(link_type)

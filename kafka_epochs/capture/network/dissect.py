"""From a captured packet to a TCP segment: link layer, then IP, then TCP."""

from __future__ import annotations

import struct

from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import Endpoint
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.capture.network.ip import IPV4_MIN_HEADER, IPV6_HEADER, PROTO_TCP, ipv4, ipv6
from kafka_epochs.capture.network.link import ETHERTYPE_IPV4, LINKTYPE_ETHERNET, LinkDecoder, link_decoder
from kafka_epochs.capture.network.tcp import Segment, tcp_header
from kafka_epochs.errors import DecodeError

NOT_IP = "not IP"
_U16 = struct.Struct(">H")
_PORTS = struct.Struct(">HH")
_KEY_PORTS = struct.Struct(">8xHH")  # the ports of ETHERNET_IPV4_TCP_KEYED's 12 bytes
FRAGMENT_BITS = 0x3FFF  # IPv4 more-fragments flag and fragment offset
NOT_TCP = "not TCP"
_ADDRESS_CACHE_LIMIT = 1 << 16
#: Ethernet II carrying IPv4 with a 20-byte header carrying TCP: the ethertype, the IPv4 fields
#: ``ipv4`` reads, and the TCP fields ``tcp_header`` reads, in one unpack.
ETHERNET_IPV4_TCP = struct.Struct(">12xHBxHxxHxB2x4s4sHHIIH")
#: The same, with the IPv4 addresses and TCP ports as one 12-byte string (they are contiguous):
#: (ethertype, version/IHL, total length, fragment bits, protocol, addresses and ports, sequence
#: number, acknowledgement number, data offset and flags).
ETHERNET_IPV4_TCP_KEYED = struct.Struct(">12xHBxHxxHxB2x12sIIH")
ETHERNET_IPV4_TCP_MIN = 14 + 20 + 20
TCP_START = 14 + 20
_new_tuple = tuple.__new__  # a NamedTuple without the frame of its Python-level __new__


class Dissector:
    """Turns packets into segments. Addresses are formatted once each (captures repeat a handful)."""

    def __init__(self) -> None:
        self._decoders: dict[int, LinkDecoder | None] = {}
        self._addresses: dict[bytes, str] = {}
        self._endpoints: dict[tuple[bytes, int], Endpoint] = {}

    def segment(self, packet: Packet) -> Segment | str:
        """The packet's TCP segment, or why it has none (:data:`NOT_IP`, :data:`NOT_TCP`).

        Raises :class:`~kafka_epochs.DecodeError` for malformed headers and
        :class:`UnsupportedPacket` for unknown link types and TCP carried in IP fragments.
        """
        # The common shape, read in one go; whatever it does not take (other links, VLANs, IPv6,
        # IP options, fragments, anything malformed) the layer-by-layer path reads and judges.
        data = packet.data
        if packet.link_type == LINKTYPE_ETHERNET and len(data) >= ETHERNET_IPV4_TCP_MIN:
            ethertype, version_ihl, total, fragment, protocol, src, dst, sport, dport, seq, ack, offset_flags = (
                ETHERNET_IPV4_TCP.unpack_from(data)
            )
            if (
                ethertype == ETHERTYPE_IPV4
                and version_ihl == 0x45
                and protocol == PROTO_TCP
                and not fragment & FRAGMENT_BITS
                and (total == 0 or total >= 20)
            ):
                missing = 0
                if total == 0:  # segmentation offload: the captured bytes are the packet
                    end = len(data)
                else:
                    end = 14 + total
                    if end > len(data):
                        missing = end - len(data)
                        end = len(data)
                start = TCP_START + (offset_flags >> 12) * 4
                if TCP_START + 20 <= start <= end:
                    endpoints = self._endpoints
                    source = endpoints.get((src, sport)) or self._endpoint(src, sport)
                    destination = endpoints.get((dst, dport)) or self._endpoint(dst, dport)
                    segment = (
                        source,
                        destination,
                        seq,
                        ack,
                        offset_flags & 0xFF,
                        data[start:end],
                        missing,
                        packet.timestamp_ns,
                        packet.index,
                    )
                    return _new_tuple(Segment, segment)
        return self._segment_by_layers(packet)

    def endpoints(self, ends: bytes) -> tuple[Endpoint, Endpoint]:
        """(source, destination) of the 12 bytes of addresses and ports that
        :data:`ETHERNET_IPV4_TCP_KEYED` reads, as :meth:`segment` names them."""
        source_port, destination_port = _KEY_PORTS.unpack_from(ends)
        source_address, destination_address = ends[:4], ends[4:8]
        endpoints = self._endpoints
        return (
            endpoints.get((source_address, source_port)) or self._endpoint(source_address, source_port),
            endpoints.get((destination_address, destination_port))
            or self._endpoint(destination_address, destination_port),
        )

    def _segment_by_layers(self, packet: Packet) -> Segment | str:
        link_type = packet.link_type
        decode_link = self._link(link_type)
        if decode_link is None:
            raise UnsupportedPacket(f"link type {link_type} is not supported")
        data = packet.data
        located = decode_link(data)
        if located is None:
            return NOT_IP
        version, offset = located
        ip = ipv4(data, offset) if version == 4 else ipv6(data, offset)
        if ip.protocol != PROTO_TCP:
            return NOT_TCP
        if ip.fragment:
            raise UnsupportedPacket(f"TCP in a fragmented IPv{version} packet (fragments are not reassembled)")
        header = tcp_header(data, ip.payload_start, ip.payload_end)
        return Segment(
            Endpoint(self._address(ip.source), header.source_port),
            Endpoint(self._address(ip.destination), header.destination_port),
            header.seq,
            header.ack,
            header.flags,
            data[header.payload_start : ip.payload_end],
            ip.missing,
            packet.timestamp_ns,
            packet.index,
        )

    def tcp_ports(self, packet: Packet) -> tuple[int, int] | None:
        """(source, destination) ports of a plain TCP packet (IPv4 unfragmented, or IPv6 with no
        extension header), None for anything else or anything short: a cheap look, for a reader
        that wants to pass over the packets of some ports; where it answers, :meth:`segment`
        agrees or finds the packet unreadable."""
        decode_link = self._link(packet.link_type)
        if decode_link is None:
            return None
        data = packet.data
        try:
            located = decode_link(data)
        except DecodeError:
            return None
        if located is None:
            return None
        version, offset = located
        if version == 4:
            if len(data) < offset + IPV4_MIN_HEADER or data[offset + 9] != PROTO_TCP:
                return None
            if _U16.unpack_from(data, offset + 6)[0] & FRAGMENT_BITS:
                return None
            start = offset + (data[offset] & 0x0F) * 4
        elif len(data) < offset + IPV6_HEADER or data[offset + 6] != PROTO_TCP:
            return None
        else:
            start = offset + IPV6_HEADER
        if len(data) < start + 4:
            return None
        source, destination = _PORTS.unpack_from(data, start)
        return source, destination

    def _link(self, link_type: int) -> LinkDecoder | None:
        try:
            return self._decoders[link_type]
        except KeyError:
            decoder = self._decoders[link_type] = link_decoder(link_type)
            return decoder

    def _endpoint(self, packed: bytes, port: int) -> Endpoint:
        if len(self._endpoints) >= _ADDRESS_CACHE_LIMIT:
            self._endpoints.clear()  # a port scan must not grow this without end either
        endpoint = self._endpoints[packed, port] = Endpoint(self._address(packed), port)
        return endpoint

    def _address(self, packed: bytes) -> str:
        try:
            return self._addresses[packed]
        except KeyError:
            if len(self._addresses) >= _ADDRESS_CACHE_LIMIT:
                self._addresses.clear()  # a capture of an address scan must not grow this without end
            if len(packed) == 4:
                text = "%d.%d.%d.%d" % tuple(packed)  # noqa: UP031 - four bytes, as inet_ntop writes them
            else:
                import socket  # only for IPv6: the module builds enums on import, slower than a small capture

                text = socket.inet_ntop(socket.AF_INET6, packed)
            self._addresses[packed] = text
            return text

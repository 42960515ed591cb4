"""From a captured packet to a TCP segment: link layer, then IP, then TCP."""

from __future__ import annotations

import socket

from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import Endpoint
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.capture.network.ip import PROTO_TCP, ipv4, ipv6
from kafka_epochs.capture.network.link import LinkDecoder, link_decoder
from kafka_epochs.capture.network.tcp import Segment, tcp_header

NOT_IP = "not IP"
NOT_TCP = "not TCP"
_ADDRESS_CACHE_LIMIT = 1 << 16


class Dissector:
    """Turns packets into segments. Addresses are formatted once each (captures repeat a handful)."""

    def __init__(self) -> None:
        self._decoders: dict[int, LinkDecoder | None] = {}
        self._addresses: dict[bytes, str] = {}

    def segment(self, packet: Packet) -> Segment | str:
        """The packet's TCP segment, or why it has none (:data:`NOT_IP`, :data:`NOT_TCP`).

        Raises :class:`~kafka_epochs.DecodeError` for malformed headers and
        :class:`UnsupportedPacket` for unknown link types and TCP carried in IP fragments.
        """
        link_type = packet.link_type
        try:
            decode_link = self._decoders[link_type]
        except KeyError:
            decode_link = self._decoders[link_type] = link_decoder(link_type)
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

    def _address(self, packed: bytes) -> str:
        try:
            return self._addresses[packed]
        except KeyError:
            if len(self._addresses) >= _ADDRESS_CACHE_LIMIT:
                self._addresses.clear()  # a capture of an address scan must not grow this without end
            family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
            text = self._addresses[packed] = socket.inet_ntop(family, packed)
            return text

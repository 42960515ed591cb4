"""Write packets as a classic pcap file, the format every capture tool reads."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import BinaryIO

from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files.packets import Packet
from kafka_epochs.errors import EncodeError

DEFAULT_SNAPLEN = 262144  # what tcpdump and Wireshark use: larger records are refused by some readers
_MAX_SECONDS = 0xFFFFFFFF


def write_pcap(
    destination: str | os.PathLike[str] | BinaryIO,
    packets: Iterable[Packet | tuple[int, bytes]],
    link_type: int,
    *,
    nanoseconds: bool = True,
    snaplen: int = DEFAULT_SNAPLEN,
    big_endian: bool = False,
) -> int:
    """Write ``packets`` (``Packet`` objects or ``(timestamp_ns, data)`` pairs) and return how many.

    Timestamps are kept to the nanosecond (magic ``a1b23c4d``) unless ``nanoseconds`` is false,
    which writes the classic microsecond format (``a1b2c3d4``). Every packet is written whole
    (its original length is its captured length), so a packet longer than ``snaplen``, or one with
    a timestamp outside the format's range, raises :class:`EncodeError`. A file object is
    written from its current position and left open.
    """
    if not 0 <= link_type <= 0xFFFF:
        raise EncodeError(f"link type {link_type} does not fit the 16 bits pcap gives it")
    if isinstance(destination, str | os.PathLike):
        with open(destination, "wb") as stream:
            return _write(stream, packets, link_type, nanoseconds, snaplen, big_endian)
    return _write(destination, packets, link_type, nanoseconds, snaplen, big_endian)


def _write(
    stream: BinaryIO,
    packets: Iterable[Packet | tuple[int, bytes]],
    link_type: int,
    nanoseconds: bool,
    snaplen: int,
    big_endian: bool,
) -> int:
    # The magic is written in the file's own byte order like every field: that is how readers find the order.
    magic = formats.PCAP_NANO_BIG if nanoseconds else formats.PCAP_MICRO_BIG
    header = formats.pcap_file_header(big_endian).build(
        {
            "magic": magic,
            "version_major": 2,
            "version_minor": 4,
            "reserved1": 0,
            "reserved2": 0,
            "snaplen": snaplen,
            "link_type_and_fcs": link_type,
        }
    )
    stream.write(header)
    pack_record = formats.fast_layouts(big_endian).pcap_record.pack
    unit = 1 if nanoseconds else 1000
    count = 0
    for packet in packets:
        if isinstance(packet, Packet):
            timestamp_ns, data = packet.timestamp_ns, packet.data
        else:
            timestamp_ns, data = packet
        if len(data) > snaplen:
            raise EncodeError(f"packet {count} has {len(data)} bytes, more than the snapshot length {snaplen}")
        seconds, rest = divmod(timestamp_ns, 1_000_000_000)
        if not 0 <= seconds <= _MAX_SECONDS:
            raise EncodeError(f"packet {count} has a timestamp outside pcap's unsigned 32-bit seconds since 1970")
        stream.write(pack_record(seconds, rest // unit, len(data), len(data)))
        stream.write(data)
        count += 1
    return count

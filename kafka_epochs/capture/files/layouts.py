"""The pcap and pcapng layouts, declared with ``construct``, and the ``struct`` twins of the hot ones.

The declarations are the reference. Every layout the readers meet is read with its
precompiled :class:`struct.Struct` twin below (the tests check that each twin reads the same
fields as its declaration), so that reading a capture does not load ``construct`` at all: its
import (with ``inspect``, ``pdb``, ``pickle`` and ``hashlib``, which it imports) cost a pcapng
capture of real clients more than a tenth of its decode, for the two blocks of a section that
it parsed.

References: the pcap format (draft-ietf-opsawg-pcap) and the pcapng format
(draft-ietf-opsawg-pcapng), both maintained at https://github.com/IETF-OPSAWG-WG.
"""

# No ``from __future__ import annotations``: with it, each field of PcapFileHeader (NamedTuples)
# would be annotated by a string, which typing compiles as the class is made, at every start.

import struct
from typing import Any, NamedTuple

# Magic numbers, as the first four bytes read big-endian.
PCAP_MICRO_BIG = 0xA1B2C3D4
PCAP_MICRO_LITTLE = 0xD4C3B2A1
PCAP_NANO_BIG = 0xA1B23C4D
PCAP_NANO_LITTLE = 0x4D3CB2A1
# Alexey Kuznetzov's patched libpcap: microseconds, and 8 more bytes in every record header.
PCAP_KUZNETZOV_BIG = 0xA1B2CD34
PCAP_KUZNETZOV_LITTLE = 0x34CDB2A1
PCAPNG_SECTION_HEADER = 0x0A0D0D0A
PCAPNG_BYTE_ORDER_MAGIC = 0x1A2B3C4D

PCAP_FILE_HEADER_SIZE = 24
PCAP_RECORD_HEADER_SIZE = 16
PCAP_KUZNETZOV_RECORD_HEADER_SIZE = 24

# pcapng block types.
BLOCK_SECTION_HEADER = 0x0A0D0D0A
BLOCK_INTERFACE_DESCRIPTION = 0x00000001
BLOCK_PACKET_OBSOLETE = 0x00000002
BLOCK_SIMPLE_PACKET = 0x00000003
BLOCK_ENHANCED_PACKET = 0x00000006

# pcapng option codes this reader uses.
OPTION_END = 0
OPTION_IF_TSRESOL = 9
OPTION_IF_TSOFFSET = 14

BLOCK_HEADER_SIZE = 8  # block type, block total length
BLOCK_TRAILER_SIZE = 4  # block total length, again
MIN_BLOCK_SIZE = BLOCK_HEADER_SIZE + BLOCK_TRAILER_SIZE


def struct_prefix(big_endian: bool) -> str:
    return ">" if big_endian else "<"


def _ints(big_endian: bool) -> tuple[Any, Any, Any]:
    # construct is loaded when a declaration is first built, not with this module: reading a pcap
    # file needs only the twins, and construct takes longer to import than a small capture to read.
    import construct  # type: ignore[import-untyped]

    if big_endian:
        return construct.Int16ub, construct.Int32ub, construct.Int64sb
    return construct.Int16ul, construct.Int32ul, construct.Int64sl


def _struct(*fields: Any) -> Any:
    import construct

    return construct.Struct(*fields)


def pcap_file_header(big_endian: bool) -> Any:
    """The 24-byte header of a pcap file, in the byte order its magic number revealed."""
    u16, u32, _ = _ints(big_endian)
    return _struct(
        "magic" / u32,
        "version_major" / u16,
        "version_minor" / u16,
        # Once the GMT offset and timestamp accuracy; writers now put 0 and readers ignore them.
        "reserved1" / u32,
        "reserved2" / u32,
        "snaplen" / u32,
        # The low 16 bits are the link type; the high bits may carry the FCS length.
        "link_type_and_fcs" / u32,
    )


def pcap_record_header(big_endian: bool) -> Any:
    """The header in front of every packet of a pcap file."""
    _, u32, _ = _ints(big_endian)
    return _struct(
        "ts_seconds" / u32,
        "ts_fraction" / u32,  # microseconds or nanoseconds, as the magic says
        "captured_length" / u32,
        "original_length" / u32,
    )


def pcapng_block_header(big_endian: bool) -> Any:
    _, u32, _ = _ints(big_endian)
    return _struct("block_type" / u32, "block_total_length" / u32)


def pcapng_section_header_body(big_endian: bool) -> Any:
    """What follows the block header of a Section Header Block, before its options."""
    u16, u32, i64 = _ints(big_endian)
    return _struct(
        "byte_order_magic" / u32,
        "version_major" / u16,
        "version_minor" / u16,
        "section_length" / i64,  # -1 when the writer did not know it
    )


def pcapng_interface_description_body(big_endian: bool) -> Any:
    """What follows the block header of an Interface Description Block, before its options."""
    u16, u32, _ = _ints(big_endian)
    return _struct("link_type" / u16, "reserved" / u16, "snaplen" / u32)


def pcapng_enhanced_packet_fixed(big_endian: bool) -> Any:
    _, u32, _ = _ints(big_endian)
    return _struct(
        "interface_id" / u32,
        "ts_high" / u32,
        "ts_low" / u32,
        "captured_length" / u32,
        "original_length" / u32,
    )


def pcapng_obsolete_packet_fixed(big_endian: bool) -> Any:
    u16, u32, _ = _ints(big_endian)
    return _struct(
        "interface_id" / u16,
        "drops_count" / u16,
        "ts_high" / u32,
        "ts_low" / u32,
        "captured_length" / u32,
        "original_length" / u32,
    )


def pcapng_simple_packet_fixed(big_endian: bool) -> Any:
    _, u32, _ = _ints(big_endian)
    return _struct("original_length" / u32)


def pcapng_option_header(big_endian: bool) -> Any:
    u16, _, _ = _ints(big_endian)
    return _struct("code" / u16, "length" / u16)


class FastLayouts:
    """The ``struct`` twins of the declarations, for one byte order."""

    __slots__ = (
        "block_header",
        "enhanced_block",
        "enhanced_packet",
        "interface_description",
        "obsolete_packet",
        "option_header",
        "pcap_file",
        "pcap_record",
        "section_header",
        "simple_packet",
        "u32",
    )

    def __init__(self, big_endian: bool) -> None:
        prefix = struct_prefix(big_endian)
        self.pcap_file = struct.Struct(prefix + "IHHIIII")
        self.pcap_record = struct.Struct(prefix + "IIII")
        self.block_header = struct.Struct(prefix + "II")
        self.enhanced_packet = struct.Struct(prefix + "IIIII")
        self.enhanced_block = struct.Struct(prefix + "IIIIIII")  # the block header, then the above
        self.obsolete_packet = struct.Struct(prefix + "HHIIII")
        self.simple_packet = struct.Struct(prefix + "I")
        self.option_header = struct.Struct(prefix + "HH")
        self.section_header = struct.Struct(prefix + "IHHq")
        self.interface_description = struct.Struct(prefix + "HHI")
        self.u32 = struct.Struct(prefix + "I")


BIG = FastLayouts(True)
LITTLE = FastLayouts(False)


def fast_layouts(big_endian: bool) -> FastLayouts:
    return BIG if big_endian else LITTLE


class PcapFileHeader(NamedTuple):
    """The fields of :func:`pcap_file_header`, as its twin reads them."""

    magic: int
    version_major: int
    version_minor: int
    reserved1: int
    reserved2: int
    snaplen: int
    link_type_and_fcs: int


def read_pcap_file_header(big_endian: bool, head: bytes) -> PcapFileHeader:
    """The 24-byte pcap file header at the start of ``head``, read by its ``struct`` twin."""
    return PcapFileHeader(*fast_layouts(big_endian).pcap_file.unpack_from(head, 0))

"""Reading pcap and pcapng files: byte orders, timestamp units, block types, damage."""

from __future__ import annotations

import gzip
import io
import os
import re
import struct
from pathlib import Path

import pytest
from construct import Container  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st
from packet_builders import (
    pcap_file,
    pcapng_block,
    pcapng_enhanced,
    pcapng_interface,
    pcapng_obsolete_packet,
    pcapng_option,
    pcapng_section,
    pcapng_simple,
)

from kafka_epochs import DecodeError, EncodeError, KafkaEpochsError
from kafka_epochs.capture import BadRecord, CaptureFormatError, Packet, read_packets, write_pcap
from kafka_epochs.capture.files import layouts as formats
from kafka_epochs.capture.files import pcap as pcap_reader

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
FRAMES = [
    (1_700_000_000_123_456_789, b"first packet"),
    (1_700_000_001_000_000_001, b"second"),
    (1_700_000_002_999_999_999, bytes(range(256))),
]


def packets(data: bytes, **kwargs: int) -> list[Packet | BadRecord]:
    return list(read_packets(io.BytesIO(data), **kwargs))


def only_packets(data: bytes) -> list[Packet]:
    records = packets(data)
    assert all(isinstance(r, Packet) for r in records), records
    return records  # type: ignore[return-value]


# -- pcap


@pytest.mark.parametrize("big_endian", [False, True], ids=["little", "big"])
@pytest.mark.parametrize("nanoseconds", [False, True], ids=["usec", "nsec"])
def test_pcap_byte_orders_and_timestamp_units(big_endian: bool, nanoseconds: bool) -> None:
    data = pcap_file(FRAMES, link_type=101, big_endian=big_endian, nanoseconds=nanoseconds)
    magic = data[:4].hex()
    expected_magic = {
        (False, False): "d4c3b2a1",
        (True, False): "a1b2c3d4",
        (False, True): "4d3cb2a1",
        (True, True): "a1b23c4d",
    }[big_endian, nanoseconds]
    assert magic == expected_magic
    got = only_packets(data)
    assert [p.data for p in got] == [d for _, d in FRAMES]
    assert [p.index for p in got] == [0, 1, 2]
    assert {p.link_type for p in got} == {101}
    assert {p.interface for p in got} == {0}
    if nanoseconds:
        assert [p.timestamp_ns for p in got] == [t for t, _ in FRAMES]
    else:  # microsecond files keep microseconds
        assert [p.timestamp_ns for p in got] == [t // 1000 * 1000 for t, _ in FRAMES]


def test_pcap_original_length_kept_when_snaplen_cut_the_packet() -> None:
    data = pcap_file([(0, b"abcd")], original_lengths=[1500])
    (packet,) = only_packets(data)
    assert packet.data == b"abcd" and packet.original_length == 1500


def test_pcap_link_type_ignores_fcs_bits() -> None:
    data = bytearray(pcap_file(FRAMES[:1], link_type=1))
    struct.pack_into("<I", data, 20, 1 | (1 << 26) | (4 << 28))  # FCS length 4 announced in the high bits
    (packet,) = only_packets(bytes(data))
    assert packet.link_type == 1


def test_pcap_kuznetzov_records_have_8_more_bytes() -> None:
    header = struct.pack("<IHHiIII", 0xA1B2CD34, 2, 4, 0, 0, 65535, 1)
    record = struct.pack("<IIII", 5, 6, 3, 3) + struct.pack("<IHBx", 2, 0x0800, 0) + b"abc"
    (packet,) = only_packets(header + record)
    assert packet.data == b"abc" and packet.timestamp_ns == 5_000_006_000


def test_empty_pcap_has_no_packets() -> None:
    assert packets(pcap_file([])) == []


def test_pcap_cut_inside_a_packet_reports_a_bad_record_after_the_good_ones() -> None:
    data = pcap_file(FRAMES)
    records = packets(data[:-10])
    assert [type(r) for r in records] == [Packet, Packet, BadRecord]
    bad = records[2]
    assert isinstance(bad, BadRecord) and bad.index == 2
    assert isinstance(bad.error, DecodeError) and "ends inside a packet" in bad.error.reason
    assert bad.offset == len(pcap_file(FRAMES[:2]))


def test_pcap_cut_inside_a_record_header() -> None:
    data = pcap_file(FRAMES[:1]) + b"\x01\x02\x03"
    records = packets(data)
    assert isinstance(records[-1], BadRecord) and "record header" in records[-1].error.reason


def test_pcap_record_longer_than_the_limit_is_reported_and_the_records_after_it_read() -> None:
    data = bytearray(pcap_file(FRAMES))
    first_record = 24
    struct.pack_into("<I", data, first_record + 8, 0xFFFFFFF0)  # captured length: nothing is allocated for it
    records = packets(bytes(data))
    assert isinstance(records[0], BadRecord) and records[0].error.path == "pcap.record.captured_length"
    assert [r.data for r in records[1:] if isinstance(r, Packet)] == [d for _, d in FRAMES[1:]]
    assert [r.index for r in records] == [0, 1, 2]


def test_record_limit_is_configurable() -> None:
    records = packets(pcap_file(FRAMES), max_record_size=100)
    assert [type(r) for r in records] == [Packet, Packet, BadRecord]


def test_record_limit_holds_for_a_record_in_the_same_second_as_the_one_before() -> None:
    # (records of one second are judged quickly: the limit must still be looked at)
    same_second = [(1_700_000_000_000_000_000 + n, bytes(size)) for n, size in enumerate((10, 101, 10))]
    records = packets(pcap_file(same_second), max_record_size=100)
    assert type(records[0]) is Packet and type(records[1]) is BadRecord
    assert "more than the limit of 100" in str(records[1].error)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "too short"),
        (b"\xd4\xc3", "too short"),
        (b"GET / HTTP/1.1\r\n", "neither pcap nor pcapng"),
        (struct.pack("<IHH", 0xA1B2C3D4, 2, 4), "file header needs 24 bytes"),
        (struct.pack("<IHHiIII", 0xA1B2C3D4, 3, 0, 0, 0, 0, 1), "not 2.x"),
    ],
)
def test_not_a_capture_raises_a_decode_error(data: bytes, reason: str) -> None:
    with pytest.raises(CaptureFormatError, match=re.escape(reason)) as info:
        packets(data)
    assert isinstance(info.value, DecodeError) and isinstance(info.value, KafkaEpochsError)


def test_reads_from_a_path_and_from_an_open_file(tmp_path: Path) -> None:
    path = tmp_path / "x.pcap"
    path.write_bytes(pcap_file(FRAMES))
    assert [p.data for p in read_packets(path)] == [p.data for p in read_packets(str(path))]  # type: ignore[union-attr]
    with open(path, "rb") as f:
        assert len(list(read_packets(f))) == 3


def test_gzip_compressed_captures_are_read(tmp_path: Path) -> None:
    compressed = gzip.compress(pcap_file(FRAMES))
    assert [p.data for p in only_packets(compressed)] == [d for _, d in FRAMES]


def test_cut_gzip_stream_reports_the_damage_after_the_packets_it_held() -> None:
    body = pcap_file(FRAMES * 50)
    compressed = gzip.compress(body)
    records = packets(compressed[: len(compressed) // 2])
    assert any(isinstance(r, Packet) for r in records)
    assert isinstance(records[-1], BadRecord) and records[-1].error.path == "gzip"


def test_a_gzip_bomb_is_refused_after_a_bounded_read() -> None:
    # 300 MiB of zeros after a pcap header: 16-byte empty records by the million, 300 KiB compressed
    compressed = gzip.compress(pcap_file([]) + bytes(300 << 20), 6)
    records = packets(compressed)
    assert len(records) < 200_000  # read up to about 2 MiB, not 300
    assert isinstance(records[-1], BadRecord) and records[-1].error.path == "gzip"
    assert "expands more than 200 times" in str(records[-1].error)


def test_real_traffic_compressed_hard_is_no_bomb() -> None:
    # real clients' packets (librdkafka, kafka-python, aiokafka), 40 times over: 1.4 MB
    real = [p for p in read_packets(SAMPLES / "clients.pcap") if isinstance(p, Packet)]
    body = pcap_file([(p.timestamp_ns + copy, p.data) for copy in range(40) for p in real])
    compressed = gzip.compress(body, 9)
    assert len(body) > 1 << 20
    records = packets(compressed)
    assert len(records) == 40 * len(real) and all(isinstance(r, Packet) for r in records)


def test_a_small_file_is_never_refused_however_well_it_compresses() -> None:
    body = pcap_file([(1_700_000_000_000_000_000 + i, FRAMES[0][1]) for i in range(30_000)])  # 840 KB
    records = packets(gzip.compress(body, 9))
    assert len(records) == 30_000 and all(isinstance(r, Packet) for r in records)


# -- pcapng

LE, BE = "<", ">"


def test_pcapng_two_interfaces_with_their_own_link_types_and_resolutions() -> None:
    data = (
        pcapng_section(LE)
        + pcapng_interface(1, LE)  # default resolution: microseconds
        + pcapng_interface(113, LE, tsresol=9)
        + pcapng_interface(101, LE, tsresol=0x80 | 20)  # 2**-20 seconds
        + pcapng_enhanced(0, 1_700_000_000_000_001, b"ether", LE)
        + pcapng_enhanced(1, 1_700_000_000_000_000_007, b"cooked", LE)
        + pcapng_enhanced(2, 3 << 20 | 1 << 19, b"raw", LE)
    )
    got = only_packets(data)
    assert [(p.link_type, p.interface, p.data) for p in got] == [
        (1, 0, b"ether"),
        (113, 1, b"cooked"),
        (101, 2, b"raw"),
    ]
    assert got[0].timestamp_ns == 1_700_000_000_000_001_000
    assert got[1].timestamp_ns == 1_700_000_000_000_000_007
    assert got[2].timestamp_ns == 3_500_000_000


def test_pcapng_decimal_resolutions_coarser_and_finer_than_nanoseconds() -> None:
    data = (
        pcapng_section(LE)
        + pcapng_interface(1, LE, tsresol=3)
        + pcapng_interface(1, LE, tsresol=12)
        + pcapng_enhanced(0, 1500, b"a", LE)
        + pcapng_enhanced(1, 1_500_000_000_999, b"b", LE)
    )
    a, b = only_packets(data)
    assert a.timestamp_ns == 1_500_000_000 and b.timestamp_ns == 1_500_000_000


def test_pcapng_if_tsoffset_adds_seconds() -> None:
    data = pcapng_section(LE) + pcapng_interface(1, LE, tsoffset=100) + pcapng_enhanced(0, 5, b"a", LE)
    (packet,) = only_packets(data)
    assert packet.timestamp_ns == 100_000_005_000


@pytest.mark.parametrize(
    ("options", "ticks_per_second", "offset_s"),
    [
        ({}, 10**6, 0),
        ({"tsresol": 9}, 10**9, 0),
        ({"tsresol": 3}, 10**3, 0),
        ({"tsresol": 12}, 10**12, 0),
        ({"tsresol": 0x80 | 20}, 2**20, 0),
        ({"tsoffset": 100}, 10**6, 100),
        ({"tsresol": 9, "tsoffset": -5}, 10**9, -5),
    ],
)
def test_pcapng_every_packet_of_a_run_is_timed_by_its_interface(
    options: dict[str, int], ticks_per_second: int, offset_s: int
) -> None:
    """Not only a run's first packet (read the general way) but the ones after it (the quick
    way) take their interface's resolution and offset."""
    ticks = [1_700_000 * ticks_per_second + n * 12_345 + 7 for n in range(6)]
    blocks = b"".join(pcapng_enhanced(0, t, b"x" * (20 + n), LE) for n, t in enumerate(ticks))
    got = only_packets(pcapng_section(LE) + pcapng_interface(1, LE, **options) + blocks)
    assert [p.timestamp_ns for p in got] == [t * 10**9 // ticks_per_second + offset_s * 10**9 for t in ticks]


def test_pcapng_a_block_over_the_record_limit_inside_a_run_is_its_own_error() -> None:
    sizes = [40, 40, 40, 300, 40, 40]
    blocks = [pcapng_enhanced(0, 1_000 + n, bytes([n]) * size, LE) for n, size in enumerate(sizes)]
    records = packets(pcapng_section(LE) + pcapng_interface(1, LE) + b"".join(blocks), max_record_size=200)
    assert [type(r) for r in records] == [Packet, Packet, Packet, BadRecord, Packet, Packet]
    assert [r.index for r in records] == list(range(6))
    assert "total length" in str(records[3].error) and [r.data[0] for r in records if isinstance(r, Packet)] == [
        0,
        1,
        2,
        4,
        5,
    ]


@pytest.mark.parametrize("order", [LE, BE], ids=["little", "big"])
def test_pcapng_simple_packet_blocks_use_interface_0_and_its_snaplen(order: str) -> None:
    data = (
        pcapng_section(order)
        + pcapng_interface(101, order, snaplen=4)
        + pcapng_enhanced(0, 42, b"x", order)
        + pcapng_simple(b"abcdefgh", order, original_length=100)
    )
    first, simple = only_packets(data)
    assert simple.data == b"abcd" and simple.original_length == 100 and simple.link_type == 101
    assert simple.timestamp_ns == first.timestamp_ns  # no timestamp of its own: the previous one's


def test_pcapng_simple_packet_without_snaplen_is_cut_by_its_original_length() -> None:
    data = pcapng_section(LE) + pcapng_interface(1, LE) + pcapng_simple(b"abcde", LE)  # padded to 8 in the block
    (packet,) = only_packets(data)
    assert packet.data == b"abcde"


def test_pcapng_obsolete_packet_block() -> None:
    data = pcapng_section(BE) + pcapng_interface(1, BE) + pcapng_obsolete_packet(0, 2_000_000, b"old", BE)
    (packet,) = only_packets(data)
    assert packet.data == b"old" and packet.timestamp_ns == 2_000_000_000


def test_pcapng_sections_in_both_byte_orders_each_with_their_interfaces() -> None:
    data = (
        pcapng_section(LE)
        + pcapng_interface(1, LE)
        + pcapng_enhanced(0, 1, b"le", LE)
        + pcapng_section(BE)
        + pcapng_interface(101, BE, tsresol=9)
        + pcapng_enhanced(0, 2, b"be", BE)
    )
    le, be = only_packets(data)
    assert (le.link_type, le.data, le.timestamp_ns) == (1, b"le", 1000)
    assert (be.link_type, be.data, be.timestamp_ns) == (101, b"be", 2)


def test_pcapng_skips_unknown_and_uninteresting_blocks() -> None:
    data = (
        pcapng_section(LE, options=pcapng_option(4, b"a writer", LE) + pcapng_option(0, b"", LE))
        + pcapng_block(0x0BAD, b"custom block body", LE)
        + pcapng_interface(1, LE)
        + pcapng_block(4, b"\x00" * 12, LE)  # name resolution
        + pcapng_enhanced(0, 1, b"pkt", LE, options=pcapng_option(2, b"\x01\x00\x00\x00", LE))
        + pcapng_block(5, b"\x00" * 20, LE)  # interface statistics
        + pcapng_block(0x0A, b"secrets", LE)
    )  # decryption secrets
    assert [p.data for p in only_packets(data)] == [b"pkt"]


def test_pcapng_packet_naming_an_unknown_interface_is_reported_and_reading_goes_on() -> None:
    data = (
        pcapng_section(LE)
        + pcapng_interface(1, LE)
        + pcapng_enhanced(3, 1, b"lost", LE)
        + pcapng_enhanced(0, 1, b"kept", LE)
    )
    bad, good = packets(data)
    assert isinstance(bad, BadRecord) and bad.error.path == "pcapng.enhanced_packet.interface_id"
    assert isinstance(good, Packet) and good.data == b"kept" and good.index == 1


def test_pcapng_captured_length_beyond_its_block_is_reported() -> None:
    block = bytearray(pcapng_enhanced(0, 1, b"abcd", LE))
    struct.pack_into("<I", block, 20, 400)
    data = pcapng_section(LE) + pcapng_interface(1, LE) + bytes(block) + pcapng_enhanced(0, 1, b"ok", LE)
    bad, good = packets(data)
    assert isinstance(bad, BadRecord) and "captured" in bad.error.reason and isinstance(good, Packet)


def test_pcapng_broken_block_length_ends_the_file_with_a_report() -> None:
    block = bytearray(pcapng_enhanced(0, 1, b"abcd", LE))
    struct.pack_into("<I", block, 4, 30)  # not a multiple of 4
    data = pcapng_section(LE) + pcapng_interface(1, LE) + pcapng_enhanced(0, 1, b"a", LE) + bytes(block)
    records = packets(data)
    assert [type(r) for r in records] == [Packet, BadRecord]
    assert records[1].error.path == "pcapng.block.total_length"  # type: ignore[union-attr]


def test_pcapng_trailer_mismatch_is_reported() -> None:
    block = bytearray(pcapng_enhanced(0, 1, b"abcd", LE))
    struct.pack_into("<I", block, len(block) - 4, 64)
    records = packets(pcapng_section(LE) + pcapng_interface(1, LE) + bytes(block))
    assert isinstance(records[-1], BadRecord) and "trailing" in records[-1].error.path


def test_pcapng_cut_inside_a_block() -> None:
    data = pcapng_section(LE) + pcapng_interface(1, LE) + pcapng_enhanced(0, 1, b"abcdefgh", LE)
    records = packets(data[:-6])
    assert len(records) == 1 and isinstance(records[0], BadRecord) and "ends inside a block" in records[0].error.reason


def test_pcapng_bad_interface_options_are_reported_and_its_packets_too() -> None:
    bad_option = pcapng_option(9, b"\x06\x06", LE)  # if_tsresol must be one byte
    interface = pcapng_block(1, struct.pack("<HHI", 1, 0, 0) + bad_option, LE)
    data = pcapng_section(LE) + interface + pcapng_interface(101, LE) + pcapng_enhanced(1, 1, b"fine", LE)
    records = packets(data)
    assert isinstance(records[0], BadRecord) and "if_tsresol" in records[0].error.path
    assert isinstance(records[1], Packet) and records[1].link_type == 101 and records[1].interface == 1


def test_pcapng_option_running_past_its_block_is_reported() -> None:
    interface = pcapng_block(1, struct.pack("<HHI", 1, 0, 0) + struct.pack("<HH", 9, 200), LE)
    records = packets(pcapng_section(LE) + interface)
    assert isinstance(records[0], BadRecord) and "option 9" in records[0].error.reason


def test_pcapng_with_a_bad_byte_order_magic_is_not_a_capture() -> None:
    section = bytearray(pcapng_section(LE))
    section[8:12] = b"\x00\x00\x00\x00"
    with pytest.raises(CaptureFormatError, match="byte-order magic"):
        packets(bytes(section))


def test_pcapng_version_2_is_refused() -> None:
    section = bytearray(pcapng_section(LE))
    struct.pack_into("<H", section, 12, 2)
    with pytest.raises(CaptureFormatError, match=r"not 1\.x"):
        packets(bytes(section))


# -- damage never escapes as anything but our errors

VALID_FILES = [
    pcap_file(FRAMES, nanoseconds=True),
    pcap_file(FRAMES, big_endian=True),
    pcapng_section(LE)
    + pcapng_interface(1, LE, tsresol=9)
    + pcapng_interface(113, LE)
    + b"".join(pcapng_enhanced(i % 2, t, d, LE) for i, (t, d) in enumerate(FRAMES))
    + pcapng_simple(b"s", LE),
    pcapng_section(BE) + pcapng_interface(1, BE) + pcapng_obsolete_packet(0, 7, b"old", BE),
]


@settings(max_examples=300, deadline=None)
@given(
    which=st.sampled_from(range(len(VALID_FILES))),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.integers(0, 10_000),
)
def test_damaged_files_give_packets_bad_records_or_a_capture_format_error(
    which: int, edits: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(VALID_FILES[which])
    for position, value in edits:
        data[position % len(data)] = value
    data = data[: max(cut, 1)] if cut < len(data) else data
    try:
        records = packets(bytes(data))
    except CaptureFormatError:
        return
    for record in records:
        assert isinstance(record, Packet | BadRecord)
        if isinstance(record, Packet):
            assert len(record.data) <= len(data)


# -- the declarations and their fast twins agree


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize(
    "declaration, twin, names",
    [
        (
            formats.pcap_record_header,
            "pcap_record",
            ["ts_seconds", "ts_fraction", "captured_length", "original_length"],
        ),
        (formats.pcapng_block_header, "block_header", ["block_type", "block_total_length"]),
        (
            formats.pcapng_enhanced_packet_fixed,
            "enhanced_packet",
            ["interface_id", "ts_high", "ts_low", "captured_length", "original_length"],
        ),
        (
            formats.pcapng_obsolete_packet_fixed,
            "obsolete_packet",
            ["interface_id", "drops_count", "ts_high", "ts_low", "captured_length", "original_length"],
        ),
        (formats.pcapng_simple_packet_fixed, "simple_packet", ["original_length"]),
        (formats.pcapng_option_header, "option_header", ["code", "length"]),
        (
            formats.pcapng_section_header_body,
            "section_header",
            ["byte_order_magic", "version_major", "version_minor", "section_length"],
        ),
        (formats.pcapng_interface_description_body, "interface_description", ["link_type", "reserved", "snaplen"]),
        (
            formats.pcap_file_header,
            "pcap_file",
            ["magic", "version_major", "version_minor", "reserved1", "reserved2", "snaplen", "link_type_and_fcs"],
        ),
    ],
)
def test_fast_layouts_read_what_the_construct_declarations_declare(
    big_endian: bool, declaration: object, twin: str, names: list[str]
) -> None:
    struct_twin = getattr(formats.fast_layouts(big_endian), twin)
    declared = declaration(big_endian)  # type: ignore[operator]
    assert declared.sizeof() == struct_twin.size
    sample = os.urandom(struct_twin.size)
    parsed = declared.parse(sample)
    assert tuple(parsed[name] for name in names) == struct_twin.unpack(sample)
    if twin == "pcap_file":
        assert formats.read_pcap_file_header(big_endian, sample) == tuple(parsed[name] for name in names)


# -- write_pcap


@pytest.mark.parametrize("nanoseconds", [False, True])
@pytest.mark.parametrize("big_endian", [False, True])
def test_write_pcap_round_trips(tmp_path: Path, nanoseconds: bool, big_endian: bool) -> None:
    path = tmp_path / "out.pcap"
    assert write_pcap(path, FRAMES, 1, nanoseconds=nanoseconds, big_endian=big_endian) == 3
    expected = pcap_file(FRAMES, 1, big_endian=big_endian, nanoseconds=nanoseconds, snaplen=262144)
    assert path.read_bytes() == expected
    got = list(read_packets(path))
    assert [p.data for p in got] == [d for _, d in FRAMES]  # type: ignore[union-attr]


def test_write_pcap_takes_packets_and_file_objects() -> None:
    source = only_packets(pcap_file(FRAMES, nanoseconds=True))
    out = io.BytesIO()
    write_pcap(out, source, 1)
    assert only_packets(out.getvalue()) == source


@pytest.mark.parametrize(
    "packet, link_type, match",
    [
        ((0, b"x" * 70_000), 1, "snapshot length"),
        ((-1, b"x"), 1, "timestamp"),
        (((1 << 32) * 10**9, b"x"), 1, "timestamp"),
        ((0, b"x"), 70_000, "link type"),
    ],
)
def test_write_pcap_refuses_what_the_format_cannot_hold(packet: tuple[int, bytes], link_type: int, match: str) -> None:
    with pytest.raises(EncodeError, match=match):
        write_pcap(io.BytesIO(), [packet], link_type, snaplen=65535)


def test_construct_header_builds_what_the_writer_writes() -> None:
    header = formats.pcap_file_header(False).build(
        Container(
            magic=0xA1B23C4D,
            version_major=2,
            version_minor=4,
            reserved1=0,
            reserved2=0,
            snaplen=262144,
            link_type_and_fcs=113,
        )
    )
    out = io.BytesIO()
    write_pcap(out, [], 113)
    assert out.getvalue() == header


@pytest.mark.parametrize(
    ("tsresol", "timestamp"),
    [
        (0, (1 << 64) - 1),  # seconds: 2**64 of them
        (0, 586_524 * 365 * 86_400),  # the year 586524
        (3, (1 << 63) // 1000),  # milliseconds: one past the range
    ],
)
def test_a_pcapng_time_no_64_bit_nanosecond_count_holds_is_that_packet_s_error(tsresol: int, timestamp: int) -> None:
    good = [pcapng_enhanced(0, 1_700_000_000, frame) for _, frame in FRAMES]
    data = pcapng_section(LE) + pcapng_interface(1, LE, tsresol=tsresol) + good[0]
    data += pcapng_enhanced(0, timestamp, FRAMES[1][1]) + good[2]
    records = packets(data)
    assert [type(r) for r in records] == [Packet, BadRecord, Packet]  # the rest of the file is read
    bad = records[1]
    assert isinstance(bad, BadRecord) and bad.error.path == "pcapng.enhanced_packet.timestamp"
    assert "outside the years 1677-2262" in str(bad.error)


def test_the_last_representable_pcapng_time_is_kept() -> None:
    data = pcapng_section(LE) + pcapng_interface(1, LE, tsresol=9) + pcapng_enhanced(0, (1 << 63) - 1, FRAMES[0][1])
    (packet,) = packets(data)
    assert isinstance(packet, Packet) and packet.timestamp_ns == (1 << 63) - 1


def test_pcap_batches_hold_at_most_batch_records_and_every_record_in_order() -> None:
    count = 2 * pcap_reader.BATCH_RECORDS + 3  # (all in one read of the stream)
    frames = [(1_700_000_000_000_000_000 + n * 1000, bytes([n % 256]) * 60) for n in range(count)]
    data = pcap_file(frames, nanoseconds=True)
    batches = list(pcap_reader.read_pcap_batches(io.BytesIO(data[4:]), data[:4], max_record_size=1 << 16))
    assert [len(batch) for batch in batches] == [pcap_reader.BATCH_RECORDS, pcap_reader.BATCH_RECORDS, 3]
    records = [record for batch in batches for record in batch]
    assert [record.index for record in records] == list(range(count))
    assert [(r.timestamp_ns, r.data) for r in records] == frames  # type: ignore[union-attr]

"""A damaged pcap record does not shift the rest of the file: each record header is judged
(captured within original, fraction below a second, time near the file's and its neighbour's),
and one that cannot be a header is a bad record, reading going on where records chain again."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from capture_mutations import SAMPLES, as_pcapng

from kafka_epochs import Protocol
from kafka_epochs.capture import BadRecord, Packet, read_packets
from kafka_epochs.capture import split as parts
from kafka_epochs.capture.files.ranges import read_pcap_range
from kafka_epochs.traffic import decode_capture

CLIENTS = (SAMPLES / "clients.pcap").read_bytes()
AUTO = Protocol.auto()
HEADER = 24  # pcap file header
RECORD = 16  # pcap record header


def records(data: bytes) -> list[Packet]:
    return [p for p in read_packets(io.BytesIO(data)) if isinstance(p, Packet)]


def clean_pairs(data: bytes) -> int:
    return sum(1 for e in decode_capture(io.BytesIO(data), AUTO) if e.kind.value == "pair" and e.ok)


def test_a_packet_that_lost_bytes_costs_a_few_exchanges_not_the_rest_of_the_file() -> None:
    """Four bytes gone from inside one packet, its record header unchanged: the next header is
    read 4 bytes late. Before, that misreading ran on (most of the file gone, 0 bad records
    said until its end); now it is a bad record and reading goes on."""
    before = clean_pairs(CLIENTS)
    assert before == 58
    lost = []
    for packet in records(CLIENTS):
        if len(packet.data) < 60:
            continue
        cut = packet.offset + RECORD + len(packet.data) - 8
        damaged = CLIENTS[:cut] + CLIENTS[cut + 4 :]
        read = list(read_packets(io.BytesIO(damaged)))
        assert any(isinstance(r, BadRecord) for r in read), packet.index
        lost.append(before - clean_pairs(damaged))
    assert len(lost) > 100
    assert max(lost) <= 8 and sum(lost) / len(lost) < 3, lost


def _with_record(data: bytes, number: int, **fields: int) -> bytes:
    """``data`` with fields of record ``number``'s header overwritten (seconds, fraction, captured, original)."""
    packet = records(data)[number]
    header = list(struct.unpack_from("<IIII", data, packet.offset))
    for at, name in enumerate(("seconds", "fraction", "captured", "original")):
        if name in fields:
            header[at] = fields[name]
    return data[: packet.offset] + struct.pack("<IIII", *header) + data[packet.offset + RECORD :]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ({"seconds": 3}, "more than a year from the first record's"),  # decades before
        ({"fraction": 4_000_000_000}, "timestamp fraction 4000000000 is not below one second"),
        ({"captured": 38_864}, "captured length 38864 is more than the original length"),
    ],
)
def test_one_implausible_header_is_one_bad_record(tmp_path: Path, damage: dict[str, int], reason: str) -> None:
    whole = records(CLIENTS)
    damaged = _with_record(CLIENTS, 40, **damage)
    read = list(read_packets(io.BytesIO(damaged)))
    bad = [r for r in read if isinstance(r, BadRecord)]
    assert len(bad) == 1 and reason in str(bad[0].error) and bad[0].offset == whole[40].offset
    got = [(p.offset, p.data) for p in read if isinstance(p, Packet)]
    assert got == [(p.offset, p.data) for p in whole[:40] + whole[41:]]  # that record only
    assert clean_pairs(damaged) >= 56
    # read in byte ranges, cut anywhere near the damage, the file gives the same records
    path = tmp_path / "damaged.pcap"
    path.write_bytes(damaged)
    for cut in (whole[40].offset - 3, whole[40].offset + 5, whole[41].offset + 1):
        ranges = [
            r
            for start, end in ((HEADER, cut), (cut, len(damaged)))
            for r in read_pcap_range(path, start, end)
            if isinstance(r, Packet)
        ]
        assert [(p.offset, p.data) for p in ranges] == got, cut


def test_a_long_pause_between_real_records_is_not_damage() -> None:
    """Records more than a day apart that chain on are believed (a capture left running)."""
    later = bytearray(CLIENTS)
    for packet in records(CLIENTS)[60:]:
        seconds = struct.unpack_from("<I", later, packet.offset)[0]
        struct.pack_into("<I", later, packet.offset, seconds + 3 * 86_400)
    read = list(read_packets(io.BytesIO(bytes(later))))
    assert not any(isinstance(r, BadRecord) for r in read)
    assert len(read) == len(records(CLIENTS))


CLIENTS_NG = as_pcapng(CLIENTS)


def test_a_pcapng_block_that_lost_bytes_is_one_bad_record_and_reading_goes_on() -> None:
    """Its trailing length no longer matches: before, reading stopped there; now the blocks after
    it are found where blocks frame each other again."""
    before = clean_pairs(CLIENTS_NG)
    lost = []
    for packet in records(CLIENTS_NG):
        if len(packet.data) < 60:
            continue
        cut = packet.offset + 28 + len(packet.data) - 8  # inside the enhanced packet block's data
        damaged = CLIENTS_NG[:cut] + CLIENTS_NG[cut + 4 :]
        bad = [r for r in read_packets(io.BytesIO(damaged)) if isinstance(r, BadRecord)]
        assert len(bad) == 1 and bad[0].offset == packet.offset
        lost.append(before - clean_pairs(damaged))
    assert len(lost) > 100
    assert max(lost) <= 8 and sum(lost) / len(lost) < 3, lost


def _in_ranges(path: Path, range_bytes: int) -> list[tuple[int, bytes | None]]:
    name = str(path)
    counts = [parts.count_range(name, start, end) for start, end in parts.cut(path.stat().st_size, range_bytes)]
    lined_up = parts.line_up(name, counts)
    assert lined_up is not None
    return [
        (r.offset, r.data if isinstance(r, Packet) else None)
        for plan in lined_up.plans
        for r in parts.open_range(name, plan.start, plan.end, exact=plan.exact, time_before_ns=plan.time_before_ns)
    ]


@pytest.mark.parametrize("pcapng", [False, True])
def test_damaged_files_read_in_ranges_as_they_read_whole(tmp_path: Path, pcapng: bool) -> None:
    data = CLIENTS_NG if pcapng else CLIENTS
    packet = records(data)[70]
    cut = packet.offset + (28 if pcapng else RECORD) + len(packet.data) - 8
    damaged = data[:cut] + data[cut + 4 :]
    path = tmp_path / ("damaged.pcapng" if pcapng else "damaged.pcap")
    path.write_bytes(damaged)
    whole = [(r.offset, r.data if isinstance(r, Packet) else None) for r in read_packets(path)]
    assert any(data is None for _, data in whole)
    for range_bytes in (512, 1000, 4096, 20_000):
        assert _in_ranges(path, range_bytes) == whole, range_bytes

"""A pcap file read in byte ranges gives, range after range, exactly the records of the whole file."""

from __future__ import annotations

import gzip
import itertools
import random
from pathlib import Path

import pytest
from capture_mutations import as_pcapng
from packet_builders import pcap_file

from kafka_epochs.capture import Packet, read_packets
from kafka_epochs.capture.files.ranges import read_pcap_range, splittable

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"


def whole(path: Path) -> list[tuple[int, int, bytes, int]]:
    return [(p.offset, p.timestamp_ns, p.data, p.original_length) for p in read_packets(path) if isinstance(p, Packet)]


def in_ranges(path: Path, cuts: list[int]) -> list[tuple[int, int, bytes, int]]:
    bounds = [0, *cuts, path.stat().st_size]
    out = []
    for start, end in itertools.pairwise(bounds):
        for p in read_pcap_range(path, start, end):
            if isinstance(p, Packet):  # bad records are compared where a test damages the file
                assert p.index == -1
                out.append((p.offset, p.timestamp_ns, p.data, p.original_length))
    return out


@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
def test_real_captures_split_at_any_offset_read_as_whole(name: str) -> None:
    path = SAMPLES / name
    expected = whole(path)
    size = path.stat().st_size
    rng = random.Random(name)
    cuts = list(range(1, 600)) + rng.sample(range(600, size), 400)  # every offset near the start, then at random
    for cut in cuts:
        assert in_ranges(path, [cut]) == expected, cut
    for _ in range(50):
        assert in_ranges(path, sorted(rng.sample(range(1, size), 5))) == expected


def synthetic(tmp_path: Path, *, nanoseconds: bool, big_endian: bool) -> Path:
    rng = random.Random(7)
    frames = []
    time_ns = 1_700_000_000_000_000_000
    for _ in range(3000):
        time_ns += rng.randrange(1, 50_000_000)
        data = rng.randbytes(rng.choice((54, 60, rng.randrange(54, 1514))))
        frames.append((time_ns, data))
        if rng.random() < 0.01:
            frames.append((time_ns + 1000, data))  # a retransmission: the same bytes again
    path = tmp_path / "synthetic.pcap"
    path.write_bytes(pcap_file(frames, nanoseconds=nanoseconds, big_endian=big_endian, snaplen=65535))
    return path


@pytest.mark.parametrize(("nanoseconds", "big_endian"), [(False, False), (True, False), (True, True)])
def test_a_larger_capture_in_equal_ranges(tmp_path: Path, nanoseconds: bool, big_endian: bool) -> None:
    path = synthetic(tmp_path, nanoseconds=nanoseconds, big_endian=big_endian)
    expected = whole(path)
    size = path.stat().st_size
    for parts in (2, 3, 7, 64):
        cuts = [size * k // parts for k in range(1, parts)]
        assert in_ranges(path, cuts) == expected, parts


def test_ranges_past_the_last_record_are_empty(tmp_path: Path) -> None:
    path = SAMPLES / "sample.pcap"
    size = path.stat().st_size
    assert list(read_pcap_range(path, size - 3, size)) == []
    assert list(read_pcap_range(path, size, size + 100)) == []


def test_only_uncompressed_pcap_is_split(tmp_path: Path) -> None:
    data = (SAMPLES / "sample.pcap").read_bytes()
    (tmp_path / "a.pcapng").write_bytes(as_pcapng(data))
    (tmp_path / "a.pcap.gz").write_bytes(gzip.compress(data))
    assert splittable(SAMPLES / "sample.pcap")
    assert splittable(tmp_path / "a.pcapng") and not splittable(tmp_path / "a.pcap.gz")


def test_after_a_broken_record_a_range_finds_the_records_that_follow_it(tmp_path: Path) -> None:
    data = bytearray((SAMPLES / "sample.pcap").read_bytes())
    records = whole(SAMPLES / "sample.pcap")
    broken = records[40][0]  # the 41st record's header claims 2 GB
    data[broken + 8 : broken + 12] = (0x7FFFFFF0).to_bytes(4, "little")
    path = tmp_path / "broken.pcap"
    path.write_bytes(bytes(data))
    first = list(read_pcap_range(path, 0, records[60][0]))
    assert not isinstance(first[40], Packet) and first[40].offset == broken
    assert [p.offset for p in first if isinstance(p, Packet)] == [r[0] for r in records[:40] + records[41:60]]
    # split anywhere, the damaged file reads as it does whole
    size = len(data)
    expected = whole(path)
    assert [r[0] for r in expected] == [r[0] for r in records[:40] + records[41:]]
    for cut in range(broken - 40, broken + 200, 7):
        assert in_ranges(path, [cut]) == expected, cut
    assert in_ranges(path, [size // 3, 2 * size // 3]) == expected


def test_a_range_that_must_hold_records_and_finds_none_says_so(tmp_path: Path) -> None:
    path = synthetic(tmp_path, nanoseconds=False, big_endian=False)
    last = whole(path)[-1][0]
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 100_000] = bytes(100_000)  # longer than any record can be (snaplen 65535)
    path.write_bytes(bytes(data))
    got = list(read_pcap_range(path, middle + 10, middle + 90_000))
    assert len(got) == 1 and not isinstance(got[0], Packet)
    assert "no pcap record could be found" in str(got[0].error)
    # and the range after the zeros finds the records again
    after = [p for p in read_pcap_range(path, middle + 100_000, len(data)) if isinstance(p, Packet)]
    assert after and after[-1].offset == last


def test_a_length_past_the_end_of_the_file_is_one_bad_record_when_records_follow(tmp_path: Path) -> None:
    """A damaged captured length within the reader's bound but past the file's end: that record
    is bad, and the records after it are still read, whole and in ranges alike."""
    data = bytearray((SAMPLES / "sample.pcap").read_bytes())
    records = whole(SAMPLES / "sample.pcap")
    broken = records[30][0]
    data[broken + 8 : broken + 12] = (len(data) * 2).to_bytes(4, "little")  # under 16 MiB, past the end
    path = tmp_path / "long.pcap"
    path.write_bytes(bytes(data))
    got = list(read_packets(path))
    bad = [r for r in got if not isinstance(r, Packet)]
    assert [(b.index, b.offset) for b in bad] == [(30, broken)]
    assert "captured length" in str(bad[0].error) and "is more than the original length 119" in str(bad[0].error)
    assert whole(path) == records[:30] + records[31:]
    for cut in (broken - 5, broken + 3, broken + 500):
        assert in_ranges(path, [cut]) == whole(path), cut
    # a file that really is cut inside its last packet still ends with that one bad record
    path.write_bytes((SAMPLES / "sample.pcap").read_bytes()[:-10])
    tail = list(read_packets(path))
    assert not isinstance(tail[-1], Packet) and all(isinstance(r, Packet) for r in tail[:-1])

"""A pcap file read in byte ranges by many tasks gives exactly the rows of the file read whole."""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import pytest
from capture_mutations import as_pcapng, le_block, mutate, real_captures
from split_captures import busy_capture, learnt_port_capture, split_rows

from kafka_epochs.capture import split as parts
from kafka_epochs.frame_rows import FrameRow, capture_frames
from kafka_epochs.spark import split

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"


def whole(path: Path) -> list[FrameRow]:
    rows = list(capture_frames(str(path)))
    seqs = [r.seq for r in rows]
    assert len(set(seqs)) == len(seqs) and seqs == sorted(seqs)  # seq: unique, in reading order
    return rows


@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
@pytest.mark.parametrize("range_bytes", [97, 1000, 4096, 65536])
def test_real_captures(name: str, range_bytes: int) -> None:
    path = SAMPLES / name
    expected = whole(path)
    got, learnt = split_rows(path, range_bytes)
    assert got == expected
    if name == "clients.pcap":  # its brokers listen on ports learnt from the clients' handshakes
        assert len(learnt) == 3 and all(port != 9092 for _, port in learnt)


@pytest.mark.parametrize("range_bytes", [211, 1500, 9000])
def test_connections_across_ranges_with_segments_out_of_order_and_repeated(tmp_path: Path, range_bytes: int) -> None:
    path = tmp_path / "busy.pcap"
    path.write_bytes(busy_capture())
    expected = whole(path)
    assert len(expected) == 480 and not any(r.capture_error for r in expected)
    assert split_rows(path, range_bytes, shares=4)[0] == expected


def test_a_port_learnt_from_one_connection_makes_others_kafka_in_every_share(tmp_path: Path) -> None:
    path = tmp_path / "learnt.pcap"
    path.write_bytes(learnt_port_capture())
    expected = whole(path)
    clients = {r.client for r in expected}
    assert clients == {"10.0.2.1:41000", "10.0.2.2:42000", "10.0.2.3:43000"}
    for range_bytes in (300, 2000):
        got, learnt = split_rows(path, range_bytes, shares=0)
        assert [port for _, port in learnt] == [19092]
        assert got == expected
    # without being told, the connections without the handshake would be dropped
    untaught = split_rows(path, 2000, shares=0, teach=False)[0]
    assert {r.client for r in untaught} == {"10.0.2.2:42000"}


@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
@pytest.mark.parametrize("tsresol", [9, 6, 0])
def test_pcapng_captures(tmp_path: Path, name: str, tsresol: int) -> None:
    path = tmp_path / f"{name}.pcapng"
    path.write_bytes(as_pcapng((SAMPLES / name).read_bytes(), tsresol))
    expected = whole(path)
    for range_bytes in (100, 1000, 7000):
        assert split_rows(path, range_bytes)[0] == expected, range_bytes


def test_pcapng_connections_across_ranges_and_a_learnt_port(tmp_path: Path) -> None:
    busy, learnt = tmp_path / "busy.pcapng", tmp_path / "learnt.pcapng"
    busy.write_bytes(as_pcapng(busy_capture(connections=4, requests=25)))
    learnt.write_bytes(as_pcapng(learnt_port_capture()))
    for path in (busy, learnt):
        expected = whole(path)
        assert split_rows(path, 1500, shares=0)[0] == expected


def test_pcapng_that_describes_interfaces_again_is_not_split(tmp_path: Path) -> None:
    """A second section after the first packets: a range after it would need the blocks before
    it, so the line-up refuses, and the Spark read falls back to the whole file."""
    data = as_pcapng((SAMPLES / "sample.pcap").read_bytes())
    half = as_pcapng((SAMPLES / "clients.pcap").read_bytes(), tsresol=6)
    path = tmp_path / "two-sections.pcapng"
    path.write_bytes(data + half)
    counts = [parts.count_range(str(path), a, b) for a, b in parts.cut(path.stat().st_size, 4000)]
    assert any(c.redescribed for c in counts)
    assert parts.line_up(str(path), counts) is None
    # an interface added late, even in the first range, has the same effect
    late = tmp_path / "late-interface.pcapng"
    late.write_bytes(data + le_block(1, bytes(8)))
    assert parts.line_up(str(late), [parts.count_range(str(late), 0, late.stat().st_size)]) is None


def test_damaged_captures(tmp_path: Path) -> None:
    """Mutated real captures, pcap and pcapng (bit flips, absurd lengths, cuts, repeats): split
    equals whole."""
    rng = random.Random(20261126)
    captures = {k: v for k, v in real_captures().items() if k.endswith((".pcap", ".pcapng"))}
    tried = 0
    while tried < 120:
        name = rng.choice(sorted(captures))
        data, what, header = mutate(captures[name], rng)
        if header:
            continue  # a damaged file header: the file is not split (nor, maybe, a capture)
        tried += 1
        path = tmp_path / f"damaged-{name}"
        path.write_bytes(data)
        expected = list(capture_frames(str(path)))
        range_bytes = rng.choice([300, 1000, 2500, 9000])
        assert split_rows(path, range_bytes)[0] == expected, (name, what, range_bytes)


def test_line_up_restarts_a_range_where_the_records_before_lead() -> None:
    counts = [
        parts.RangeCount(0, 100, False, 3, 24, 80, 5, 130),  # its last record ends at 130
        parts.RangeCount(100, 200, False, 1, 150, 150, 6, 190),  # its search found 150, not 130
        parts.RangeCount(200, 300, False, 0, None, None, None, None),
        parts.RangeCount(300, 400, False, 2, 310, 350, 9, None),
    ]
    recounted = []

    def recount(path: str, start: int, end: int, exact: bool) -> parts.RangeCount:
        recounted.append((start, end, exact))
        return parts.RangeCount(start, end, exact, 2, 130, 160, 7, 450)  # a record from 160 to 450

    lined_up = parts.line_up("f", counts, recount)
    assert lined_up is not None
    plans, end, heads = lined_up
    assert recounted == [(130, 200, True)]
    assert plans[1] == parts.RangePlan(130, 200, True, 3, 5)
    # ranges 2 and 3 lie inside the record at 160: nothing is read there
    assert plans[2] == parts.RangePlan(300, 300, True, 5, 7) and plans[3] == parts.RangePlan(400, 400, True, 5, 7)
    assert end == parts.CaptureEnd(7, 4, 160) and heads == []


def test_ranges_cover_the_file() -> None:
    assert parts.cut(10, 4) == [(0, 4), (4, 8), (8, 10)]
    with pytest.raises(ValueError):
        parts.cut(10, parts.MAX_SEARCH + 1)


# -- on Spark ------------------------------------------------------------------------------------


def as_rows(df: Any) -> list[FrameRow]:
    return sorted((FrameRow(*(r[f] for f in FrameRow._fields)) for r in df.collect()), key=lambda r: (r.capture, r.seq))


def test_spark_reads_a_file_in_ranges_as_the_data_source_reads_it_whole(spark: Any, tmp_path: Path) -> None:
    busy = tmp_path / "busy.pcap"
    busy.write_bytes(busy_capture(connections=4, requests=30))
    ng = tmp_path / "clients.pcapng"
    ng.write_bytes(as_pcapng((SAMPLES / "clients.pcap").read_bytes()))
    two = tmp_path / "two-sections.pcapng"  # not split: read whole, by the data source
    two.write_bytes(ng.read_bytes() + as_pcapng((SAMPLES / "sample.pcap").read_bytes(), 6))
    for path, range_bytes in [(SAMPLES / "clients.pcap", 4096), (busy, 65536), (ng, 5000), (two, 5000)]:
        df = split.read_split(spark, path, range_bytes=range_bytes)
        assert as_rows(df) == whole(path.resolve())


def test_read_captures_splits_only_the_large_pcap_files(spark: Any, tmp_path: Path) -> None:
    from kafka_epochs.spark.job import read_captures

    (tmp_path / "busy.pcap").write_bytes(busy_capture(connections=3, requests=20))
    (tmp_path / "sample.pcap.gz").write_bytes(gzip.compress((SAMPLES / "sample.pcap").read_bytes()))
    (tmp_path / "clients.pcap").write_bytes((SAMPLES / "clients.pcap").read_bytes())
    expected = as_rows(read_captures(spark, [str(tmp_path)], split_bytes=0))
    assert {r.capture.rsplit("/", 1)[1] for r in expected} == {"busy.pcap", "sample.pcap.gz", "clients.pcap"}
    split_read = read_captures(spark, [str(tmp_path)], split_bytes=30_000)  # busy and clients are larger
    assert "MapInArrow" in split_read._jdf.queryExecution().analyzed().toString()
    assert as_rows(split_read) == expected


def test_a_count_keeps_only_the_first_packets_of_other_traffic(tmp_path: Path) -> None:
    """What the driver gets for port learning is bounded per connection start, however long a
    connection on another port talks."""
    from capture.packet_builders import Conversation, pcap_file

    web = Conversation(client=("10.0.3.1", 50000), broker=("10.0.3.2", 8080))
    web.handshake()
    for n in range(500):
        web.send("c", b"GET / HTTP/1.1\r\n\r\n")
        web.send("b", b"HTTP/1.1 200 OK\r\n\r\n" + bytes(n % 50))
    path = tmp_path / "web.pcap"
    path.write_bytes(pcap_file(web.frames))
    count = parts.count_range(str(path), 0, path.stat().st_size)
    assert count.records == 1003
    assert len(count.heads) == parts.HEADS_PER_START + 1  # the SYN-ACK restarts the quota
    assert whole(path) == [] == split_rows(path, 5000)[0]


def test_a_file_that_cannot_be_read_in_ranges_is_read_whole_and_reported(spark: Any, tmp_path: Path) -> None:
    """A pcap whose file header is broken, or no capture at all: never a failed job, the data
    source's one row saying why, as when the file is read whole."""
    broken = tmp_path / "broken.pcap"
    data = bytearray((SAMPLES / "sample.pcap").read_bytes())
    data[4:6] = (7).to_bytes(2, "little")  # pcap version 7.4
    broken.write_bytes(bytes(data))
    text = tmp_path / "notes.pcap"
    text.write_bytes(b"not a capture at all, but long enough to look at " * 100)
    for path in (broken, text):
        assert not parts.readable_in_ranges(str(path))
        rows = as_rows(split.read_split(spark, path, range_bytes=1000))
        assert rows == whole(path.resolve())
        assert len(rows) == 1 and rows[0].frame is None and "cannot read" in (rows[0].capture_error or "")

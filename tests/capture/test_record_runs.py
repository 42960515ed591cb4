"""Records read in runs (a buffer and where each packet lies in it, no packet made for a lane's
record) give the pipeline exactly the events, counts and packets that the same records give it
made one by one, on real, damaged and hand-made captures, pcap and pcapng alike."""

from __future__ import annotations

import io
import itertools
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from capture_mutations import damaged, real_captures
from packet_builders import (
    ACK,
    PSH,
    Conversation,
    ethernet,
    ipv4,
    pcapng_enhanced,
    pcapng_interface,
    pcapng_section,
    pcapng_simple,
    request_frame,
    sll,
    tcp,
)
from test_pipeline_lanes import comparable

from kafka_epochs.capture import BadRecord, Gap, Packet, read_packets
from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.files.pcap import BATCH_RECORDS
from kafka_epochs.capture.files.reader import read_packet_batches
from kafka_epochs.capture.files.runs import RecordRun
from kafka_epochs.capture.network.link import LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL
from kafka_epochs.capture.pipeline import StreamPipeline
from kafka_epochs.values import fields_of

CAPTURES = real_captures()


def by_runs(data: bytes) -> tuple[list[Any], dict[str, Any]]:
    """The events and counts of a capture fed as the readers give it (runs, and bad records)."""
    pipeline = StreamPipeline()
    events: list[Any] = []
    try:
        for batch in read_packet_batches(io.BytesIO(data)):
            events += pipeline.records(batch)
    except CaptureFormatError as e:
        events.append(("refused", str(e)))
    events += pipeline.finish()
    return [comparable(event) for event in events], fields_of(pipeline.stats)


def one_by_one(
    records: list[Packet | BadRecord] | None, refused: str | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """The same, fed one record at a time (each packet a run of its own, made from the packet)."""
    pipeline = StreamPipeline()
    events: list[Any] = []
    for record in records or ():
        events += pipeline.record(record)
    if refused is not None:
        events.append(("refused", refused))
    events += pipeline.finish()
    return [comparable(event) for event in events], fields_of(pipeline.stats)


def records_of(data: bytes) -> tuple[list[Packet | BadRecord], str | None]:
    got: list[Packet | BadRecord] = []
    try:
        for record in read_packets(io.BytesIO(data)):
            got.append(record)
    except CaptureFormatError as e:
        return got, str(e)
    return got, None


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_runs_give_the_events_of_the_packets_one_by_one(name: str) -> None:
    data = CAPTURES[name]
    runs = by_runs(data)
    assert runs == one_by_one(*records_of(data))
    assert sum(1 for event in runs[0] if type(event).__name__ == "StreamData") > 0  # (the capture has Kafka data)


@pytest.mark.parametrize("seed", range(4))
def test_runs_give_the_events_of_the_packets_one_by_one_on_damaged_captures(seed: int) -> None:
    for data, _ in damaged(CAPTURES, seed, 15):
        assert by_runs(data) == one_by_one(*records_of(data))


def test_a_run_gives_back_the_packets_the_reader_made_before_runs() -> None:
    """Each packet of a run (its bytes, time, index, record offset and length on the wire) is the
    one the record holds, read here with ``struct`` from the file's bytes by hand."""
    data = CAPTURES["clients.pcap"]
    fraction_ns = {0xA1B2C3D4: 1000, 0xA1B23C4D: 1}[struct.unpack_from("<I", data)[0]]
    pos, index, expected = 24, 0, []
    while pos < len(data):
        seconds, fraction, captured, original = struct.unpack_from("<IIII", data, pos)
        start = pos + 16
        time_ns = seconds * 10**9 + fraction * fraction_ns
        expected.append((time_ns, data[start : start + captured], index, original, pos))
        pos, index = start + captured, index + 1
    got = [(p.timestamp_ns, p.data, p.index, p.original_length, p.offset) for p in read_packets(io.BytesIO(data))]
    assert got == expected


def conversation_frames(*payloads: bytes) -> list[bytes]:
    """A handshake, then each payload from the client."""
    conversation = Conversation()
    conversation.handshake()
    for payload in payloads:
        conversation.send("c", payload)
    return [frame for _, frame in conversation.frames]


def test_runs_keep_what_the_snapshot_length_cut() -> None:
    frames = conversation_frames(b"\x00" * 200)[2:]
    section = pcapng_section() + pcapng_interface(LINKTYPE_ETHERNET, snaplen=80)
    blocks = [pcapng_enhanced(0, 1_000 + n, frame[:80], original_length=len(frame)) for n, frame in enumerate(frames)]
    (run,) = list(read_packet_batches(io.BytesIO(section + b"".join(blocks))))
    assert isinstance(run, RecordRun)
    assert [(p.data, p.original_length) for p in run] == [(f[:80], len(f)) for f in frames]
    assert run[-1].original_length == len(frames[1]) and run[0].original_length == len(frames[0])
    with pytest.raises(IndexError):
        run[2]


def test_pcapng_runs_hold_one_interface_and_at_most_a_batch_and_keep_the_order() -> None:
    count = 120 + BATCH_RECORDS + 40
    blocks = b""
    expected = []
    for n in range(count):
        interface = 0 if n < 100 or n >= 120 else 1  # twenty in the middle on the second interface
        data = bytes([n % 256]) * (60 + n % 7)
        blocks += pcapng_enhanced(interface, 1_700_000_000_000_000 + n, data)
        expected.append((interface, data, n))
    data = pcapng_section() + pcapng_interface(LINKTYPE_ETHERNET) + pcapng_interface(LINKTYPE_ETHERNET) + blocks
    batches = list(read_packet_batches(io.BytesIO(data)))
    assert all(isinstance(batch, RecordRun) for batch in batches)
    assert [len(batch) for batch in batches] == [100, 20, BATCH_RECORDS, 40]
    assert [{p.interface for p in batch} for batch in batches] == [{0}, {1}, {0}, {0}]
    assert [(p.interface, p.data, p.index) for batch in batches for p in batch] == expected


def test_a_simple_packet_block_after_a_run_takes_the_time_of_the_runs_last_packet() -> None:
    """A simple packet block has no time of its own: it is given the last one read, which the
    quick way through a run of enhanced blocks must leave behind as the general way would."""
    blocks = b"".join(pcapng_enhanced(0, 1_700_000_000_000_000 + 1_000 * n, bytes(60)) for n in range(5))
    data = pcapng_section() + pcapng_interface(LINKTYPE_ETHERNET) + blocks + pcapng_simple(bytes(61))
    packets = [p for batch in read_packet_batches(io.BytesIO(data)) for p in batch]
    assert [p.index for p in packets] == list(range(6))
    assert packets[-1].timestamp_ns == packets[-2].timestamp_ns == 1_700_000_000_004_000_000


def test_pipeline_given_a_list_of_mixed_links_and_bad_records_takes_each_in_its_place() -> None:
    """A list from a reader of its own: packets of two link types and a bad record between them
    give the events they give one by one (the list is cut in runs of one link type)."""
    frames = conversation_frames(request_frame(18, 3, 1))
    records: list[Packet | BadRecord] = []
    for n, frame in enumerate(frames):
        if n == 2:
            ip = frame[14:]  # the same segment, cooked (Linux SLL) this time
            records.append(Packet(1_000 + n, LINKTYPE_LINUX_SLL, sll(ip), 0, n, len(ip) + 16))
        else:
            records.append(Packet(1_000 + n, LINKTYPE_ETHERNET, frame, 0, n, len(frame)))
    records.insert(3, BadRecord(9, 99, CaptureFormatError("damaged", 99, "pcap.record")))
    pipeline = StreamPipeline()
    together = [comparable(event) for event in [*pipeline.records(records), *pipeline.finish()]]
    assert (together, fields_of(pipeline.stats)) == one_by_one(records)
    assert fields_of(pipeline.stats)["bad_packets"] == 1


def test_reading_a_pcapng_capture_does_not_import_construct(tmp_path: Path) -> None:
    """construct (with inspect, pdb, pickle, hashlib) cost a pcapng capture's decode more than a
    tenth of its instructions, for two blocks a section: the readers use the struct twins."""
    capture = tmp_path / "clients.pcapng"
    capture.write_bytes(CAPTURES["clients.pcapng"])
    script = (
        "import sys, io, contextlib\n"
        "from kafka_epochs.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['decode', {str(capture)!r}, '--quiet'])\n"
        "print('construct' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.strip() == "False", done.stderr


def test_a_lane_never_reads_past_its_packet_in_the_run() -> None:
    """A lane reads headers at the packet's place in the run's buffer: a segment whose IP length
    claims more than its record holds (the next packet's bytes follow it in the buffer) goes the
    layered way, as it did when each packet had bytes of its own."""
    frames = conversation_frames(request_frame(18, 3, 1))
    segment = tcp(50000, 9092, 1001 + len(request_frame(18, 3, 1)), 5001, ACK | PSH, request_frame(3, 12, 2))
    lying = ethernet(ipv4("10.0.0.1", "10.0.0.2", segment, total_length=20 + len(segment) + 50))
    frames += [lying, *conversation_frames(request_frame(18, 3, 1), request_frame(3, 12, 2))[4:]]
    records: list[Packet | BadRecord] = [
        Packet(1_000 + n, LINKTYPE_ETHERNET, frame, 0, n, len(frame)) for n, frame in enumerate(frames)
    ]
    pipeline = StreamPipeline()
    together = [comparable(event) for event in [*pipeline.records(records), *pipeline.finish()]]
    assert (together, fields_of(pipeline.stats)) == one_by_one(records)
    assert any(type(event) is Gap for event in together)  # (the 50 bytes it claims and lacks)


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_a_run_read_by_record_gives_each_record_the_events_it_gives_alone(seed: int | None) -> None:
    """``run_by_record`` (what the frame tables key by record) cuts a run's events where each
    record's begin: record by record, the events ``record`` gives that packet alone."""
    inputs = (
        [CAPTURES[name] for name in sorted(CAPTURES)] if seed is None else [d for d, _ in damaged(CAPTURES, seed, 8)]
    )
    for data in inputs:
        by_run: list[Any] = []
        alone: list[Any] = []
        runs, single = StreamPipeline(), StreamPipeline()
        try:
            for batch in read_packet_batches(io.BytesIO(data)):
                if isinstance(batch, RecordRun):
                    events, starts = runs.run_by_record(batch)
                    assert len(starts) == len(batch) and starts == sorted(starts)
                    starts.append(len(events))
                    by_run += [[comparable(e) for e in events[a:b]] for a, b in itertools.pairwise(starts)]
                else:
                    by_run += [[comparable(e) for e in runs.record(record)] for record in batch]
                alone += [[comparable(e) for e in single.record(record)] for record in batch]
        except CaptureFormatError:
            pass
        assert by_run == alone
        assert fields_of(runs.stats) == fields_of(single.stats)


def test_run_by_record_refuses_a_pipeline_with_sinks() -> None:
    """Sinks replace events as they are delivered, so marks into the list would not hold."""

    class NoSinks:
        def sink(self, flow: Any, direction: Any, max_frame_size: int) -> None:
            return None

        def deliver(self, events: list[Any], start: int) -> None:
            pass

    (run,) = [b for b in read_packet_batches(io.BytesIO(CAPTURES["sample.pcap"])) if isinstance(b, RecordRun)][:1]
    with pytest.raises(ValueError, match="without sinks"):
        StreamPipeline(sinks=NoSinks()).run_by_record(run)
    events, starts = StreamPipeline().run_by_record(run)
    assert len(starts) == len(run) and events

"""The pipeline's sinks (frames taken straight from a lane) give a reader what the events would:
the same frames, at the same offsets, in the same order among everything else, on real,
damaged and misbehaving captures, whether the sink takes, refuses or is not given a frame."""

from __future__ import annotations

import io
import zlib
from typing import Any

import pytest
from capture_mutations import damaged, real_captures
from hypothesis import given, settings
from hypothesis import strategies as st
from packet_builders import pcap_file
from test_pipeline_lanes import STEP, _story_frames

from kafka_epochs.capture import (
    CaptureFormatError,
    Direction,
    Flow,
    Gap,
    PacketError,
    Resync,
    StreamData,
    StreamEnd,
    StreamStart,
    read_packets,
)
from kafka_epochs.capture.pipeline import FrameSink, StreamPipeline
from kafka_epochs.capture.streams import CaptureStreams
from kafka_epochs.capture.synth import RecordedConnection, write_capture

CAPTURES = real_captures()


class Reader:
    """Cuts each direction's frames as a reader of the events would (a buffer per direction,
    dropped at a gap or resync), and logs them with everything else that happens, in order.
    As the pipeline's sinks, it takes frames straight from the lanes while it holds nothing of
    the direction, and the rest of a frame it holds the start of, and refuses the frames and
    rests that ``refuse`` names (they reach it again as events)."""

    def __init__(self, refuse: int) -> None:
        self.refuse = refuse  # refuse a frame or rest whose crc32 is divisible by this (0: none)
        self.buffers: dict[tuple[Flow, Direction], tuple[bytearray, list[int]]] = {}
        self.taken = 0  # frames taken by a sink
        self.continued = 0  # rests of frames taken by a sink

    # -- as the pipeline's Sinks

    def sink(self, flow: Flow, direction: Direction, max_frame_size: int) -> FrameSink | None:
        held, offset = self.buffers.setdefault((flow, direction), (bytearray(), [0]))
        if (flow.client.port + (direction is Direction.CLIENT_TO_BROKER)) % 5 == 0:
            return None  # a direction whose reader takes no sink: its data stays events

        def sink(data: bytes, timestamp_ns: int, out: list[Any], inside: bool) -> int:
            if inside:
                assert held, "the rest of a frame whose start the reader was not given"
                if self._refused(data):
                    return 0
                self.continued += 1
                self._more(flow, direction, held, offset, data, timestamp_ns, out)
                return len(data)
            if held:
                return 0
            pos = 0
            while len(data) - pos >= 4:
                size = int.from_bytes(data[pos : pos + 4], "big", signed=True)
                end = pos + 4 + size
                if not 0 <= size <= max_frame_size or end > len(data) or self._refused(data[pos:end]):
                    break
                out.append(("frame", flow, direction, offset[0], bytes(data[pos:end]), timestamp_ns))
                offset[0] += end - pos
                self.taken += 1
                pos = end
            return pos

        return sink

    def deliver(self, events: list[Any], start: int) -> None:
        events[start:] = self.read(events[start:])

    # -- as a reader of events

    def read(self, events: list[Any]) -> list[Any]:
        made: list[Any] = []
        for event in events:
            if type(event) is tuple:
                made.append(event)  # what a sink made (or, delivered early, what the events made)
            elif type(event) is StreamData:
                held, offset = self.buffers.setdefault((event.flow, event.direction), (bytearray(), [0]))
                if not held:
                    offset[0] = event.stream_offset  # (a chunk that starts a frame says where it is)
                self._more(event.flow, event.direction, held, offset, event.data, event.timestamp_ns, made)
            elif type(event) in (Gap, Resync):
                held, offset = self.buffers.setdefault((event.flow, event.direction), (bytearray(), [0]))
                offset[0] = event.stream_offset + (event.length if type(event) is Gap else 0)
                held.clear()
                made.append(("event", event))
            elif type(event) is StreamEnd:
                self.buffers.pop((event.flow, event.direction), None)
                made.append(("event", event))
            elif type(event) in (StreamStart, PacketError):
                made.append(("event", comparable(event)))
        return made

    @staticmethod
    def _more(
        flow: Flow, direction: Direction, held: bytearray, offset: list[int], data: bytes, at: int, made: list[Any]
    ) -> None:
        """A direction's next bytes: the frames they complete, logged."""
        held += data
        while len(held) >= 4:
            end = 4 + int.from_bytes(held[:4], "big", signed=True)
            if len(held) < end:
                break
            made.append(("frame", flow, direction, offset[0], bytes(held[:end]), at))
            offset[0] += end
            del held[:end]

    def _refused(self, frame: bytes) -> bool:
        return self.refuse > 0 and zlib.crc32(frame) % self.refuse == 0


def comparable(event: Any) -> Any:
    if isinstance(event, PacketError):
        return (event.packet, event.timestamp_ns, type(event.error), str(event.error))
    return event


def run(data: bytes, sinks: bool, refuse: int = 0, batch: int = 1) -> tuple[list[Any], int]:
    """What the reader logs of a capture (with sinks or without), its records given to the
    pipeline ``batch`` at a time, and how many frames sinks took."""
    reader = Reader(refuse)
    pipeline = StreamPipeline(sinks=reader if sinks else None)
    log: list[Any] = []
    records: list[Any] = []
    try:
        for record in read_packets(io.BytesIO(data)):
            records.append(record)
            if len(records) == batch:
                log += reader.read(pipeline.records(records))
                records = []
    except CaptureFormatError as e:
        log.append(("refused", str(e)))
    log += reader.read(pipeline.records(records))
    log += reader.read(list(pipeline.finish()))
    return log, reader.taken


def assert_same(data: bytes, refuse: int = 0) -> int:
    """The reader's log with sinks equals its log without, whether the records come one at a
    time or in batches (where a sink's connection has events before it in the same batch);
    the frames sinks took."""
    without, none = run(data, False)
    assert none == 0
    taken = 0
    for batch in (1, 7, 1_000_000):
        with_sinks, taken = run(data, True, refuse, batch)
        assert len(with_sinks) == len(without)
        for number, (a, b) in enumerate(zip(with_sinks, without, strict=True)):
            assert a == b, f"item {number} differs (batches of {batch})"
    return taken


def test_real_captures_give_the_events_frames() -> None:
    for name, data in CAPTURES.items():
        for refuse in (0, 3):
            taken = assert_same(data, refuse)
            if name.endswith(".pcap"):
                assert taken > 10, f"{name}: no sink took frames"


def test_damaged_real_captures_give_the_events_frames() -> None:
    for mutated, rng in damaged(CAPTURES, 16, 60):
        assert_same(mutated, rng.choice((0, 2, 7)))


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=40), options=st.booleans(), refuse=st.sampled_from([0, 2, 5]))
def test_misbehaving_connections_give_the_events_frames(
    steps: list[tuple[int, int, int, int, int, int]], options: bool, refuse: int
) -> None:
    assert_same(pcap_file(_story_frames(steps, options), nanoseconds=True), refuse)


def recut(data: bytes, mss: int) -> bytes:
    """A capture of the same connections whose data is cut into segments of ``mss`` bytes or
    fewer (frames then cross packets: the rest of a frame is offered to its sink)."""
    connections: dict[Flow, RecordedConnection] = {}
    for event in CaptureStreams(io.BytesIO(data), align_frames=False):
        if type(event) is StreamData:
            flow = event.flow
            recorded = connections.get(flow)
            if recorded is None:
                ends = ((flow.client.address, flow.client.port), (flow.broker.address, flow.broker.port))
                recorded = connections[flow] = RecordedConnection(*ends)
            side = "client" if event.direction is Direction.CLIENT_TO_BROKER else "broker"
            recorded.chunks.append((event.timestamp_ns, side, event.data))
    out = io.BytesIO()
    write_capture(out, list(connections.values()), mss=mss)
    return out.getvalue()


@pytest.mark.parametrize("mss", [300, 90, 3])
def test_frames_across_packets_give_the_events_frames(mss: int) -> None:
    recut_capture = recut(CAPTURES["clients.pcap"], mss)
    continued = 0
    for refuse in (0, 3):
        assert_same(recut_capture, refuse)
        reader = Reader(refuse)
        pipeline = StreamPipeline(sinks=reader)
        reader.read(pipeline.records(list(read_packets(io.BytesIO(recut_capture)))))
        continued += reader.continued
    assert continued >= 10  # (the rests of frames were offered, and taken)


def test_without_lanes_no_sink_is_asked() -> None:
    reader = Reader(0)
    pipeline = StreamPipeline(sinks=reader, lanes=False)
    for record in read_packets(io.BytesIO(CAPTURES["clients.pcap"])):
        pipeline.record(record)
    assert reader.taken == 0 and not reader.buffers

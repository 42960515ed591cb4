"""Frame boundaries: the default predicates, find_frame_start, and keeping streams frame-aligned."""

from __future__ import annotations

import random
import re
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packet_builders import request_frame, response_frame

from kafka_epochs.capture import (
    CaptureStats,
    Direction,
    Discarded,
    Endpoint,
    EndReason,
    Flow,
    FlowEvent,
    FrameRule,
    Gap,
    GapReason,
    Resync,
    ResyncReason,
    StreamData,
    StreamEnd,
    StreamStart,
    find_frame_start,
    plausible_request,
    plausible_response,
)
from kafka_epochs.capture.alignment.aligner import FrameAligner
from kafka_epochs.capture.alignment.rules import REQUEST_RULE, RESPONSE_RULE
from kafka_epochs.resync import REQUEST_CANDIDATES, RESPONSE_CANDIDATES

FLOW = Flow(Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092))
C2B, B2C = Direction.CLIENT_TO_BROKER, Direction.BROKER_TO_CLIENT

REQUESTS = [request_frame(1, 13, 100 + i, "consumer-1", bytes(range(40)) * (i + 1)) for i in range(6)]
RESPONSES = [response_frame(100 + i, b"\x00\x00" + bytes(range(200)) * (i + 1)) for i in range(6)]


# -- predicates


def test_default_request_predicate() -> None:
    frame = request_frame(18, 3, 7, "app")
    assert plausible_request(frame, 0)
    assert plausible_request(request_frame(0, 9, 1, None, b"body"), 0)  # null client id
    assert not plausible_request(frame, 1)
    assert not plausible_request(frame[:13], 0)  # too few bytes to judge
    assert not plausible_request(request_frame(101, 3, 7), 0)  # api key out of range
    assert not plausible_request(request_frame(3, 31, 7), 0)  # api version out of range
    assert not plausible_request(request_frame(3, 1, -5), 0)  # negative correlation id
    assert not plausible_request(request_frame(3, 1, 7, "bad\x01id"), 0)  # control byte in the client id
    assert plausible_request(request_frame(3, 1, 7, "caf\u00e9"), 0)  # UTF-8 is fine
    too_long_id = bytearray(frame)
    struct.pack_into(">h", too_long_id, 12, 500)
    assert not plausible_request(bytes(too_long_id), 0)
    tiny = struct.pack(">ihhi", 6, 3, 1, 7)
    assert not plausible_request(tiny + b"\x00\x00", 0)
    huge = bytearray(frame)
    struct.pack_into(">i", huge, 0, 100 * 1024 * 1024 + 1)
    assert not plausible_request(bytes(huge), 0)


def test_default_response_predicate() -> None:
    assert plausible_response(response_frame(7), 0)  # 6 bytes: a version-0 Heartbeat response
    assert not plausible_response(response_frame(-1), 0)
    assert not plausible_response(struct.pack(">ii", 5, 1), 0)
    assert not plausible_response(struct.pack(">i", 10), 0)
    assert not plausible_response(bytearray(struct.pack(">ii", 0x7FFFFFFF, 1)), 0)


def test_find_frame_start_with_and_without_candidates() -> None:
    data = b"\x00" * 50 + b"garbage" + REQUESTS[0] + REQUESTS[1]
    assert find_frame_start(data, 0, plausible_request) == 57
    assert find_frame_start(data, 0, plausible_request, candidates=REQUEST_CANDIDATES) == 57
    assert find_frame_start(data, 58, plausible_request, candidates=REQUEST_CANDIDATES) == 57 + len(REQUESTS[0])
    assert find_frame_start(data, 0, plausible_request, end=57) is None
    assert find_frame_start(b"", 0, plausible_request) is None
    assert find_frame_start(data, -5, plausible_request, candidates=REQUEST_CANDIDATES) == 57


@settings(max_examples=300, deadline=None)
@given(
    noise=st.binary(max_size=300),
    frames=st.lists(st.sampled_from(REQUESTS + RESPONSES), max_size=4),
    seed=st.integers(0, 1000),
)
def test_candidate_patterns_never_hide_a_plausible_offset(noise: bytes, frames: list[bytes], seed: int) -> None:
    pieces = [noise, *frames]
    random.Random(seed).shuffle(pieces)
    data = b"".join(pieces)
    for pattern, plausible in ((REQUEST_CANDIDATES, plausible_request), (RESPONSE_CANDIDATES, plausible_response)):
        for offset in range(len(data)):
            if plausible(data, offset):
                assert re.compile(pattern).match(data, offset), (offset, data[offset : offset + 16].hex())
        assert find_frame_start(data, 0, plausible, candidates=pattern) == find_frame_start(data, 0, plausible)


# -- the aligner


def align(events: list[FlowEvent], rule: FrameRule | None = None, direction: Direction = C2B) -> list[FlowEvent]:
    rule = rule or (REQUEST_RULE if direction is C2B else RESPONSE_RULE)
    aligner = FrameAligner(FLOW, direction, rule, CaptureStats())
    out: list[FlowEvent] = []
    for event in events:
        aligner.feed(event, out)
        assert aligner.clean == _clean(aligner)
    return out


def _clean(aligner: FrameAligner) -> bool:
    """What ``FrameAligner.clean`` sums up, from the state it sums (kept by each step, read by the lanes)."""
    return aligner._synced and aligner._skip_to < 0 and not aligner._header


def chunks_of(data: bytes, size: int, start: int = 0, direction: Direction = C2B) -> list[FlowEvent]:
    return [
        StreamData(FLOW, direction, start + i, start + i, start + i, data[i : i + size])
        for i in range(0, len(data), size)
    ]


def begin(midstream: bool, direction: Direction = C2B) -> StreamStart:
    return StreamStart(FLOW, direction, 0, 0, 1, midstream)


def end(offset: int, direction: Direction = C2B) -> StreamEnd:
    return StreamEnd(FLOW, direction, 99, offset, EndReason.FIN)


def gap(offset: int, length: int, direction: Direction = C2B) -> Gap:
    return Gap(FLOW, direction, 50, 50, offset, length, 0, GapReason.ACKED_UNSEEN)


def delivered(events: list[FlowEvent]) -> list[tuple[int, bytes]]:
    """(offset, bytes) runs of contiguous data, split at every non-data event."""
    runs: list[tuple[int, bytes]] = []
    current: tuple[int, bytearray] | None = None
    for event in events:
        if isinstance(event, StreamData):
            if current is None:
                current = (event.stream_offset, bytearray())
            assert event.stream_offset == current[0] + len(current[1])
            current[1].extend(event.data)
        elif current is not None:
            runs.append((current[0], bytes(current[1])))
            current = None
    if current is not None:
        runs.append((current[0], bytes(current[1])))
    return runs


_PRINTABLE = bytes(0x20 + b % 95 for b in range(256))


def printable_noise(size: int, seed: int) -> bytes:
    """Random printable bytes: no Kafka frame can start in them (a size's top byte is at most 6)."""
    return random.Random(seed).randbytes(size).translate(_PRINTABLE)


def kinds(events: list[FlowEvent]) -> list[str]:
    names: list[str] = []
    for event in events:
        name = type(event).__name__
        if not names or names[-1] != name or name != "StreamData":
            names.append(name)
    return names


def test_synced_stream_passes_through_untouched() -> None:
    data = b"".join(REQUESTS)
    events: list[FlowEvent] = [begin(False), *chunks_of(data, 7), end(len(data))]
    out = align(events)
    assert all(a is b for a, b in zip(out, events, strict=True))


@pytest.mark.parametrize("chunk", [1, 3, 64, 5000])
def test_mid_stream_start_resyncs_on_the_next_frame(chunk: int) -> None:
    data = b"".join(REQUESTS)
    cut = len(REQUESTS[0]) + 25  # inside the second frame
    tail = data[cut:]
    out = align([begin(True), *chunks_of(tail, chunk), end(len(tail))])
    boundary = len(REQUESTS[0]) + len(REQUESTS[1]) - cut
    assert kinds(out) == ["StreamStart", "Discarded", "Resync", "StreamData", "StreamEnd"]
    discarded = next(e for e in out if isinstance(e, Discarded))
    resync = next(e for e in out if isinstance(e, Resync))
    assert (discarded.stream_offset, discarded.length) == (0, boundary)
    assert (resync.stream_offset, resync.reason) == (boundary, ResyncReason.MIDSTREAM_START)
    assert delivered(out) == [(boundary, tail[boundary:])]


def test_mid_stream_responses_resync_too() -> None:
    data = b"".join(RESPONSES)
    tail = data[30:]
    out = align([begin(True, B2C), *chunks_of(tail, 100, direction=B2C), end(len(tail), B2C)], direction=B2C)
    boundary = len(RESPONSES[0]) - 30
    assert delivered(out) == [(boundary, tail[boundary:])]


def test_resync_keeps_each_chunk_timestamp() -> None:
    tail = b"".join(REQUESTS)[10:]
    out = align([begin(True), *chunks_of(tail, 50), end(len(tail))])
    data = [e for e in out if isinstance(e, StreamData)]
    assert all(e.timestamp_ns <= e.stream_offset < e.timestamp_ns + 50 for e in data)


def test_gap_inside_a_frame_skips_to_its_announced_end() -> None:
    a, b, c = REQUESTS[:3]
    lost_from, lost_to = len(a) + 20, len(a) + 40
    data = a + b + c
    events: list[FlowEvent] = [
        begin(False),
        *chunks_of(data[:lost_from], 16),
        gap(lost_from, lost_to - lost_from),
        *chunks_of(data[lost_to:], 16, lost_to),
        end(len(data)),
    ]
    out = align(events)
    assert kinds(out) == ["StreamStart", "StreamData", "Gap", "Discarded", "Resync", "StreamData", "StreamEnd"]
    resync = next(e for e in out if isinstance(e, Resync))
    assert (resync.stream_offset, resync.reason) == (len(a) + len(b), ResyncReason.GAP_INSIDE_FRAME)
    discarded = next(e for e in out if isinstance(e, Discarded))
    assert (discarded.stream_offset, discarded.length) == (lost_to, len(a) + len(b) - lost_to)
    assert delivered(out) == [(0, data[:lost_from]), (len(a) + len(b), c)]


def test_gap_ending_exactly_at_a_boundary_resyncs_without_discarding() -> None:
    a, b, c = REQUESTS[:3]
    data = a + b + c
    events: list[FlowEvent] = [
        begin(False),
        *chunks_of(data[: len(a) + 10], 9),
        gap(len(a) + 10, len(b) - 10),
        *chunks_of(data[len(a) + len(b) :], 9, len(a) + len(b)),
        end(len(data)),
    ]
    out = align(events)
    assert kinds(out) == ["StreamStart", "StreamData", "Gap", "Resync", "StreamData", "StreamEnd"]


def test_gap_across_a_boundary_searches() -> None:
    a, b, c, d = REQUESTS[:4]
    data = a + b + c + d
    lost_from, lost_to = len(a) - 5, len(a) + 10  # a's end and b's header
    events: list[FlowEvent] = [
        begin(False),
        *chunks_of(data[:lost_from], 20),
        gap(lost_from, lost_to - lost_from),
        *chunks_of(data[lost_to:], 20, lost_to),
        end(len(data)),
    ]
    out = align(events)
    resync = next(e for e in out if isinstance(e, Resync))
    assert (resync.stream_offset, resync.reason) == (len(a) + len(b), ResyncReason.AFTER_GAP)
    assert delivered(out) == [(0, data[:lost_from]), (len(a) + len(b), c + d)]


def test_gap_while_searching_restarts_the_search_after_it() -> None:
    data = b"".join(REQUESTS)
    events: list[FlowEvent] = [
        begin(True),
        *chunks_of(data[5:60], 11, 5),
        gap(60, 100),
        *chunks_of(data[160:], 11, 160),
        end(len(data)),
    ]
    out = align(events)
    assert kinds(out)[:4] == ["StreamStart", "Discarded", "Gap", "Discarded"]
    resync = next(e for e in out if isinstance(e, Resync))
    boundaries = [sum(len(r) for r in REQUESTS[:i]) for i in range(len(REQUESTS))]
    assert resync.stream_offset == min(b for b in boundaries if b >= 160)


def test_implausible_size_while_synced_starts_a_search() -> None:
    a, b, c = REQUESTS[:3]
    garbage = b"\x16\x03\x01\x02\x00" + bytes(range(1, 100))  # a TLS record header where a size should be
    data = a + garbage + b + c
    out = align([begin(False), *chunks_of(data, 64), end(len(data))])
    resync = next(e for e in out if isinstance(e, Resync))
    assert (resync.stream_offset, resync.reason) == (len(a) + len(garbage), ResyncReason.IMPLAUSIBLE_SIZE)
    discarded = next(e for e in out if isinstance(e, Discarded))
    assert (discarded.stream_offset, discarded.length) == (len(a), len(garbage))
    assert delivered(out) == [(0, a), (len(a) + len(garbage), b + c)]


def test_last_frame_of_a_stream_is_accepted_at_its_end() -> None:
    frame = REQUESTS[2]
    stream = b"tail of an earlier frame" + frame
    out = align([begin(True), *chunks_of(stream, 1000), end(len(stream))])
    assert delivered(out) == [(24, frame)]


def test_frame_cut_by_the_end_of_the_stream_is_accepted_at_the_end() -> None:
    stream = b"xx" + REQUESTS[3][:-20]
    out = align([begin(True), *chunks_of(stream, 1000), end(len(stream))])
    assert delivered(out) == [(2, REQUESTS[3][:-20])]


def test_bytes_with_no_frame_are_discarded_and_reported_at_the_end() -> None:
    noise = printable_noise(5000, seed=1)
    out = align([begin(True), *chunks_of(noise, 512), end(len(noise))])
    assert kinds(out) == ["StreamStart", "Discarded", "StreamEnd"]
    discarded = out[1]
    assert isinstance(discarded, Discarded) and (discarded.stream_offset, discarded.length) == (0, len(noise))


def test_a_candidate_confirmed_by_its_successor_wins_over_a_lookalike() -> None:
    # Inside the body: something shaped like a request header, whose "frame" ends in the middle of nowhere.
    fake = request_frame(3, 1, 1, "x", b"\xff" * 20)[:14] + b"\xee" * 10
    body_frame = request_frame(0, 9, 5, "p", b"\xee" * 10 + fake + b"\xee" * 60)
    stream = body_frame[8:] + REQUESTS[0] + REQUESTS[1]
    out = align([begin(True), *chunks_of(stream, 40), end(len(stream))])
    assert delivered(out) == [(len(body_frame) - 8, REQUESTS[0] + REQUESTS[1])]


def test_candidates_longer_than_max_span_are_passed_over() -> None:
    big = request_frame(0, 9, 5, "p", b"\xee" * 3000)
    stream = b"zz" + big + REQUESTS[0] + REQUESTS[1]
    rule = FrameRule(plausible_request, REQUEST_CANDIDATES, max_span=1000)
    out = align([begin(True), *chunks_of(stream, 100), end(len(stream))], rule)
    assert delivered(out) == [(2 + len(big), REQUESTS[0] + REQUESTS[1])]


def test_search_without_a_candidate_pattern_works_the_same() -> None:
    tail = b"".join(REQUESTS)[17:]
    rule = FrameRule(plausible_request)
    assert delivered(align([begin(True), *chunks_of(tail, 33), end(len(tail))], rule)) == delivered(
        align([begin(True), *chunks_of(tail, 33), end(len(tail))])
    )


def test_held_bytes_stay_bounded_while_searching() -> None:
    noise = printable_noise(3 * 1024 * 1024, seed=2)
    aligner = FrameAligner(FLOW, C2B, REQUEST_RULE, CaptureStats())
    out: list[FlowEvent] = []
    aligner.feed(begin(True), out)
    for event in chunks_of(noise, 65536):
        aligner.feed(event, out)
        assert len(aligner._scan) < REQUEST_RULE.lookahead + 65536


@settings(max_examples=200, deadline=None)
@given(
    frames=st.lists(st.sampled_from(REQUESTS), min_size=2, max_size=8),
    start=st.integers(0, 2000),
    chunk=st.integers(1, 300),
    gap_at=st.integers(0, 5000),
    gap_length=st.integers(0, 400),
)
def test_aligned_output_is_always_the_original_bytes_at_their_offsets(
    frames: list[bytes], start: int, chunk: int, gap_at: int, gap_length: int
) -> None:
    data = b"".join(frames)
    start %= len(data)
    gap_at = start + gap_at % (len(data) - start)
    gap_end = min(len(data), gap_at + gap_length)
    events: list[FlowEvent] = [begin(start > 0)]
    events += chunks_of(data[start:gap_at], chunk, start)
    if gap_end > gap_at:
        events.append(gap(gap_at, gap_end - gap_at))
    events += chunks_of(data[gap_end:], chunk, gap_end)
    events.append(end(len(data)))
    # offsets are stream offsets counted from `start` in the reassembler; here they are absolute, which is the same
    out = align(events)
    accounted = 0
    for offset, run in delivered(out):
        assert data[offset : offset + len(run)] == run
        accounted += len(run)
    accounted += sum(e.length for e in out if isinstance(e, Discarded | Gap))
    assert accounted == len(data) - start
    boundaries = {sum(len(f) for f in frames[:i]) for i in range(len(frames))}
    for event in out:
        if isinstance(event, Resync):
            assert event.stream_offset in boundaries

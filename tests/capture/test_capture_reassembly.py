"""TCP reassembly: order, retransmissions, overlaps, holes, wrap-around, connection lifecycle."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_epochs.capture import (
    Direction,
    Endpoint,
    EndReason,
    Flow,
    FlowEvent,
    Gap,
    GapReason,
    StreamData,
    StreamEnd,
    StreamStart,
)
from kafka_epochs.capture.network.tcp import ACK, FIN, PSH, RST, SYN, Segment
from kafka_epochs.capture.reassembly.connections import StreamReassembler

CLIENT = Endpoint("10.0.0.1", 50000)
BROKER = Endpoint("10.0.0.2", 9092)
FLOW = Flow(CLIENT, BROKER)
C2B, B2C = Direction.CLIENT_TO_BROKER, Direction.BROKER_TO_CLIENT
ISN = 1000  # client's initial sequence number: its data starts at ISN + 1


def seg(
    seq: int,
    payload: bytes = b"",
    flags: int = ACK | PSH,
    ack: int = 0,
    *,
    direction: Direction = C2B,
    missing: int = 0,
    packet: int = 0,
) -> tuple[Direction, Segment]:
    source, destination = (CLIENT, BROKER) if direction is C2B else (BROKER, CLIENT)
    return direction, Segment(
        source, destination, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, flags, payload, missing, packet * 10, packet
    )


def syn(isn: int = ISN) -> tuple[Direction, Segment]:
    return seg(isn, flags=SYN)


def data_at(offset: int, payload: bytes, isn: int = ISN, **kwargs: int) -> tuple[Direction, Segment]:
    """A client segment whose payload sits at ``offset`` in the client's stream."""
    return seg(isn + 1 + offset, payload, **kwargs)  # type: ignore[arg-type]


def fin_at(offset: int, isn: int = ISN) -> tuple[Direction, Segment]:
    return seg(isn + 1 + offset, flags=FIN | ACK)


def run(
    segments: Sequence[tuple[Direction, Segment]],
    *,
    finish: bool = True,
    max_buffered_bytes: int = 1 << 20,
    max_buffered_segments: int = 1000,
) -> list[FlowEvent]:
    reassembler = StreamReassembler(max_buffered_bytes=max_buffered_bytes, max_buffered_segments=max_buffered_segments)
    events: list[FlowEvent] = []
    for number, (direction, segment) in enumerate(segments):
        events += reassembler.feed(FLOW, direction, segment._replace(packet=number, timestamp_ns=number))
    if finish:
        events += reassembler.finish_all(len(segments), len(segments))
    return events


def of(events: list[FlowEvent], kind: type, direction: Direction = C2B) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and e.direction is direction]


def stream(events: list[FlowEvent], direction: Direction = C2B) -> bytes:
    """The direction's bytes, gaps filled with '?', checking offsets are contiguous."""
    out = bytearray()
    for event in events:
        if getattr(event, "direction", None) is not direction:
            continue
        if isinstance(event, StreamData):
            assert event.stream_offset == len(out), (event, len(out))
            out += event.data
        elif isinstance(event, Gap):
            assert event.stream_offset == len(out)
            out += b"?" * event.length
    return bytes(out)


def test_in_order_segments_pass_straight_through() -> None:
    events = run([syn(), data_at(0, b"hello "), data_at(6, b"world"), fin_at(11)])
    assert isinstance(events[0], StreamStart) and events[0].seq == ISN + 1 and not events[0].midstream
    data = of(events, StreamData)
    assert [(e.stream_offset, e.data, e.packet) for e in data] == [(0, b"hello ", 1), (6, b"world", 2)]
    (end,) = of(events, StreamEnd)
    assert (end.reason, end.stream_offset, end.timestamp_ns) == (EndReason.FIN, 11, 3)
    assert not of(events, Gap)


def test_reordered_segments_wait_for_the_hole_and_keep_their_own_timestamps() -> None:
    events = run([syn(), data_at(6, b"world"), data_at(11, b"!"), data_at(0, b"hello ")])
    data = of(events, StreamData)
    assert [(e.stream_offset, e.data, e.timestamp_ns) for e in data] == [
        (0, b"hello ", 3),
        (6, b"world", 1),
        (11, b"!", 2),
    ]


def test_retransmissions_are_dropped() -> None:
    events = run([syn(), data_at(0, b"hello "), data_at(0, b"hello "), data_at(6, b"world"), data_at(6, b"world")])
    assert stream(events) == b"hello world"
    assert len(of(events, StreamData)) == 2


def test_overlaps_keep_the_first_copy_seen() -> None:
    events = run(
        [
            syn(),
            data_at(4, b"EFGH"),  # buffered, waiting
            data_at(0, b"abcdefghij"),  # overlaps it: the buffered EFGH wins, the rest fills around it
            data_at(8, b"IJKL"),  # overlaps delivered bytes: only its "KL" is new
        ]
    )
    assert stream(events) == b"abcdEFGHijKL"


def test_overlapping_retransmission_spanning_several_buffered_pieces() -> None:
    events = run([syn(), data_at(2, b"C"), data_at(5, b"F"), data_at(8, b"I"), data_at(0, b"abcdefghij")])
    assert stream(events) == b"abCdeFghIj"


def test_missing_segment_becomes_a_gap_at_the_end_and_the_stream_goes_on() -> None:
    events = run([syn(), data_at(0, b"aaaa"), data_at(8, b"cccc"), data_at(12, b"dd"), fin_at(14)])
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length, gap.seq, gap.reason) == (4, 4, ISN + 5, GapReason.CLOSED)
    assert stream(events) == b"aaaa????ccccdd"
    assert of(events, StreamEnd)[0].reason is EndReason.FIN


def test_acknowledged_hole_is_a_gap_at_once() -> None:
    events = run(
        [
            syn(),
            data_at(0, b"aaaa"),
            data_at(8, b"cccc"),
            seg(5000, b"", ACK, ack=ISN + 1 + 12, direction=B2C),  # the broker got everything up to 12
            data_at(12, b"dd"),
        ],
        finish=False,
    )
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length, gap.reason, gap.packet) == (4, 4, GapReason.ACKED_UNSEEN, 3)
    assert stream(events) == b"aaaa????ccccdd"


def test_partly_acknowledged_hole_gives_up_only_the_acknowledged_part() -> None:
    events = run(
        [
            syn(),
            data_at(0, b"aaaa"),
            data_at(8, b"cccc"),
            seg(5000, b"", ACK, ack=ISN + 1 + 6, direction=B2C),
            data_at(6, b"bb"),
        ],
        finish=False,
    )
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length) == (4, 2)
    assert stream(events) == b"aaaa??bbcccc"


def test_ack_past_the_end_without_later_data_is_not_a_gap() -> None:
    # The broker acknowledging one byte more than seen is what an uncaptured FIN looks like.
    events = run([syn(), data_at(0, b"aaaa"), seg(5000, b"", ACK, ack=ISN + 1 + 5, direction=B2C)])
    assert not of(events, Gap)


def test_full_buffer_gives_up_the_hole() -> None:
    segments = [syn(), data_at(0, b"a")] + [data_at(10 + 10 * i, b"x" * 10) for i in range(5)]
    events = run(segments, finish=False, max_buffered_bytes=35)
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length, gap.reason) == (1, 9, GapReason.BUFFER_FULL)
    assert stream(events) == b"a" + b"?" * 9 + b"x" * 50  # given up at the 4th: 40 bytes held > 35


def test_snaplen_cut_bytes_are_a_gap_right_away() -> None:
    events = run([syn(), data_at(0, b"abc", missing=5), data_at(8, b"next")], finish=False)
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length, gap.reason) == (3, 5, GapReason.SNAPLEN)
    assert stream(events) == b"abc?????next"


@pytest.mark.parametrize("isn", [0xFFFFFFFF - 3, 0xFFFFFFFF, 0xFFFFFFF0])
def test_sequence_numbers_wrap_around(isn: int) -> None:
    events = run(
        [
            syn(isn),
            data_at(0, b"0123456789", isn),
            data_at(20, b"KLMN", isn),
            data_at(10, b"abcdefghij", isn),
            fin_at(24, isn),
        ]
    )
    assert stream(events) == b"0123456789abcdefghijKLMN"
    assert of(events, StreamStart)[0].seq == (isn + 1) & 0xFFFFFFFF
    assert of(events, StreamEnd)[0].stream_offset == 24


def test_stream_offsets_go_past_4_gib() -> None:
    # Jumps of just under 2**31 bytes, each hole acknowledged by the broker (so given up at once).
    offsets = [0, (1 << 31) - 100, (1 << 32) - 200, (1 << 32) + (1 << 30)]
    segments = [syn()]
    for offset in offsets:
        segments.append(data_at(offset, b"@"))
        segments.append(seg(5000, b"", ACK, ack=ISN + 1 + offset + 1, direction=B2C))
    segments[-2:] = [segments[-1], segments[-2]]  # the last ack first: the hole is known before the data
    events = run(segments, finish=False)
    assert [e.stream_offset for e in of(events, StreamData)] == offsets
    assert [(g.stream_offset, g.length) for g in of(events, Gap)] == [
        (a + 1, b - a - 1) for a, b in itertools.pairwise(offsets)
    ]


def test_syn_ack_gives_the_other_direction_its_start() -> None:
    events = run(
        [
            seg(7000, flags=SYN | ACK, ack=ISN + 1, direction=B2C),
            data_at(0, b"client first"),
            seg(7001, b"reply", direction=B2C),
        ]
    )
    starts = of(events, StreamStart) + of(events, StreamStart, B2C)
    assert {(s.direction, s.seq, s.midstream) for s in starts} == {(C2B, ISN + 1, False), (B2C, 7001, False)}
    assert stream(events) == b"client first" and stream(events, B2C) == b"reply"


def test_data_without_a_handshake_starts_mid_stream() -> None:
    events = run([data_at(100, b"middle"), data_at(106, b" more")])
    (start,) = of(events, StreamStart)
    assert start.midstream and start.seq == ISN + 101
    assert stream(events) == b"middle more"


def test_rst_ends_both_directions_and_flushes_waiting_data() -> None:
    events = run(
        [
            syn(),
            seg(5000, flags=SYN | ACK, ack=ISN + 1, direction=B2C),
            data_at(0, b"ab"),
            data_at(4, b"ef"),
            seg(5001, flags=RST | ACK, direction=B2C),
            data_at(2, b"cd"),
        ]
    )
    assert stream(events) == b"ab??ef"
    ends = of(events, StreamEnd) + of(events, StreamEnd, B2C)
    assert {(e.direction, e.reason) for e in ends} == {(C2B, EndReason.RST), (B2C, EndReason.RST)}
    assert events[-1] is ends[-1] or isinstance(events[-1], StreamEnd)  # the late segment produced nothing


def test_new_syn_on_the_same_4_tuple_starts_a_new_connection() -> None:
    events = run([syn(), data_at(0, b"first"), syn(90_000), seg(90_001, b"second")])
    starts = of(events, StreamStart)
    assert [s.seq for s in starts] == [ISN + 1, 90_001]
    (end,) = [e for e in of(events, StreamEnd) if e.reason is EndReason.NEW_CONNECTION]
    assert end.stream_offset == 5
    assert [e.data for e in of(events, StreamData)] == [b"first", b"second"]


def test_retransmitted_syn_is_the_same_connection() -> None:
    events = run([syn(), syn(), data_at(0, b"x")])
    assert len(of(events, StreamStart)) == 1


def test_segments_after_both_fins_are_late() -> None:
    reassembler = StreamReassembler()
    for direction, segment in [
        syn(),
        seg(5000, flags=SYN | ACK, ack=ISN + 1, direction=B2C),
        data_at(0, b"x"),
        fin_at(1),
        seg(5001, flags=FIN | ACK, ack=ISN + 3, direction=B2C),
    ]:
        reassembler.feed(FLOW, direction, segment)
    assert reassembler.feed(FLOW, *data_at(0, b"x")) == []
    assert reassembler.stats.late_segments == 1


def test_bytes_beyond_the_fin_are_ignored() -> None:
    events = run([syn(), data_at(4, b"efgh"), fin_at(6), data_at(0, b"abcd")])
    assert stream(events) == b"abcdef"


def test_finish_all_flushes_buffered_data_with_gaps() -> None:
    events = run([syn(), data_at(0, b"a"), data_at(5, b"f")])
    assert stream(events) == b"a????f"
    assert of(events, StreamEnd)[0].reason is EndReason.CAPTURE_END


def test_stats_count_what_happened() -> None:
    reassembler = StreamReassembler()
    for direction, segment in [
        syn(),
        data_at(4, b"efgh"),
        data_at(0, b"abcd"),
        data_at(0, b"abcdef"),
        data_at(20, b"x"),
    ]:
        reassembler.feed(FLOW, direction, segment)
    reassembler.finish_all(0, 0)
    stats = reassembler.stats
    assert (stats.flows, stats.segments, stats.out_of_order_segments) == (1, 5, 2)
    assert stats.retransmitted_bytes == 6 and stats.gaps == 1 and stats.gap_bytes == 12


# -- properties


@st.composite
def segmented_streams(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[int, int]], list[tuple[int, int]]]:
    """A stream, an ISN, its cut into segments, and extra (re-segmented) retransmissions."""
    data = draw(st.binary(min_size=1, max_size=2000))
    isn = draw(st.integers(0, 0xFFFFFFFF))
    cuts = sorted(set(draw(st.lists(st.integers(1, len(data) - 1), max_size=40)) if len(data) > 1 else []))
    bounds = [0, *cuts, len(data)]
    pieces = list(itertools.pairwise(bounds))
    extra = []
    for _ in range(draw(st.integers(0, 8))):
        start = draw(st.integers(0, len(data) - 1))
        extra.append((start, draw(st.integers(start + 1, len(data)))))
    return data, isn, pieces, extra


@settings(max_examples=300, deadline=None)
@given(case=segmented_streams(), order=st.randoms(use_true_random=False))
def test_reordered_and_duplicated_segments_give_back_exactly_the_stream(
    case: tuple[bytes, int, list[tuple[int, int]], list[tuple[int, int]]], order: object
) -> None:
    data, isn, pieces, extra = case
    segments = [data_at(a, data[a:b], isn) for a, b in pieces + extra + pieces[: len(pieces) // 3]]
    segments.append(fin_at(len(data), isn))
    order.shuffle(segments)  # type: ignore[attr-defined]
    events = run([syn(isn), *segments])
    assert stream(events) == data
    assert not of(events, Gap)
    (end,) = of(events, StreamEnd)
    assert (end.reason, end.stream_offset) == (EndReason.FIN, len(data))


@settings(max_examples=300, deadline=None)
@given(case=segmented_streams(), order=st.randoms(use_true_random=False), which=st.integers(0, 10_000))
def test_one_lost_segment_gives_exactly_one_gap_of_its_size(
    case: tuple[bytes, int, list[tuple[int, int]], list[tuple[int, int]]], order: object, which: int
) -> None:
    data, isn, pieces, extra = case
    lost_start, lost_end = pieces[which % len(pieces)]
    kept = [p for p in pieces if p != (lost_start, lost_end)]
    kept += [(a, b) for a, b in extra if b <= lost_start or a >= lost_end]  # retransmissions miss it too
    segments = [data_at(a, data[a:b], isn) for a, b in kept]
    segments.append(fin_at(len(data), isn))
    order.shuffle(segments)  # type: ignore[attr-defined]
    events = run([syn(isn), *segments])
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length) == (lost_start, lost_end - lost_start)
    assert gap.seq == (isn + 1 + lost_start) & 0xFFFFFFFF
    assert stream(events) == data[:lost_start] + b"?" * (lost_end - lost_start) + data[lost_end:]


def test_many_tiny_waiting_segments_are_bounded_by_count() -> None:
    segments = [syn()] + [data_at(1 + i, b"x") for i in range(10)]
    events = run(segments, finish=False, max_buffered_segments=4)
    (gap,) = of(events, Gap)
    assert (gap.stream_offset, gap.length, gap.reason) == (0, 1, GapReason.BUFFER_FULL)
    assert stream(events) == b"?" + b"x" * 10

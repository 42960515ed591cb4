"""The whole pipeline: which connections are Kafka, and the events a capture file turns into."""

from __future__ import annotations

import ast
import io
import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from packet_builders import (
    ACK,
    PSH,
    Conversation,
    ethernet,
    pcap_file,
    pcapng_enhanced,
    pcapng_interface,
    pcapng_section,
    request_frame,
    response_frame,
    sll2,
    tcp,
)

from kafka_epochs.capture import (
    CaptureFormatError,
    CaptureStreams,
    Direction,
    Discarded,
    Endpoint,
    EndReason,
    Flow,
    Gap,
    PacketError,
    Resync,
    ResyncReason,
    StreamData,
    StreamEnd,
    StreamEvent,
    StreamStart,
    iter_streams,
)
from kafka_epochs.capture.alignment.flows import NOT_KAFKA

C2B, B2C = Direction.CLIENT_TO_BROKER, Direction.BROKER_TO_CLIENT
API_VERSIONS = request_frame(18, 3, 1, "app", b"\x04app\x041.0\x00")
METADATA = request_frame(3, 12, 2, "app", b"\x01\x01\x00")


def conversation(
    broker_port: int = 9092,
    client_port: int = 50000,
    first: bytes = API_VERSIONS,
    client_ip: str = "10.0.0.1",
    **kwargs: int,
) -> Conversation:
    c = Conversation(client=(client_ip, client_port), broker=("10.0.0.2", broker_port), **kwargs)  # type: ignore[arg-type]
    c.handshake()
    c.send("c", first)
    c.send("b", response_frame(1, b"\x00\x00" * 10))
    c.send("c", METADATA)
    c.send("b", response_frame(2, b"\x00" * 30))
    c.close()
    return c


def events_of(frames: list[tuple[int, bytes]], **options: object) -> tuple[list[StreamEvent], CaptureStreams]:
    streams = CaptureStreams(io.BytesIO(pcap_file(frames, nanoseconds=True)), **options)  # type: ignore[arg-type]
    return list(streams), streams


def flows_in(events: list[StreamEvent]) -> set[Flow]:
    return {e.flow for e in events if isinstance(e, StreamStart)}


def stream(events: list[StreamEvent], flow: Flow, direction: Direction) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, StreamData) and e.flow == flow and e.direction is direction)


def merged(*conversations: Conversation) -> list[tuple[int, bytes]]:
    return sorted((f for c in conversations for f in c.frames), key=lambda f: f[0])


# -- which connections are Kafka


def test_default_port_9092_is_kafka_and_the_broker_is_the_end_on_it() -> None:
    events, streams = events_of(conversation().frames)
    flow = Flow(Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092))
    assert flows_in(events) == {flow}
    assert stream(events, flow, C2B) == API_VERSIONS + METADATA
    assert stream(events, flow, B2C) == response_frame(1, b"\x00\x00" * 10) + response_frame(2, b"\x00" * 30)
    assert {(e.direction, e.reason) for e in events if isinstance(e, StreamEnd)} == {
        (C2B, EndReason.FIN),
        (B2C, EndReason.FIN),
    }
    assert streams.stats.detected_ports == set() and streams.stats.flows == 1


def test_configured_ports_replace_the_default() -> None:
    frames = merged(conversation(9092, first=METADATA), conversation(19092, 50001, first=METADATA, time_ns=5))
    events, _ = events_of(frames, ports={19092})
    assert {f.broker.port for f in flows_in(events)} == {19092}


def test_api_versions_handshake_reveals_a_broker_port() -> None:
    held = conversation(29092, 50001, first=METADATA, time_ns=10)  # starts first, but its first request says nothing
    learns = conversation(29092, 50002, time_ns=20)
    later = conversation(29092, 50003, first=METADATA, time_ns=100_000)  # after the port is known
    other = conversation(8080, 50004, first=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", time_ns=30)
    events, streams = events_of(merged(held, learns, later, other))
    assert streams.stats.detected_ports == {29092}
    assert {f.client.port for f in flows_in(events)} == {50001, 50002, 50003}
    # The connection judged "not Kafka" by its first request comes back once its port is known, mid-stream.
    starts = [e for e in events if isinstance(e, StreamStart)]
    assert all(s.midstream for s in starts if s.flow.client.port == 50001)
    assert not any(s.midstream for s in starts if s.flow.client.port != 50001)
    assert streams.stats.ignored[NOT_KAFKA] > 0


def test_connection_held_before_the_port_was_learnt_is_followed_when_it_is() -> None:
    waiting = Conversation(client=("10.0.0.1", 50001), broker=("10.0.0.2", 29092), time_ns=10)
    waiting.handshake()  # handshake only, so far: no payload to judge it by
    learns = conversation(29092, 50002, time_ns=20)
    waiting.time_ns = 100_000
    waiting.send("c", METADATA)
    events, _ = events_of(merged(waiting, learns))
    assert {f.client.port for f in flows_in(events)} == {50001, 50002}
    waiting_flow = Flow(Endpoint("10.0.0.1", 50001), Endpoint("10.0.0.2", 29092))
    starts = [e for e in events if isinstance(e, StreamStart) and e.flow == waiting_flow]
    assert all(not s.midstream for s in starts)
    assert stream(events, waiting_flow, C2B) == METADATA


def test_auto_detection_can_be_turned_off() -> None:
    events, streams = events_of(conversation(29092).frames, auto_detect_ports=False)
    assert events == [] and streams.stats.ignored[NOT_KAFKA] == len(conversation(29092).frames)


def test_server_speaking_first_is_not_kafka() -> None:
    c = Conversation(broker=("10.0.0.2", 2222))
    c.handshake()
    c.send("b", b"SSH-2.0-OpenSSH_9.0\r\n")
    c.send("c", API_VERSIONS)
    events, _ = events_of(c.frames)
    assert events == []


def test_both_ends_on_kafka_ports_the_syn_decides() -> None:
    c = conversation(9093, 9092)  # the client's port is 9092 too
    events, _ = events_of(c.frames, ports={9092, 9093})
    assert flows_in(events) == {Flow(Endpoint("10.0.0.1", 9092), Endpoint("10.0.0.2", 9093))}


def test_both_ends_on_kafka_ports_without_a_syn_the_lower_port_is_the_broker() -> None:
    c = conversation(9093, 9092)
    events, _ = events_of(c.frames[3:], ports={9092, 9093})
    assert {f.broker.port for f in flows_in(events)} == {9092}


# -- the stream events of a capture


def test_capture_starting_mid_stream_resyncs_on_the_next_frame() -> None:
    c = Conversation()
    requests = [request_frame(1, 13, n, "consumer", bytes(range(60))) for n in range(4)]
    responses = [response_frame(n, b"\x00\x00" + bytes(range(90))) for n in range(4)]
    for req, resp in zip(requests, responses, strict=True):
        c.send("c", req[:40])
        c.send("c", req[40:])
        c.send("b", resp)
    frames = c.frames[1:]  # no handshake, and the first request's first segment is lost to the capture start
    events, streams = events_of(frames)
    flow = Flow(Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092))
    starts = {e.direction: e for e in events if isinstance(e, StreamStart)}
    assert starts[C2B].midstream and starts[B2C].midstream
    resyncs = {e.direction: e for e in events if isinstance(e, Resync)}
    assert resyncs[C2B].reason is ResyncReason.MIDSTREAM_START
    assert stream(events, flow, C2B) == b"".join(requests[1:])
    discarded = [e for e in events if isinstance(e, Discarded)]
    assert [(d.direction, d.length) for d in discarded] == [(C2B, len(requests[0]) - 40)]
    # responses start on a boundary already: the search confirms it at once
    assert resyncs[B2C].stream_offset == 0 and stream(events, flow, B2C) == b"".join(responses)
    assert streams.stats.resyncs == 2


def test_lost_segment_inside_a_frame_is_a_gap_and_the_next_frame_is_clean() -> None:
    c = Conversation()
    c.handshake()
    frames_sent = [request_frame(0, 9, n, "producer", bytes(range(200))) for n in range(3)]
    c.send("c", frames_sent[0])
    c.send("c", frames_sent[1][:100])
    c.send("c", frames_sent[1][100:150], record=False)  # never captured
    c.send("c", frames_sent[1][150:])
    c.add(c.segment("b", ACK))  # the broker acknowledges it all: the hole is final
    c.send("c", frames_sent[2])
    events, _ = events_of(c.frames)
    kinds = [type(e).__name__ for e in events if getattr(e, "direction", C2B) is C2B]
    assert kinds == ["StreamStart", "StreamData", "StreamData", "Gap", "Discarded", "Resync", "StreamData", "StreamEnd"]
    gap = next(e for e in events if isinstance(e, Gap))
    assert (gap.stream_offset, gap.length) == (len(frames_sent[0]) + 100, 50)
    flow = Flow(Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092))
    assert stream(events, flow, C2B) == frames_sent[0] + frames_sent[1][:100] + frames_sent[2]


def test_raw_mode_yields_reassembled_bytes_without_alignment() -> None:
    c = Conversation()
    c.send("c", b"not kafka at all, but on 9092")
    events, _ = events_of(c.frames, align_frames=False)
    data = [e for e in events if isinstance(e, StreamData)]
    assert b"".join(e.data for e in data) == b"not kafka at all, but on 9092"
    assert not any(isinstance(e, Resync | Discarded) for e in events)


def test_bad_records_become_packet_errors_and_open_streams_still_end() -> None:
    data = pcap_file(conversation().frames[:5], nanoseconds=True)
    events = list(iter_streams(io.BytesIO(data[:-7])))
    errors = [e for e in events if isinstance(e, PacketError)]
    assert len(errors) == 1 and errors[0].packet == 4 and "ends inside a packet" in str(errors[0].error)
    assert {e.reason for e in events if isinstance(e, StreamEnd)} == {EndReason.CAPTURE_END}


def test_pcapng_with_interfaces_of_different_link_types_in_one_capture() -> None:
    c = conversation()
    sections = pcapng_section() + pcapng_interface(1, tsresol=9) + pcapng_interface(276, tsresol=6)
    blocks = []
    for number, (timestamp, frame) in enumerate(c.frames):
        if number % 2:  # every other packet seen through a cooked "any" interface, microsecond stamps
            blocks.append(pcapng_enhanced(1, timestamp // 1000, sll2(frame[14:])))
        else:
            blocks.append(pcapng_enhanced(0, timestamp, frame))
    events = list(iter_streams(io.BytesIO(sections + b"".join(blocks))))
    flow = Flow(Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092))
    assert stream(events, flow, C2B) == API_VERSIONS + METADATA


def test_ipv6_connections_are_followed() -> None:
    from packet_builders import ETHERTYPE_IPV6, ipv6

    payload = API_VERSIONS
    frame = ethernet(ipv6("2001:db8::1", "2001:db8::2", tcp(50000, 9092, 1, 1, ACK | PSH, payload)), ETHERTYPE_IPV6)
    events, _ = events_of([(1, frame)])
    (start,) = [e for e in events if isinstance(e, StreamStart)]
    assert start.flow.broker == Endpoint("2001:db8::2", 9092) and str(start.flow.broker) == "[2001:db8::2]:9092"
    assert start.midstream


# -- end to end, with the network misbehaving


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    mss=st.integers(1, 200),
    frames=st.integers(1, 6),
    shuffle_window=st.integers(1, 6),
    duplicate=st.floats(0, 0.3),
)
def test_reordered_and_duplicated_packets_give_back_every_frame(
    seed: int, mss: int, frames: int, shuffle_window: int, duplicate: float
) -> None:
    rng = random.Random(seed)
    requests = [
        request_frame(rng.choice([0, 1, 3]), rng.randrange(0, 13), n, "c", rng.randbytes(rng.randrange(300)))
        for n in range(frames)
    ]
    responses = [response_frame(n, rng.randbytes(rng.randrange(2, 300))) for n in range(frames)]
    c = Conversation(client_isn=rng.randrange(2**32), broker_isn=rng.randrange(2**32))
    c.handshake()
    sent: list[tuple[str, int, bytes]] = []  # (side, stream offset, payload)
    for req, resp in zip(requests, responses, strict=True):
        for side, frame in (("c", req), ("b", resp)):
            base = sum(len(p) for s, _, p in sent if s == side)
            sent += [(side, base + i, frame[i : i + mss]) for i in range(0, len(frame), mss)]
    # Local reordering within a window, and duplicates, as a network's retransmissions make them.
    noisy: list[tuple[str, int, bytes]] = []
    for i in range(0, len(sent), shuffle_window):
        window = sent[i : i + shuffle_window]
        rng.shuffle(window)
        for item in window:
            noisy.append(item)
            if rng.random() < duplicate:
                noisy.append(item)
    # Each segment acknowledges what its sender had received in order so far: never bytes not yet captured.
    received = {"c": set(), "b": set()}  # type: dict[str, set[int]]
    in_order = {"c": 0, "b": 0}
    lengths = {}
    isn = {"c": c.client_isn, "b": c.broker_isn}
    for side, offset, payload in noisy:
        other = "b" if side == "c" else "c"
        c.add(c.segment(side, ACK | PSH, payload, seq=isn[side] + 1 + offset, ack=isn[other] + 1 + in_order[other]))
        received[side].add(offset)
        lengths[side, offset] = len(payload)
        while in_order[side] in received[side]:
            in_order[side] += lengths[side, in_order[side]]
    c.next_seq = {"c": (isn["c"] + 1 + in_order["c"]) & 0xFFFFFFFF, "b": (isn["b"] + 1 + in_order["b"]) & 0xFFFFFFFF}
    c.close()
    events, _ = events_of(c.frames)
    flow = Flow(Endpoint("10.0.0.1", 50000), Endpoint("10.0.0.2", 9092))
    assert stream(events, flow, C2B) == b"".join(requests)
    assert stream(events, flow, B2C) == b"".join(responses)
    assert not any(isinstance(e, Gap | Discarded | Resync | PacketError) for e in events)


@settings(max_examples=200, deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(0, 100_000), st.integers(0, 255)), min_size=1, max_size=12),
    align=st.booleans(),
)
def test_damaged_captures_give_events_or_a_capture_format_error(edits: list[tuple[int, int]], align: bool) -> None:
    c = Conversation(client_isn=0xFFFFFF00)  # the client's sequence numbers wrap
    c.handshake()
    for n in range(4):
        c.send("c", request_frame(1, 13, n, "consumer", bytes(range(120))))
        c.send("b", response_frame(n, bytes(range(200))))
    c.close()
    data = bytearray(pcap_file(c.frames, nanoseconds=True))
    for position, value in edits:
        data[position % len(data)] = value
    try:
        events = list(iter_streams(io.BytesIO(bytes(data)), align_frames=align, ports={9092}))
    except CaptureFormatError:
        return
    for event in events:
        if isinstance(event, StreamData):
            assert event.data and event.stream_offset >= 0
        elif isinstance(event, Gap | Discarded):
            assert event.length > 0


# -- import cost


def test_import_kafka_epochs_does_not_load_the_capture_package() -> None:
    code = "import sys, kafka_epochs; print(any(m.startswith('kafka_epochs.capture') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_capture_package_loads_no_protocol_code() -> None:
    code = (
        "import sys, kafka_epochs.capture; "
        "print(sorted(m for m in sys.modules if m.startswith('kafka_epochs') and 'capture' not in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the shared vocabulary and frame-start shapes, not the wire runtime or any protocol code
    assert ast.literal_eval(out) == [
        "kafka_epochs",
        "kafka_epochs.direction",
        "kafka_epochs.errors",
        "kafka_epochs.resync",
        "kafka_epochs.values",
    ]

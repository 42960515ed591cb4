"""The pipeline's lanes (its shortcut for the next in-order data of a followed direction) give
exactly the events and counts of the layered way, on real, damaged and misbehaving captures."""

from __future__ import annotations

import io
from typing import Any

from capture_mutations import damaged, real_captures
from hypothesis import given, settings
from hypothesis import strategies as st
from packet_builders import ACK, FIN, PSH, RST, SYN, Conversation, ethernet, ipv4, pcap_file, request_frame, tcp

from kafka_epochs.capture import BadRecord, Packet, PacketError, read_packets
from kafka_epochs.capture.errors import CaptureFormatError
from kafka_epochs.capture.pipeline import StreamPipeline
from kafka_epochs.values import fields_of

CAPTURES = real_captures()


def run(data: bytes, lanes: bool, **options: Any) -> tuple[list[Any], dict[str, Any], int]:
    """Every event (and the counts) of a capture, and how many packets took a lane."""
    pipeline = StreamPipeline(lanes=lanes, **options)
    layered = 0
    take_layered = pipeline.segment

    def counting(segment: Any) -> Any:
        nonlocal layered
        layered += 1
        return take_layered(segment)

    pipeline.segment = counting  # type: ignore[method-assign]
    events: list[Any] = []
    packets = 0
    try:
        for record in read_packets(io.BytesIO(data)):
            packets += isinstance(record, Packet)
            events.extend(pipeline.record(record))
            events.append(state(pipeline))
    except CaptureFormatError as e:
        events.append(("refused", str(e)))
    events.extend(pipeline.finish())
    events.append(dict(pipeline.classifier._decided))  # what each 4-tuple was found to be, in order
    events.append(list(pipeline.classifier._not_kafka))
    stats = fields_of(pipeline.stats)
    return events, stats, packets - layered


def state(pipeline: StreamPipeline) -> tuple[Any, ...]:
    """What each open connection's directions know after a record: how far they delivered and
    how far the peer acknowledged them (a lane moves both without the layered way's events)."""
    return tuple(
        (flow, half.delivered, half.peer_acked, half.fin_offset, half.ended, connection.last_ns)
        for flow, connection in pipeline.reassembler._connections.items()
        for half in (connection.client_to_broker, connection.broker_to_client)
    )


def comparable(event: Any) -> Any:
    """An event with its exception (compared by identity) replaced by its type and text."""
    if isinstance(event, PacketError):
        return (event.packet, event.timestamp_ns, type(event.error), str(event.error))
    return event


def assert_same(data: bytes, **options: Any) -> int:
    fast_events, fast_stats, laned = run(data, lanes=True, **options)
    slow_events, slow_stats, _ = run(data, lanes=False, **options)
    assert fast_stats == slow_stats
    assert len(fast_events) == len(slow_events)
    for number, (fast, slow) in enumerate(zip(fast_events, slow_events, strict=True)):
        assert comparable(fast) == comparable(slow), f"event {number} differs"
    return laned


def test_real_captures_take_lanes_and_give_the_layered_events() -> None:
    for name, data in CAPTURES.items():
        laned = assert_same(data)
        if name.endswith(".pcap"):
            assert laned > 50, f"{name}: the lanes were not taken"


def test_damaged_real_captures_give_the_layered_events() -> None:
    for mutated, _ in damaged(CAPTURES, 20, 60):
        assert_same(mutated)


def _story_frames(steps: list[tuple[int, int, int, int, int, int]], options: bool) -> list[tuple[int, bytes]]:
    """Segments of up to two connections sharing a broker, each step near what TCP would send
    next: (connection, side, flags, seq shift, ack shift, payload length)."""
    conversations = [
        Conversation(client=("10.0.0.1", 50000 + n), client_isn=0xFFFFFF00 + n * 977, broker_isn=7000 + n)
        for n in range(2)
    ]
    for c in conversations:
        c.handshake()
    frames: list[tuple[int, bytes]] = []
    for number, (which, side_bit, flags, seq_shift, ack_shift, length) in enumerate(steps):
        c = conversations[which]
        side = "cb"[side_bit]
        other = "bc"[side_bit]
        # Whole frames of the right sizes where the step is in order, so alignment stays in sync.
        payload = request_frame(3, 12, number, "app", bytes(length))[: 12 + length] if length else b""
        if length and side == "b":
            payload = (len(payload) - 4).to_bytes(4, "big") + payload[4:]
        seq = (c.next_seq[side] + seq_shift) & 0xFFFFFFFF
        ack = (c.next_seq[other] + ack_shift) & 0xFFFFFFFF
        src, dst = (c.client, c.broker) if side == "c" else (c.broker, c.client)
        segment = tcp(
            src[1],
            dst[1],
            seq,
            ack,
            flags,
            payload,
            data_offset=8 if options else 5,
            options=bytes(12) if options else b"",
        )
        frames.append((1_700_000_000_000_000_000 + number * 1000, ethernet(ipv4(src[0], dst[0], segment))))
        if seq_shift == 0 and not flags & (SYN | RST):
            c.next_seq[side] = (c.next_seq[side] + len(payload) + bool(flags & FIN)) & 0xFFFFFFFF
    start = [f for c in conversations for f in c.frames]
    return sorted(start, key=lambda f: f[0]) + frames


FLAGS = st.sampled_from([ACK | PSH, ACK | PSH, ACK | PSH, ACK, PSH, ACK | FIN, ACK | RST, SYN, SYN | ACK, ACK | 0x40])
STEP = st.tuples(
    st.integers(0, 1),
    st.integers(0, 1),
    FLAGS,
    st.sampled_from([0, 0, 0, 0, 5, -5, 40, -40, 1 << 31]),
    st.sampled_from([0, 0, 0, 10, -10, 1000]),
    st.sampled_from([0, 0, 12, 30, 200]),
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(STEP, min_size=1, max_size=40), options=st.booleans())
def test_misbehaving_connections_give_the_layered_events(
    steps: list[tuple[int, int, int, int, int, int]], options: bool
) -> None:
    assert_same(pcap_file(_story_frames(steps, options), nanoseconds=True))


def test_in_order_stories_take_the_lanes() -> None:
    steps = [(0, n % 2, ACK | PSH, 0, 0, 30) for n in range(20)]
    for options in (False, True):
        assert assert_same(pcap_file(_story_frames(steps, options), nanoseconds=True)) >= 18


def test_snaplen_cut_and_offloaded_packets_go_the_layered_way() -> None:
    c = Conversation()
    c.handshake()
    for n in range(4):
        c.send("c", request_frame(3, 12, n, "app", bytes(300)))
    frames = [(t, f[:100]) for t, f in c.frames]
    cut = pcap_file(frames, nanoseconds=True, original_lengths=[len(f) for _, f in c.frames])
    assert assert_same(cut) == 2  # the handshake's SYN-ACK (its SYN's lane knew it) and last ACK; no cut packet
    # total length 0 (segmentation offload): the captured bytes are the packet
    offloaded = [(t, f[:16] + b"\x00\x00" + f[18:]) if len(f) > 100 else (t, f) for t, f in c.frames]
    assert_same(pcap_file(offloaded, nanoseconds=True))


def test_bad_records_between_laned_packets() -> None:
    data = CAPTURES["clients.pcap"]
    events, _, laned = run(data, lanes=True)
    assert laned > 100
    damaged = bytearray(data)
    damaged[24 + 8 : 24 + 12] = (10**9).to_bytes(4, "little")  # the first record claims a huge length
    assert_same(bytes(damaged))
    assert any(isinstance(r, BadRecord) for r in read_packets(io.BytesIO(bytes(damaged))))
    assert events


def _opening_stories() -> list[tuple[int, bytes]]:
    """SYNs of every kind, one after another: to a Kafka port (the usual opening), from one,
    between two, repeated, reusing a closed 4-tuple and an open one, to another port twice, and
    after an idle spell long enough for a sweep."""
    at = 1_700_000_000_000_000_000
    frames: list[tuple[int, bytes]] = []

    def conversation(client: tuple[str, int], broker: tuple[str, int], isn: int) -> Conversation:
        return Conversation(client=client, broker=broker, client_isn=isn, broker_isn=isn + 77)

    def take(c: Conversation) -> None:
        nonlocal at
        for _, frame in c.frames:
            at += 1000
            frames.append((at, frame))
        c.frames.clear()

    usual = conversation(("10.0.0.1", 50000), ("10.0.0.2", 9092), 100)
    usual.handshake()
    usual.send("c", request_frame(3, 12, 1, "app", b""))
    take(usual)
    backwards = conversation(("10.0.0.2", 9092), ("10.0.0.3", 40000), 200)  # the SYN comes from the Kafka port
    backwards.handshake()
    take(backwards)
    both = conversation(("10.0.0.4", 9092), ("10.0.0.5", 9092), 300)  # both ends on it
    both.handshake()
    take(both)
    repeated = conversation(("10.0.0.1", 50001), ("10.0.0.2", 9092), 400)
    repeated.add(repeated.segment("c", SYN, seq=400, ack=0))
    repeated.handshake()  # the SYN again, answered
    take(repeated)
    usual.close()
    take(usual)
    again = conversation(("10.0.0.1", 50000), ("10.0.0.2", 9092), 5000)  # the closed 4-tuple reused
    again.handshake()
    take(again)
    reopened = conversation(("10.0.0.1", 50001), ("10.0.0.2", 9092), 9000)  # an open one's 4-tuple
    reopened.handshake()
    take(reopened)
    elsewhere = conversation(("10.0.0.1", 50002), ("10.0.0.2", 8080), 600)  # no Kafka port
    elsewhere.handshake()
    elsewhere.send("c", b"GET / HTTP/1.1\r\n\r\n")
    take(elsewhere)
    elsewhere_again = conversation(("10.0.0.1", 50002), ("10.0.0.2", 8080), 700)  # judged not Kafka
    elsewhere_again.handshake()
    take(elsewhere_again)
    at += 40 * 1_000_000_000  # an idle spell: the next SYN is due a sweep first
    late = conversation(("10.0.0.1", 50003), ("10.0.0.2", 9092), 800)
    late.handshake()
    take(late)
    return frames


def test_syns_that_open_connections_give_the_layered_events() -> None:
    frames = _opening_stories()
    data = pcap_file(frames, nanoseconds=True)
    laned = assert_same(data)
    assert laned >= 8  # (the openings of a Kafka port's fresh 4-tuples, their SYN-ACKs, the data)
    for max_connections in (1, 2, 3):  # a full table: the oldest evicted first, the layered way
        assert_same(data, max_connections=max_connections)
    assert_same(data, ports=[8080], auto_detect_ports=False)
    assert_same(data, ports=[40000, 9092])
    # each SYN alone (no answers), as a SYN flood's are
    syns = [(t, f) for t, f in frames if f[14 + 20 + 13] & (SYN | ACK) == SYN]
    assert len(syns) == 10
    # the three fresh 4-tuples of a Kafka port open without a segment; the repeated SYN, the
    # reused 4-tuples (already decided), port 8080's and the one a sweep is due for do not
    assert assert_same(pcap_file(syns, nanoseconds=True)) == 3

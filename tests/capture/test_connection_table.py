"""A bounded connection table: floods of connections cost bounded memory, idle and half-open
connections are given up and counted, and what a connection leaves unfinished is said when it
ends (requests never answered, frames cut off), never dropped without a word."""

from __future__ import annotations

import io

from packet_builders import SYN, Conversation, pcap_file, request_frame, response_frame

from kafka_epochs import Protocol
from kafka_epochs.capture import EndReason, StreamEnd
from kafka_epochs.capture.files.reader import read_packets
from kafka_epochs.capture.pipeline import StreamPipeline
from kafka_epochs.exchanges import DecodeSummary, Kind
from kafka_epochs.fused_lines import decode_lines
from kafka_epochs.json_lines import LineWriter
from kafka_epochs.traffic import decode_capture

AUTO = Protocol.auto()
SECOND = 1_000_000_000
METADATA = request_frame(3, 12, 1, "an-application-with-a-long-client-id", b"\x01\x01\x00")


def half_open(number: int, time_ns: int) -> list[tuple[int, bytes]]:
    c = Conversation(client=(f"10.1.{number >> 8}.{number & 255}", 30000 + number % 20000))
    c.time_ns = time_ns
    c.add(c.segment("c", SYN, seq=c.client_isn, ack=0))
    return c.frames


def cut_off(number: int, time_ns: int, keep: int = 20) -> list[tuple[int, bytes]]:
    """A connection whose client sends the first ``keep`` bytes of a request, then nothing."""
    c = Conversation(client=(f"10.2.{number >> 8}.{number & 255}", 40000))
    c.time_ns = time_ns
    c.handshake()
    c.send("c", METADATA[:keep])
    return c.frames


def exchanges(frames: list[tuple[int, bytes]], **options: int) -> tuple[list, DecodeSummary]:
    summary = DecodeSummary()
    data = pcap_file(sorted(frames, key=lambda f: f[0]), nanoseconds=True)
    found = list(decode_capture(io.BytesIO(data), AUTO, summary=summary, **options))
    for exchange in found:
        summary.count(exchange)
    return found, summary


def test_a_flood_of_half_open_connections_keeps_the_table_bounded() -> None:
    frames = [f for n in range(1000) for f in half_open(n, 1_700_000_000 * SECOND + n * 1000)]
    pipeline = StreamPipeline(max_connections=100)
    ends = []
    largest = 0
    for record in read_packets(io.BytesIO(pcap_file(frames, nanoseconds=True))):
        ends += [e for e in pipeline.record(record) if isinstance(e, StreamEnd)]
        largest = max(largest, len(pipeline.reassembler._connections), len(pipeline._aligners), len(pipeline._lanes))
    assert largest == 100
    assert pipeline.stats.evicted_connections == 900 and pipeline.stats.flows == 1000
    assert len(ends) == 900 and {e.reason for e in ends} == {EndReason.EVICTED}


def test_requests_cut_off_are_problems_not_silence() -> None:
    """Before, 100,000 of these were summed up as "0 exchanges, 0 with problems"."""
    frames = [f for n in range(50) for f in cut_off(n, 1_700_000_000 * SECOND + n * 1000)]
    found, summary = exchanges(frames)
    assert len(found) == 50 and {e.kind for e in found} == {Kind.CUT_OFF}
    assert found[0].problem == (
        f"the client_to_broker stream ends inside a frame: 20 bytes of a {len(METADATA):,}-byte frame captured "
        "(a request cut off)"
    )
    assert summary.problems == 50 and summary.cut_off == 50


def test_half_open_and_idle_connections_are_given_up_and_their_requests_said() -> None:
    t0 = 1_700_000_000 * SECOND
    quiet = Conversation(client=("10.3.0.1", 50000))  # asks, then waits 20 minutes for nothing
    quiet.time_ns = t0
    quiet.handshake()
    quiet.send("c", METADATA)
    busy = Conversation(client=("10.3.0.2", 50001))  # keeps talking all along
    busy.time_ns = t0
    busy.handshake()
    for minute in range(21):
        busy.time_ns = t0 + minute * 60 * SECOND
        busy.send("c", request_frame(3, 12, minute + 10, "app", b"\x01\x01\x00"))
        busy.send("b", response_frame(minute + 10, b"\x00" * 30))
    frames = quiet.frames + busy.frames + half_open(7, t0 + 5 * SECOND)
    found, summary = exchanges(frames)
    given_up = [e for e in found if e.problem and "given up" in e.problem]
    assert [(e.kind, e.request.correlation_id) for e in given_up] == [(Kind.REQUEST, 1)]
    assert given_up[0].problem.startswith("no response before the connection was given up")
    assert summary.pairs == 21 and summary.unanswered == 1
    assert summary.capture is not None and summary.capture.evicted_connections == 2  # the quiet one, the SYN


def test_what_a_closed_connection_left_is_said_when_it_closes() -> None:
    """Not at the end of the capture: a stream of exchanges says so as soon as it is known; and a
    connection reopened on the same ports starts with nothing of the old one's."""
    t0 = 1_700_000_000 * SECOND
    first = Conversation(client=("10.4.0.1", 50000), client_isn=100)
    first.time_ns = t0
    first.handshake()
    first.send("c", METADATA)  # never answered
    first.send("c", METADATA[:10])  # and the start of another
    first.close()
    again = Conversation(client=("10.4.0.1", 50000), client_isn=90_000, broker_isn=70_000)
    again.time_ns = t0 + 10 * SECOND
    again.handshake()
    again.send("c", METADATA)
    again.send("b", response_frame(1, b"\x00" * 30))
    found, _ = exchanges(first.frames + again.frames)
    assert [e.kind for e in found] == [Kind.REQUEST, Kind.CUT_OFF, Kind.PAIR]
    assert found[0].problem == "no response in the capture"
    assert found[2].response is not None and found[2].response.correlation_id == 1


def test_a_lane_keeps_a_busy_connection_from_looking_idle() -> None:
    """Segments taken by the pipeline's shortcut count as activity too: here one connection's
    packets always come first after each look for idle connections, the other's (5 s later)
    never do, and neither is idle."""
    t0 = 1_700_000_000 * SECOND
    pair = [Conversation(client=("10.5.0.1", 50000 + n)) for n in range(2)]
    for n, c in enumerate(pair):
        c.time_ns = t0 + n * 5 * SECOND
        c.handshake()
    for tick in range(180):  # 30 minutes
        for n, c in enumerate(pair):
            c.time_ns = t0 + (tick * 10 + n * 5) * SECOND
            c.send("c", request_frame(3, 12, tick, "app", b"\x01\x01\x00"))
            c.send("b", response_frame(tick, b"\x00" * 30))
    found, summary = exchanges(pair[0].frames + pair[1].frames)
    assert summary.pairs == 360 and all(e.kind is Kind.PAIR for e in found)
    assert summary.capture is not None and summary.capture.evicted_connections == 0


def test_the_fused_path_says_the_same_of_connections_given_up_closed_and_reopened() -> None:
    """``decode`` prints through :mod:`kafka_epochs.fused_lines`: what it says of connections
    given up, closed with requests pending and reopened on the same ports is the layered path's."""
    t0 = 1_700_000_000 * SECOND
    MetadataRequest, MetadataResponse = AUTO.message("MetadataRequest"), AUTO.message("MetadataResponse")
    quiet = Conversation(client=("10.3.0.1", 50000))  # asks, then waits 20 minutes: given up
    quiet.time_ns = t0
    quiet.handshake()
    quiet.send("c", METADATA)
    busy = Conversation(client=("10.3.0.2", 50001))  # talks all along, on the fused path
    busy.time_ns = t0
    busy.handshake()
    for minute in range(21):
        busy.time_ns = t0 + minute * 60 * SECOND
        busy.send("c", AUTO.encode_request(MetadataRequest(topics=[]), 12, correlation_id=minute + 10, client_id="a"))
        busy.send("b", AUTO.encode_response(MetadataResponse(), 12, correlation_id=minute + 10))
    first = Conversation(client=("10.4.0.1", 50000), client_isn=100)  # closes with a request pending
    first.time_ns = t0
    first.handshake()
    first.send("c", METADATA)
    first.send("c", METADATA[:10])
    first.close()
    again = Conversation(client=("10.4.0.1", 50000), client_isn=90_000, broker_isn=70_000)
    again.time_ns = t0 + 10 * SECOND
    again.handshake()
    again.send("c", AUTO.encode_request(MetadataRequest(topics=[]), 12, correlation_id=1, client_id="a"))
    again.send("b", AUTO.encode_response(MetadataResponse(), 12, correlation_id=1))
    frames = quiet.frames + busy.frames + half_open(7, t0 + 5 * SECOND) + first.frames + again.frames
    data = pcap_file(sorted(frames, key=lambda f: f[0]), nanoseconds=True)
    writer = LineWriter()
    layered = [writer.line(e) for e in decode_capture(io.BytesIO(data), AUTO)]
    writer, written = LineWriter(), 0
    fused = []
    for batch in decode_lines(io.BytesIO(data), AUTO, writer, summary=DecodeSummary()):
        for item in batch:
            written += isinstance(item, str)
            fused.append(item if isinstance(item, str) else writer.line(item))
    assert fused == layered and None not in fused
    assert written == 22 and len(fused) == 25  # 22 pairs; the given-up, the unanswered and the cut-off request
    assert sum('"problem": "no response before the connection was given up' in line for line in fused) == 1

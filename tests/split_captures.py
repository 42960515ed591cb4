"""Reading a pcap file in parts the way the Spark job does, without Spark; and captures that make it hard.

:func:`split_rows` runs :mod:`kafka_epochs.spark.split`'s steps in one process (ranges counted and
lined up, packets read per range, ports learnt per connection, connections dealt to shares by
their key and replayed in file order), so tests can compare every step's outcome with the
whole-file read on many captures quickly; the Spark test runs the same steps as a job.
"""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from pathlib import Path

from capture.packet_builders import Conversation, pcap_file, request_frame, response_frame

from kafka_epochs.capture import split as parts
from kafka_epochs.capture.alignment.flows import DEFAULT_PORTS
from kafka_epochs.frame_rows import FrameRow
from kafka_epochs.spark import split


def split_rows(
    path: str | Path, range_bytes: int, shares: int = 3, ports: frozenset[int] = DEFAULT_PORTS, *, teach: bool = True
) -> tuple[list[FrameRow], list[tuple[int, int]]]:
    """The rows of ``path`` read in ranges of ``range_bytes`` by ``shares`` tasks (sorted by
    ``seq``), and the ports learnt on the way (``shares=0``: a share per connection; ``teach=False``:
    the shares are not told the ports learnt elsewhere)."""
    name = str(path)
    counts = [
        parts.count_range(name, start, end, ports=ports) for start, end in parts.cut(os.path.getsize(name), range_bytes)
    ]
    lined_up = parts.line_up(name, counts, functools.partial(parts.count_range, ports=ports))
    assert lined_up is not None, "the file cannot be read in ranges"
    plans, end, heads = lined_up
    packets = [row for plan in plans for row in parts.range_packets(name, plan)]
    learnt = parts.learnt_ports(parts.port_learners(sorted(heads, key=lambda h: h[1]), ports), ports)
    dealt: dict[int, list[tuple[object, ...]]] = defaultdict(list)
    for row in packets:
        dealt[row[0] % shares if shares else row[0]].append(row)
    rows: list[FrameRow] = []
    for share in dealt.values():
        share.sort(key=lambda r: r[1])
        replay = split.ShareFrames(name, ports=sorted(ports))
        rows += replay.replay([r[1:] for r in share], learnt if teach else [], end)
    return sorted(rows, key=lambda r: r.seq), learnt


def busy_capture(connections: int = 6, requests: int = 40) -> bytes:
    """Connections interleaved in time, with frames larger than a segment, segments out of order
    and retransmitted (every connection's stream is whole: nothing is missing)."""
    conversations = []
    for number in range(connections):
        conv = Conversation(client=(f"10.0.1.{number + 1}", 40000 + number), client_isn=1000 + number * 7919)
        conv.time_ns += number * 333  # interleave the connections' packets
        conv.handshake()
        conv.send("c", request_frame(18, 3, 0, body=b"\x00\x00\x00"))
        conv.send("b", response_frame(0, b"\x00\x00" + bytes(30)))
        for correlation in range(1, requests):
            body = bytes((correlation * 31 + i) % 251 for i in range(200 + 90 * correlation))
            frame = request_frame(3, 1, correlation, body=body)
            pieces = [conv.send("c", frame[i : i + 1400], record=False) for i in range(0, len(frame), 1400)]
            if correlation % 5 == 0 and len(pieces) > 1:
                pieces[0], pieces[1] = pieces[1], pieces[0]  # out of order
            if correlation % 7 == 0:
                pieces.insert(1, pieces[0])  # a retransmission
            for piece in pieces:
                conv.add(piece)
            conv.send("b", response_frame(correlation, b"\x00\x00" + bytes(correlation)))
        conv.close()
        conversations.append(conv)
    frames = sorted((f for conv in conversations for f in conv.frames), key=lambda f: f[0])
    return pcap_file(frames, nanoseconds=True)


def learnt_port_capture() -> bytes:
    """Port 19092 is no configured port: connection A's first bytes were before the capture
    started, and only connection B's ApiVersions request, later, tells that 19092 is Kafka;
    A's frames from then on are Kafka's, and C, which opens after it and sends no ApiVersions,
    is followed from its first frame."""
    broker = ("10.0.0.9", 19092)
    a = Conversation(client=("10.0.2.1", 41000), broker=broker)
    b = Conversation(client=("10.0.2.2", 42000), broker=broker, time_ns=a.time_ns + 50_000)
    c = Conversation(client=("10.0.2.3", 43000), broker=broker, time_ns=a.time_ns + 90_000)
    a.send("c", bytes(300))  # the tail of a request whose start the capture missed
    for correlation in range(1, 30):
        a.send("c", request_frame(3, 1, correlation, body=bytes(50)))
        a.send("b", response_frame(correlation))
    b.handshake()
    b.send("c", request_frame(18, 3, 0, body=b"\x00\x00\x00"))
    b.send("b", response_frame(0, b"\x00\x00" + bytes(30)))
    c.handshake()
    for correlation in range(1, 4):
        c.send("c", request_frame(3, 1, correlation, body=bytes(20)))
        c.send("b", response_frame(correlation))
    frames = sorted(a.frames + b.frames + c.frames, key=lambda f: f[0])
    return pcap_file(frames, nanoseconds=True)
